//! The hook event, read once from the host's JSON into a typed [`HookEvent`]. Reads: event JSON.
//!
//! Every host writes its own shape; one reader per host turns it into the same [`HookEvent`]
//! (event name, session, cwd, the tool call with its input and its output as text), and
//! everything after that (`plan`, the breaker) reads only the typed event. A new host is one new
//! reader in [`READERS`], not edits across the planner and the breaker.

use serde_json::{Map, Value};

use edits::patch::{argv_patch, resolved_ops, shell_patches_in, ResolvedOp};
use edits::paths::resolve_dir;
use edits::LineRanges;

/// The agent that sent the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Codex,
    ClaudeCode,
    /// Gemini CLI: `BeforeTool` / `AfterTool`, its own tool names, and its own output shapes.
    GeminiCli,
    /// GitHub Copilot CLI: camelCase events with no event name in them, its own tool names
    /// (`create`, `edit`, `apply_patch`, `bash`), and top-level output keys.
    CopilotCli,
    /// OpenCode: the event our plugin builds from `tool.execute.before|after`, its own tool
    /// names (`write`, `edit`, `apply_patch`, `bash`), and our plugin's output shapes.
    OpenCode,
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
    /// Codex: the context was compacted; GitHub Copilot CLI's `preCompact`: it is about to be.
    PostCompact,
    /// Claude Code (2.1.332+): a shell command a skill's or command's text holds is about to
    /// run (its `!` lines); it passes no `PreToolUse`. Read as a shell tool call, for the guard.
    PreSkillShellCommand,
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
    /// What a file-editing tool (Claude Code `Edit`/`Write`/`MultiEdit`, Gemini CLI
    /// `write_file`/`replace`) says about the lines it wrote; `None` for other tools (an
    /// `apply_patch`'s written lines come from its patch, in `written`).
    pub edit: Option<EditReport>,
    /// What a file-editing tool was asked to write (its `tool_input`), for the check made
    /// before the edit (`enforce`); `None` for other tools or when the input does not read.
    pub request: Option<EditRequest>,
}

/// What a file-editing tool was asked to do to its file, as its `tool_input` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditRequest {
    /// Write the whole file: Claude Code `Write`, Gemini CLI `write_file` (`content`).
    Write(String),
    /// Replace text, in order: Claude Code `Edit` (one) and `MultiEdit` (each of `edits`),
    /// Gemini CLI `replace` (one).
    Replace(Vec<Replacement>),
}

/// One replacement of an edit: `old` by `new`, once or (`all`) everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    pub old: String,
    pub new: String,
    pub all: bool,
}

/// What a file-editing tool's event says about the lines its edit wrote, read by the host's
/// reader; `written` turns it into line ranges of the file after the edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditReport {
    /// Exactly these lines (1-based, inclusive ranges, ascending): from the tool's own diff of
    /// the file (Claude Code's `structuredPatch`, Gemini CLI's `fileDiff`).
    Lines(LineRanges),
    /// Every line of the file after the edit: a file created, or overwritten with no diff.
    /// `content` is what was written, when the event carries it.
    WholeFile { content: Option<String> },
    /// `new` replaced `old`, once or (`all`) everywhere, with no diff in the event: found in
    /// the file after the edit. `original` is the file before the edit, when the event has it.
    Replace {
        old: String,
        new: String,
        all: bool,
        original: Option<String>,
    },
    /// The edit wrote nothing: it failed, or was held for review (Claude Code's `staged`).
    Nothing,
    /// Nothing the lines can be told from.
    Unknown,
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

/// GitHub Copilot CLI's file-editing tools: `create` (`path`, `file_text`) and `edit` (`path`,
/// `old_str`, `new_str`).
pub const COPILOT_EDIT_TOOLS: [&str; 2] = ["create", "edit"];
/// GitHub Copilot CLI's shell tool: `toolArgs.command`.
pub const COPILOT_SHELL_TOOL: &str = "bash";
/// OpenCode's file-editing tools: `write` (`filePath`, `content`) and `edit` (`filePath`,
/// `oldString`, `newString`, `replaceAll`).
pub const OPENCODE_EDIT_TOOLS: [&str; 2] = ["write", "edit"];
/// OpenCode's shell tool: `command`, run in `workdir`.
pub const OPENCODE_SHELL_TOOL: &str = "bash";

