//! The host-protocol adapter: hook event JSON in, questions for the sidecar, hook output JSON out.
//!
//! One implementation of the hook logic ([`hook::handle_event`]), shared by the
//! `guidebook-hook` binary and by `guidebook mcp`'s `hook` tool, plus the blocking client that
//! asks the sidecar, the autostart that starts it, and the protocol every client speaks.
//!
//! # Layout
//!
//! - [`event`]: [`event::HookEvent`], the host's event JSON read once (one reader per host).
//! - `plan`: [`plan_event`] turns a `HookEvent` into an [`Action`] (`search`, `resetSession`);
//!   [`changed_files`] names the files a tool call changed.
//! - [`written`]: the lines an edit wrote in each file (`search`'s `written`), from the host's
//!   report or the patch located in the file; the post-image of a patch Codex has not written.
//!
//! What an edit wrote (line ranges, diffs, the `apply_patch` grammar and Codex's chunk
//! placement, lexical paths) is the `edits` crate's, shared with the daemon.
//! - [`shell_writes`]: the files a shell command may write, read from its text, for the
//!   sidecar's `beginShellCommand` / `endShellCommand`.
//! - [`protocol`]: the sidecar's JSON-RPC for every client: method names, params builders,
//!   envelopes, batches, response parsing and one `call`.
//! - `output`: [`render_hook`] and [`render_search`], the one line the hook prints.
//! - [`checks`]: ruff and pyright runs in a shell command, and their diagnostics in its output.
//! - [`breaker`]: the circuit breaker's hook: a check run for `recordError`, the `PreToolUse`
//!   gate of a halted session.
//! - [`enforce`]: the check before an edit is written: each host's edit rebuilt as the file it
//!   would leave, asked of `checkEdit`; a `severity: block` hit denies the edit.
//! - [`guard`]: the agent cannot lift its own guardrails: a `PreToolUse` that would reset the
//!   breaker, change flags or hooks, or touch the sidecar's files is denied, sidecar unasked.
//! - [`link`]: [`link::SidecarLink`], how the hook reaches the sidecar.
//! - [`hook`]: [`hook::handle_event`], the whole hook over a [`link::SidecarLink`]: read, plan,
//!   ask, render.
//! - [`client`]: the blocking HTTP/1.1 client on the Unix socket, bounded by a deadline, one call
//!   per connection or many on a kept-alive one; shared with the `guidebook` CLI.
//! - [`autostart`]: connect, or start `guidebook serve` when nothing listens (one starter per
//!   socket, elected by a lock), within the caller's deadline.
//!
//! The binary adds `src/main.rs` (arguments, environment, stdin, stdout).
//!
//! **Invariant:** nothing in this library but `client`, `autostart` and the edited files' reader
//! ([`written::read_capped`], which [`plan_event`] hands to [`plan_event_with`], and
//! [`written::read_before`], which [`hook::HookPlan::of`] hands to [`enforce::plan_check`])
//! performs I/O,
//! and only `autostart` reads the environment (to find the `guidebook` binary), so every
//! decision the hook makes can be tested from JSON and file texts alone.

pub mod autostart;
pub mod breaker;
pub mod checks;
pub mod client;
pub mod enforce;
pub mod event;
pub mod guard;
pub mod hook;
pub mod link;
mod output;
mod plan;
pub mod protocol;
pub mod shell_writes;
pub mod written;

pub use output::{nothing, render_hook, render_search, Shape};
pub use plan::{changed_files, changed_files_of, plan, plan_event, plan_event_with, Action};
pub use protocol::{context_text, guideline_block, Shown, CONTEXT_HEADER, REPOSITORY_HEADER};
pub use protocol::{parse_response, ResponseError};

/// `text` cut to its first `max_chars` characters, `…` marking a cut: every shortened text in
/// a message (a guideline's content in a deny reason, a line, an error) is shortened so.
pub fn ellipsize(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
