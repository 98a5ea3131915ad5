//! Answers `search`: validates the params and runs [`crate::search::search`]. Reads: guideline
//! snapshot, files. Writes: presentation; records the edit hook (metrics).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{checked_edits, deadline_of, RpcError, WrittenParam};
use crate::engine::{Edits, Engine};
use crate::metrics::HookKind;
use crate::search::{search, SearchRequest, ShownGuideline};
use crate::store::Observed;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub filepaths: Vec<String>,
    /// The caller's remaining patience; past it nothing is recorded.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// A token budget for the hook text the result forms (header and blocks).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The lines each edit wrote, by path as in `filepaths`.
    #[serde(default)]
    pub written: Option<WrittenParam>,
    /// Content to match instead of the file on disk, by path as in `filepaths`.
    #[serde(default)]
    pub contents: Option<std::collections::HashMap<String, String>>,
}

/// One guideline to show, `content` exactly as in its YAML.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FoundGuideline {
    pub id: String,
    pub content: String,
    /// Where a guideline from outside the guidebook root came from (file and line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A repository's own rule (text from the repository the user trusted).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repository: bool,
}

impl From<ShownGuideline> for FoundGuideline {
    fn from(g: ShownGuideline) -> Self {
        FoundGuideline {
            id: g.id,
            content: g.content,
            source: g.source,
            repository: g.repository,
        }
    }
}

pub fn handle(
    engine: &Engine,
    params: Params,
    received: Instant,
) -> Result<Vec<FoundGuideline>, RpcError> {
    let edits = checked_edits(
        engine,
        &params.session_id,
        &params.filepaths,
        params.written,
        params.contents,
    )?;
    search_edits(
        engine,
        &params.session_id,
        &params.filepaths,
        &edits,
        deadline_of(received, params.deadline_ms),
        params.max_tokens,
        received,
    )
}

/// Searches the edits of `filepaths`, as `search` and `endShellCommand` both do: records the
/// edit hook (metrics), runs [`crate::search::search`], and times it (telemetry).
pub(super) fn search_edits(
    engine: &Engine,
    session_id: &str,
    filepaths: &[String],
    edits: &Edits,
    deadline: Option<Instant>,
    max_tokens: Option<u64>,
    received: Instant,
) -> Result<Vec<FoundGuideline>, RpcError> {
    let request = SearchRequest {
        session_id,
        filepaths,
        edits,
        deadline,
        max_tokens,
    };
    engine.recorder.record(Observed::Edit {
        at: crate::time::now_epoch(),
        session_id: session_id.to_string(),
        files: filepaths.len() as u64,
    });
    let shown = search(engine, request);
    let took = received.elapsed();
    engine.telemetry.hook(HookKind::Edit, took);
    let shown = shown?;
    engine.telemetry.search(took, shown.len());
    Ok(shown.into_iter().map(FoundGuideline::from).collect())
}
