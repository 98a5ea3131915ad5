//! Adaptive Guidebook: the sidecar daemon and its CLI, as a library the `guidebook` binary drives.
//!
//! # Layout
//!
//! Clients and hosts, at the top:
//! - [`cli`]: the `guidebook` subcommands, one file each; thin callers of the modules below.
//! - [`mcp`]: `guidebook mcp`, the MCP server on stdio: the shim's hook as a tool, and tools for
//!   agents; a client of the sidecar over kept-alive connections.
//! - [`server`]: the daemon's start-up ([`server::start`]), the Unix socket, the jsonrpsee tower
//!   service on it, the reload loop, shutdown and drain.
//! - [`rpc`]: one file per JSON-RPC method (params, result, `handle`), the registration table,
//!   and the one mapping of errors to JSON-RPC error objects. Only `rpc` knows wire types.
//!
//! The domain, which `rpc` and `cli` call alike:
//! - [`search`]: the guidelines new for a session, within a token budget, recorded as shown.
//! - [`explain`]: the same evaluation with its reasons, recording nothing.
//! - [`scan`]: the same evaluation over a whole repository, in parallel: a dry run for authors.
//! - [`shell_writes`]: what an agent's shell command changed (pre-images of the files it names,
//!   a watcher per repository) and the lines it wrote, for `endShellCommand`'s search.
//! - [`sources`]: where guidelines come from besides the root: team guidebooks fetched from
//!   git, a trusted repository's own rule files (trust, safe reads, the agents' formats, export
//!   and import), and the file-system watch over every source.
//! - [`review`]: the same evaluation over the files a git diff changed, on the lines it wrote:
//!   a pull request, a commit about to be made, the working tree.
//! - [`engine`]: what every handler shares (guidebook, packs, flags, stores), and a change's
//!   files evaluated over the free cores.
//! - [`evaluation`]: one file against a guideline snapshot: its repository, language, path and
//!   the applicable guidelines that match it (on the lines the edit wrote, where asked).
//! - [`changes`]: the lines a file's edit wrote when the caller did not say: `git diff HEAD`.
//! - [`enforce`]: the `block` guidelines an edit about to be made would break (`checkEdit`).
//! - [`guidebook`]: guideline files: load, validate, compile into an immutable
//!   [`guidebook::GuidelineSnapshot`], hold it in `arc-swap`, reload it when files change; its
//!   `matching` holds everything about patterns.
//! - [`prompt`]: prompt packs, the CRITICAL block, and `buildPrompt`'s phases fitted to budgets.
//! - [`flags`]: `feature_flags.json`, its rollout, atomic writes, and the live flags.
//! - [`breaker`]: the circuit breaker as a pure state machine, persisted through the store.
//! - [`metrics`]: the rollout's measurements: the recorder, the Prometheus counters, the
//!   `.metrics/` baseline and weekly files, the haiku A/B test (Fisher's exact test), the trend
//!   picture.
//! - [`store`]: the only module that runs SQL: pool, schema, presentation, breaker and metrics
//!   rows.
//!
//! Leaves, which import nothing of the above:
//! - [`watched`]: one mechanism for watched files (stamps, capped reads, last-good states).
//! - [`files`]: reads changed files safely (no FIFO hangs, capped size).
//! - [`git`]: runs git bounded in time and output, with the caller's git environment removed.
//! - [`repo`]: a file's repository identity from `git remote get-url origin`, cached.
//! - [`language`]: a file's language from its name.
//! - [`tokens`]: exact token counts (embedded `cl100k_base`/`o200k_base`) or the estimate.
//! - [`sample`]: the sample guidebook compiled into the binary.
//! - [`config`]: settings with the precedence flag > env > `config.yaml` > default.
//! - [`service`]: the systemd units and launchd agent `guidebook service install` writes.
//! - [`time`]: RFC 3339 timestamps and dates without a date-time dependency.
//! - [`parallel`]: work split over the cores, results in input order.
//! - [`sync`]: the one lock-poison policy (a poisoned lock is recovered).
//!
//! The modules the binary, the integration tests and the benches use are `pub`; the rest are
//! `pub(crate)`.
//!
//! Dependencies point down this list: a domain module never imports `rpc`, `server`, `cli` or
//! `mcp`, and a leaf imports only other leaves (their tests aside). The clients' side of the protocol (method names
//! and params builders) is `guidebook_hook::protocol`, shared with the hook shim.

pub(crate) mod breaker;
pub(crate) mod changes;
pub mod cli;
pub mod config;
pub(crate) mod enforce;
pub mod engine;
pub(crate) mod evaluation;
pub(crate) mod explain;
pub(crate) mod files;
pub mod flags;
pub(crate) mod git;
pub mod guidebook;
pub(crate) mod language;
pub(crate) mod mcp;
pub mod metrics;
pub(crate) mod parallel;
pub mod prompt;
pub(crate) mod repo;
pub(crate) mod review;
pub mod rpc;
pub(crate) mod sample;
pub(crate) mod scan;
pub(crate) mod search;
pub mod server;
pub(crate) mod service;
pub mod shell_writes;
pub(crate) mod sources;
pub(crate) mod store;
pub(crate) mod sync;
pub(crate) mod time;
pub mod tokens;
pub mod watched;

/// The version every part reports (`status`, `--version`), so mismatched binaries are visible.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
