//! Answers `buildPrompt`: a role's prompt pack disclosed by phase (`summary`, `standard`,
//! `full`), fitted to the phase's token budget; every phase is `full` while the
//! `progressive_disclosure` flag is off for the session. Reads: prompt packs, flags. Records the
//! build (role, phase, tokens, the context's `team` and `level`) for the metrics.

use serde::{Deserialize, Serialize};

use super::RpcError;
use crate::engine::Engine;
use crate::prompt::{self, Phase, PromptRequest};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Params {
    pub task: String,
    #[serde(default)]
    pub context: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub role: Option<String>,
    /// Kept as raw JSON so that any bad value, a wrong type included, gets the contract's
    /// `Invalid disclosure_phase` message.
    #[serde(default)]
    pub disclosure_phase: Option<serde_json::Value>,
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BuiltPromptResult {
    pub prompt: String,
    pub phase: &'static str,
    pub tokens: usize,
    pub tokenizer: &'static str,
    pub truncated: bool,
}

/// The phase a request asks for; absent means `full`.
pub fn parse_phase(value: Option<&serde_json::Value>) -> Result<Phase, RpcError> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(Phase::Full),
        Some(serde_json::Value::String(s)) => Phase::from_name(s).ok_or_else(|| {
            RpcError::InvalidParams(format!(
                "Invalid disclosure_phase `{s}`: expected one of {}",
                Phase::NAMES.join(", ")
            ))
        }),
        Some(other) => Err(RpcError::InvalidParams(format!(
            "Invalid disclosure_phase {other}: expected one of {} (a string)",
            Phase::NAMES.join(", ")
        ))),
    }
}

pub fn handle(engine: &Engine, params: Params) -> Result<BuiltPromptResult, RpcError> {
    let phase = parse_phase(params.disclosure_phase.as_ref())?;
    if params.task.trim().is_empty() {
        return Err(RpcError::InvalidParams("task: must not be empty".into()));
    }
    let role = params.role.as_deref().unwrap_or(prompt::DEFAULT_ROLE);
    let packs = engine.prompts.snapshot();
    let pack = packs.get(role).ok_or_else(|| {
        // A role that could never be a file name is echoed escaped: it may hold anything.
        RpcError::InvalidParams(format!(
            "role: unknown role {:?}; known roles: {}",
            role,
            packs.roles().join(", ")
        ))
    })?;
    let progressive = engine.flags.is_enabled(
        crate::flags::PROGRESSIVE_DISCLOSURE,
        params.session_id.as_deref(),
    );
    let built = prompt::build(
        pack,
        PromptRequest {
            task: &params.task,
            context: params.context.as_ref(),
            phase,
        },
        engine.tokenizer,
        progressive,
    );
    let text_of = |key: &str| {
        params.context.as_ref()?.get(key).and_then(|v| match v {
            serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
    };
    engine.telemetry.prompt(built.phase.name(), built.tokens);
    engine.recorder.record(crate::store::Observed::PromptBuild {
        at: crate::time::now_epoch(),
        session_id: params.session_id.clone(),
        role: role.to_owned(),
        phase: built.phase.name(),
        tokens: built.tokens as u64,
        team: text_of("team"),
        // `2`, `"2"` and `"lv2"` are one level.
        level: text_of("level").map(|l| l.strip_prefix("lv").unwrap_or(&l).to_owned()),
    });
    Ok(BuiltPromptResult {
        prompt: built.text,
        phase: built.phase.name(),
        tokens: built.tokens,
        tokenizer: engine.tokenizer.name(),
        truncated: built.truncated,
    })
}
