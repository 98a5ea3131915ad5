//! Answers `breakerStatus`: a session's circuit-breaker state, changing nothing. Reads: the
//! breaker tables.

use serde::Deserialize;

use super::record_error::BreakerAnswer;
use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
}

pub fn handle(engine: &Engine, params: Params) -> Result<BreakerAnswer, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    Ok(engine.breaker.status(&params.session_id)?.into())
}
