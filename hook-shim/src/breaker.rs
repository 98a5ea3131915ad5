//! The hook's part of the circuit breaker: checker runs for `recordError`, and the edit gate.
//!
//! Reads: a [`HookEvent`], the sidecar's answers. Writes: nothing.
//!
//! A shell `PostToolUse` that ran ruff or pyright becomes one check run for `recordError`, and a
//! `PreToolUse` of an editing tool asks whether the session is halted. Everything here happens
//! only while flag `hooks_enabled` is on for the session, so each exchange asks `isEnabled`
//! first: `PreToolUse`, which comes before every edit, asks it and `breakerStatus` in one
//! JSON-RPC batch (one round trip); `PostToolUse` asks it before recording, since a batch would
//! record even with the flag off. The caller's `send` does the I/O.

use serde_json::Value;

use crate::checks::{invocations, parse_pyright, parse_ruff, Diagnostic, PYRIGHT, RUFF};
use crate::event::{EventName, HookEvent, ToolInput};
pub use crate::protocol::HOOKS_ENABLED;
use crate::protocol::{
    batch, batch_results, parse_response, CheckError, IsEnabled, RecordError, SessionCall,
};
use edits::patch::shell_patches;
use edits::paths::{resolve, resolve_dir};

/// What the breaker needs from the sidecar for one hook event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakerAction {
    /// Record one check run (files absolute); an empty list is a clean run.
    Record {
        session_id: String,
        errors: Vec<Diagnostic>,
    },
    /// An edit is about to happen: deny it if the session is halted.
    Gate { session_id: String },
}

/// What the breaker has to say after asking the sidecar.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BreakerVerdict {
    /// Nothing (flag off, session fine, sidecar unreachable or in error).
    #[default]
    Nothing,
    /// The session passed the warning limit: one line for `additionalContext`.
    Warning(String),
    /// The session is halted: stop the agent with this reason.
    Halt(String),
    /// The session is halted and an edit is about to happen: deny it with this reason.
    Deny(String),
}

/// What the breaker needs for `event` as read from the hook's stdin; see [`plan_event`].
pub fn plan_breaker(event: &Value) -> Option<BreakerAction> {
    plan_event(&HookEvent::read(event)?)
}

/// What the breaker needs for `event`, if anything:
///
/// - `PostToolUse` of a shell tool whose command ran `ruff check` or `pyright` and whose output
///   shows their diagnostics or a clean result → [`BreakerAction::Record`]; all the checkers of
///   one command make one run, since a second call would end the first one's streaks;
/// - `PreToolUse` of `apply_patch`, `Edit`, `Write`, `MultiEdit`, or of a shell command that
///   pipes a patch into `apply_patch` → [`BreakerAction::Gate`].
pub fn plan_event(event: &HookEvent) -> Option<BreakerAction> {
    let session_id = event.session_id.clone();
    let tool = event.tool.as_ref()?;
    match (&event.name, &tool.input) {
        (name, ToolInput::Shell { .. }) if name.after_tool() => {
            check_run_of(event).map(|errors| BreakerAction::Record { session_id, errors })
        }
        (EventName::PreToolUse, input) => {
            let edits = match input {
                ToolInput::Patch(_) | ToolInput::EditFile(_) => true,
                ToolInput::Shell {
                    command: Some(command),
                    ..
                } => !shell_patches(&command.text()).is_empty(),
                _ => false,
            };
            edits.then_some(BreakerAction::Gate { session_id })
        }
        _ => None,
    }
}

/// The errors of the checkers a shell `PostToolUse` ran, as read from the hook's stdin; see
/// [`check_run_of`].
pub fn check_run(event: &Value) -> Option<Vec<Diagnostic>> {
    check_run_of(&HookEvent::read(event)?)
}

