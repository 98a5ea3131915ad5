//! The integration test binary: boots the real `guidebook` sidecar on temp sockets with temp
//! homes, real git repositories and real SQLite, and drives it through the real `guidebook-hook`
//! and `guidebook` binaries. One module per area; `harness` holds the shared helpers.

mod adherence;
mod agents;
mod author;
mod autostart;
mod bad_input;
mod breaker;
mod budget;
mod build_prompt;
mod claude_real;
mod cli;
mod cli_docs;
mod codex_real;
mod doctor;
mod enforce;
mod enforce_hook;
mod faults;
mod flags;
mod gemini_real;
mod harness;
mod hook;
mod hooks_install;
mod lifecycle;
mod mcp;
mod metrics;
mod openrpc;
mod presentation;
mod protocol;
mod relevance;
mod reload;
mod review;
mod review_real;
mod scope;
mod service;
mod shell_writes;
mod shell_writes_real;
mod sources_native;
mod sources_repo;
mod sources_team;
mod sources_trust;
mod sources_watch;
mod starvation;
mod structural;
mod test_script;
mod tidy;
