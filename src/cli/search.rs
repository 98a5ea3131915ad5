//! `guidebook search --session ID FILE...`: one `search` done in this process with no sidecar
//! (load, compile, open SQLite, read, record), printing the result as JSON. It is what a hook
//! script without a sidecar would have to do on every edit, which makes it the baseline the
//! hook-latency benchmark compares against, and a way to try a guidebook without a daemon.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use super::CliError;
use crate::config::Settings;
use crate::engine::Engine;
use crate::rpc::search;

pub fn run(
    settings: &Settings,
    session: String,
    files: Vec<PathBuf>,
) -> Result<ExitCode, CliError> {
    let received = Instant::now();
    let filepaths = super::absolute_paths(files)?;
    let engine = Engine::open(settings.clone())?;
    let params = search::Params {
        session_id: session,
        filepaths,
        deadline_ms: None,
        max_tokens: None,
    };
    let found =
        search::handle(&engine, params, received).map_err(|e| CliError::Sidecar(e.to_string()))?;
    println!("{}", serde_json::to_string(&found).unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}