/// The errors of the checkers a shell `PostToolUse` ran, files resolved against the directory
/// each ran in (a `cd DIR` before it, else the tool's `workdir`, else `cwd`). `None` when the
/// command ran no checker or no checker's output is recognisable (it did not start, say).
pub fn check_run_of(event: &HookEvent) -> Option<Vec<Diagnostic>> {
    let tool = event.tool.as_ref()?;
    let ToolInput::Shell {
        command: Some(command),
        ..
    } = &tool.input
    else {
        return None;
    };
    let command = command.text();
    let ran = invocations(&command);
    if ran.is_empty() {
        return None;
    }
    let output = tool.output.as_deref()?;
    let base = event.command_dir();
    let mut recognised = false;
    let mut errors = Vec::new();
    for invocation in ran {
        let parsed = match invocation.tool {
            RUFF => parse_ruff(output),
            PYRIGHT => parse_pyright(output),
            _ => None,
        };
        let Some(found) = parsed else {
            continue;
        };
        recognised = true;
        let dir = match invocation.dir.as_deref() {
            Some(dir) => resolve_dir(base.as_deref(), dir),
            None => base.clone(),
        };
        for d in found {
            // A relative path without a known directory names no file honestly: dropped.
            if let Some(file) = resolve(dir.as_deref(), &d.file) {
                errors.push(Diagnostic { file, ..d });
            }
        }
    }
    recognised.then_some(errors)
}

/// The request body that asks whether the breaker's hooks are on for the session.
pub fn flag_request(session_id: &str, id: u64) -> String {
    flag_call(session_id).envelope(id)
}

fn flag_call(session_id: &str) -> crate::protocol::Call {
    IsEnabled {
        flag: HOOKS_ENABLED.to_owned(),
        key: Some(session_id.to_owned()),
    }
    .call()
}

/// The `recordError` request body for one check run.
pub fn record_request(session_id: &str, errors: &[Diagnostic], id: u64) -> String {
    RecordError {
        session_id: session_id.to_owned(),
        errors: errors
            .iter()
            .map(|d| CheckError {
                tool: d.tool.to_owned(),
                code: d.code.clone(),
                file: d.file.clone(),
            })
            .collect(),
    }
    .call()
    .envelope(id)
}

/// One JSON-RPC batch: `isEnabled` (id 1) and `breakerStatus` (id 2).
pub fn gate_request(session_id: &str) -> String {
    batch(&gate_calls(session_id))
}

/// The gate's two calls, `isEnabled` and `breakerStatus`, to be sent first in a batch (ids 1
/// and 2), as [`gate_verdict`] reads them; `enforce` adds its `checkEdit` after them.
pub fn gate_calls(session_id: &str) -> [crate::protocol::Call; 2] {
    [
        flag_call(session_id),
        SessionCall::breaker_status(session_id).call(),
    ]
}

/// The gate's verdict from a batch's results by id (`isEnabled` 1, `breakerStatus` 2): a deny
/// when the flag is on and the session is halted, else nothing.
pub fn gate_verdict(responses: &[(u64, Value)]) -> BreakerVerdict {
    let by_id = |id: u64| responses.iter().find(|(i, _)| *i == id).map(|(_, r)| r);
    if by_id(1).and_then(Value::as_bool) != Some(true) {
        return BreakerVerdict::Nothing;
    }
    match by_id(2).map(state_and_reason) {
        Some(("halt", reason)) => BreakerVerdict::Deny(reason),
        _ => BreakerVerdict::Nothing,
    }
}

