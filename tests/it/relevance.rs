//! The right guideline for the change, through the real daemon: `scope.paths` over real git
//! repositories, `match` conditions composed of `any`/`all`/`not`, and `in: changes` on the
//! lines a search names as written or, when it names none, on the lines that differ from the
//! file's last commit. `explain` shows each leaf and where it held.

use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

const SLEEP: &str = "\
id: no-thread-sleep
scope:
  languages: [kotlin]
  paths: ['src/**', '!**/test/**']
match:
  in: changes
  all:
    - regex: {pattern: 'Thread\\.sleep\\('}
    - not:
        regex: {pattern: '@Test', in: file}
content: Use delay() in coroutines, not Thread.sleep().
";

const TODO: &str = "\
id: todo-anywhere
match:
  any:
    - regex: {pattern: 'TODO'}
content: Link a ticket.
";

/// Every line is its own: line 3 sleeps, line 8 is plain.
const BODY: &str = "package a\n\nfun a() { Thread.sleep(10) } // TODO\n\nfun b() = 1\n\nfun c() = 2\nfun d() = 3\n";

fn guidebook(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("guidebook");
    write_guideline(&root, "no-thread-sleep", SLEEP);
    write_guideline(&root, "todo-anywhere", TODO);
    root
}

fn search(sidecar: &Sidecar, session: &str, file: &Path, written: Option<Value>) -> Vec<String> {
    let path = file.display().to_string();
    let mut params = json!({"sessionId": session, "filepaths": [path]});
    if let Some(w) = written {
        params["written"] = json!({ path: w });
    }
    ids(&sidecar.result("search", params))
}

/// With written lines given, an `in: changes` leaf holds only where the edit wrote a match;
/// an `in: file` guideline is unaffected.
#[test]
fn changes_leaves_hold_only_on_the_written_lines_the_search_names() {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::start(&guidebook(dir.path()));
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    let file = write_file(&repo, "src/main/App.kt", BODY);
    assert_eq!(
        search(&sidecar, "s1", &file, Some(json!([[8, 8]]))),
        ["todo-anywhere"],
        "line 8 holds no sleep"
    );
    assert_eq!(
        search(&sidecar, "s2", &file, Some(json!([[1, 1], [3, 3]]))),
        ["no-thread-sleep", "todo-anywhere"]
    );
    assert_eq!(
        search(&sidecar, "s3", &file, Some(json!([]))),
        ["todo-anywhere"],
        "a pure deletion wrote no line"
    );
    // `contents` is matched instead of the file on disk.
    let path = file.display().to_string();
    let found = sidecar.result(
        "search",
        json!({"sessionId": "s4", "filepaths": [path], "written": {path.clone(): [[1, 1]]},
               "contents": {path: "Thread.sleep(1)\n"}}),
    );
    assert_eq!(ids(&found), ["no-thread-sleep"]);
    // Bad written lines are refused, naming the path and the range.
    let (code, message) = sidecar.error(
        "search",
        json!({"sessionId": "s5", "filepaths": [file], "written": {file.display().to_string(): [[0, 2]]}}),
    );
    assert_eq!(code, -32602);
    assert!(
        message.contains("[0, 2]") && message.contains("App.kt"),
        "{message}"
    );
    let (code, message) = sidecar.error(
        "search",
        json!({"sessionId": "s5", "filepaths": [file], "written": {"/elsewhere/B.kt": [[1, 2]]}}),
    );
    assert_eq!(code, -32602);
    assert!(
        message.contains("`/elsewhere/B.kt` is not one of filepaths"),
        "{message}"
    );
    // Wrong types name the param.
    for bad in [
        json!("1-2"),
        json!({"/x": "1-2"}),
        json!({"/x": [[1]]}),
        json!({"/x": [[1, -2]]}),
    ] {
        let (code, message) = sidecar.error(
            "search",
            json!({"sessionId": "s6", "filepaths": ["/x"], "written": bad}),
        );
        assert_eq!(code, -32602, "{bad}");
        assert!(message.contains("written"), "{bad}: {message}");
    }
}

