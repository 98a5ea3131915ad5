//! Per-guideline adherence end to end: scripted sessions through the real shim and daemon
//! (followed, repeated, no evidence, corrected, a hold-out session shown nothing), `guidebook
//! report` (JSON, and its page in a real headless Chromium), and the counters on `/metrics`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;
use crate::metrics::{free_port, http_get};

/// A whole-file guideline: `Thread.sleep(` anywhere in a Kotlin file.
const NO_SLEEP: &str = "id: no-thread-sleep\nscope: {languages: [kotlin]}\n\
    match:\n  regex: {pattern: 'Thread\\.sleep\\('}\n\
    content: Use delay() in coroutines, not Thread.sleep().\n";

const PLAIN: &str = "package app\nfun a() = 1\nfun b() = 2\nfun c() = 3\n";

struct Scene {
    _dir: tempfile::TempDir,
    sidecar: Sidecar,
    repo: PathBuf,
    port: u16,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(&root, "no-thread-sleep", NO_SLEEP);
    write_guideline(&root, "no-plaintext-password", NO_PASSWORD);
    let port = free_port();
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN".into(), port.to_string())],
        ..SidecarOptions::default()
    });
    let repo = dir.path().join("app");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    for name in ["A", "B", "C", "H"] {
        write_file(&repo, &format!("src/{name}.kt"), PLAIN);
    }
    write_file(&repo, "src/Db.kt", DB_KT);
    git_commit_all(&repo, "init");
    Scene {
        _dir: dir,
        sidecar,
        repo,
        port,
    }
}

impl Scene {
    /// The agent of `session` replaces line `line` of `src/NAME.kt` with `new_line`: the file is
    /// written, then the shim gets Claude Code's `PostToolUse` for it. The shim's stdout.
    fn edit(&self, session: &str, name: &str, line: usize, new_line: &str) -> String {
        let path = self.repo.join(format!("src/{name}.kt"));
        let before = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = before.lines().collect();
        lines[line - 1] = new_line;
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let event = claude_edit_event(session, &path, &before, line, new_line);
        self.sidecar.hook(&event).stdout
    }

    /// Claude Code's `PreToolUse` of an `Edit` adding `line` after `val user = "app"` in
    /// `src/Db.kt`: the shim's stdout (a denial, or nothing).
    fn try_db_edit(&self, session: &str, line: &str) -> String {
        let db = self.repo.join("src/Db.kt");
        let user = "val user = \"app\"\n";
        let event = json!({"session_id": session, "cwd": self.repo.display().to_string(),
            "hook_event_name": "PreToolUse", "permission_mode": "acceptEdits",
            "tool_name": "Edit", "tool_input": {"file_path": db.display().to_string(),
                "old_string": user, "new_string": format!("{user}{line}\n"),
                "replace_all": false}});
        self.sidecar.hook(&event).stdout
    }

