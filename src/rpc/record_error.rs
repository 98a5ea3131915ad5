//! Answers `recordError`: records one check run's errors for a session in the circuit breaker
//! and says whether the agent may go on. Reads and writes: the breaker tables; records the
//! verdict (metrics). Also holds
//! [`BreakerAnswer`], the result shape `breakerStatus` shares.

use serde::{Deserialize, Serialize};

use super::{non_empty, RpcError};
use crate::breaker::{BreakerState, ErrorKey, Verdict};
use crate::engine::Engine;

/// The most errors one run may report. A checker run over a large tree can report thousands;
/// a list far beyond that is a caller's bug, and refusing it bounds one transaction.
pub const MAX_ERRORS: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub errors: Vec<ErrorParam>,
}

/// One error of the run: which checker, its rule code, and the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorParam {
    pub tool: String,
    pub code: String,
    pub file: String,
}

/// The breaker's answer: `recordError`'s and `breakerStatus`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakerAnswer {
    /// `continue`, `warning` or `halt`.
    pub state: String,
    pub total_errors: u64,
    pub reason: Option<String>,
    pub tripped_by: Option<TrippedBy>,
}

/// The key that halted the session, with its streak at that moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrippedBy {
    pub tool: String,
    pub code: String,
    pub file: String,
    pub streak: u32,
}

impl From<Verdict> for BreakerAnswer {
    fn from(v: Verdict) -> Self {
        BreakerAnswer {
            state: v.state.name().to_owned(),
            total_errors: v.total_errors,
            reason: v.reason,
            tripped_by: v.tripped_by.map(|t| TrippedBy {
                tool: t.key.tool,
                code: t.key.code,
                file: t.key.file,
                streak: t.streak,
            }),
        }
    }
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: std::time::Instant,
) -> Result<BreakerAnswer, RpcError> {
    let answer = answer(engine, params);
    engine
        .telemetry
        .hook(crate::metrics::HookKind::Check, received.elapsed());
    answer
}

fn answer(engine: &Engine, params: Params) -> Result<BreakerAnswer, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    if params.errors.len() > MAX_ERRORS {
        return Err(RpcError::InvalidParams(format!(
            "errors: {} errors given; at most {MAX_ERRORS} per call",
            params.errors.len()
        )));
    }
    let mut keys = Vec::with_capacity(params.errors.len());
    for (i, e) in params.errors.into_iter().enumerate() {
        non_empty(&format!("errors[{i}].tool"), &e.tool)?;
        non_empty(&format!("errors[{i}].code"), &e.code)?;
        non_empty(&format!("errors[{i}].file"), &e.file)?;
        keys.push(ErrorKey {
            tool: e.tool,
            code: e.code,
            file: e.file,
        });
    }
    let run_size = keys.len();
    let verdict = engine.breaker.record(&params.session_id, keys)?;
    if verdict.state == BreakerState::Halt {
        tracing::info!(session = %params.session_id, run_size, total = verdict.total_errors,
            "circuit breaker halted");
    } else {
        tracing::debug!(session = %params.session_id, run_size, total = verdict.total_errors,
            "check run recorded");
    }
    let state = verdict.state.name();
    engine.telemetry.verdict(state);
    engine
        .recorder
        .record(crate::store::Observed::BreakerVerdict {
            at: crate::time::now_epoch(),
            session_id: params.session_id,
            state,
        });
    Ok(verdict.into())
}
