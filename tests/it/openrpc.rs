//! The OpenRPC document: valid against the OpenRPC meta-schema, served as is by `rpc.discover`,
//! and true to the server: every real response validates against the result schema its method
//! declares, and every error code the server produces is declared.

use std::collections::BTreeSet;
use std::sync::Arc;

use adaptive_guidebook::config::{Overrides, Settings};
use adaptive_guidebook::engine::Engine;
use jsonschema::{Draft, Validator};
use serde_json::{json, Value};

use crate::bad_input::error_cases;
use crate::harness::*;

/// Where the tests register the OpenRPC document so that schemas can `$ref` into it.
const DOCUMENT_URI: &str = "https://guidebook.invalid/openrpc.json";

pub(crate) fn document() -> Value {
    let path = manifest_dir().join("rpc-schema/openrpc.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The names of every method the server registers: its registration table, built on an engine
/// of its own (nothing is served).
fn registered_methods() -> BTreeSet<&'static str> {
    let home = tempfile::tempdir().unwrap();
    let settings = Settings::resolve_with(&Overrides::default(), |key| match key {
        "ADAPTIVE_GUIDEBOOK_HOME" => Some(home.path().into()),
        "ADAPTIVE_GUIDEBOOK_ROOT" => Some(home.path().join("guidebook").into()),
        _ => None,
    })
    .unwrap();
    let engine = Engine::open_unloaded(settings).unwrap();
    adaptive_guidebook::rpc::module(Arc::new(engine))
        .method_names()
        .collect()
}

/// A validator for `method`'s declared `result.schema`, with `#/components/...` references
/// resolved inside the document.
pub(crate) fn result_validator(doc: &Value, name: &str) -> Validator {
    let index = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("method {name} is not in the document"));
    let schema = json!({"$ref": format!("{DOCUMENT_URI}#/methods/{index}/result/schema")});
    jsonschema::options()
        .with_draft(Draft::Draft7)
        .with_resource(DOCUMENT_URI, Draft::Draft7.create_resource(doc.clone()))
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name}'s result schema does not compile: {e}"))
}

pub(crate) fn assert_valid(validator: &Validator, name: &str, value: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "{name} result {value} breaks its declared schema: {errors:?}"
    );
}

#[test]
fn openrpc_document_is_valid_against_the_openrpc_meta_schema() {
    let meta = fixture("openrpc-meta-schema.json");
    let json_schema_meta = fixture("json-schema-tools-meta-schema.json");
    let validator = jsonschema::options()
        .with_draft(Draft::Draft7)
        .with_resource(
            "https://meta.json-schema.tools",
            Draft::Draft7.create_resource(json_schema_meta.clone()),
        )
        .with_resource(
            "https://meta.json-schema.tools/",
            Draft::Draft7.create_resource(json_schema_meta),
        )
        .build(&meta)
        .expect("the OpenRPC meta-schema compiles");
    let doc = document();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "rpc-schema/openrpc.json: {errors:?}");

    // The meta-schema check has teeth: a document with a misspelt member fails it.
    let mut broken = doc.clone();
    broken["methods"][0]["paramz"] = json!([]);
    assert!(!validator.is_valid(&broken));
    let mut broken = doc;
    broken["methods"][0]["params"][0]["schema"] = json!({"type": "strin"});
    assert!(
        !validator.is_valid(&broken),
        "schemas inside are checked with the JSON Schema meta-schema"
    );
}

