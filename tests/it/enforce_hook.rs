//! The check before an edit, through the real shim and the real daemon: each host's
//! `PreToolUse` (Gemini CLI: `BeforeTool`) of an edit that would write a line a `severity: block`
//! guideline forbids is denied in the host's shape, with the guideline and the line; the
//! corrected edit, and every failure of the check, go through.

use std::ffi::OsStr;

use serde_json::{json, Value};

use crate::harness::*;

fn scene() -> BlockScene {
    BlockScene::new()
}

/// Each host's edit that puts `line` after `val user = "app"` in `src/Db.kt`.
fn edits(scene: &BlockScene, line: &str) -> Vec<(&'static str, Value)> {
    let cwd = scene.repo.display().to_string();
    let db = scene.db.display().to_string();
    let patch = format!(
        "*** Begin Patch\n*** Update File: src/Db.kt\n@@\n val user = \"app\"\n+{line}\n val timeout = 5\n*** End Patch\n"
    );
    let codex = |tool: &str, input: Value| {
        json!({"session_id": "s-codex", "turn_id": "t", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input, "tool_use_id": "call_1"})
    };
    let claude = |tool: &str, input: Value| {
        json!({"session_id": "s-claude", "cwd": cwd, "hook_event_name": "PreToolUse",
            "permission_mode": "acceptEdits", "tool_name": tool, "tool_input": input})
    };
    let gemini = |tool: &str, input: Value| {
        json!({"session_id": "s-gemini", "cwd": cwd, "hook_event_name": "BeforeTool",
            "timestamp": "2026-12-06T03:00:00.000Z", "tool_name": tool, "tool_input": input})
    };
    let user = "val user = \"app\"\n";
    let replaced = format!("{user}{line}\n");
    vec![
        (
            "codex apply_patch",
            codex("apply_patch", json!({"command": patch})),
        ),
        (
            "codex exec_command heredoc",
            codex(
                "exec_command",
                json!({"cmd": format!("apply_patch <<'EOF'\n{patch}EOF\n")}),
            ),
        ),
        (
            "claude Write",
            claude(
                "Write",
                json!({"file_path": db, "content": DB_KT.replace(user, &replaced)}),
            ),
        ),
        (
            "claude Edit",
            claude(
                "Edit",
                json!({"file_path": db, "old_string": user, "new_string": replaced, "replace_all": false}),
            ),
        ),
        (
            "claude MultiEdit",
            claude(
                "MultiEdit",
                json!({"file_path": db, "edits": [
                    {"old_string": "val timeout = 5", "new_string": "val timeout = 6"},
                    {"old_string": user, "new_string": replaced}]}),
            ),
        ),
        (
            "gemini write_file",
            gemini(
                "write_file",
                json!({"file_path": db, "content": DB_KT.replace(user, &replaced)}),
            ),
        ),
        (
            "gemini replace",
            gemini(
                "replace",
                json!({"file_path": db, "instruction": "add the password", "old_string": user, "new_string": replaced}),
            ),
        ),
    ]
}

/// The deny reason of a hook output in either host shape, or `None` for no deny.
fn deny_reason(stdout: &str) -> Option<String> {
    let output: Value = serde_json::from_str(stdout.trim()).ok()?;
    if output["decision"] == "deny" {
        return output["reason"].as_str().map(str::to_owned);
    }
    let specific = &output["hookSpecificOutput"];
    (specific["permissionDecision"] == "deny")
        .then(|| {
            specific["permissionDecisionReason"]
                .as_str()
                .map(str::to_owned)
        })
        .flatten()
}

#[test]
fn each_hosts_violating_edit_is_denied_with_the_guideline_and_the_line_and_the_fix_goes_through() {
    let scene = scene();
    for (host, event) in edits(&scene, BAD_LINE) {
        let run = scene.sidecar.hook(&event);
        assert!(run.status.success(), "{host}: {}", run.stderr);
        let reason = deny_reason(&run.stdout)
            .unwrap_or_else(|| panic!("{host}: not denied: {} {}", run.stdout, run.stderr));
        assert_eq!(reason, blocked_reason("src/Db.kt"), "{host}");
        assert_eq!(
            std::fs::read_to_string(&scene.db).unwrap(),
            DB_KT,
            "{host}: the shim writes nothing"
        );
    }
    // The password already on line 2 is not the edit's: the corrected edit goes through.
    for (host, event) in edits(&scene, GOOD_LINE) {
        let run = scene.sidecar.hook(&event);
        assert!(run.status.success(), "{host}: {}", run.stderr);
        let expected = if host.starts_with("gemini") {
            "{}\n"
        } else {
            ""
        };
        assert_eq!(run.stdout, expected, "{host}: {}", run.stderr);
    }
}

