//! Input the sidecar must survive: files that are not regular, missing or huge (skipped or
//! capped, answered at once), and malformed, mistyped or oversized JSON-RPC requests (the
//! contract's error codes and HTTP 413). The error cases are shared with the OpenRPC test,
//! which checks that every code produced here is documented.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

/// A request the sidecar must refuse, and how.
pub struct ErrorCase {
    pub what: &'static str,
    /// The method called, when the request got far enough to name one.
    pub method: Option<&'static str>,
    pub body: String,
    pub code: i64,
    /// Text the error message must contain (which param, which path).
    pub mentions: &'static str,
}

fn call_body(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// Every refused request the tests produce.
pub fn error_cases() -> Vec<ErrorCase> {
    let case = |what, method: &'static str, params: Value, code, mentions| ErrorCase {
        what,
        method: Some(method),
        body: call_body(method, params),
        code,
        mentions,
    };
    vec![
        case(
            "relative path",
            "search",
            json!({"sessionId": "s", "filepaths": ["/abs/A.kt", "src/Main.kt"]}),
            -32602,
            "src/Main.kt",
        ),
        case(
            "relative path in explain",
            "explain",
            json!({"filepaths": ["./x.kt"]}),
            -32602,
            "./x.kt",
        ),
        case(
            "path of the wrong type",
            "search",
            json!({"sessionId": "s", "filepaths": [1]}),
            -32602,
            "filepaths[0]",
        ),
        case(
            "filepaths not an array",
            "explain",
            json!({"filepaths": "/a.kt"}),
            -32602,
            "filepaths",
        ),
        case(
            "sessionId of the wrong type",
            "search",
            json!({"sessionId": 5, "filepaths": []}),
            -32602,
            "sessionId",
        ),
        case(
            "missing filepaths",
            "search",
            json!({"sessionId": "s"}),
            -32602,
            "filepaths",
        ),
        case(
            "unknown param",
            "search",
            json!({"sessionId": "s", "filepaths": [], "filePaths": []}),
            -32602,
            "filePaths",
        ),
        case(
            "params as an array",
            "search",
            json!(["s", ["/a.kt"]]),
            -32602,
            "object",
        ),
        case(
            "empty sessionId",
            "search",
            json!({"sessionId": "", "filepaths": ["/a.kt"]}),
            -32602,
            "sessionId",
        ),
        case(
            "empty sessionId in explain",
            "explain",
            json!({"sessionId": "", "filepaths": []}),
            -32602,
            "sessionId",
        ),
        case(
            "empty sessionId in resetSession",
            "resetSession",
            json!({"sessionId": ""}),
            -32602,
            "sessionId",
        ),
        case(
            "missing sessionId in resetSession",
            "resetSession",
            json!({}),
            -32602,
            "sessionId",
        ),
        case(
            "negative deadline",
            "search",
            json!({"sessionId": "s", "filepaths": [], "deadlineMs": -1}),
            -32602,
            "deadlineMs",
        ),
        case(
            "deadline already expired",
            "search",
            json!({"sessionId": "s", "filepaths": ["/a.kt"], "deadlineMs": 0}),
            -32001,
            "deadline exceeded",
        ),
        case(
            "setFlag with nothing to set",
            "setFlag",
            json!({"flag": "hooks_enabled"}),
            -32602,
            "enabled",
        ),
        case(
            "setFlag with a percentage above 100",
            "setFlag",
            json!({"flag": "hooks_enabled", "rolloutPercent": 250}),
            -32602,
            "rolloutPercent",
        ),
        case(
            "setFlag with a bad flag name",
            "setFlag",
            json!({"flag": "../etc", "enabled": true}),
            -32602,
            "flag",
        ),
        case(
            "isEnabled without a flag",
            "isEnabled",
            json!({"key": "k"}),
            -32602,
            "flag",
        ),
        case(
            "isEnabled with a key of the wrong type",
            "isEnabled",
            json!({"flag": "x", "key": 5}),
            -32602,
            "key",
        ),
        case(
            "params for getFlags",
            "getFlags",
            json!({"verbose": true}),
            -32602,
            "verbose",
        ),
        case(
            "params for status",
            "status",
            json!({"verbose": true}),
            -32602,
            "verbose",
        ),
        case(
            "invalid disclosure phase",
            "buildPrompt",
            json!({"task": "t", "disclosurePhase": "brief"}),
            -32602,
            "Invalid disclosure_phase",
        ),
        case(
            "unknown role",
            "buildPrompt",
            json!({"task": "t", "role": "../guideline"}),
            -32602,
            "known roles: default",
        ),
        case(
            "task of the wrong type",
            "buildPrompt",
            json!({"task": 1}),
            -32602,
            "task",
        ),
        case("unknown method", "serach", json!({}), -32601, ""),
        ErrorCase {
            what: "malformed JSON",
            method: None,
            body: r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"#.into(),
            code: -32700,
            mentions: "",
        },
        ErrorCase {
            what: "not a request object",
            method: None,
            body: r#"{"jsonrpc":"2.0","id":1}"#.into(),
            code: -32600,
            mentions: "",
        },
        case(
            "recordError without a code",
            "recordError",
            json!({"sessionId": "s", "errors": [{"tool": "ruff", "file": "/a.py"}]}),
            -32602,
            "errors[0]",
        ),
        case(
            "recordError with an empty file",
            "recordError",
            json!({"sessionId": "s", "errors": [{"tool": "ruff", "code": "F401", "file": ""}]}),
            -32602,
            "errors[0].file",
        ),
        case(
            "breakerStatus without a session",
            "breakerStatus",
            json!({"sessionId": ""}),
            -32602,
            "sessionId",
        ),
        case(
            "resetBreaker with an unknown param",
            "resetBreaker",
            json!({"sessionId": "s", "force": true}),
            -32602,
            "force",
        ),
    ]
}

