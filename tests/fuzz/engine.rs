//! Differential test of the matching engine against the plain `regex` crate, pattern by pattern.
//!
//! Whatever the snapshot matches with (a literal automaton, confirmations at the hits), it
//! must agree with a reference that compiles every pattern on its own and tries it on the whole
//! file: on which guidelines match, and on each one's first matching line and pattern. Over
//! generated guidebooks and near-miss files (proptest), and over this repository's sources.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adaptive_guidebook::guidebook::{Guideline, GuidelineSnapshot};
use proptest::prelude::*;
use regex::bytes::{Regex, RegexBuilder};

use crate::config;
use crate::watchdog::case;

const WORDS: &[&str] = &[
    "Order", "Invoice", "Payment", "Customer", "Impl", "Builder", "Client", "Service", "todo",
];

/// One piece of a pattern: text the near-miss files are full of, and regex syntax around it.
fn piece() -> impl Strategy<Value = String> {
    let word = prop::sample::select(WORDS).prop_map(str::to_string);
    prop_oneof![
        4 => word.clone(),
        1 => Just(r"\b".to_string()),
        1 => Just(r"\s*".to_string()),
        1 => Just(r"\w+".to_string()),
        1 => Just(r"\(".to_string()),
        1 => Just(r"\d{2,}".to_string()),
        1 => Just("[-_ ]".to_string()),
        1 => Just("(?m)^".to_string()),
        1 => Just("$".to_string()),
        1 => (word.clone(), word.clone()).prop_map(|(a, b)| format!("({a}|{b})")),
        1 => word.clone().prop_map(|w| format!("({w})?")),
        1 => word.prop_map(|w| format!("(?i){w}")),
    ]
}

fn pattern() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..6).prop_map(|pieces| pieces.concat())
}

/// A file of identifiers that share words and prefixes with the patterns, calls, numbers and
/// newlines: mostly near misses, now and then a hit.
fn file() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        6 => prop::sample::select(WORDS).prop_map(str::to_string),
        1 => Just("(".to_string()),
        1 => Just(" ".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("-".to_string()),
        1 => "[0-9]{1,4}",
        1 => "[a-z]{1,3}",
        // A Unicode word character and a non-word one, next to which `\b` is decided by the
        // automata, not by the ASCII shortcut.
        1 => prop::sample::select(&["é", "€"][..]).prop_map(str::to_string),
    ];
    prop::collection::vec(token, 0..120).prop_map(|t| t.concat())
}

fn guideline(id: usize, patterns: Vec<String>) -> Arc<Guideline> {
    Arc::new(Guideline {
        id: format!("g{id:04}"),
        repositories: None,
        languages: None,
        paths: None,
        condition: adaptive_guidebook::guidebook::Condition::any_in_file(patterns.len()),
        patterns,
        content: "c".into(),
        source: PathBuf::from(format!("/g/g{id:04}/guideline.yaml")),
        id_line: None,
        examples: Vec::new(),
        indexes: Default::default(),
    })
}

fn reference_regex(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern).multi_line(true).build().ok()
}

/// The reference: each guideline's patterns compiled on their own and tried on the whole file;
/// per matching guideline, the line of its earliest match and the pattern that made it.
fn reference(guidelines: &[Arc<Guideline>], content: &[u8]) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for g in guidelines {
        let earliest = g
            .patterns
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((reference_regex(p)?.find(content)?.start(), i)))
            .min();
        if let Some((start, i)) = earliest {
            let line = content[..start].iter().filter(|b| **b == b'\n').count() + 1;
            out.push((g.id.clone(), line, g.patterns[i].clone()));
        }
    }
    out.sort();
    out
}

/// The engine's answer in the same shape: `matching`, then `first_match` per hit (as `explain`).
fn engine(snapshot: &GuidelineSnapshot, content: &[u8]) -> Vec<(String, usize, String)> {
    let all = vec![true; snapshot.guidelines.len()];
    let mut out: Vec<(String, usize, String)> = snapshot
        .matching(content, &all)
        .into_iter()
        .map(|i| {
            let (line, pattern) = snapshot
                .first_match(i, content)
                .expect("a matching guideline has a first match");
            (
                snapshot.guidelines[i].id().to_string(),
                line,
                pattern.to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn the_engine_agrees_with_regex_pattern_by_pattern(
        patterns in prop::collection::vec(prop::collection::vec(pattern(), 1..4), 1..40),
        files in prop::collection::vec(file(), 1..4),
    ) {
        let guidelines: Vec<Arc<Guideline>> = patterns
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                // Only patterns the loader would accept.
                let ok: Vec<String> = p.into_iter().filter(|p| reference_regex(p).is_some()).collect();
                guideline(i, if ok.is_empty() { vec!["Order".into()] } else { ok })
            })
            .collect();
        let snapshot = GuidelineSnapshot::build("/g".into(), guidelines.clone(), Vec::new());
        for content in &files {
            let got = case("engine vs regex", content, || engine(&snapshot, content.as_bytes()));
            prop_assert_eq!(got, reference(&guidelines, content.as_bytes()), "file {:?}", content);
        }
    }
}

/// This repository's own sources (anything under the listed directories that is text), with
/// the sample guidebook's patterns and a few hundred generated ones.
#[test]
fn the_engine_agrees_with_regex_on_this_repositorys_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut stack: Vec<PathBuf> = ["src", "hook-shim", "tests", "benches", "guidebook", "docs"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(text) = std::fs::read(&path) {
                files.push(text);
            }
        }
    }
    assert!(files.len() > 100, "found {} files", files.len());
    let sample = adaptive_guidebook::guidebook::Guidebook::load(root.join("guidebook")).snapshot();
    let mut guidelines: Vec<Arc<Guideline>> = sample
        .guidelines
        .iter()
        .map(|g| g.guideline.clone())
        .collect();
    // Patterns shaped like a team's: the words of this code base, in calls and declarations.
    let words = [
        "snapshot",
        "Guideline",
        "Engine",
        "session",
        "Stamp",
        "flags",
        "regex",
        "search",
    ];
    for (i, w) in words.iter().enumerate() {
        for (j, shape) in [
            format!(r"\b{w}\w*\("),
            format!(r"(?i)fn\s+{w}"),
            format!(r"let\s+\w*{w}\w*\s*="),
            format!(r"(?m)^\s*//.*{w}"),
            format!(r"{w}(s|es)?\."),
        ]
        .into_iter()
        .enumerate()
        {
            guidelines.push(guideline(1000 + i * 10 + j, vec![shape]));
        }
    }
    let snapshot = GuidelineSnapshot::build("/g".into(), guidelines.clone(), Vec::new());
    let mut hits = 0;
    for content in &files {
        let expected = reference(&guidelines, content);
        hits += expected.len();
        assert_eq!(engine(&snapshot, content), expected);
    }
    assert!(
        hits > 100,
        "the generated patterns should match this code base: {hits}"
    );
}
