//! `guidebook/schema/config.schema.json` is true to the parser: it names exactly the keys
//! `config.yaml` accepts at every level, the documented examples pass both, and what the
//! sidecar refuses the schema refuses too.

use std::collections::BTreeSet;
use std::path::Path;

use adaptive_guidebook::config::{ConfigError, Overrides, Settings};
use jsonschema::{Draft, Validator};
use serde_json::Value;

use crate::harness::*;

fn schema() -> Value {
    let path = manifest_dir().join("guidebook/schema/config.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn validator() -> Validator {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema())
        .expect("the config schema compiles")
}

/// Settings resolved from `yaml` as config.yaml in a home of its own.
fn resolve(home: &Path, yaml: &str) -> Result<Settings, ConfigError> {
    let config = home.join("config.yaml");
    std::fs::write(&config, yaml).unwrap();
    Settings::resolve_with(&Overrides::default(), |key| match key {
        "ADAPTIVE_GUIDEBOOK_HOME" => Some(home.into()),
        "ADAPTIVE_GUIDEBOOK_CONFIG" => Some(config.clone().into()),
        "HOME" => Some(home.into()),
        _ => None,
    })
}

fn schema_errors(yaml: &str) -> Vec<String> {
    let value: Value = serde_yaml::from_str(yaml).unwrap();
    validator()
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// The keys the parser accepts where `wrap` puts an unknown one, read from serde's own
/// "unknown field `zz`, expected one of `a`, `b`" error.
fn parser_keys(wrap: &str) -> BTreeSet<String> {
    let home = tempfile::tempdir().unwrap();
    let err = resolve(home.path(), &wrap.replace("KEY", "zzUnknown"))
        .expect_err("an unknown key is an error")
        .to_string();
    let expected = err
        .split_once("expected")
        .unwrap_or_else(|| panic!("{wrap}: {err}"))
        .1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn schema_keys(at: &Value) -> BTreeSet<String> {
    at["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn the_schema_names_exactly_the_keys_the_parser_accepts() {
    let s = schema();
    let p = &s["properties"];
    let levels = [
        ("KEY: 1\n", &s),
        ("breaker: {KEY: 1}\n", &p["breaker"]),
        ("repositoryRules: {KEY: 1}\n", &p["repositoryRules"]),
        (
            "teamGuidebooks: [{name: a, url: b, KEY: 1}]\n",
            &p["teamGuidebooks"]["items"],
        ),
        ("teamMetrics: {KEY: 1}\n", &p["teamMetrics"]),
        (
            "teamMetrics: {basicAuth: {username: u, passwordFile: p, KEY: 1}}\n",
            &p["teamMetrics"]["properties"]["basicAuth"],
        ),
    ];
    for (wrap, at) in levels {
        assert_eq!(parser_keys(wrap), schema_keys(at), "{wrap}");
        assert!(
            !schema_errors(&wrap.replace("KEY", "zzUnknown")).is_empty(),
            "{wrap}"
        );
    }
}

/// Every `config.yaml` example in the guide passes the schema and the sidecar.
#[test]
fn the_documented_examples_pass_the_schema_and_the_sidecar() {
    let mut seen = 0;
    for doc in ["docs/guide/configuration.md", "docs/guide/team.md"] {
        let text = std::fs::read_to_string(manifest_dir().join(doc)).unwrap();
        for block in text.split("```yaml\n").skip(1) {
            let yaml = block.split("```").next().unwrap();
            if !yaml.contains("# config.yaml") && doc.ends_with("team.md") {
                continue;
            }
            let errors = schema_errors(yaml);
            assert!(errors.is_empty(), "{doc}:\n{yaml}\n{errors:?}");
            let home = tempfile::tempdir().unwrap();
            resolve(home.path(), yaml).unwrap_or_else(|e| panic!("{doc}:\n{yaml}\n{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 2, "the examples were found");
}

/// What the sidecar refuses, the schema refuses too.
#[test]
fn what_the_sidecar_refuses_the_schema_refuses() {
    let url = "teamMetrics:\n  remoteWriteUrl: https://p.example/api/v1/write\n";
    let bad = [
        "tokenizer: gpt2\n".to_string(),
        "breaker: {sameErrorLimit: 0}\n".into(),
        "teamGuidebooks: [{name: Acme, url: x}]\n".into(),
        "teamMetrics: {remoteWriteUrl: ftp://p.example/write}\n".into(),
        format!("{url}  intervalSeconds: 0\n"),
        format!("{url}  maxSeries: 10\n"),
        format!("{url}  labels: {{instance: laptop}}\n"),
        format!("{url}  labels: {{__name__: x}}\n"),
        format!("{url}  labels: {{team-name: x}}\n"),
        format!("{url}  labels: {{team: ''}}\n"),
        format!("{url}  bearerTokenFile: t\n  basicAuth: {{username: u, passwordFile: p}}\n"),
        format!("{url}  basicAuth: {{username: 'a:b', passwordFile: p}}\n"),
        format!("{url}  basicAuth: {{username: u}}\n"),
    ];
    for yaml in bad {
        let home = tempfile::tempdir().unwrap();
        assert!(
            resolve(home.path(), &yaml).is_err(),
            "the sidecar takes:\n{yaml}"
        );
        assert!(
            !schema_errors(&yaml).is_empty(),
            "the schema takes:\n{yaml}"
        );
    }
}
