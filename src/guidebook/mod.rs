//! Guideline files: the domain type, loading and validation, the compiled immutable snapshot
//! that requests match against, and the live store that reloads it with last-good semantics.

pub(crate) mod load;
mod reload;
mod snapshot;

pub use load::{find_guideline_files, parse_guideline, LoadError, GUIDELINE_FILE_NAME};
pub use reload::{Guidebook, ReloadOutcome};
pub use snapshot::{CompiledGuideline, GuidelineSnapshot};

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
    /// The text shown to the agent, exactly as in the YAML.
    pub content: String,
    /// The file the guideline came from.
    pub source: PathBuf,
    /// 1-based line of the `id:` key, for error messages that point at the guideline.
    pub id_line: Option<usize>,
}
