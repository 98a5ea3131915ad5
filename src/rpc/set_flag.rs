//! Answers `setFlag`: changes one flag's `enabled` and/or `rollout_percent`, rewrites the flags
//! file atomically and only then serves the new flags. Writes: the flags file.

use serde::Deserialize;

use super::get_flags::FlagState;
use super::RpcError;
use crate::engine::Engine;
use crate::flags::{updated_by, FlagsError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub flag: String,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub rollout_percent: Option<u64>,
}

pub fn handle(engine: &Engine, params: Params) -> Result<FlagState, RpcError> {
    if params.enabled.is_none() && params.rollout_percent.is_none() {
        return Err(RpcError::InvalidParams(
            "give `enabled` and/or `rolloutPercent`: there is nothing to set".into(),
        ));
    }
    let rollout = match params.rollout_percent {
        Some(p) if p > 100 => {
            return Err(RpcError::InvalidParams(format!(
                "rolloutPercent: {p} is out of range 0..=100"
            )))
        }
        p => p.map(|p| p as u8),
    };
    engine
        .flags
        .set(&params.flag, params.enabled, rollout, &updated_by())
        .map(FlagState::from)
        .map_err(|e| match e {
            FlagsError::InvalidName(m) => RpcError::InvalidParams(format!("flag: {m}")),
            e => RpcError::Flags(e),
        })
}
