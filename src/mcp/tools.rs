//! The tools `guidebook mcp` offers, their input schemas, and the sidecar call behind each.
//!
//! `hook` serves the hosts' `mcp_tool` hooks; six more are for agents to call themselves, and
//! four for an orchestrator to report what the rollout is measured by.
//! Reads: tool arguments. Writes: nothing (the caller sends the call).

use std::sync::Arc;

use guidebook_hook::protocol::{self, Call};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// The tool the hosts' `mcp_tool` hooks call.
pub const HOOK: &str = "hook";

/// `hook`: the hook event's fields, as the host has them. Open: hosts differ, and an unknown
/// field must not fail the hook.
fn hook_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "description": "The hook event's fields, as the host writes them to a command hook's stdin.",
        "properties": {
            "session_id": {"type": "string", "description": "The agent session's id."},
            "hook_event_name": {"type": "string", "description": "PreToolUse, PostToolUse, SessionStart, PostCompact, ..."},
            "tool_name": {"type": "string", "description": "The tool the event is about (apply_patch, Bash, Edit, Write, MultiEdit, ...)."},
            "tool_input": {"description": "The tool's input: an object (Codex apply_patch: {\"command\": PATCH}; Claude Code Edit: {\"file_path\": PATH, ...})."},
            "tool_response": {"description": "The tool's result (PostToolUse): Codex sends a string, Claude Code an object."},
            "cwd": {"type": "string", "description": "The directory relative paths are resolved against."},
            "source": {"type": "string", "description": "SessionStart: startup, resume, compact or clear."},
            "turn_id": {"type": "string"}
        },
        "additionalProperties": true
    });
    match schema {
        Value::Object(object) => object,
        _ => unreachable!("a literal object"),
    }
}

/// `search_guidelines`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Your session id. Each guideline is shown once per session; the same id keeps it so.
    pub session_id: String,
    /// Absolute paths of the files you changed or are about to change.
    pub filepaths: Vec<String>,
    /// A budget for the returned text in tokens (cl100k); guidelines beyond it come with a
    /// later call. Omit for no budget.
    pub max_tokens: Option<u64>,
}

/// `explain_guidelines`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct ExplainParams {
    /// Absolute paths of the files to explain.
    pub filepaths: Vec<String>,
    /// With a session id, each guideline also says whether that session was already shown it.
    pub session_id: Option<String>,
}

/// `build_prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct BuildPromptParams {
    /// The task the prompt is for, in plain words.
    pub task: String,
    /// Facts to include in the full phase, as a JSON object (say, the files and the ticket).
    pub context: Option<JsonObject>,
    /// The prompt pack to use (`prompts/<role>.yaml` in the guidebook); default `default`.
    pub role: Option<String>,
    /// How much to disclose: `summary` (shortest), `standard`, or `full` (default).
    pub disclosure_phase: Option<String>,
    /// Your session id: the progressive_disclosure flag is decided per session.
    pub session_id: Option<String>,
}

/// One error a checker reported.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct CheckError {
    /// The checker: `ruff`, `pyright`, ...
    pub tool: String,
    /// Its rule or error code, e.g. `F401` or `reportAttributeAccessIssue`.
    pub code: String,
    /// The absolute path of the file it is about.
    pub file: String,
}

/// `record_error`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct RecordErrorParams {
    /// Your session id.
    pub session_id: String,
    /// Every error of one check run (at least one). A clean run is not the model's to report:
    /// it would end the streaks the breaker counts, so only the hooks, which see the checker
    /// run, record one.
    #[schemars(length(min = 1))]
    pub errors: Vec<CheckError>,
}

/// `breaker_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// Your session id.
    pub session_id: String,
}

