//! Answers `resetBreaker`: forgets a session's circuit-breaker state (halt, streaks, totals).
//! Writes: the breaker tables.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResetAnswer {
    /// Whether the session had recorded any check run (so there was state to forget).
    pub reset: bool,
}

pub fn handle(engine: &Engine, params: Params) -> Result<ResetAnswer, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    let reset = engine.breaker.reset(&params.session_id)?;
    tracing::info!(session = %params.session_id, reset, "circuit breaker reset");
    Ok(ResetAnswer { reset })
}