#[test]
fn the_check_fails_open_when_no_sidecar_answers() {
    let scene = scene();
    let dead = scene.repo.join("nobody.sock");
    for (host, event) in edits(&scene, BAD_LINE) {
        let run = run_shim(
            &event.to_string(),
            &[
                ("ADAPTIVE_GUIDEBOOK_SOCKET", dead.as_os_str()),
                ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", OsStr::new("1")),
            ],
        );
        assert!(run.status.success(), "{host}");
        let expected = if host.starts_with("gemini") {
            "{}\n"
        } else {
            ""
        };
        assert_eq!(run.stdout, expected, "{host}: {}", run.stderr);
    }
}

/// The breaker's deny and the check are asked in one round trip; a halted session's deny wins
/// (its reason says how the session goes on; the block guideline comes with the next edit).
#[test]
fn a_halted_sessions_deny_wins_over_the_check() {
    let scene = scene();
    enable_hooks(&scene.sidecar);
    let error = json!([{"tool": "ruff", "code": "F401", "file": "/w/a.py"}]);
    let mut state = Value::Null;
    for _ in 0..3 {
        state = scene.sidecar.result(
            "recordError",
            json!({"sessionId": "s-claude", "errors": error}),
        );
    }
    assert_eq!(state["state"], "halt", "{state}");
    let (_, event) = edits(&scene, BAD_LINE)
        .into_iter()
        .find(|(host, _)| *host == "claude Edit")
        .unwrap();
    let run = scene.sidecar.hook(&event);
    let reason = deny_reason(&run.stdout).expect("denied");
    assert!(reason.starts_with("Circuit breaker:"), "{reason}");
}

/// `guidebook mcp`'s `hook` tool (the `mcp_tool` wiring) checks an edit exactly as the shim
/// does: the same deny, byte for byte, and the same silence for the corrected edit.
#[test]
fn the_mcp_hook_tool_denies_exactly_what_the_shim_denies() {
    let scene = scene();
    let mut cmd = scene.sidecar.guidebook(&["mcp"]);
    cmd.env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1").env(
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        PATIENT_HOOK_TIMEOUT_MS,
    );
    let mut mcp = crate::mcp::McpClient::start(cmd, "2025-06-18");
    for line in [BAD_LINE, GOOD_LINE] {
        for (host, event) in edits(&scene, line) {
            // Gemini CLI has no `mcp_tool` hooks.
            if host.starts_with("gemini") {
                continue;
            }
            let text = mcp.hook(&event);
            assert_eq!(text, scene.sidecar.hook(&event).stdout, "{host}");
            assert_eq!(
                deny_reason(&text).is_some(),
                line == BAD_LINE,
                "{host}: {text}"
            );
        }
    }
}

/// The sample guidebook's `no-plaintext-secrets` is a `block` guideline: a Claude Code `Write`
/// of a Spring profile with a password in plain text is denied; the one that reads it from the
/// environment goes through.
#[test]
fn the_sample_guidebook_blocks_a_plaintext_secret() {
    let sidecar = Sidecar::start_default();
    let dir = tempfile::tempdir().unwrap();
    let yml = dir.path().join("src/main/resources/application.yml");
    let write = |content: &str| {
        json!({"session_id": "s", "cwd": dir.path().display().to_string(),
            "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": yml.display().to_string(), "content": content}})
    };
    let run = sidecar.hook(&write(
        "spring:\n  datasource:\n    password: hunter2hunter2\n",
    ));
    let reason = deny_reason(&run.stdout).unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        reason.contains(
            "`src/main/resources/application.yml` line 3 breaks [no-plaintext-secrets]: This change"
        ) && reason.ends_with("`guidebook:allow no-plaintext-secrets` with a reason on or above the line."),
        "{reason}"
    );
    let run = sidecar.hook(&write(
        "spring:\n  datasource:\n    password: ${DB_PASSWORD}\n",
    ));
    assert_eq!(run.stdout, "", "{}", run.stderr);
}
