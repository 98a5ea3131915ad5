//! Answers `checkEdit`: validates the params and runs [`crate::enforce::blocked`] on the files
//! as the edit would leave them. Reads: guideline snapshot, the content given (or the files).
//! Records the refusals (telemetry, and adherence through the recorder).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{checked_edits, deadline_of, RpcError, WrittenParam};
use crate::enforce::{blocked, Blocked, EnforceError};
use crate::engine::Engine;
use crate::store::{AdherenceEvent, Observed};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub filepaths: Vec<String>,
    /// The caller's remaining patience.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// The lines the edit would write, by path as in `filepaths`.
    #[serde(default)]
    pub written: Option<WrittenParam>,
    /// The files as the edit would leave them, by path as in `filepaths`.
    #[serde(default)]
    pub contents: Option<std::collections::HashMap<String, String>>,
}

/// The `block` guidelines the edit would break; empty: let it through.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CheckEditResult {
    pub blocked: Vec<Blocked>,
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: Instant,
) -> Result<CheckEditResult, RpcError> {
    let edits = checked_edits(
        engine,
        &params.session_id,
        &params.filepaths,
        params.written,
        params.contents,
    )?;
    let deadline = deadline_of(received, params.deadline_ms);
    let found = blocked(engine, &params.filepaths, &edits, deadline).map_err(|e| match e {
        EnforceError::DeadlineExceeded => RpcError::DeadlineExceeded,
    })?;
    for b in &found {
        engine.telemetry.edit_blocked(&b.id);
        if engine.keeps_adherence() {
            // A refusal, for adherence: a later accepted edit without the match corrects it.
            let event = AdherenceEvent::Block {
                at: crate::time::now_epoch(),
                path: b.path.clone(),
                guideline: b.id.clone(),
            };
            engine.count_adherence(&params.session_id, || &event);
            engine.recorder.record(Observed::Adherence {
                session_id: params.session_id.clone(),
                event,
            });
        }
    }
    Ok(CheckEditResult { blocked: found })
}
