//! Answers `recordSessionTokens`: a session's token consumption so far, as the orchestrator
//! counts it (the latest report of a session counts). Writes: the session tokens table.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub tokens: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub recorded: bool,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Recorded, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    if params.tokens > i64::MAX as u64 {
        return Err(RpcError::InvalidParams(format!(
            "tokens: {} is beyond {}",
            params.tokens,
            i64::MAX
        )));
    }
    engine.metrics.record_session_tokens(
        &params.session_id,
        params.tokens,
        crate::time::now_epoch(),
    )?;
    Ok(Recorded { recorded: true })
}
