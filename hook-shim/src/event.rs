//! The hook event, read once from the host's JSON into a typed [`HookEvent`]. Reads: event JSON.
//!
//! Every host writes its own shape; one reader per host turns it into the same [`HookEvent`]
//! (event name, session, cwd, the tool call with its input and its output as text), and
//! everything after that (`plan`, the breaker) reads only the typed event. A new host is one new
//! reader in [`READERS`], not edits across the planner and the breaker.

use serde_json::{Map, Value};

use crate::paths::resolve_dir;

/// The agent that sent the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Codex,
    ClaudeCode,
    /// Gemini CLI: `BeforeTool` / `AfterTool`, its own tool names, and its own output shapes.
    GeminiCli,
}

/// The hook event's name, for the events the hook acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventName {
    PreToolUse,
    PostToolUse,
    /// Claude Code: a tool call that failed (a shell command with a non-zero exit, a failing
    /// lint run among them); its text is the event's `error`.
    PostToolUseFailure,
    /// With its `source`: `startup`, `resume`, `compact` or `clear`.
    SessionStart(Option<String>),
    /// Codex: the context was compacted.
    PostCompact,
    Other(String),
}

/// One hook event, as every part of the hook reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEvent {
    pub host: Host,
    pub name: EventName,
    /// Never empty: an event without a session id is not read at all.
    pub session_id: String,
    /// The directory relative paths in the event are resolved against.
    pub cwd: Option<String>,
    /// The tool call a `PreToolUse` or `PostToolUse` is about.
    pub tool: Option<ToolCall>,
}

/// A tool call: its name, what it was asked to do, and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    pub input: ToolInput,
    /// The tool's output as text (`PostToolUse`): Codex's string (a legacy JSON string's
    /// `output` unwrapped), or Claude Code's `stdout`, `stderr` and `output` joined by newlines.
    pub output: Option<String>,
}

/// What a tool call asked for, in the terms the hook cares about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolInput {
    /// `apply_patch`: the texts that may hold its patch.
    Patch(Vec<String>),
    /// A shell command, run in `workdir` when the host names one (resolved against `cwd`).
    Shell {
        command: Option<Command>,
        workdir: Option<String>,
    },
    /// A file-editing tool (`Edit`, `Write`, `MultiEdit`) and the file it names.
    EditFile(Option<String>),
    /// Any other tool.
    Other,
}

/// A shell command as the host gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Script(String),
    /// An argv array: `["bash", "-lc", SCRIPT]`, or `["apply_patch", PATCH]` itself.
    Argv(Vec<String>),
}

impl Command {
    /// The command as one text: a script, or an argv's elements one per line.
    pub fn text(&self) -> String {
        match self {
            Command::Script(script) => script.clone(),
            Command::Argv(argv) => argv.join("\n"),
        }
    }
}

/// Shell tool names under which Codex and Claude Code report a command run.
pub const SHELL_TOOLS: [&str; 5] = [
    "Bash",
    "shell",
    "local_shell",
    "exec_command",
    "shell_command",
];
/// Claude Code's file-editing tools; each names its file in `tool_input.file_path`.
pub const EDIT_TOOLS: [&str; 3] = ["Edit", "Write", "MultiEdit"];
/// Codex's patch tool.
pub const PATCH_TOOL: &str = "apply_patch";
/// Gemini CLI's file-writing tools; each names its file in `tool_input.file_path`.
pub const GEMINI_EDIT_TOOLS: [&str; 2] = ["write_file", "replace"];
/// Gemini CLI's shell tool: `tool_input.command`, run in `tool_input.dir_path`.
pub const GEMINI_SHELL_TOOL: &str = "run_shell_command";

/// The host readers, tried in order; the first that recognises the event reads it.
pub const READERS: [fn(&Value) -> Option<HookEvent>; 2] = [read_gemini, read_codex_or_claude];

impl EventName {
    /// Whether the event reports a tool call that has run (successfully or not).
    pub fn after_tool(&self) -> bool {
        matches!(self, EventName::PostToolUse | EventName::PostToolUseFailure)
    }
}

impl HookEvent {
    /// Reads a hook event, or `None` when no reader recognises it or it has no session id.
    pub fn read(event: &Value) -> Option<HookEvent> {
        READERS.iter().find_map(|read| read(event))
    }

    /// The directory a shell command ran in: its `workdir` (resolved against `cwd`), else `cwd`.
    pub fn command_dir(&self) -> Option<String> {
        let workdir = match self.tool.as_ref().map(|t| &t.input) {
            Some(ToolInput::Shell {
                workdir: Some(dir), ..
            }) => Some(dir.as_str()),
            _ => None,
        };
        match workdir {
            Some(dir) => resolve_dir(self.cwd.as_deref(), dir),
            None => self.cwd.clone(),
        }
    }
}

