//! Structural (`ast`) leaves through the real binaries: examples, `test`, `check`, `explain`, scan,
//! review and the hook's text each tell a `runBlocking` call from its mentions in comments and
//! strings, which a regex leaf cannot.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::harness::*;

const NO_RUN_BLOCKING: &str = "\
id: no-run-blocking
scope:
  languages: [kotlin]
match:
  ast:
    pattern: runBlocking { $$$ }
severity: warn
content: Do not block a thread on a coroutine; make the caller suspend.
examples:
  match:
    - |
      fun f() = runBlocking { work() }
  no_match:
    - |
      // runBlocking { work() }
      val s = \"runBlocking { }\"
";

/// The regex a team writes today, for comparison.
const REGEX_RUN_BLOCKING: &str = "\
id: regex-run-blocking
scope:
  languages: [kotlin]
match:
  regex: {pattern: 'runBlocking'}
severity: warn
content: The same rule, by regex.
";

/// Two real calls (lines 6 and 8-10) and five mentions in comments and strings.
const ORDERS_KT: &str = "package demo

// runBlocking is banned: runBlocking { } blocks the thread
class Orders(private val repo: Repo) {
    val hint = \"never runBlocking { } here\"
    fun load() = runBlocking { repo.all() }
    fun save(o: Order) {
        runBlocking {
            repo.save(o)
        }
    }
    /** Not runBlocking. */
    fun sync() = repo.sync()
}
";

/// Mentions only.
const MENTIONS_KT: &str = "package demo

// runBlocking { } is banned
val hint = \"runBlocking { }\"
";

fn guidebook_in(root: &Path, args: &[&str]) -> Output {
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", root.with_file_name("home"))
        .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(args);
    run_bounded(cmd, b"", "guidebook")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn scene() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(&root, "no-run-blocking", NO_RUN_BLOCKING);
    write_guideline(&root, "regex-run-blocking", REGEX_RUN_BLOCKING);
    let repo = dir.path().join("orders");
    git_repo(&repo, Some("git@github.com:acme/orders.git"));
    (dir, root, repo)
}

