//! Our entries in the agents' hook configuration: Codex's `hooks.json` and Claude Code's `settings.json`. Merges them in and out of the JSON text, leaving everything else as it was written. Pure: text in, text out.
//!
//! Both hosts use one shape: `{"hooks": {EVENT: [GROUP, ...]}}` where a GROUP is
//! `{"matcher"?: REGEX, "hooks": [HANDLER, ...]}` and a HANDLER is
//! `{"type": "command", "command": CMD, "timeout"?: SECONDS}` or, run as a call on a connected
//! MCP server, `{"type": "mcp_tool", "server": NAME, "tool": TOOL, "input": TEMPLATE}`. A handler
//! is *ours* when the first word of its command names a file called `guidebook-hook` (any
//! directory, any arguments, quoted or not), or when it is an `mcp_tool` handler on our server
//! (`guidebook`). Installing one wiring replaces the other's handlers.
//!
//! Nothing of the user's is re-encoded: the document is read as a tree whose leaves are the
//! original text of each value (`serde_json::value::RawValue`), only the objects and arrays on the
//! way to our entries are rebuilt, and every other value is written back byte for byte, key
//! order and formatting included.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The program name that marks a handler as ours.
pub const HOOK_PROGRAM: &str = "guidebook-hook";

/// An agent host whose hooks we configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    Codex,
    Claude,
}

