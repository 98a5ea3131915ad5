//! Decides what to ask the sidecar for one hook event: `search`, `resetSession` or nothing.
//!
//! Reads: a [`HookEvent`]. Writes: nothing.

use serde_json::Value;

use crate::event::{EventName, HookEvent, ToolCall, ToolInput};
use edits::patch::{summary_targets, targets, ResolvedOp};
use edits::paths::resolve;

use crate::protocol::{method, BeginShellCommand, Call, EndShellCommand, Search, SessionCall};
use crate::shell_writes::{call_id, ShellWrites};
use crate::written::{read_capped, written, ReadFile, Written};

/// What the sidecar should be asked after one hook event.
///
/// The enum is deliberately exhaustive: when a variant is added, every caller has to decide
/// what it means for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The event needs no sidecar call and the hook prints nothing.
    Nothing,
    /// Ask `search` for guidelines about files the agent just changed.
    Search {
        session_id: String,
        /// Absolute, lexically normalised, deduplicated, in order of first appearance.
        filepaths: Vec<String>,
        /// What the edit wrote in those files, where it can be told (see `written`).
        written: Written,
    },
    /// Ask `resetSession` to forget what the session was shown, because the agent's context
    /// was compacted or cleared and no longer holds those guidelines.
    ResetSession { session_id: String },
    /// A shell command that may write files is about to run (`beginShellCommand`): the
    /// sidecar keeps what it names as it is now. Its answer is not shown.
    BeginShell(BeginShellCommand),
    /// That command has run (`endShellCommand`): guidelines for the files it changed, as a
    /// `search` answers them.
    EndShell(EndShellCommand),
}

impl Action {
    /// The JSON-RPC method this action calls, or `None` for [`Action::Nothing`].
    pub fn method(&self) -> Option<&'static str> {
        match self {
            Action::Nothing => None,
            Action::Search { .. } => Some(method::SEARCH),
            Action::ResetSession { .. } => Some(method::RESET_SESSION),
            Action::BeginShell(_) => Some(method::BEGIN_SHELL_COMMAND),
            Action::EndShell(_) => Some(method::END_SHELL_COMMAND),
        }
    }

    /// The call this action makes, or `None` for [`Action::Nothing`]. `deadline_ms` and
    /// `max_tokens` only concern `search`.
    pub fn call(&self, deadline_ms: u64, max_tokens: Option<u64>) -> Option<Call> {
        match self {
            Action::Nothing => None,
            Action::Search {
                session_id,
                filepaths,
                written,
            } => Some(
                Search {
                    session_id: session_id.clone(),
                    filepaths: filepaths.clone(),
                    written: written.lines.clone(),
                    contents: written.contents.clone(),
                    deadline_ms: Some(deadline_ms),
                    max_tokens,
                }
                .call(),
            ),
            Action::ResetSession { session_id } => {
                Some(SessionCall::reset_session(session_id).call())
            }
            Action::BeginShell(begin) => Some(begin.call()),
            Action::EndShell(end) => Some(
                EndShellCommand {
                    deadline_ms: Some(deadline_ms),
                    max_tokens,
                    ..end.clone()
                }
                .call(),
            ),
        }
    }
}

/// Decides what to ask the sidecar for one hook event, as read from the hook's stdin; see
/// [`plan_event`].
pub fn plan(event: &Value) -> Action {
    HookEvent::read(event).map_or(Action::Nothing, |event| plan_event(&event))
}

/// Decides what to ask the sidecar for one hook event, reading the edited files from disk
/// where their written lines need them (see [`plan_event_with`]).
pub fn plan_event(event: &HookEvent) -> Action {
    plan_event_with(event, &mut read_capped)
}

