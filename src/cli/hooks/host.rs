//! What we know of each agent host: its hook events and matchers, our groups per wiring, the
//! `mcp_tool` input templates, and which handlers are ours. Reads and writes nothing.
//!
//! Both hosts use one shape: `{"hooks": {EVENT: [GROUP, ...]}}` where a GROUP is
//! `{"matcher"?: REGEX, "hooks": [HANDLER, ...]}` and a HANDLER is
//! `{"type": "command", "command": CMD, "timeout"?: SECONDS}` or, run as a call on a connected
//! MCP server, `{"type": "mcp_tool", "server": NAME, "tool": TOOL, "input": TEMPLATE}`. A handler
//! is *ours* when its command is exactly a path to `guidebook-hook` and the shim's own flags
//! ([`is_our_command`]), or when it is an `mcp_tool` handler on our server (`guidebook`).
//! Installing one wiring replaces the other's handlers.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The program name that marks a handler as ours.
pub const HOOK_PROGRAM: &str = "guidebook-hook";

/// How a host reads its JSON settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Json,
    /// JSON with `//` and `/* */` comments (Gemini CLI's `strip-json-comments`).
    Jsonc,
}

/// An agent host whose hooks we configure: the shim's [`Host`], one enum for both.
pub use guidebook_hook::event::Host;

/// What `hooks install` knows of each host: its name, hook timeout unit, flag, events and
/// `mcp_tool` groups.
pub(crate) trait HostHooks: Sized {
    fn name(self) -> &'static str;
    fn hook_timeout(self) -> u32;
    fn flag(self) -> &'static str;
    fn events(self) -> &'static [(&'static str, Option<&'static str>)];
    fn mcp_groups(self) -> &'static [(&'static str, &'static [GroupSpec])];
    /// Our groups for each event under `wiring`.
    fn groups(self, wiring: &Wiring) -> Vec<(&'static str, Vec<Group>)>;
    /// How this host reads its hooks settings.
    fn dialect(self) -> Dialect;
}

impl HostHooks for Host {
    fn name(self) -> &'static str {
        match self {
            Host::Codex => "Codex",
            Host::ClaudeCode => "Claude Code",
            Host::GeminiCli => "Gemini CLI",
            Host::CopilotCli => "GitHub Copilot CLI",
            Host::OpenCode => "OpenCode",
        }
    }

    /// How long the host waits for one hook, in the unit its settings use: seconds for Codex
    /// and Claude Code and Copilot CLI, milliseconds for Gemini CLI and our OpenCode plugin.
    /// The shim itself gives up after 2 s.
    fn hook_timeout(self) -> u32 {
        match self {
            Host::Codex | Host::ClaudeCode | Host::CopilotCli => TIMEOUT_SECONDS,
            Host::GeminiCli | Host::OpenCode => TIMEOUT_SECONDS * 1000,
        }
    }

