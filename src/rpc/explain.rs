//! Answers `explain`: validates the params and runs [`crate::explain::explain`], recording
//! nothing. Reads: guideline snapshot, files, presentation.

use serde::Deserialize;

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;
pub use crate::explain::{ExplainedFile, ExplainedMatch, Explanation, GuidelineState};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub filepaths: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Explanation, RpcError> {
    if let Some(s) = &params.session_id {
        non_empty("sessionId", s)?;
    }
    absolute_paths(&params.filepaths)?;
    Ok(crate::explain::explain(
        engine,
        &params.filepaths,
        params.session_id.as_deref(),
    )?)
}
