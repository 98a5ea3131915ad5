//! Answers `getFlags`: every flag as served (file plus environment overrides), where they came
//! from, when they were loaded, and the file's current error, if any. Reads: the flags file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::Engine;
use crate::flags::{FlagView, FlagsReport};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlagsAnswer {
    /// `_meta.version` of the served file, as written there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
    pub loaded_at: String,
    pub path: String,
    pub error: Option<String>,
    pub flags: BTreeMap<String, FlagState>,
}

/// One flag on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FlagState {
    pub enabled: bool,
    pub rollout_percent: u8,
    pub description: String,
    pub owner: String,
    pub overridden_by: Option<String>,
}

impl From<FlagView> for FlagState {
    fn from(v: FlagView) -> Self {
        FlagState {
            enabled: v.enabled,
            rollout_percent: v.rollout_percent,
            description: v.description,
            owner: v.owner,
            overridden_by: v.overridden_by.map(str::to_string),
        }
    }
}

pub fn handle(engine: &Engine, _params: Params) -> FlagsAnswer {
    engine.flags.report().into()
}

impl From<FlagsReport> for FlagsAnswer {
    fn from(report: FlagsReport) -> Self {
        FlagsAnswer {
            version: report.version,
            loaded_at: crate::time::rfc3339(report.loaded_at),
            path: report.path.display().to_string(),
            error: report.error,
            flags: report
                .flags
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect(),
        }
    }
}