/// Asks the sidecar what the breaker says about `action`. `send` posts one request body and
/// returns the response body, or `None` when the exchange failed (it reports why itself).
pub fn ask(
    action: &BreakerAction,
    send: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> BreakerVerdict {
    match action {
        BreakerAction::Record { session_id, errors } => {
            let Some(flag) = send(&flag_request(session_id, 1)) else {
                return BreakerVerdict::Nothing;
            };
            if parse_response(&flag).ok().and_then(|v| v.as_bool()) != Some(true) {
                return BreakerVerdict::Nothing;
            }
            let Some(body) = send(&record_request(session_id, errors, 2)) else {
                return BreakerVerdict::Nothing;
            };
            match parse_response(&body) {
                Ok(answer) => match state_and_reason(&answer) {
                    ("halt", reason) => BreakerVerdict::Halt(reason),
                    ("warning", reason) => BreakerVerdict::Warning(reason),
                    _ => BreakerVerdict::Nothing,
                },
                Err(_) => BreakerVerdict::Nothing,
            }
        }
        BreakerAction::Gate { session_id } => {
            let Some(body) = send(&gate_request(session_id)) else {
                return BreakerVerdict::Nothing;
            };
            gate_verdict(&batch_results(&body))
        }
    }
}

/// The `state` and the one-line `reason` of a breaker answer.
fn state_and_reason(answer: &Value) -> (&str, String) {
    let state = answer.get("state").and_then(Value::as_str).unwrap_or("");
    let reason = answer
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("Circuit breaker: this session is halted.")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (state, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The tools a halted session may not run: they change files.
    const GUARDED_TOOLS: [&str; 4] = ["apply_patch", "Edit", "Write", "MultiEdit"];

    fn bash(command: &str, response: Value) -> Value {
        json!({"session_id": "s", "cwd": "/w/proj", "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}, "tool_response": response})
    }

    fn d(tool: &'static str, code: &str, file: &str) -> Diagnostic {
        Diagnostic {
            tool,
            code: code.into(),
            file: file.into(),
        }
    }

    const RUFF_CONCISE: &str = include_str!("../tests/fixtures/checks/ruff-concise.txt");
    const PYRIGHT_TXT: &str = include_str!("../tests/fixtures/checks/pyright.txt");

    #[test]
    fn a_codex_ruff_run_is_one_check_run_with_paths_resolved() {
        let response = format!("Exit code: 1\nWall time: 0.2 seconds\nOutput:\n{RUFF_CONCISE}");
        let action = plan_breaker(&bash("cd api && ruff check src", json!(response))).unwrap();
        let BreakerAction::Record { session_id, errors } = action else {
            panic!("not a record: {action:?}");
        };
        assert_eq!(session_id, "s");
        assert_eq!(errors.len(), 8);
        assert_eq!(
            errors[0],
            d(RUFF, "F401", "/w/proj/api/src/app/dispatch.py")
        );
        assert_eq!(errors[7], d(RUFF, "F401", "/w/proj/api/src/app/models.py"));
    }

    #[test]
    fn both_checkers_in_one_command_make_one_run() {
        let output = format!("{RUFF_CONCISE}{PYRIGHT_TXT}");
        let Some(BreakerAction::Record { errors, .. }) = plan_breaker(&bash(
            "ruff check . ; pyright",
            json!({"stdout": output, "stderr": "", "interrupted": false}),
        )) else {
            panic!("no record")
        };
        assert_eq!(errors.iter().filter(|e| e.tool == RUFF).count(), 8);
        assert_eq!(errors.iter().filter(|e| e.tool == PYRIGHT).count(), 3);
    }

    #[test]
    fn clean_runs_record_empty_runs_and_other_commands_nothing() {
        let clean = bash(
            "uv run ruff check .",
            json!("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nAll checks passed!\n"),
        );
        assert_eq!(
            plan_breaker(&clean),
            Some(BreakerAction::Record {
                session_id: "s".into(),
                errors: vec![]
            })
        );
        let missing = bash(
            "ruff check .",
            json!("Exit code: 127\nWall time: 0 seconds\nOutput:\nbash: ruff: command not found\n"),
        );
        assert_eq!(plan_breaker(&missing), None);
        let other = bash("cat lint.txt", json!(RUFF_CONCISE));
        assert_eq!(plan_breaker(&other), None);
    }

    #[test]
    fn pre_tool_use_of_editing_tools_is_gated() {
        let pre = |tool: &str, input: Value| {
            plan_breaker(
                &json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PreToolUse",
                "tool_name": tool, "tool_input": input}),
            )
        };
        let gate = Some(BreakerAction::Gate {
            session_id: "s".into(),
        });
        for tool in GUARDED_TOOLS {
            assert_eq!(pre(tool, json!({})), gate, "{tool}");
        }
        let heredoc =
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch\nEOF\n";
        assert_eq!(pre("Bash", json!({ "command": heredoc })), gate);
        assert_eq!(pre("Bash", json!({"command": "ls"})), None);
        assert_eq!(pre("Read", json!({"file_path": "/p/a"})), None);
    }

    #[test]
    fn gemini_shell_runs_and_file_edits_reach_the_breaker() {
        let event: Value = serde_json::from_str(include_str!(
            "../tests/fixtures/hooks/gemini_after_tool_run_shell_command_ruff.json"
        ))
        .unwrap();
        // `Output: ` opens the tool's text; the file resolves against `dir_path` under `cwd`.
        assert_eq!(
            plan_breaker(&event),
            Some(BreakerAction::Record {
                session_id: "6b1f8c2e-4d3a-4e5f-9a7b-2c1d0e9f8a76".into(),
                errors: vec![d(RUFF, "F401", "/home/dev/proj/api/src/app/dispatch.py")],
            })
        );
        let before: Value = serde_json::from_str(include_str!(
            "../tests/fixtures/hooks/gemini_before_tool_write_file.json"
        ))
        .unwrap();
        assert_eq!(
            plan_breaker(&before),
            Some(BreakerAction::Gate {
                session_id: "6b1f8c2e-4d3a-4e5f-9a7b-2c1d0e9f8a76".into()
            })
        );
    }

    /// Gemini CLI 0.61 wraps the shell tool's text in `<untrusted_context>` (captured from it,
    /// with ruff 0.17's default full format).
    #[test]
    fn gemini_wrapped_shell_output_reaches_the_breaker() {
        let event: Value = serde_json::from_str(include_str!(
            "../tests/fixtures/hooks/gemini_0_61_after_tool_run_shell_command_ruff_full.json"
        ))
        .unwrap();
        assert_eq!(
            plan_breaker(&event),
            Some(BreakerAction::Record {
                session_id: "cc77ffc7-edeb-4eba-9e61-dc3d3bb418c4".into(),
                errors: vec![d(RUFF, "F401", "/home/dev/api/src/app.py")],
            })
        );
    }

    #[test]
    fn request_bodies() {
        let body: Value =
            serde_json::from_str(&record_request("s", &[d(RUFF, "E501", "/a.py")], 2)).unwrap();
        assert_eq!(
            body,
            json!({"jsonrpc": "2.0", "id": 2, "method": "recordError",
                "params": {"sessionId": "s", "errors": [{"tool": "ruff", "code": "E501", "file": "/a.py"}]}})
        );
        let batch: Value = serde_json::from_str(&gate_request("s")).unwrap();
        assert_eq!(batch[0]["method"], "isEnabled");
        assert_eq!(
            batch[0]["params"],
            json!({"flag": "hooks_enabled", "key": "s"})
        );
        assert_eq!(batch[1]["method"], "breakerStatus");
    }

    #[test]
    fn asking_follows_the_flag() {
        let record = BreakerAction::Record {
            session_id: "s".into(),
            errors: vec![],
        };
        let mut sent = Vec::new();
        let mut off = |body: &str| {
            sent.push(body.to_owned());
            Some(br#"{"jsonrpc":"2.0","id":1,"result":false}"#.to_vec())
        };
        assert_eq!(ask(&record, &mut off), BreakerVerdict::Nothing);
        assert_eq!(sent.len(), 1, "nothing recorded with the flag off");

        let mut answers = vec![
            br#"{"jsonrpc":"2.0","id":1,"result":true}"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":2,"result":{"state":"warning","totalErrors":16,"reason":"Circuit breaker warning:\n16 errors","trippedBy":null}}"#.to_vec(),
        ]
        .into_iter();
        let mut on = |_: &str| answers.next();
        assert_eq!(
            ask(&record, &mut on),
            BreakerVerdict::Warning("Circuit breaker warning: 16 errors".into())
        );

        let gate = BreakerAction::Gate {
            session_id: "s".into(),
        };
        let halted = br#"[{"jsonrpc":"2.0","id":2,"result":{"state":"halt","totalErrors":3,"reason":"R","trippedBy":null}},{"jsonrpc":"2.0","id":1,"result":true}]"#;
        assert_eq!(
            ask(&gate, &mut |_: &str| Some(halted.to_vec())),
            BreakerVerdict::Deny("R".into())
        );
        let flag_off = br#"[{"jsonrpc":"2.0","id":1,"result":false},{"jsonrpc":"2.0","id":2,"result":{"state":"halt","reason":"R"}}]"#;
        assert_eq!(
            ask(&gate, &mut |_: &str| Some(flag_off.to_vec())),
            BreakerVerdict::Nothing
        );
        assert_eq!(ask(&gate, &mut |_: &str| None), BreakerVerdict::Nothing);
    }
}