    /// The flag of `guidebook hooks install` that selects this host.
    fn flag(self) -> &'static str {
        match self {
            Host::Codex => "--codex",
            Host::ClaudeCode => "--claude",
            Host::GeminiCli => "--gemini",
            Host::CopilotCli => "--copilot",
            Host::OpenCode => "--opencode",
        }
    }

    /// The events we hook, each with its matcher: file edits (and the checks the agent runs),
    /// and the moments a session forgets its context (compaction, `/clear`), after which
    /// guidelines are shown again.
    fn events(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            // PreToolUse of the editing tools is where the circuit breaker denies an edit of
            // a halted session; PostToolUse of `Bash` is where it sees ruff and pyright runs.
            Host::Codex => &[
                ("PreToolUse", Some("^(apply_patch|Bash)$")),
                ("PostToolUse", Some("^(apply_patch|Bash)$")),
                ("PostCompact", None),
                ("SessionStart", Some("^(compact|clear)$")),
            ],
            // A Bash command that exits non-zero (a failing ruff or pyright run) is a
            // `PostToolUseFailure` in Claude Code, not a `PostToolUse`: the breaker needs both.
            Host::ClaudeCode => &[
                // `Bash` too: the guard denies the agent's own commands that would lift its
                // guardrails (docs/security.md).
                ("PreToolUse", Some("Edit|Write|MultiEdit|Bash")),
                ("PostToolUse", Some("Edit|Write|MultiEdit|Bash")),
                ("PostToolUseFailure", Some("Bash")),
                ("SessionStart", Some("compact|clear")),
                // A skill's or command's `!` shell line (2.1.332+) passes no `PreToolUse`:
                // the guard judges it here. An older Claude Code skips the event with a
                // warning on stderr.
                ("PreSkillShellCommand", None),
            ],
            // Gemini CLI matches tool events by regex on its own tool names. `SessionStart` (no
            // matcher: `clear` resets, the other sources say nothing) follows `/clear`.
            // `PreCompress` is not hooked: Gemini CLI 0.61 fires it before every model turn,
            // compression or not, and a reset there would repeat every guideline each turn.
            Host::GeminiCli => &[
                (
                    "BeforeTool",
                    Some("^(write_file|replace|run_shell_command)$"),
                ),
                (
                    "AfterTool",
                    Some("^(write_file|replace|run_shell_command)$"),
                ),
                ("SessionStart", None),
            ],
            // Copilot CLI (1.0.102): camelCase events, whose payloads the shim reads; the
            // matcher must match the whole tool name. `apply_patch` replaces `create`/`edit`
            // for `gpt-5` models. A failing shell command is a `postToolUse` too, and its
            // `sessionStart` sources (`new`, `resume`, `startup`) never mean a reset; its
            // `preCompact` (`/compact`, or automatic) does.
            Host::CopilotCli => &[
                ("preToolUse", Some("^(create|edit|apply_patch|bash)$")),
                ("postToolUse", Some("^(create|edit|apply_patch|bash)$")),
                ("preCompact", None),
            ],
            // OpenCode has no hook settings: our plugin picks its tools (`opencode`).
            Host::OpenCode => &[],
        }
    }

    /// Our groups per event when the hooks are `mcp_tool` calls: the same events and tools as
    /// [`Host::events`], each group with its input template.
    fn mcp_groups(self) -> &'static [(&'static str, &'static [GroupSpec])] {
        match self {
            Host::Codex => &[
                (
                    "PreToolUse",
                    &[(Some("^(apply_patch|Bash)$"), CODEX_PRE_TOOL_USE)],
                ),
                (
                    "PostToolUse",
                    &[(Some("^(apply_patch|Bash)$"), CODEX_POST_TOOL_USE)],
                ),
                ("PostCompact", &[(None, CODEX_POST_COMPACT)]),
                (
                    "SessionStart",
                    &[(Some("^(compact|clear)$"), SESSION_START)],
                ),
            ],
            Host::ClaudeCode => &[
                (
                    "PreToolUse",
                    &[
                        (Some("Edit|Write|MultiEdit"), CLAUDE_EDIT_GATE),
                        (Some("Bash"), CLAUDE_BASH_GATE),
                    ],
                ),
                (
                    "PostToolUse",
                    &[
                        (Some("Edit|Write|MultiEdit"), CLAUDE_EDIT),
                        (Some("Bash"), CLAUDE_BASH),
                    ],
                ),
                ("PostToolUseFailure", &[(Some("Bash"), CLAUDE_BASH_FAILURE)]),
                ("SessionStart", &[(Some("compact|clear"), SESSION_START)]),
                ("PreSkillShellCommand", &[(None, CLAUDE_BASH_GATE)]),
            ],
            // Gemini CLI and Copilot CLI run command hooks only; OpenCode, a plugin.
            Host::GeminiCli | Host::CopilotCli | Host::OpenCode => &[],
        }
    }

    fn dialect(self) -> Dialect {
        match self {
            Host::GeminiCli => Dialect::Jsonc,
            Host::Codex | Host::ClaudeCode | Host::CopilotCli | Host::OpenCode => Dialect::Json,
        }
    }

    fn groups(self, wiring: &Wiring) -> Vec<(&'static str, Vec<Group>)> {
        match wiring {
            Wiring::Command(command) => self
                .events()
                .iter()
                .map(|&(event, matcher)| {
                    let handler = Handler::Command {
                        kind: "command",
                        command: command.clone(),
                        timeout: self.hook_timeout(),
                    };
                    (
                        event,
                        vec![Group {
                            matcher,
                            hooks: [handler],
                        }],
                    )
                })
                .collect(),
            Wiring::Mcp => self
                .mcp_groups()
                .iter()
                .map(|&(event, specs)| {
                    let groups = specs
                        .iter()
                        .map(|&(matcher, input)| Group {
                            matcher,
                            hooks: [Handler::McpTool {
                                kind: "mcp_tool",
                                server: MCP_SERVER,
                                tool: MCP_HOOK_TOOL,
                                input: TemplateObject(input),
                                timeout: self.hook_timeout(),
                            }],
                        })
                        .collect();
                    (event, groups)
                })
                .collect(),
        }
    }
}

/// Seconds the host waits for the shim; the shim itself gives up after 2 s.
const TIMEOUT_SECONDS: u32 = 5;

/// The name our MCP server is registered under (`[mcp_servers.guidebook]`, `mcpServers`).
pub const MCP_SERVER: &str = "guidebook";
/// The tool of our MCP server that the `mcp_tool` hooks call.
pub const MCP_HOOK_TOOL: &str = "hook";

