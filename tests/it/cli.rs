//! The `guidebook` command line against a real sidecar: `explain` (table and `--json`),
//! `status` (running and not), and `check` on the sample guidebook; and the frictions of a new
//! user's first hour: help texts, closed pipes, unknown flags, `--week 0`, the flags error.

use std::process::Output;

use serde_json::Value;

use crate::harness::*;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn explain_prints_a_table_of_file_repository_language_guideline_and_line() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("backend-order");
    git_repo(&repo, Some("https://github.com/acme/backend-order.git"));
    let file = write_file(
        &repo,
        "src/Main.kt",
        "package acme\n\nclass Main(val id: String) {\n    fun f() = println(id)\n}\n",
    );
    let path = file.display().to_string();
    // Shown once in session S, so the table can say so.
    assert_eq!(
        sidecar.search_ids("S", &[&file]),
        ["backend-logging", "kotlin-data-classes"]
    );

    let out = sidecar.cli(&["explain", "--session", "S", &path]);
    let table = stdout(&out);
    assert!(out.status.success(), "{table}{}", stderr(&out));
    let header = table.lines().next().unwrap();
    for column in ["FILE", "REPOSITORY", "LANGUAGE", "GUIDELINE", "LINE"] {
        assert!(header.contains(column), "{table}");
    }
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{table}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let logging = row("backend-logging");
    assert_eq!(
        logging[..4],
        [
            path.as_str(),
            "acme/backend-order",
            "kotlin",
            "backend-logging"
        ],
        "{table}"
    );
    assert!(
        logging.contains(&"4".to_string()),
        "println is on line 4:\n{table}"
    );
    let classes = row("kotlin-data-classes");
    assert!(
        classes.contains(&"3".to_string()),
        "the class is on line 3:\n{table}"
    );
    assert!(table.contains("already presented"), "{table}");

    let out = sidecar.cli(&["explain", "--json", &path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("--json prints JSON");
    assert_eq!(json["files"][0]["path"], path);
    assert_eq!(json["files"][0]["repository"], "acme/backend-order");
    assert_eq!(json["files"][0]["matches"][0]["line"], 4);

    // A relative FILE is taken relative to the working directory.
    let mut cmd = sidecar.guidebook(&["explain", "--json", "src/Main.kt"]);
    cmd.current_dir(&repo);
    let out = run_bounded(cmd, b"", "guidebook explain");
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["files"][0]["path"], path);
}

