//! Answers `beginShellCommand`: a shell command is about to run; the sidecar keeps the files it
//! names as they are now and the moment, and watches its repository. Reads: the named files,
//! the repository's directories (once). Writes: nothing.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{absolute_paths, non_empty, RpcError};
use crate::engine::Engine;
use crate::shell_writes::Begin;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub session_id: String,
    pub call_id: String,
    #[serde(default)]
    pub dir: Option<String>,
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(default)]
    pub mentioned: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Begun {
    /// Whether the command's repository is watched: its unnamed writes will be found.
    pub watching: bool,
    /// How many named files had their content kept.
    pub kept: usize,
}

pub fn handle(engine: &Engine, params: Params, _: Instant) -> Result<Begun, RpcError> {
    check_command(
        &params.session_id,
        &params.call_id,
        &params.dir,
        &params.targets,
    )?;
    absolute_paths(&params.mentioned)
        .map_err(|e| RpcError::InvalidParams(e.to_string().replace("filepaths", "mentioned")))?;
    let begun = engine.shell.begin(Begin {
        session_id: &params.session_id,
        call_id: &params.call_id,
        dir: params.dir.as_deref(),
        targets: &params.targets,
        mentioned: &params.mentioned,
    });
    Ok(Begun {
        watching: begun.watching,
        kept: begun.kept,
    })
}

/// The params `beginShellCommand` and `endShellCommand` share, checked: `sessionId` and
/// `callId` not empty, `dir` absolute (when given) and `targets` absolute paths.
pub(crate) fn check_command(
    session_id: &str,
    call_id: &str,
    dir: &Option<String>,
    targets: &[String],
) -> Result<(), RpcError> {
    non_empty("sessionId", session_id)?;
    non_empty("callId", call_id)?;
    check_paths(dir, targets)
}

/// `dir` absolute (when given) and `targets` absolute paths.
fn check_paths(dir: &Option<String>, targets: &[String]) -> Result<(), RpcError> {
    if let Some(dir) = dir {
        if !dir.starts_with('/') || dir.contains('\0') {
            return Err(RpcError::InvalidParams(format!(
                "dir: `{dir}` is not an absolute path"
            )));
        }
    }
    absolute_paths(targets)
        .map_err(|e| RpcError::InvalidParams(e.to_string().replace("filepaths", "targets")))
}