    /// `guidebook report --json ARGS`, polled until `done` holds (the recorder writes a moment
    /// after the hook).
    fn report(&self, args: &[&str], done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        let mut all = vec!["report", "--json"];
        all.extend_from_slice(args);
        loop {
            let out = self.sidecar.cli(&all);
            assert!(out.status.success(), "{out:?}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if done(&v) {
                return v;
            }
            assert!(started.elapsed() < WATCHDOG, "never got there: {v:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn guideline<'v>(report: &'v Value, id: &str) -> &'v Value {
    report["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {report:#}"))
}

/// Each outcome from scripted sessions: the shim's hooks as Claude Code sends them, the real
/// daemon's searches and checks, the records read back by `guidebook report --json`, and the
/// per-guideline counters on the real `/metrics` endpoint.
#[test]
fn scripted_sessions_are_followed_repeated_without_evidence_corrected_and_held_out() {
    let s = scene();
    let sleep = "fun a() = Thread.sleep(10)";
    // Followed: shown, then the next edit of the file removes the match.
    assert!(s
        .edit("s-followed", "A", 2, sleep)
        .contains("no-thread-sleep"));
    assert_eq!(s.edit("s-followed", "A", 2, "fun a() = delay(10)"), "");
    // Repeated: shown, then a later edit of the file leaves the match in it.
    assert!(s
        .edit("s-repeated", "B", 2, sleep)
        .contains("no-thread-sleep"));
    s.edit("s-repeated", "B", 3, "fun b() = 20");
    // No evidence: shown, and the file is not edited again in the session.
    assert!(s
        .edit("s-silent", "C", 2, sleep)
        .contains("no-thread-sleep"));
    // Corrected: checkEdit refuses the password, the corrected edit goes through.
    let denied = s.try_db_edit("s-corrected", BAD_LINE);
    assert!(denied.contains("no-plaintext-password"), "{denied}");
    assert_eq!(s.try_db_edit("s-corrected", GOOD_LINE), "");
    let db = s.repo.join("src/Db.kt");
    std::fs::write(&db, db_with(GOOD_LINE)).unwrap();
    let event = claude_edit_event("s-corrected", &db, DB_KT, 3, "val user = \"app\"");
    s.sidecar.hook(&event);
    // A hold-out session: evaluated and recorded, shown nothing.
    s.sidecar.result(
        "setFlag",
        json!({"flag": "guideline_holdout", "enabled": true, "rolloutPercent": 100}),
    );
    assert_eq!(
        s.edit("s-held", "H", 2, sleep),
        "",
        "a hold-out session is shown nothing"
    );
    s.edit("s-held", "H", 3, "fun c() = 30");
    s.sidecar.result(
        "setFlag",
        json!({"flag": "guideline_holdout", "enabled": false}),
    );

    // Polled until the last search is in (the recorder writes a moment after each hook).
    let report = s.report(&[], |r| {
        r["sessions"] == 5
            && r["guidelines"].as_array().is_some_and(|gs| {
                gs.iter()
                    .any(|g| g["id"] == "no-thread-sleep" && g["fires"] == 6)
            })
    });
    assert_eq!(report["holdout_sessions"], 1, "{report:#}");
    let g = guideline(&report, "no-thread-sleep");
    assert_eq!(
        (
            &g["presentations"],
            &g["followed"],
            &g["repeated"],
            &g["no_evidence"]
        ),
        (&json!(3), &json!(1), &json!(1), &json!(1)),
        "{g:#}"
    );
    assert_eq!(
        g["held_out"],
        json!({"presentations": 1, "followed": 0, "repeated": 1, "no_evidence": 0})
    );
    // Matched at A's and B's and C's and H's first edits, B's and H's second.
    assert_eq!(g["fires"], 6, "{g:#}");
    assert_eq!(
        g["fires_on_written_lines"], 0,
        "every file matched first at its first search"
    );
    assert_eq!(
        g["holdout"]["table"],
        json!([[1, 2], [1, 0]]),
        "{:#}",
        g["holdout"]
    );
    assert!(
        g["holdout"]["verdict"]
            .as_str()
            .unwrap()
            .starts_with("Too early"),
        "{g:#}"
    );
    let p = guideline(&report, "no-plaintext-password");
    assert_eq!(
        (&p["blocks"], &p["corrected"]),
        (&json!(1), &json!(1)),
        "{p:#}"
    );
    assert_eq!(report["most_ignored"], json!(["no-thread-sleep"]));
    // --since after today: nothing.
    let later = s.report(&["--since", "2999-01-01"], |_| true);
    assert_eq!(later["sessions"], 0);
    assert_eq!(later["guidelines"], json!([]));

    // The live counters: the same outcomes, per guideline, on the real endpoint.
    let (status, _, body) = http_get(s.port, "/metrics").expect("the endpoint answers");
    assert_eq!(status, 200);
    for line in [
        "guidebook_guideline_presentations_total{guideline=\"no-thread-sleep\",group=\"shown\"} 3",
        "guidebook_guideline_presentations_total{guideline=\"no-thread-sleep\",group=\"holdout\"} 1",
        "guidebook_guideline_outcomes_total{guideline=\"no-thread-sleep\",group=\"shown\",outcome=\"followed\"} 1",
        "guidebook_guideline_outcomes_total{guideline=\"no-thread-sleep\",group=\"shown\",outcome=\"repeated\"} 1",
        "guidebook_guideline_outcomes_total{guideline=\"no-thread-sleep\",group=\"holdout\",outcome=\"repeated\"} 1",
        "guidebook_guideline_fires_total{guideline=\"no-thread-sleep\"} 6",
        "guidebook_guideline_corrected_total{guideline=\"no-plaintext-password\"} 1",
    ] {
        assert!(body.lines().any(|l| l == line), "{line} not in:\n{body}");
    }
    assert!(body.ends_with("# EOF\n"));
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join(name))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .find(|p| p.is_file())
        .expect(
            "a real headless Chromium is needed: apt-get install chromium (scripts/test \
             --provision installs it)",
        )
}

/// Headless Chromium on `page`, as root too (no sandbox), with a throwaway profile.
fn headless(page: &Path, profile: &Path, args: &[String]) -> std::process::Output {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()));
    run_bounded(cmd, b"", "chromium")
}

