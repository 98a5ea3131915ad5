//! The team's adherence: each sidecar settles its sessions into cumulative per-guideline
//! counters in its database ([`settle`]), pushes them to the team's Prometheus over remote write
//! ([`remote_write`], [`http`], on its own thread: [`push`]), and `guidebook report --team` sums
//! every sidecar's counters back into the report ([`query`]). The series and their labels are
//! named once ([`series`]); what leaves the machine is counts, guideline ids (repository rules
//! under one label), the group and outcome, the configured labels and a random instance id —
//! never a path, a file name, a repository, a session id, a user name or code.

pub mod http;
pub mod push;
pub mod query;
pub mod remote_write;
pub mod series;
pub mod settle;

pub use push::{PushError, PushStatus, Pushed, Pusher};
