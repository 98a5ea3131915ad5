//! `guidebook doctor` against a real sidecar with hooks installed (all ok), against none (a
//! warning, or a failure with autostart off), and with a broken guideline and flags file.

use std::process::Output;

use crate::harness::*;

fn doctor(sidecar: &Sidecar, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = sidecar.guidebook(&["doctor"]);
    cmd.envs(env.iter().copied());
    let out: Output = run_bounded(cmd, b"", "guidebook doctor");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The report's line for `check`.
fn line<'a>(report: &'a str, check: &str) -> &'a str {
    report
        .lines()
        .find(|l| l[6..].starts_with(&format!("{check}: ")))
        .unwrap_or_else(|| panic!("no {check} line in\n{report}"))
}

#[test]
fn doctor_is_all_ok_with_a_running_sidecar_and_hooks_installed() {
    let sidecar = Sidecar::start_default();
    shim_exe(); // the hook binary the versions check runs
    let out = sidecar.cli(&["hooks", "install", "--codex", "--claude", "--gemini"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("review them in /hooks"),
        "the install says Codex will not run untrusted hooks"
    );
    // Codex skips hooks without trust records: the doctor says so, and how to fix it.
    let (code, report) = doctor(&sidecar, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        line(&report, "codex hooks").starts_with("FAIL  codex hooks: 4 of our 4 hooks in "),
        "{report}"
    );
    // The fix leads with the command that clears the one FAIL a new user meets.
    assert!(
        line(&report, "codex hooks")
            .contains("; fix: run `guidebook hooks install --codex --trust` (trusts exactly our hooks), or review them in Codex's /hooks"),
        "{report}"
    );
    let out = sidecar.cli(&["hooks", "install", "--codex", "--trust"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (code, report) = doctor(&sidecar, &[]);
    assert_eq!(code, Some(0), "{report}");
    let checks = [
        "versions",
        "sidecar",
        "codex hooks",
        "claude hooks",
        "gemini hooks",
        "hook budget",
        "guidebook",
        "database",
        "team metrics",
        "flags",
        "metrics",
    ];
    assert_eq!(report.lines().count(), checks.len(), "{report}");
    for check in checks {
        assert!(line(&report, check).starts_with("ok    "), "{report}");
    }
    let version = env!("CARGO_PKG_VERSION");
    assert!(line(&report, "sidecar").contains(&format!("{version} answering on")));
    assert!(line(&report, "versions")
        .contains(&format!("guidebook {version}, guidebook-hook {version}")));
    assert!(line(&report, "codex hooks").contains("PostToolUse, PostCompact, SessionStart"));
    assert!(line(&report, "gemini hooks").contains("BeforeTool, AfterTool, SessionStart"));
}

#[test]
fn doctor_without_a_sidecar_warns_or_fails_when_hooks_cannot_start_one() {
    let mut sidecar = Sidecar::start_default();
    sidecar.stop();

    let (code, report) = doctor(&sidecar, &[]);
    assert_eq!(code, Some(0), "warnings alone pass:\n{report}");
    assert!(
        line(&report, "sidecar").starts_with("warn  sidecar: not running"),
        "{report}"
    );
    assert!(
        line(&report, "sidecar").ends_with("; fix: guidebook serve"),
        "{report}"
    );
    assert_eq!(
        line(&report, "codex hooks"),
        format!(
            "warn  codex hooks: none in {}/.codex/hooks.json; fix: guidebook hooks install --codex",
            sidecar.user_home.display()
        )
    );

    let (code, report) = doctor(&sidecar, &[("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        line(&report, "sidecar").starts_with("FAIL  sidecar: not running"),
        "{report}"
    );
    assert!(!sidecar.socket.exists(), "the doctor starts nothing");
}

#[test]
fn doctor_fails_on_a_broken_guideline_a_broken_flags_file_and_a_missing_hook_binary() {
    let (_dir, root) = test_guidebook_dir();
    let bad = write_guideline(
        &root,
        "broken",
        "id: broken-one\nmatch:\n  any:\n    - regex:\n        pattern: '(unclosed'\ncontent: x\n",
    );
    let sidecar = Sidecar::start(&root);
    std::fs::write(
        sidecar.home.join("feature_flags.json"),
        // Valid JSON with the right top-level shape, but a percentage out of range: only the
        // sidecar's own validator catches it.
        "{\"_meta\": {}, \"flags\": {\"a\": {\"enabled\": true, \"rollout_percent\": 150}}}",
    )
    .unwrap();
    let codex = sidecar.user_home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("hooks.json"),
        r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "/gone/guidebook-hook"}]}]}}"#,
    )
    .unwrap();

    let (code, report) = doctor(&sidecar, &[]);
    assert_eq!(code, Some(1), "{report}");
    let guidebook = line(&report, "guidebook");
    assert!(
        guidebook.starts_with("FAIL  guidebook: 1 error(s), the first: "),
        "{report}"
    );
    assert!(
        guidebook.contains(&format!("{}:5:", bad.display())),
        "{report}"
    );
    assert!(
        guidebook.ends_with("; fix: guidebook check (lists them all)"),
        "{report}"
    );
    let flags = line(&report, "flags");
    assert!(
        flags.starts_with(&format!(
            "FAIL  flags: {}:1:70: flags.a.rollout_percent: rollout_percent 150 is out of range",
            sidecar.home.join("feature_flags.json").display()
        )),
        "{report}"
    );
    assert!(
        line(&report, "codex hooks").contains("runs /gone/guidebook-hook, which does not exist"),
        "{report}"
    );
    assert!(line(&report, "database").starts_with("ok    "), "{report}");
}

/// A shim budget at or past the hooks' 5 s timeout is a warning (a hung sidecar would make the
/// agents wait it out, and Gemini CLI would warn the user); the default is ok.
#[test]
fn a_hook_budget_past_the_hook_timeout_is_a_warning() {
    let sidecar = Sidecar::start_default();
    let (_, report) = doctor(&sidecar, &[]);
    assert_eq!(
        line(&report, "hook budget"),
        "ok    hook budget: 2000 ms, below the 5000 ms each hook is given",
        "{report}"
    );
    let (_, report) = doctor(&sidecar, &[("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "15000")]);
    let warned = line(&report, "hook budget");
    assert!(
        warned.starts_with(
            "warn  hook budget: ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS=15000 is not below the 5000 ms"
        ),
        "{report}"
    );
    assert!(warned.ends_with("; fix: set it below 5000, or unset it (default 2000)"));
    let (_, report) = doctor(&sidecar, &[("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", "soon")]);
    assert!(
        line(&report, "hook budget").contains("\"soon\" is not a whole number"),
        "{report}"
    );
}