#[test]
fn status_prints_root_and_guideline_count_and_fails_without_a_sidecar() {
    let (_dir, root) = test_guidebook_dir();
    let mut sidecar = Sidecar::start(&root);
    let out = sidecar.cli(&["status"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains(&root.display().to_string()), "{text}");
    assert!(text.contains("5 guidelines"), "{text}");
    let out = sidecar.cli(&["status", "--json"]);
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["guidebook"]["guidelines"], 5);

    assert!(sidecar.stop().success());
    let out = sidecar.cli(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not running"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn check_accepts_the_sample_guidebook_and_names_file_and_line_of_errors() {
    let sample = manifest_dir().join("guidebook");
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let out = sidecar.cli(&["check", sample.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).starts_with("ok: "), "{}", stdout(&out));

    // Without DIR, check reads the configured root.
    let bad = write_guideline(&root, "bad", "id: bad\nscope:\n  languages: [kotln]\nmatch:\n  any:\n    - regex: {pattern: x}\ncontent: c\n");
    let out = sidecar.cli(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(&format!("{}:3:14: ", bad.display())),
        "{}",
        stdout(&out)
    );
}

// --- The first hour of a new user (issue 37) ------------------------------------------------

/// `guidebook` without a sidecar, in a temp home of its own (no autostart).
fn offline(home: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", home)
        .env("HOME", home)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env_remove("RUST_LOG")
        .args(args);
    run_bounded(cmd, b"", "guidebook")
}

/// Every help text that names the agents names all three: Gemini CLI was missing.
#[test]
fn help_texts_name_every_agent() {
    let runs: [(std::path::PathBuf, &[&str]); 3] = [
        (guidebook_exe().to_path_buf(), &["--help"]),
        (guidebook_exe().to_path_buf(), &["hooks", "--help"]),
        (shim_exe(), &["--help"]),
    ];
    for (exe, args) in runs {
        let out = std::process::Command::new(&exe)
            .args(args)
            .output()
            .unwrap();
        let text = stdout(&out);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        for agent in ["Codex", "Claude Code", "Gemini CLI"] {
            assert!(
                text.contains(agent),
                "{exe:?} {args:?} lacks {agent}:\n{text}"
            );
        }
    }
}

/// Output cut short by its reader (`guidebook prompt … | head`) ends quietly with status 0,
/// for the CLI and the shim alike: the reading end of the pipe is closed before they write.
#[test]
fn a_closed_stdout_ends_quietly_with_status_0() {
    let home = tempfile::tempdir().unwrap();
    let sample = manifest_dir().join("guidebook");
    let runs: [(std::path::PathBuf, Vec<&str>); 5] = [
        (
            guidebook_exe().to_path_buf(),
            vec!["prompt", "--task", "Fix the query."],
        ),
        (
            guidebook_exe().to_path_buf(),
            vec!["check", sample.to_str().unwrap()],
        ),
        (
            guidebook_exe().to_path_buf(),
            vec!["test", "--json", sample.to_str().unwrap()],
        ),
        (guidebook_exe().to_path_buf(), vec!["--help"]),
        (shim_exe(), vec!["--help"]),
    ];
    for (exe, args) in runs {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut cmd = if exe == guidebook_exe() {
            isolated_guidebook()
        } else {
            std::process::Command::new(&exe)
        };
        let out = cmd
            .args(&args)
            .env("ADAPTIVE_GUIDEBOOK_HOME", home.path())
            .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

/// A misspelt flag is an error naming the known ones, with or without a sidecar; a flag the
/// product reads is known even before the file names it; `set` of a new name creates it and
/// says it is new.
#[test]
fn an_unknown_flag_name_is_an_error_naming_the_known_ones() {
    let home = tempfile::tempdir().unwrap();
    let out = offline(home.path(), &["flags", "get", "hooks_enabled"]);
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(0), "false\n".into()),
        "{}",
        stderr(&out)
    );
    assert!(offline(home.path(), &["flags", "init"]).status.success());
    let out = offline(home.path(), &["flags", "get", "hooks_enabeld"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(err.contains("unknown flag `hooks_enabeld`"), "{err}");
    assert!(
        err.contains("hooks_enabled") && err.contains("worktree_readonly"),
        "{err}"
    );
    let out = offline(
        home.path(),
        &["flags", "get", "ab_test_haiku", "--key", "s1"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let sidecar = Sidecar::start_default();
    assert!(sidecar.cli(&["flags", "init"]).status.success());
    let out = sidecar.cli(&["flags", "get", "progresive_disclosure"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("known flags: ab_test_haiku, hooks_enabled"),
        "{}",
        stderr(&out)
    );
    let out = sidecar.cli(&["flags", "set", "team_flag", "--enabled", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("team_flag is a new flag"),
        "{}",
        stdout(&out)
    );
    let out = sidecar.cli(&["flags", "set", "team_flag", "--rollout", "50"]);
    assert!(!stdout(&out).contains("new flag"), "{}", stdout(&out));
    let out = sidecar.cli(&["flags", "get", "team_flag", "--key", "k"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `--week 0` names no week: an error, not week 1.
#[test]
fn ab_report_refuses_week_0() {
    let home = tempfile::tempdir().unwrap();
    let out = offline(home.path(), &["ab", "report", "--week", "0"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stderr(&out).contains("--week"), "{}", stderr(&out));
    assert!(!home.path().join("metrics").exists(), "nothing was written");
}

/// `status` counts the flags file's error among the errors, in text and JSON.
#[test]
fn status_reports_the_flags_error() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let flags = sidecar.home.join("feature_flags.json");
    std::fs::write(&flags, "{ not json").unwrap();
    let json = sidecar.wait_for_status("the flags error", |s| !s["flags"]["error"].is_null());
    let error = json["flags"]["error"].as_str().unwrap().to_string();
    let out = sidecar.cli(&["status", "--json"]);
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(answer["flags"]["error"].as_str().is_some(), "{answer}");
    let out = sidecar.cli(&["status"]);
    let text = stdout(&out);
    assert!(!text.contains("errors      none"), "{text}");
    assert!(text.contains("errors      1\n"), "{text}");
    assert!(text.contains(&format!("  {error}")), "{text}");
    assert!(error.starts_with(&flags.display().to_string()), "{error}");
}