/// Without written lines the daemon diffs against the file's last commit: a committed sleep
/// is not shown when the edit touched another line; a new sleep is; an untracked file is all
/// written.
#[test]
fn without_written_lines_the_diff_against_the_last_commit_decides() {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::start(&guidebook(dir.path()));
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    let file = write_file(&repo, "src/main/App.kt", BODY);
    assert_eq!(
        search(&sidecar, "untracked", &file, None),
        ["no-thread-sleep", "todo-anywhere"],
        "an untracked file is all written"
    );
    git_commit_all(&repo, "base");
    std::fs::write(&file, BODY.replace("fun d() = 3", "fun d() = 4")).unwrap();
    assert_eq!(
        search(&sidecar, "other-line", &file, None),
        ["todo-anywhere"]
    );
    std::fs::write(
        &file,
        BODY.replace("fun d() = 3", "fun d() { Thread.sleep(3) }"),
    )
    .unwrap();
    assert_eq!(
        search(&sidecar, "new-sleep", &file, None),
        ["no-thread-sleep", "todo-anywhere"]
    );
    let explained = sidecar.explain(&[&file]);
    let m = &explained["files"][0]["matches"][0];
    assert_eq!(m["id"], "no-thread-sleep");
    assert_eq!(
        m["line"], 8,
        "the written sleep, not the committed one on line 3"
    );
    assert_eq!(
        m["leaves"],
        json!([
            {"pattern": "Thread\\.sleep\\(", "in": "changes", "negated": false, "held": true, "line": 8},
            {"pattern": "@Test", "in": "file", "negated": true, "held": false, "line": null},
        ])
    );
}

/// `scope.paths`: an including glob, an excluding one, files outside every repository, and
/// `not` with a file-wide leaf.
#[test]
fn path_scope_and_a_file_wide_not_keep_the_guideline_where_it_belongs() {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::start(&guidebook(dir.path()));
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    let all = Some(json!([[1, 9]]));
    for (rel, expected) in [
        ("src/main/App.kt", vec!["no-thread-sleep", "todo-anywhere"]),
        ("src/test/AppTest.kt", vec!["todo-anywhere"]),
        ("tools/Gen.kt", vec!["todo-anywhere"]),
    ] {
        let file = write_file(&repo, rel, BODY);
        assert_eq!(search(&sidecar, rel, &file, all.clone()), expected, "{rel}");
    }
    let outside = write_file(&dir.path().join("loose"), "src/main/App.kt", BODY);
    assert_eq!(
        search(&sidecar, "outside", &outside, all.clone()),
        ["todo-anywhere"],
        "outside any repository, path-scoped guidelines do not apply"
    );
    let tested = write_file(&repo, "src/main/Slow.kt", &format!("@Test\n{BODY}"));
    assert_eq!(
        search(&sidecar, "tested", &tested, all),
        ["todo-anywhere"],
        "an @Test anywhere in the file keeps it away"
    );
}

/// `guidebook:allow <id>` on the line of a match or the line before lets that match through,
/// for that guideline only; the allowance is counted in the metrics and shown by `scan`.
#[test]
fn an_allow_comment_lets_one_guideline_through_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = guidebook(dir.path());
    let port = crate::metrics::free_port();
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root.clone()),
        env: vec![("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN".into(), port.to_string())],
        ..SidecarOptions::default()
    });
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    let allowed = "package a\n\n// guidebook:allow no-thread-sleep (the vendor's API polls)\nfun a() { Thread.sleep(10) } // TODO\n";
    let file = write_file(&repo, "src/main/App.kt", allowed);
    let all = Some(json!([[1, 4]]));
    assert_eq!(
        search(&sidecar, "a1", &file, all.clone()),
        ["todo-anywhere"]
    );
    // The allowance names one guideline: the TODO on the same line still counts; a second
    // sleep further down is not covered.
    let second = write_file(
        &repo,
        "src/main/Two.kt",
        &format!("{allowed}\nfun b() {{ Thread.sleep(20) }}\n"),
    );
    assert_eq!(
        search(&sidecar, "a2", &second, Some(json!([[1, 6]]))),
        ["no-thread-sleep", "todo-anywhere"]
    );
    let (_, _, body) = crate::metrics::http_get(port, "/metrics").expect("the endpoint answers");
    assert!(
        body.contains("guidebook_allowances_total{guideline=\"no-thread-sleep\"} 1\n"),
        "{body}"
    );
    let scan = sidecar.cli(&[
        "scan",
        repo.to_str().unwrap(),
        "--json",
        "--guidebook-root",
        root.to_str().unwrap(),
    ]);
    assert!(scan.status.success(), "{scan:?}");
    let report: Value = serde_json::from_slice(&scan.stdout).unwrap();
    let sleep = report["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "no-thread-sleep")
        .unwrap()
        .clone();
    assert_eq!(
        (sleep["allowed"].clone(), sleep["files"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(sleep["severity"], "info");
}
