//! The protocol-drift test: the clients' params builders (`guidebook_hook::protocol`) against
//! the daemon's `rpc/<method>.rs` `Params`, the OpenRPC document, and a real sidecar.

use std::collections::BTreeSet;
use std::fmt;

use adaptive_guidebook::rpc;
use guidebook_hook::protocol::{
    method, no_params, AbAssign, BeginShellCommand, BuildPrompt, Call, CheckEdit, CheckError,
    EndShellCommand, Explain, IsEnabled, RecordError, RecordQcResult, RecordQcReview,
    RecordSessionTokens, Search, SessionCall, SetFlag,
};
use serde::de::{self, DeserializeOwned, Visitor};
use serde_json::Value;

use crate::harness::Sidecar;

/// Every method once, through its builder, with every optional member filled in, next to the
/// member names the daemon's `Params` accepts.
/// A call, the member names its daemon `Params` accepts, and whether they parse its params.
type Probe = (
    Call,
    &'static [&'static str],
    fn(&str) -> Result<(), String>,
);

fn every_call() -> Vec<Probe> {
    let context: serde_json::Map<String, Value> =
        serde_json::from_str(r#"{"ticket": "T-1"}"#).unwrap();
    vec![
        (
            Search {
                session_id: "s".into(),
                filepaths: vec!["/nonexistent/a.kt".into()],
                written: vec![("/nonexistent/a.kt".into(), vec![[1, 2]].into())],
                contents: vec![("/nonexistent/a.kt".into(), "x\n".into())],
                deadline_ms: Some(5000),
                max_tokens: Some(2000),
            }
            .call(),
            fields_of::<rpc::search::Params>(),
            parses::<rpc::search::Params>,
        ),
        (
            Explain {
                filepaths: vec!["/nonexistent/a.kt".into()],
                session_id: Some("s".into()),
            }
            .call(),
            fields_of::<rpc::explain::Params>(),
            parses::<rpc::explain::Params>,
        ),
        (
            SessionCall::reset_session("s").call(),
            fields_of::<rpc::reset_session::Params>(),
            parses::<rpc::reset_session::Params>,
        ),
        (
            BuildPrompt {
                task: "Add a field".into(),
                context: Some(context),
                role: Some("default".into()),
                disclosure_phase: Some("summary".into()),
                session_id: Some("s".into()),
            }
            .call(),
            fields_of::<rpc::build_prompt::Params>(),
            parses::<rpc::build_prompt::Params>,
        ),
        (
            no_params(method::STATUS),
            fields_of::<rpc::status::Params>(),
            parses::<rpc::status::Params>,
        ),
        (
            no_params(method::GET_FLAGS),
            fields_of::<rpc::get_flags::Params>(),
            parses::<rpc::get_flags::Params>,
        ),
        (
            IsEnabled {
                flag: "hooks_enabled".into(),
                key: Some("s".into()),
            }
            .call(),
            fields_of::<rpc::is_enabled::Params>(),
            parses::<rpc::is_enabled::Params>,
        ),
        (
            SetFlag {
                flag: "drift_probe".into(),
                enabled: Some(true),
                rollout_percent: Some(50),
            }
            .call(),
            fields_of::<rpc::set_flag::Params>(),
            parses::<rpc::set_flag::Params>,
        ),
        (
            RecordError {
                session_id: "s".into(),
                errors: vec![CheckError {
                    tool: "ruff".into(),
                    code: "F401".into(),
                    file: "/p/a.py".into(),
                }],
            }
            .call(),
            fields_of::<rpc::record_error::Params>(),
            parses::<rpc::record_error::Params>,
        ),
        (
            SessionCall::breaker_status("s").call(),
            fields_of::<rpc::breaker_status::Params>(),
            parses::<rpc::breaker_status::Params>,
        ),
        (
            SessionCall::reset_breaker("s").call(),
            fields_of::<rpc::reset_breaker::Params>(),
            parses::<rpc::reset_breaker::Params>,
        ),
        (
            RecordQcResult {
                task_id: "drift-task".into(),
                session_id: Some("s".into()),
                passed: false,
                issue_type: Some("other".into()),
                duration_sec: 1.5,
                model: "sonnet".into(),
            }
            .call(),
            fields_of::<rpc::record_qc_result::Params>(),
            parses::<rpc::record_qc_result::Params>,
        ),
        (
            RecordQcReview {
                task_id: "drift-passed".into(),
                defect_found: false,
                reviewer: Some("person".into()),
            }
            .call(),
            fields_of::<rpc::record_qc_review::Params>(),
            parses::<rpc::record_qc_review::Params>,
        ),
        (
            RecordSessionTokens {
                session_id: "s".into(),
                tokens: 1000,
            }
            .call(),
            fields_of::<rpc::record_session_tokens::Params>(),
            parses::<rpc::record_session_tokens::Params>,
        ),
        (
            AbAssign {
                task_id: "drift-task".into(),
            }
            .call(),
            fields_of::<rpc::ab_assign::Params>(),
            parses::<rpc::ab_assign::Params>,
        ),
        (
            BeginShellCommand {
                session_id: "s".into(),
                call_id: "cmd-1".into(),
                dir: Some("/nonexistent".into()),
                targets: vec!["/nonexistent/a.kt".into()],
                mentioned: vec!["/nonexistent/b.kt".into()],
            }
            .call(),
            fields_of::<rpc::begin_shell_command::Params>(),
            parses::<rpc::begin_shell_command::Params>,
        ),
        (
            EndShellCommand {
                session_id: "s".into(),
                call_id: "cmd-1".into(),
                dir: Some("/nonexistent".into()),
                targets: vec!["/nonexistent/a.kt".into()],
                deadline_ms: Some(5000),
                max_tokens: Some(2000),
            }
            .call(),
            fields_of::<rpc::end_shell_command::Params>(),
            parses::<rpc::end_shell_command::Params>,
        ),
        (
            CheckEdit {
                session_id: "s".into(),
                filepaths: vec!["/nonexistent/a.kt".into()],
                deadline_ms: Some(500),
                written: vec![("/nonexistent/a.kt".into(), vec![[1, 1]].into())],
                contents: vec![("/nonexistent/a.kt".into(), "x\n".into())],
            }
            .call(),
            fields_of::<rpc::check_edit::Params>(),
            parses::<rpc::check_edit::Params>,
        ),
        (
            no_params(method::DISCOVER),
            fields_of::<rpc::discover::Params>(),
            parses::<rpc::discover::Params>,
        ),
    ]
}

fn parses<T: DeserializeOwned>(params: &str) -> Result<(), String> {
    serde_json::from_str::<T>(params)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn every_builder_sends_exactly_the_members_the_daemon_accepts() {
    let calls = every_call();
    let methods: Vec<&str> = calls.iter().map(|(call, ..)| call.method).collect();
    assert_eq!(methods, method::ALL, "one builder per method, in order");
    for (call, fields, parses) in &calls {
        let sent: BTreeSet<String> = match call.params_value() {
            Value::Object(members) => members.keys().cloned().collect(),
            other => panic!("{}: params are not an object: {other}", call.method),
        };
        let accepted: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            sent, accepted,
            "{}: the builder's members (left) and the daemon's Params (right) differ",
            call.method
        );
        parses(&call.params).unwrap_or_else(|e| panic!("{}: {e}", call.method));
    }
}

#[test]
fn the_openrpc_document_describes_every_builder_and_its_members() {
    let doc: Value = serde_json::from_str(rpc::discover::OPENRPC_DOCUMENT).unwrap();
    let described: Vec<&str> = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    let mut builders: Vec<&str> = method::ALL.to_vec();
    let mut described_sorted = described.clone();
    builders.sort_unstable();
    described_sorted.sort_unstable();
    assert_eq!(described_sorted, builders);
    for (call, ..) in every_call() {
        let method = doc["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == call.method)
            .unwrap();
        let documented: BTreeSet<String> = method["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        let sent: BTreeSet<String> = call
            .params_value()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(sent, documented, "{}", call.method);
    }
}

#[test]
fn a_real_sidecar_answers_every_builder_without_a_params_error() {
    let sidecar = Sidecar::start_default();
    // Only a QC pass is re-reviewed: the review's task passed first.
    let pass = RecordQcResult {
        task_id: "drift-passed".into(),
        passed: true,
        duration_sec: 3.0,
        model: "sonnet".into(),
        ..RecordQcResult::default()
    }
    .call();
    sidecar.result(pass.method, pass.params_value());
    for (call, ..) in every_call() {
        let response = sidecar.call(call.method, call.params_value());
        if let Some(error) = response.get("error") {
            let code = error["code"].as_i64().unwrap_or(0);
            assert!(code != -32601 && code != -32602, "{}: {error}", call.method);
        }
        assert!(
            response.get("result").is_some() || response.get("error").is_some(),
            "{}: {response}",
            call.method
        );
    }
}

/// The member names a `Deserialize` struct accepts, as serde's derive hands them to
/// `deserialize_struct` (after `rename_all`).
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields = None;
    let _ = T::deserialize(FieldsProbe(&mut fields));
    fields.expect("a struct with named fields")
}

struct FieldsProbe<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Probed;

impl fmt::Display for Probed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Probed
    }
}

impl<'de> de::Deserializer<'de> for FieldsProbe<'_> {
    type Error = Probed;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        *self.0 = Some(fields);
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}
