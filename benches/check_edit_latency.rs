//! The check before an edit (issue 40), end to end: spawning `guidebook-hook` with a
//! `PreToolUse` of a 20 KB Kotlin file's edit until it exits (it builds the file as the edit
//! would leave it and asks the warm sidecar's `checkEdit`, with the breaker's gate, in one
//! round trip), interleaved with the floor (spawning `/bin/true`). Workload: 1,000 guidelines
//! of 1–3 regexes (the hook-latency corpus), 50 of them `severity: block`, none of which the
//! file breaks; one of them (`no-plaintext-password`, `in: changes`) is what the denied edit
//! writes. Series: a Codex `apply_patch` update let through, a Claude Code `Edit` let through,
//! and the Codex update denied, beside the breaker's gate alone (an `Edit` of a file that is not
//! there: what a `PreToolUse` cost before the check). Prints medians and p99s; writes them to
//! target/bench-results/check_edit_latency.json.
//!
//! Run with `cargo build --release --workspace --bins && cargo bench --bench
//! check_edit_latency`. `CHECK_BENCH_RUNS` (default 300) sets the runs per series.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How many of the 1,000 guidelines are `severity: block`.
const BLOCKING: usize = 50;

const NO_PASSWORD: &str = "id: no-plaintext-password\nscope:\n  languages: [kotlin]\nmatch:\n  in: changes\n  regex: {pattern: 'password\\s*=\\s*\"[^\"]+\"'}\nseverity: block\ncontent: Never commit a password; read it from the secret store.\n";

fn main() {
    let runs: usize = common::env_or("CHECK_BENCH_RUNS", 300);
    let guidebook = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    let shim = guidebook.parent().unwrap().join("guidebook-hook");
    assert!(
        shim.exists(),
        "build the release shim first: cargo build --release --workspace --bins"
    );

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("guidebook");
    let repo = dir.path().join("repo");
    common::write_guidebook(&root, 1000, 7);
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let file = common::write_kotlin_files(&repo.join("src"), 1, 20_000, 1000, 11).remove(0);
    let text = std::fs::read_to_string(&file).unwrap();
    // Block guidelines the file does not break (the corpus's hits name a guideline's number).
    let blocking: Vec<usize> = (1..1000)
        .filter(|i| !text.contains(&format!("Client{i}")) && !text.contains(&format!("-{i}")))
        .step_by(7)
        .take(BLOCKING - 1)
        .collect();
    assert_eq!(blocking.len(), BLOCKING - 1);
    for i in &blocking {
        let path = root.join(format!("guidelines/g{i:05}/guideline.yaml"));
        let yaml = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{yaml}severity: block\n")).unwrap();
    }
    std::fs::write(root.join("guidelines/g00000/guideline.yaml"), NO_PASSWORD).unwrap();
    let socket = home.join("sidecar.sock");
    let daemon = common::BenchSidecar::start(&guidebook, &home, &root);

    // An edit in the middle of the file: one line added after a class's header.
    let lines: Vec<&str> = text.lines().collect();
    let at = (lines.len() / 2..lines.len())
        .find(|&i| lines[i].starts_with("class "))
        .unwrap();
    let codex = |line: &str| {
        let patch = format!(
            "*** Begin Patch\n*** Update File: {}\n@@\n {}\n {}\n+{line}\n {}\n*** End Patch\n",
            file.display(),
            lines[at - 1],
            lines[at],
            lines[at + 1]
        );
        serde_json::json!({"session_id": "bench", "turn_id": "t", "cwd": repo.display().to_string(),
            "hook_event_name": "PreToolUse", "model": "gpt-5.5", "permission_mode": "default",
            "tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "call_1"})
        .to_string()
    };
    let claude = serde_json::json!({"session_id": "bench", "cwd": repo.display().to_string(),
        "hook_event_name": "PreToolUse", "permission_mode": "acceptEdits", "tool_name": "Edit",
        "tool_input": {"file_path": file.display().to_string(), "old_string": lines[at],
            "new_string": format!("{}\n    val note = 1", lines[at]), "replace_all": false}})
    .to_string();
    // The same Edit of a file that is not there: nothing to check, only the breaker's gate (what
    // a PreToolUse cost before the check).
    let gate_only = claude.replace(".kt\"", "-missing.kt\"");
    let allowed = codex("    val note = 1");
    let denied = codex("    val password = \"hunter2\"");

    let spawn_timed = common::spawn_timed;
    let hook = |event: &str| {
        spawn_timed(
            Command::new(&shim).env("ADAPTIVE_GUIDEBOOK_SOCKET", &socket),
            event.as_bytes(),
        )
    };
    let floor = || spawn_timed(&mut Command::new("/bin/true"), b"");

    // Every series does what it claims.
    assert_eq!(hook(&allowed).1, b"", "the allowed patch was denied");
    assert_eq!(hook(&claude).1, b"", "the allowed Edit was denied");
    assert_ne!(gate_only, claude);
    assert_eq!(hook(&gate_only).1, b"");
    let out = String::from_utf8(hook(&denied).1).unwrap();
    assert!(
        out.contains("\"permissionDecision\":\"deny\"") && out.contains("no-plaintext-password"),
        "the violating patch was not denied: {out}"
    );
    for _ in 0..20 {
        hook(&allowed);
        floor();
    }

    let (mut t_floor, mut t_allow, mut t_claude, mut t_deny) = (vec![], vec![], vec![], vec![]);
    let mut t_gate = vec![];
    for _ in 0..runs {
        t_floor.push(ms(floor().0));
        t_gate.push(ms(hook(&gate_only).0));
        t_allow.push(ms(hook(&allowed).0));
        t_claude.push(ms(hook(&claude).0));
        t_deny.push(ms(hook(&denied).0));
    }
    drop(daemon);

    let row = |name: &str, s: &mut Vec<f64>| {
        let med = common::percentile(s, 0.5);
        let p99 = common::percentile(s, 0.99);
        println!("{name:<48} {:>5}  {med:>9.3}  {p99:>9.3}", s.len());
        (med, p99)
    };
    println!(
        "workload: 1000 guidelines ({BLOCKING} block), one Kotlin file of {} bytes, PreToolUse checks",
        text.len()
    );
    println!(
        "{:<48} {:>5}  {:>9}  {:>9}",
        "series (ms)", "n", "median", "p99"
    );
    let floor_m = row("floor: spawn /bin/true", &mut t_floor);
    let gate_m = row(
        "PreToolUse, breaker gate only (no file to check)",
        &mut t_gate,
    );
    let allow_m = row("PreToolUse, Codex apply_patch, let through", &mut t_allow);
    let claude_m = row("PreToolUse, Claude Code Edit, let through", &mut t_claude);
    let deny_m = row("PreToolUse, Codex apply_patch, denied", &mut t_deny);
    println!(
        "minus the floor (medians): gate only {:.3} ms, apply_patch {:.3} ms, Edit {:.3} ms, denied {:.3} ms (bound: 1.5 ms)",
        gate_m.0 - floor_m.0,
        allow_m.0 - floor_m.0,
        claude_m.0 - floor_m.0,
        deny_m.0 - floor_m.0
    );
    let series = |(med, p99): (f64, f64)| serde_json::json!({"medianMs": med, "p99Ms": p99});
    let json = serde_json::json!({
        "workload": {"guidelines": 1000, "block": BLOCKING, "fileBytes": text.len()},
        "floor": series(floor_m),
        "gateOnly": series(gate_m),
        "codexAllowed": series(allow_m),
        "claudeEditAllowed": series(claude_m),
        "codexDenied": series(deny_m),
    });
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(
        out.join("check_edit_latency.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
