//! Renders the one line the hook prints: guidelines, a breaker warning, a halt or a deny.
//!
//! Every hook output is written here, and only here; hosts reject unknown keys, so each shape
//! is written by hand in the contract's member order.

use serde_json::Value;

use crate::breaker::BreakerVerdict;
use crate::event::{EventName, HookEvent, Host};
use crate::plan::Action;
use crate::protocol::{context_text, Shown};

/// Whose output shapes an answer takes: the host, the event name an after-tool context is
/// labelled with (`PostToolUse`, Claude Code's `PostToolUseFailure`, Gemini CLI's `AfterTool`),
/// and the one a deny is (`PreToolUse`, Claude Code's `PreSkillShellCommand`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub host: Host,
    pub after_tool: &'static str,
    pub before_tool: &'static str,
}

impl Shape {
    /// The shape of the answer to `event`.
    pub fn of(event: &HookEvent) -> Shape {
        let after_tool = match (event.host, &event.name) {
            (Host::GeminiCli, _) => "AfterTool",
            (_, EventName::PostToolUseFailure) => "PostToolUseFailure",
            _ => "PostToolUse",
        };
        let before_tool = match event.name {
            EventName::PreSkillShellCommand => "PreSkillShellCommand",
            _ => "PreToolUse",
        };
        Shape {
            host: event.host,
            after_tool,
            before_tool,
        }
    }

    /// A host's answers to its plain after-tool event.
    pub fn host(host: Host) -> Shape {
        Shape {
            host,
            after_tool: if host == Host::GeminiCli {
                "AfterTool"
            } else {
                "PostToolUse"
            },
            before_tool: "PreToolUse",
        }
    }
}

/// The hook output, in `host`'s shapes, for an event that asked `action` (with its `search`
/// result, if any) and got `verdict` from the breaker:
///
/// - halt → exactly `{"continue":false,"stopReason":REASON}` (OpenCode's plugin appends REASON
///   to the tool's output: it has no `continue`);
/// - halt after Claude Code's `PostToolUseFailure`, which ignores `continue` → the same, with
///   the reason also as that event's `additionalContext`;
/// - halt in GitHub Copilot CLI (1.0.102), which ignores `continue` after a tool →
///   `{"additionalContext":REASON}`: the model is told instead, and every later edit is denied;
/// - deny → exactly `{"hookSpecificOutput":{"hookEventName":"PreToolUse",
///   "permissionDecision":"deny","permissionDecisionReason":REASON}}` (`PreSkillShellCommand`
///   for Claude Code's skill shell command); Gemini CLI and OpenCode (whose plugin throws REASON
///   from `tool.execute.before`): `{"decision":"deny","reason":REASON}`; Copilot CLI, which
///   reads top-level keys only: `{"permissionDecision":"deny","permissionDecisionReason":REASON}`;
/// - warning → the after-tool `additionalContext` of the search (if any) with the warning as
///   one more line;
/// - nothing → what the search alone would print.
pub fn render_hook(
    shape: Shape,
    action: &Action,
    search: Option<&Value>,
    verdict: &BreakerVerdict,
) -> Option<String> {
    let guidelines = match (action, search) {
        (Action::Search { .. } | Action::EndShell(_), Some(result)) => search_text(result),
        _ => None,
    };
    match verdict {
        BreakerVerdict::Halt(reason) if shape.host == Host::CopilotCli => {
            Some(after_tool_context(shape, reason))
        }
        // Claude Code (2.1.328) ignores `continue` after a failed tool: the model is told
        // instead, in the context it reads next.
        BreakerVerdict::Halt(reason) if shape.after_tool == "PostToolUseFailure" => {
            let reason = Value::from(reason.as_str());
            Some(format!(
                r#"{{"continue":false,"stopReason":{reason},"hookSpecificOutput":{{"hookEventName":"PostToolUseFailure","additionalContext":{reason}}}}}"#
            ))
        }
        BreakerVerdict::Halt(reason) => Some(format!(
            r#"{{"continue":false,"stopReason":{}}}"#,
            Value::from(reason.as_str())
        )),
        BreakerVerdict::Deny(reason) if shape.host == Host::CopilotCli => Some(format!(
            r#"{{"permissionDecision":"deny","permissionDecisionReason":{}}}"#,
            Value::from(reason.as_str())
        )),
        BreakerVerdict::Deny(reason) if matches!(shape.host, Host::GeminiCli | Host::OpenCode) => {
            Some(format!(
                r#"{{"decision":"deny","reason":{}}}"#,
                Value::from(reason.as_str())
            ))
        }
        BreakerVerdict::Deny(reason) => Some(format!(
            r#"{{"hookSpecificOutput":{{"hookEventName":"{}","permissionDecision":"deny","permissionDecisionReason":{}}}}}"#,
            shape.before_tool,
            Value::from(reason.as_str())
        )),
        BreakerVerdict::Warning(line) => Some(after_tool_context(
            shape,
            &match guidelines {
                Some(text) => format!("{text}\n\n{line}"),
                None => line.clone(),
            },
        )),
        BreakerVerdict::Nothing => guidelines.map(|text| after_tool_context(shape, &text)),
    }
}

