//! Live reload of the guidebook: a broken guideline keeps its last good version in service
//! while `status` and `guidebook check` name the file and line; fixes, new files and duplicate
//! ids are picked up without a restart.

use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

fn legacy_api(pattern: &str, content: &str) -> String {
    // The pattern sits on line 5, which the error must name.
    format!("id: legacy-api\nmatch:\n  any:\n    - regex:\n        pattern: '{pattern}'\ncontent: {content}\n")
}

/// The `content` `search` returns for `file` in a fresh session.
fn served_content(sidecar: &Sidecar, session: &str, file: &Path) -> Vec<(String, String)> {
    let result = sidecar.result(
        "search",
        json!({"sessionId": session, "filepaths": [file.display().to_string()]}),
    );
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().into(),
                g["content"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn errors(status: &Value) -> &Vec<Value> {
    status["guidebook"]["errors"].as_array().unwrap()
}

#[test]
fn a_broken_guideline_keeps_serving_its_last_good_version_until_fixed_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let guideline = write_guideline(&root, "legacy", &legacy_api("legacyApi\\(", "Old advice."));
    let file = write_file(dir.path(), "Client.kt", "val x = legacyApi(1)\n");
    let sidecar = Sidecar::start(&root);
    assert_eq!(
        served_content(&sidecar, "s1", &file),
        [("legacy-api".into(), "Old advice.".into())]
    );

    // Broken: the pattern is no longer a valid regex (and the content changed too).
    std::fs::write(&guideline, legacy_api("legacyApi(", "New advice.")).unwrap();
    let status = sidecar.wait_for_status("the broken file is reported", |s| !errors(s).is_empty());
    let reported = &errors(&status)[0];
    assert_eq!(reported["path"], guideline.display().to_string());
    assert_eq!(reported["line"], 5);
    assert_eq!(reported["column"], 9, "{reported}");
    assert!(
        reported["message"].as_str().unwrap().contains("regex"),
        "{reported}"
    );
    let text = sidecar.cli(&["status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("{}:5:9: ", guideline.display())),
        "status names file, line and column: {text}"
    );
    assert_eq!(
        status["guidebook"]["guidelines"], 1,
        "the old version is still counted"
    );
    assert_eq!(
        served_content(&sidecar, "s2", &file),
        [("legacy-api".into(), "Old advice.".into())],
        "a new session still gets the last good version"
    );

    let check = sidecar.cli(&["check", root.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with(&format!("{}:5:9: ", guideline.display()))),
        "check names file, line and column: {stdout}"
    );

    // Fixed: picked up without a restart.
    std::fs::write(&guideline, legacy_api("legacyApi\\(\\d", "Fixed advice.")).unwrap();
    sidecar.wait_for_status("the fix is picked up", |s| errors(s).is_empty());
    assert_eq!(
        served_content(&sidecar, "s3", &file),
        [("legacy-api".into(), "Fixed advice.".into())]
    );
    let check = sidecar.cli(&["check", root.to_str().unwrap()]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn new_guideline_files_and_duplicate_ids_are_picked_up_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let first = write_guideline(&root, "b-first", &legacy_api("legacyApi\\(", "First."));
    let file = write_file(
        dir.path(),
        "Client.kt",
        "val x = legacyApi(1) // TODO: drop\n",
    );
    let sidecar = Sidecar::start(&root);
    assert_eq!(
        sidecar.result("status", json!({}))["guidebook"]["guidelines"],
        1
    );

    write_guideline(
        &root,
        "nested/deeper/todo",
        "id: todo-needs-ticket\nmatch:\n  any:\n    - regex:\n        pattern: 'TODO:'\ncontent: Link it.\n",
    );
    sidecar.wait_for_status("the new file is loaded", |s| {
        s["guidebook"]["guidelines"] == 2
    });
    assert_eq!(
        sidecar.search_ids("s", &[&file]),
        ["legacy-api", "todo-needs-ticket"]
    );

    // A second file claims `legacy-api`: the one already serving it keeps it, and the error
    // names both files.
    let second = write_guideline(&root, "a-second", &legacy_api("other", "Second."));
    let status = sidecar.wait_for_status("the duplicate is reported", |s| !errors(s).is_empty());
    let reported = &errors(&status)[0];
    let message = reported["message"].as_str().unwrap();
    assert!(message.contains("duplicate"), "{reported}");
    let named = format!("{reported}");
    assert!(
        named.contains(&*first.display().to_string())
            && named.contains(&*second.display().to_string()),
        "both paths named: {reported}"
    );
    assert_eq!(status["guidebook"]["guidelines"], 2);
    assert_eq!(
        served_content(&sidecar, "s2", &file)[0],
        ("legacy-api".into(), "First.".into())
    );

    let check = sidecar.cli(&["check", root.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("duplicate id `legacy-api`"), "{stdout}");

    // Removing the duplicate clears the error.
    std::fs::remove_file(&second).unwrap();
    sidecar.wait_for_status("the duplicate is gone", |s| errors(s).is_empty());
}
