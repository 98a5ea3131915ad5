//! The circuit breaker through the real sidecar: `recordError`'s contract examples, limits from
//! `config.yaml`, a halt that survives a restart, concurrent runs, the `guidebook breaker` CLI,
//! and a Codex `Bash` `PostToolUse` with real pyright output through the real `guidebook-hook`
//! to `continue: false` and a `PreToolUse` deny.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::harness::*;

fn err(tool: &str, code: &str, file: &str) -> Value {
    json!({"tool": tool, "code": code, "file": file})
}

fn record(sidecar: &Sidecar, session: &str, errors: Vec<Value>) -> Value {
    sidecar.result(
        "recordError",
        json!({"sessionId": session, "errors": errors}),
    )
}

fn state(answer: &Value) -> &str {
    answer["state"].as_str().unwrap()
}

const ATTR: &str = "reportAttributeAccessIssue";

#[test]
fn the_contract_examples_through_the_daemon() {
    let sidecar = Sidecar::start_default();
    let x = || err("pyright", ATTR, "/src/dispatch.py");

    // (pyright, reportAttributeAccessIssue, /src/dispatch.py) in three consecutive runs halts.
    let states: Vec<String> = (0..3)
        .map(|_| state(&record(&sidecar, "a", vec![x()])).to_owned())
        .collect();
    assert_eq!(states, ["continue", "continue", "halt"]);
    let halted = sidecar.result("breakerStatus", json!({"sessionId": "a"}));
    assert_eq!(
        halted,
        json!({"state": "halt", "totalErrors": 3,
            "reason": "Circuit breaker: pyright reportAttributeAccessIssue in /src/dispatch.py failed 3 check runs in a row. Stop and rethink the approach, or ask the user. Only the user can reset it: guidebook breaker reset --session a",
            "trippedBy": {"tool": "pyright", "code": ATTR, "file": "/src/dispatch.py", "streak": 3}})
    );

    // pyright X, ruff E501 (a run without X ends X's streak), pyright X, pyright X on the same
    // file does not: X's streak is 2, though X is in 3 of the 4 runs. The next X halts.
    for errors in [
        vec![x()],
        vec![err("ruff", "E501", "/src/dispatch.py")],
        vec![x()],
        vec![x()],
    ] {
        assert_eq!(state(&record(&sidecar, "b", errors)), "continue");
    }
    let halted = record(&sidecar, "b", vec![x()]);
    assert_eq!(state(&halted), "halt");
    assert_eq!(halted["trippedBy"]["streak"], 3, "{halted}");
    // The same code in different files does not.
    for file in ["/src/a.py", "/src/b.py", "/src/c.py"] {
        assert_eq!(
            state(&record(&sidecar, "c", vec![err("pyright", ATTR, file)])),
            "continue"
        );
    }
    // Batch runs: duplicates count once; each key keeps its own streak; a clean run resets.
    let f401 = || err("ruff", "F401", "/src/a.py");
    let e501 = || err("ruff", "E501", "/src/a.py");
    let first = record(&sidecar, "d", vec![f401(), f401(), e501()]);
    assert_eq!(first["totalErrors"], 2);
    record(&sidecar, "d", vec![f401(), e501()]);
    let clean = record(&sidecar, "d", vec![]);
    assert_eq!(
        (state(&clean), &clean["totalErrors"]),
        ("continue", &json!(4))
    );
    record(&sidecar, "d", vec![f401()]);
    record(&sidecar, "d", vec![f401(), e501()]);
    let third = record(&sidecar, "d", vec![e501(), f401()]);
    assert_eq!(state(&third), "halt");
    assert_eq!(third["trippedBy"]["code"], "F401");

    // Sessions are independent, and a never-seen one continues.
    assert_eq!(
        sidecar.result("breakerStatus", json!({"sessionId": "nobody"})),
        json!({"state": "continue", "totalErrors": 0, "reason": null, "trippedBy": null})
    );
}

#[test]
fn totals_warn_then_halt_and_the_limits_come_from_config_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "breaker:\n  sameErrorLimit: 2\n  warningLimit: 4\n  criticalLimit: 6\n",
    )
    .unwrap();
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    // Two errors per run, always in new files: only the totals can trip.
    let run = |n: usize| {
        record(
            &sidecar,
            "t",
            vec![
                err("ruff", "F401", &format!("/r{n}/a.py")),
                err("ruff", "F401", &format!("/r{n}/b.py")),
            ],
        )
    };
    let answers: Vec<Value> = (0..3).map(run).collect();
    assert_eq!(
        answers.iter().map(state).collect::<Vec<_>>(),
        ["continue", "warning", "halt"]
    );
    assert_eq!(
        answers[1]["reason"],
        "Circuit breaker warning: 4 errors in this session (warning at 4, halt at 6). Fix the causes before changing more code."
    );
    assert!(answers[2]["reason"]
        .as_str()
        .unwrap()
        .starts_with("Circuit breaker: 6 errors in this session (limit 6)."));
    assert_eq!(answers[2]["trippedBy"], Value::Null);
    // A streak of 2 halts under these limits.
    record(&sidecar, "s", vec![err("ruff", "E1", "/a.py")]);
    let second = record(&sidecar, "s", vec![err("ruff", "E1", "/a.py")]);
    assert_eq!(second["trippedBy"]["streak"], 2);
}

