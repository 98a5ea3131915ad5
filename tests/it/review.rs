//! `guidebook review` over real git repositories with the real binary: a pull request's range
//! (read from its head, from the merge base), the index, the working tree; only written lines
//! count for `in: changes`; path scope; exit codes by severity; the JSON shape; bad revisions.
//! The SARIF validator and the pre-commit framework, which need the registries, are in
//! `review_real`.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::harness::*;

/// A `block` guideline on written Kotlin lines calling `Thread.sleep(`.
pub const SLEEP: &str = "id: no-thread-sleep\nseverity: block\nscope:\n  languages: [kotlin]\n\
    match:\n  in: changes\n  any:\n    - regex:\n        pattern: 'Thread\\.sleep\\('\n\
    content: |\n  Use delay() in coroutines, not Thread.sleep().\n  It blocks the thread.\n";

/// A `warn` guideline on any `TODO` anywhere in a changed file (`in: file`).
pub const TODO: &str = "id: todo-in-file\nseverity: warn\n\
    match:\n  any:\n    - regex:\n        pattern: 'TODO'\ncontent: Resolve the TODOs of a file you change.\n";

/// An `info` guideline on written lines under `src/main/`, tests excluded.
pub const PRINTLN: &str = "id: no-println-in-main\nscope:\n  paths: ['src/main/**', '!**/test/**']\n\
    match:\n  in: changes\n  any:\n    - regex:\n        pattern: 'println\\('\ncontent: Log with the logger.\n";

/// A temp directory with a guidebook of `guidelines` at `<dir>/guidebook` and an `acme/orders`
/// repository at `<dir>/orders`.
pub fn scene(guidelines: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    for (i, g) in guidelines.iter().enumerate() {
        write_guideline(&root, &format!("g{i}"), g);
    }
    let work = dir.path().join("orders");
    git_repo(&work, Some("git@github.com:acme/orders.git"));
    (dir, root, work)
}

/// `guidebook review ARGS` in `work` with the guidebook at `root`, isolated from the machine's
/// settings and git configuration.
pub fn review(root: &Path, work: &Path, args: &[&str]) -> Output {
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", root.with_file_name("home"))
        .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(work)
        .arg("review")
        .args(args);
    run_bounded(cmd, b"", "guidebook review")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The findings of a `--format json` review as `path:line id severity`.
fn findings(out: &Output) -> Vec<String> {
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(out), stderr(out)));
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{} {} {}",
                f["path"].as_str().unwrap(),
                f["line"],
                f["id"].as_str().unwrap(),
                f["severity"].as_str().unwrap()
            )
        })
        .collect()
}

const BASE_KT: &str = "fun a() {\n    Thread.sleep(1)\n}\n";

