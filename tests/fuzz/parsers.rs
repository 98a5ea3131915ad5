//! Fuzz targets of the daemon's file parsers: `guideline.yaml`, prompt packs and
//! `feature_flags.json`, on arbitrary text and on mangled copies of the sample guidebook. `Ok`
//! must mean usable (a guideline compiles into a snapshot, flags survive a write and re-read),
//! `Err` must say something. Reads: `guidebook/` (the sample). Writes: nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adaptive_guidebook::flags::file::{parse as parse_flags, serialize as serialize_flags};
use adaptive_guidebook::guidebook::{parse_guideline, GuidelineSnapshot};
use adaptive_guidebook::prompt::parse_pack;
use proptest::prelude::*;

use crate::watchdog::case;
use crate::{config, mutated, text};

fn sample(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("guidebook")
        .join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Inputs that have hurt YAML and regex users elsewhere: alias bombs, deep nesting, huge
/// repetitions, catastrophic-backtracking shapes.
fn hostile_guidelines() -> Vec<String> {
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        bomb.push_str(&format!(
            "{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n",
            n = (b'a' + i) as char,
            p = (b'a' + i - 1) as char
        ));
    }
    bomb.push_str("id: bomb\nmatch:\n  any:\n    - regex:\n        pattern: x\ncontent: *j\n");
    vec![
        bomb,
        format!(
            "id: deep\ncontent: {}x{}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
        "id: rep\nmatch:\n  any:\n    - regex:\n        pattern: 'a{1000}{1000}'\ncontent: c\n"
            .into(),
        "id: bt\nmatch:\n  any:\n    - regex:\n        pattern: '(a*)*b'\ncontent: c\n".into(),
        "id: uni\nmatch:\n  any:\n    - regex:\n        pattern: '\\w{500}'\ncontent: c\n".into(),
    ]
}

fn guideline_seeds() -> Vec<String> {
    let root = sample("guidelines");
    let mut seeds: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| read(&e.unwrap().path().join("guideline.yaml")))
        .collect();
    seeds.sort();
    seeds.extend(hostile_guidelines());
    seeds
}

proptest! {
    #![proptest_config(config(256))]

    /// `guideline.yaml`: `Ok` only for a guideline that compiles into a snapshot and can be
    /// matched; `Err` with a message otherwise.
    #[test]
    fn guideline_yaml_is_ok_and_servable_or_an_error(
        raw in prop_oneof![3 => mutated(guideline_seeds()), 1 => text()],
    ) {
        let path = Path::new("/g/fuzz/guideline.yaml");
        let parsed = case("parse_guideline", &raw, || parse_guideline(path, &raw));
        match parsed {
            Ok(g) => {
                prop_assert!(!g.id.is_empty());
                prop_assert!(!g.patterns.is_empty());
                prop_assert!(!g.content.trim().is_empty());
                let snapshot = case("GuidelineSnapshot::build", &raw, || {
                    GuidelineSnapshot::build(PathBuf::from("/g"), vec![Arc::new(g)], vec![])
                });
                let all = vec![true; 1];
                case("matching", &raw, || snapshot.matching(raw.as_bytes(), &all));
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }

    /// A prompt pack: `Ok` packs have what the phases need; `Err` says something.
    #[test]
    fn prompt_packs_are_ok_or_an_error(
        raw in prop_oneof![3 => mutated(vec![read(&sample("prompts/default.yaml"))]), 1 => text()],
    ) {
        let path = Path::new("/g/prompts/default.yaml");
        match case("parse_pack", &raw, || parse_pack(path, "default", &raw)) {
            Ok(pack) => {
                prop_assert_eq!(pack.core_constraints.len(), 3);
                prop_assert!(!pack.rules.is_empty() && !pack.examples.is_empty());
            }
            Err(e) => prop_assert!(!e.message.is_empty()),
        }
    }

    /// `feature_flags.json`, any bytes: `Ok` files survive the write `setFlag` does and read
    /// back equal; `Err` says where (`line:column: ...`) or why.
    #[test]
    fn flags_files_round_trip_or_are_an_error(
        raw in prop_oneof![
            3 => mutated(vec![read(&sample("feature_flags.json"))]).prop_map(String::into_bytes),
            1 => prop::collection::vec(any::<u8>(), 0..300),
            1 => text().prop_map(String::into_bytes),
        ],
    ) {
        match case("flags::file::parse", &raw, || parse_flags(&raw)) {
            Ok(file) => {
                let written = serialize_flags(&file);
                let reread = parse_flags(&written);
                prop_assert_eq!(reread.as_ref(), Ok(&file), "{}", String::from_utf8_lossy(&written));
                for def in file.flags.values() {
                    prop_assert!(def.rollout_percent <= 100);
                }
            }
            Err(message) => prop_assert!(!message.is_empty()),
        }
    }
}