/// How the hooks reach us.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wiring {
    /// A command hook running `guidebook-hook` (this command line): a process per hook.
    Command(String),
    /// An `mcp_tool` hook calling `guidebook mcp`'s `hook` tool: no process per hook.
    Mcp,
}

/// One value of an `mcp_tool` input template: a `"${field}"` placeholder, or an object of them.
#[derive(Debug)]
pub enum Template {
    Field(&'static str),
    Object(&'static [(&'static str, &'static str)]),
}

impl Serialize for Template {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Template::Field(placeholder) => s.serialize_str(placeholder),
            Template::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, placeholder) in *members {
                    map.serialize_entry(key, placeholder)?;
                }
                map.end()
            }
        }
    }
}

/// One of our groups for an event: its matcher and, for `mcp_tool` hooks, the input template.
/// The template names only fields the event has: Codex fails a hook whose placeholder the event
/// lacks. A whole-value placeholder keeps its JSON type in Codex, so `"${tool_input}"` passes the
/// tool's input object. Claude Code documents `${path}` substitution in string values only, so
/// its templates name the leaves the hook reads (`${tool_input.file_path}`), one group per tool
/// family so that no template names a field its tools lack.
pub type GroupSpec = (Option<&'static str>, &'static [(&'static str, Template)]);

const CODEX_PRE_TOOL_USE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    ("tool_input", Template::Field("${tool_input}")),
    ("cwd", Template::Field("${cwd}")),
];
const CODEX_POST_TOOL_USE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    ("tool_input", Template::Field("${tool_input}")),
    ("tool_response", Template::Field("${tool_response}")),
    ("cwd", Template::Field("${cwd}")),
];
/// `PostCompact` carries no `source` nor tool fields; the hook needs only the session.
const CODEX_POST_COMPACT: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
];
/// `SessionStart` has `source` (the hook resets on `compact` and `clear`), and no `turn_id`.
const SESSION_START: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("source", Template::Field("${source}")),
];
/// The edit gate: the session for the breaker, the file for the guard.
const CLAUDE_EDIT_GATE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    (
        "tool_input",
        Template::Object(&[("file_path", "${tool_input.file_path}")]),
    ),
    ("cwd", Template::Field("${cwd}")),
];
/// A shell command about to run, for the guard.
const CLAUDE_BASH_GATE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    (
        "tool_input",
        Template::Object(&[("command", "${tool_input.command}")]),
    ),
    ("cwd", Template::Field("${cwd}")),
];
const CLAUDE_EDIT: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    (
        "tool_input",
        Template::Object(&[("file_path", "${tool_input.file_path}")]),
    ),
    ("cwd", Template::Field("${cwd}")),
];
/// A failed Bash call carries its output as `error`, and no `tool_response`.
const CLAUDE_BASH_FAILURE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    (
        "tool_input",
        Template::Object(&[("command", "${tool_input.command}")]),
    ),
    ("error", Template::Field("${error}")),
    ("cwd", Template::Field("${cwd}")),
];

const CLAUDE_BASH: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
    (
        "tool_input",
        Template::Object(&[("command", "${tool_input.command}")]),
    ),
    (
        "tool_response",
        Template::Object(&[
            ("stdout", "${tool_response.stdout}"),
            ("stderr", "${tool_response.stderr}"),
        ]),
    ),
    ("cwd", Template::Field("${cwd}")),
];

/// Whether `command` is one we wrote: exactly a path to `guidebook-hook`, possibly quoted,
/// followed by nothing but the shim's own `--socket PATH` (or `--socket=PATH`), with nothing a
/// shell would run, expand or redirect anywhere in it. The path is the bare name (found on
/// `PATH`), an absolute path, or `~/…`: a relative one (`./tools/guidebook-hook`) names a file
/// of whatever repository the agent runs in, so it is not ours. A command that merely starts
/// with our program (`guidebook-hook && curl … | sh`) is not ours either: it is left alone,
/// never replaced, never trusted.
pub fn is_our_command(command: &str) -> bool {
    let Some(words) = shell_words(command) else {
        return false;
    };
    let mut words = words.into_iter();
    let Some(program) = words.next() else {
        return false;
    };
    let name_ok = program.text.rsplit('/').next() == Some(HOOK_PROGRAM);
    let place_ok = !program.text.contains('/')
        || program.text.starts_with('/')
        || (program.text.starts_with("~/") && program.tilde_expands);
    if !name_ok || !place_ok || program.text.contains('=') {
        return false;
    }
    while let Some(word) = words.next() {
        match word.text.as_str() {
            "--socket" => {
                if words.next().is_none() {
                    return false;
                }
            }
            flag if flag.starts_with("--socket=") => {}
            _ => return false,
        }
    }
    true
}

