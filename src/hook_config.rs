//! Our entries in the agents' hook configuration: Codex's `hooks.json` and Claude Code's `settings.json`. Merges them in and out of the JSON text, leaving everything else as it was written. Pure: text in, text out.
//!
//! Both hosts use one shape: `{"hooks": {EVENT: [GROUP, ...]}}` where a GROUP is
//! `{"matcher"?: REGEX, "hooks": [HANDLER, ...]}` and a HANDLER is
//! `{"type": "command", "command": CMD, "timeout"?: SECONDS}`. A handler is *ours* when the
//! first word of its command names a file called `guidebook-hook` (any directory, any
//! arguments, quoted or not).
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
}

/// Seconds the host waits for the shim; the shim itself gives up after 2 s.
const TIMEOUT_SECONDS: u32 = 5;

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

/// `text` with our entries for `host` installed, running `command`: in each of the host's
/// events, the first group that holds only our handlers is replaced by ours (so a second install
/// changes nothing) and any other such group is dropped; a group shared with the user's own
/// handlers loses our handler and keeps theirs; if no group of ours was there, ours is appended.
/// Other events, other keys and the user's groups are left as written. An empty text is an empty
/// document.
pub fn install(text: &str, host: Host, command: &str) -> Result<String, EditError> {
    let mut top = parse_document(text)?;
    let hooks = top.object_member("hooks", "the document")?;
    for &(event, matcher) in host.events() {
        let ours = Node::Ours(Group {
            matcher,
            hooks: [Handler {
                kind: "command",
                command: command.to_string(),
                timeout: TIMEOUT_SECONDS,
            }],
        });
        match hooks.member(event) {
            None => hooks.push(event, Node::Array(vec![ours])),
            Some(groups) => {
                let edited = edit_groups(groups, &format!("hooks.{event}"), Some(ours))?;
                *groups = Node::Array(edited.groups);
            }
        }
    }
    Ok(render(&top, text))
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
        let edited = edit_groups(groups, &path, None)?;
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

/// The host's events that hold a handler of ours in `text`, with the commands found.
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
            .filter_map(|handler| handler["command"].as_str())
            .filter(|c| is_our_command(c))
            .map(str::to_string)
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
}

/// One of our groups, in the key order the README shows.
#[derive(Debug, Serialize)]
struct Group {
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'static str>,
    hooks: [Handler; 1],
}

#[derive(Debug, Serialize)]
struct Handler {
    #[serde(rename = "type")]
    kind: &'static str,
    command: String,
    timeout: u32,
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
    mut ours: Option<Node<'a>>,
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
            // A group of ours: the first becomes the current one, the rest go.
            if let Some(ours) = ours.take() {
                out.push(ours);
            }
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
    if let Some(ours) = ours {
        changed = true;
        out.push(ours);
    }
    Ok(Edited {
        groups: out,
        changed,
    })
}

fn is_our_handler(handler: &RawValue) -> bool {
    serde_json::from_str::<Value>(handler.get())
        .ok()
        .and_then(|h| h.get("command")?.as_str().map(is_our_command))
        .unwrap_or(false)
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
        let text = install("", Host::Claude, "guidebook-hook").unwrap();
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
            install(&text, Host::Claude, "guidebook-hook").unwrap(),
            text
        );
    }

    #[test]
    fn a_shared_group_keeps_the_users_handlers_and_loses_ours() {
        let text = r#"{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"lint --fix"},{"type":"command","command":"guidebook-hook"}],"matcher":"Edit"}]}}"#;
        let out = install(text, Host::Claude, CMD).unwrap();
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
        let out = install(text, Host::Codex, CMD).unwrap();
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
        let installed = install(user, Host::Claude, CMD).unwrap();
        let removed = uninstall(&installed).unwrap();
        let value: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(user).unwrap());
        assert!(installed.contains(r#"[{"hooks": [{"type": "command", "command": "notify"}]}]"#));
    }

    #[test]
    fn refuses_text_it_cannot_edit_and_says_where() {
        let err = install("{\n  \"hooks\": {,\n}", Host::Codex, CMD).unwrap_err();
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
            install("[]", Host::Codex, CMD).unwrap_err().to_string(),
            "the document is not a JSON object"
        );
        assert_eq!(
            install(r#"{"hooks": []}"#, Host::Codex, CMD)
                .unwrap_err()
                .to_string(),
            "`hooks` in the document is not an object"
        );
        assert_eq!(
            install(r#"{"hooks": {"PostCompact": {}}}"#, Host::Codex, CMD)
                .unwrap_err()
                .to_string(),
            "`hooks.PostCompact` is not an array"
        );
    }

    #[test]
    fn keeps_tab_indentation() {
        let text = "{\n\t\"model\": \"x\"\n}\n";
        let out = install(text, Host::Claude, CMD).unwrap();
        assert!(out.starts_with("{\n\t\"model\": \"x\",\n\t\"hooks\": {\n\t\t\"PreToolUse\""));
    }

    #[test]
    fn reports_what_is_installed() {
        let text = install("{}", Host::Codex, CMD).unwrap();
        let found = installed(&text, Host::Codex).unwrap();
        assert_eq!(
            found.iter().map(|(e, _)| *e).collect::<Vec<_>>(),
            ["PreToolUse", "PostToolUse", "PostCompact", "SessionStart"]
        );
        assert_eq!(found[0].1, [CMD]);
        assert!(installed("", Host::Claude).unwrap().is_empty());
    }
}