#[test]
fn refused_requests_get_the_contracts_error_codes_naming_the_param() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    for case in error_cases() {
        let (status, body) = sidecar.raw(case.body.as_bytes());
        assert_eq!(status, 200, "{}: HTTP {status}", case.what);
        let response: Value = serde_json::from_slice(&body).unwrap();
        let (code, message) = rpc_error(&response);
        assert_eq!(code, case.code, "{}: {response}", case.what);
        assert!(
            message.contains(case.mentions),
            "{}: {message:?} should mention {:?}",
            case.what,
            case.mentions
        );
    }
    // Still serving after all of that.
    assert_eq!(
        sidecar.result("search", json!({"sessionId": "s", "filepaths": []})),
        json!([])
    );
}

/// `search` params for one file, with `deadlineMs` when given.
fn search_params(session: &str, file: &Path, deadline: Option<u64>) -> Value {
    let mut p = json!({"sessionId": session, "filepaths": [file.display().to_string()]});
    if let Some(ms) = deadline {
        p["deadlineMs"] = json!(ms);
    }
    p
}

#[test]
fn an_expired_deadline_records_nothing() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let file = write_file(dir.path(), "notes.txt", "TODO: later\n");
    let params = |deadline: Option<u64>| search_params("late", &file, deadline);
    let (code, message) = sidecar.error("search", params(Some(0)));
    assert_eq!((code, message.as_str()), (-32001, "deadline exceeded"));
    assert_eq!(
        ids(&sidecar.result("search", params(Some(60_000)))),
        ["todo-needs-ticket"]
    );
    assert_eq!(
        ids(&sidecar.result("search", params(None))),
        Vec::<String>::new()
    );
}

