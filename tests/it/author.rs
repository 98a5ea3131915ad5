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
