//! Answers `explain`: validates the params and runs [`crate::explain::explain_until`] within a
//! deadline, recording nothing. Reads: guideline snapshot, files, presentation.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;
pub use crate::explain::{
    ExplainedFile, ExplainedLeaf, ExplainedMatch, Explanation, GuidelineState,
};

/// The longest one `explain` call may take: past it the call fails with -32001. A thousand
/// files of 2 MiB take a few seconds; the bound is what keeps a caller from making the daemon
/// read for minutes (a batch of calls once did 75 s of work). A fixed bound, not a param: the
/// clients' `Explain` builder sends no deadline, and a person's `guidebook explain` has none.
pub const MAX_EXPLAIN_TIME: Duration = Duration::from_secs(10);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub filepaths: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
}

pub fn handle(engine: &Engine, params: Params, received: Instant) -> Result<Explanation, RpcError> {
    if let Some(s) = &params.session_id {
        non_empty("sessionId", s)?;
    }
    absolute_paths(&params.filepaths)?;
    Ok(crate::explain::explain_until(
        engine,
        &params.filepaths,
        &crate::engine::Edits::new(),
        params.session_id.as_deref(),
        Some(received + MAX_EXPLAIN_TIME),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::errors::DEADLINE_EXCEEDED;

    /// A call is answered within [`MAX_EXPLAIN_TIME`] of its arrival or not at all: one that
    /// arrived longer ago than that (time as a parameter) fails with -32001.
    #[test]
    fn explain_is_bounded_by_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::engine::test_engine(dir.path());
        let file = dir.path().join("a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let params = || Params {
            filepaths: vec![file.display().to_string()],
            session_id: None,
        };
        let now = Instant::now();
        let answered = handle(&engine, params(), now).unwrap();
        assert_eq!(answered.files.len(), 1);
        let Some(long_ago) = now.checked_sub(MAX_EXPLAIN_TIME + Duration::from_millis(1)) else {
            return; // A clock that started less than ten seconds ago cannot say "long ago".
        };
        let err = handle(&engine, params(), long_ago).unwrap_err();
        assert_eq!(err.code(), DEADLINE_EXCEEDED, "{err}");
    }
}