/// Gemini CLI: `BeforeTool`, `AfterTool` (with `tool_response` `{llmContent, returnDisplay,
/// error}`), and `SessionStart` like the others. Recognised by its tool events' names; its
/// other events read like Codex's and Claude Code's. `PreCompress` is nothing to act on: Gemini
/// CLI 0.61 fires it before every model turn, whether it compresses or not.
fn read_gemini(event: &Value) -> Option<HookEvent> {
    let name = match str_field(event, "hook_event_name")? {
        "BeforeTool" => EventName::PreToolUse,
        "AfterTool" => EventName::PostToolUse,
        _ => return None,
    };
    let session_id = str_field(event, "session_id").filter(|s| !s.is_empty())?;
    let tool = str_field(event, "tool_name").map(|tool| {
        let input = event.get("tool_input");
        let tool_input = if GEMINI_EDIT_TOOLS.contains(&tool) {
            ToolInput::EditFile(
                input
                    .and_then(|i| str_field(i, "file_path"))
                    .map(str::to_owned),
            )
        } else if tool == GEMINI_SHELL_TOOL {
            ToolInput::Shell {
                command: shell_command(input),
                workdir: input
                    .and_then(|i| str_field(i, "dir_path"))
                    .map(str::to_owned),
            }
        } else {
            ToolInput::Other
        };
        let output = event
            .get("tool_response")
            .and_then(|r| r.get("llmContent"))
            .and_then(gemini_text)
            .map(|text| shell_output(&text).to_owned());
        ToolCall {
            name: tool.to_owned(),
            input: tool_input,
            output,
        }
    });
    Some(HookEvent {
        host: Host::GeminiCli,
        name,
        session_id: session_id.to_owned(),
        cwd: str_field(event, "cwd").map(str::to_owned),
        tool,
    })
}

/// What Gemini's shell tool printed, from its `llmContent`: `Output: ...` then `Exit Code: N`
/// lines, which Gemini CLI 0.61 wraps in `<untrusted_context>` tags (seen in its hook input).
fn shell_output(text: &str) -> &str {
    let text = text
        .strip_prefix("<untrusted_context>")
        .map(|rest| {
            let rest = rest.strip_prefix('\n').unwrap_or(rest);
            rest.strip_suffix("</untrusted_context>").unwrap_or(rest)
        })
        .unwrap_or(text);
    text.strip_prefix("Output: ").unwrap_or(text)
}

/// Gemini's `llmContent`: a string, a part `{text}`, or a list of them.
fn gemini_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Object(part) => str_member(part, "text").map(str::to_owned),
        Value::Array(parts) => {
            let texts: Vec<String> = parts.iter().filter_map(gemini_text).collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// Codex and Claude Code share one event shape: `session_id`, `hook_event_name`, `cwd`,
/// `tool_name`, `tool_input`, `tool_response`; Codex adds `turn_id`.
fn read_codex_or_claude(event: &Value) -> Option<HookEvent> {
    let session_id = str_field(event, "session_id").filter(|s| !s.is_empty())?;
    let name = match str_field(event, "hook_event_name") {
        Some("PreToolUse") => EventName::PreToolUse,
        Some("PostToolUse") => EventName::PostToolUse,
        Some("PostToolUseFailure") => EventName::PostToolUseFailure,
        Some("SessionStart") => {
            EventName::SessionStart(str_field(event, "source").map(str::to_owned))
        }
        Some("PostCompact") => EventName::PostCompact,
        Some(other) => EventName::Other(other.to_owned()),
        None => EventName::Other(String::new()),
    };
    let host = if event.get("turn_id").is_some() {
        Host::Codex
    } else {
        Host::ClaudeCode
    };
    let tool = str_field(event, "tool_name").map(|tool| ToolCall {
        name: tool.to_owned(),
        input: tool_input(tool, event.get("tool_input"), event.get("tool_response")),
        output: event
            .get("tool_response")
            .and_then(output_text)
            .or_else(|| str_field(event, "error").map(str::to_owned)),
    });
    Some(HookEvent {
        host,
        name,
        session_id: session_id.to_owned(),
        cwd: str_field(event, "cwd").map(str::to_owned),
        tool,
    })
}

fn tool_input(tool: &str, input: Option<&Value>, response: Option<&Value>) -> ToolInput {
    if tool == PATCH_TOOL {
        ToolInput::Patch(patch_texts(input))
    } else if SHELL_TOOLS.contains(&tool) {
        let object = input.and_then(Value::as_object);
        ToolInput::Shell {
            command: shell_command(input),
            workdir: object
                .and_then(|o| str_member(o, "workdir"))
                .map(str::to_owned),
        }
    } else if EDIT_TOOLS.contains(&tool) {
        let file = input
            .and_then(|i| str_field(i, "file_path"))
            .or_else(|| str_field(response?, "filePath"));
        ToolInput::EditFile(file.map(str::to_owned))
    } else {
        ToolInput::Other
    }
}

/// The texts that may hold an `apply_patch` patch: `tool_input.command` (or `input`, or
/// `patch`) as a string or each string of an array, or `tool_input` itself when it is a string.
fn patch_texts(input: Option<&Value>) -> Vec<String> {
    let command = match input {
        Some(Value::Object(input)) => input
            .get("command")
            .or_else(|| input.get("input"))
            .or_else(|| input.get("patch")),
        other => other,
    };
    match command {
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(items)) => strings(items),
        _ => Vec::new(),
    }
}

