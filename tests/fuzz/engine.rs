//! Differential test of the matching engine against the plain `regex` crate, pattern by pattern.
//!
//! Whatever the snapshot matches with (a literal automaton, confirmations at the hits), it
//! must agree with a reference that compiles every pattern on its own and tries it on the whole
//! file: on which guidelines match, and on each one's first matching line and pattern. Over
//! generated guidebooks and near-miss files (proptest), and over this repository's sources.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adaptive_guidebook::guidebook::{
    Condition, Edit, FilePlace, Guideline, GuidelineSnapshot, Text, Within, Written,
};
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
        severity: Default::default(),
        condition: adaptive_guidebook::guidebook::Condition::any_in_file(patterns.len()),
        patterns,
        content: "c".into(),
        source: PathBuf::from(format!("/g/g{id:04}/guideline.yaml")),
        origin: Default::default(),
        id_line: None,
        examples: Vec::new(),
        indexes: Default::default(),
    })
}

fn reference_regex(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern).multi_line(true).build().ok()
}

/// Whether `condition` holds when leaf `p` holds exactly when `held(p)`.
fn holds(condition: &Condition, held: &dyn Fn(usize) -> bool) -> bool {
    match condition {
        Condition::Any(m) => m.iter().any(|c| holds(c, held)),
        Condition::All(m) => m.iter().all(|c| holds(c, held)),
        Condition::Not(c) => !holds(c, held),
        Condition::Regex { pattern, .. } | Condition::Ast { pattern, .. } => held(*pattern),
    }
}

/// The patterns of the leaves not under an odd number of `not`s.
fn positive(condition: &Condition, negated: bool, out: &mut Vec<usize>) {
    match condition {
        Condition::Any(m) | Condition::All(m) => m.iter().for_each(|c| positive(c, negated, out)),
        Condition::Not(c) => positive(c, !negated, out),
        Condition::Regex { pattern, .. } | Condition::Ast { pattern, .. } => {
            if !negated {
                out.push(*pattern)
            }
        }
    }
}

