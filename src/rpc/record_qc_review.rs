//! Answers `recordQcReview`: the re-review of a QC-passed task by the stronger model or a
//! person, the gold standard for QC's false negatives. Reads: the task's latest QC result.
//! Writes: the reviews table (a second review of a task replaces the first).

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub task_id: String,
    pub defect_found: bool,
    /// Who re-reviewed: a model's name or `person`.
    #[serde(default)]
    pub reviewer: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reviewed {
    pub recorded: bool,
    /// Whether an earlier review of the task was replaced.
    pub replaced: bool,
    /// The model whose QC pass was re-reviewed.
    pub model: String,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Reviewed, RpcError> {
    non_empty("taskId", &params.task_id)?;
    if let Some(r) = &params.reviewer {
        non_empty("reviewer", r)?;
    }
    let model = match engine.metrics.latest_qc(&params.task_id)? {
        Some((true, model)) => model,
        Some((false, _)) => {
            return Err(RpcError::InvalidParams(format!(
                "taskId: the latest QC result of task `{}` is a failure; only QC passes are \
                 re-reviewed",
                params.task_id
            )))
        }
        None => {
            return Err(RpcError::InvalidParams(format!(
                "taskId: no QC result recorded for task `{}`: call recordQcResult first",
                params.task_id
            )))
        }
    };
    let replaced = engine.metrics.record_review(
        &params.task_id,
        params.defect_found,
        params.reviewer.as_deref(),
        crate::time::now_epoch(),
    )?;
    Ok(Reviewed {
        recorded: true,
        replaced,
        model,
    })
}