/// Decides what to ask the sidecar for one hook event:
///
/// - `PostToolUse` of a file-changing tool (Codex `apply_patch`, a shell command that pipes a
///   patch into `apply_patch`, Claude Code `Edit`/`Write`/`MultiEdit`, Gemini CLI
///   `write_file`/`replace`) → [`Action::Search`] over the files that exist after the change,
///   with the lines the edit wrote in them (`written`; files are read through `read`);
/// - `SessionStart` with `source` `compact` or `clear`, and Codex `PostCompact` →
///   [`Action::ResetSession`];
/// - anything else, or a change whose files cannot be named as absolute paths →
///   [`Action::Nothing`].
pub fn plan_event_with(event: &HookEvent, read: &mut ReadFile) -> Action {
    let session_id = event.session_id.clone();
    match &event.name {
        EventName::PostToolUse | EventName::PostToolUseFailure => {
            // The call's patches are parsed once, for its files and for their written lines.
            let ops = event.patch_ops();
            let filepaths = changed_files_in(event, &ops);
            if filepaths.is_empty() {
                shell_writes_of(event, false)
            } else {
                let written = written(event, &ops, &filepaths, read);
                Action::Search {
                    session_id,
                    filepaths,
                    written,
                }
            }
        }
        EventName::SessionStart(Some(source)) if source == "compact" || source == "clear" => {
            Action::ResetSession { session_id }
        }
        EventName::PostCompact => Action::ResetSession { session_id },
        EventName::PreToolUse => shell_writes_of(event, true),
        _ => Action::Nothing,
    }
}

/// A shell command that may write files: before it runs, [`Action::BeginShell`]; after,
/// [`Action::EndShell`] (see [`crate::shell_writes`]). A command that only reads, and any
/// other tool, asks nothing.
fn shell_writes_of(event: &HookEvent, before: bool) -> Action {
    let Some(ToolCall {
        input: ToolInput::Shell {
            command: Some(command),
            ..
        },
        ..
    }) = &event.tool
    else {
        return Action::Nothing;
    };
    // A patch piped into `apply_patch` is an edit: its end asks `search`, so no begin.
    if before && !changed_files_of(event).is_empty() {
        return Action::Nothing;
    }
    let dir = event.command_dir();
    let writes = ShellWrites::of(command, dir.as_deref());
    if writes.read_only {
        return Action::Nothing;
    }
    let session_id = event.session_id.clone();
    let call_id = call_id(command);
    if before {
        Action::BeginShell(BeginShellCommand {
            session_id,
            call_id,
            dir,
            targets: writes.targets,
            mentioned: writes.mentioned,
        })
    } else {
        Action::EndShell(EndShellCommand {
            session_id,
            call_id,
            dir,
            targets: writes.targets,
            deadline_ms: None,
            max_tokens: None,
        })
    }
}

/// The absolute paths of the files a `PostToolUse` event's tool call created or modified; see
/// [`changed_files_of`].
pub fn changed_files(event: &Value) -> Vec<String> {
    HookEvent::read(event).map_or_else(Vec::new, |event| changed_files_of(&event))
}

/// The absolute paths of the files the event's tool call created or modified, deduplicated, in
/// order of first appearance. Deleted files and the old names of moved files are not included;
/// relative paths that cannot be resolved are dropped.
pub fn changed_files_of(event: &HookEvent) -> Vec<String> {
    changed_files_in(event, &event.patch_ops())
}

/// [`changed_files_of`], given the event's patches parsed ([`HookEvent::patch_ops`]).
fn changed_files_in(event: &HookEvent, ops: &[ResolvedOp]) -> Vec<String> {
    let cwd = event.cwd.as_deref();
    let mut found = FoundPaths::default();
    let Some(ToolCall { input, output, .. }) = &event.tool else {
        return found.paths;
    };
    match input {
        ToolInput::Patch(_) | ToolInput::Shell { .. } => {
            found.add_all(None, targets(ops));
            if let (ToolInput::Patch(_), Some(summary)) = (input, output) {
                found.add_all(cwd, summary_targets(summary));
            }
        }
        ToolInput::EditFile(file) => found.add_all(cwd, file.as_deref()),
        ToolInput::Other => {}
    }
    found.paths
}