/// The reference: each guideline's patterns compiled on their own and tried on the whole file
/// (every line written), its condition evaluated on that; per matching guideline, the line of
/// the earliest match of a leaf not under `not` and the pattern that made it.
fn reference(guidelines: &[Arc<Guideline>], content: &[u8]) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    for g in guidelines {
        let found: Vec<Option<usize>> = g
            .patterns
            .iter()
            .map(|p| Some(reference_regex(p)?.find(content)?.start()))
            .collect();
        if !holds(&g.condition, &|p| found[p].is_some()) {
            continue;
        }
        let mut leaves = Vec::new();
        positive(&g.condition, false, &mut leaves);
        let earliest = leaves
            .into_iter()
            .filter_map(|i| Some((found[i]?, i)))
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

/// A random condition over leaves `0..leaves` (each leaf used once, in order), at most three
/// levels deep, each leaf looking at the file or at the changes.
fn condition(leaves: usize) -> impl Strategy<Value = Condition> {
    let within = prop::sample::select(&[Within::File, Within::Changes][..]);
    prop::collection::vec(within, leaves).prop_flat_map(move |withins| {
        let shape = prop::collection::vec(0u8..6, 3 * leaves);
        shape.prop_map(move |choices| {
            let mut next = 0;
            let mut pick = choices.into_iter().cycle();
            build(&withins, &mut next, &mut pick, 0)
        })
    })
}

fn build(
    withins: &[Within],
    next: &mut usize,
    pick: &mut impl Iterator<Item = u8>,
    depth: usize,
) -> Condition {
    let leaf = |next: &mut usize| {
        let p = (*next).min(withins.len() - 1);
        *next += 1;
        Condition::Regex {
            pattern: p,
            within: withins[p],
        }
    };
    if depth == 3 || *next + 1 >= withins.len() {
        return match pick.next() {
            Some(0) => Condition::Not(Box::new(leaf(next))),
            _ => leaf(next),
        };
    }
    match pick.next().unwrap_or(0) {
        0 => Condition::Not(Box::new(build(withins, next, pick, depth + 1))),
        1 | 2 => Condition::Any(vec![
            build(withins, next, pick, depth + 1),
            build(withins, next, pick, depth + 1),
        ]),
        3 | 4 => Condition::All(vec![
            build(withins, next, pick, depth + 1),
            build(withins, next, pick, depth + 1),
        ]),
        _ => leaf(next),
    }
}

/// Whether `regex` has a match in `content` that counts for `within`, written lines being
/// `written` (1-based, inclusive) — by brute force over every match and the lines it spans.
fn reference_leaf(
    regex: &Regex,
    within: Within,
    content: &[u8],
    written: &[(usize, usize)],
) -> bool {
    let line_of = |at: usize| content[..at].iter().filter(|b| **b == b'\n').count() + 1;
    match within {
        Within::File => regex.is_match(content),
        Within::Changes => regex.find_iter(content).any(|m| {
            let (first, last) = (
                line_of(m.start()),
                line_of(m.end().saturating_sub(1).max(m.start())),
            );
            (first..=last).any(|l| written.iter().any(|(a, b)| *a <= l && l <= *b))
        }),
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// Composed conditions with `file` and `changes` leaves, over random written lines: the
    /// snapshot (literal index over the required leaves, then each condition) answers as a
    /// brute-force evaluation of every leaf does.
    #[test]
    fn composed_conditions_on_written_lines_agree_with_brute_force(
        sets in prop::collection::vec(
            prop::collection::vec(pattern(), 2..5).prop_flat_map(|p| {
                let n = p.len();
                (Just(p), condition(n))
            }),
            1..12,
        ),
        content in file(),
        written in prop::collection::vec((1usize..8, 0usize..3), 0..3),
    ) {
        let written: Vec<(usize, usize)> = written.into_iter().map(|(a, n)| (a, a + n)).collect();
        let guidelines: Vec<Arc<Guideline>> = sets
            .into_iter()
            .enumerate()
            .map(|(i, (patterns, condition))| {
                let patterns: Vec<String> = patterns
                    .into_iter()
                    .map(|p| if reference_regex(&p).is_some() { p } else { "Order".into() })
                    .collect();
                Arc::new(Guideline {
                    id: format!("g{i:04}"),
                    repositories: None,
                    languages: None,
                    paths: None,
                    severity: Default::default(),
                    condition,
                    patterns,
                    content: "c".into(),
                    source: PathBuf::from(format!("/g/g{i:04}/guideline.yaml")),
                    origin: Default::default(),
                    id_line: None,
                    examples: Vec::new(),
                    indexes: Default::default(),
                })
            })
            .collect();
        let snapshot = GuidelineSnapshot::build("/g".into(), guidelines.clone(), Vec::new());
        let all = vec![true; guidelines.len()];
        let text = Text::new(content.as_bytes());
        let edit = Edit::known(Written::lines(
            written.iter().map(|&(a, b)| [a, b]).collect::<Vec<_>>(),
        ));
        let got: Vec<String> = snapshot
            .matching_in(&text, &all, FilePlace::Unchecked, &edit)
            .into_iter()
            .map(|i| snapshot.guidelines[i].id().to_string())
            .collect();
        let expected: Vec<String> = guidelines
            .iter()
            .filter(|g| {
                let regexes: Vec<Regex> = g.patterns.iter().map(|p| reference_regex(p).unwrap()).collect();
                let within: Vec<Within> = g.condition.leaves().into_iter().map(|(_, w, _)| w).collect();
                let mut by_pattern = vec![Within::File; g.patterns.len()];
                for ((p, _, _), w) in g.condition.leaves().into_iter().zip(within) {
                    by_pattern[p] = w;
                }
                holds(&g.condition, &|p| {
                    reference_leaf(&regexes[p], by_pattern[p], content.as_bytes(), &written)
                })
            })
            .map(|g| g.id.clone())
            .collect();
        prop_assert_eq!(got, expected, "written {:?}, content {:?}", written, content);
    }
}
