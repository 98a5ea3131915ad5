//! The guideline author's loop: `guidebook test`, examples in `check`, `guidebook new`, `scan`.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::harness::*;

fn guidebook_in(root: &Path, args: &[&str]) -> Output {
    let home = root.parent().unwrap().join("home");
    let mut cmd = isolated_guidebook();
    cmd.env("ADAPTIVE_GUIDEBOOK_HOME", &home)
        .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
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

const FAILING: &str = "\
id: no-globalscope
scope:
  languages: [kotlin]
match:
  any:
    - regex:
        pattern: 'GlobalScope\\.launch'
content: Use a scope you own.
examples:
  match:
    - GlobalScope.launch { }
    - scope.launch { }
    - code: GlobalScope.launch { }
      path: src/Jobs.java
  no_match:
    - viewModelScope.launch { }
    - |
      // a comment
      GlobalScope.launch { }
";

#[test]
fn test_passes_the_sample_guidebook_whose_every_guideline_has_examples() {
    let sample = manifest_dir().join("guidebook");
    let dir = tempfile::tempdir().unwrap();
    let out = guidebook_in(
        &dir.path().join("root"),
        &["test", sample.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let guidelines = std::fs::read_dir(sample.join("guidelines"))
        .unwrap()
        .count();
    assert!(
        text(&out).contains(&format!("examples of {guidelines} guidelines passed")),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("no examples"), "{}", text(&out));

    let out = guidebook_in(
        &dir.path().join("root"),
        &["test", "--json", sample.to_str().unwrap()],
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["guidelinesWithExamples"], guidelines);
    assert_eq!(report["failed"], 0);
    assert!(report["examples"].as_u64().unwrap() >= 2 * guidelines as u64);
}

#[test]
fn failing_examples_name_the_file_line_guideline_and_example() {
    let (_dir, root) = test_guidebook_dir();
    let path = write_guideline(&root, "no-globalscope", FAILING);
    let out = guidebook_in(&root, &["test"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let p = path.display();
    let expected = [
        format!("{p}:12: no-globalscope: example 2 of match did not match"),
        format!("{p}:13: no-globalscope: example 3 of match did not match: the guideline does not apply to java files"),
        format!("{p}:17: no-globalscope: example 2 of no_match matched (line 2 of the example, pattern `GlobalScope\\.launch`)"),
    ];
    for line in &expected {
        assert!(
            text(&out).lines().any(|l| l == line),
            "missing {line}\n{}",
            text(&out)
        );
    }
    assert!(
        text(&out).contains("3 of 5 examples failed"),
        "{}",
        text(&out)
    );

    let out = guidebook_in(&root, &["test", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["failed"], 3);
    assert_eq!(report["failures"][0]["line"], 12);
    assert_eq!(report["failures"][0]["list"], "match");
    assert_eq!(report["failures"][0]["example"], 2);
    assert_eq!(report["failures"][2]["list"], "no_match");

    // `check` runs the examples too.
    let out = guidebook_in(&root, &["check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&expected[0]), "{}", text(&out));

    // Fixed, both pass.
    std::fs::write(
        &path,
        FAILING
            .replace("    - scope.launch { }\n", "")
            .replace("      path: src/Jobs.java", "      path: src/Jobs.kt")
            .replace(
                "      // a comment\n      GlobalScope.launch { }\n",
                "      // a comment\n",
            ),
    )
    .unwrap();
    let out = guidebook_in(&root, &["test"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = guidebook_in(&root, &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn new_writes_a_skeleton_that_checks_and_passes_and_never_overwrites() {
    let (_dir, root) = test_guidebook_dir();
    let out = guidebook_in(&root, &["new", "no-println", "--language", "kotlin"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let written = root.join("no-println/guideline.yaml");
    let yaml = std::fs::read_to_string(&written).unwrap();
    assert!(yaml.starts_with("id: no-println\n"), "{yaml}");
    assert!(yaml.contains("languages: [kotlin]"), "{yaml}");
    for args in [&["test"][..], &["check"]] {
        let out = guidebook_in(&root, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }

    // The same id again, a bad id, an unknown language: refused, nothing written.
    let out = guidebook_in(&root, &["new", "no-println"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("already used"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&written).unwrap(), yaml);
    let out = guidebook_in(&root, &["new", "No_Println"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("is not a guideline id"),
        "{}",
        text(&out)
    );
    let out = guidebook_in(&root, &["new", "x", "--language", "cobol"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("unknown language `cobol`"),
        "{}",
        text(&out)
    );
    assert!(!root.join("x").exists());
}

#[test]
fn scan_walks_a_real_repository_as_git_sees_it_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(
        &root,
        "no-globalscope",
        "id: no-globalscope\nscope:\n  repositories: ['acme/*']\n  languages: [kotlin]\nmatch:\n  any:\n    - regex:\n        pattern: 'GlobalScope\\.launch'\ncontent: c\n",
    );
    write_guideline(
        &root,
        "other-team",
        "id: other-team\nscope:\n  repositories: ['other/*']\nmatch:\n  any:\n    - regex:\n        pattern: 'GlobalScope'\ncontent: c\n",
    );
    write_guideline(
        &root,
        "todo",
        "id: todo\nmatch:\n  any:\n    - regex:\n        pattern: 'TODO'\ncontent: c\n",
    );
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/backend-order.git"));
    write_file(&repo, ".gitignore", "build/\n");
    write_file(
        &repo,
        "src/A.kt",
        "package a\n\nfun f() = GlobalScope.launch { }\n",
    );
    write_file(&repo, "src/B.kt", "package b\n// TODO: later\n");
    write_file(
        &repo,
        "src/C.java",
        "class C { void f() { GlobalScope.launch(); } }\n",
    );
    write_file(&repo, "build/Gen.kt", "GlobalScope.launch { } // TODO\n");
    git_commit_all(&repo, "initial");

    let out = guidebook_in(&root, &["scan", "--json", repo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["repositories"],
        serde_json::json!(["acme/backend-order"])
    );
    // A.kt, B.kt, C.java: never build/ (ignored) nor .gitignore (hidden), as ripgrep walks.
    assert_eq!(report["files"], 3, "{report}");
    let by_id = |id: &str| {
        report["guidelines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == id)
            .cloned()
            .unwrap()
    };
    let globalscope = by_id("no-globalscope");
    assert_eq!(globalscope["files"], 1, "kotlin only: {globalscope}");
    assert_eq!(globalscope["applicable"], 2);
    let hit = &globalscope["hits"][0];
    assert!(hit["path"].as_str().unwrap().ends_with("src/A.kt"));
    assert_eq!(hit["line"], 3);
    assert_eq!(
        by_id("other-team")["files"],
        0,
        "another repository's guideline"
    );
    assert_eq!(by_id("todo")["files"], 1);
    // Noisiest first: todo and no-globalscope (1 of 3 files each, by id), then other-team.
    let order: Vec<&str> = report["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["no-globalscope", "todo", "other-team"]);
    let share = globalscope["share"].as_f64().unwrap();
    assert!((share - 1.0 / 3.0).abs() < 1e-9, "{share}");
    let hits_text = report.to_string();
    assert!(
        !hits_text.contains("build/Gen.kt"),
        "ignored files are not scanned"
    );
    // Nothing recorded: the scan never opened the database.
    assert!(!dir.path().join("home/adaptive-guidebook.db").exists());

    // The text report, piped: the table and the hits, no progress bar.
    let out = guidebook_in(&root, &["scan", repo.to_str().unwrap()]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.starts_with("scanned 3 files"), "{report}");
    assert!(
        report.contains("src/A.kt:3  GlobalScope\\.launch"),
        "{report}"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("files scanned"));
}

/// `new` before the first `serve` (issue 37): the default root does not exist yet, so `new`
/// installs the sample guidebook first, as `serve` would have, and says where it wrote; the
/// sample is there beside the new guideline. A root the user chose is never filled with the
/// sample, and a root that does not exist yet is no warning.
#[test]
fn new_before_the_first_serve_keeps_the_sample_guidebook() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let run = |args: &[&str], root: Option<&Path>| {
        let mut cmd = isolated_guidebook();
        cmd.env("ADAPTIVE_GUIDEBOOK_HOME", &home)
            .env("HOME", dir.path())
            .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
            .env_remove("RUST_LOG")
            .args(args);
        if let Some(root) = root {
            cmd.env("ADAPTIVE_GUIDEBOOK_ROOT", root);
        }
        run_bounded(cmd, b"", "guidebook")
    };
    let out = run(&["new", "my-rule", "--language", "kotlin"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no warning");
    let root = home.join("guidebook");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.starts_with(&format!(
            "installed the sample guidebook into {}\nwrote {}\n",
            root.display(),
            root.join("my-rule/guideline.yaml").display()
        )),
        "{stdout}"
    );
    let out = run(&["check"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let check = String::from_utf8_lossy(&out.stdout).into_owned();
    let samples = std::fs::read_dir(manifest_dir().join("guidebook/guidelines"))
        .unwrap()
        .count();
    assert!(samples >= 12, "{samples}");
    assert!(
        check.starts_with(&format!("ok: {} guidelines", samples + 1)),
        "{check}"
    );
    // A second `new` finds the root there and installs nothing.
    let out = run(&["new", "other-rule"], None);
    assert!(!text(&out).contains("installed"), "{}", text(&out));

    let mine = dir.path().join("team-guidebook");
    let out = run(&["new", "first-rule"], Some(&mine));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "no warning");
    assert_eq!(
        std::fs::read_dir(&mine).unwrap().count(),
        1,
        "only the new guideline"
    );
}

/// `check`, `test` and `doctor` print each file error once (issue 37: a WARN log line came
/// first), even with `RUST_LOG=warn`; and a tab in the indentation is named with its line,
/// its column and the word tab.
#[test]
fn each_error_is_one_line_and_a_tab_is_named() {
    let (_dir, root) = test_guidebook_dir();
    let tabbed = write_guideline(&root, "tabbed", "id: tabbed\nmatch:\n\tany: []\n");
    let pack = write_file(&root, "prompts/broken.yaml", "bogus: 1\n");
    let expected = format!(
        "{}:3:1: a tab in the indentation: YAML forbids tabs there, indent with spaces",
        tabbed.display()
    );
    for (args, rust_log) in [
        (&["check"][..], None),
        (&["check"], Some("warn")),
        (&["test"], None),
        (&["doctor"], Some("warn")),
    ] {
        let mut cmd = isolated_guidebook();
        cmd.env(
            "ADAPTIVE_GUIDEBOOK_HOME",
            root.parent().unwrap().join("home"),
        )
        .env("ADAPTIVE_GUIDEBOOK_ROOT", &root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env_remove("RUST_LOG")
        .args(args);
        if let Some(level) = rust_log {
            cmd.env("RUST_LOG", level);
        }
        let out = run_bounded(cmd, b"", "guidebook");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        let all = text(&out);
        assert_eq!(
            all.matches(&expected).count(),
            1,
            "{args:?} {rust_log:?}:\n{all}"
        );
        assert_eq!(
            all.matches("cannot start any token").count(),
            1,
            "{args:?}:\n{all}"
        );
        if args != ["test"] && args != ["doctor"] {
            let pack = format!("{}:1:1: unknown field `bogus`", pack.display());
            assert_eq!(all.matches(&pack).count(), 1, "{args:?}:\n{all}");
        }
    }
}
