//! The `feature_flags.json` format: its serde shapes, validated while they are deserialised so
//! every error carries line and column, and its serialisation for writes. Mirrors
//! `guidebook/schema/feature_flags.schema.json`. Pure: reads and writes bytes, not files.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The whole file: `{ "_meta": {...}, "flags": { name: {...} } }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagsFile {
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    pub flags: BTreeMap<FlagName, FlagDef>,
}

/// `_meta`: who last changed the file, and when.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// A string or an integer, kept as written.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "version"
    )]
    pub version: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

/// One flag as written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagDef {
    pub enabled: bool,
    #[serde(default)]
    pub description: String,
    #[serde(default = "full_rollout", deserialize_with = "percent")]
    pub rollout_percent: u8,
    #[serde(default)]
    pub owner: String,
}

impl FlagDef {
    /// A flag created by `setFlag`: off, for everyone, with no description or owner yet.
    pub fn new_off() -> FlagDef {
        FlagDef {
            enabled: false,
            description: String::new(),
            rollout_percent: 100,
            owner: String::new(),
        }
    }
}

fn full_rollout() -> u8 {
    100
}

/// A flag's name: letters, digits and `_`, starting with a letter, so that
/// `FF_OVERRIDE_<NAME>` is a valid environment variable name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct FlagName(String);

impl FlagName {
    pub fn parse(name: &str) -> Result<FlagName, String> {
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= 128;
        if valid {
            Ok(FlagName(name.to_string()))
        } else {
            Err(format!(
                "`{name}` is not a valid flag name: use letters, digits and `_`, starting with a \
                 letter (at most 128)"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The environment variable that overrides this flag.
    pub fn override_var(&self) -> String {
        format!("{OVERRIDE_PREFIX}{}", self.0.to_ascii_uppercase())
    }
}

/// Environment variables named `FF_OVERRIDE_<NAME>` override flag `<name>`.
pub const OVERRIDE_PREFIX: &str = "FF_OVERRIDE_";

impl<'de> Deserialize<'de> for FlagName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FlagName::parse(&s).map_err(serde::de::Error::custom)
    }
}

fn percent<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let n = u64::deserialize(d)?;
    if n > 100 {
        return Err(serde::de::Error::custom(format!(
            "rollout_percent {n} is out of range 0..=100"
        )));
    }
    Ok(n as u8)
}

fn version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    let v = Value::deserialize(d)?;
    match v {
        Value::String(_) => Ok(Some(v)),
        Value::Number(ref n) if n.is_u64() || n.is_i64() => Ok(Some(v)),
        other => Err(serde::de::Error::custom(format!(
            "version must be a string or an integer, not {other}"
        ))),
    }
}

/// The largest flags file read; anything bigger is certainly not a flags file.
pub const MAX_FLAGS_FILE_BYTES: usize = 1024 * 1024;

