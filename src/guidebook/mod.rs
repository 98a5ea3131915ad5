//! Guideline files: the domain type, loading and validation, the compiled immutable snapshot
//! that requests match against, and the live store that reloads it with last-good semantics.
//!
//! # Layout
//!
//! From the top; each part imports only parts below it:
//! - `examples`: a guideline's `examples`, run against a snapshot (`guidebook test`).
//! - `reload`: the live [`Guidebook`] (its snapshot behind `arc-swap`, the reload with
//!   last-good versions); `cache`: the parse cache it reads at start and writes after;
//!   `file_map`: every file's state by path, which both hold.
//! - `snapshot`: the immutable [`GuidelineSnapshot`] requests match against.
//! - `load`: one file's text into a validated [`Guideline`]; `yaml`: the file's YAML shapes
//!   and the checks on each value; `fast_yaml`: the parser of the YAML subset guidelines are
//!   written in.
//! - `walk`: every `guideline.yaml` under a root.
//! - `guideline`: the domain types.
//! - `matching`: everything about patterns (compile and validation, the literal index, the
//!   literal scan, confirmation, the hash), `match` conditions and the lines an edit wrote,
//!   and repository and path globs.

mod cache;
mod examples;
mod fast_yaml;
mod file_map;
mod guideline;
pub(crate) mod load;
mod matching;
mod reload;
mod snapshot;
mod walk;
mod yaml;

pub use cache::CACHE_FILE_NAME;
pub use examples::{run_examples, ExampleFailure, ExampleReport};
pub use guideline::{Example, Expect, Guideline, Origin, Severity};
pub use load::{parse_guideline, LoadError};
pub use matching::{Condition, Edit, Index, Text, Within, Written};
pub use reload::{CacheWrite, Guidebook, ReloadOutcome, RepositoryGuidelines};
pub(crate) use snapshot::marked;
pub use snapshot::{
    Applicability, ApplicabilityKey, CompiledGuideline, FilePlace, GuidelineSnapshot, LeafOutcome,
};
pub use walk::{find_guideline_files, GUIDELINE_FILE_NAME};

/// Test support: `yaml` written as `root/dir/guideline.yaml` (directories created); its path.
#[cfg(test)]
pub(crate) fn write_test_guideline(
    root: &std::path::Path,
    dir: &str,
    yaml: &str,
) -> std::path::PathBuf {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(GUIDELINE_FILE_NAME);
    std::fs::write(&p, yaml).unwrap();
    p
}
