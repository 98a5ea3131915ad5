//! Answers `recordQcResult`: an orchestrator reports one QC run of a task (pass or fail, the
//! issue type of a failure, duration, model). Writes: the QC results table.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;
use crate::metrics::files::ISSUE_TYPES;
use crate::store::QcResult;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub task_id: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub passed: bool,
    /// Required when the run failed; absent when it passed.
    #[serde(default)]
    pub issue_type: Option<String>,
    pub duration_sec: f64,
    pub model: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub recorded: bool,
    /// The task's A/B group (`haiku` or `sonnet`), if `abAssign` gave it one.
    pub group: Option<String>,
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: std::time::Instant,
) -> Result<Recorded, RpcError> {
    non_empty("taskId", &params.task_id)?;
    non_empty("model", &params.model)?;
    if let Some(s) = &params.session_id {
        non_empty("sessionId", s)?;
    }
    if !(params.duration_sec.is_finite() && params.duration_sec >= 0.0) {
        return Err(RpcError::InvalidParams(format!(
            "durationSec: {} is not a duration in seconds (0 or more)",
            params.duration_sec
        )));
    }
    match (&params.issue_type, params.passed) {
        (Some(t), true) => {
            return Err(RpcError::InvalidParams(format!(
                "issueType: a passed QC run has no issue type (got `{t}`)"
            )))
        }
        (None, false) => {
            return Err(RpcError::InvalidParams(format!(
                "issueType: required when passed is false: one of {}",
                ISSUE_TYPES.join(", ")
            )))
        }
        (Some(t), false) if !ISSUE_TYPES.contains(&t.as_str()) => {
            return Err(RpcError::InvalidParams(format!(
                "issueType: unknown issue type `{t}`: expected one of {}",
                ISSUE_TYPES.join(", ")
            )))
        }
        _ => {}
    }
    let result = QcResult {
        task_id: params.task_id,
        session_id: params.session_id,
        passed: params.passed,
        issue_type: params.issue_type,
        duration_sec: params.duration_sec,
        model: params.model,
    };
    let deadline = received + std::time::Duration::from_millis(engine.settings.busy_timeout_ms);
    let group =
        engine
            .metrics
            .record_qc_result(&result, crate::time::now_epoch(), Some(deadline))?;
    engine.telemetry.qc(group.as_deref(), result.passed);
    Ok(Recorded {
        recorded: true,
        group,
    })
}
