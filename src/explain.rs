//! An explanation: per file, its repository, language, skip reason and the first matching line
//! of each guideline that matches, and whether a session was already shown each. Reads: the
//! snapshot, the files, presentation. Writes nothing.
//!
//! The result is printed by `guidebook explain --json` and answered by `explain` alike, so its
//! types carry their serde shape here rather than in `rpc/`.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::{Edits, Engine};
use crate::store::StoreError;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Explanation {
    pub files: Vec<ExplainedFile>,
    pub guidelines: Vec<GuidelineState>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExplainedFile {
    pub path: String,
    pub repository: Option<String>,
    pub language: Option<String>,
    pub skipped: Option<String>,
    pub matches: Vec<ExplainedMatch>,
    /// The rule files of the file's repository, when it has any: served, or waiting for
    /// `guidebook trust` (and why).
    #[serde(
        default,
        rename = "repositoryRules",
        skip_serializing_if = "Option::is_none"
    )]
    pub repository_rules: Option<RepositoryRulesState>,
}

/// A repository's own rules as `explain` sees them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RepositoryRulesState {
    /// The repository's canonical root.
    pub root: String,
    /// Whether the user trusted it (`guidebook trust`).
    pub trusted: bool,
    /// How many of its rules are served.
    pub served: usize,
    /// Its rule files that are not served, each with why (`file: state: reason`).
    pub waiting: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExplainedMatch {
    pub id: String,
    /// The 1-based line of the earliest match of a leaf not under `not`, and that leaf's
    /// pattern; `None` for a condition that held with no such leaf (`not` alone).
    pub line: Option<usize>,
    pub pattern: Option<String>,
    /// The guideline's `severity`: `info`, `warn` or `block`.
    pub severity: String,
    /// Where it came from: `guidebook FILE:LINE`, `team guidebook NAME: FILE:LINE`, or
    /// `FILE:LINE in this repository`.
    #[serde(default)]
    pub source: String,
    /// Every regex and ast leaf of the guideline's condition, in the order written.
    pub leaves: Vec<ExplainedLeaf>,
}

/// How one leaf (regex or ast) came out in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExplainedLeaf {
    /// A regex leaf's pattern, or an ast leaf's ast-grep pattern.
    pub pattern: String,
    /// An ast (structural) leaf; left out for a regex leaf.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ast: bool,
    /// An ast leaf that held: the text of the node it matched (at most
    /// [`NODE_TEXT_SHOWN`] characters, then `…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// An ast leaf that held: the 1-based line that node ends on (it starts on `line`).
    #[serde(default, rename = "lastLine", skip_serializing_if = "Option::is_none")]
    pub last_line: Option<usize>,
    /// `file` or `changes`.
    #[serde(rename = "in")]
    pub within: String,
    /// Under an odd number of `not`s: the condition wants it not to hold.
    pub negated: bool,
    pub held: bool,
    /// The 1-based line of its first match that counts, when it held.
    pub line: Option<usize>,
}

/// How much of a matched node's text `explain` shows.
pub const NODE_TEXT_SHOWN: usize = 300;

fn shown(text: &str) -> String {
    guidebook_hook::ellipsize(text, NODE_TEXT_SHOWN)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GuidelineState {
    pub id: String,
    pub already_presented: bool,
}

/// The rule files of the repository holding `path`: what the loader served and left waiting
/// in a trusted repository; in one not trusted, the rule files a walk finds (every one waits).
/// `None` outside a repository, or in one without rule files.
fn repository_rules_of(engine: &Engine, path: &Path) -> Option<RepositoryRulesState> {
    let root = crate::repo::find_repository(path)?.root;
    let root = std::fs::canonicalize(root).ok()?;
    if let Some(report) = engine.repositories.report_of(&root) {
        return Some(RepositoryRulesState {
            root: root.display().to_string(),
            trusted: true,
            served: report.served,
            waiting: report.waiting.iter().map(|w| w.line()).collect(),
        });
    }
    let found = crate::sources::discover::rule_files(&root, engine.repositories.rules());
    if found.files.is_empty() {
        return None;
    }
    Some(RepositoryRulesState {
        root: root.display().to_string(),
        trusted: false,
        served: 0,
        waiting: found
            .files
            .iter()
            .map(|f| {
                format!(
                    "{}: new: the repository is not trusted: run `guidebook trust` to review its rule files",
                    f.relative.display()
                )
            })
            .collect(),
    })
}

/// What an explanation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("deadline exceeded")]
    DeadlineExceeded,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Explains `filepaths` (absolute, already checked), with the presentation state for
/// `session_id` when one is given. No deadline: the CLI's own process does the work.
pub fn explain(
    engine: &Engine,
    filepaths: &[String],
    session_id: Option<&str>,
) -> Result<Explanation, StoreError> {
    explain_until(engine, filepaths, &Edits::new(), session_id, None).map_err(|e| match e {
        ExplainError::Store(e) => e,
        ExplainError::DeadlineExceeded => unreachable!("no deadline was given"),
    })
}

/// [`explain`], given up (`DeadlineExceeded`) once `deadline` passes: before the guidebook's
/// first load is done, or between two files.
pub fn explain_until(
    engine: &Engine,
    filepaths: &[String],
    edits: &Edits,
    session_id: Option<&str>,
    deadline: Option<Instant>,
) -> Result<Explanation, ExplainError> {
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(ExplainError::DeadlineExceeded);
    }
    let snapshot = engine
        .guidebook
        .loaded_snapshot(deadline)
        .ok_or(ExplainError::DeadlineExceeded)?;
    let paths: Vec<&str> = filepaths.iter().map(String::as_str).collect();
    let evaluations = engine
        .evaluate_until(&snapshot, &paths, edits, true, deadline)
        .ok_or(ExplainError::DeadlineExceeded)?;

    let mut matched = BTreeSet::new();
    let files = filepaths
        .iter()
        .zip(evaluations)
        .map(|(path, e)| ExplainedFile {
            repository_rules: repository_rules_of(engine, Path::new(path)),
            path: path.clone(),
            repository: e.repository,
            language: e.language.map(str::to_string),
            skipped: e.skipped.map(|s| s.to_string()),
            matches: e
                .matches
                .into_iter()
                .map(|m| {
                    matched.insert(m.guideline);
                    let (line, pattern) = m.first.unzip();
                    let g = &snapshot.guidelines[m.guideline].guideline;
                    ExplainedMatch {
                        id: g.id.clone(),
                        line,
                        pattern,
                        severity: g.severity.as_str().to_string(),
                        source: g.origin.describe(&g.source, g.id_line),
                        leaves: m
                            .leaves
                            .iter()
                            .map(|l| ExplainedLeaf {
                                pattern: snapshot.guidelines[m.guideline]
                                    .leaf_source(l.pattern)
                                    .to_string(),
                                ast: l.structural,
                                node: l.node.as_ref().map(|n| shown(&n.text)),
                                last_line: l.node.as_ref().map(|n| n.last_line),
                                within: l.within.as_str().to_string(),
                                negated: l.negated,
                                held: l.line.is_some(),
                                line: l.line,
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect();

    let ids: Vec<&str> = matched
        .iter()
        .map(|i| snapshot.guidelines[*i].id())
        .collect();
    let presented = match session_id {
        Some(s) => engine.presentations.presented(s, &ids)?,
        None => Default::default(),
    };
    let guidelines = ids
        .into_iter()
        .map(|id| GuidelineState {
            already_presented: presented.contains(id),
            id: id.to_string(),
        })
        .collect();
    Ok(Explanation { files, guidelines })
}
