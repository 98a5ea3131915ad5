//! What a guideline is once validated: its id, scope (repositories, languages, paths), its
//! `match` condition and patterns (with how each is indexed), content, source and examples. Reads and writes nothing; every other part of the guidebook
//! builds on these types.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::matching::{Condition, Index};

/// One validated guideline, as written in its `guideline.yaml`.
#[derive(Debug, Clone)]
pub struct Guideline {
    pub id: String,
    /// Globs over `owner/repo`; `None` applies to every repository, including none.
    pub repositories: Option<Vec<String>>,
    /// Language names; `None` applies to every file.
    pub languages: Option<Vec<&'static str>>,
    /// `scope.paths`: globs relative to the repository root, `!` in front to exclude; `None`
    /// applies to every path, also outside any repository.
    pub paths: Option<Vec<String>>,
    /// The `match` condition; its leaves name patterns by position in `patterns`.
    pub condition: Condition,
    /// The regex leaves' patterns in the order written, each already checked to compile within
    /// the size limits.
    pub patterns: Vec<String>,
    /// How the matching engine indexes each pattern: worked out while loading, from the parse
    /// that validated it, and kept across reloads that leave the file alone. Left empty, it
    /// is worked out when a snapshot is built.
    pub indexes: std::sync::OnceLock<Vec<Index>>,
    /// What a match means: advice (`info`, `warn`) or an edit refused before it lands (`block`).
    pub severity: Severity,
    /// The text shown to the agent, exactly as in the YAML.
    pub content: String,
    /// The file the guideline came from.
    pub source: PathBuf,
    /// The source it came from: the guidebook root, a team guidebook or a repository.
    pub origin: Origin,
    /// 1-based line of the `id:` key, for error messages that point at the guideline.
    pub id_line: Option<usize>,
    /// Code the guideline must and must not match (`examples:`), run by `guidebook test`.
    pub examples: Vec<Example>,
}

/// Where a guideline came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Origin {
    /// The guidebook root.
    #[default]
    Root,
    /// A team guidebook fetched from git (`teamGuidebooks:`): its name and checkout.
    Team { name: Arc<str>, dir: Arc<Path> },
    /// A trusted repository's own rule file: the guideline applies to that repository's files
    /// only, and its id is in the repository's own namespace (`repo:…`).
    Repository {
        /// The repository's canonical root.
        root: Arc<Path>,
        /// The rule file, relative to the root.
        file: PathBuf,
    },
}

impl Origin {
    /// The repository a guideline is confined to, if any.
    pub fn home(&self) -> Option<&Path> {
        match self {
            Origin::Repository { root, .. } => Some(root),
            _ => None,
        }
    }

    /// How `explain`, `scan` and the hook text name a source other than the root, with the
    /// file and line (`None` for the guidebook root, which the hook text leaves unsaid).
    pub fn label(&self, source: &Path, line: Option<usize>) -> Option<String> {
        (*self != Origin::Root).then(|| self.describe(source, line))
    }

    /// How `explain`, `scan` and the hook text name the source, with the file and line.
    pub fn describe(&self, source: &Path, line: Option<usize>) -> String {
        let at = |file: &Path| match line {
            Some(line) => format!("{}:{line}", file.display()),
            None => file.display().to_string(),
        };
        match self {
            Origin::Root => format!("guidebook {}", at(source)),
            Origin::Team { name, dir } => format!(
                "team guidebook {name}: {}",
                at(source.strip_prefix(dir).unwrap_or(source))
            ),
            Origin::Repository { file, .. } => format!("{} in this repository", at(file)),
        }
    }
}

/// A guideline's `severity`: `info` (the default) and `warn` are shown after the edit; a `block`
/// guideline's match refuses the edit before it is written, and fails `guidebook review`.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    #[default]
    Info,
    Warn,
    Block,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Block => "block",
        }
    }
}

/// Whether an example must match its guideline or must not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Expect {
    Match,
    NoMatch,
}

impl Expect {
    /// The example list's key in `guideline.yaml`.
    pub fn key(self) -> &'static str {
        match self {
            Expect::Match => "match",
            Expect::NoMatch => "no_match",
        }
    }
}

/// One example of a guideline.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Example {
    pub expect: Expect,
    /// 1-based position in its list.
    pub index: usize,
    pub code: String,
    /// The path it stands for, whose language scopes it; `None`: the guideline's first language.
    pub path: Option<String>,
    /// The lines of `code` the edit wrote, for `in: changes` leaves; `None`: every line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<Vec<[usize; 2]>>,
    /// 1-based line of its list item in the file.
    pub line: Option<usize>,
}
