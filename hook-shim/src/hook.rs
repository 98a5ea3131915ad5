//! The whole hook, once: one event in, the questions for the sidecar, the one line to print.
//!
//! Reads: the event JSON and the sidecar's answers, through the caller's [`SidecarLink`].
//! Writes: nothing.
//!
//! `guidebook-hook` (a process per hook, a fresh connection per call) and `guidebook mcp` (one
//! process per agent session, a kept-alive connection) both call [`handle_event`]; they differ
//! only in how a request body reaches the sidecar. So a `tools/call hook` answers exactly what
//! the command hook prints for the same event.

use std::borrow::Borrow;

use serde_json::Value;

use crate::breaker::{self, BreakerAction, BreakerVerdict};
use crate::enforce::{self, EditCheck};
use crate::event::HookEvent;
use crate::guard::{self, Protected};
use crate::link::SidecarLink;
use crate::output::{render_hook, Shape};
use crate::plan::{plan_event, Action};
use crate::protocol::parse_response;
use crate::written::read_before;

/// What one hook event needs from the sidecar: the main question (guidelines, or a reset)
/// and the circuit breaker's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPlan {
    /// Whose output shapes the answer takes.
    pub shape: Shape,
    pub action: Action,
    pub breaker: Option<BreakerAction>,
    /// The reason to deny a tool call that would lift the agent's own guardrails: decided
    /// here, without the sidecar, and before anything is asked of it.
    pub guard: Option<String>,
    /// The `severity: block` check of an edit about to be written (`PreToolUse`): asked in the
    /// same round trip as the breaker's gate, whose deny wins.
    pub check: Option<EditCheck>,
}

impl HookPlan {
    /// The plan for `event`, or `None` when the hook has nothing to ask and prints nothing.
    /// The event is read once, into a [`HookEvent`] that the guard, the planner and the breaker
    /// share; a call the guard denies asks the sidecar nothing.
    ///
    /// `protected` gives the places the guard keeps the agent from; it is called only for an
    /// event the guard judges (a shell command or an edit about to run), so no other event pays
    /// for finding them.
    pub fn of<P: Borrow<Protected>>(
        event: &Value,
        protected: impl FnOnce() -> P,
    ) -> Option<HookPlan> {
        let event = HookEvent::read(event)?;
        let shape = Shape::of(&event);
        let denied = guard::judges(&event)
            .then(|| guard::check(&event, protected().borrow()))
            .flatten();
        if let Some(reason) = denied {
            return Some(HookPlan {
                shape,
                action: Action::Nothing,
                breaker: None,
                guard: Some(reason),
                check: None,
            });
        }
        let action = plan_event(&event);
        let breaker = breaker::plan_event(&event);
        let check = enforce::plan_check(&event, &mut read_before);
        if action == Action::Nothing && breaker.is_none() && check.is_none() {
            None
        } else {
            Some(HookPlan {
                shape,
                action,
                breaker,
                guard: None,
                check,
            })
        }
    }

    /// Asks the sidecar what the plan needs and returns the line the hook prints (without its
    /// newline), or `None` for no output. `max_tokens` is the guideline text's budget. Every
    /// failure is reported through `link` and ends in silence, never in an error for the agent.
    pub fn run(&self, max_tokens: Option<u64>, link: &mut dyn SidecarLink) -> Option<String> {
        if let Some(reason) = &self.guard {
            let deny = BreakerVerdict::Deny(reason.clone());
            return render_hook(self.shape, &Action::Nothing, None, &deny);
        }
        // An edit to check asks nothing else: a patch piped into `apply_patch` through the
        // shell is an edit, not a shell command that needs a begin (see `plan`).
        if let (Some(check), Action::Nothing) = (&self.check, &self.action) {
            let verdict = enforce::ask(check, self.breaker.as_ref(), link);
            return render_hook(self.shape, &Action::Nothing, None, &verdict);
        }
        let search = match self.action {
            Action::Nothing => None,
            _ => {
                let action = &self.action;
                let body = |deadline_ms: u64| {
                    action
                        .call(deadline_ms, max_tokens)
                        .map(|call| call.envelope(1))
                        .unwrap_or_default()
                };
                // A shell command about to run never waits for a sidecar to start: its end
                // may start one, and without a begin its named targets are still searched.
                let may_start = !matches!(action, Action::BeginShell(_));
                match link.exchange(&body, may_start) {
                    Ok(response) => match parse_response(&response) {
                        Ok(result) => Some(result),
                        Err(e) => {
                            link.report(&e.to_string());
                            None
                        }
                    },
                    // The link reports its own failures: it knows where it was connecting.
                    Err(_) => None,
                }
            }
        };
        let verdict = match &self.breaker {
            Some(breaker_action) => {
                let mut send = |body: &str| link.exchange(&|_| body.to_owned(), false).ok();
                breaker::ask(breaker_action, &mut send)
            }
            None => BreakerVerdict::Nothing,
        };
        render_hook(self.shape, &self.action, search.as_ref(), &verdict)
    }
}

