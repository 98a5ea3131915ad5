//! Answers `isEnabled`: whether a flag is on for a key (rollout by murmur3 bucket; environment
//! overrides win; a flag the file does not name is off). Reads: the flags file.

use serde::Deserialize;

use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub flag: String,
    #[serde(default)]
    pub key: Option<String>,
}

pub fn handle(engine: &Engine, params: Params) -> Result<bool, RpcError> {
    non_empty("flag", &params.flag)?;
    Ok(engine.flags.is_enabled(&params.flag, params.key.as_deref()))
}
