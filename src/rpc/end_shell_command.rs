//! Answers `endShellCommand`: a shell command has run; the files it changed (named ones against
//! their pre-images, unnamed ones from the repository's watcher) are searched as `search`
//! searches an edit's. Reads: those files, the watcher's log. Writes: presentation; records
//! the edit hook (metrics).

use std::time::Instant;

use serde::Deserialize;

use super::begin_shell_command::check_command;
use super::search::{search_edits, FoundGuideline};
use super::{deadline_of, edits_of, RpcError, WrittenParam};
use crate::engine::Engine;
use crate::shell_writes::End;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub call_id: String,
    #[serde(default)]
    pub dir: Option<String>,
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: Instant,
) -> Result<Vec<FoundGuideline>, RpcError> {
    check_command(
        &params.session_id,
        &params.call_id,
        &params.dir,
        &params.targets,
    )?;
    let changes = engine.shell.end(End {
        session_id: &params.session_id,
        call_id: &params.call_id,
        dir: params.dir.as_deref(),
        targets: &params.targets,
    });
    tracing::debug!(
        session = %params.session_id,
        files = changes.files.len(),
        begun = changes.begun,
        incomplete = changes.incomplete,
        "shell command ended"
    );
    if changes.files.is_empty() {
        return Ok(Vec::new());
    }
    // The lines known from a pre-image; the other files' come from the last commit.
    let written: WrittenParam = changes
        .written
        .iter()
        .map(|(path, ranges)| {
            let ranges = ranges.as_slice().iter().map(|&[a, b]| [a as u64, b as u64]);
            (path.clone(), ranges.collect())
        })
        .collect();
    let edits = edits_of(
        &changes.files,
        Some(written),
        None,
        engine.settings.max_file_bytes,
    )?;
    search_edits(
        engine,
        &params.session_id,
        &changes.files,
        &edits,
        deadline_of(received, params.deadline_ms),
        params.max_tokens,
        received,
    )
}
