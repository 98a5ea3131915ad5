//! Which repositories a guideline is scoped to: its repository globs, each compiled on its
//! own to validate it and together in sets to match a repository identity at once. Reads and
//! writes nothing.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Compiles a repository glob: `*` stays within a segment, `**` crosses, case-insensitive.
pub(crate) fn compile_repository_glob(pattern: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
}

/// The most distinct globs in one `GlobSet`: globset compiles a set into one regex set, which
/// has a size limit.
pub(crate) const GLOBS_PER_SET: usize = 256;

/// The globs in sets of at most [`GLOBS_PER_SET`]. A set that still fails to build (it cannot
/// with globs that each compiled) is split down to single globs rather than dropped, so a
/// guideline's repository scope is never silently lost.
pub(crate) fn build_glob_sets(globs: Vec<(Glob, Vec<u32>)>) -> Vec<(GlobSet, Vec<Vec<u32>>)> {
    let mut out = Vec::new();
    let mut pending: Vec<Vec<(Glob, Vec<u32>)>> = Vec::new();
    let mut globs = globs.into_iter().peekable();
    while globs.peek().is_some() {
        pending.push(globs.by_ref().take(GLOBS_PER_SET).collect());
    }
    while let Some(chunk) = pending.pop() {
        let mut builder = GlobSetBuilder::new();
        for (glob, _) in &chunk {
            builder.add(glob.clone());
        }
        match builder.build() {
            Ok(set) => out.push((set, chunk.into_iter().map(|(_, o)| o).collect())),
            Err(e) if chunk.len() > 1 => {
                tracing::warn!("repository globs split further: {e}");
                let mut chunk = chunk;
                let half = chunk.split_off(chunk.len() / 2);
                pending.push(chunk);
                pending.push(half);
            }
            Err(e) => tracing::warn!("repository glob {} left out: {e}", chunk[0].0.glob()),
        }
    }
    out
}
