//! The `guidebook` command line against a real sidecar: `explain` (table and `--json`),
//! `status` (running and not), and `check` on the sample guidebook.

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
        stdout(&out).contains(&format!("{}:3: ", bad.display())),
        "{}",
        stdout(&out)
    );
}
