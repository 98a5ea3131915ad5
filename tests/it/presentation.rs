//! Presentation state: each guideline is shown at most once per session, also when many
//! searches race, and the SQLite table is exactly the contract's.

use std::sync::{Arc, Barrier};

use regex::Regex;
use serde_json::{json, Value};

use crate::harness::*;

#[test]
fn sixteen_concurrent_searches_present_each_guideline_exactly_once() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Arc::new(Sidecar::start(&root));
    let repo = dir.path().join("backend-order");
    git_repo(&repo, Some("git@github.com:acme/backend-order.git"));
    let kotlin = write_file(
        &repo,
        "src/Main.kt",
        "class Main(val id: String) {\n    fun f() = println(id) // TODO: t\n}\n",
    );
    let java = write_file(
        &repo,
        "src/Inject.java",
        "class Inject { @Autowired Foo foo; }\n",
    );
    let python = write_file(&repo, "tools/gen.py", "n: int = 1\n");
    let files = paths(&[&kotlin, &java, &python]);
    let expected = [
        "backend-logging",
        "java-field-injection",
        "kotlin-data-classes",
        "python-typed-fields",
        "todo-needs-ticket",
    ];

    // Several rounds, each a fresh session raced by 16 threads that each open their own
    // connection and send at the same moment.
    const ROUNDS: usize = 6;
    for round in 0..ROUNDS {
        let session = format!("race-{round}");
        let barrier = Arc::new(Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (sidecar, barrier) = (sidecar.clone(), barrier.clone());
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "search",
                    "params": {"sessionId": session, "filepaths": files}})
                .to_string();
                std::thread::spawn(move || {
                    let mut stream =
                        std::os::unix::net::UnixStream::connect(&sidecar.socket).unwrap();
                    barrier.wait();
                    send_request(&mut stream, body.as_bytes());
                    let (status, body) = read_response(&mut stream);
                    assert_eq!(status, 200);
                    let response: Value = serde_json::from_slice(&body).unwrap();
                    assert!(
                        response.get("error").is_none(),
                        "a racing search failed: {response}"
                    );
                    ids(&response["result"])
                })
            })
            .collect();
        let mut shown: Vec<String> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        shown.sort();
        assert_eq!(
            shown, expected,
            "{session}: each guideline exactly once across all 16 answers"
        );
        assert_eq!(
            sidecar.search_ids(&session, &[&kotlin, &java, &python]),
            Vec::<String>::new()
        );
    }

    // The database, read directly: one row per guideline, timestamps in the contract's form,
    // and the table exactly as the contract fixes it.
    let db = rusqlite::Connection::open_with_flags(
        &sidecar.db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = db
        .prepare("SELECT guideline_id, presented_at FROM presentation WHERE session_id = ?1 ORDER BY guideline_id")
        .unwrap();
    let utc = Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
    for round in 0..ROUNDS {
        let rows: Vec<(String, String)> = stmt
            .query_map([format!("race-{round}")], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let ids: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, expected, "one row per guideline for race-{round}");
        for (id, at) in &rows {
            assert!(utc.is_match(at), "{id}: presented_at {at:?}");
        }
    }
    let total: i64 = db
        .query_row("SELECT count(*) FROM presentation", [], |r| r.get(0))
        .unwrap();
    assert_eq!(total as usize, ROUNDS * expected.len());
    let sql: String = db
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'presentation'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let normalized = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    for part in [
        "session_id TEXT NOT NULL",
        "guideline_id TEXT NOT NULL",
        "presented_at TEXT NOT NULL",
        "PRIMARY KEY (session_id, guideline_id)",
    ] {
        assert!(normalized.contains(part), "{part:?} missing from {sql}");
    }
    let columns: Vec<String> = db
        .prepare("SELECT name FROM pragma_table_info('presentation') ORDER BY cid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(columns, ["session_id", "guideline_id", "presented_at"]);
}

#[test]
fn explain_records_nothing_and_reset_session_clears_only_that_session() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let file = write_file(dir.path(), "a.txt", "TODO: one\n");
    let explained = sidecar.result(
        "explain",
        json!({"filepaths": [file.display().to_string()], "sessionId": "a"}),
    );
    assert_eq!(
        explained["guidelines"],
        json!([{"id": "todo-needs-ticket", "alreadyPresented": false}])
    );
    assert_eq!(sidecar.search_ids("a", &[&file]), ["todo-needs-ticket"]);
    assert_eq!(sidecar.search_ids("b", &[&file]), ["todo-needs-ticket"]);
    let explained = sidecar.result(
        "explain",
        json!({"filepaths": [file.display().to_string()], "sessionId": "a"}),
    );
    assert_eq!(
        explained["guidelines"],
        json!([{"id": "todo-needs-ticket", "alreadyPresented": true}])
    );

    assert_eq!(
        sidecar.result("resetSession", json!({"sessionId": "a"})),
        json!({"cleared": 1})
    );
    assert_eq!(
        sidecar.result("resetSession", json!({"sessionId": "a"})),
        json!({"cleared": 0})
    );
    assert_eq!(sidecar.search_ids("a", &[&file]), ["todo-needs-ticket"]);
    assert_eq!(
        sidecar.search_ids("b", &[&file]),
        Vec::<String>::new(),
        "b was not reset"
    );
}
