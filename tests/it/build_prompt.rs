//! `buildPrompt` through the real daemon: defaults, errors, the flag-off path (every phase is
//! `full`, byte for byte), the golden `full` prompt, live reload of prompt packs with last-good
//! semantics, and `guidebook prompt`. Token counts are checked with tiktoken-rs, a BPE
//! implementation independent of the one the sidecar uses.

use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

const CRITICAL_LABELS: [&str; 3] = ["금지행위", "QC 의무", "보고 형식"];

/// The fixed request the golden file pins.
fn golden_params(phase: &str) -> Value {
    json!({
        "task": "Fix the N+1 query in `OrderRepository.findAllWithItems()`: the order list API takes 2.3 s for 500 orders. Keep the response shape unchanged.",
        "context": {
            "ticket": "ORD-1287",
            "repository": "acme/backend-order",
            "files": ["orders/repository.py", "tests/orders/test_repository.py"],
            "limits": {"p95Ms": 300, "maxQueries": 3}
        },
        "disclosurePhase": phase,
        "sessionId": "golden-session"
    })
}

fn cl100k(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len()
}

fn prompt_of(result: &Value) -> &str {
    result["prompt"].as_str().expect("a prompt string")
}

#[test]
fn build_prompt_defaults_to_the_full_default_pack_counted_with_cl100k() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let task = "Add pagination to GET /orders.";
    let r = sidecar.result("buildPrompt", json!({"task": task}));
    assert_eq!(r["phase"], "full");
    assert_eq!(r["tokenizer"], "cl100k_base");
    assert_eq!(r["truncated"], false);
    let prompt = prompt_of(&r);
    assert!(prompt.starts_with("[CRITICAL]"), "{prompt}");
    for label in CRITICAL_LABELS {
        assert!(prompt.contains(label), "{label}");
    }
    assert!(prompt.contains(&format!("## Task\n{task}")), "{prompt}");
    assert_eq!(r["tokens"].as_u64().unwrap() as usize, cl100k(prompt));
    let tokens = r["tokens"].as_u64().unwrap();
    assert!(
        (2_500..=3_600).contains(&tokens),
        "full is about 3,000 tokens: {tokens}"
    );
    // Explicit defaults give the same bytes.
    let explicit = sidecar.result(
        "buildPrompt",
        json!({"task": task, "role": "default", "disclosurePhase": "full", "context": null}),
    );
    assert_eq!(explicit, r);
}

#[test]
fn build_prompt_refuses_an_invalid_phase_and_an_unknown_role() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    for phase in [json!("brief"), json!("FULL"), json!(3), json!("")] {
        let (code, message) = sidecar.error(
            "buildPrompt",
            json!({"task": "t", "disclosurePhase": phase}),
        );
        assert_eq!(code, -32602);
        assert!(message.starts_with("Invalid disclosure_phase"), "{message}");
        assert!(message.contains("summary, standard, full"), "{message}");
    }
    for role in ["reviewer", "../../etc/passwd", "Default"] {
        let (code, message) = sidecar.error("buildPrompt", json!({"task": "t", "role": role}));
        assert_eq!(code, -32602);
        assert!(message.contains(&format!("{role:?}")), "{message}");
        assert!(message.contains("known roles: default"), "{message}");
    }
    let (code, message) = sidecar.error("buildPrompt", json!({"task": "  "}));
    assert_eq!(
        (code, message.as_str()),
        (-32602, "task: must not be empty")
    );
    let (code, message) = sidecar.error("buildPrompt", json!({"task": "t", "context": [1]}));
    assert_eq!(code, -32602);
    assert!(message.starts_with("context: "), "{message}");
}

#[test]
fn build_prompt_with_the_flag_off_returns_full_for_every_phase_byte_for_byte() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let full = sidecar.result("buildPrompt", golden_params("full"));
    for phase in ["summary", "standard"] {
        let r = sidecar.result("buildPrompt", golden_params(phase));
        assert_eq!(r["phase"], "full", "{phase}");
        assert_eq!(r["prompt"], full["prompt"], "{phase}");
        assert_eq!(r, full, "{phase}");
    }
}

/// The `full` prompt for a fixed task and context, flag off, pinned byte for byte. After an
/// intended change of the pack or the layout, regenerate with `UPDATE_GOLDEN=1`.
#[test]
fn build_prompt_full_matches_the_golden_file() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let r = sidecar.result("buildPrompt", golden_params("summary"));
    let prompt = prompt_of(&r);
    let golden = fixture_path("prompts/default-full.golden.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, prompt).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap();
    assert!(
        expected == prompt,
        "the full prompt differs from {}:\n{prompt}",
        golden.display()
    );
    // The context is rendered with sorted keys, whatever order the request had.
    let reordered = sidecar.result(
        "buildPrompt",
        json!({
            "task": golden_params("full")["task"],
            "context": {
                "limits": {"maxQueries": 3, "p95Ms": 300},
                "files": ["orders/repository.py", "tests/orders/test_repository.py"],
                "repository": "acme/backend-order",
                "ticket": "ORD-1287"
            }
        }),
    );
    assert_eq!(prompt_of(&reordered), expected);
}

