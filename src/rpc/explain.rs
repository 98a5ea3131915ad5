//! Answers `explain`: validates the params and runs [`crate::explain::explain_until`] within a
//! deadline, recording nothing. Reads: guideline snapshot, files, presentation.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;
pub use crate::explain::{ExplainedFile, ExplainedMatch, Explanation, GuidelineState};

/// The longest one `explain` call may take, whatever its `deadlineMs`: past it the call fails
/// with -32001. A thousand files of 2 MiB take a few seconds; the bound is what keeps a caller
/// from making the daemon read for minutes (a batch of calls once did 75 s of work).
pub const MAX_EXPLAIN_TIME: Duration = Duration::from_secs(10);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub filepaths: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// The caller's remaining patience; at most [`MAX_EXPLAIN_TIME`] counts.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

pub fn handle(engine: &Engine, params: Params, received: Instant) -> Result<Explanation, RpcError> {
    if let Some(s) = &params.session_id {
        non_empty("sessionId", s)?;
    }
    absolute_paths(&params.filepaths)?;
    let patience = params
        .deadline_ms
        .map_or(MAX_EXPLAIN_TIME, Duration::from_millis)
        .min(MAX_EXPLAIN_TIME);
    Ok(crate::explain::explain_until(
        engine,
        &params.filepaths,
        params.session_id.as_deref(),
        Some(received + patience),
    )?)
}