#[test]
fn request_bodies_up_to_1_mib_are_served_and_larger_ones_get_http_413() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let session = "x".repeat(1_000_000);
    let (status, body) =
        sidecar.raw(call_body("search", json!({"sessionId": session, "filepaths": []})).as_bytes());
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let response: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(response["result"], json!([]));

    let huge = "y".repeat(1024 * 1024 + 1);
    let (status, _) =
        sidecar.raw(call_body("search", json!({"sessionId": huge, "filepaths": []})).as_bytes());
    assert_eq!(status, 413);
    // The refusal does not hurt the server.
    assert_eq!(
        sidecar.result("search", json!({"sessionId": "s", "filepaths": []})),
        json!([])
    );
}

#[test]
fn a_batch_gets_one_answer_per_call() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let file = write_file(dir.path(), "notes.txt", "TODO: later\n")
        .display()
        .to_string();
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"sessionId": "b", "filepaths": [file]}},
        {"jsonrpc": "2.0", "id": 2, "method": "status", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "search", "params": {"sessionId": "b", "filepaths": ["rel"]}},
    ]);
    let (status, body) = sidecar.raw(batch.to_string().as_bytes());
    assert_eq!(status, 200);
    let responses: Vec<Value> = serde_json::from_slice(&body).unwrap();
    let by_id = |id: i64| {
        responses
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}: {responses:?}"))
    };
    assert_eq!(responses.len(), 4);
    assert_eq!(ids(&by_id(1)["result"]), ["todo-needs-ticket"]);
    assert!(by_id(2)["result"]["guidebook"]["guidelines"].is_u64());
    assert_eq!(by_id(3)["error"]["code"], -32601);
    assert_eq!(by_id(4)["error"]["code"], -32602);
}

/// A 50 MB file holding `TODO:` at `offset` and nothing else (sparse, so cheap to make).
fn big_file(path: &Path, offset: u64) {
    let mut f = File::create(path).unwrap();
    f.set_len(50_000_000).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(b"\nTODO: found\n").unwrap();
}

#[test]
fn fifos_devices_directories_missing_and_huge_files_are_skipped_or_capped_at_once() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let base = dir.path();

    let fifo = base.join("pipe.kt");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    let directory = base.join("a-directory.kt");
    std::fs::create_dir(&directory).unwrap();
    let missing = base.join("missing.kt");
    let dev_zero = Path::new("/dev/zero");
    let late = base.join("late.log");
    big_file(&late, 3 * 1024 * 1024);
    let early = base.join("early.log");
    big_file(&early, 0);

    // The harness's client fails the test if an answer takes longer than its watchdog: a FIFO
    // opened for reading without a writer, or /dev/zero read to its end, would never answer.
    let bad = [
        fifo.as_path(),
        dev_zero,
        directory.as_path(),
        missing.as_path(),
        late.as_path(),
    ];
    assert_eq!(sidecar.search_ids("s", &bad), Vec::<String>::new());
    assert_eq!(sidecar.search_ids("s", &[&early]), ["todo-needs-ticket"]);

    let explained = sidecar.explain(&[&fifo, dev_zero, &directory, &missing, &late, &early]);
    let files = explained["files"].as_array().unwrap();
    assert_eq!(files.len(), 6);
    for (file, reason) in files[..4]
        .iter()
        .zip(["fifo", "device", "directory", "not found"])
    {
        let skipped = file["skipped"]
            .as_str()
            .unwrap_or_else(|| panic!("not skipped: {file}"));
        assert!(skipped.contains(reason), "{file}");
        assert_eq!(file["matches"], json!([]));
    }
    assert_eq!(
        files[4]["skipped"],
        Value::Null,
        "a huge file is capped, not skipped"
    );
    assert_eq!(
        files[4]["matches"],
        json!([]),
        "a match after the 2 MiB cap is not seen"
    );
    assert_eq!(files[5]["skipped"], Value::Null);
    let source = format!("guidebook {}:1", root.join("todo/guideline.yaml").display());
    assert_eq!(
        files[5]["matches"],
        json!([{"id": "todo-needs-ticket", "line": 2, "pattern": "TODO:", "severity": "info",
            "source": source, "leaves": [
            {"pattern": "TODO:", "in": "file", "negated": false, "held": true, "line": 2}
        ]}])
    );
    for (file, path) in files
        .iter()
        .zip([&fifo, dev_zero, &directory, &missing, &late, &early])
    {
        assert_eq!(
            file["path"],
            path.display().to_string(),
            "paths come back as given"
        );
    }
}

