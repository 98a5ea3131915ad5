//! Fuzz target of the JSON-RPC params: every method, through the real registration table
//! (`rpc::module`, so the real `rpc::parse` and handlers), gets arbitrary params (any JSON, and
//! objects whose real keys hold any value) and must answer with a result or one of its
//! documented errors: never a panic (-32603) or a hang. Reads: the sample guidebook. Writes: a
//! temp database and flags file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use adaptive_guidebook::config::{Overrides, Settings};
use adaptive_guidebook::engine::Engine;
use adaptive_guidebook::rpc;
use jsonrpsee::RpcModule;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::watchdog::case;
use crate::{config, json_value, text};

struct Target {
    runtime: tokio::runtime::Runtime,
    module: RpcModule<Engine>,
    /// Files `search` and `explain` may be pointed at: a matching one, a directory, a FIFO
    /// without a writer.
    files: Vec<String>,
    _dir: tempfile::TempDir,
}

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let overrides = Overrides {
            guidebook_root: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("guidebook")),
            db: Some(dir.path().join("fuzz.db")),
            socket: Some(dir.path().join("unused.sock")),
            flags: Some(dir.path().join("feature_flags.json")),
            ..Overrides::default()
        };
        let settings = Settings::resolve_with(&overrides, |k| {
            (k == "ADAPTIVE_GUIDEBOOK_HOME").then(|| home.clone().into_os_string())
        })
        .unwrap();
        let engine = Engine::open(settings).unwrap();
        let kotlin = dir.path().join("Main.kt");
        std::fs::write(
            &kotlin,
            "fun main() { GlobalScope.launch { } }\nThread.sleep(100)\n",
        )
        .unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let files = [
            kotlin,
            dir.path().to_path_buf(),
            fifo,
            PathBuf::from("/nonexistent/x.kt"),
        ]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
        Target {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap(),
            module: rpc::module(Arc::new(engine)),
            files,
            _dir: dir,
        }
    })
}

/// A plausible value for a param key, or anything at all.
fn value_for(key: &'static str) -> BoxedStrategy<Value> {
    let files = target().files.clone();
    let plausible: BoxedStrategy<Value> = match key {
        "sessionId" | "key" => prop_oneof![
            Just(json!("s1")),
            Just(json!("")),
            text().prop_map(Value::from)
        ]
        .boxed(),
        "filepaths" => prop::collection::vec(
            prop_oneof![
                prop::sample::select(files).prop_map(Value::from),
                text().prop_map(Value::from),
                json_value(),
            ],
            0..5,
        )
        .prop_map(Value::Array)
        .boxed(),
        "deadlineMs" | "maxTokens" | "rolloutPercent" => prop_oneof![
            (0u64..200).prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
        ]
        .boxed(),
        "task" => text().prop_map(Value::from).boxed(),
        "context" => prop::collection::btree_map("[a-z]{1,8}", json_value(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
        "role" => prop_oneof![
            Just(json!("default")),
            Just(json!("../../etc/passwd")),
            text().prop_map(Value::from)
        ]
        .boxed(),
        "disclosurePhase" => prop_oneof![
            prop::sample::select(vec!["summary", "standard", "full"]).prop_map(Value::from),
            text().prop_map(Value::from),
        ]
        .boxed(),
        "errors" => prop::collection::vec(
            prop_oneof![
                ("[a-z]{1,5}", "[A-Z0-9]{1,5}", "[a-z/.]{1,10}")
                    .prop_map(|(t, c, f)| json!({"tool": t, "code": c, "file": f})),
                json_value(),
            ],
            0..5,
        )
        .prop_map(Value::Array)
        .boxed(),
        "flag" => prop_oneof![
            prop::sample::select(vec!["hooks_enabled", "progressive_disclosure", "x"])
                .prop_map(Value::from),
            text().prop_map(Value::from),
        ]
        .boxed(),
        "enabled" => any::<bool>().prop_map(Value::from).boxed(),
        _ => json_value().boxed(),
    };
    prop_oneof![3 => plausible, 1 => json_value()].boxed()
}

/// Each method and the keys its params know.
const METHODS: &[(&str, &[&str])] = &[
    (
        "search",
        &["sessionId", "filepaths", "deadlineMs", "maxTokens"],
    ),
    ("explain", &["filepaths", "sessionId"]),
    ("resetSession", &["sessionId"]),
    (
        "buildPrompt",
        &["task", "context", "role", "disclosurePhase", "sessionId"],
    ),
    ("recordError", &["sessionId", "errors"]),
    ("breakerStatus", &["sessionId"]),
    ("resetBreaker", &["sessionId"]),
    ("getFlags", &[]),
    ("isEnabled", &["flag", "key"]),
    ("setFlag", &["flag", "enabled", "rolloutPercent"]),
    ("status", &[]),
    ("rpc.discover", &[]),
];

/// A method and params for it: its own keys (each present or not) holding plausible or any
/// values, sometimes an unknown key, sometimes not an object at all.
fn request() -> impl Strategy<Value = (String, Option<Value>)> {
    (0..METHODS.len()).prop_flat_map(|m| {
        let (method, keys) = METHODS[m];
        let fields: Vec<_> = keys
            .iter()
            .map(|&k| prop::option::weighted(0.8, value_for(k)).prop_map(move |v| (k, v)))
            .collect();
        let object = (
            fields,
            prop::option::weighted(0.1, ("[a-zA-Z]{1,8}", json_value())),
        )
            .prop_map(|(fields, extra)| {
                let mut o = serde_json::Map::new();
                for (k, v) in fields {
                    if let Some(v) = v {
                        o.insert(k.to_string(), v);
                    }
                }
                if let Some((k, v)) = extra {
                    o.insert(k, v);
                }
                Some(Value::Object(o))
            });
        let params = prop_oneof![
            8 => object,
            1 => json_value().prop_map(Some),
            1 => Just(None),
        ];
        params.prop_map(move |p| (method.to_string(), p))
    })
}

/// The error codes a method may answer with (`rpc-schema/openrpc.json`): invalid params, and
/// `search`'s deadline. Storage and flags-file errors cannot happen on a private database and a
/// flags file only `setFlag` writes, so they would be bugs here too.
const EXPECTED_ERRORS: [i64; 2] = [-32602, -32001];

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn every_method_answers_any_params_with_a_result_or_a_documented_error(
        (method, params) in request(),
    ) {
        let t = target();
        let mut request = json!({"jsonrpc": "2.0", "id": 1, "method": method});
        if let Some(p) = &params {
            request["params"] = p.clone();
        }
        let body = request.to_string();
        let (response, _) = case("rpc", &body, || {
            t.runtime.block_on(t.module.raw_json_request(&body, 1))
        })
        .expect("a valid JSON-RPC request");
        let response: Value = serde_json::from_str(response.get()).unwrap();
        if let Some(error) = response.get("error") {
            let code = error["code"].as_i64().unwrap();
            prop_assert!(
                EXPECTED_ERRORS.contains(&code),
                "{} {}: unexpected error {}", method, body, error
            );
            prop_assert!(!error["message"].as_str().unwrap_or("").is_empty());
        } else {
            prop_assert!(response.get("result").is_some(), "{}", response);
        }
    }
}
