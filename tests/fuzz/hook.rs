//! Fuzz targets of the hook shim's library: the patch, summary and heredoc parsers (through
//! `changed_files`), `plan` and the breaker's `plan_breaker` on any JSON, the checkers' output
//! parsers, and the JSON-RPC response parser. Reads: `hook-shim/tests/fixtures/{hooks,checks}`.

use std::collections::HashSet;

use guidebook_hook::breaker::{check_run, plan_breaker, BreakerVerdict};
use guidebook_hook::checks::{invocations, parse_pyright, parse_ruff, PYRIGHT, RUFF};
use guidebook_hook::event::Host;
use guidebook_hook::{changed_files, parse_response, plan, render_hook, Action};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::watchdog::case;
use crate::{config, json_value, mutated, text};

fn fixtures(dir: &str) -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("hook-shim/tests/fixtures")
        .join(dir);
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            path.is_file()
                .then(|| std::fs::read_to_string(&path).ok())
                .flatten()
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

/// One file operation of a generated patch.
#[derive(Debug, Clone)]
enum Op {
    Add(String),
    Update(String),
    Delete(String),
    Move(String, String),
}

fn name() -> impl Strategy<Value = String> {
    "[a-z]{1,6}(/[a-z]{1,6}){0,2}\\.(kt|py|java)"
}

/// A hunk body line: its text may itself look like a header, as in a patch that edits a patch.
fn hunk_line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!['+', '-', ' ']),
        prop_oneof![
            "[ -~]{0,20}",
            Just("*** Delete File: x.kt".to_string()),
            Just("*** Add File: ghost.kt".to_string()),
        ],
    )
        .prop_map(|(c, t)| format!("{c}{t}"))
}

fn ops() -> impl Strategy<Value = Vec<(Op, Vec<String>)>> {
    let op = prop_oneof![
        name().prop_map(Op::Add),
        name().prop_map(Op::Update),
        name().prop_map(Op::Delete),
        (name(), name()).prop_map(|(a, b)| Op::Move(a, b)),
    ];
    prop::collection::vec((op, prop::collection::vec(hunk_line(), 0..4)), 1..8).prop_filter(
        "distinct file names",
        |ops| {
            let mut seen = HashSet::new();
            ops.iter().all(|(op, _)| match op {
                Op::Add(a) | Op::Update(a) | Op::Delete(a) => seen.insert(a.clone()),
                Op::Move(a, b) => seen.insert(a.clone()) && seen.insert(b.clone()),
            })
        },
    )
}

/// The patch text (well-formed, as Codex reads it), Codex's summary of it, and the files that
/// exist afterwards, in order.
fn render_patch(ops: &[(Op, Vec<String>)]) -> (String, String, Vec<String>) {
    let mut patch = String::from("*** Begin Patch\n");
    let mut summary =
        String::from("Exit code: 0\nOutput:\nSuccess. Updated the following files:\n");
    let mut survivors = Vec::new();
    for (op, hunk) in ops {
        match op {
            Op::Add(p) => {
                patch.push_str(&format!("*** Add File: {p}\n"));
                summary.push_str(&format!("A {p}\n"));
                survivors.push(p.clone());
            }
            Op::Update(p) => {
                patch.push_str(&format!("*** Update File: {p}\n@@\n"));
                summary.push_str(&format!("M {p}\n"));
                survivors.push(p.clone());
            }
            Op::Delete(p) => {
                patch.push_str(&format!("*** Delete File: {p}\n"));
                summary.push_str(&format!("D {p}\n"));
            }
            Op::Move(from, to) => {
                patch.push_str(&format!("*** Update File: {from}\n*** Move to: {to}\n@@\n"));
                summary.push_str(&format!("M {to}\n"));
                survivors.push(to.clone());
            }
        }
        // As Codex's grammar has it: an added file's lines are all `+` lines, and an update
        // holds at least one line.
        let lines: Vec<String> = match op {
            Op::Delete(_) => Vec::new(),
            Op::Add(_) => hunk.iter().map(|l| format!("+{}", &l[1..])).collect(),
            _ if hunk.is_empty() => vec!["+x".to_string()],
            _ => hunk.clone(),
        };
        for line in lines {
            patch.push_str(&line);
            patch.push('\n');
        }
    }
    patch.push_str("*** End Patch\n");
    (patch, summary, survivors)
}

