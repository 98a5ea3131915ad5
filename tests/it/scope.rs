//! Which guidelines apply where: repository globs over the `origin` identity (in every URL form
//! the contract lists, in worktrees and submodules, refreshed when the remote changes), language
//! scope, and files with no repository identity at all.

use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

/// Text every test guideline but `java-field-injection` and `python-typed-fields` matches.
const KOTLIN: &str =
    "class OrderPrinter(val id: String) {\n    fun show() = println(id) // TODO: ticket\n}\n";
/// Text every Java-scoped test guideline matches (and `kotlin-data-classes` would, by regex).
const JAVA: &str = "class Printer(String id) {\n    @Autowired Foo foo;\n    void show() { System.out.println(id); } // TODO: x\n}\n";

/// One file's `explain` entry.
fn explain_one(sidecar: &Sidecar, file: &Path) -> Value {
    sidecar.explain(&[file])["files"][0].clone()
}

fn match_ids(file: &Value) -> Vec<String> {
    file["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn backend_glob_matches_every_origin_url_form_of_backend_order_but_not_frontend_web() {
    let (dir, root) = test_guidebook_dir();
    // Debug logs, to check that the credentials in an origin are never logged.
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![("RUST_LOG".into(), "debug".into())],
        ..SidecarOptions::default()
    });
    let backend_origins = [
        "git@github.com:acme/backend-order.git",
        "https://github.com/acme/backend-order.git",
        "ssh://git@host:2222/acme/backend-order",
        "https://user:s3cr3t-t0ken@host/acme/backend-order",
    ];
    for (i, origin) in backend_origins.iter().enumerate() {
        let repo = dir.path().join(format!("backend-{i}"));
        git_repo(&repo, Some(origin));
        let file = write_file(&repo, "src/Main.kt", KOTLIN);
        let explained = explain_one(&sidecar, &file);
        assert_eq!(
            explained["repository"], "acme/backend-order",
            "origin {origin}"
        );
        assert_eq!(explained["language"], "kotlin");
        assert_eq!(
            match_ids(&explained),
            [
                "backend-logging",
                "kotlin-data-classes",
                "todo-needs-ticket"
            ],
            "origin {origin}"
        );
        assert_eq!(
            sidecar.search_ids(&format!("s{i}"), &[&file]),
            [
                "backend-logging",
                "kotlin-data-classes",
                "todo-needs-ticket"
            ],
            "origin {origin}"
        );
    }
    // The credentials of an https origin never reach an answer or the log.
    let explained = sidecar.explain(&[&dir.path().join("backend-3/src/Main.kt")]);
    assert!(!explained.to_string().contains("s3cr3t"), "{explained}");
    assert!(
        sidecar.stderr().contains("repository identity"),
        "debug logs are on"
    );
    assert!(!sidecar.stderr().contains("s3cr3t"), "{}", sidecar.stderr());

    // Globs are case-insensitive.
    let shouting = dir.path().join("shouting");
    git_repo(&shouting, Some("git@github.com:ACME/Backend-Order.git"));
    let file = write_file(&shouting, "src/Main.kt", KOTLIN);
    let explained = explain_one(&sidecar, &file);
    assert_eq!(explained["repository"], "ACME/Backend-Order");
    assert_eq!(match_ids(&explained)[0], "backend-logging");

    let frontend = dir.path().join("frontend-web");
    git_repo(&frontend, Some("git@github.com:acme/frontend-web.git"));
    let file = write_file(&frontend, "src/Main.kt", KOTLIN);
    let explained = explain_one(&sidecar, &file);
    assert_eq!(explained["repository"], "acme/frontend-web");
    assert_eq!(
        match_ids(&explained),
        ["kotlin-data-classes", "todo-needs-ticket"]
    );
    assert_eq!(
        sidecar.search_ids("frontend", &[&file]),
        ["kotlin-data-classes", "todo-needs-ticket"]
    );
}

#[test]
fn language_scope_keeps_kotlin_guidelines_off_java_files_and_java_ones_off_kotlin() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("backend-order");
    git_repo(&repo, Some("git@github.com:acme/backend-order.git"));
    let java = write_file(&repo, "src/Printer.java", JAVA);
    let kotlin = write_file(&repo, "src/Printer.kt", &format!("{KOTLIN}// @Autowired\n"));

    let explained = explain_one(&sidecar, &java);
    assert_eq!(explained["language"], "java");
    assert_eq!(
        match_ids(&explained),
        [
            "backend-logging",
            "java-field-injection",
            "todo-needs-ticket"
        ]
    );
    let explained = explain_one(&sidecar, &kotlin);
    assert_eq!(
        match_ids(&explained),
        [
            "backend-logging",
            "kotlin-data-classes",
            "todo-needs-ticket"
        ]
    );
    // A file of no known language gets only language-unscoped guidelines.
    let text = write_file(&repo, "notes.txt", JAVA);
    let explained = explain_one(&sidecar, &text);
    assert_eq!(explained["language"], Value::Null);
    assert_eq!(match_ids(&explained), ["todo-needs-ticket"]);
}