#[test]
fn rpc_discover_returns_the_document_and_real_responses_match_their_declared_schemas() {
    let doc = document();
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);

    // The document against the registration table (`rpc::module`), the methods the server
    // answers: every one documented, and nothing documented that it does not answer.
    let declared: BTreeSet<&str> = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let registered = registered_methods();
    let undocumented: Vec<&&str> = registered.difference(&declared).collect();
    assert!(
        undocumented.is_empty(),
        "registered but not in rpc-schema/openrpc.json: {undocumented:?}"
    );
    let unregistered: Vec<&&str> = declared.difference(&registered).collect();
    assert!(
        unregistered.is_empty(),
        "in rpc-schema/openrpc.json but not registered: {unregistered:?}"
    );
    // And the running sidecar is the table's: it knows every documented name (a wrong call is
    // refused for its params, never as an unknown method), and no other.
    for name in &declared {
        let answer = sidecar.call(name, json!({"sessionId": ""}));
        assert_ne!(answer["error"]["code"], -32601, "{name}: {answer}");
    }
    assert_eq!(
        sidecar.error("notAMethod", json!({})).0,
        -32601,
        "an unknown name is refused as one"
    );

    let discovered = sidecar.result("rpc.discover", json!({}));
    assert_eq!(
        discovered, doc,
        "rpc.discover serves rpc-schema/openrpc.json"
    );
    assert_valid(
        &result_validator(&doc, "rpc.discover"),
        "rpc.discover",
        &discovered,
    );

    let repo = dir.path().join("backend-order");
    git_repo(&repo, Some("git@github.com:acme/backend-order.git"));
    let kotlin = write_file(
        &repo,
        "src/Main.kt",
        "class Main(val x: Int) { fun f() = println(x) }\n",
    );
    let plain = write_file(dir.path(), "plain.txt", "TODO: x\n");
    let missing = dir.path().join("missing.kt");
    let kotlin_path = kotlin.display().to_string();

    let mut responses: Vec<(&str, Value)> = Vec::new();
    // search: non-empty, then empty.
    let found = sidecar.result(
        "search",
        json!({"sessionId": "s", "filepaths": [kotlin_path, plain.display().to_string()]}),
    );
    assert_eq!(
        ids(&found),
        [
            "backend-logging",
            "kotlin-data-classes",
            "todo-needs-ticket"
        ]
    );
    // `content` comes exactly as in the YAML, trailing whitespace and all.
    assert_eq!(
        found[1]["content"],
        "Kotlin classes:\n- prefer data classes for DTOs\n- keep constructors small  \n\n"
    );
    responses.push(("search", found));
    let none = sidecar.result(
        "search",
        json!({"sessionId": "s", "filepaths": [kotlin_path]}),
    );
    assert_eq!(none, json!([]));
    responses.push(("search", none));
    // explain: with and without a session, with a skipped file and one outside any repository.
    let files = json!([
        kotlin_path,
        missing.display().to_string(),
        plain.display().to_string()
    ]);
    let with_session = sidecar.result("explain", json!({"sessionId": "s", "filepaths": files}));
    assert_eq!(with_session["guidelines"][0]["alreadyPresented"], true);
    assert!(with_session["files"][1]["skipped"].is_string());
    assert_eq!(with_session["files"][2]["repository"], Value::Null);
    responses.push(("explain", with_session));
    responses.push((
        "explain",
        sidecar.result("explain", json!({"filepaths": files})),
    ));
    responses.push((
        "explain",
        sidecar.result("explain", json!({"filepaths": []})),
    ));
    responses.push((
        "resetSession",
        sidecar.result("resetSession", json!({"sessionId": "s"})),
    ));
    responses.push((
        "resetSession",
        sidecar.result("resetSession", json!({"sessionId": "never-seen"})),
    ));
    // Flags: none, then a file with a version, then a broken file (error set); setFlag.
    responses.push(("getFlags", sidecar.result("getFlags", json!({}))));
    let flags_path = sidecar.home.join("feature_flags.json");
    std::fs::write(
        &flags_path,
        r#"{"_meta": {"version": "3"}, "flags": {"a": {"enabled": true, "rollout_percent": 5}}}"#,
    )
    .unwrap();
    responses.push(("getFlags", sidecar.result("getFlags", json!({}))));
    responses.push((
        "isEnabled",
        sidecar.result("isEnabled", json!({"flag": "a", "key": "k"})),
    ));
    responses.push((
        "setFlag",
        sidecar.result("setFlag", json!({"flag": "b", "enabled": true})),
    ));
    std::fs::write(&flags_path, "{").unwrap();
    let broken_flags = sidecar.result("getFlags", json!({}));
    assert!(broken_flags["error"].is_string());
    responses.push(("getFlags", broken_flags));
    // buildPrompt: defaults, every phase, with a context, another tokenizer is covered by units.
    responses.push((
        "buildPrompt",
        sidecar.result("buildPrompt", json!({"task": "Add pagination."})),
    ));
    for phase in ["summary", "standard", "full"] {
        responses.push((
            "buildPrompt",
            sidecar.result(
                "buildPrompt",
                json!({"task": "t", "disclosurePhase": phase, "sessionId": "s",
                    "context": {"b": [1, {"c": null}], "a": "x"}}),
            ),
        ));
    }
    // The circuit breaker: continue, warning, a streak halt, a fresh status, a reset.
    let key = json!({"tool": "pyright", "code": "reportAttributeAccessIssue", "file": "/src/d.py"});
    let many: Vec<Value> = (0..16)
        .map(|i| json!({"tool": "ruff", "code": "F401", "file": format!("/src/{i}.py")}))
        .collect();
    for errors in [
        json!([key]),
        json!(many),
        json!([key]),
        json!([key]),
        json!([key]),
        json!([]),
    ] {
        responses.push((
            "recordError",
            sidecar.result("recordError", json!({"sessionId": "b", "errors": errors})),
        ));
    }
    assert_eq!(responses[responses.len() - 5].1["state"], "warning");
    assert_eq!(responses.last().unwrap().1["state"], "halt");
    assert_eq!(responses.last().unwrap().1["trippedBy"]["streak"], 3);
    responses.push((
        "breakerStatus",
        sidecar.result("breakerStatus", json!({"sessionId": "b"})),
    ));
    responses.push((
        "breakerStatus",
        sidecar.result("breakerStatus", json!({"sessionId": "never-seen"})),
    ));
    responses.push((
        "resetBreaker",
        sidecar.result("resetBreaker", json!({"sessionId": "b"})),
    ));
    // status: healthy, then with a broken guideline file (line known) and a duplicate id.
    std::fs::remove_file(&flags_path).unwrap();
    let healthy = sidecar.result("status", json!({}));
    assert_eq!(healthy["guidebook"]["errors"], json!([]));
    responses.push(("status", healthy));
    write_guideline(
        &root,
        "broken",
        "id: broken\nmatch:\n  any:\n    - regex:\n        pattern: '('\ncontent: x\n",
    );
    write_guideline(&root, "unreadable", "");
    let broken = sidecar.wait_for_status("errors are reported", |s| {
        s["guidebook"]["errors"].as_array().unwrap().len() == 2
    });
    responses.push(("status", broken));
    // Params left out count as `{}`.
    let (_, body) = sidecar.raw(br#"{"jsonrpc":"2.0","id":7,"method":"status"}"#);
    let without_params: Value = serde_json::from_slice(&body).unwrap();
    responses.push(("status", without_params["result"].clone()));

    for (name, response) in &responses {
        assert_valid(&result_validator(&doc, name), name, response);
    }

    // The result schemas are not vacuous: they refuse what the contract rules out.
    let explain = result_validator(&doc, "explain");
    assert!(!explain.is_valid(
        &json!({"files": [{"path": "/a", "repository": null, "language": null,
        "skipped": null, "matches": [{"id": "x", "line": 0, "pattern": "p"}]}], "guidelines": []})
    ));
    assert!(!result_validator(&doc, "search")
        .is_valid(&json!([{"id": "x", "content": "c", "extra": 1}])));
    let build_prompt = result_validator(&doc, "buildPrompt");
    let good = json!({"prompt": "p", "phase": "full", "tokens": 1, "tokenizer": "cl100k_base", "truncated": false});
    assert!(build_prompt.is_valid(&good));
    for (key, bad) in [
        ("phase", json!("brief")),
        ("tokenizer", json!("p50k_base")),
        ("tokens", json!(-1)),
    ] {
        let mut v = good.clone();
        v[key] = bad;
        assert!(!build_prompt.is_valid(&v), "{key}");
    }
}

