//! Answers `abAssign`: a task's group in the haiku A/B test, so the orchestrator picks the QC
//! model from it. The flag `ab_test_haiku` and its rollout bucket of the task id decide the
//! first time; the group is recorded and the task keeps it. Reads: flags. Writes: assignments.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::engine::Engine;
use crate::metrics::ab;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub task_id: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assigned {
    pub task_id: String,
    /// `haiku` (the flag is on for this task) or `sonnet`.
    pub group: String,
    /// The QC model to run for this task.
    pub model: String,
    /// When the task was first assigned (RFC 3339).
    pub assigned_at: String,
    /// Whether this call assigned it (false: it kept its earlier group).
    pub newly_assigned: bool,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Assigned, RpcError> {
    non_empty("taskId", &params.task_id)?;
    let (a, new) = engine
        .metrics
        .assign(&params.task_id, crate::time::now_epoch(), || {
            let (g, m) = ab::group_for(engine.flags.is_enabled(ab::FLAG, Some(&params.task_id)));
            (g.to_owned(), m.to_owned())
        })?;
    Ok(Assigned {
        task_id: a.task_id,
        group: a.group,
        model: a.model,
        assigned_at: crate::time::rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(a.assigned_at.max(0) as u64),
        ),
        newly_assigned: new,
    })
}