impl Host {
    pub fn name(self) -> &'static str {
        match self {
            Host::Codex => "Codex",
            Host::Claude => "Claude Code",
        }
    }

    /// The flag of `guidebook hooks install` that selects this host.
    pub fn flag(self) -> &'static str {
        match self {
            Host::Codex => "--codex",
            Host::Claude => "--claude",
        }
    }

    /// The events we hook, each with its matcher: file edits (and the checks the agent runs),
    /// and the moments a session forgets its context (compaction, `/clear`), after which
    /// guidelines are shown again.
    pub fn events(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            // PreToolUse of the editing tools is where the circuit breaker denies an edit of
            // a halted session; PostToolUse of `Bash` is where it sees ruff and pyright runs.
            Host::Codex => &[
                ("PreToolUse", Some("^(apply_patch|Bash)$")),
                ("PostToolUse", Some("^(apply_patch|Bash)$")),
                ("PostCompact", None),
                ("SessionStart", Some("^(compact|clear)$")),
            ],
            Host::Claude => &[
                ("PreToolUse", Some("Edit|Write|MultiEdit")),
                ("PostToolUse", Some("Edit|Write|MultiEdit|Bash")),
                ("SessionStart", Some("compact|clear")),
            ],
        }
    }

    /// Our groups per event when the hooks are `mcp_tool` calls: the same events and tools as
    /// [`Host::events`], each group with its input template.
    pub fn mcp_groups(self) -> &'static [(&'static str, &'static [GroupSpec])] {
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
            Host::Claude => &[
                (
                    "PreToolUse",
                    &[(Some("Edit|Write|MultiEdit"), CLAUDE_EDIT_GATE)],
                ),
                (
                    "PostToolUse",
                    &[
                        (Some("Edit|Write|MultiEdit"), CLAUDE_EDIT),
                        (Some("Bash"), CLAUDE_BASH),
                    ],
                ),
                ("SessionStart", &[(Some("compact|clear"), SESSION_START)]),
            ],
        }
    }

    /// Our groups for each event under `wiring`.
    fn groups(self, wiring: &Wiring) -> Vec<(&'static str, Vec<Group>)> {
        match wiring {
            Wiring::Command(command) => self
                .events()
                .iter()
                .map(|&(event, matcher)| {
                    let handler = Handler::Command {
                        kind: "command",
                        command: command.clone(),
                        timeout: TIMEOUT_SECONDS,
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
                                timeout: TIMEOUT_SECONDS,
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
const CLAUDE_EDIT_GATE: &[(&str, Template)] = &[
    ("session_id", Template::Field("${session_id}")),
    ("hook_event_name", Template::Field("${hook_event_name}")),
    ("tool_name", Template::Field("${tool_name}")),
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

/// Why a configuration text cannot be edited. Nothing is changed in either case.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    /// Not JSON at all: where and why.
    #[error("{line}:{column}: not valid JSON: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// JSON, but not the shape hooks live in (say, `hooks` is a list).
    #[error("{0}")]
    Shape(String),
    /// Codex's `config.toml` is not TOML, or `mcp_servers` in it is not a table.
    #[error("{0}")]
    Toml(String),
}

/// Whether `command` runs `guidebook-hook`: its first word, unquoted, is a path whose file
/// name is `guidebook-hook`.
pub fn is_our_command(command: &str) -> bool {
    program(command).rsplit('/').next() == Some(HOOK_PROGRAM)
}

/// The program a shell command line runs: its first word, without the quotes around it.
pub fn program(command: &str) -> &str {
    let command = command.trim_start();
    match command.chars().next() {
        Some(quote @ ('\'' | '"')) => command[1..].split(quote).next().unwrap_or(""),
        _ => command.split_whitespace().next().unwrap_or(""),
    }
}

/// `text` with our entries for `host` installed, wired as `wiring`: in each of the host's
/// events, the first group that holds only our handlers is replaced by ours (so a second install
/// changes nothing, and installing the other wiring swaps them in place) and any other such
/// group is dropped; a group shared with the user's own handlers loses our handler and keeps
/// theirs; if no group of ours was there, ours are appended. Other events, other keys and the
/// user's groups are left as written. An empty text is an empty document.
pub fn install(text: &str, host: Host, wiring: &Wiring) -> Result<String, EditError> {
    let mut top = parse_document(text)?;
    let hooks = top.object_member("hooks", "the document")?;
    for (event, groups) in host.groups(wiring) {
        let ours: Vec<Node> = groups.into_iter().map(Node::Ours).collect();
        match hooks.member(event) {
            None => hooks.push(event, Node::Array(ours)),
            Some(existing) => {
                let edited = edit_groups(existing, &format!("hooks.{event}"), ours)?;
                *existing = Node::Array(edited.groups);
            }
        }
    }
    Ok(render(&top, text))
}

/// `text` (Claude Code's `~/.claude.json` or a project's `.mcp.json`) with our MCP server
/// `mcpServers.guidebook` set to run `command mcp`; everything else as written.
pub fn install_mcp_server(text: &str, command: &str) -> Result<String, EditError> {
    let mut top = parse_document(text)?;
    let servers = top.object_member("mcpServers", "the document")?;
    let server = Node::Server(McpServer {
        kind: "stdio",
        command: command.to_string(),
        args: ["mcp"],
    });
    match servers.member(MCP_SERVER) {
        Some(existing) => *existing = server,
        None => servers.push(MCP_SERVER, server),
    }
    Ok(render(&top, text))
}

/// Codex's `config.toml` text with `[mcp_servers.guidebook]` set to run `command mcp`. The
/// rest of the file, comments and formatting included, is left as written (`toml_edit`); keys
/// the user added to our table (`env`, timeouts) are kept.
pub fn install_codex_mcp_server(text: &str, command: &str) -> Result<String, EditError> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| EditError::Toml(format!("not valid TOML: {e}")))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            // `[mcp_servers.guidebook]` alone, not an empty `[mcp_servers]` above it.
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_like_mut()
        .ok_or_else(|| EditError::Toml("`mcp_servers` is not a table".into()))?;
    let ours = servers
        .entry(MCP_SERVER)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| EditError::Toml(format!("`mcp_servers.{MCP_SERVER}` is not a table")))?;
    let args: toml_edit::Array = ["mcp"].into_iter().collect();
    if ours.get("command").and_then(|c| c.as_str()) != Some(command) {
        ours.insert("command", toml_edit::value(command));
    }
    let args_ok = ours
        .get("args")
        .and_then(|a| a.as_array())
        .is_some_and(|a| a.iter().map(|v| v.as_str()).eq([Some("mcp")]));
    if !args_ok {
        ours.insert("args", toml_edit::value(args));
    }
    Ok(doc.to_string())
}

/// `text` without any of our handlers, in any event: groups left empty by that are dropped, and
/// so are events left without groups. Everything else is left as written.
pub fn uninstall(text: &str) -> Result<String, EditError> {
    let mut top = parse_document(text)?;
    if top.member("hooks").is_none() {
        return Ok(text.to_string());
    }
    let hooks = top.object_member("hooks", "the document")?;
    let Node::Object(events) = hooks else {
        unreachable!("object_member returns an object")
    };
    let mut changed = false;
    for (event, groups) in events.iter_mut() {
        let path = format!("hooks.{event}");
        let edited = edit_groups(groups, &path, Vec::new())?;
        if edited.changed {
            changed = true;
            *groups = Node::Array(edited.groups);
        }
    }
    if !changed {
        return Ok(text.to_string());
    }
    events.retain(|(_, groups)| !matches!(groups, Node::Array(g) if g.is_empty()));
    Ok(render(&top, text))
}

/// The host's events that hold a handler of ours in `text`, with the commands found (an
/// `mcp_tool` handler shows as `mcp_tool guidebook/hook`).
pub fn installed(text: &str, host: Host) -> Result<Vec<(&'static str, Vec<String>)>, EditError> {
    let value: Value = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(text).map_err(syntax_error)?
    };
    let mut found = Vec::new();
    for &(event, _) in host.events() {
        let commands: Vec<String> = value["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|group| group["hooks"].as_array())
            .flatten()
            .filter_map(|handler| match handler["command"].as_str() {
                Some(c) if is_our_command(c) => Some(c.to_string()),
                _ if is_our_mcp_tool(handler) => {
                    Some(format!("mcp_tool {MCP_SERVER}/{MCP_HOOK_TOOL}"))
                }
                _ => None,
            })
            .collect();
        if !commands.is_empty() {
            found.push((event, commands));
        }
    }
    Ok(found)
}

// --- The document tree ------------------------------------------------------------------------

/// A JSON value as far as it is being edited: the original text where it is not.
#[derive(Debug)]
enum Node<'a> {
    Raw(&'a RawValue),
    Object(Vec<(String, Node<'a>)>),
    Array(Vec<Node<'a>>),
    Ours(Group),
    Server(McpServer),
}

/// One of our groups, in the key order the README shows.
#[derive(Debug, Serialize)]
struct Group {
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'static str>,
    hooks: [Handler; 1],
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Handler {
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
struct TemplateObject(&'static [(&'static str, Template)]);

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
struct McpServer {
    #[serde(rename = "type")]
    kind: &'static str,
    command: String,
    args: [&'static str; 1],
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(raw) => raw.serialize(s),
            Node::Object(members) => {
                let mut map = s.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Ours(group) => group.serialize(s),
            Node::Server(server) => server.serialize(s),
        }
    }
}

impl<'a> Node<'a> {
    /// The member `key` of an object node.
    fn member(&mut self, key: &str) -> Option<&mut Node<'a>> {
        match self {
            Node::Object(members) => members.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn push(&mut self, key: &str, value: Node<'a>) {
        if let Node::Object(members) = self {
            members.push((key.to_string(), value));
        }
    }

    /// The member `key` of this object, opened up as an object itself (created empty when
    /// missing). `what` names this node in errors.
    fn object_member(&mut self, key: &str, what: &str) -> Result<&mut Node<'a>, EditError> {
        if self.member(key).is_none() {
            self.push(key, Node::Object(Vec::new()));
        }
        let node = self.member(key).expect("just ensured");
        if let Node::Raw(raw) = node {
            let members = parse_object(raw.get())
                .ok_or_else(|| EditError::Shape(format!("`{key}` in {what} is not an object")))?;
            *node = Node::Object(members);
        }
        Ok(node)
    }
}

/// What editing one event's groups produced.
struct Edited<'a> {
    groups: Vec<Node<'a>>,
    changed: bool,
}

/// Removes our handlers from an event's groups and puts `ours` (if any) in place of the first
/// group that was only ours, or at the end.
fn edit_groups<'a>(
    groups: &Node<'a>,
    path: &str,
    mut ours: Vec<Node<'a>>,
) -> Result<Edited<'a>, EditError> {
    let raw = match groups {
        Node::Raw(raw) => *raw,
        _ => unreachable!("events are edited once, from the original text"),
    };
    let items: Vec<&'a RawValue> = serde_json::from_str(raw.get())
        .map_err(|_| EditError::Shape(format!("`{path}` is not an array")))?;
    let mut out = Vec::with_capacity(items.len() + 1);
    let mut changed = false;
    for group in items {
        let handlers: Option<Vec<&'a RawValue>> = members(group.get())
            .and_then(|members| members.into_iter().find(|(k, _)| k == "hooks"))
            .and_then(|(_, hooks)| serde_json::from_str(hooks.get()).ok());
        let Some(handlers) = handlers else {
            out.push(Node::Raw(group));
            continue;
        };
        let (mine, theirs): (Vec<_>, Vec<_>) =
            handlers.into_iter().partition(|h| is_our_handler(h));
        if mine.is_empty() {
            out.push(Node::Raw(group));
            continue;
        }
        changed = true;
        if theirs.is_empty() {
            // A group of ours: the first becomes the current ones, the rest go.
            out.append(&mut ours);
            continue;
        }
        // Shared with the user's handlers: theirs stay under their matcher, ours goes.
        let rebuilt = members(group.get())
            .expect("parsed above")
            .into_iter()
            .map(|(key, value)| {
                let value = if key == "hooks" {
                    Node::Array(theirs.iter().map(|h| Node::Raw(h)).collect())
                } else {
                    Node::Raw(value)
                };
                (key, value)
            })
            .collect();
        out.push(Node::Object(rebuilt));
    }
    if !ours.is_empty() {
        changed = true;
        out.append(&mut ours);
    }
    Ok(Edited {
        groups: out,
        changed,
    })
}

fn is_our_handler(handler: &RawValue) -> bool {
    serde_json::from_str::<Value>(handler.get()).is_ok_and(|h| {
        h.get("command")
            .and_then(Value::as_str)
            .is_some_and(is_our_command)
            || is_our_mcp_tool(&h)
    })
}

/// Whether `handler` is an `mcp_tool` handler on our server (any tool of it).
fn is_our_mcp_tool(handler: &Value) -> bool {
    handler["type"] == "mcp_tool" && handler["server"] == MCP_SERVER
}

// --- Reading and writing text -----------------------------------------------------------------

/// An object's members in their written order, each value as its original text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(MembersVisitor)
    }
}

