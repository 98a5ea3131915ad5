//! Matching: which guidelines' patterns match a file's content, found without trying most of
//! them, and which repositories a guideline is scoped to. Reads nothing; built with a snapshot.
//!
//! - `pattern`: one pattern's limits, parse, compile, and the validation that bounds its size
//!   without compiling it.
//! - `index`: the literals each pattern is found by, and how a hit is confirmed.
//! - `literals`: the literal scan, every occurrence of every indexed literal in one pass.
//! - `confirm`: confirming a literal hit (at the hit, anchored, or split around it), and the
//!   bounded caches of what it compiles.
//! - `matcher`: [`PatternMatcher`], a snapshot's patterns indexed and ready to mark matches.
//! - `hash`: the hash of the index's tables and the validator's memo.
//! - `scope`: repository and path globs.
//! - `condition`: `match` conditions (`any`, `all`, `not`, regex leaves, `in`) and the lines
//!   an edit wrote.
//! - `structural`: `ast` leaves, ast-grep patterns on a file's syntax tree (the only ast-grep
//!   user).

mod condition;
mod confirm;
mod hash;
mod index;
mod literals;
mod matcher;
mod pattern;
mod scope;
mod structural;

#[cfg(test)]
pub(crate) use condition::LineStarts;
pub use condition::{leaf_line_in, leaf_node_in, Condition, Edit, Text, Within, Written};
pub use index::Index;
pub(crate) use index::{index_of, index_of_hir};
pub(crate) use matcher::PatternMatcher;
pub(crate) use pattern::{
    compile_pattern, one_line_regex_error, parse_and_validate, stays_on_one_line, MAX_PATTERN_LEN,
};
pub(crate) use scope::{build_glob_sets, compile_path_glob, compile_repository_glob, PathScopes};
#[cfg(test)]
pub(crate) use structural::parses_on_this_thread;
pub(crate) use structural::prefilter as structural_prefilter;
pub(crate) use structural::StructuralPattern;
pub use structural::StructuralSpec;
#[cfg(test)]
pub(crate) use structural::SyntaxTree;
