//! Property-based fuzzing on stable Rust (proptest): every parser that takes outside input is fed
//! arbitrary and mutated input and must answer `Ok` or `Err` without panicking or hanging. Reads:
//! the committed fixtures and the sample guidebook as seed corpora. Writes: temp directories only.
//!
//! Targets: the hook shim's patch and summary parsers (through `changed_files`), `plan` on
//! arbitrary JSON, the ruff and pyright output parsers, the shim's JSON-RPC response parser,
//! `guideline.yaml`, prompt packs, `feature_flags.json`, and every JSON-RPC method's params
//! through the real registration table; and, differentially, the matching engine against the
//! plain `regex` crate pattern by pattern (`engine.rs`).
//!
//! The case count per target is proptest's `PROPTEST_CASES` (default here: 256, so the whole
//! set stays well under a minute in a debug build). A longer run:
//! `PROPTEST_CASES=100000 cargo test --release --test fuzz`. A case that runs longer than
//! [`watchdog::CASE_LIMIT`] aborts the process with the input that hung.

mod engine;
mod hook;
mod parsers;
mod rpc;
mod watchdog;

use proptest::prelude::*;
use proptest::test_runner::Config;

/// proptest's config for every target: `PROPTEST_CASES` or `default_cases`, no persisted
/// failure files (a failing input is printed, and belongs in a regression test).
pub fn config(default_cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Text that looks like what the parsers see: mostly printable ASCII with newlines, some of the
/// markers they look for, and occasionally any Unicode.
pub fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[ -~]{0,12}",
        2 => Just("\n".to_string()),
        1 => prop::sample::select(MARKERS).prop_map(str::to_string),
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

/// Substrings the parsers branch on, so that random text reaches their deeper paths.
const MARKERS: &[&str] = &[
    "*** Begin Patch\n",
    "*** End Patch\n",
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
    "Success. Updated the following files:\n",
    "A ",
    "M ",
    "D ",
    "apply_patch <<'EOF'\n",
    "EOF\n",
    "cd ",
    " && ",
    "<<-",
    "\"",
    "'",
    "ruff check .",
    "pyright",
    " - error: ",
    " (reportGeneralTypeIssues)",
    " --> ",
    ":12:5: E501 ",
    "All checks passed!",
    "0 errors, 0 warnings",
    "\u{1b}[31m",
    "[{\"code\":",
    "{\"generalDiagnostics\":[",
    "../",
    "/",
    "~",
    "$HOME",
];

/// A seed text with random edits applied: deletions, insertions, duplications and truncation,
/// the way a half-written or hand-mangled file looks.
pub fn mutated(seeds: Vec<String>) -> impl Strategy<Value = String> {
    let edit = (any::<u16>(), any::<u16>(), 0u8..5, text());
    (
        prop::sample::select(seeds),
        prop::collection::vec(edit, 0..6),
    )
        .prop_map(|(seed, edits)| {
            let mut s = seed.into_bytes();
            for (a, b, kind, insert) in edits {
                if s.is_empty() {
                    s.extend_from_slice(insert.as_bytes());
                    continue;
                }
                let at = a as usize % s.len();
                let len = (b as usize % 64).min(s.len() - at);
                match kind {
                    0 => {
                        s.drain(at..at + len);
                    }
                    1 => {
                        s.splice(at..at, insert.bytes());
                    }
                    2 => {
                        let copy = s[at..at + len].to_vec();
                        s.splice(at..at, copy);
                    }
                    3 => s.truncate(at),
                    _ => {
                        s.splice(at..at + len, insert.bytes());
                    }
                }
            }
            // The parsers take `&str`; cut at a byte boundary that may split a character.
            String::from_utf8_lossy(&s).into_owned()
        })
}

/// Any JSON value, nested a few levels, with strings from [`text`].
pub fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