/// `list_flags`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `record_qc_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct QcResultParams {
    /// The task's id (the A/B test's rollout key).
    pub task_id: String,
    /// The agent session that did the task.
    pub session_id: Option<String>,
    /// Whether QC passed.
    pub passed: bool,
    /// Why QC failed: code_defect, report_format, task_interpretation or other (only when it
    /// failed).
    pub issue_type: Option<String>,
    /// How long the QC run took, in seconds.
    pub duration_sec: f64,
    /// The QC model that ran.
    pub model: String,
}

/// `record_qc_review`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct QcReviewParams {
    /// The task whose QC pass was re-reviewed.
    pub task_id: String,
    /// Whether the re-review found a defect QC missed.
    pub defect_found: bool,
    /// Who re-reviewed: a model's name or `person`.
    pub reviewer: Option<String>,
}

/// `record_session_tokens`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct SessionTokensParams {
    /// The session.
    pub session_id: String,
    /// Its token consumption so far.
    pub tokens: u64,
}

/// `ab_assign`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct TaskParams {
    /// The task's id.
    pub task_id: String,
}

/// The tools only an orchestrator is offered (`guidebook mcp --orchestrator`): they write the
/// rollout's measurements, which the model being measured must not be able to forge.
pub const ORCHESTRATOR_TOOLS: [&str; 4] = [
    "record_qc_result",
    "record_qc_review",
    "record_session_tokens",
    "ab_assign",
];

/// The tools a server offers: every tool for an orchestrator, the agent's tools otherwise.
pub fn offered(orchestrator: bool) -> Vec<Tool> {
    all()
        .into_iter()
        .filter(|t| orchestrator || !ORCHESTRATOR_TOOLS.contains(&t.name.as_ref()))
        .collect()
}

