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
//! - [`prompt`]: prompt packs (`prompts/<role>.yaml`), the CRITICAL block, and `buildPrompt`'s
//!   phases fitted to their token budgets; live-reloaded with last-good semantics.
//! - [`tokens`]: exact token counts (embedded `cl100k_base`/`o200k_base`) or the estimate, and the
//!   fit of a text to a budget.
//! - [`repo`]: a file's [`repo::RepositoryIdentity`] from `git remote get-url origin`, cached.
//! - [`language`]: a file's language from its name.
//! - [`files`]: reads changed files safely (no FIFO hangs, capped size).
//! - [`service`]: the systemd units and launchd agent `guidebook service install` writes.
//! - [`hook_config`]: our entries in Codex's `hooks.json` and Claude Code's `settings.json`,
//!   merged in and out of the user's text without re-encoding the rest.
//! - [`mcp`]: `guidebook mcp`, the MCP server on stdio: the shim's hook as a tool, and tools for
//!   agents; talks to the sidecar over kept-alive connections.
//! - [`breaker`]: the circuit breaker: a pure state machine over check runs, persisted through
//!   the store.
//! - [`store`]: the only module that runs SQL: pool, schema, presentation and breaker state.
//! - [`config`]: settings with the precedence flag > env > `config.yaml` > default.
//! - [`time`]: RFC 3339 timestamps without a date-time dependency.

pub mod breaker;
pub mod cli;
pub mod config;
pub mod engine;
pub mod explain;
pub mod files;
pub mod flags;
pub mod guidebook;
pub mod language;
pub mod mcp;
pub mod prompt;
pub mod repo;
pub mod rpc;
pub mod search;
pub mod server;
pub mod service;
pub mod store;
pub mod time;
pub mod tokens;
pub mod watched;

/// The version every part reports (`status`, `--version`), so mismatched binaries are visible.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