/// The page in a real browser: it loads with no console message, the table and the trend are
/// in the DOM it built, and a screenshot can be taken. A page that fetched anything or ran a
/// broken script would log to the console.
#[test]
fn the_report_page_loads_in_a_real_headless_chromium() {
    let s = scene();
    assert!(s
        .edit("s1", "A", 2, "fun a() = Thread.sleep(10)")
        .contains("no-thread-sleep"));
    s.edit("s1", "A", 2, "fun a() = delay(10)");
    s.report(&[], |r| r["sessions"] == 1);
    let out_dir = tempfile::tempdir().unwrap();
    let page = out_dir.path().join("report.html");
    let out = s.sidecar.cli(&["report", "--out", page.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("wrote"));

    let profile = out_dir.path().join("profile");
    let dom = headless(&page, &profile, &["--dump-dom".into()]);
    let (html, log) = (
        String::from_utf8_lossy(&dom.stdout),
        String::from_utf8_lossy(&dom.stderr),
    );
    assert!(dom.status.success(), "{log}");
    assert!(html.contains("<table id=\"guidelines\">"), "{html}");
    assert!(
        html.contains("<td class=\"id\">no-thread-sleep</td>"),
        "{html}"
    );
    assert!(html.contains("<svg"), "the trend is drawn inline");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");

    // The check sees a console error when a page has one.
    let broken = out_dir.path().join("broken.html");
    std::fs::write(
        &broken,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let dom = headless(&broken, &profile, &["--dump-dom".into()]);
    let log = String::from_utf8_lossy(&dom.stderr);
    assert!(
        log.lines()
            .any(|l| l.contains("CONSOLE") && l.contains("boom")),
        "chromium logs console errors on stderr: {log}"
    );

    let shot = out_dir.path().join("shot.png");
    let run = headless(
        &page,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,900".into(),
            "--hide-scrollbars".into(),
        ],
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{}",
        png.len()
    );
}

/// Not a test: `benches/adherence.sh`'s data. Writes `ADHERENCE_BENCH_SESSIONS` (default
/// 100,000) made-up sessions through the store into the database `ADHERENCE_BENCH_DB`.
#[test]
#[ignore = "benches/adherence.sh runs it"]
fn generate_sessions_for_the_report_bench() {
    let db = std::env::var_os("ADHERENCE_BENCH_DB").expect("ADHERENCE_BENCH_DB");
    let sessions = std::env::var("ADHERENCE_BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    adaptive_guidebook::metrics::adherence::generate(Path::new(&db), sessions, now).unwrap();
}
