//! The integration test binary: boots the real `guidebook` sidecar on temp sockets with temp
//! homes, real git repositories and real SQLite, and drives it through the real `guidebook-hook`
//! and `guidebook` binaries. One module per area; `harness` holds the shared helpers.

mod bad_input;
mod breaker;
mod cli;
mod flags;
mod harness;
mod hook;
mod lifecycle;
mod openrpc;
mod presentation;
mod reload;
mod scope;