/// A shell tool's command: `tool_input.command` (or `cmd`), or `tool_input` itself when it is
/// not an object; a string or an argv array.
fn shell_command(input: Option<&Value>) -> Option<Command> {
    let command = match input? {
        Value::Object(input) => input.get("command").or_else(|| input.get("cmd"))?,
        other => other,
    };
    match command {
        Value::String(script) => Some(Command::Script(script.clone())),
        Value::Array(argv) => Some(Command::Argv(strings(argv))),
        _ => None,
    }
}

/// What the tool printed: Codex sends a string (`Exit code:`/`Wall time:`/`Output:` lines, then
/// the output; older builds a JSON document as a string whose `output` holds it), Claude Code an
/// object with `stdout` and `stderr` (and some tools `output`).
fn output_text(response: &Value) -> Option<String> {
    match response {
        Value::String(text) => Some(unwrap_legacy(text)),
        Value::Object(object) => {
            let parts: Vec<&str> = ["stdout", "stderr", "output"]
                .iter()
                .filter_map(|key| str_member(object, key))
                .collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        }
        _ => None,
    }
}

/// A `tool_response` string: the text itself, or, from older Codex builds, a JSON document as a
/// string whose `output` field holds the text.
fn unwrap_legacy(text: &str) -> String {
    if text.trim_start().starts_with('{') {
        if let Ok(Value::Object(legacy)) = serde_json::from_str::<Value>(text) {
            if let Some(Value::String(output)) = legacy.get("output") {
                return output.clone();
            }
        }
    }
    text.to_owned()
}

fn strings(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn str_member<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_codex_shell_event_once_for_everyone() {
        let event = HookEvent::read(&json!({"session_id": "s", "turn_id": "t", "cwd": "/w",
            "hook_event_name": "PostToolUse", "tool_name": "shell",
            "tool_input": {"command": ["bash", "-lc", "ruff check ."], "workdir": "api"},
            "tool_response": "{\"output\":\"All checks passed!\\n\",\"metadata\":{}}"}))
        .unwrap();
        assert_eq!(event.host, Host::Codex);
        assert_eq!(event.name, EventName::PostToolUse);
        assert_eq!(event.command_dir().as_deref(), Some("/w/api"));
        let tool = event.tool.unwrap();
        assert_eq!(tool.output.as_deref(), Some("All checks passed!\n"));
        let ToolInput::Shell {
            command: Some(command),
            ..
        } = tool.input
        else {
            panic!("not a shell call: {:?}", tool.input);
        };
        assert_eq!(command.text(), "bash\n-lc\nruff check .");
    }

    #[test]
    fn reads_claude_edits_and_session_starts() {
        let edit = HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {}, "tool_response": {"filePath": "/p/a.py"}}))
        .unwrap();
        assert_eq!(edit.host, Host::ClaudeCode);
        assert_eq!(
            edit.tool.unwrap().input,
            ToolInput::EditFile(Some("/p/a.py".into()))
        );
        let start = HookEvent::read(
            &json!({"session_id": "s", "hook_event_name": "SessionStart", "source": "clear"}),
        )
        .unwrap();
        assert_eq!(start.name, EventName::SessionStart(Some("clear".into())));
        assert!(start.tool.is_none());
    }

    #[test]
    fn events_without_a_session_are_not_read() {
        for event in [
            json!({"hook_event_name": "PostToolUse"}),
            json!({"session_id": "", "hook_event_name": "PostToolUse"}),
            json!({"session_id": 3}),
            json!("PostToolUse"),
        ] {
            assert_eq!(HookEvent::read(&event), None, "{event}");
        }
    }
}
