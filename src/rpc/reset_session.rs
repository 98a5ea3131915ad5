//! Answers `resetSession`: forgets what a session was shown (after compaction or `/clear`), so
//! its guidelines show again. Writes: presentation.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cleared {
    pub cleared: usize,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Cleared, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    let cleared = engine.presentations.reset_session(&params.session_id)?;
    tracing::info!(session = %params.session_id, cleared, "session reset");
    Ok(Cleared { cleared })
}