/// The members of the object `text`, or `None` if it is not an object.
fn members(text: &str) -> Option<Vec<(String, &RawValue)>> {
    serde_json::from_str::<Members>(text).ok().map(|m| m.0)
}

fn parse_object(text: &str) -> Option<Vec<(String, Node<'_>)>> {
    Some(
        members(text)?
            .into_iter()
            .map(|(k, v)| (k, Node::Raw(v)))
            .collect(),
    )
}

fn parse_document(text: &str) -> Result<Node<'_>, EditError> {
    if text.trim().is_empty() {
        return Ok(Node::Object(Vec::new()));
    }
    match serde_json::from_str::<Members>(text) {
        Ok(members) => Ok(Node::Object(
            members
                .0
                .into_iter()
                .map(|(k, v)| (k, Node::Raw(v)))
                .collect(),
        )),
        Err(e) if e.is_data() => Err(EditError::Shape(
            "the document is not a JSON object".to_string(),
        )),
        Err(e) => Err(syntax_error(e)),
    }
}

fn syntax_error(e: serde_json::Error) -> EditError {
    let message = e.to_string();
    // serde_json ends its messages with the position, which the error carries separately.
    let message = match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message,
    };
    EditError::Syntax {
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Pretty-prints `top` with the indentation `original` uses (two spaces if it shows none), so
/// that values kept as original text sit among rebuilt ones without a seam. Ends with a newline.
fn render(top: &Node, original: &str) -> String {
    let indent = detect_indent(original);
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    top.serialize(&mut serializer)
        .expect("serialising to memory cannot fail");
    let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
    text.push('\n');
    text
}

fn detect_indent(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|line| &line[..line.len() - line.trim_start().len()])
        .find(|ws| !ws.is_empty())
        .filter(|ws| ws.chars().all(|c| c == ' ') || ws.chars().all(|c| c == '\t'))
        .unwrap_or("  ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/opt/bin/guidebook-hook";

    #[test]
    fn recognises_our_command_by_program_name() {
        for ours in [
            "guidebook-hook",
            "/usr/local/bin/guidebook-hook",
            "  ~/.cargo/bin/guidebook-hook --socket /tmp/s.sock",
            "'/Users/a b/bin/guidebook-hook' --socket x",
            "\"/x y/guidebook-hook\"",
        ] {
            assert!(is_our_command(ours), "{ours}");
        }
        for theirs in [
            "guidebook-hooks",
            "my-guidebook-hook",
            "echo guidebook-hook",
            "/bin/guidebook-hook.sh",
            "",
        ] {
            assert!(!is_our_command(theirs), "{theirs}");
        }
    }

    #[test]
    fn an_empty_file_gets_our_entries_in_the_documented_order() {
        let text = install("", Host::Claude, &Wiring::Command("guidebook-hook".into())).unwrap();
        let expected = r#"{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Edit|Write|MultiEdit",
        "hooks": [
          {
            "type": "command",
            "command": "guidebook-hook",
            "timeout": 5
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Edit|Write|MultiEdit|Bash",
        "hooks": [
          {
            "type": "command",
            "command": "guidebook-hook",
            "timeout": 5
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "compact|clear",
        "hooks": [
          {
            "type": "command",
            "command": "guidebook-hook",
            "timeout": 5
          }
        ]
      }
    ]
  }
}
"#;
        assert_eq!(text, expected);
        assert_eq!(
            install(
                &text,
                Host::Claude,
                &Wiring::Command("guidebook-hook".into())
            )
            .unwrap(),
            text
        );
    }

    #[test]
    fn a_shared_group_keeps_the_users_handlers_and_loses_ours() {
        let text = r#"{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"lint --fix"},{"type":"command","command":"guidebook-hook"}],"matcher":"Edit"}]}}"#;
        let out = install(text, Host::Claude, &Wiring::Command(CMD.into())).unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        let groups = value["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{out}");
        assert_eq!(
            groups[0],
            serde_json::json!({"matcher": "Edit", "hooks": [{"type":"command","command":"lint --fix"}]})
        );
        assert_eq!(groups[1]["hooks"][0]["command"], CMD);
        // The rebuilt group keeps the user's key order: their `hooks` before their `matcher`.
        assert!(out.find("lint --fix").unwrap() < out.find("\"matcher\": \"Edit\"").unwrap());
    }

    #[test]
    fn duplicates_of_ours_collapse_into_one_in_place() {
        let text = r#"{
  "hooks": {
    "SessionStart": [
      {"hooks": [{"type": "command", "command": "/old/guidebook-hook"}]},
      {"matcher": "startup", "hooks": [{"type": "command", "command": "./setup.sh"}]},
      {"hooks": [{"type": "command", "command": "guidebook-hook --socket /x"}]}
    ]
  }
}"#;
        let out = install(text, Host::Codex, &Wiring::Command(CMD.into())).unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        let groups = value["hooks"]["SessionStart"].as_array().unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0]["hooks"][0]["command"], CMD);
        assert_eq!(groups[0]["matcher"], "^(compact|clear)$");
        assert!(out.contains(
            r#"{"matcher": "startup", "hooks": [{"type": "command", "command": "./setup.sh"}]}"#
        ));
    }

    #[test]
    fn uninstall_removes_only_ours_and_leaves_an_untouched_file_alone() {
        let user = r#"{"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}"#;
        assert_eq!(uninstall(user).unwrap(), user);
        let installed = install(user, Host::Claude, &Wiring::Command(CMD.into())).unwrap();
        let removed = uninstall(&installed).unwrap();
        let value: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(user).unwrap());
        assert!(installed.contains(r#"[{"hooks": [{"type": "command", "command": "notify"}]}]"#));
    }

    #[test]
    fn refuses_text_it_cannot_edit_and_says_where() {
        let err = install(
            "{\n  \"hooks\": {,\n}",
            Host::Codex,
            &Wiring::Command(CMD.into()),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                EditError::Syntax {
                    line: 2,
                    column: 13,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("2:13: not valid JSON: "),
            "{err}"
        );
        assert_eq!(
            install("[]", Host::Codex, &Wiring::Command(CMD.into()))
                .unwrap_err()
                .to_string(),
            "the document is not a JSON object"
        );
        assert_eq!(
            install(
                r#"{"hooks": []}"#,
                Host::Codex,
                &Wiring::Command(CMD.into())
            )
            .unwrap_err()
            .to_string(),
            "`hooks` in the document is not an object"
        );
        assert_eq!(
            install(
                r#"{"hooks": {"PostCompact": {}}}"#,
                Host::Codex,
                &Wiring::Command(CMD.into())
            )
            .unwrap_err()
            .to_string(),
            "`hooks.PostCompact` is not an array"
        );
    }

    #[test]
    fn keeps_tab_indentation() {
        let text = "{\n\t\"model\": \"x\"\n}\n";
        let out = install(text, Host::Claude, &Wiring::Command(CMD.into())).unwrap();
        assert!(out.starts_with("{\n\t\"model\": \"x\",\n\t\"hooks\": {\n\t\t\"PreToolUse\""));
    }

    #[test]
    fn reports_what_is_installed() {
        let text = install("{}", Host::Codex, &Wiring::Command(CMD.into())).unwrap();
        let found = installed(&text, Host::Codex).unwrap();
        assert_eq!(
            found.iter().map(|(e, _)| *e).collect::<Vec<_>>(),
            ["PreToolUse", "PostToolUse", "PostCompact", "SessionStart"]
        );
        assert_eq!(found[0].1, [CMD]);
        assert!(installed("", Host::Claude).unwrap().is_empty());
    }

    #[test]
    fn mcp_wiring_swaps_with_the_command_wiring_and_keeps_the_users_handlers() {
        let user = r#"{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}, {"type": "mcp_tool", "server": "other", "tool": "t"}]}]}}"#;
        let mcp = install(user, Host::Claude, &Wiring::Mcp).unwrap();
        let value: Value = serde_json::from_str(&mcp).unwrap();
        let post = value["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 3, "{mcp}");
        assert_eq!(post[1]["matcher"], "Edit|Write|MultiEdit");
        assert_eq!(
            post[1]["hooks"][0]["input"]["tool_input"],
            serde_json::json!({"file_path": "${tool_input.file_path}"})
        );
        assert_eq!(post[2]["matcher"], "Bash");
        assert_eq!(install(&mcp, Host::Claude, &Wiring::Mcp).unwrap(), mcp);
        let command = install(&mcp, Host::Claude, &Wiring::Command(CMD.into())).unwrap();
        assert!(!command.contains("\"guidebook\""), "{command}");
        assert_eq!(installed(&command, Host::Claude).unwrap().len(), 3);
        assert_eq!(
            installed(&mcp, Host::Claude).unwrap()[1].1,
            ["mcp_tool guidebook/hook", "mcp_tool guidebook/hook"]
        );
        // Uninstall removes both wirings and leaves the user's handlers as written.
        let removed: Value = serde_json::from_str(&uninstall(&mcp).unwrap()).unwrap();
        assert_eq!(removed, serde_json::from_str::<Value>(user).unwrap());
    }

    #[test]
    fn the_mcp_server_entry_is_set_in_json_and_toml_as_written() {
        let json = install_mcp_server(
            r#"{"numStartups": 3, "mcpServers": {"x": {"command": "x"}}}"#,
            "/bin/guidebook",
        )
        .unwrap();
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value["mcpServers"]["guidebook"],
            serde_json::json!({"type": "stdio", "command": "/bin/guidebook", "args": ["mcp"]})
        );
        assert_eq!(value["mcpServers"]["x"]["command"], "x");
        assert_eq!(install_mcp_server(&json, "/bin/guidebook").unwrap(), json);

        let toml = "# keep me\n[mcp_servers.guidebook]\ncommand = \"/old\"\nenv = { A = \"1\" }\n";
        let edited = install_codex_mcp_server(toml, "/bin/guidebook").unwrap();
        assert_eq!(
            edited,
            "# keep me\n[mcp_servers.guidebook]\ncommand = \"/bin/guidebook\"\nenv = { A = \"1\" }\nargs = [\"mcp\"]\n"
        );
        assert_eq!(
            install_codex_mcp_server(&edited, "/bin/guidebook").unwrap(),
            edited
        );
        assert!(install_codex_mcp_server("a = [", "/g")
            .unwrap_err()
            .to_string()
            .starts_with("not valid TOML"));
        assert_eq!(
            install_codex_mcp_server("mcp_servers = 1\n", "/g")
                .unwrap_err()
                .to_string(),
            "`mcp_servers` is not a table"
        );
    }
}