/// Every tool, in the order `tools/list` shows them.
pub fn all() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            HOOK,
            "Runs Adaptive Guidebook's agent hook for one hook event and returns exactly what the \
             `guidebook-hook` command would print for it: a hook output JSON line, or empty text \
             when there is nothing to say. Meant for the host's `mcp_tool` hooks (PreToolUse, \
             PostToolUse, SessionStart, PostCompact), not for the model: to get guidelines, call \
             search_guidelines.",
            Arc::new(hook_schema()),
        ),
        Tool::new(
            "search_guidelines",
            "Returns the team's development guidelines that apply to the given files (by \
             repository, language and the files' current content) and that this session has not \
             been shown yet, as a JSON array of {id, content}; each is then recorded as shown. \
             Call it before or after changing files and follow what it returns. An empty array \
             means nothing new applies.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<SearchParams>(),
        Tool::new(
            "explain_guidelines",
            "Explains which guidelines apply to and match each file, and why (repository, \
             language, the line and pattern of the first match), without recording anything. Use \
             it to understand why a guideline was or was not shown.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<ExplainParams>()
        .annotate(read_only.clone()),
        Tool::new(
            "build_prompt",
            "Builds a prompt for a task from the team's prompt packs: a fixed CRITICAL block, then \
             the pack's guidance and the task, fitted to the phase's token budget. Returns JSON \
             {prompt, phase, tokens, tokenizer, truncated}.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<BuildPromptParams>()
        .annotate(read_only.clone()),
        Tool::new(
            "record_error",
            "Records one failed check run (ruff, pyright, ...: at least one error) with the \
             circuit breaker, which halts a session that keeps failing the same way. Returns JSON \
             {state: continue|warning|halt, \
             totalErrors, reason, trippedBy}; on `halt`, stop and rethink or ask the user.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<RecordErrorParams>(),
        Tool::new(
            "breaker_status",
            "Returns the circuit breaker's state for a session without changing it: JSON {state: \
             continue|warning|halt, totalErrors, reason, trippedBy}.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<SessionParams>()
        .annotate(read_only.clone()),
        Tool::new(
            "list_flags",
            "Lists Adaptive Guidebook's feature flags (enabled, rollout percent, description, \
             owner) and where they were loaded from.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<NoParams>()
        .annotate(read_only),
        Tool::new(
            "record_qc_result",
            "For an orchestrator: records one QC run of a task (passed, the issue type of a \
             failure, duration in seconds, model) for the rollout's metrics and the haiku A/B \
             test. Returns JSON {recorded, group}.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<QcResultParams>(),
        Tool::new(
            "record_qc_review",
            "For an orchestrator: records the re-review of a task that passed QC (by a stronger \
             model or a person) and whether it found a defect QC missed. Returns JSON {recorded, \
             replaced, model}.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<QcReviewParams>(),
        Tool::new(
            "record_session_tokens",
            "For an orchestrator: records an agent session's token consumption so far (the \
             latest report counts). Returns JSON {recorded}.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<SessionTokensParams>(),
        Tool::new(
            "ab_assign",
            "For an orchestrator: returns a task's group in the haiku A/B test and the QC model \
             to run for it, as JSON {taskId, group, model, assignedAt, newlyAssigned}; a task \
             keeps its first group.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<TaskParams>(),
    ]
}

/// The sidecar call for an agent tool's arguments, or why the arguments do not fit (`None`: no
/// such tool).
pub fn sidecar_call(tool: &str, arguments: JsonObject) -> Option<Result<Call, String>> {
    fn parse<T: for<'de> Deserialize<'de>>(arguments: JsonObject) -> Result<T, String> {
        serde_json::from_value(Value::Object(arguments))
            .map_err(|e| format!("invalid arguments: {e}"))
    }
    let call = match tool {
        "search_guidelines" => parse::<SearchParams>(arguments).map(|p| {
            protocol::Search {
                session_id: p.session_id,
                filepaths: p.filepaths,
                deadline_ms: None,
                max_tokens: p.max_tokens,
                ..Default::default()
            }
            .call()
        }),
        "explain_guidelines" => parse::<ExplainParams>(arguments).map(|p| {
            protocol::Explain {
                filepaths: p.filepaths,
                session_id: p.session_id,
            }
            .call()
        }),
        "build_prompt" => parse::<BuildPromptParams>(arguments).map(|p| {
            protocol::BuildPrompt {
                task: p.task,
                context: p.context,
                role: p.role,
                disclosure_phase: p.disclosure_phase,
                session_id: p.session_id,
            }
            .call()
        }),
        "record_error" => parse::<RecordErrorParams>(arguments).and_then(|p| {
            if p.errors.is_empty() {
                return Err(
                    "errors: at least one error (a clean run is recorded by the hooks, \
                            which see the checker run; a model cannot end the breaker's streaks)"
                        .to_string(),
                );
            }
            Ok(protocol::RecordError {
                session_id: p.session_id,
                errors: p
                    .errors
                    .into_iter()
                    .map(|e| protocol::CheckError {
                        tool: e.tool,
                        code: e.code,
                        file: e.file,
                    })
                    .collect(),
            }
            .call())
        }),
        "breaker_status" => parse::<SessionParams>(arguments)
            .map(|p| protocol::SessionCall::breaker_status(&p.session_id).call()),
        "record_qc_result" => parse::<QcResultParams>(arguments).map(|p| {
            protocol::RecordQcResult {
                task_id: p.task_id,
                session_id: p.session_id,
                passed: p.passed,
                issue_type: p.issue_type,
                duration_sec: p.duration_sec,
                model: p.model,
            }
            .call()
        }),
        "record_qc_review" => parse::<QcReviewParams>(arguments).map(|p| {
            protocol::RecordQcReview {
                task_id: p.task_id,
                defect_found: p.defect_found,
                reviewer: p.reviewer,
            }
            .call()
        }),
        "record_session_tokens" => parse::<SessionTokensParams>(arguments).map(|p| {
            protocol::RecordSessionTokens {
                session_id: p.session_id,
                tokens: p.tokens,
            }
            .call()
        }),
        "ab_assign" => {
            parse::<TaskParams>(arguments).map(|p| protocol::AbAssign { task_id: p.task_id }.call())
        }
        "list_flags" => parse::<NoParams>(arguments)
            .map(|NoParams {}| protocol::no_params(protocol::method::GET_FLAGS)),
        _ => return None,
    };
    Some(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn an_agent_s_server_offers_no_orchestrator_tool() {
        let names = |tools: Vec<Tool>| -> Vec<String> {
            tools.into_iter().map(|t| t.name.to_string()).collect()
        };
        let agent = names(offered(false));
        assert_eq!(agent.len(), all().len() - ORCHESTRATOR_TOOLS.len());
        assert!(ORCHESTRATOR_TOOLS
            .iter()
            .all(|t| !agent.iter().any(|a| a == t)));
        assert_eq!(names(offered(true)), names(all()));
    }

    #[test]
    fn every_tool_has_an_object_schema_and_a_description() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "hook",
                "search_guidelines",
                "explain_guidelines",
                "build_prompt",
                "record_error",
                "breaker_status",
                "list_flags",
                "record_qc_result",
                "record_qc_review",
                "record_session_tokens",
                "ab_assign"
            ]
        );
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 60),
                "{}",
                tool.name
            );
        }
        let search = &tools[1].input_schema;
        assert_eq!(search["required"], json!(["session_id", "filepaths"]));
        assert!(search["properties"]["filepaths"]["description"].is_string());
    }

    #[test]
    fn arguments_become_the_sidecar_params_in_camel_case() {
        let call = sidecar_call(
            "build_prompt",
            args(json!({"task": "t", "disclosure_phase": "summary", "session_id": "s"})),
        )
        .unwrap()
        .unwrap();
        let (method, params) = (call.method, call.params_value());
        assert_eq!(method, "buildPrompt");
        assert_eq!(
            params,
            json!({"task": "t", "disclosurePhase": "summary", "sessionId": "s"})
        );
        let call = sidecar_call(
            "search_guidelines",
            args(json!({"session_id": "s", "filepaths": ["/a.py"], "max_tokens": 10})),
        )
        .unwrap()
        .unwrap();
        let (method, params) = (call.method, call.params_value());
        assert_eq!(method, "search");
        assert_eq!(
            params,
            json!({"sessionId": "s", "filepaths": ["/a.py"], "maxTokens": 10})
        );
        let call = sidecar_call(
            "record_qc_result",
            args(
                json!({"task_id": "T-1", "passed": false, "issue_type": "other",
                "duration_sec": 2.5, "model": "haiku"}),
            ),
        )
        .unwrap()
        .unwrap();
        assert_eq!(call.method, "recordQcResult");
        assert_eq!(
            call.params_value(),
            json!({"taskId": "T-1", "passed": false, "issueType": "other",
                "durationSec": 2.5, "model": "haiku"})
        );
        let wrong = sidecar_call("record_error", args(json!({"session_id": "s"}))).unwrap();
        assert!(wrong.unwrap_err().contains("missing field `errors`"));
        assert!(sidecar_call("nope", JsonObject::new()).is_none());
    }

    /// A model cannot report a clean run: that would end the streaks the breaker counts.
    #[test]
    fn record_error_refuses_an_empty_run() {
        let empty = sidecar_call(
            "record_error",
            args(json!({"session_id": "s", "errors": []})),
        );
        let why = empty.unwrap().unwrap_err();
        assert!(why.contains("at least one error"), "{why}");
        let one = sidecar_call(
            "record_error",
            args(
                json!({"session_id": "s", "errors": [{"tool": "ruff", "code": "F401", "file": "/a.py"}]}),
            ),
        );
        assert!(one.unwrap().is_ok());
        let schema = all()
            .into_iter()
            .find(|t| t.name == "record_error")
            .unwrap()
            .input_schema;
        assert_eq!(schema["properties"]["errors"]["minItems"], 1, "{schema:?}");
    }
}