/// The host readers, tried in order; the first that recognises the event reads it.
pub const READERS: [fn(&Value) -> Option<HookEvent>; 4] = [
    read_opencode,
    read_copilot,
    read_gemini,
    read_codex_or_claude,
];

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

    /// The patches the tool call runs, each with the directory its relative paths are relative
    /// to: `apply_patch`'s own (against `cwd`), an argv `["apply_patch", PATCH]`, or those a
    /// shell command feeds to `apply_patch` (each element of an argv searched as a script).
    pub fn patches(&self) -> Vec<(&str, Option<String>)> {
        let Some(tool) = &self.tool else {
            return Vec::new();
        };
        match &tool.input {
            ToolInput::Patch(patches) => patches
                .iter()
                .map(|patch| (patch.as_str(), self.cwd.clone()))
                .collect(),
            ToolInput::Shell {
                command: Some(command),
                ..
            } => {
                let base = self.command_dir();
                let scripts: Vec<&str> = match command {
                    Command::Script(script) => vec![script],
                    Command::Argv(argv) => match argv_patch(argv) {
                        Some(patch) => return vec![(patch, base)],
                        None => argv.iter().map(String::as_str).collect(),
                    },
                };
                scripts
                    .into_iter()
                    .flat_map(|script| shell_patches_in(script, base.as_deref()))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The file operations of the call's patches ([`HookEvent::patches`]), each parsed once, paths
    /// resolved (none for a patch Codex would reject).
    pub fn patch_ops(&self) -> Vec<ResolvedOp<'_>> {
        self.patches()
            .into_iter()
            .flat_map(|(patch, base)| resolved_ops(patch, base.as_deref()))
            .collect()
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
        let edit = GEMINI_EDIT_TOOLS
            .contains(&tool)
            .then(|| gemini_edit(tool, input, event.get("tool_response")));
        let request = input.and_then(|input| match tool {
            "write_file" => Some(EditRequest::Write(str_field(input, "content")?.to_owned())),
            "replace" => Some(EditRequest::Replace(vec![replacement(
                input,
                ["old_string", "new_string", "allow_multiple"],
            )?])),
            _ => None,
        });
        ToolCall {
            name: tool.to_owned(),
            input: tool_input,
            output,
            edit,
            request,
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

/// GitHub Copilot CLI (1.0.x) with hooks configured under camelCase event names:
/// `{sessionId, timestamp, cwd, toolName, toolArgs, toolResult?, error?}` for tool events and
/// `{sessionId, timestamp, cwd, source, initialPrompt}` for `sessionStart`, `{sessionId,
/// timestamp, cwd, transcriptPath, trigger, customInstructions}` for `preCompact`, with no
/// event name in any. Recognised by `sessionId` beside neither `session_id` nor
/// `hook_event_name`; the event is told by what it carries: `toolResult` → `PostToolUse`,
/// `error` → `PostToolUseFailure`, a tool alone → `PreToolUse`, `source` → `SessionStart`,
/// `trigger` (`manual` for `/compact`, `auto`) → a compaction, read as `PostCompact`.
fn read_copilot(event: &Value) -> Option<HookEvent> {
    if event.get("session_id").is_some() || event.get("hook_event_name").is_some() {
        return None;
    }
    let session_id = str_field(event, "sessionId").filter(|s| !s.is_empty())?;
    let tool_name = str_field(event, "toolName");
    let name = match tool_name {
        Some(_) if event.get("toolResult").is_some() => EventName::PostToolUse,
        Some(_) if event.get("error").is_some() => EventName::PostToolUseFailure,
        Some(_) => EventName::PreToolUse,
        None => match str_field(event, "source") {
            Some(source) => EventName::SessionStart(Some(source.to_owned())),
            None if str_field(event, "trigger").is_some() => EventName::PostCompact,
            None => EventName::Other(String::new()),
        },
    };
    let tool = tool_name.map(|tool| copilot_tool(tool, &name, event));
    Some(HookEvent {
        host: Host::CopilotCli,
        name,
        session_id: session_id.to_owned(),
        cwd: str_field(event, "cwd").map(str::to_owned),
        tool,
    })
}

/// One Copilot CLI tool call: `create` and `edit` name their file in `toolArgs.path`, `bash`
/// its command in `toolArgs.command`, and `apply_patch` (offered to `gpt-5` models) takes the
/// patch text as `toolArgs` itself. `toolResult.textResultForLlm` is what the model reads; a
/// shell command that exits non-zero is still a `success` whose text ends in
/// `<shellId: N completed with exit code N>`.
fn copilot_tool(tool: &str, name: &EventName, event: &Value) -> ToolCall {
    let args = event.get("toolArgs");
    let result = event.get("toolResult");
    let failed = *name == EventName::PostToolUseFailure
        || result
            .and_then(|r| str_field(r, "resultType"))
            .is_some_and(|t| t != "success");
    let input = if COPILOT_EDIT_TOOLS.contains(&tool) {
        ToolInput::EditFile(args.and_then(|a| str_field(a, "path")).map(str::to_owned))
    } else if tool == COPILOT_SHELL_TOOL {
        ToolInput::Shell {
            command: shell_command(args),
            workdir: None,
        }
    } else if tool == PATCH_TOOL {
        ToolInput::Patch(patch_texts(args))
    } else {
        ToolInput::Other
    };
    let text = result
        .and_then(|r| str_field(r, "textResultForLlm"))
        .or_else(|| str_field(event, "error"));
    let output = text.map(|text| match tool {
        COPILOT_SHELL_TOOL => copilot_shell_output(text).to_owned(),
        PATCH_TOOL if !failed => copilot_patch_summary(text),
        _ => text.to_owned(),
    });
    let request = args.and_then(|args| match tool {
        "create" => Some(EditRequest::Write(str_field(args, "file_text")?.to_owned())),
        // `new_str` is optional in the tool's schema: left out, the text is deleted.
        "edit" => Some(EditRequest::Replace(vec![Replacement {
            old: str_field(args, "old_str")?.to_owned(),
            new: str_field(args, "new_str").unwrap_or("").to_owned(),
            all: false,
        }])),
        _ => None,
    });
    // No diff in the event: `create` wrote a new file (it refuses an existing one), `edit`
    // replaced exactly one occurrence (it refuses a text found twice).
    let edit = COPILOT_EDIT_TOOLS.contains(&tool).then(|| match &request {
        _ if failed => EditReport::Nothing,
        request => report_of(request.as_ref()),
    });
    ToolCall {
        name: tool.to_owned(),
        input,
        output,
        edit,
        request,
    }
}

/// What Copilot CLI's `bash` printed, without the `<shellId: N completed with exit code N>`
/// line it ends the text with.
fn copilot_shell_output(text: &str) -> &str {
    let trimmed = text.trim_end();
    let (before, last) = trimmed.rsplit_once('\n').unwrap_or(("", trimmed));
    if last.starts_with("<shellId: ") && last.ends_with('>') {
        before
    } else {
        text
    }
}

/// Copilot CLI's `apply_patch` result (`Added N file(s): A, B` / `Modified N file(s): …` /
/// `Deleted …` lines) as Codex's `Success. Updated the following files:` summary, which says
/// which files the patch was applied to; any other text is kept as it is.
fn copilot_patch_summary(text: &str) -> String {
    let mut summary = Vec::new();
    for line in text.lines() {
        let (mark, rest) = if let Some(rest) = line.strip_prefix("Added ") {
            ("A", rest)
        } else if let Some(rest) = line.strip_prefix("Modified ") {
            ("M", rest)
        } else if let Some(rest) = line.strip_prefix("Deleted ") {
            ("D", rest)
        } else {
            continue;
        };
        let Some((_, paths)) = rest.split_once(" file(s): ") else {
            continue;
        };
        summary.extend(
            paths
                .split(", ")
                .filter(|p| !p.trim().is_empty())
                .map(|p| format!("{mark} {}", p.trim())),
        );
    }
    if summary.is_empty() {
        return text.to_owned();
    }
    format!(
        "Success. Updated the following files:\n{}\n",
        summary.join("\n")
    )
}

/// OpenCode (1.18.x), through the plugin `guidebook hooks install --opencode` writes, which
/// builds the event from its `tool.execute.before|after` hooks and `session.compacted` event:
/// `{"hook_event_name", "session_id", "cwd", "tool_name", "tool_input": ARGS, "tool_response":
/// {"output", "metadata"}}`. Tools: `write` (`filePath`, `content`), `edit` (`filePath`,
/// `oldString`, `newString`, `replaceAll`; its result's `metadata.filediff.patch` is a jsdiff
/// unified diff of the file), `apply_patch` (`patchText`; its output Codex's summary), `bash`
/// (`command`, `workdir`; its output the command's, the exit code in `metadata.exit`).
fn read_opencode(event: &Value) -> Option<HookEvent> {
    let name = match str_field(event, "hook_event_name")? {
        "tool.execute.before" => EventName::PreToolUse,
        "tool.execute.after" => EventName::PostToolUse,
        "session.compacted" => EventName::PostCompact,
        _ => return None,
    };
    let session_id = str_field(event, "session_id").filter(|s| !s.is_empty())?;
    let tool = str_field(event, "tool_name").map(|tool| {
        let args = event.get("tool_input");
        let response = event.get("tool_response");
        let input = if OPENCODE_EDIT_TOOLS.contains(&tool) {
            ToolInput::EditFile(
                args.and_then(|a| str_field(a, "filePath"))
                    .map(str::to_owned),
            )
        } else if tool == OPENCODE_SHELL_TOOL {
            ToolInput::Shell {
                command: shell_command(args),
                workdir: args
                    .and_then(|a| str_field(a, "workdir"))
                    .map(str::to_owned),
            }
        } else if tool == PATCH_TOOL {
            let patch = args.and_then(|a| str_field(a, "patchText"));
            ToolInput::Patch(patch.map(str::to_owned).into_iter().collect())
        } else {
            ToolInput::Other
        };
        let request = args.and_then(|args| match tool {
            "write" => Some(EditRequest::Write(str_field(args, "content")?.to_owned())),
            "edit" => Some(EditRequest::Replace(vec![replacement(
                args,
                ["oldString", "newString", "replaceAll"],
            )?])),
            _ => None,
        });
        let edit = OPENCODE_EDIT_TOOLS
            .contains(&tool)
            .then(|| opencode_edit(request.as_ref(), response));
        ToolCall {
            name: tool.to_owned(),
            input,
            output: response
                .and_then(|r| str_field(r, "output"))
                .map(str::to_owned),
            edit,
            request,
        }
    });
    Some(HookEvent {
        host: Host::OpenCode,
        name,
        session_id: session_id.to_owned(),
        cwd: str_field(event, "cwd").map(str::to_owned),
        tool,
    })
}

/// What an OpenCode `write` or `edit` wrote: an `edit`'s lines from its result's
/// `metadata.filediff.patch`; a `write` the whole file (its result has no diff); an `edit`
/// without a diff that reads, its `newString` found in the file.
fn opencode_edit(request: Option<&EditRequest>, response: Option<&Value>) -> EditReport {
    let diff = response
        .and_then(|r| r.get("metadata"))
        .and_then(|m| m.get("filediff"))
        .and_then(|f| str_field(f, "patch"));
    let lines = match request {
        Some(EditRequest::Replace(_)) => {
            diff.and_then(|diff| edits::unified::written_lines(diff.as_bytes()))
        }
        _ => None,
    };
    lines.map_or_else(|| report_of(request), EditReport::Lines)
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
        Some("PreSkillShellCommand") => EventName::PreSkillShellCommand,
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
        // A skill's shell command is `{command}` whichever shell runs it (Bash, PowerShell).
        input: if name == EventName::PreSkillShellCommand {
            tool_input("Bash", event.get("tool_input"), None)
        } else {
            tool_input(tool, event.get("tool_input"), event.get("tool_response"))
        },
        output: event
            .get("tool_response")
            .and_then(output_text)
            .or_else(|| str_field(event, "error").map(str::to_owned)),
        edit: EDIT_TOOLS.contains(&tool).then(|| {
            claude_edit(
                tool,
                &name,
                event.get("tool_input"),
                event.get("tool_response"),
            )
        }),
        request: event
            .get("tool_input")
            .and_then(|input| claude_request(tool, input)),
    });
    Some(HookEvent {
        host,
        name,
        session_id: session_id.to_owned(),
        cwd: str_field(event, "cwd").map(str::to_owned),
        tool,
    })
}

/// What Claude Code's `Write` (`content`), `Edit` (`old_string`, `new_string`, `replace_all`)
/// or `MultiEdit` (`edits`, each of those three) was asked to do; `None` when the input does not
/// read as that (a `MultiEdit` with no edit among them).
fn claude_request(tool: &str, input: &Value) -> Option<EditRequest> {
    match tool {
        "Write" => Some(EditRequest::Write(str_field(input, "content")?.to_owned())),
        "Edit" => Some(EditRequest::Replace(vec![replacement(
            input,
            CLAUDE_REPLACEMENT,
        )?])),
        "MultiEdit" => {
            let edits = input.get("edits")?.as_array()?;
            let replacements = edits
                .iter()
                .map(|edit| replacement(edit, CLAUDE_REPLACEMENT))
                .collect::<Option<Vec<_>>>()?;
            (!replacements.is_empty()).then_some(EditRequest::Replace(replacements))
        }
        _ => None,
    }
}

/// Claude Code's keys of a replacement: `old_string`, `new_string`, `replace_all`.
const CLAUDE_REPLACEMENT: [&str; 3] = ["old_string", "new_string", "replace_all"];

/// One replacement, under the keys `[old, new, all]` its host names them by: everywhere when
/// `all` is `true`.
fn replacement(input: &Value, [old, new, all]: [&str; 3]) -> Option<Replacement> {
    Some(Replacement {
        old: str_field(input, old)?.to_owned(),
        new: str_field(input, new)?.to_owned(),
        all: input.get(all) == Some(&Value::Bool(true)),
    })
}

/// What an edit request wrote when its host reports no diff: a `Write` the whole file, a
/// replacement its first (and, for these hosts, only) one, found in the file.
fn report_of(request: Option<&EditRequest>) -> EditReport {
    match request {
        Some(EditRequest::Write(content)) => EditReport::WholeFile {
            content: Some(content.clone()),
        },
        Some(EditRequest::Replace(replacements)) => EditReport::Replace {
            old: replacements[0].old.clone(),
            new: replacements[0].new.clone(),
            all: replacements[0].all,
            original: None,
        },
        None => EditReport::Unknown,
    }
}

/// Claude Code's `Edit`, `Write` and `MultiEdit` (2.1.x): `tool_response` is the tool's own
/// result, with `structuredPatch` (jsdiff hunks of the whole file: `newStart`, `newLines`,
/// `lines` marked `+`, `-` or a space), `originalFile`, and for `Write` its `type` (`create` or
/// `update`) and `content`; `staged: true` when the edit was held for review, the file
/// unchanged. A failed call (`PostToolUseFailure`) wrote nothing.
fn claude_edit(
    tool: &str,
    name: &EventName,
    input: Option<&Value>,
    response: Option<&Value>,
) -> EditReport {
    if *name == EventName::PostToolUseFailure {
        return EditReport::Nothing;
    }
    let Some(response) = response.filter(|r| r.is_object()) else {
        return EditReport::Unknown;
    };
    if response.get("staged") == Some(&Value::Bool(true)) {
        return EditReport::Nothing;
    }
    let hunks = response.get("structuredPatch").and_then(Value::as_array);
    if let Some(hunks) = hunks.filter(|h| !h.is_empty()) {
        return structured_patch_lines(hunks).map_or(EditReport::Unknown, EditReport::Lines);
    }
    let original = str_field(response, "originalFile").map(str::to_owned);
    match tool {
        "Write" => {
            let content = input
                .and_then(|i| str_field(i, "content"))
                .or_else(|| str_field(response, "content").filter(|c| !c.is_empty()))
                .map(str::to_owned);
            match (&original, &content) {
                // An overwrite with nothing changed: the diff is empty because there is none.
                (Some(before), Some(after)) if before == after => EditReport::Nothing,
                // Created, or overwritten with no diff (too large, or the diff timed out).
                _ => EditReport::WholeFile { content },
            }
        }
        "Edit" => match input
            .and_then(|i| Some((str_field(i, "old_string")?, str_field(i, "new_string")?)))
        {
            Some((old, new)) => EditReport::Replace {
                old: old.to_owned(),
                new: new.to_owned(),
                all: input.and_then(|i| i.get("replace_all")) == Some(&Value::Bool(true)),
                original,
            },
            None => EditReport::Unknown,
        },
        _ => EditReport::Unknown,
    }
}

/// The written lines of jsdiff's `structuredPatch` hunks (`oldStart`, `oldLines`, `newStart`,
/// `newLines`, `lines`), read as the unified diff they are. `None` when a hunk does not add
/// up, so that a shape this reader does not know is never guessed at.
fn structured_patch_lines(hunks: &[Value]) -> Option<LineRanges> {
    let mut diff = String::new();
    for hunk in hunks {
        let number = |key| hunk.get(key).and_then(Value::as_u64);
        let (old, old_lines) = (number("oldStart")?, number("oldLines")?);
        let (new, new_lines) = (number("newStart")?, number("newLines")?);
        diff.push_str(&format!("@@ -{old},{old_lines} +{new},{new_lines} @@\n"));
        for line in hunk.get("lines")?.as_array()? {
            diff.push_str(line.as_str()?);
            diff.push('\n');
        }
    }
    edits::unified::written_lines(diff.as_bytes())
}

/// Gemini CLI 0.61's `write_file` and `replace`: `tool_response.returnDisplay` is an object with
/// `fileDiff` (a unified diff of the file before and after, by jsdiff's `createPatch`) for a
/// write and for a replacement in an existing file, and `error` is set when the call failed.
/// A `replace` that creates a file answers with text only, and a `write_file` whose diff does
/// not read is all written.
fn gemini_edit(tool: &str, input: Option<&Value>, response: Option<&Value>) -> EditReport {
    let Some(response) = response else {
        return EditReport::Unknown;
    };
    if response.get("error").is_some_and(|e| !e.is_null()) {
        return EditReport::Nothing;
    }
    let display = response.get("returnDisplay");
    let before = display.and_then(|d| str_field(d, "originalContent"));
    let after = display.and_then(|d| str_field(d, "newContent"));
    if let Some(lines) = display
        .and_then(|d| str_field(d, "fileDiff"))
        .and_then(|diff| edits::unified::written_lines(diff.as_bytes()))
    {
        return EditReport::Lines(lines);
    }
    if before.is_some() && before == after {
        // Written over with the same text: a diff without hunks, nothing written.
        return EditReport::Nothing;
    }
    let original = before.map(str::to_owned);
    match tool {
        "write_file" => EditReport::WholeFile {
            content: input
                .and_then(|i| str_field(i, "content"))
                .map(str::to_owned),
        },
        _ => match input
            .and_then(|i| Some((str_field(i, "old_string")?, str_field(i, "new_string")?)))
        {
            Some((old, new)) => EditReport::Replace {
                old: old.to_owned(),
                new: new.to_owned(),
                all: input.and_then(|i| i.get("allow_multiple")) == Some(&Value::Bool(true)),
                original,
            },
            None => EditReport::Unknown,
        },
    }
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

    /// Copilot CLI 1.0.102's camelCase payloads, as a real run logged them: no event name, so
    /// the event is told by what it carries.
    #[test]
    fn reads_copilot_cli_events_by_what_they_carry() {
        let pre = HookEvent::read(&json!({"sessionId": "c7", "timestamp": 1, "cwd": "/w",
            "toolName": "create", "toolArgs": {"path": "/w/App.kt", "file_text": "a\nb\n"}}))
        .unwrap();
        assert_eq!(
            (pre.host, &pre.name),
            (Host::CopilotCli, &EventName::PreToolUse)
        );
        let tool = pre.tool.unwrap();
        assert_eq!(tool.input, ToolInput::EditFile(Some("/w/App.kt".into())));
        assert_eq!(tool.request, Some(EditRequest::Write("a\nb\n".into())));

        let post = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w", "toolName": "edit",
            "toolArgs": {"path": "/w/App.kt", "old_str": "a\n"},
            "toolResult": {"resultType": "success", "textResultForLlm": "File /w/App.kt updated with changes."}}))
        .unwrap();
        assert_eq!(post.name, EventName::PostToolUse);
        assert_eq!(
            post.tool.unwrap().edit,
            Some(EditReport::Replace {
                old: "a\n".into(),
                new: String::new(),
                all: false,
                original: None
            })
        );

        let bash = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w", "toolName": "bash",
            "toolArgs": {"command": "ruff check .", "description": "lint"},
            "toolResult": {"resultType": "success",
                "textResultForLlm": "F401 unused\n<shellId: 0 completed with exit code 1>"}}))
        .unwrap();
        let tool = bash.tool.unwrap();
        assert_eq!(tool.output.as_deref(), Some("F401 unused"));
        assert!(matches!(
            tool.input,
            ToolInput::Shell {
                command: Some(_),
                ..
            }
        ));

        let failed = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w", "toolName": "edit",
            "toolArgs": {"path": "/w/A.kt", "old_str": "x", "new_str": "y"}, "error": "ENOENT"}))
        .unwrap();
        assert_eq!(failed.name, EventName::PostToolUseFailure);
        assert_eq!(failed.tool.unwrap().edit, Some(EditReport::Nothing));

        let patch = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w", "toolName": "apply_patch",
            "toolArgs": "*** Begin Patch\n*** Add File: B.kt\n+x\n*** End Patch\n",
            "toolResult": {"resultType": "success",
                "textResultForLlm": "Added 1 file(s): /w/B.kt\nModified 2 file(s): /w/A.kt, /w/C.kt"}}))
        .unwrap();
        let tool = patch.tool.unwrap();
        assert_eq!(
            tool.input,
            ToolInput::Patch(vec![
                "*** Begin Patch\n*** Add File: B.kt\n+x\n*** End Patch\n".into()
            ])
        );
        assert_eq!(
            tool.output.as_deref(),
            Some("Success. Updated the following files:\nA /w/B.kt\nM /w/A.kt\nM /w/C.kt\n")
        );

        let start = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w", "source": "new",
            "initialPrompt": "hi"}))
        .unwrap();
        assert_eq!(start.name, EventName::SessionStart(Some("new".into())));
        let compact = HookEvent::read(&json!({"sessionId": "c7", "cwd": "/w",
            "transcriptPath": "/h/events.jsonl", "trigger": "manual", "customInstructions": ""}))
        .unwrap();
        assert_eq!(compact.name, EventName::PostCompact);
        // Claude Code's shape is not taken for Copilot's.
        let claude = HookEvent::read(&json!({"session_id": "s", "sessionId": "x",
            "hook_event_name": "PostToolUse"}))
        .unwrap();
        assert_eq!(claude.host, Host::ClaudeCode);
    }

    /// The events our OpenCode plugin builds from OpenCode 1.18.33's hook arguments.
    #[test]
    fn reads_the_events_of_our_opencode_plugin() {
        let write = HookEvent::read(&json!({"hook_event_name": "tool.execute.after",
            "session_id": "ses_1", "cwd": "/w", "tool_name": "write",
            "tool_input": {"filePath": "/w/App.kt", "content": "a\n"},
            "tool_response": {"output": "Wrote file successfully.", "metadata": {"exists": false}}}))
        .unwrap();
        assert_eq!(
            (write.host, &write.name),
            (Host::OpenCode, &EventName::PostToolUse)
        );
        let tool = write.tool.unwrap();
        assert_eq!(tool.input, ToolInput::EditFile(Some("/w/App.kt".into())));
        assert_eq!(
            tool.edit,
            Some(EditReport::WholeFile {
                content: Some("a\n".into())
            })
        );

        let patch = "Index: /w/App.kt\n===================================================================\n--- /w/App.kt\n+++ /w/App.kt\n@@ -1,3 +1,3 @@\n fun main() {\n-    x\n+    y\n }\n";
        let edit = HookEvent::read(&json!({"hook_event_name": "tool.execute.after",
            "session_id": "ses_1", "cwd": "/w", "tool_name": "edit",
            "tool_input": {"filePath": "/w/App.kt", "oldString": "    x\n", "newString": "    y\n"},
            "tool_response": {"output": "Edit applied successfully.",
                "metadata": {"filediff": {"file": "/w/App.kt", "patch": patch}}}}))
        .unwrap();
        assert_eq!(
            edit.tool.unwrap().edit,
            Some(EditReport::Lines(vec![[2, 2]].into()))
        );

        let before = HookEvent::read(&json!({"hook_event_name": "tool.execute.before",
            "session_id": "ses_1", "cwd": "/w", "tool_name": "bash",
            "tool_input": {"command": "ruff check .", "workdir": "api"}}))
        .unwrap();
        assert_eq!(before.name, EventName::PreToolUse);
        assert_eq!(before.command_dir().as_deref(), Some("/w/api"));

        let compacted = HookEvent::read(&json!({"hook_event_name": "session.compacted",
            "session_id": "ses_1", "cwd": "/w"}))
        .unwrap();
        assert_eq!(compacted.name, EventName::PostCompact);
        assert!(HookEvent::read(&json!({"hook_event_name": "tool.execute.after"})).is_none());
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