#[test]
fn a_locked_database_answers_within_the_deadline_and_records_nothing() {
    let (dir, root) = test_guidebook_dir();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "busyTimeoutMs: 300\n").unwrap();
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    let file = write_file(dir.path(), "notes.txt", "TODO: later\n");
    let params = |session: &str, deadline: Option<u64>| search_params(session, &file, deadline);

    // Another process takes the write lock and keeps it.
    let holder = rusqlite::Connection::open(&sidecar.db).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    // Waiting for the lock outlasts the caller's deadline: -32001, not a storage error.
    let (code, message) = sidecar.error("search", params("locked", Some(150)));
    assert_eq!((code, message.as_str()), (-32001, "deadline exceeded"));
    // Without a deadline the busy timeout ends the wait with a storage error that says why.
    let (code, message) = sidecar.error("search", params("locked", None));
    assert_eq!(code, -32010, "{message}");
    assert!(message.contains("locked"), "{message}");

    // Once the lock is gone nothing was recorded: the guideline is still new for the session.
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(
        ids(&sidecar.result("search", params("locked", Some(60_000)))),
        ["todo-needs-ticket"]
    );
}

/// JSON-RPC 2.0 ids are strings, integers or null. Any other id used to be read as a
/// notification and answered with HTTP 200 and the body `null`; it is an Invalid Request.
#[test]
fn ids_json_rpc_does_not_allow_are_invalid_requests_alone_and_in_batches() {
    let sidecar = Sidecar::start_default();
    for id in [r#"{"a":1}"#, "[1]", "1.5", "18446744073709551616", "-3"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"status"}}"#);
        let (status, answer) = sidecar.raw(body.as_bytes());
        assert_eq!(status, 200, "{id}");
        let answer: Value = serde_json::from_slice(&answer)
            .unwrap_or_else(|e| panic!("{id}: {e}: {}", String::from_utf8_lossy(&answer)));
        assert_eq!(answer["error"]["code"], -32600, "{id}: {answer}");
        assert_eq!(answer["id"], Value::Null, "{id}: {answer}");
        assert_eq!(answer["jsonrpc"], "2.0");
    }

    // In a batch the bad members get the error and the others their answers.
    let batch = r#"[{"jsonrpc":"2.0","id":{"a":1},"method":"status"},
        {"jsonrpc":"2.0","id":7,"method":"isEnabled","params":{"flag":"nope"}},
        {"jsonrpc":"2.0","id":0.5,"method":"status"}]"#;
    let (status, answer) = sidecar.raw(batch.as_bytes());
    assert_eq!(status, 200);
    let answer: Vec<Value> = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer.len(), 3, "{answer:?}");
    let served: Vec<&Value> = answer.iter().filter(|a| a["id"] == 7).collect();
    assert_eq!(served.len(), 1);
    assert_eq!(served[0]["result"], false);
    let refused = answer
        .iter()
        .filter(|a| a["id"].is_null() && a["error"]["code"] == -32600)
        .count();
    assert_eq!(refused, 2, "{answer:?}");

    // A batch of nothing but bad ids, and good requests as before.
    let (_, answer) = sidecar.raw(br#"[{"jsonrpc":"2.0","id":[],"method":"status"}]"#);
    let answer: Vec<Value> = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0]["error"]["code"], -32600);
    let (_, answer) =
        sidecar.raw(br#"{"jsonrpc":"2.0","id":"x","method":"isEnabled","params":{"flag":"f"}}"#);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["result"].clone()),
        (Value::from("x"), Value::from(false))
    );
}
