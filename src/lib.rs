//! Adaptive Guidebook: the sidecar daemon and its CLI, as a library the `guidebook` binary drives.
//!
//! # Layout
//!
//! The dependency direction reads top-down: nothing below imports anything above it.
//!
//! - [`cli`]: the `guidebook` subcommands (`serve`, `check`, `explain`, `status`); thin glue.
//! - [`server`]: binds the Unix socket, serves the jsonrpsee tower service on it, drains on shutdown.
//! - [`rpc`]: one file per JSON-RPC method (params, result, `handle`), the registration table and
//!   the one function that maps errors to JSON-RPC error objects. Only `rpc` knows wire types.
//! - [`engine`]: the evaluation shared by `search` and `explain`: which guidelines apply to and
//!   match which files.
//! - [`guidebook`]: guideline files: load, validate, compile into an immutable
//!   [`guidebook::GuidelineSnapshot`], hold it in `arc-swap`, reload it when files change.
//! - [`repo`]: a file's [`repo::RepositoryIdentity`] from `git remote get-url origin`, cached.
//! - [`language`]: a file's language from its name.
//! - [`files`]: reads changed files safely (no FIFO hangs, capped size).
//! - [`breaker`]: the circuit breaker: a pure state machine over check runs, persisted through
//!   the store.
//! - [`store`]: the only module that runs SQL: pool, schema, presentation and breaker state.
//! - [`config`]: settings with the precedence flag > env > `config.yaml` > default.
//! - [`time`]: RFC 3339 timestamps without a date-time dependency.

pub mod breaker;
pub mod cli;
pub mod config;
pub mod engine;
pub mod files;
pub mod flags;
pub mod guidebook;
pub mod language;
pub mod repo;
pub mod rpc;
pub mod server;
pub mod store;
pub mod time;

/// The version every part reports (`status`, `--version`), so mismatched binaries are visible.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
