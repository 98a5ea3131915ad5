//! Answers `explain`: the same evaluation as `search`, with the repository, language, skip
//! reason and first matching line per file, recording nothing. Reads: guideline snapshot,
//! files, presentation.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub filepaths: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Explanation {
    pub files: Vec<ExplainedFile>,
    pub guidelines: Vec<GuidelineState>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExplainedFile {
    pub path: String,
    pub repository: Option<String>,
    pub language: Option<String>,
    pub skipped: Option<String>,
    pub matches: Vec<ExplainedMatch>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ExplainedMatch {
    pub id: String,
    pub line: usize,
    pub pattern: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GuidelineState {
    pub id: String,
    pub already_presented: bool,
}

pub fn handle(engine: &Engine, params: Params) -> Result<Explanation, RpcError> {
    if let Some(s) = &params.session_id {
        non_empty("sessionId", s)?;
    }
    absolute_paths(&params.filepaths)?;
    let snapshot = engine.guidebook.snapshot();
    let paths: Vec<&str> = params.filepaths.iter().map(String::as_str).collect();
    let evaluations = engine.evaluate(&snapshot, &paths, true);

    let mut matched = BTreeSet::new();
    let files = params
        .filepaths
        .iter()
        .zip(evaluations)
        .map(|(path, e)| ExplainedFile {
            path: path.clone(),
            repository: e.repository,
            language: e.language.map(str::to_string),
            skipped: e.skipped.map(|s| s.to_string()),
            matches: e
                .matches
                .into_iter()
                .map(|m| {
                    matched.insert(m.guideline);
                    let (line, pattern) = m.first.unwrap_or((1, String::new()));
                    ExplainedMatch {
                        id: snapshot.guidelines[m.guideline].id().to_string(),
                        line,
                        pattern,
                    }
                })
                .collect(),
        })
        .collect();

    let ids: Vec<&str> = matched
        .iter()
        .map(|i| snapshot.guidelines[*i].id())
        .collect();
    let presented = match &params.session_id {
        Some(s) => engine.presentations.presented(s, &ids)?,
        None => Default::default(),
    };
    let guidelines = ids
        .into_iter()
        .map(|id| GuidelineState {
            already_presented: presented.contains(id),
            id: id.to_string(),
        })
        .collect();
    Ok(Explanation { files, guidelines })
}
