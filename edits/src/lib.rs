//! What an edit wrote, in one place for the hook shim and the daemon (std only).
//!
//! - [`lines`]: [`LineRanges`], the one sorted, merged set of 1-based line ranges.
//! - [`diff`]: the one bounded line diff (Myers), the lines a change wrote.
//! - [`unified`]: the one unified-diff reader: git's multi-file `diff --git` and the hosts' one-file
//!   diffs (jsdiff's `createPatch`).
//! - [`patch`]: Codex's `apply_patch` grammar, parsed once into file operations; the patches a
//!   shell command feeds it; Codex's result summary.
//! - [`place`]: Codex's chunk placement: a patch applied as Codex applies it, and its chunks
//!   located in the file it left.
//! - [`paths`]: lexical resolution of relative paths against a directory.
//! - [`shell`]: the one shell lexer (words, redirections, command ends).

pub mod diff;
pub mod lines;
pub mod patch;
pub mod paths;
pub mod place;
pub mod shell;
pub mod unified;

pub use lines::LineRanges;