/// Parses and validates a flags file. The error is one line: `line:column: where: what`.
pub fn parse(bytes: &[u8]) -> Result<FlagsFile, String> {
    if bytes.len() > MAX_FLAGS_FILE_BYTES {
        return Err(format!(
            "{} bytes is larger than the {MAX_FLAGS_FILE_BYTES}-byte limit for a flags file",
            bytes.len()
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let file: FlagsFile = serde_path_to_error::deserialize(&mut de).map_err(describe)?;
    de.end().map_err(|e| describe_json(&e, None))?;
    Ok(file)
}

fn describe(e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    // `?` is serde_path_to_error's placeholder for "somewhere it could not name".
    let path = (path != "." && !path.contains('?')).then_some(path);
    describe_json(e.inner(), path.as_deref())
}

fn describe_json(e: &serde_json::Error, path: Option<&str>) -> String {
    let message = e.to_string();
    // serde_json appends " at line L column C"; we lead with it instead.
    let message = message
        .split(" at line ")
        .next()
        .unwrap_or(&message)
        .to_string();
    match path {
        Some(p) => format!("{}:{}: {p}: {message}", e.line(), e.column()),
        None => format!("{}:{}: {message}", e.line(), e.column()),
    }
}

/// The file as written by `setFlag`: pretty JSON, keys in a fixed order, a final newline.
pub fn serialize(file: &FlagsFile) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(file).expect("flags serialise");
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../guidebook/feature_flags.json");

    #[test]
    fn the_sample_holds_the_six_flags() {
        let file = parse(SAMPLE.as_bytes()).unwrap();
        let names: Vec<&str> = file.flags.keys().map(FlagName::as_str).collect();
        for name in [
            "progressive_disclosure",
            "worktree_readonly",
            "hooks_enabled",
            "ab_test_haiku",
            "trust_summary",
            "model_map",
        ] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let ab = &file.flags[&FlagName::parse("ab_test_haiku").unwrap()];
        assert_eq!(ab.rollout_percent, 50);
        let meta = file.meta.unwrap();
        assert!(meta.version.is_some() && meta.updated_at.is_some() && meta.updated_by.is_some());
    }

    #[test]
    fn errors_carry_line_column_and_where() {
        let cases = [
            ("", "1:0: EOF while parsing"),
            ("{\"flags\": {\"a\": {\"enabled\": tru", "1:"),
            ("not json", "1:2: expected ident"),
            (
                "{\"flags\": {\"a\": {\"enabled\": true,\n \"rollout_percent\": 150}}}",
                "2:24: flags.a.rollout_percent: rollout_percent 150 is out of range",
            ),
            (
                "{\"flags\": {\"a\": {\"enabled\": true, \"rollout\": 5}}}",
                "flags.a.rollout: unknown field `rollout`",
            ),
            (
                "{\"flags\": {\"bad-name\": {\"enabled\": true}}}",
                "`bad-name` is not a valid flag name",
            ),
            ("{\"flags\": {\"a\": {}}}", "missing field `enabled`"),
            ("{\"_meta\": {}}", "missing field `flags`"),
            ("{\"flags\": {}} trailing", "1:15: trailing characters"),
            (
                "{\"_meta\": {\"version\": 1.5}, \"flags\": {}}",
                "version must be a string or an integer",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn defaults_and_round_trip() {
        let file = parse(br#"{"flags": {"x": {"enabled": true}}}"#).unwrap();
        let x = &file.flags[&FlagName::parse("x").unwrap()];
        assert_eq!(x.rollout_percent, 100);
        assert_eq!(parse(&serialize(&file)).unwrap(), file);
        let sample = parse(SAMPLE.as_bytes()).unwrap();
        assert_eq!(parse(&serialize(&sample)).unwrap(), sample);
    }

    #[test]
    fn the_json_schema_and_the_validator_agree() {
        let schema: Value = serde_json::from_str(include_str!(
            "../../guidebook/schema/feature_flags.schema.json"
        ))
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let good = [
            SAMPLE,
            r#"{"flags": {}}"#,
            r#"{"flags": {"a1_b": {"enabled": false, "rollout_percent": 0}}}"#,
            r#"{"_meta": {"version": "2"}, "flags": {}}"#,
        ];
        let bad = [
            r#"{}"#,
            r#"{"flags": {"a": {"enabled": "yes"}}}"#,
            r#"{"flags": {"a": {"enabled": true, "rollout_percent": 101}}}"#,
            r#"{"flags": {"a": {"enabled": true, "rollout_percent": -1}}}"#,
            r#"{"flags": {"a": {"enabled": true, "extra": 1}}}"#,
            r#"{"flags": {"1a": {"enabled": true}}}"#,
            r#"{"flags": {}, "other": 1}"#,
            r#"{"_meta": {"version": 1.5}, "flags": {}}"#,
            r#"{"_meta": {"who": "x"}, "flags": {}}"#,
        ];
        for text in good {
            let v: Value = serde_json::from_str(text).unwrap();
            assert!(validator.is_valid(&v), "the schema refused:\n{text}");
            assert!(
                parse(text.as_bytes()).is_ok(),
                "the validator refused:\n{text}"
            );
        }
        for text in bad {
            let v: Value = serde_json::from_str(text).unwrap();
            assert!(!validator.is_valid(&v), "the schema accepted:\n{text}");
            assert!(
                parse(text.as_bytes()).is_err(),
                "the validator accepted:\n{text}"
            );
        }
    }
}
