//! The token budget for what one hook injects: `search`'s `maxTokens` through the real shim
//! (which sends `ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS`, default 2,000) and the real sidecar.
//! Guidelines over the budget stay unpresented and come with the next change.

use std::collections::BTreeSet;

use adaptive_guidebook::tokens::Tokenizer;
use serde_json::{json, Value};

use crate::harness::*;

/// [`long_content`]'s size in `cl100k_base` tokens for every `n` below 100, as OpenAI's own
/// tokenizer counts it (Python `tiktoken`, with the `cl100k_base.tiktoken` ranks), not as this
/// crate does: the fixture is fixed text, so the number is a fact the product must agree with.
/// Four such guidelines fit a 2,000-token hook (1,672 tokens and their headers); a fifth would
/// not (2,090).
const LONG_CONTENT_TOKENS: usize = 418;

/// 418 cl100k tokens (see [`LONG_CONTENT_TOKENS`]) of distinct prose for guideline `n` < 100.
fn long_content(n: usize) -> String {
    let mut text = format!("Guideline number {n} for the payments service.\n");
    for i in 0..12 {
        text.push_str(&format!(
            "Rule {n}.{i}: keep handler {i} of module {n} small, log with the structured \
             logger, and cover edge case {i} with a test before merging.\n"
        ));
    }
    text
}

fn additional_context(stdout: &str) -> String {
    let value: Value = serde_json::from_str(stdout).unwrap();
    value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn twelve_long_guidelines_arrive_in_three_hooks_within_the_budget_none_twice_none_lost() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let mut expected = BTreeSet::new();
    for n in 0..12 {
        let id = format!("payments-rule-{n:02}");
        let content = long_content(n);
        // The sidecar's tokenizer agrees with OpenAI's on the fixture: a count that is off
        // would let a fifth guideline in, or keep a fourth out.
        assert_eq!(
            Tokenizer::Cl100k.count(&content),
            LONG_CONTENT_TOKENS,
            "{content}"
        );
        let yaml = format!(
            "id: {id}\nscope:\n  languages: [python]\nmatch:\n  any:\n    - regex:\n        \
             pattern: 'import'\ncontent: {}\n",
            serde_json::to_string(&content).unwrap()
        );
        write_guideline(&root, &id, &yaml);
        expected.insert(id);
    }
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("payments");
    git_repo(&repo, Some("git@github.com:acme/payments.git"));

    let mut delivered: Vec<String> = Vec::new();
    for round in 0..4 {
        // Each hook is a new change to a Python file that matches all twelve.
        let rel = format!("app/module_{round}.py");
        let content = format!("import os\nVALUE_{round} = os.getenv('X')\n");
        write_file(&repo, &rel, &content);
        let mut event = hook_event(
            "post_tool_use_apply_patch_add.json",
            "budget-session",
            &repo,
        );
        event["tool_input"]["command"] = json!(add_file_patch(&[(&rel, &content)]));
        event["tool_response"] = json!(apply_patch_response(&[&format!("A {rel}")]));
        let run = sidecar.hook(&event);
        if round == 3 {
            assert_eq!(run.stdout, "", "everything was delivered in three hooks");
            break;
        }
        assert_valid_hook_output(&run.stdout);
        let text = additional_context(&run.stdout);
        let tokens = Tokenizer::Cl100k.count(&text);
        assert!(tokens <= 2000, "hook {round}: {tokens} tokens");
        let ids: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix('[')?.strip_suffix(']'))
            .map(str::to_string)
            .collect();
        // Four blocks of ~400 tokens fit in 2,000; a fifth would not.
        assert_eq!(ids.len(), 4, "hook {round}: {ids:?} ({tokens} tokens)");
        delivered.extend(ids);
    }
    let unique: BTreeSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "none twice: {delivered:?}");
    assert_eq!(unique, expected, "none lost");
    // In id order across the hooks.
    let mut sorted = delivered.clone();
    sorted.sort();
    assert_eq!(delivered, sorted);
}

#[test]
fn max_tokens_in_search_records_only_what_it_returns_and_always_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    for n in 0..3 {
        write_guideline(
            &root,
            &format!("g{n}"),
            &format!(
                "id: g{n}\nmatch:\n  any:\n    - regex:\n        pattern: 'x'\ncontent: {}\n",
                serde_json::to_string(&long_content(n)).unwrap()
            ),
        );
    }
    let sidecar = Sidecar::start(&root);
    let file = write_file(dir.path(), "a.txt", "x\n");
    let paths = json!([file.display().to_string()]);
    // A budget smaller than any one guideline still delivers the first.
    let first = sidecar.result(
        "search",
        json!({"sessionId": "s", "filepaths": paths, "maxTokens": 10}),
    );
    assert_eq!(ids(&first), ["g0"]);
    let explained = sidecar.result("explain", json!({"sessionId": "s", "filepaths": paths}));
    let presented: Vec<bool> = explained["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["alreadyPresented"].as_bool().unwrap())
        .collect();
    assert_eq!(
        presented,
        [true, false, false],
        "only what was returned is recorded"
    );
    // Room for two more.
    let rest = sidecar.result(
        "search",
        json!({"sessionId": "s", "filepaths": paths, "maxTokens": 1000}),
    );
    assert_eq!(ids(&rest), ["g1", "g2"]);
    // Without a budget: everything, as before.
    let all = sidecar.result("search", json!({"sessionId": "other", "filepaths": paths}));
    assert_eq!(ids(&all), ["g0", "g1", "g2"]);
    let (code, message) = sidecar.error(
        "search",
        json!({"sessionId": "s", "filepaths": paths, "maxTokens": -5}),
    );
    assert_eq!(code, -32602);
    assert!(message.contains("maxTokens"), "{message}");
}

/// The exact vocabulary (tens of MiB) is built only when a text could exceed its budget: a
/// token is at least one byte, so a hook text no longer than its budget in bytes needs no
/// count. `status` says whether this sidecar has built it.
#[test]
fn a_search_whose_text_is_small_never_loads_the_vocabulary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(
        &root,
        "short",
        "id: short\nmatch:\n  any:\n    - regex:\n        pattern: 'import'\ncontent: Keep imports sorted.\n",
    );
    let sidecar = Sidecar::start(&root);
    let loaded = |sidecar: &Sidecar| {
        let status = sidecar.result("status", json!({}));
        assert_eq!(status["tokenizer"]["name"], "cl100k_base");
        status["tokenizer"]["vocabularyLoaded"].as_bool().unwrap()
    };
    assert!(!loaded(&sidecar), "nothing counted yet");
    let file = write_file(dir.path(), "app/a.py", "import os\n");
    let params = |session: &str, max_tokens: u64| json!({"sessionId": session, "filepaths": [file.display().to_string()], "maxTokens": max_tokens});
    assert_eq!(
        ids(&sidecar.result("search", params("s1", 2000))),
        ["short"]
    );
    assert!(!loaded(&sidecar), "a small text was counted");
    // A budget smaller than the text in bytes needs the exact count.
    assert_eq!(ids(&sidecar.result("search", params("s2", 20))), ["short"]);
    assert!(loaded(&sidecar));
}
