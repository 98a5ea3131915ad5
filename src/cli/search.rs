//! `guidebook search --session ID FILE...`: one search in this process, printed as JSON.
//!
//! No sidecar: load, compile, open SQLite, read, record. It is what a hook script without a
//! sidecar would have to do on every edit, which makes it the baseline the hook-latency
//! benchmark compares against, and a way to try a guidebook without a daemon.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::engine::Engine;
use crate::rpc::search::FoundGuideline;
use crate::search::{search, SearchRequest};

pub fn run(
    settings: &Settings,
    session: String,
    files: Vec<PathBuf>,
) -> Result<ExitCode, CliError> {
    let filepaths = super::absolute_paths(files)?;
    let engine = Engine::open(settings.clone())?;
    let request = SearchRequest {
        session_id: &session,
        filepaths: &filepaths,
        edits: &Default::default(),
        deadline: None,
        max_tokens: None,
    };
    let found: Vec<FoundGuideline> = search(&engine, request)?
        .into_iter()
        .map(FoundGuideline::from)
        .collect();
    println!("{}", serde_json::to_string(&found).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}
