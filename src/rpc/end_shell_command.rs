//! Answers `endShellCommand`: a shell command has run; the files it changed (named ones against
//! their pre-images, unnamed ones from the repository's watcher) are searched as `search`
//! searches an edit's. Reads: those files, the watcher's log. Writes: presentation; records
//! the edit hook (metrics).

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::begin_shell_command::check_paths;
use super::search::FoundGuideline;
use super::{edits_of, non_empty, RpcError, WrittenParam};
use crate::engine::Engine;
use crate::metrics::HookKind;
use crate::search::{search, SearchRequest};
use crate::shell_writes::End;
use crate::store::Observed;

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
    non_empty("sessionId", &params.session_id)?;
    non_empty("callId", &params.call_id)?;
    check_paths(&params.dir, &params.targets)?;
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
            let ranges = ranges.iter().map(|[a, b]| [u64::from(*a), u64::from(*b)]);
            (path.clone(), ranges.collect())
        })
        .collect();
    let edits = edits_of(
        &changes.files,
        Some(written),
        None,
        engine.settings.max_file_bytes,
    )?;
    let request = SearchRequest {
        session_id: &params.session_id,
        filepaths: &changes.files,
        edits: &edits,
        deadline: params
            .deadline_ms
            .map(|ms| received + Duration::from_millis(ms)),
        max_tokens: params.max_tokens,
    };
    engine.recorder.record(Observed::Edit {
        at: crate::time::now_epoch(),
        session_id: params.session_id.clone(),
        files: changes.files.len() as u64,
    });
    let shown = search(engine, request);
    let took = received.elapsed();
    engine.telemetry.hook(HookKind::Edit, took);
    let shown = shown?;
    engine.telemetry.search(took, shown.len());
    Ok(shown.into_iter().map(FoundGuideline::from).collect())
}