/// Collects resolved paths without duplicates. A linear search is fine: a tool call touches a
/// handful of files, and it keeps the order the agent wrote them in.
#[derive(Default)]
struct FoundPaths {
    paths: Vec<String>,
}

impl FoundPaths {
    fn add_all<'a>(&mut self, base: Option<&str>, raw: impl IntoIterator<Item = &'a str>) {
        for path in raw {
            if let Some(path) = resolve(base, path) {
                if !self.paths.contains(&path) {
                    self.paths.push(path);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Parses a fixture from this crate's `tests/fixtures/hooks/`.
    macro_rules! fixture {
        ($name:literal) => {
            serde_json::from_str::<Value>(include_str!(concat!("../tests/fixtures/hooks/", $name)))
                .expect(concat!("fixture ", $name, " is valid JSON"))
        };
    }

    const CODEX_SESSION: &str = "019a3c2e-5b7d-7f21-9c4e-2f1d8a6b0c11";
    const CLAUDE_SESSION: &str = "5f0c7e2a-9b1d-4c3e-8a7f-1e2d3c4b5a69";

    /// [`super::plan`] with no file on disk: what the event alone tells.
    fn plan(event: &Value) -> Action {
        HookEvent::read(event).map_or(Action::Nothing, |e| plan_event_with(&e, &mut |_| None))
    }

    fn search(session_id: &str, paths: &[&str]) -> Action {
        written_search(session_id, paths, &[])
    }

    /// A search whose `written` holds `lines` per path.
    fn written_search(session_id: &str, paths: &[&str], lines: &[(&str, &[[usize; 2]])]) -> Action {
        Action::Search {
            session_id: session_id.to_owned(),
            filepaths: paths.iter().map(|p| p.to_string()).collect(),
            written: Written {
                lines: lines
                    .iter()
                    .map(|(path, ranges)| (path.to_string(), ranges.to_vec().into()))
                    .collect(),
                contents: Vec::new(),
            },
        }
    }

    #[test]
    fn actions_become_their_calls() {
        let action = search("sess \"1\"", &["/p/a.rs", "/p/b c.kt"]);
        assert_eq!(
            action.call(1950, Some(2000)).unwrap().envelope(1),
            r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"sessionId":"sess \"1\"","filepaths":["/p/a.rs","/p/b c.kt"],"deadlineMs":1950,"maxTokens":2000}}"#
        );
        let reset = Action::ResetSession {
            session_id: "s-1".into(),
        };
        assert_eq!(
            reset.call(1950, Some(2000)).unwrap().envelope(2),
            r#"{"jsonrpc":"2.0","id":2,"method":"resetSession","params":{"sessionId":"s-1"}}"#
        );
        assert_eq!(Action::Nothing.call(1950, None), None);
    }

    #[test]
    fn codex_apply_patch_add() {
        assert_eq!(
            plan(&fixture!("post_tool_use_apply_patch_add.json")),
            written_search(
                CODEX_SESSION,
                &["/home/dev/proj/src/main/kotlin/com/acme/Foo.kt"],
                &[("/home/dev/proj/src/main/kotlin/com/acme/Foo.kt", &[[1, 3]])]
            )
        );
    }

    #[test]
    fn codex_apply_patch_modify() {
        assert_eq!(
            plan(&fixture!("post_tool_use_apply_patch_modify.json")),
            search(CODEX_SESSION, &["/home/dev/proj/README.md"])
        );
    }

    #[test]
    fn codex_apply_patch_delete_only_asks_nothing() {
        assert_eq!(
            plan(&fixture!("post_tool_use_apply_patch_delete.json")),
            Action::Nothing
        );
    }

    #[test]
    fn codex_apply_patch_legacy_structured_response() {
        assert_eq!(
            plan(&fixture!(
                "post_tool_use_apply_patch_legacy_structured_response.json"
            )),
            written_search(
                CODEX_SESSION,
                &["/home/dev/proj/src/lib.rs", "/home/dev/proj/Cargo.toml"],
                &[("/home/dev/proj/src/lib.rs", &[[1, 1]])]
            )
        );
    }

    #[test]
    fn codex_apply_patch_move_with_relative_and_absolute_paths() {
        assert_eq!(
            plan(&fixture!(
                "codex_post_tool_use_apply_patch_move_mixed_paths.json"
            )),
            written_search(
                CODEX_SESSION,
                &[
                    "/home/dev/shared/config/app.yaml",
                    "/home/dev/proj/docs/guide.md",
                    "/home/dev/proj/src/new_name.py",
                    "/home/dev/lib/util.py",
                ],
                // The added files; the updated ones are not on disk here.
                &[
                    ("/home/dev/shared/config/app.yaml", &[[1, 1]]),
                    ("/home/dev/proj/docs/guide.md", &[[1, 1]]),
                ]
            )
        );
    }

    #[test]
    fn codex_bash_heredoc_resolves_against_cd_dir() {
        assert_eq!(
            plan(&fixture!(
                "codex_post_tool_use_bash_apply_patch_heredoc.json"
            )),
            written_search(
                CODEX_SESSION,
                &[
                    "/home/dev/proj/backend/app/orders.py",
                    "/home/dev/proj/backend/tests/test_orders.py",
                ],
                &[("/home/dev/proj/backend/tests/test_orders.py", &[[1, 2]])]
            )
        );
    }

    #[test]
    fn codex_shell_argv_heredoc_resolves_against_workdir() {
        assert_eq!(
            plan(&fixture!("codex_post_tool_use_shell_apply_patch_argv.json")),
            search(
                CODEX_SESSION,
                &["/home/dev/proj/crates/server/src/server.rs"]
            )
        );
    }

    /// A command that may write files (`cargo test` may) ends a shell command: the sidecar
    /// searches what it changed (see `shell_writes`); a reader asks nothing.
    #[test]
    fn codex_bash_without_patch_ends_a_shell_command() {
        let Action::EndShell(end) = plan(&fixture!("codex_post_tool_use_bash_no_patch.json"))
        else {
            panic!("not the end of a shell command");
        };
        assert_eq!(end.dir.as_deref(), Some("/home/dev/proj"));
        assert!(end.targets.is_empty());
        let mut reader = fixture!("codex_post_tool_use_bash_no_patch.json");
        reader["tool_input"]["command"] = json!("git status && ls src");
        assert_eq!(plan(&reader), Action::Nothing);
        reader["hook_event_name"] = json!("PreToolUse");
        assert_eq!(plan(&reader), Action::Nothing);
        reader["tool_input"]["command"] = json!("sed -i s/a/b/ src/A.kt");
        let Action::BeginShell(begin) = plan(&reader) else {
            panic!("not the begin of a shell command");
        };
        assert_eq!(begin.targets, ["/home/dev/proj/src/A.kt"]);
    }

    const GEMINI_SESSION: &str = "6b1f8c2e-4d3a-4e5f-9a7b-2c1d0e9f8a76";

    #[test]
    fn gemini_file_tools_search_their_file_and_pre_compress_does_nothing() {
        let jobs = "/home/dev/proj/src/main/kotlin/com/acme/Jobs.kt";
        // A diff without a hunk does not read: all of `content` is written.
        assert_eq!(
            plan(&fixture!("gemini_after_tool_write_file.json")),
            written_search(GEMINI_SESSION, &[jobs], &[(jobs, &[[1, 3]])])
        );
        assert_eq!(
            plan(&fixture!("gemini_after_tool_replace.json")),
            search(GEMINI_SESSION, &[jobs])
        );
        assert_eq!(
            plan(&fixture!("gemini_before_tool_write_file.json")),
            Action::Nothing
        );
        // Fired before every model turn by Gemini CLI 0.61, compression or not: no reset.
        assert_eq!(plan(&fixture!("gemini_pre_compress.json")), Action::Nothing);
        let event = HookEvent::read(&fixture!("gemini_after_tool_write_file.json")).unwrap();
        assert_eq!(event.host, crate::event::Host::GeminiCli);
    }

    #[test]
    fn codex_post_compact_resets() {
        assert_eq!(
            plan(&fixture!("codex_post_compact.json")),
            Action::ResetSession {
                session_id: CODEX_SESSION.to_owned()
            }
        );
    }

    #[test]
    fn claude_edit_write_multiedit() {
        assert_eq!(
            plan(&fixture!("claude_post_tool_use_edit.json")),
            search(CLAUDE_SESSION, &["/home/dev/proj/src/api/handlers.ts"])
        );
        let deploy = "/home/dev/proj/scripts/deploy.sh";
        assert_eq!(
            plan(&fixture!("claude_post_tool_use_write.json")),
            written_search(CLAUDE_SESSION, &[deploy], &[(deploy, &[[1, 3]])])
        );
        assert_eq!(
            plan(&fixture!("claude_post_tool_use_multiedit.json")),
            search(
                CLAUDE_SESSION,
                &["/home/dev/proj/app/src/main/kotlin/com/acme/OrderService.kt"]
            )
        );
    }

    /// Events captured from the pinned agents (Claude Code 2.1.328, Gemini CLI 0.61.0, Codex
    /// 0.169.0) editing line 6 of a twelve-line file: each says which lines it wrote.
    #[test]
    fn the_real_agents_edits_say_which_lines_they_wrote() {
        let jobs = "/home/dev/proj/src/main/kotlin/Jobs.kt";
        let lines = |action: Action| match action {
            Action::Search { written, .. } => written
                .lines
                .into_iter()
                .map(|(path, lines)| (path, Vec::from(lines)))
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let claude = plan(&fixture!("claude_2_1_328_post_tool_use_edit.json"));
        assert_eq!(lines(claude), [(jobs.to_string(), vec![[6, 7]])]);
        // A `Write` over the whole file rewrote every line (its case changed).
        let write = plan(&fixture!("claude_2_1_328_post_tool_use_write_update.json"));
        assert_eq!(lines(write), [(jobs.to_string(), vec![[1, 12]])]);
        let gemini = plan(&fixture!("gemini_0_61_after_tool_replace.json"));
        assert_eq!(lines(gemini), [(jobs.to_string(), vec![[6, 7]])]);
        // Codex's patch is located in the file on disk.
        let event = HookEvent::read(&fixture!(
            "codex_0_169_post_tool_use_apply_patch_update.json"
        ))
        .unwrap();
        let after: String = (1..=12)
            .map(|i| {
                if i == 6 {
                    "line six\n".to_string()
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        let codex = plan_event_with(&event, &mut |path| (path == jobs).then(|| after.clone()));
        assert_eq!(lines(codex), [(jobs.to_string(), vec![[6, 6]])]);
    }

    #[test]
    fn claude_read_asks_nothing() {
        assert_eq!(
            plan(&fixture!("claude_post_tool_use_read.json")),
            Action::Nothing
        );
    }

    #[test]
    fn session_start_resets_only_after_compact_or_clear() {
        assert_eq!(
            plan(&fixture!("claude_session_start_compact.json")),
            Action::ResetSession {
                session_id: CLAUDE_SESSION.to_owned()
            }
        );
        assert_eq!(
            plan(&fixture!("claude_session_start_startup.json")),
            Action::Nothing
        );
        let clear =
            json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "clear"});
        assert_eq!(
            plan(&clear),
            Action::ResetSession {
                session_id: "s".into()
            }
        );
    }

    #[test]
    fn claude_relative_file_path_resolves_against_cwd() {
        let event = json!({"session_id": "s", "cwd": "/w/p", "hook_event_name": "PostToolUse",
            "tool_name": "Edit", "tool_input": {"file_path": "./src/../lib/a.py"}});
        assert_eq!(plan(&event), search("s", &["/w/p/lib/a.py"]));
    }

    #[test]
    fn patch_and_summary_are_united_in_order_of_first_appearance() {
        let event = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch",
            "tool_input": {"command": "*** Begin Patch\n*** Update File: b.rs\n@@\n-a\n+b\n*** Add File: a.rs\n+x\n*** End Patch"},
            "tool_response": "Success. Updated the following files:\nA a.rs\nA c.rs\nM b.rs\n"});
        assert_eq!(
            plan(&event),
            written_search(
                "s",
                &["/p/b.rs", "/p/a.rs", "/p/c.rs"],
                &[("/p/a.rs", &[[1, 1]])]
            )
        );
    }

    #[test]
    fn apply_patch_input_and_response_shapes_are_tolerated() {
        let as_string = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch", "tool_input": "*** Begin Patch\n*** Add File: x.rs\n*** End Patch"});
        assert_eq!(
            plan(&as_string),
            written_search("s", &["/p/x.rs"], &[("/p/x.rs", &[])])
        );
        let object_response = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch", "tool_input": {},
            "tool_response": {"output": "Success. Updated the following files:\nM y.rs\n"}});
        assert_eq!(plan(&object_response), search("s", &["/p/y.rs"]));
        let unparseable_legacy = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch", "tool_input": null,
            "tool_response": "{not json\nSuccess. Updated the following files:\nA z.rs"});
        assert_eq!(plan(&unparseable_legacy), search("s", &["/p/z.rs"]));
    }

    #[test]
    fn relative_paths_without_absolute_cwd_are_dropped() {
        let event = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "apply_patch",
            "tool_input": {"command": "*** Begin Patch\n*** Add File: rel.rs\n*** Add File: /abs/x.rs\n*** End Patch"}});
        assert_eq!(
            plan(&event),
            written_search("s", &["/abs/x.rs"], &[("/abs/x.rs", &[])])
        );
        let relative_cwd = json!({"session_id": "s", "cwd": "proj", "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {"file_path": "a.txt"}});
        assert_eq!(plan(&relative_cwd), Action::Nothing);
    }

    #[test]
    fn shell_cd_to_absolute_dir_and_argv_patch() {
        let event = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse", "tool_name": "local_shell",
            "tool_input": {"command": "cd /other/repo && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: n.rs\n*** End Patch\nEOF"}});
        assert_eq!(
            plan(&event),
            written_search("s", &["/other/repo/n.rs"], &[("/other/repo/n.rs", &[])])
        );
        let argv = json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse", "tool_name": "shell",
            "tool_input": {"command": ["apply_patch", "*** Begin Patch\n*** Update File: m.rs\n@@\n-a\n+b\n*** End Patch"]}});
        assert_eq!(plan(&argv), search("s", &["/p/m.rs"]));
    }

    #[test]
    fn events_without_a_session_or_of_other_kinds_ask_nothing() {
        let mut event = fixture!("post_tool_use_apply_patch_add.json");
        event["session_id"] = json!("");
        assert_eq!(plan(&event), Action::Nothing);
        event.as_object_mut().unwrap().remove("session_id");
        assert_eq!(plan(&event), Action::Nothing);

        let mut pre = fixture!("post_tool_use_apply_patch_add.json");
        pre["hook_event_name"] = json!("PreToolUse");
        assert_eq!(plan(&pre), Action::Nothing);

        assert_eq!(plan(&json!([])), Action::Nothing);
        assert_eq!(
            plan(&json!({"session_id": "s", "hook_event_name": "Stop"})),
            Action::Nothing
        );
        assert_eq!(
            plan(
                &json!({"session_id": "s", "cwd": "/p", "hook_event_name": "PostToolUse",
                "tool_name": "Grep", "tool_input": {"file_path": "/p/a"}})
            ),
            Action::Nothing
        );
    }

    #[test]
    fn action_methods() {
        assert_eq!(Action::Nothing.method(), None);
        assert_eq!(search("s", &["/a"]).method(), Some("search"));
        assert_eq!(
            Action::ResetSession {
                session_id: "s".into()
            }
            .method(),
            Some("resetSession")
        );
    }
}