#[test]
fn every_error_code_the_server_produces_is_declared_for_its_method() {
    let doc = document();
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let components = &doc["components"]["errors"];
    let declared = |name: &str| -> Vec<i64> {
        let Some(m) = doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
        else {
            return Vec::new();
        };
        m["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| match e["$ref"].as_str() {
                        Some(r) => {
                            let key = r
                                .strip_prefix("#/components/errors/")
                                .expect("a components ref");
                            components[key]["code"].as_i64().unwrap()
                        }
                        None => e["code"].as_i64().unwrap(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // The JSON-RPC 2.0 standard codes, which the document's description lists for all methods.
    const STANDARD: [i64; 5] = [-32700, -32600, -32601, -32602, -32603];
    for case in error_cases() {
        let response: Value = serde_json::from_slice(&sidecar.raw(case.body.as_bytes()).1).unwrap();
        let (code, _) = rpc_error(&response);
        let known =
            STANDARD.contains(&code) || case.method.is_some_and(|m| declared(m).contains(&code));
        assert!(
            known,
            "{}: code {code} from {:?} is not declared",
            case.what, case.method
        );
    }
    // Method-specific codes are in the -32000..-32099 range, and each is declared.
    for m in doc["methods"].as_array().unwrap() {
        for code in declared(m["name"].as_str().unwrap()) {
            assert!(
                STANDARD.contains(&code) || (-32099..=-32000).contains(&code),
                "{code}"
            );
        }
    }
    assert!(
        declared("search").contains(&-32001),
        "deadline exceeded is declared for search"
    );
}