/// What the hook prints for `host` when it has nothing to say: nothing, except for Gemini CLI.
/// When a hook's stdout is empty, Gemini CLI reads its stderr and shows that text to the user
/// as a "hook system message"; so it always gets a JSON object, `{}` when there is nothing in
/// it, and the shim's diagnostics stay diagnostics.
pub fn nothing(host: Host) -> Option<&'static str> {
    (host == Host::GeminiCli).then_some("{}")
}

/// Additional context after a tool ran, labelled with the event it answers: `PostToolUse` (or
/// Claude Code's `PostToolUseFailure`), or Gemini CLI's `AfterTool`, which appends it to the
/// tool's result. Copilot CLI and OpenCode's plugin read a top-level `{"additionalContext":TEXT}`
/// and append TEXT to the tool's result.
fn after_tool_context(shape: Shape, text: &str) -> String {
    if matches!(shape.host, Host::CopilotCli | Host::OpenCode) {
        return format!(r#"{{"additionalContext":{}}}"#, Value::from(text));
    }
    if shape.after_tool == "PostToolUse" {
        return post_tool_use_context(text);
    }
    let text = Value::String(text.to_owned());
    format!(
        r#"{{"hookSpecificOutput":{{"hookEventName":"{}","additionalContext":{text}}}}}"#,
        shape.after_tool
    )
}

/// The `PostToolUse` hook output for a `search` result (an array of `{ "id", "content" }`), or
/// `None` when there is nothing to show.
///
/// The output is exactly
/// `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":TEXT}}`, where
/// TEXT is [`CONTEXT_HEADER`] followed, per guideline, by a blank line, `[id]` (with its
/// `source` in parentheses when the result names one), a newline and the content with trailing
/// whitespace removed; guidelines marked `repository` come last, under
/// [`crate::protocol::REPOSITORY_HEADER`]. Codex rejects output with unknown keys, so no
/// other key may appear. Entries without a string `id` and `content` are skipped rather than
/// failing the whole answer.
pub fn render_search(guidelines: &Value) -> Option<String> {
    search_text(guidelines).map(|text| post_tool_use_context(&text))
}

/// The `additionalContext` text for a `search` result, or `None` when there is nothing to show.
fn search_text(guidelines: &Value) -> Option<String> {
    let blocks: Vec<Shown<'_>> = guidelines
        .as_array()?
        .iter()
        .filter_map(|g| {
            Some(Shown {
                id: g.get("id").and_then(Value::as_str)?,
                content: g.get("content").and_then(Value::as_str)?,
                source: g.get("source").and_then(Value::as_str),
                repository: g.get("repository").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect();
    (!blocks.is_empty()).then(|| context_text(blocks))
}

/// Wraps `text` as `PostToolUse` additional context. The JSON is written by hand, with
/// serde_json escaping the text, because the key order is part of the contract and serde_json's
/// default map sorts keys.
fn post_tool_use_context(text: &str) -> String {
    let text = Value::String(text.to_owned());
    format!(
        r#"{{"hookSpecificOutput":{{"hookEventName":"PostToolUse","additionalContext":{text}}}}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::CONTEXT_HEADER;
    use serde_json::json;

    #[test]
    fn renders_guidelines_in_the_given_order_with_trimmed_content() {
        let result = json!([
            {"id": "kotlin-naming", "content": "Use PascalCase for classes.\n"},
            {"id": "quote\"s", "content": "Line one\n  indented \"quoted\"\t\n\n"}
        ]);
        assert_eq!(
            render_search(&result).unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Adaptive Guidebook guidelines relevant to the latest changes:\n\n[kotlin-naming]\nUse PascalCase for classes.\n\n[quote\"s]\nLine one\n  indented \"quoted\""}}"#
        );
    }

    #[test]
    fn a_repositorys_rules_come_last_in_their_own_block_with_their_source() {
        let result = json!([
            {"id": "repo:shop/AGENTS.md", "content": "Repo rule.", "source": "AGENTS.md:1 in this repository", "repository": true},
            {"id": "team-rule", "content": "Team rule.", "source": "team guidebook acme: a/guideline.yaml:1"},
            {"id": "root-rule", "content": "Root rule."}
        ]);
        let out: Value = serde_json::from_str(&render_search(&result).unwrap()).unwrap();
        assert_eq!(
            out["hookSpecificOutput"]["additionalContext"],
            format!(
                "{CONTEXT_HEADER}\n\n[team-rule] (team guidebook acme: a/guideline.yaml:1)\nTeam rule.\n\n[root-rule]\nRoot rule.\n\n{}\n\n[repo:shop/AGENTS.md] (AGENTS.md:1 in this repository)\nRepo rule.",
                crate::protocol::REPOSITORY_HEADER
            )
        );
    }

    #[test]
    fn output_round_trips_with_only_the_allowed_keys() {
        let out = render_search(&json!([{"id": "a", "content": "é ✓ \u{1}"}])).unwrap();
        let parsed: Value = serde_json::from_str(&out).unwrap();
        let top = parsed.as_object().unwrap();
        assert_eq!(top.keys().collect::<Vec<_>>(), ["hookSpecificOutput"]);
        let specific = top["hookSpecificOutput"].as_object().unwrap();
        assert_eq!(specific.len(), 2);
        assert_eq!(specific["hookEventName"], "PostToolUse");
        assert_eq!(
            specific["additionalContext"],
            format!("{CONTEXT_HEADER}\n\n[a]\né ✓ \u{1}")
        );
        assert!(!out.contains('\n'), "one compact line");
    }

    #[test]
    fn empty_or_invalid_results_render_nothing() {
        assert_eq!(render_search(&json!([])), None);
        assert_eq!(render_search(&json!({"id": "a", "content": "b"})), None);
        assert_eq!(render_search(&json!(null)), None);
        assert_eq!(
            render_search(&json!([{"id": "a"}, {"content": "b"}, 3])),
            None
        );
        let partly =
            render_search(&json!([{"id": 1, "content": "x"}, {"id": "ok", "content": "y"}]));
        assert!(partly.unwrap().contains("[ok]\\ny"));
    }

    #[test]
    fn gemini_gets_its_own_shapes() {
        let search = Action::Search {
            session_id: "s".into(),
            filepaths: vec!["/a".into()],
            written: Default::default(),
        };
        let result = json!([{"id": "g", "content": "C\n"}]);
        assert_eq!(
            render_hook(
                Shape::host(Host::GeminiCli),
                &search,
                Some(&result),
                &BreakerVerdict::Nothing
            )
            .unwrap(),
            format!(
                r#"{{"hookSpecificOutput":{{"hookEventName":"AfterTool","additionalContext":{}}}}}"#,
                Value::from(format!("{CONTEXT_HEADER}\n\n[g]\nC"))
            )
        );
        assert_eq!(
            render_hook(
                Shape::host(Host::GeminiCli),
                &Action::Nothing,
                None,
                &BreakerVerdict::Deny("R".into())
            )
            .unwrap(),
            r#"{"decision":"deny","reason":"R"}"#
        );
        assert_eq!(
            render_hook(
                Shape::host(Host::GeminiCli),
                &Action::Nothing,
                None,
                &BreakerVerdict::Halt("R".into())
            )
            .unwrap(),
            r#"{"continue":false,"stopReason":"R"}"#
        );
    }

    #[test]
    fn copilot_and_opencode_get_their_own_shapes() {
        let search = Action::Search {
            session_id: "s".into(),
            filepaths: vec!["/a".into()],
            written: Default::default(),
        };
        let result = json!([{"id": "g", "content": "C\n"}]);
        let text = Value::from(format!("{CONTEXT_HEADER}\n\n[g]\nC"));
        for host in [Host::CopilotCli, Host::OpenCode] {
            let shape = Shape::host(host);
            assert_eq!(
                render_hook(shape, &search, Some(&result), &BreakerVerdict::Nothing).unwrap(),
                format!(r#"{{"additionalContext":{text}}}"#)
            );
            assert_eq!(
                render_hook(shape, &Action::Nothing, None, &BreakerVerdict::Nothing),
                None
            );
            assert_eq!(nothing(host), None);
        }
        let copilot = Shape::host(Host::CopilotCli);
        let open = Shape::host(Host::OpenCode);
        let deny = BreakerVerdict::Deny("R".into());
        let halt = BreakerVerdict::Halt("H".into());
        assert_eq!(
            render_hook(copilot, &Action::Nothing, None, &deny).unwrap(),
            r#"{"permissionDecision":"deny","permissionDecisionReason":"R"}"#
        );
        assert_eq!(
            render_hook(copilot, &Action::Nothing, None, &halt).unwrap(),
            r#"{"additionalContext":"H"}"#
        );
        assert_eq!(
            render_hook(open, &Action::Nothing, None, &deny).unwrap(),
            r#"{"decision":"deny","reason":"R"}"#
        );
        assert_eq!(
            render_hook(open, &Action::Nothing, None, &halt).unwrap(),
            r#"{"continue":false,"stopReason":"H"}"#
        );
        assert_eq!(
            render_hook(
                open,
                &Action::Nothing,
                None,
                &BreakerVerdict::Warning("W".into())
            )
            .unwrap(),
            r#"{"additionalContext":"W"}"#
        );
    }

    #[test]
    fn rendering() {
        let nothing = Action::Nothing;
        assert_eq!(
            render_hook(
                Shape::host(Host::Codex),
                &nothing,
                None,
                &BreakerVerdict::Halt("R \"x\"".into())
            )
            .unwrap(),
            r#"{"continue":false,"stopReason":"R \"x\""}"#
        );
        assert_eq!(
            render_hook(
                Shape::host(Host::Codex),
                &nothing,
                None,
                &BreakerVerdict::Deny("R".into())
            )
            .unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"R"}}"#
        );
        assert_eq!(
            render_hook(
                Shape::host(Host::Codex),
                &nothing,
                None,
                &BreakerVerdict::Warning("W".into())
            )
            .unwrap(),
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"W"}}"#
        );
        assert_eq!(
            render_hook(
                Shape::host(Host::Codex),
                &nothing,
                None,
                &BreakerVerdict::Nothing
            ),
            None
        );
        let search = Action::Search {
            session_id: "s".into(),
            filepaths: vec!["/a".into()],
            written: Default::default(),
        };
        let result = json!([{"id": "g", "content": "C\n"}]);
        let out = render_hook(
            Shape::host(Host::Codex),
            &search,
            Some(&result),
            &BreakerVerdict::Warning("W".into()),
        );
        assert!(out.unwrap().ends_with(r#"[g]\nC\n\nW"}}"#));
        assert_eq!(
            render_hook(
                Shape::host(Host::Codex),
                &search,
                Some(&result),
                &BreakerVerdict::Nothing
            ),
            crate::render_search(&result)
        );
    }
}
