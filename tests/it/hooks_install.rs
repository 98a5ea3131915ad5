//! `guidebook hooks install|uninstall` on real files: our entries merged into Claude Code's
//! `settings.json` and Codex's `hooks.json` once however often it runs, the user's own hooks
//! and settings kept byte for byte, a backup, `--print`, and refusal of a broken file. The
//! user guide's snippets (docs/guide/agents.md) are what `--print` gives for an empty file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::*;

/// `guidebook ARGS` with nothing from the test's environment but `HOME`.
fn guidebook(home: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(guidebook_exe());
    cmd.env_clear().env("HOME", home).args(args);
    run_bounded(cmd, b"", "guidebook hooks")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A user's Claude Code settings: their own hooks on several events with their own matchers,
/// keys in an unusual order, compact and expanded objects, 4-space indentation, and one group
/// where they put guidebook-hook next to their own formatter.
const USER_SETTINGS: &str = r#"{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": []},
    "hooks": {
        "PreToolUse": [
            {"hooks": [{"timeout": 30, "command": "~/bin/guard.sh", "type": "command"}], "matcher": "Bash"}
        ],
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [
                    {"type": "command", "command": "prettier --write \"$FILE\"", "timeout": 10},
                    {"type": "command", "command": "/old/place/guidebook-hook --socket /tmp/x.sock"}
                ]
            },
            {"matcher": "Bash", "hooks": [ { "command": "echo  done" , "type": "command" } ]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}]
    },
    "model": "opus"
}
"#;

/// The parts of [`USER_SETTINGS`] that are the user's alone, as written.
const USERS_OWN: [&str; 5] = [
    r#""permissions": {"allow": ["Bash(npm run lint)"], "deny": []}"#,
    r#"{"hooks": [{"timeout": 30, "command": "~/bin/guard.sh", "type": "command"}], "matcher": "Bash"}"#,
    r#"{"matcher": "Bash", "hooks": [ { "command": "echo  done" , "type": "command" } ]}"#,
    r#"[{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}]"#,
    r#"{"type": "command", "command": "prettier --write \"$FILE\"", "timeout": 10}"#,
];

/// Every handler running guidebook-hook in `settings`, per event.
fn our_handlers(settings: &Value, event: &str) -> Vec<Value> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains("guidebook-hook"))
        })
        .collect()
}