/// A repository nested one group deeper (`group/sub/repo`, as GitLab subgroups name them):
/// `group/*` stops at one segment, so it covers `group/repo` but not `group/sub/repo`, while
/// `group/**` covers both; `*` alone crossing `/` would put `group/*` on every repository of the
/// group, however deep.
#[test]
fn one_star_stays_within_a_segment_and_two_cross_into_subgroups() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    for (id, glob) in [("one-level", "group/*"), ("any-depth", "group/**")] {
        write_guideline(
            &root,
            id,
            &format!(
                "id: {id}\nscope:\n  repositories: [\"{glob}\"]\nmatch:\n  any:\n    - regex:\n        \
                 pattern: 'SCOPED'\ncontent: {id}\n"
            ),
        );
    }
    let sidecar = Sidecar::start(&root);
    for (name, origin, identity, expected) in [
        (
            "flat",
            "git@host:group/repo.git",
            "group/repo",
            &["any-depth", "one-level"][..],
        ),
        (
            "nested",
            "git@host:group/sub/repo.git",
            "group/sub/repo",
            &["any-depth"][..],
        ),
        (
            "https",
            "https://host/group/sub/repo.git",
            "group/sub/repo",
            &["any-depth"][..],
        ),
        (
            "other",
            "git@host:other/group/repo.git",
            "other/group/repo",
            &[][..],
        ),
    ] {
        let repo = dir.path().join(name);
        git_repo(&repo, Some(origin));
        let file = write_file(&repo, "src/main.txt", "SCOPED\n");
        let explained = explain_one(&sidecar, &file);
        assert_eq!(explained["repository"], identity, "{origin}");
        assert_eq!(match_ids(&explained), expected, "{origin}");
        assert_eq!(sidecar.search_ids(name, &[&file]), expected, "{origin}");
    }
}

#[test]
fn files_without_repository_identity_get_only_repository_unscoped_guidelines() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let no_origin = dir.path().join("no-origin");
    git_repo(&no_origin, None);
    let outside = dir.path().join("outside-git");
    std::fs::create_dir_all(&outside).unwrap();

    for base in [&no_origin, &outside] {
        let file = write_file(base, "src/Main.kt", KOTLIN);
        let explained = explain_one(&sidecar, &file);
        assert_eq!(explained["repository"], Value::Null, "{}", base.display());
        assert_eq!(
            match_ids(&explained),
            ["kotlin-data-classes", "todo-needs-ticket"],
            "{}",
            base.display()
        );
    }
    let files = [no_origin.join("src/Main.kt"), outside.join("src/Main.kt")];
    assert_eq!(
        sidecar.search_ids("s", &[&files[0], &files[1]]),
        ["kotlin-data-classes", "todo-needs-ticket"]
    );
}

#[test]
fn a_changed_origin_is_picked_up_on_the_next_search() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/frontend-web.git"));
    let file = write_file(&repo, "Main.kt", KOTLIN);
    assert_eq!(
        explain_one(&sidecar, &file)["repository"],
        "acme/frontend-web"
    );
    assert_eq!(
        sidecar.search_ids("s", &[&file]),
        ["kotlin-data-classes", "todo-needs-ticket"]
    );

    git(
        &repo,
        &[
            "remote",
            "set-url",
            "origin",
            "https://github.com/acme/backend-order.git",
        ],
    );
    assert_eq!(sidecar.search_ids("s", &[&file]), ["backend-logging"]);
    assert_eq!(
        explain_one(&sidecar, &file)["repository"],
        "acme/backend-order"
    );

    git(&repo, &["remote", "remove", "origin"]);
    assert_eq!(explain_one(&sidecar, &file)["repository"], Value::Null);
}

#[test]
fn linked_worktrees_and_submodules_resolve_through_their_git_file() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let main = dir.path().join("main");
    git_repo(&main, Some("git@github.com:acme/backend-order.git"));
    write_file(&main, "README.md", "# order\n");
    git_commit_all(&main, "init");

    // A linked worktree: `.git` is a file naming `main/.git/worktrees/wt`; the remotes live in
    // the main repository's config.
    let worktree = dir.path().join("wt");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            worktree.to_str().unwrap(),
        ],
    );
    assert!(worktree.join(".git").is_file());
    let file = write_file(&worktree, "src/Main.kt", KOTLIN);
    let explained = explain_one(&sidecar, &file);
    assert_eq!(explained["repository"], "acme/backend-order");
    assert_eq!(
        match_ids(&explained),
        [
            "backend-logging",
            "kotlin-data-classes",
            "todo-needs-ticket"
        ]
    );

    // A submodule: `.git` is a file naming `main/.git/modules/lib`, which holds its own remote.
    let lib = dir.path().join("lib-src");
    git_repo(&lib, None);
    write_file(&lib, "lib.kt", "// lib\n");
    git_commit_all(&lib, "lib");
    git(
        &main,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "lib"],
    );
    let submodule = main.join("lib");
    assert!(submodule.join(".git").is_file());
    git(
        &submodule,
        &[
            "remote",
            "set-url",
            "origin",
            "https://github.com/acme/backend-lib.git",
        ],
    );
    let file = write_file(&submodule, "src/Lib.kt", KOTLIN);
    let explained = explain_one(&sidecar, &file);
    assert_eq!(explained["repository"], "acme/backend-lib");
    assert_eq!(
        match_ids(&explained),
        [
            "backend-logging",
            "kotlin-data-classes",
            "todo-needs-ticket"
        ]
    );
    // The superproject's own files keep the superproject's identity.
    let top = write_file(&main, "src/Top.kt", KOTLIN);
    assert_eq!(
        explain_one(&sidecar, &top)["repository"],
        "acme/backend-order"
    );
    assert_eq!(
        sidecar.result("status", json!({}))["guidebook"]["errors"],
        json!([])
    );
}
