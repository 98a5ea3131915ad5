//! The host-protocol adapter: hook event JSON in, what to ask the sidecar, hook output JSON out (Codex, Claude Code), plus the blocking client that asks it and the autostart that starts it. Only `client` and `autostart` do I/O.
//!
//! One implementation of the hook logic ([`hook::handle_event`]), shared by the
//! `guidebook-hook` binary and by `guidebook mcp`'s `hook` tool.
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
//! - [`hook`]: [`hook::handle_event`], the whole hook over a [`hook::SidecarLink`]: plan, ask,
//!   render.
//!
//! - `client`: the blocking HTTP/1.1 JSON-RPC client on the Unix socket, bounded by a deadline,
//!   one call per connection or many on a kept-alive one; shared with the `guidebook` CLI.
//! - [`autostart`]: connect, or start `guidebook serve` when nothing listens (one starter per
//!   socket, elected by a lock), within the caller's deadline.
//!
//! The binary adds `src/main.rs` (arguments, environment, stdin, stdout).
//!
//! **Invariant:** nothing in this library but `client` and `autostart` performs I/O, and only
//! `autostart` reads the environment (to find the `guidebook` binary), so every decision the
//! hook makes can be tested from JSON alone.

pub mod autostart;
pub mod breaker;
pub mod checks;
pub mod client;
pub mod hook;
mod output;
mod patch;
mod paths;
mod plan;
mod rpc;

pub use output::{context_text, guideline_block, render, render_search, CONTEXT_HEADER};
pub use plan::{changed_files, plan, Action};
pub use rpc::{parse_response, request_body, CallLimits, ResponseError};