fn write_pack(root: &Path, role: &str, text: &str) -> std::path::PathBuf {
    write_file(root, &format!("prompts/{role}.yaml"), text)
}

const REVIEWER: &str = "roleDefinition: |\n  You review pull requests, version {v}.\ncoreConstraints:\n  - Read the whole diff.\n  - Run the checks.\n  - Report in .done.\nrules:\n  - Be specific.\nexamples:\n  - title: A review\n    body: Point at the line.\n";

#[test]
fn a_broken_prompt_pack_keeps_its_last_good_version_and_is_reported() {
    let (_dir, root) = test_guidebook_dir();
    let pack = write_pack(&root, "reviewer", &REVIEWER.replace("{v}", "1"));
    let sidecar = Sidecar::start(&root);
    let role = |sidecar: &Sidecar| {
        prompt_of(&sidecar.result("buildPrompt", json!({"task": "t", "role": "reviewer"})))
            .to_string()
    };
    assert!(role(&sidecar).contains("version 1"));

    // Broken on line 4: only two core constraints.
    std::fs::write(
        &pack,
        REVIEWER
            .replace("{v}", "2")
            .replace("  - Run the checks.\n", ""),
    )
    .unwrap();
    let status = sidecar.wait_for_status("the broken pack is reported", |s| {
        !s["guidebook"]["errors"].as_array().unwrap().is_empty()
    });
    let reported = &status["guidebook"]["errors"][0];
    assert_eq!(reported["path"], pack.display().to_string());
    assert_eq!(reported["line"], 3);
    assert!(
        reported["message"].as_str().unwrap().contains("exactly 3"),
        "{reported}"
    );
    assert!(
        role(&sidecar).contains("version 1"),
        "the last good version is served"
    );
    let out = sidecar.cli(&["check"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{}:3: ", pack.display())),
        "{stdout}"
    );

    // Fixed: served without a restart, the error gone.
    std::fs::write(&pack, REVIEWER.replace("{v}", "3")).unwrap();
    sidecar.wait_for_status("the fix is picked up", |s| {
        s["guidebook"]["errors"].as_array().unwrap().is_empty()
    });
    assert!(role(&sidecar).contains("version 3"));
    assert_eq!(sidecar.cli(&["check"]).status.code(), Some(0));
}

#[test]
fn guidebook_prompt_prints_each_phase_and_its_stats() {
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let task = "Add pagination to GET /orders. Keep the default page size at 50.";
    let full = sidecar.cli(&[
        "prompt",
        "--task",
        task,
        "--context",
        r#"{"ticket":"ORD-1"}"#,
    ]);
    assert_eq!(
        full.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    let full = String::from_utf8(full.stdout).unwrap();
    let daemon = sidecar.result(
        "buildPrompt",
        json!({"task": task, "context": {"ticket": "ORD-1"}}),
    );
    assert_eq!(
        full,
        format!("{}\n", prompt_of(&daemon)),
        "CLI and sidecar agree"
    );

    let summary = sidecar.cli(&["prompt", "--phase", "summary", "--task", task]);
    let summary = String::from_utf8(summary.stdout).unwrap();
    assert!(
        summary.ends_with("## Task (summary)\nAdd pagination to GET /orders.\n"),
        "{summary}"
    );
    assert!(cl100k(&summary) <= 600);

    // A task far over the standard budget is cut to it.
    let huge = "Refactor the payment adapters and keep each consumer idempotent. ".repeat(600);
    let out = sidecar.cli(&["prompt", "--phase", "standard", "--task", &huge, "--stats"]);
    let stats = String::from_utf8(out.stdout).unwrap();
    assert!(stats.contains("truncated"), "{stats}");
    let total: usize = stats
        .lines()
        .find(|l| l.starts_with("total"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(total <= 1_800 && total > 1_700, "{stats}");
    for section in ["critical", "role", "rules", "examples", "task"] {
        assert!(
            stats.lines().any(|l| l.starts_with(section)),
            "{section}: {stats}"
        );
    }

    let bad = sidecar.cli(&["prompt", "--phase", "brief", "--task", "t"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Invalid disclosure_phase"));
}

// --- With the flag on (needs the feature-flags store) --------------------------------------

fn flag_on_sidecar() -> (tempfile::TempDir, Sidecar) {
    let (dir, root) = test_guidebook_dir();
    let flags = write_file(
        dir.path(),
        "feature_flags.json",
        r#"{"_meta":{"version":1,"updated_at":"2026-12-02T00:00:00Z","updated_by":"test"},"flags":{"progressive_disclosure":{"enabled":true,"description":"","rollout_percent":100,"owner":"test"}}}"#,
    );
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_FLAGS".into(),
            flags.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    (dir, sidecar)
}

#[test]
fn build_prompt_phases_meet_their_budgets_and_ratios_with_the_flag_on() {
    let (_dir, sidecar) = flag_on_sidecar();
    let tokens = |phase: &str| -> (usize, String) {
        let r = sidecar.result("buildPrompt", golden_params(phase));
        assert_eq!(r["phase"], phase);
        assert_eq!(r["truncated"], false, "{phase}");
        let prompt = prompt_of(&r).to_string();
        for label in CRITICAL_LABELS {
            assert!(prompt.contains(label), "{phase}: {label}");
        }
        let n = r["tokens"].as_u64().unwrap() as usize;
        assert_eq!(n, cl100k(&prompt), "{phase}");
        (n, prompt)
    };
    let (summary, summary_text) = tokens("summary");
    let (standard, _) = tokens("standard");
    let (full, _) = tokens("full");
    assert!(summary <= 600 && standard <= 1_800, "{summary} {standard}");
    let ratio = |n: usize| n as f64 / full as f64;
    assert!(
        (0.15..=0.25).contains(&ratio(summary)),
        "summary/full {}",
        ratio(summary)
    );
    assert!(
        (0.40..=0.60).contains(&ratio(standard)),
        "standard/full {}",
        ratio(standard)
    );
    assert!(summary_text.ends_with("Fix the N+1 query in `OrderRepository.findAllWithItems()`: the order list API takes 2.3 s for 500 orders."));
}

#[test]
fn build_prompt_cuts_an_oversized_task_to_the_limit_with_the_flag_on() {
    let (_dir, sidecar) = flag_on_sidecar();
    let huge = "Refactor the payment adapters and keep each consumer idempotent. ".repeat(5_000);
    let r = sidecar.result(
        "buildPrompt",
        json!({"task": huge, "disclosurePhase": "standard", "sessionId": "s"}),
    );
    assert_eq!(r["phase"], "standard");
    assert_eq!(r["truncated"], true);
    let prompt = prompt_of(&r);
    let n = r["tokens"].as_u64().unwrap() as usize;
    assert!(n <= 1_800 && n > 1_700, "{n}");
    assert_eq!(n, cl100k(prompt));
    assert!(prompt.starts_with("[CRITICAL]"));
    assert!(
        sidecar.stderr().contains("PromptTruncationWarning"),
        "{}",
        sidecar.stderr()
    );
}

/// A pack may give the CRITICAL block in its own words (here German): it leads every phase of
/// that role, through the sidecar and `guidebook prompt`, while every other role keeps the
/// seed's block; an empty `critical:` is an error naming file and line, and the role keeps its
/// last good version (never a prompt without the block).
#[test]
fn a_prompt_pack_gives_the_critical_block_in_its_own_words() {
    let (_dir, root) = test_guidebook_dir();
    let own = "- Verboten: externe APIs ohne Freigabe, Löschen außerhalb des Baums.\n- QC-Pflicht: erst pyright und ruff.\n- Bericht: eine `.done`-Datei, JSON, mit Zeitstempel.";
    let german = format!(
        "critical: |\n  {}\n{}",
        own.replace('\n', "\n  "),
        REVIEWER.replace("{v}", "1")
    );
    let pack = write_pack(&root, "reviewer-de", &german);
    let sidecar = Sidecar::start(&root);
    let block = format!("[CRITICAL]\n{own}\n\n");
    for phase in ["summary", "standard", "full"] {
        let r = sidecar.result(
            "buildPrompt",
            json!({"task": "Prüfe den Diff.", "role": "reviewer-de", "disclosurePhase": phase}),
        );
        assert!(prompt_of(&r).starts_with(&block), "{phase}: {r}");
        for label in CRITICAL_LABELS {
            assert!(!prompt_of(&r).contains(label), "{phase}: {r}");
        }
        let default = sidecar.result(
            "buildPrompt",
            json!({"task": "t", "disclosurePhase": phase}),
        );
        assert!(prompt_of(&default).starts_with("[CRITICAL]\n"), "{phase}");
        for label in CRITICAL_LABELS {
            assert!(prompt_of(&default).contains(label), "{phase}: {default}");
        }
    }
    let out = sidecar.cli(&[
        "prompt",
        "--role",
        "reviewer-de",
        "--phase",
        "summary",
        "--task",
        "Prüfe den Diff.",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&block));

    std::fs::write(
        &pack,
        format!("{}critical: ''\n", REVIEWER.replace("{v}", "2")),
    )
    .unwrap();
    let status = sidecar.wait_for_status("the empty block is reported", |s| {
        !s["guidebook"]["errors"].as_array().unwrap().is_empty()
    });
    let reported = &status["guidebook"]["errors"][0];
    assert_eq!(reported["path"], pack.display().to_string(), "{status}");
    assert_eq!(reported["line"], 12, "{status}");
    assert!(
        reported["message"]
            .as_str()
            .unwrap()
            .contains("`critical` is empty"),
        "{reported}"
    );
    let r = sidecar.result(
        "buildPrompt",
        json!({"task": "t", "role": "reviewer-de", "disclosurePhase": "summary"}),
    );
    assert!(prompt_of(&r).starts_with(&block), "the last good pack: {r}");
}