/// `guidebook test` runs a structural leaf's examples, and a failing one names the pattern.
#[test]
fn examples_of_a_structural_leaf_run_in_guidebook_test() {
    let (_dir, root, _repo) = scene();
    let out = guidebook_in(&root, &["test"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let path = write_guideline(
        &root,
        "no-run-blocking",
        &format!(
            "{NO_RUN_BLOCKING}    - |\n      fun g() {{\n        runBlocking {{ }}\n      }}\n"
        ),
    );
    let out = guidebook_in(&root, &["test"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let expected = format!(
        "{}:17: no-run-blocking: example 2 of no_match matched (line 2 of the example, pattern `runBlocking {{ $$$ }}`)",
        path.display()
    );
    assert!(
        text(&out).lines().any(|l| l == expected),
        "missing {expected}\n{}",
        text(&out)
    );
}

/// A pattern that does not parse, a language without a grammar, a leaf without
/// `scope.languages`: each a load error with the file and the leaf's line, never a panic.
#[test]
fn broken_structural_leaves_are_load_errors_with_file_and_line() {
    let (_dir, root, _repo) = scene();
    for (yaml, line, says) in [
        (
            "id: bad\nscope:\n  languages: [kotlin]\nmatch:\n  any:\n    - regex: {pattern: x}\n    - ast:\n        pattern: 'fun ((('\ncontent: c\n",
            7,
            "does not parse as kotlin code",
        ),
        (
            "id: bad\nscope:\n  languages: [markdown]\nmatch:\n  ast: {pattern: 'x'}\ncontent: c\n",
            5,
            "`ast` patterns do not support markdown",
        ),
        (
            "id: bad\nmatch:\n  not:\n    ast: {pattern: 'foo()'}\ncontent: c\n",
            4,
            "needs `scope.languages`",
        ),
    ] {
        let path = write_guideline(&root, "bad", yaml);
        let out = guidebook_in(&root, &["check"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let at = format!("{}:{line}: ", path.display());
        assert!(
            text(&out)
                .lines()
                .any(|l| l.contains(&at) && l.contains(says)),
            "wanted {at}…{says}\n{}",
            text(&out)
        );
        assert!(!text(&out).contains("panicked"), "{}", text(&out));
    }
}

/// `explain` shows the structural leaf with the node it matched and the node's lines; the
/// regex guideline's first hit is a comment.
#[test]
fn explain_shows_the_matched_node_and_its_lines() {
    let (_dir, root, repo) = scene();
    let sidecar = Sidecar::start(&root);
    let file = write_file(&repo, "src/Orders.kt", ORDERS_KT);
    let explained = sidecar.explain(&[&file]);
    let matches = explained["files"][0]["matches"].as_array().unwrap();
    let by_id = |id: &str| matches.iter().find(|m| m["id"] == id).unwrap().clone();
    let ast = by_id("no-run-blocking");
    assert_eq!(ast["line"], 6, "{ast}");
    assert_eq!(ast["pattern"], "runBlocking { $$$ }");
    assert_eq!(
        ast["leaves"],
        json!([{"pattern": "runBlocking { $$$ }", "ast": true, "in": "file", "negated": false,
                "held": true, "line": 6, "lastLine": 6, "node": "runBlocking { repo.all() }"}])
    );
    assert_eq!(by_id("regex-run-blocking")["line"], 3, "a comment");
    // A node over several lines: its first and last.
    let multi = write_file(
        &repo,
        "src/Multi.kt",
        &ORDERS_KT.replace("runBlocking { repo.all() }", "repo.all()"),
    );
    let explained = sidecar.explain(&[&multi]);
    let leaf = &explained["files"][0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "no-run-blocking")
        .unwrap()["leaves"][0];
    assert_eq!((&leaf["line"], &leaf["lastLine"]), (&json!(8), &json!(10)));
    assert_eq!(
        leaf["node"],
        "runBlocking {\n            repo.save(o)\n        }"
    );
}

/// Under `in: changes` a structural leaf holds when a matched node overlaps a written line:
/// the multi-line call by its last line; the mentions' lines never.
#[test]
fn in_changes_a_node_overlapping_a_written_line_counts() {
    let (_dir, root, repo) = scene();
    write_guideline(
        &root,
        "no-run-blocking",
        &NO_RUN_BLOCKING.replace(
            "    pattern: runBlocking { $$$ }\n",
            "    pattern: runBlocking { $$$ }\n    in: changes\n",
        ),
    );
    let sidecar = Sidecar::start(&root);
    let file = write_file(&repo, "src/Orders.kt", ORDERS_KT);
    let path = file.display().to_string();
    let search = |session: &str, lines: Value| {
        ids(&sidecar.result(
            "search",
            json!({"sessionId": session, "filepaths": [path], "written": {path.clone(): lines}}),
        ))
    };
    assert_eq!(
        search("a", json!([[10, 10]])),
        ["no-run-blocking", "regex-run-blocking"]
    );
    assert_eq!(
        search("b", json!([[3, 5], [12, 12]])),
        ["regex-run-blocking"],
        "lines 3-5 and 12 hold only mentions"
    );
    assert_eq!(search("c", json!([[7, 7]])), ["regex-run-blocking"]);
}

/// `guidebook scan` fires the structural guideline on the file with calls only; the regex
/// one on both.
#[test]
fn scan_counts_files_with_calls_not_mentions() {
    let (_dir, root, repo) = scene();
    write_file(&repo, "src/Orders.kt", ORDERS_KT);
    write_file(&repo, "src/Mentions.kt", MENTIONS_KT);
    git_commit_all(&repo, "initial");
    let out = guidebook_in(&root, &["scan", "--json", repo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_id = |id: &str| {
        report["guidelines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == id)
            .cloned()
            .unwrap()
    };
    let ast = by_id("no-run-blocking");
    assert_eq!(ast["files"], 1, "{ast}");
    assert!(ast["hits"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("src/Orders.kt"));
    assert_eq!(ast["hits"][0]["line"], 6);
    assert_eq!(by_id("regex-run-blocking")["files"], 2);
}

/// `guidebook review` reports a call a change adds, and nothing for a change that adds only
/// mentions (which the regex guideline reports).
#[test]
fn review_reports_added_calls_not_added_mentions() {
    let (_dir, root, repo) = scene();
    write_file(&repo, "src/Orders.kt", "package demo\n");
    git_commit_all(&repo, "base");
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    write_file(&repo, "src/Orders.kt", ORDERS_KT);
    write_file(&repo, "src/Mentions.kt", MENTIONS_KT);
    git_commit_all(&repo, "feature");
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", root.with_file_name("home"))
        .env("ADAPTIVE_GUIDEBOOK_ROOT", &root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(&repo)
        .args(["review", "--base", "main", "--format", "json"]);
    let out = run_bounded(cmd, b"", "guidebook review");
    assert_eq!(out.status.code(), Some(0), "warn only: {}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut findings: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{}:{} {}", f["path"].as_str().unwrap(), f["line"], f["id"]))
        .collect();
    findings.sort();
    assert_eq!(
        findings,
        [
            "src/Mentions.kt:3 \"regex-run-blocking\"",
            "src/Orders.kt:3 \"regex-run-blocking\"",
            "src/Orders.kt:6 \"no-run-blocking\"",
        ]
    );
}

/// The hook's text after a Claude Code write names the structural guideline for a file with a
/// call, and not for a file with mentions only.
#[test]
fn the_hook_shows_the_guideline_for_a_call_not_for_a_mention() {
    let (_dir, root, repo) = scene();
    let sidecar = Sidecar::start(&root);
    let write = |session: &str, path: &Path| {
        let mut event = hook_event("claude_post_tool_use_write.json", session, &repo);
        event["tool_input"]["file_path"] = json!(path.display().to_string());
        event["tool_response"]["filePath"] = json!(path.display().to_string());
        let out = sidecar.hook(&event);
        assert_valid_hook_output(&out.stdout);
        out.stdout
    };
    let shown = |stdout: &str| -> Vec<String> {
        if stdout.is_empty() {
            return Vec::new();
        }
        let value: Value = serde_json::from_str(stdout).unwrap();
        value["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .lines()
            .filter_map(|l| Some(l.strip_prefix('[')?.strip_suffix(']')?.to_string()))
            .collect()
    };
    let mentions = write_file(&repo, "src/Mentions.kt", MENTIONS_KT);
    assert_eq!(shown(&write("m", &mentions)), ["regex-run-blocking"]);
    let orders = write_file(&repo, "src/Orders.kt", ORDERS_KT);
    let out = write("o", &orders);
    assert_eq!(shown(&out), ["no-run-blocking", "regex-run-blocking"]);
    assert!(
        out.contains("Do not block a thread on a coroutine"),
        "{out}"
    );
}