#[test]
fn install_twice_leaves_one_entry_per_event_and_the_users_hooks_byte_for_byte() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, USER_SETTINGS).unwrap();

    let first = guidebook(home.path(), &["hooks", "install", "--claude"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).contains("hooks installed in"),
        "{}",
        text(&first.stdout)
    );
    let installed = std::fs::read_to_string(&settings).unwrap();
    let backup = std::fs::read_to_string(home.path().join(".claude/settings.json.bak")).unwrap();
    assert_eq!(
        backup, USER_SETTINGS,
        "the backup is the file before the change"
    );

    let second = guidebook(home.path(), &["hooks", "install", "--claude"]);
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert!(
        text(&second.stdout).contains("up to date"),
        "{}",
        text(&second.stdout)
    );
    let again = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(again, installed, "a second install changes nothing");

    let value: Value = serde_json::from_str(&again).unwrap();
    let hook = shim_exe().display().to_string();
    for (event, matcher) in [
        ("PreToolUse", "Edit|Write|MultiEdit"),
        ("PostToolUse", "Edit|Write|MultiEdit|Bash"),
        ("SessionStart", "compact|clear"),
    ] {
        let ours = our_handlers(&value, event);
        assert_eq!(ours.len(), 1, "{event}: {again}");
        assert_eq!(
            ours[0],
            serde_json::json!({"type": "command", "command": hook, "timeout": 5})
        );
        let group = value["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["hooks"][0]["command"] == hook.as_str())
            .unwrap();
        assert_eq!(group["matcher"], matcher);
    }
    for own in USERS_OWN {
        assert!(again.contains(own), "lost or re-encoded: {own}\n{again}");
    }
    // The shared group keeps the user's formatter under the user's matcher.
    let post = value["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post[0]["matcher"], "Write|Edit");
    assert_eq!(post[0]["hooks"].as_array().unwrap().len(), 1);
    // Top-level keys keep their order.
    let order: Vec<usize> = ["$schema", "permissions", "hooks", "model"]
        .iter()
        .map(|k| again.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{again}");

    // Uninstall takes out ours, the one in the shared group included, and nothing else.
    let out = guidebook(home.path(), &["hooks", "uninstall", "--claude"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let removed: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let mut expected: Value = serde_json::from_str(USER_SETTINGS).unwrap();
    expected["hooks"]["PostToolUse"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .pop();
    assert_eq!(removed, expected);
}

#[test]
fn codex_project_install_print_and_a_broken_file() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let hooks_json = project.join(".codex/hooks.json");
    let project_arg = project.display().to_string();

    // A missing file is created, directories included.
    let out = guidebook(
        home.path(),
        &["hooks", "install", "--codex", "--project", &project_arg],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(&hooks_json).unwrap()).unwrap();
    for event in ["PostToolUse", "PostCompact", "SessionStart"] {
        assert_eq!(our_handlers(&value, event).len(), 1, "{event}");
    }
    assert!(
        !home.path().join(".codex").exists(),
        "the user's own is untouched"
    );

    // --print shows the result and writes nothing.
    let before = std::fs::read_to_string(&hooks_json).unwrap();
    let printed = guidebook(
        home.path(),
        &[
            "hooks",
            "uninstall",
            "--codex",
            "--project",
            &project_arg,
            "--print",
        ],
    );
    assert!(printed.status.success());
    assert_eq!(text(&printed.stdout), "{\n  \"hooks\": {}\n}\n");
    assert_eq!(std::fs::read_to_string(&hooks_json).unwrap(), before);

    // Not JSON: refused with file, line and column; nothing written, no backup.
    let broken = "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n";
    std::fs::write(&hooks_json, broken).unwrap();
    let out = guidebook(
        home.path(),
        &["hooks", "install", "--codex", "--project", &project_arg],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}:3:14: not valid JSON", hooks_json.display())),
        "{err}"
    );
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read_to_string(&hooks_json).unwrap(), broken);
    assert!(!PathBuf::from(format!("{}.bak", hooks_json.display())).exists());
}

/// The JSON block that follows `heading` in the user guide's page on wiring the agents.
fn readme_snippet(heading: &str) -> String {
    let readme = std::fs::read_to_string(manifest_dir().join("docs/guide/agents.md")).unwrap();
    let section = &readme[readme.find(heading).unwrap_or_else(|| panic!("{heading}"))..];
    let start = section.find("```json\n").unwrap() + "```json\n".len();
    let end = start + section[start..].find("```").unwrap();
    section[start..end].to_string()
}

#[test]
fn the_readme_shows_what_print_gives_for_an_empty_file() {
    let home = tempfile::tempdir().unwrap();
    for (flag, heading) in [
        ("--codex", "## Wire it into Codex"),
        ("--claude", "## Wire it into Claude Code"),
        ("--gemini", "## Wire it into Gemini CLI"),
    ] {
        let out = guidebook(
            home.path(),
            &[
                "hooks",
                "install",
                flag,
                "--print",
                "--hook-command",
                "guidebook-hook",
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), readme_snippet(heading), "{flag}");
    }
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        0,
        "--print writes nothing"
    );
}

#[test]
fn gemini_install_is_idempotent_keeps_the_users_settings_and_refuses_mcp() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let users = "{\n  \"theme\": \"GitHub\",\n  \"hooks\": {\n    \"AfterTool\": [\n      {\"matcher\": \"read_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"my-audit\"}]}\n    ]\n  }\n}\n";
    std::fs::write(&settings, users).unwrap();
    let install = || {
        guidebook(
            home.path(),
            &[
                "hooks",
                "install",
                "--gemini",
                "--hook-command",
                "/opt/bin/guidebook-hook",
            ],
        )
    };
    let out = install();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let once = std::fs::read_to_string(&settings).unwrap();
    let out = install();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        once,
        "a second install changes nothing"
    );
    let value: serde_json::Value = serde_json::from_str(&once).unwrap();
    assert_eq!(value["theme"], "GitHub");
    let after = value["hooks"]["AfterTool"].as_array().unwrap();
    assert_eq!(
        after[0]["hooks"][0]["command"], "my-audit",
        "the user's group first, as written"
    );
    assert_eq!(after[1]["hooks"][0]["command"], "/opt/bin/guidebook-hook");
    assert_eq!(
        after[1]["hooks"][0]["timeout"], 5000,
        "Gemini CLI counts milliseconds"
    );
    assert!(once.contains("{\"matcher\": \"read_file\", \"hooks\": [{\"type\": \"command\", \"command\": \"my-audit\"}]}"));

    let out = guidebook(home.path(), &["hooks", "install", "--gemini", "--mcp"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("command hooks only"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), once);

    let out = guidebook(home.path(), &["hooks", "uninstall", "--gemini"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        value["hooks"],
        serde_json::json!({"AfterTool": [{"matcher": "read_file", "hooks": [{"type": "command", "command": "my-audit"}]}]})
    );
}

#[test]
fn codex_trust_records_follow_our_hooks_in_and_out_and_leave_the_users_own() {
    let home = tempfile::tempdir().unwrap();
    let codex = home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let config = codex.join("config.toml");
    let users = "model = \"gpt-5.5\" # theirs\n\n[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:theirs\"\n";
    std::fs::write(&config, users).unwrap();
    let install = |extra: &[&str]| {
        let mut args = vec![
            "hooks",
            "install",
            "--codex",
            "--hook-command",
            "/opt/bin/guidebook-hook",
        ];
        args.extend_from_slice(extra);
        guidebook(home.path(), &args)
    };
    let out = install(&["--trust"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trusted = std::fs::read_to_string(&config).unwrap();
    assert!(
        trusted.starts_with("model = \"gpt-5.5\" # theirs\n"),
        "{trusted}"
    );
    assert!(trusted.contains("sha256:theirs"));
    let hooks_json = codex.join("hooks.json");
    for event in [
        "pre_tool_use",
        "post_tool_use",
        "post_compact",
        "session_start",
    ] {
        assert!(
            trusted.contains(&format!(
                "[hooks.state.\"{}:{event}:0:0\"]",
                hooks_json.display()
            )),
            "{event}: {trusted}"
        );
    }
    assert_eq!(trusted.matches("trusted_hash = \"sha256:").count(), 5);
    // Again: nothing changes.
    assert!(install(&["--trust"]).status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), trusted);
    // With the `mcp_tool` wiring, the same keys get the hashes of the new handlers.
    let out = guidebook(
        home.path(),
        &["hooks", "install", "--codex", "--mcp", "--trust"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mcp_trusted = std::fs::read_to_string(&config).unwrap();
    assert_eq!(mcp_trusted.matches("trusted_hash = \"sha256:").count(), 5);
    assert_ne!(mcp_trusted, trusted, "new hashes for new handlers");
    assert!(
        mcp_trusted.contains(&format!(
            "[hooks.state.\"{}:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:02ba38f7",
            hooks_json.display()
        )),
        "{mcp_trusted}"
    );
    // Uninstall takes our records away, and only ours.
    let out = guidebook(home.path(), &["hooks", "uninstall", "--codex"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&config).unwrap();
    assert!(
        !after.contains(&hooks_json.display().to_string()),
        "{after}"
    );
    assert!(after.contains("sha256:theirs"), "{after}");
}