fn absolute_and_distinct(paths: &[String]) {
    let mut seen = HashSet::new();
    for p in paths {
        assert!(p.starts_with('/'), "not absolute: {p:?}");
        assert!(seen.insert(p), "duplicate: {p:?} in {paths:?}");
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// A well-formed patch, through `apply_patch` and through a `Bash` heredoc after `cd`:
    /// exactly the added, updated and moved-to files, resolved, in order; never a deleted file
    /// or a move's source, whatever the hunks contain.
    #[test]
    fn patches_name_exactly_the_files_that_survive(ops in ops(), with_summary: bool) {
        let (patch, summary, survivors) = render_patch(&ops);
        let event = json!({
            "session_id": "s", "hook_event_name": "PostToolUse", "cwd": "/w",
            "tool_name": "apply_patch", "tool_input": {"command": patch},
            "tool_response": if with_summary { summary.clone() } else { String::new() },
        });
        let expected: Vec<String> = survivors.iter().map(|p| format!("/w/{p}")).collect();
        let found = case("changed_files(apply_patch)", &event, || changed_files(&event));
        prop_assert_eq!(&found, &expected);

        let script = format!("cd sub && apply_patch <<'EOF'\n{patch}EOF\n");
        let event = json!({
            "session_id": "s", "hook_event_name": "PostToolUse", "cwd": "/w",
            "tool_name": "Bash", "tool_input": {"command": script},
            "tool_response": summary,
        });
        let expected: Vec<String> = survivors.iter().map(|p| format!("/w/sub/{p}")).collect();
        let found = case("changed_files(Bash heredoc)", &event, || changed_files(&event));
        prop_assert_eq!(found, expected);
    }

    /// Arbitrary patch and summary text: no panic; every path is absolute, listed once, and
    /// its file name was in the input.
    #[test]
    fn arbitrary_patch_text_gives_only_paths_from_the_input(
        command in text(),
        response in text(),
        tool in prop::sample::select(vec!["apply_patch", "Bash", "shell", "exec_command"]),
        json_response: bool,
    ) {
        let tool_response = if json_response {
            Value::String(json!({"output": response}).to_string())
        } else {
            Value::String(response.clone())
        };
        let event = json!({
            "session_id": "s", "hook_event_name": "PostToolUse", "cwd": "/w/d",
            "tool_name": tool, "tool_input": {"command": command},
            "tool_response": tool_response,
        });
        let found = case("changed_files(text)", &event, || changed_files(&event));
        absolute_and_distinct(&found);
        let input = format!("/w/d {command} {response}");
        for path in &found {
            let file = path.rsplit('/').next().unwrap();
            prop_assert!(input.contains(file), "{path:?} is not from the input");
        }
    }

    /// `plan` (and the breaker's planning) on any JSON, and on events whose known keys hold
    /// any value: no panic; a `Search` names at least one absolute path, each once.
    #[test]
    fn plan_accepts_any_json(
        value in json_value(),
        fields in prop::collection::vec((
            prop::sample::select(vec![
                "session_id", "hook_event_name", "tool_name", "tool_input", "tool_response",
                "cwd", "source",
            ]),
            prop_oneof![
                json_value(),
                prop::sample::select(vec![
                    "PostToolUse", "PreToolUse", "SessionStart", "PostCompact", "apply_patch",
                    "AfterTool", "BeforeTool", "PreCompress", "write_file", "replace",
                    "run_shell_command",
                    "Bash", "Edit", "Write", "MultiEdit", "compact", "clear", "/w", "rel", "",
                ]).prop_map(Value::from),
                text().prop_map(|t| json!({"command": t, "file_path": t, "workdir": t, "dir_path": t})),
                text().prop_map(|t| json!({"llmContent": t, "returnDisplay": t})),
            ],
        ), 0..8),
        result in json_value(),
        reason in text(),
    ) {
        let verdicts = [
            BreakerVerdict::Nothing,
            BreakerVerdict::Warning(reason.clone()),
            BreakerVerdict::Halt(reason.clone()),
            BreakerVerdict::Deny(reason),
        ];
        let mut event = json!({});
        for (k, v) in fields {
            event[k] = v;
        }
        for event in [&value, &event] {
            let action = case("plan", event, || plan(event));
            match &action {
                Action::Search {
                    session_id,
                    filepaths,
                    ..
                } => {
                    prop_assert!(!session_id.is_empty());
                    prop_assert!(!filepaths.is_empty());
                    absolute_and_distinct(filepaths);
                }
                Action::ResetSession { session_id } => prop_assert!(!session_id.is_empty()),
                Action::BeginShell(begin) => {
                    prop_assert!(!begin.session_id.is_empty() && !begin.call_id.is_empty());
                    prop_assert!(begin.targets.iter().chain(&begin.mentioned).all(|p| p.starts_with('/')));
                    prop_assert!(begin.dir.iter().all(|d| d.starts_with('/')));
                }
                Action::EndShell(end) => {
                    prop_assert!(!end.session_id.is_empty() && !end.call_id.is_empty());
                    prop_assert!(end.targets.iter().all(|p| p.starts_with('/')));
                }
                Action::Nothing => {}
            }
            case("plan_breaker", event, || plan_breaker(event));
            case("check_run", event, || check_run(event));
            // The renderer the hook really runs, with every verdict the breaker can give.
            for (verdict, host) in verdicts.iter().flat_map(|v| {
                [Host::Codex, Host::ClaudeCode, Host::GeminiCli].map(|h| (v, h))
            }) {
                let rendered = case("render_hook", &result, || {
                    render_hook(guidebook_hook::Shape::host(host), &action, Some(&result), verdict)
                });
                if let Some(line) = rendered {
                    prop_assert!(serde_json::from_str::<Value>(&line).is_ok(), "{}", line);
                    prop_assert!(!line.contains('\n'));
                }
            }
        }
    }

    /// The committed hook events, mangled: whatever still parses as JSON plans without panic.
    #[test]
    fn mangled_hook_fixtures_plan_without_panic(raw in mutated(fixtures("hooks"))) {
        if let Ok(event) = serde_json::from_str::<Value>(&raw) {
            case("plan(fixture)", &raw, || {
                plan(&event);
                plan_breaker(&event);
                check_run(&event)
            });
        }
    }

    /// ruff and pyright output, arbitrary and mangled from the committed real outputs: no
    /// panic, and every diagnostic is tagged with its tool.
    #[test]
    fn checker_outputs_parse_without_panic(
        raw in prop_oneof![text(), mutated(fixtures("checks"))],
        command in text(),
    ) {
        if let Some(found) = case("parse_ruff", &raw, || parse_ruff(&raw)) {
            prop_assert!(found.iter().all(|d| d.tool == RUFF));
        }
        if let Some(found) = case("parse_pyright", &raw, || parse_pyright(&raw)) {
            prop_assert!(found.iter().all(|d| d.tool == PYRIGHT));
        }
        let found = case("invocations", &command, || invocations(&command));
        prop_assert!(found.len() <= 2, "each tool at most once: {:?}", found);
    }

    /// What comes back over the socket, any bytes: `Ok` or `Err`, never a panic.
    #[test]
    fn rpc_responses_parse_without_panic(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            json_value().prop_map(|v| v.to_string().into_bytes()),
            json_value().prop_map(|v| json!({"jsonrpc": "2.0", "id": 1, "result": v}).to_string().into_bytes()),
            json_value().prop_map(|v| json!({"jsonrpc": "2.0", "id": 1, "error": v}).to_string().into_bytes()),
        ],
    ) {
        let _ = case("parse_response", &body, || parse_response(&body));
    }
}
