//! Guideline files: the domain type, loading and validation, the compiled immutable snapshot
//! that requests match against, and the live store that reloads it with last-good semantics.

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
pub use guideline::{Example, Expect, Guideline};
pub use load::{parse_guideline, LoadError};
pub use matching::Index;
pub use reload::{CacheWrite, Guidebook, ReloadOutcome};
pub(crate) use snapshot::marked;
pub use snapshot::{Applicability, ApplicabilityKey, CompiledGuideline, GuidelineSnapshot};
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
