//! Guideline files: the domain type, loading and validation, the compiled immutable snapshot
//! that requests match against, and the live store that reloads it with last-good semantics.

mod cache;
mod examples;
mod fast_yaml;
mod literals;
pub(crate) mod load;
mod matcher;
mod reload;
mod snapshot;

pub use cache::CACHE_FILE_NAME;
pub use examples::{run_examples, ExampleFailure, ExampleReport};
pub use load::{find_guideline_files, parse_guideline, LoadError, GUIDELINE_FILE_NAME};
pub use matcher::Index;
pub use reload::{CacheWrite, Guidebook, ReloadOutcome};
pub(crate) use snapshot::marked;
pub use snapshot::{Applicability, ApplicabilityKey, CompiledGuideline, GuidelineSnapshot};

use std::path::PathBuf;

/// One validated guideline, as written in its `guideline.yaml`.
#[derive(Debug, Clone)]
pub struct Guideline {
    pub id: String,
    /// Globs over `owner/repo`; `None` applies to every repository, including none.
    pub repositories: Option<Vec<String>>,
    /// Language names; `None` applies to every file.
    pub languages: Option<Vec<&'static str>>,
    /// Regex patterns, each already checked to compile within the size limits.
    pub patterns: Vec<String>,
    /// How the matching engine indexes each pattern: worked out while loading, from the parse
    /// that validated it, and kept across reloads that leave the file alone. Left empty, it
    /// is worked out when a snapshot is built.
    pub indexes: std::sync::OnceLock<Vec<Index>>,
    /// The text shown to the agent, exactly as in the YAML.
    pub content: String,
    /// The file the guideline came from.
    pub source: PathBuf,
    /// 1-based line of the `id:` key, for error messages that point at the guideline.
    pub id_line: Option<usize>,
    /// Code the guideline must and must not match (`examples:`), run by `guidebook test`.
    pub examples: Vec<Example>,
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
    /// 1-based line of its list item in the file.
    pub line: Option<usize>,
}

/// Test support: `yaml` written as `root/dir/guideline.yaml` (directories created); its path.
#[cfg(test)]
pub(crate) fn write_test_guideline(root: &std::path::Path, dir: &str, yaml: &str) -> PathBuf {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(GUIDELINE_FILE_NAME);
    std::fs::write(&p, yaml).unwrap();
    p
}
