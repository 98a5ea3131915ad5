//! Answers `search`: the guidelines that apply to and match the changed files and that this
//! session has not been shown, recording them as shown. Reads: guideline snapshot, files.
//! Writes: presentation.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub filepaths: Vec<String>,
    /// The caller's remaining patience; past it nothing is recorded.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// One guideline to show, `content` exactly as in its YAML.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FoundGuideline {
    pub id: String,
    pub content: String,
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: Instant,
) -> Result<Vec<FoundGuideline>, RpcError> {
    non_empty("sessionId", &params.session_id)?;
    absolute_paths(&params.filepaths)?;
    let deadline = params
        .deadline_ms
        .map(|ms| received + Duration::from_millis(ms));
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(RpcError::DeadlineExceeded);
    }
    if params.filepaths.is_empty() {
        return Ok(Vec::new());
    }

    let snapshot = engine.guidebook.snapshot();
    let paths: Vec<&str> = params.filepaths.iter().map(String::as_str).collect();
    let mut matched = vec![false; snapshot.guidelines.len()];
    let evaluated = engine
        .evaluate_until(&snapshot, &paths, false, deadline)
        .ok_or(RpcError::DeadlineExceeded)?;
    for file in evaluated {
        for m in file.matches {
            matched[m.guideline] = true;
        }
    }
    // Snapshot order is id order, so the candidates (and so the result) are sorted by id.
    let candidates: Vec<&str> = matched
        .iter()
        .enumerate()
        .filter(|(_, m)| **m)
        .map(|(i, _)| snapshot.guidelines[i].id())
        .collect();
    let shown =
        engine
            .presentations
            .present_new(&params.session_id, &candidates, deadline, |unseen| unseen)?;
    Ok(shown
        .into_iter()
        .filter_map(|id| snapshot.index_of(id))
        .map(|i| {
            let g = &snapshot.guidelines[i].guideline;
            FoundGuideline {
                id: g.id.clone(),
                content: g.content.clone(),
            }
        })
        .collect())
}
