//! `checkEdit` through the real daemon: the `block` guidelines an edit would break, on the
//! content the caller gives and the lines it would write, with scope, conditions and
//! `guidebook:allow` as `search` has them; nothing recorded as presented.

use serde_json::{json, Value};

use crate::harness::*;

const BLOCK: &str = "\
id: no-plaintext-password
scope:
  languages: [kotlin]
match:
  in: changes
  regex: {pattern: 'password\\s*=\\s*\"[^\"]+\"'}
severity: block
content: Never commit a password; read it from the secret store.
";

const ADVICE: &str = "\
id: todo-anywhere
match:
  regex: {pattern: 'TODO'}
severity: warn
content: Link a ticket.
";

fn check(sidecar: &Sidecar, path: &str, content: &str, written: Value) -> Value {
    sidecar.result(
        "checkEdit",
        json!({"sessionId": "s", "filepaths": [path],
               "contents": {path: content}, "written": {path: written}}),
    )
}

#[test]
fn check_edit_names_the_block_guideline_line_and_text_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(&root, "no-plaintext-password", BLOCK);
    write_guideline(&root, "todo-anywhere", ADVICE);
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("repo");
    git_repo(&repo, Some("git@github.com:acme/app.git"));
    // The file on disk is harmless; the edit would make it otherwise.
    let file = write_file(&repo, "src/Db.kt", "val user = \"app\"\n");
    let path = file.display().to_string();
    let after = "val user = \"app\" // TODO\nval password = \"hunter2\"\n";
    let found = check(&sidecar, &path, after, json!([[2, 2]]));
    let doc = crate::openrpc::document();
    crate::openrpc::assert_valid(
        &crate::openrpc::result_validator(&doc, "checkEdit"),
        "checkEdit",
        &found,
    );
    assert_eq!(
        found,
        json!({"blocked": [{
            "path": path, "id": "no-plaintext-password",
            "content": "Never commit a password; read it from the secret store.",
            "line": 2, "text": "val password = \"hunter2\""
        }]}),
        "the warn guideline's TODO is not a refusal"
    );
    // A line the edit does not write, an allowance, or a file out of the language scope: none.
    assert_eq!(
        check(&sidecar, &path, after, json!([[1, 1]])),
        json!({"blocked": []})
    );
    let allowed = "// guidebook:allow no-plaintext-password (test fixture)\nval password = \"x\"\n";
    assert_eq!(
        check(&sidecar, &path, allowed, json!([[1, 2]])),
        json!({"blocked": []})
    );
    let yaml = write_file(&repo, "conf/app.yaml", "");
    let yaml = yaml.display().to_string();
    assert_eq!(
        check(&sidecar, &yaml, "password = \"x\"\n", json!([[1, 1]])),
        json!({"blocked": []})
    );
    // Nothing was recorded as presented: a search after shows the guidelines as new.
    std::fs::write(&file, after).unwrap();
    // explain names each match's severity.
    let severities: Vec<(String, String)> = sidecar.explain(&[&file])["files"][0]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().into(),
                m["severity"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        severities,
        [
            ("no-plaintext-password".to_string(), "block".to_string()),
            ("todo-anywhere".to_string(), "warn".to_string())
        ]
    );
    assert_eq!(
        sidecar.search_ids("s", &[&file]),
        ["no-plaintext-password", "todo-anywhere"]
    );
    // Bad params name themselves.
    let (code, message) = sidecar.error(
        "checkEdit",
        json!({"sessionId": "s", "filepaths": ["rel.kt"]}),
    );
    assert_eq!(code, -32602);
    assert!(message.contains("rel.kt"), "{message}");
}