/// The line a hook prints for `event` (without its newline), or `None` for no output:
/// [`HookPlan::of`] then [`HookPlan::run`]. `protected` gives the sidecar's places the agent
/// may not touch (see [`guard`]), when the event needs them.
pub fn handle_event<P: Borrow<Protected>>(
    event: &Value,
    max_tokens: Option<u64>,
    protected: impl FnOnce() -> P,
    link: &mut dyn SidecarLink,
) -> Option<String> {
    HookPlan::of(event, protected)?.run(max_tokens, link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::scripted::Scripted;
    use serde_json::json;

    fn scripted(answers: Vec<Result<&str, ()>>) -> Scripted {
        Scripted::in_turn(answers, 1234)
    }

    #[test]
    fn an_event_with_nothing_to_ask_asks_nothing() {
        let mut link = scripted(vec![]);
        let event =
            json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Read"});
        assert_eq!(
            handle_event(&event, None, Protected::default, &mut link),
            None
        );
        assert!(link.asked.is_empty());
    }

    #[test]
    fn a_search_sends_the_deadline_measured_by_the_link_and_renders_the_answer() {
        let mut link = scripted(vec![Ok(
            r#"{"jsonrpc":"2.0","id":1,"result":[{"id":"a","content":"Do A.\n"}]}"#,
        )]);
        let event = json!({"session_id": "s", "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {"file_path": "/p/a.py"}});
        let line = handle_event(&event, Some(2000), Protected::default, &mut link).unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Adaptive Guidebook guidelines relevant to the latest changes:\n\n[a]\nDo A."}}"#
        );
        assert_eq!(
            link.asked,
            [(
                r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"sessionId":"s","filepaths":["/p/a.py"],"deadlineMs":1234,"maxTokens":2000}}"#.to_owned(),
                true
            )]
        );
    }

    #[test]
    fn failures_are_silent_and_sidecar_errors_are_reported() {
        let event =
            json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "clear"});
        let mut down = scripted(vec![Err(())]);
        assert_eq!(
            handle_event(&event, None, Protected::default, &mut down),
            None
        );
        let mut refusing = scripted(vec![Ok(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#,
        )]);
        assert_eq!(
            handle_event(&event, None, Protected::default, &mut refusing),
            None
        );
        assert_eq!(refusing.reports, ["sidecar error -32602: no"]);
    }

    #[test]
    fn a_gate_asks_the_breaker_without_starting_a_sidecar() {
        let mut link = scripted(vec![Ok(
            r#"[{"jsonrpc":"2.0","id":1,"result":true},{"jsonrpc":"2.0","id":2,"result":{"state":"halt","reason":"Stop."}}]"#,
        )]);
        let event = json!({"session_id": "s", "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch", "tool_input": {"command": "*** Begin Patch\n*** End Patch\n"}});
        let line = handle_event(&event, None, Protected::default, &mut link).unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Stop."}}"#
        );
        assert_eq!(link.asked.len(), 1);
        assert!(
            !link.asked[0].1,
            "the breaker's calls never start a sidecar"
        );
    }

    /// A shell command about to run asks `beginShellCommand` without starting a sidecar and
    /// prints nothing; after it ran, `endShellCommand`'s guidelines are shown as a search's.
    #[test]
    fn a_shell_command_begins_without_starting_a_sidecar_and_ends_with_its_guidelines() {
        let event = |name: &str| {
            json!({"session_id": "s", "hook_event_name": name, "cwd": "/w", "tool_name": "Bash",
                "tool_input": {"command": "sed -i s/a/b/ A.kt"}})
        };
        let mut link = scripted(vec![Ok(
            r#"{"jsonrpc":"2.0","id":1,"result":{"watching":true,"kept":1}}"#,
        )]);
        let line = handle_event(&event("PreToolUse"), None, Protected::default, &mut link);
        assert_eq!(line, None);
        let (body, may_start) = &link.asked[0];
        assert!(!may_start, "a begin never starts a sidecar");
        assert!(body.contains(r#""method":"beginShellCommand""#), "{body}");
        assert!(body.contains(r#""targets":["/w/A.kt"]"#), "{body}");
        let mut link = scripted(vec![Ok(
            r#"{"jsonrpc":"2.0","id":1,"result":[{"id":"a","content":"Do A."}]}"#,
        )]);
        let line = handle_event(&event("PostToolUse"), None, Protected::default, &mut link);
        assert!(line.unwrap().contains("[a]\\nDo A."));
        let (body, may_start) = &link.asked[0];
        assert!(*may_start);
        assert!(body.contains(r#""method":"endShellCommand""#), "{body}");
        // A patch piped into apply_patch begins nothing: its end is a search.
        let patch = json!({"session_id": "s", "hook_event_name": "PreToolUse", "cwd": "/w",
            "tool_name": "Bash", "tool_input": {"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: n.rs\n+x\n*** End Patch\nEOF"}});
        assert_eq!(crate::plan::plan(&patch), Action::Nothing);
    }

    /// A patch piped into `apply_patch` through the shell is checked as an edit, in one round
    /// trip with the breaker's gate, and asks no `beginShellCommand`.
    #[test]
    fn a_shell_patch_about_to_run_is_checked_as_an_edit() {
        let script = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.kt\n+val x = 1\n*** End Patch\nEOF\n";
        // An added file: nothing is read.
        let event = json!({"session_id": "s", "turn_id": "t", "cwd": "/w",
            "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": script}});
        let plan = HookPlan::of(&event, Protected::default).unwrap();
        assert_eq!(plan.action, Action::Nothing);
        assert!(plan.check.is_some() && plan.breaker.is_some(), "{plan:?}");
        let mut link = scripted(vec![Ok(
            r#"[{"jsonrpc":"2.0","id":3,"result":{"blocked":[]}}]"#,
        )]);
        assert_eq!(plan.run(None, &mut link), None);
        assert_eq!(link.asked.len(), 1);
        let methods: Vec<String> = serde_json::from_str::<Value>(&link.asked[0].0)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["method"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(methods, ["isEnabled", "breakerStatus", "checkEdit"]);
    }

    #[test]
    fn a_guarded_call_is_denied_without_asking_the_sidecar() {
        let mut link = scripted(vec![]);
        let event = json!({"session_id": "s", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "guidebook breaker reset --session s"}});
        let line = handle_event(&event, None, Protected::default, &mut link).unwrap();
        let output: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            output["hookSpecificOutput"]["permissionDecision"], "deny",
            "{line}"
        );
        assert!(link.asked.is_empty(), "the sidecar is not asked");
    }

    /// Claude Code 2.1.332's event for a skill's or command's `!` shell line (the payload as
    /// it sent it): judged like a shell tool call, denied in that event's own name; a harmless
    /// one asks nothing and prints nothing.
    #[test]
    fn a_skills_shell_command_that_lifts_a_guardrail_is_denied_in_its_own_event() {
        let event = |command: &str| {
            json!({"session_id": "s", "cwd": "/w", "permission_mode": "default",
                "hook_event_name": "PreSkillShellCommand", "tool_name": "Bash",
                "tool_input": {"command": command}, "tool_use_id": "u:inner:preamble-0",
                "command_name": "setup", "command_source": "projectSettings", "invoked_by": "user"})
        };
        let mut link = scripted(vec![]);
        let line = handle_event(
            &event("guidebook trust ."),
            None,
            Protected::default,
            &mut link,
        )
        .unwrap();
        let output: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            output["hookSpecificOutput"]["hookEventName"],
            "PreSkillShellCommand"
        );
        assert_eq!(output["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(output["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("guidebook trust"));
        let quiet = handle_event(&event("git status"), None, Protected::default, &mut link);
        assert_eq!(quiet, None);
        assert!(link.asked.is_empty(), "the sidecar is not asked");
    }
}