/// A pull request: `main` has a file with an old `Thread.sleep`; `feature` adds one at line 4;
/// `main` moves on after the branch point with a sleep of its own, which the pull request does
/// not show (merge base); the working tree, back on `main`, has neither of the feature's lines.
#[test]
fn a_pull_request_is_reviewed_from_the_merge_base_to_its_head_commit() {
    let (_dir, root, work) = scene(&[SLEEP, TODO]);
    write_file(&work, "src/A.kt", BASE_KT);
    git_commit_all(&work, "base");
    git(&work, &["checkout", "-q", "-b", "feature"]);
    write_file(
        &work,
        "src/A.kt",
        &format!("{BASE_KT}fun b() {{ Thread.sleep(2) }}\n"),
    );
    write_file(&work, "docs/notes.md", "first\nTODO: write\n");
    git_commit_all(&work, "feature");
    git(&work, &["checkout", "-q", "main"]);
    write_file(&work, "src/B.kt", "fun c() { Thread.sleep(3) }\n");
    git_commit_all(&work, "main moves on");
    // The working tree differs from the head: the review must not read it.
    write_file(&work, "src/A.kt", "fun a() {}\n");

    let out = review(
        &root,
        &work,
        &["--base", "main", "--head", "feature", "--format", "json"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a block fired: {}",
        stderr(&out)
    );
    assert_eq!(
        findings(&out),
        [
            "docs/notes.md:2 todo-in-file warn",
            "src/A.kt:4 no-thread-sleep block"
        ]
    );

    // The text format, and --head defaulting to HEAD.
    git(&work, &["checkout", "-q", "--", "src/A.kt"]);
    git(&work, &["checkout", "-q", "feature"]);
    let out = review(&root, &work, &["--base", "main"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        "docs/notes.md:2: todo-in-file [warn] Resolve the TODOs of a file you change.\n\
         src/A.kt:4: no-thread-sleep [block] Use delay() in coroutines, not Thread.sleep().\n"
    );
    assert!(
        stderr(&out).contains("2 changed file(s)"),
        "{}",
        stderr(&out)
    );

    // Nothing between a commit and itself.
    let out = review(&root, &work, &["--base", "feature", "--head", "feature"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

/// `--staged` reviews the index's content against HEAD: a violation staged and then fixed only
/// in the working tree still fails the commit; one only in the working tree does not.
#[test]
fn staged_review_reads_the_index_not_the_working_tree() {
    let (_dir, root, work) = scene(&[SLEEP]);
    write_file(&work, "src/A.kt", BASE_KT);
    git_commit_all(&work, "base");
    write_file(
        &work,
        "src/A.kt",
        &format!("{BASE_KT}fun b() {{ Thread.sleep(2) }}\n"),
    );
    git(&work, &["add", "src/A.kt"]);
    write_file(&work, "src/A.kt", BASE_KT);
    write_file(&work, "src/C.kt", "fun c() { Thread.sleep(3) }\n");
    let out = review(&root, &work, &["--staged", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(findings(&out), ["src/A.kt:4 no-thread-sleep block"]);

    // Staged as fixed: the commit may go.
    git(&work, &["add", "src/A.kt"]);
    let out = review(&root, &work, &["--staged", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(findings(&out).is_empty());
}

/// A repository without a commit yet: everything staged is new, all of it written.
#[test]
fn staged_review_before_the_first_commit_sees_every_line() {
    let (_dir, root, work) = scene(&[SLEEP]);
    write_file(&work, "src/A.kt", BASE_KT);
    git(&work, &["add", "src/A.kt"]);
    let out = review(&root, &work, &["--staged", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(findings(&out), ["src/A.kt:2 no-thread-sleep block"]);
}

/// The working tree against HEAD: edited lines of tracked files, untracked files whole (not
/// ignored ones), deleted and binary files not at all; names with spaces and non-ASCII
/// letters come out as they are.
#[test]
fn the_working_tree_review_sees_edits_and_untracked_files_but_not_ignored_ones() {
    let (_dir, root, work) = scene(&[SLEEP, TODO]);
    write_file(&work, "src/A.kt", BASE_KT);
    write_file(&work, "src/Gone.kt", "// TODO\n");
    write_file(&work, ".gitignore", "build/\n");
    git_commit_all(&work, "base");
    write_file(
        &work,
        "src/A.kt",
        &BASE_KT.replace("fun a() {", "fun a() { Thread.sleep(0)"),
    );
    std::fs::remove_file(work.join("src/Gone.kt")).unwrap();
    write_file(
        &work,
        "src/Mein Modul ü.kt",
        "fun m() {\n    Thread.sleep(5)\n}\n",
    );
    write_file(&work, "build/Gen.kt", "fun g() { Thread.sleep(9) }\n");
    std::fs::write(work.join("blob.bin"), b"\0\x01TODO Thread.sleep(").unwrap();

    let out = review(&root, &work, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        findings(&out),
        [
            "src/A.kt:1 no-thread-sleep block",
            "src/Mein Modul ü.kt:2 no-thread-sleep block"
        ]
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["files"], 2, "{report}");
    assert_eq!(
        report["skipped"], 2,
        "the deleted and the binary file: {report}"
    );
}

/// `in: changes` counts only the lines the diff wrote; `in: file` looks at the whole changed
/// file, as at edit time; `scope.paths` is matched from the repository root,
/// `scope.repositories` against the identity of `origin`; a `guidebook:allow` comment exempts
/// its line; `--repo` names the repository from elsewhere.
#[test]
fn written_lines_and_scopes_decide_as_at_edit_time() {
    let acme = "id: acme-sleep\nscope:\n  repositories: ['acme/*']\n\
        match:\n  in: changes\n  any:\n    - regex:\n        pattern: 'Thread\\.sleep'\ncontent: Acme.\n";
    let other = "id: other-sleep\nseverity: block\nscope:\n  repositories: ['other/*']\n\
        match:\n  any:\n    - regex:\n        pattern: 'sleep'\ncontent: Other.\n";
    let (dir, root, work) = scene(&[SLEEP, TODO, PRINTLN, acme, other]);
    write_file(
        &work,
        "src/main/App.kt",
        "// TODO later\nfun a() {\n    Thread.sleep(1)\n}\n",
    );
    write_file(&work, "src/test/AppTest.kt", "fun t() {}\n");
    write_file(&work, "src/main/test/Fixture.kt", "fun f() {}\n");
    git_commit_all(&work, "base");
    // A line added below the old sleep, printing: the old sleep stays unreported.
    write_file(
        &work,
        "src/main/App.kt",
        "// TODO later\nfun a() {\n    Thread.sleep(1)\n    println(\"a\")\n}\n",
    );
    write_file(&work, "src/test/AppTest.kt", "fun t() { println(\"t\") }\n");
    write_file(
        &work,
        "src/main/test/Fixture.kt",
        "fun f() { println(\"f\") }\n",
    );
    write_file(
        &work,
        "src/main/Poll.kt",
        "// guidebook:allow no-thread-sleep (polls the vendor API)\nfun p() { Thread.sleep(9) }\n",
    );
    let elsewhere = work.join("src/main");
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", dir.path().join("home"))
        .env("ADAPTIVE_GUIDEBOOK_ROOT", &root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(dir.path())
        .args(["review", "--format", "json", "--repo"])
        .arg(&elsewhere);
    let out = run_bounded(cmd, b"", "guidebook review --repo");
    assert_eq!(
        out.status.code(),
        Some(0),
        "info and warn never fail: {}",
        stderr(&out)
    );
    assert_eq!(
        findings(&out),
        [
            "src/main/App.kt:1 todo-in-file warn",
            "src/main/App.kt:4 no-println-in-main info",
            "src/main/Poll.kt:2 acme-sleep info"
        ]
    );
}

/// The JSON report: what was compared, counts, whether it blocked, and each finding with the
/// first line of its guideline's content.
#[test]
fn the_json_report_has_its_documented_shape() {
    let (_dir, root, work) = scene(&[SLEEP]);
    write_file(&work, "src/A.kt", BASE_KT);
    git_commit_all(&work, "base");
    write_file(
        &work,
        "src/A.kt",
        &format!("{BASE_KT}val x = Thread.sleep(2)\n"),
    );
    let out = review(&root, &work, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "blocked",
            "compared",
            "elapsedMs",
            "files",
            "findings",
            "root",
            "skipped"
        ]
    );
    assert_eq!(
        report["root"],
        work.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(report["compared"], "HEAD..working tree");
    assert_eq!(report["blocked"], true);
    assert_eq!(
        report["findings"],
        serde_json::json!([{
            "path": "src/A.kt",
            "line": 4,
            "id": "no-thread-sleep",
            "severity": "block",
            "message": "Use delay() in coroutines, not Thread.sleep()."
        }])
    );
}

/// A revision that names no commit, a directory outside any repository, a missing guidebook:
/// exit 2 with a message naming what is wrong, never a silent pass.
#[test]
fn what_cannot_be_reviewed_exits_2_naming_the_revision_or_path() {
    let (dir, root, work) = scene(&[SLEEP]);
    write_file(&work, "src/A.kt", BASE_KT);
    git_commit_all(&work, "base");
    let out = review(&root, &work, &["--base", "origin/nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown revision `origin/nowhere`"),
        "{}",
        stderr(&out)
    );
    // A revision that reads as an option stays a revision.
    let out = review(&root, &work, &["--base", "main", "--head=--output=x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`--output=x`"), "{}", stderr(&out));
    assert!(!work.join("x").exists());

    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let out = review(&root, &outside, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not in a git repository"),
        "{}",
        stderr(&out)
    );

    let out = review(&dir.path().join("no-guidebook"), &work, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-guidebook"), "{}", stderr(&out));

    // --head without --base, --staged with --base: clap's usage errors, also 2.
    assert_eq!(
        review(&root, &work, &["--head", "main"]).status.code(),
        Some(2)
    );
    assert_eq!(
        review(&root, &work, &["--staged", "--base", "main"])
            .status
            .code(),
        Some(2)
    );
}
