//! The host-protocol adapter: hook event JSON in, what to ask the sidecar, hook output JSON out (Codex, Claude Code), plus the blocking client that asks it. Only `client` does I/O.
//!
//! One implementation of the hook logic, shared by the `guidebook-hook` binary and by anything
//! else that speaks to agent hosts (an MCP server, say).
//!
//! # Layout
//!
//! - `plan`: [`plan`] reads a hook event and returns an [`Action`]; [`changed_files`] names the
//!   files a tool call changed.
//! - `patch`: the files an `apply_patch` patch, its result summary, or a shell heredoc touches.
//! - `paths`: lexical resolution of relative paths against `cwd`.
//! - `rpc`: [`request_body`] and [`parse_response`], the JSON-RPC 2.0 wire format.
//! - `output`: [`render`] and [`render_search`], the one line the hook prints.
//! - [`checks`]: ruff and pyright runs in a shell command, and their diagnostics in its output.
//! - [`breaker`]: the circuit breaker's hook: a check run for `recordError`, the `PreToolUse`
//!   gate of a halted session, and their outputs.
//!
//! - `client`: the blocking HTTP/1.1 JSON-RPC client on the Unix socket, bounded by a deadline;
//!   shared with the `guidebook` CLI.
//!
//! The binary adds `src/main.rs` (arguments, environment, stdin, stdout).
//!
//! **Invariant:** nothing in this library but `client` performs I/O, and nothing reads the
//! environment, so every decision the hook makes can be tested from JSON alone.

pub mod breaker;
pub mod checks;
pub mod client;
mod output;
mod patch;
mod paths;
mod plan;
mod rpc;

pub use output::{context_text, guideline_block, render, render_search, CONTEXT_HEADER};
pub use plan::{changed_files, plan, Action};
pub use rpc::{parse_response, request_body, CallLimits, ResponseError};