/// One word of a command line, its quotes removed.
#[derive(Debug, PartialEq, Eq)]
struct Word {
    text: String,
    /// It starts with an unquoted `~`, which the shell expands to the home directory.
    tilde_expands: bool,
}

/// The words of `command` if it is plain enough to read without a shell: words of letters,
/// digits and `/._+,:@%~=-`, single-quoted text (anything but a quote or a line break),
/// double-quoted text without `$`, `` ` ``, `\\` or `!`, and `\\'` (the quote inside
/// single-quoted text, as [`super::shell_quote`] writes it). Anything else (`;&|$`<>()`, globs,
/// line breaks, other escapes) gives `None`.
fn shell_words(command: &str) -> Option<Vec<Word>> {
    let mut words = Vec::new();
    let mut chars = command.chars().peekable();
    loop {
        while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
        let Some(&first) = chars.peek() else {
            return Some(words);
        };
        let mut word = Word {
            text: String::new(),
            tilde_expands: first == '~',
        };
        while let Some(&c) = chars.peek() {
            match c {
                ' ' | '\t' => break,
                '\'' => {
                    chars.next();
                    loop {
                        match chars.next()? {
                            '\'' => break,
                            '\n' | '\r' | '\0' => return None,
                            c => word.text.push(c),
                        }
                    }
                }
                '"' => {
                    chars.next();
                    loop {
                        match chars.next()? {
                            '"' => break,
                            '$' | '`' | '\\' | '!' | '\n' | '\r' | '\0' => return None,
                            c => word.text.push(c),
                        }
                    }
                }
                '\\' => {
                    chars.next();
                    match chars.next()? {
                        '\'' => word.text.push('\''),
                        _ => return None,
                    }
                }
                c if c.is_ascii_alphanumeric() || "/._+,:@%~=-".contains(c) => {
                    chars.next();
                    word.text.push(c);
                }
                _ => return None,
            }
        }
        words.push(word);
    }
}

/// The program a shell command line runs: its first word, without the quotes around it.
pub fn program(command: &str) -> &str {
    let command = command.trim_start();
    match command.chars().next() {
        Some(quote @ ('\'' | '"')) => command[1..].split(quote).next().unwrap_or(""),
        _ => command.split_whitespace().next().unwrap_or(""),
    }
}

/// One of our groups, in the key order the README shows.
#[derive(Debug, Serialize)]
pub(crate) struct Group {
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'static str>,
    hooks: [Handler; 1],
}

impl Group {
    /// The matcher we give this group (`None`: the event takes none).
    pub(super) fn matcher(&self) -> Option<&'static str> {
        self.matcher
    }

    /// The group's `hooks` array, for a group of the user's whose other keys are kept.
    pub(super) fn hooks(&self) -> &[Handler; 1] {
        &self.hooks
    }

    /// Our handler as JSON: what a trust record is computed from and checked against.
    pub(super) fn handler_value(&self) -> Value {
        serde_json::to_value(&self.hooks[0]).expect("JSON of plain values")
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Handler {
    Command {
        #[serde(rename = "type")]
        kind: &'static str,
        command: String,
        timeout: u32,
    },
    McpTool {
        #[serde(rename = "type")]
        kind: &'static str,
        server: &'static str,
        tool: &'static str,
        input: TemplateObject,
        timeout: u32,
    },
}

/// An input template, serialised in its written order.
#[derive(Debug)]
pub(super) struct TemplateObject(&'static [(&'static str, Template)]);

impl Serialize for TemplateObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Our entry under Claude Code's `mcpServers`.
#[derive(Debug, Serialize)]
pub(super) struct McpServer {
    #[serde(rename = "type")]
    pub(super) kind: &'static str,
    pub(super) command: String,
    pub(super) args: [&'static str; 1],
    /// The settings the user's shims see (`ADAPTIVE_GUIDEBOOK_*` when installing): hosts start
    /// MCP servers with a filtered environment, and without them `guidebook mcp` would reach
    /// another sidecar than the hooks do.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(super) env: std::collections::BTreeMap<String, String>,
}

/// Whether a handler, as written, is ours: a command running `guidebook-hook`, or an
/// `mcp_tool` call on our server.
pub(super) fn is_our_handler(handler: &RawValue) -> bool {
    serde_json::from_str::<Value>(handler.get()).is_ok_and(|h| {
        h.get("command")
            .and_then(Value::as_str)
            .is_some_and(is_our_command)
            || is_our_mcp_tool(&h)
    })
}

/// Whether `handler` is an `mcp_tool` handler on our server (any tool of it).
pub(super) fn is_our_mcp_tool(handler: &Value) -> bool {
    handler["type"] == "mcp_tool" && handler["server"] == MCP_SERVER
}