#[test]
fn a_halt_survives_a_restart_sticks_and_resets() {
    let mut sidecar = Sidecar::start_default();
    for _ in 0..3 {
        record(&sidecar, "r", vec![err("ruff", "E501", "/x.py")]);
    }
    let before = sidecar.result("breakerStatus", json!({"sessionId": "r"}));
    assert_eq!(state(&before), "halt");
    sidecar.restart();
    assert_eq!(
        sidecar.result("breakerStatus", json!({"sessionId": "r"})),
        before,
        "a restart loses nothing and does not un-halt"
    );
    // Sticky: a clean run does not lift it, and the trip is kept.
    let after_clean = record(&sidecar, "r", vec![]);
    assert_eq!(state(&after_clean), "halt");
    assert_eq!(after_clean["trippedBy"], before["trippedBy"]);

    // The CLI asks the running sidecar.
    let out = sidecar.cli(&["breaker", "status", "--session", "r"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("state    halt"), "{text}");
    assert!(
        text.contains("tripped  ruff E501 in /x.py (3 runs in a row)"),
        "{text}"
    );
    let out = sidecar.cli(&["breaker", "reset", "--session", "r"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "breaker reset for session r\n"
    );
    assert_eq!(
        state(&sidecar.result("breakerStatus", json!({"sessionId": "r"}))),
        "continue"
    );
    assert_eq!(
        sidecar.result("resetBreaker", json!({"sessionId": "r"})),
        json!({"reset": false})
    );

    // Without a sidecar the CLI works on the database itself.
    for _ in 0..3 {
        record(&sidecar, "q", vec![err("ruff", "E501", "/x.py")]);
    }
    sidecar.stop();
    let out = sidecar.cli(&["breaker", "status", "--session", "q", "--json"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(state(&answer), "halt");
    assert!(String::from_utf8_lossy(&out.stderr).contains("directly"));
    let out = sidecar.cli(&["breaker", "reset", "--session", "q"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "breaker reset for session q\n"
    );
    let out = sidecar.cli(&["breaker", "status", "--session", "q", "--json"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["totalErrors"], 0);
}

#[test]
fn concurrent_runs_of_one_session_lose_nothing() {
    let sidecar = Arc::new(Sidecar::start_default());
    const THREADS: usize = 8;
    const CALLS: usize = 20;
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let sidecar = Arc::clone(&sidecar);
            std::thread::spawn(move || {
                for c in 0..CALLS {
                    // Two distinct keys, one of them twice: each call adds 2.
                    let a = err("ruff", "F401", &format!("/t{t}/c{c}.py"));
                    let b = err("pyright", ATTR, &format!("/t{t}/c{c}.py"));
                    record(&sidecar, "busy", vec![a.clone(), b, a]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a recording thread panicked");
    }
    let status = sidecar.result("breakerStatus", json!({"sessionId": "busy"}));
    assert_eq!(status["totalErrors"], (THREADS * CALLS * 2) as u64);
}

/// Turns `hooks_enabled` on for every session of this sidecar.
#[test]
fn codex_bash_pyright_runs_halt_the_session_and_its_edits_are_denied() {
    let sidecar = Sidecar::start_default();
    let post = fixture("hooks/codex_post_tool_use_bash_pyright.json");
    let pre = fixture("hooks/codex_pre_tool_use_apply_patch.json");
    let session = post["session_id"].as_str().unwrap();
    let input_schema = jsonschema::validator_for(&fixture(
        "codex-hook-schemas/post-tool-use.command.input.schema.json",
    ))
    .unwrap();
    assert!(
        input_schema.is_valid(&post),
        "the fixture is a Codex PostToolUse input"
    );

    // With hooks_enabled off: no output, nothing recorded.
    for _ in 0..3 {
        assert_eq!(sidecar.hook(&post).stdout, "");
    }
    assert_eq!(sidecar.hook(&pre).stdout, "");
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(status["totalErrors"], 0);

    enable_hooks(&sidecar);
    assert_eq!(sidecar.hook(&post).stdout, "");
    assert_eq!(sidecar.hook(&post).stdout, "");
    let third = sidecar.hook(&post);
    let dispatch = "/tmp/guidebook-checks/project/src/app/dispatch.py";
    let reason = format!(
        "Circuit breaker: pyright reportMissingImports in {dispatch} failed 3 check runs in a \
         row. Stop and rethink the approach, or ask the user. Only the user can reset it: guidebook breaker reset \
         --session {session}"
    );
    assert_eq!(
        third.stdout,
        format!("{}\n", json!({"continue": false, "stopReason": reason}))
    );
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(status["totalErrors"], 9, "three runs of three errors");
    assert_eq!(status["trippedBy"]["file"], dispatch);

    // The halted session's next edit is denied, in exactly the contract's shape.
    let denied = sidecar.hook(&pre);
    assert_eq!(
        denied.stdout,
        format!(
            "{}\n",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": reason}})
        )
    );
    // Claude Code's editing tools too; other sessions and other tools are not held up.
    let mut claude_edit = pre.clone();
    claude_edit["tool_name"] = json!("Edit");
    claude_edit["tool_input"] =
        json!({"file_path": dispatch, "old_string": "a", "new_string": "b"});
    assert!(sidecar.hook(&claude_edit).stdout.contains("\"deny\""));
    let mut read = pre.clone();
    read["tool_name"] = json!("Read");
    assert_eq!(sidecar.hook(&read).stdout, "");
    let mut other = pre.clone();
    other["session_id"] = json!("another-session");
    assert_eq!(sidecar.hook(&other).stdout, "");

    // The agent cannot lift the halt itself: its shell tool's reset, flag change or direct
    // call on the socket is denied before it runs, and the session stays halted.
    let socket = sidecar.socket.display().to_string();
    for command in [
        format!("guidebook breaker reset --session {session}"),
        "guidebook flags set hooks_enabled false".to_owned(),
        format!(
            "curl -s --unix-socket {socket} http://localhost/ -d \
             '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resetBreaker\",\"params\":{{\"sessionId\":\"{session}\"}}}}'"
        ),
    ] {
        let mut shell = pre.clone();
        shell["tool_name"] = json!("Bash");
        shell["tool_input"] = json!({"command": command});
        let run = sidecar.hook(&shell);
        let output: Value = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("{command}: {e}: {:?} {}", run.stdout, run.stderr));
        assert_valid_pre_tool_use_output(&run.stdout);
        let specific = &output["hookSpecificOutput"];
        assert_eq!(specific["permissionDecision"], "deny", "{command}");
        assert!(
            specific["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("ask the user to do it"),
            "{output}"
        );
    }
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(status["state"], "halt", "still halted");
    // Its other shell commands are not held up by the guard.
    let mut ls = pre.clone();
    ls["tool_name"] = json!("Bash");
    ls["tool_input"] = json!({"command": "ls -la && guidebook status"});
    assert_eq!(sidecar.hook(&ls).stdout, "");

    // After the user's reset the edit goes through.
    sidecar.cli(&["breaker", "reset", "--session", session]);
    assert_eq!(sidecar.hook(&pre).stdout, "");
}

/// Gemini CLI: three failing `run_shell_command` ruff runs halt (`continue: false`, which it
/// honours in `AfterTool`), and the halted session's `BeforeTool` of `write_file` is denied in
/// Gemini's own shape.
#[test]
fn gemini_shell_ruff_runs_halt_the_session_and_its_writes_are_denied() {
    let sidecar = Sidecar::start_default();
    enable_hooks(&sidecar);
    let post = fixture("hooks/gemini_after_tool_run_shell_command_ruff.json");
    let pre = fixture("hooks/gemini_before_tool_write_file.json");
    let session = post["session_id"].as_str().unwrap();
    assert_eq!(sidecar.hook(&post).stdout, "{}\n");
    assert_eq!(sidecar.hook(&pre).stdout, "{}\n", "not halted yet");
    assert_eq!(sidecar.hook(&post).stdout, "{}\n");
    let third: Value = serde_json::from_str(&sidecar.hook(&post).stdout).unwrap();
    assert_eq!(third["continue"], false);
    let reason = third["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("ruff F401 in /home/dev/proj/api/src/app/dispatch.py"),
        "{reason}"
    );
    let denied = sidecar.hook(&pre);
    assert_eq!(
        denied.stdout,
        format!("{}\n", json!({"decision": "deny", "reason": reason}))
    );
    sidecar.cli(&["breaker", "reset", "--session", session]);
    assert_eq!(sidecar.hook(&pre).stdout, "{}\n");
}

#[test]
fn ruff_runs_in_claude_and_codex_shapes_warn_in_additional_context() {
    let sidecar = Sidecar::start_default();
    enable_hooks(&sidecar);
    let concise = std::fs::read_to_string(fixture_path("checks/ruff-concise.txt")).unwrap();
    let json_out = std::fs::read_to_string(fixture_path("checks/ruff-json.json")).unwrap();
    let codex = |command: &str, output: &str| {
        json!({"session_id": "w", "cwd": "/tmp/guidebook-checks/project",
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": format!("Exit code: 1\nWall time: 0.1 seconds\nOutput:\n{output}")})
    };
    let claude = |command: &str, stdout: &str| {
        json!({"session_id": "w", "cwd": "/tmp/guidebook-checks/project",
            "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command, "description": "lint"},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false}})
    };
    let clean = codex("ruff check src", "All checks passed!\n");
    // Five distinct keys per run; clean runs in between keep streaks from forming.
    let runs = [
        codex("ruff check src", &concise),
        clean.clone(),
        claude("uv run ruff check --output-format json src", &json_out),
        clean.clone(),
    ];
    for event in &runs {
        assert_eq!(sidecar.hook(event).stdout, "", "{event}");
    }
    let warned = sidecar.hook(&codex("ruff check --output-format concise src", &concise));
    let out: Value = serde_json::from_str(&warned.stdout).unwrap();
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
            "additionalContext": "Circuit breaker warning: 15 errors in this session (warning at 15, halt at 30). Fix the causes before changing more code."}})
    );
    // The concise run's relative paths and the JSON run's absolute ones name the same files.
    let status = sidecar.result("breakerStatus", json!({"sessionId": "w"}));
    assert_eq!(status["totalErrors"], 15);
    let again = sidecar.hook(&codex("ruff check src", &concise));
    assert!(
        again.stdout.contains("Circuit breaker warning: 20 errors"),
        "{}",
        again.stdout
    );
    let halted = sidecar.hook(&codex("ruff check src", &concise));
    assert!(
        halted.stdout.starts_with(
            r#"{"continue":false,"stopReason":"Circuit breaker: ruff F401 in /tmp/guidebook-checks/project/src/app/dispatch.py failed 3 check runs in a row."#
        ),
        "{}",
        halted.stdout
    );
}

/// Claude Code reports a Bash command that exits non-zero (every failing lint run) as
/// `PostToolUseFailure`, with the output in `error` and no `tool_response` (captured from
/// Claude Code 2.1.328): those runs feed the breaker, a warning is labelled with that event, and
/// the halted session's `Write` is denied.
#[test]
fn claude_failed_bash_ruff_runs_halt_the_session() {
    let sidecar = Sidecar::start_default();
    enable_hooks(&sidecar);
    let failed = fixture("hooks/claude_post_tool_use_failure_bash_ruff.json");
    let session = failed["session_id"].as_str().unwrap();
    let write = json!({"session_id": session, "cwd": "/home/dev/proj",
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": "/home/dev/proj/src/new.py", "content": "x = 1\n"}});
    assert_eq!(sidecar.hook(&failed).stdout, "");
    assert_eq!(sidecar.hook(&failed).stdout, "");
    assert_eq!(sidecar.hook(&write).stdout, "", "not halted yet");
    let third: Value = serde_json::from_str(&sidecar.hook(&failed).stdout).unwrap();
    assert_eq!(third["continue"], false);
    let reason = third["stopReason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with("Circuit breaker: ruff F401 in /home/dev/proj/src/app.py failed 3"),
        "{reason}"
    );
    // Claude Code ignores `continue` here, so the model is also told in its next context.
    assert_eq!(
        third["hookSpecificOutput"],
        json!({"hookEventName": "PostToolUseFailure", "additionalContext": reason})
    );
    let denied: Value = serde_json::from_str(&sidecar.hook(&write).stdout).unwrap();
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(
        denied["hookSpecificOutput"]["permissionDecisionReason"],
        reason
    );

    // A warning after a failed run answers that event by name.
    let mut other = failed.clone();
    other["session_id"] = json!("claude-warned");
    let errors: Vec<Value> = (0..14)
        .map(|i| json!({"tool": "ruff", "code": format!("E{i}"), "file": "/home/dev/proj/a.py"}))
        .collect();
    sidecar.result(
        "recordError",
        json!({"sessionId": "claude-warned", "errors": errors}),
    );
    let warned: Value = serde_json::from_str(&sidecar.hook(&other).stdout).unwrap();
    assert_eq!(
        warned["hookSpecificOutput"]["hookEventName"],
        "PostToolUseFailure"
    );
    assert!(
        warned["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .starts_with("Circuit breaker warning: 15 errors"),
        "{warned}"
    );
}
