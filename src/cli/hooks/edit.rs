//! Our entries merged in and out of the hosts' JSON settings (Codex's `hooks.json`, Claude
//! Code's `settings.json` and `mcpServers`, Gemini CLI's `settings.json`), leaving everything
//! else as written, and the places our handlers land, which Codex's trust records are computed
//! from. Pure.
//!
//! A group that holds only our handler keeps the user's other keys. Its `matcher` is ours
//! when the group has none, or one that we wrote ourselves at some release (so a new release's
//! matcher replaces an old one); any other matcher is the user's choice, narrowing or widening
//! which tools reach us, and is kept (and reported). Events where we give no matcher get
//! none: Codex ignores a matcher there, and hashes the group as if it had none.
//!
//! Gemini CLI reads its settings as JSON with comments; comments outside `hooks` are kept, and
//! a file with a comment inside a `hooks` that must change is refused rather than stripped.

pub use super::host::Dialect;
use crate::cli::hooks::HostHooks;
use serde::ser::Serializer;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::host::{
    is_our_command, is_our_handler, is_our_mcp_tool, Group, Host, McpServer, Wiring, MCP_HOOK_TOOL,
    MCP_SERVER,
};
use super::json_tree::{
    check_unique_keys, edit_member, members, object_members, parse_document, render,
    strip_comments, syntax_error, EditError, Node,
};

/// The values of ours that the edited documents hold.
#[derive(Debug)]
enum Ours {
    Group(Group),
    /// Our handler as the `hooks` of a group whose other keys are the user's.
    HooksOf(Group),
    /// Our matcher on a group whose other keys are the user's.
    Matcher(&'static str),
    Server(McpServer),
    /// A string of ours in an array of the user's (a folder in Copilot CLI's `trustedFolders`).
    Text(String),
}

impl Serialize for Ours {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ours::Group(group) => group.serialize(s),
            Ours::HooksOf(group) => group.hooks().serialize(s),
            Ours::Matcher(matcher) => s.serialize_str(matcher),
            Ours::Server(server) => server.serialize(s),
            Ours::Text(text) => s.serialize_str(text),
        }
    }
}

type Edited<'a> = Node<'a, Ours>;

/// Where this run put one of our handlers, and exactly what it wrote there: the group's
/// matcher as written and the handler as serialised. Codex's trust records are computed from
/// these, never from what a file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub event: &'static str,
    pub group: usize,
    pub handler: usize,
    pub matcher: Option<String>,
    pub definition: Value,
}

/// A matcher of the user's kept on a group of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptMatcher {
    pub event: &'static str,
    pub theirs: String,
    pub ours: &'static str,
}

/// The result of an install: the text, where our handlers are in it, and the matchers of the
/// user's that were kept.
#[derive(Debug)]
pub struct Installed {
    pub text: String,
    pub placed: Vec<Placed>,
    pub kept: Vec<KeptMatcher>,
}

/// Matchers some release of ours wrote, per event: a group of ours with one of these has the
/// matcher we gave it, not one the user chose, and gets the current one. Add the old matcher
/// here whenever [`Host::events`] or [`Host::mcp_groups`] changes one.
const PAST_MATCHERS: &[(&str, &str)] = &[
    ("PreToolUse", "Edit|Write|MultiEdit"),
    ("PreToolUse", "^(apply_patch|Bash)$"),
    ("PostToolUse", "Edit|Write|MultiEdit|Bash"),
    ("PostToolUse", "Edit|Write|MultiEdit"),
    ("PostToolUse", "Bash"),
    ("PostToolUse", "^(apply_patch|Bash)$"),
    ("PostToolUseFailure", "Bash"),
    ("SessionStart", "compact|clear"),
    ("SessionStart", "^(compact|clear)$"),
    ("BeforeTool", "^(write_file|replace)$"),
    ("AfterTool", "^(write_file|replace|run_shell_command)$"),
];

/// Whether `matcher` on `event` is one we wrote (now, in either wiring, or at an earlier
/// release), rather than the user's.
fn is_our_matcher(host: Host, event: &str, matcher: &str) -> bool {
    let current = host
        .events()
        .iter()
        .filter(|(e, _)| *e == event)
        .filter_map(|(_, m)| *m)
        .chain(
            host.mcp_groups()
                .iter()
                .filter(|(e, _)| *e == event)
                .flat_map(|(_, specs)| specs.iter().filter_map(|(m, _)| *m)),
        )
        .chain(
            PAST_MATCHERS
                .iter()
                .filter(|(e, _)| *e == event)
                .map(|(_, m)| *m),
        )
        .collect::<Vec<_>>();
    current.contains(&matcher)
}

/// `text` with our entries for `host` installed, wired as `wiring`; see [`install_placed`].
#[cfg(test)]
pub fn install(text: &str, host: Host, wiring: &Wiring) -> Result<String, EditError> {
    install_placed(text, host, wiring).map(|installed| installed.text)
}

/// `text` with our entries for `host` installed, wired as `wiring`: in each of the host's
/// events, the groups that hold only our handlers become ours, in order (so a second install
/// changes nothing, and installing the other wiring swaps them in place), keeping the user's
/// other keys on them and a matcher of theirs (see the module docs); groups of ours beyond
/// what we need are dropped; a group shared with the user's own handlers loses our handler and
/// keeps theirs; groups of ours still missing are appended. Other events, other keys and the
/// user's groups are left as written. An empty text is an empty document.
pub fn install_placed(text: &str, host: Host, wiring: &Wiring) -> Result<Installed, EditError> {
    let mut placed = Vec::new();
    let mut kept = Vec::new();
    let read = Readable::new(text, host.dialect());
    let text = edit_document(text, &read, "hooks", |hooks| {
        let events = match hooks {
            Some(raw) => object_members(raw, "hooks", "the document")?,
            None => Vec::new(),
        };
        let mut ours = host.groups(wiring);
        let mut out = Vec::with_capacity(events.len() + ours.len());
        for (event, groups) in events {
            let node = match ours.iter().position(|(e, _)| *e == event) {
                Some(i) => {
                    let (event, mine) = ours.remove(i);
                    let mut edit = GroupsEdit {
                        host,
                        event,
                        placed: &mut placed,
                        kept: &mut kept,
                    };
                    Node::Array(edit.groups(groups, mine)?.0)
                }
                None => Node::Raw(groups),
            };
            out.push((event, node));
        }
        for (event, mine) in ours {
            let nodes = mine
                .into_iter()
                .enumerate()
                .map(|(i, group)| {
                    placed.push(place(event, i, group.matcher().map(str::to_string), &group));
                    Node::Built(Ours::Group(group))
                })
                .collect();
            out.push((event.to_string(), Node::Array(nodes)));
        }
        Ok(Some(Node::Object(out)))
    })?;
    Ok(Installed { text, placed, kept })
}

fn place(event: &'static str, group: usize, matcher: Option<String>, ours: &Group) -> Placed {
    Placed {
        event,
        group,
        handler: 0,
        matcher,
        definition: ours.handler_value(),
    }
}

/// `text` (Claude Code's `~/.claude.json` or a project's `.mcp.json`) with our MCP server
/// `mcpServers.guidebook` set to run `command mcp`; everything else as written.
pub fn install_mcp_server(
    text: &str,
    command: &str,
    env: &[(String, String)],
) -> Result<String, EditError> {
    let read = Readable::new(text, Dialect::Json);
    edit_document(text, &read, "mcpServers", |servers| {
        let servers = match servers {
            Some(raw) => object_members(raw, "mcpServers", "the document")?,
            None => Vec::new(),
        };
        let servers = edit_member(servers, MCP_SERVER, |_| {
            Ok(Node::Built(Ours::Server(McpServer {
                kind: "stdio",
                command: command.to_string(),
                args: ["mcp"],
                env: env.iter().cloned().collect(),
            })))
        })?;
        Ok(Some(Node::Object(servers)))
    })
}

/// `text` (Copilot CLI's `config.json`, JSON with comments that it manages itself) with
/// `folder` in its `trustedFolders`, appended after the folders already there; unchanged when
/// it is there already. Comments and every other member stay as written.
pub fn trust_copilot_folder(text: &str, folder: &str) -> Result<String, EditError> {
    let read = Readable::new(text, Dialect::Jsonc);
    edit_document(text, &read, "trustedFolders", |folders| {
        let items: Vec<&RawValue> = match folders {
            Some(raw) => serde_json::from_str(raw.get())
                .map_err(|_| EditError::Shape("`trustedFolders` is not an array".to_string()))?,
            None => Vec::new(),
        };
        let present = items
            .iter()
            .any(|item| serde_json::from_str::<String>(item.get()).is_ok_and(|f| f == folder));
        if present {
            return Ok(None);
        }
        let mut nodes: Vec<Edited> = items.into_iter().map(Node::Raw).collect();
        nodes.push(Node::Built(Ours::Text(folder.to_string())));
        Ok(Some(Node::Array(nodes)))
    })
}

/// `text` without any of our handlers, in any event: groups left empty by that are dropped, and
/// so are events left without groups. Everything else is left as written.
#[cfg(test)]
pub fn uninstall(text: &str) -> Result<String, EditError> {
    uninstall_from(text, Dialect::Json)
}

/// [`uninstall`] for a host reading `dialect`.
pub fn uninstall_from(text: &str, dialect: Dialect) -> Result<String, EditError> {
    let read = Readable::new(text, dialect);
    edit_document(text, &read, "hooks", |hooks| {
        let Some(hooks) = hooks else {
            return Ok(None);
        };
        let mut changed = false;
        let mut events = Vec::new();
        for (event, groups) in object_members(hooks, "hooks", "the document")? {
            let (edited, event_changed) = GroupsEdit::removing(&event, groups)?;
            if !event_changed {
                events.push((event, Node::Raw(groups)));
            } else {
                changed = true;
                if !edited.is_empty() {
                    events.push((event, Node::Array(edited)));
                }
            }
        }
        Ok(changed.then_some(Node::Object(events)))
    })
}

/// `text` with the top-level member `key` replaced by what `edit` makes of it (`None`: left
/// as it is, and so is the text). In JSON with comments, only that member's value is spliced
/// into the text, so that comments elsewhere stay where they were; a comment inside a value
/// that changes is refused.
fn edit_document<'t>(
    text: &str,
    read: &'t Readable,
    key: &str,
    edit: impl FnOnce(Option<&'t RawValue>) -> Result<Option<Edited<'t>>, EditError>,
) -> Result<String, EditError> {
    let (stripped, comments) = (&read.text, &read.comments);
    if comments.is_empty() {
        let top = parse_document(stripped)?;
        let found = top.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
        let Some(node) = edit(found)? else {
            return Ok(text.to_string());
        };
        let top = edit_member(top, key, |_| Ok(node))?;
        return Ok(render(&Node::Object(top), text));
    }
    let top = parse_document(stripped)?;
    let found = top.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
    let span = found.map(|raw| span_of(raw, stripped));
    let Some(node) = edit(found)? else {
        return Ok(text.to_string());
    };
    let value = render(&node, text);
    let value = value.trim_end();
    match span {
        Some(span) => {
            if stripped[span.clone()] == *value {
                return Ok(text.to_string());
            }
            if let Some(inside) = comments
                .iter()
                .find(|c| c.start < span.end && span.start < c.end)
            {
                let (line, column) = line_column(text, inside.start);
                return Err(EditError::Syntax {
                    line,
                    column,
                    message: format!(
                        "a comment inside `{key}`, which has to change: guidebook keeps \
                         comments only outside it; move the comment out of `{key}`, or remove it"
                    ),
                });
            }
            let indent = line_indent(text, span.start);
            Ok(format!(
                "{}{}{}",
                &text[..span.start],
                reindent(value, indent),
                &text[span.end..]
            ))
        }
        None => {
            let unit = super::json_tree::indent_unit(text);
            let member = format!("\"{key}\": {}", reindent(value, &unit));
            let at = match top.last() {
                Some((_, last)) => span_of(last, stripped).end,
                None => stripped.find('{').map_or(0, |i| i + 1),
            };
            let (before, after) = text.split_at(at);
            let joined = if top.is_empty() {
                format!(
                    "{before}\n{unit}{member}\n{}",
                    after.trim_start_matches([' ', '\t'])
                )
            } else {
                format!("{before},\n{unit}{member}{after}")
            };
            Ok(joined)
        }
    }
}

/// A settings text as JSON reads it: comments (in [`Dialect::Jsonc`]) turned into spaces, every
/// byte at its offset, and where the comments were.
struct Readable {
    text: String,
    comments: Vec<std::ops::Range<usize>>,
}

impl Readable {
    fn new(text: &str, dialect: Dialect) -> Readable {
        match dialect {
            Dialect::Json => Readable {
                text: text.to_string(),
                comments: Vec::new(),
            },
            Dialect::Jsonc => {
                let (text, comments) = strip_comments(text);
                Readable { text, comments }
            }
        }
    }
}

/// The byte range of `raw`, a value borrowed from `text`, in `text`.
fn span_of(raw: &RawValue, text: &str) -> std::ops::Range<usize> {
    let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
    start..start + raw.get().len()
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    (line, column)
}

/// The leading whitespace of the line that byte `at` of `text` is on.
fn line_indent(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// `value`, pretty-printed at the top level, indented by `indent` on every line but the first,
/// to sit as a member of the top-level object.
fn reindent(value: &str, indent: &str) -> String {
    value.replace('\n', &format!("\n{indent}"))
}

/// The host's events that hold a handler of ours in `text`, with the commands found (an
/// `mcp_tool` handler shows as `mcp_tool guidebook/hook`).
pub fn installed(text: &str, host: Host) -> Result<Vec<(&'static str, Vec<String>)>, EditError> {
    let value = strict_value(text, host.dialect())?;
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

/// `text` as a JSON value (an empty text is `null`), refused if it repeats a key anywhere.
pub fn strict_value(text: &str, dialect: Dialect) -> Result<Value, EditError> {
    let stripped;
    let text = match dialect {
        Dialect::Json => text,
        Dialect::Jsonc => {
            stripped = strip_comments(text).0;
            &stripped
        }
    };
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    check_unique_keys(text)?;
    serde_json::from_str(text).map_err(syntax_error)
}

/// One event's groups being edited: ours put in place, the user's kept.
struct GroupsEdit<'p> {
    host: Host,
    event: &'static str,
    placed: &'p mut Vec<Placed>,
    kept: &'p mut Vec<KeptMatcher>,
}

/// An event's groups as written, each with its handlers split into ours and theirs (`None`:
/// a group whose handlers cannot be read, kept as it is).
type SplitGroups<'a> = Vec<(&'a RawValue, Option<(usize, Vec<&'a RawValue>)>)>;

fn split_groups<'a>(groups: &'a RawValue, path: &str) -> Result<SplitGroups<'a>, EditError> {
    let items: Vec<&'a RawValue> = serde_json::from_str(groups.get())
        .map_err(|_| EditError::Shape(format!("`{path}` is not an array")))?;
    Ok(items
        .into_iter()
        .map(|group| {
            let handlers: Option<Vec<&'a RawValue>> = members(group.get())
                .and_then(|members| members.into_iter().find(|(k, _)| k == "hooks"))
                .and_then(|(_, hooks)| serde_json::from_str(hooks.get()).ok());
            let split = handlers.map(|handlers| {
                let (mine, theirs): (Vec<_>, Vec<_>) =
                    handlers.into_iter().partition(|h| is_our_handler(h));
                (mine.len(), theirs)
            });
            (group, split)
        })
        .collect())
}

/// A group shared with the user's handlers, without ours: theirs stay, under their matcher.
fn without_ours<'a>(group: &'a RawValue, theirs: Vec<&'a RawValue>) -> Edited<'a> {
    let rebuilt = members(group.get())
        .expect("parsed before")
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
    Node::Object(rebuilt)
}

impl GroupsEdit<'_> {
    /// Removes our handlers from an event's groups. Says whether anything changed.
    fn removing<'a>(
        event: &str,
        groups: &'a RawValue,
    ) -> Result<(Vec<Edited<'a>>, bool), EditError> {
        let mut out = Vec::new();
        let mut changed = false;
        for (group, split) in split_groups(groups, &format!("hooks.{event}"))? {
            match split {
                Some((mine, theirs)) if mine > 0 => {
                    changed = true;
                    if !theirs.is_empty() {
                        out.push(without_ours(group, theirs));
                    }
                }
                _ => out.push(Node::Raw(group)),
            }
        }
        Ok((out, changed))
    }

    /// The event's groups with ours in the places of the groups that were only ours, in
    /// order, and the rest of ours at the end. Says whether anything changed.
    fn groups<'a>(
        &mut self,
        groups: &'a RawValue,
        ours: Vec<Group>,
    ) -> Result<(Vec<Edited<'a>>, bool), EditError> {
        let mut ours = ours.into_iter();
        let mut out = Vec::new();
        let mut changed = false;
        for (group, split) in split_groups(groups, &format!("hooks.{}", self.event))? {
            match split {
                Some((mine, theirs)) if mine > 0 => {
                    changed = true;
                    if !theirs.is_empty() {
                        out.push(without_ours(group, theirs));
                    } else if let Some(new) = ours.next() {
                        let node = self.merged(group, new, out.len())?;
                        out.push(node);
                    }
                }
                _ => out.push(Node::Raw(group)),
            }
        }
        for new in ours {
            changed = true;
            self.placed.push(place(
                self.event,
                out.len(),
                new.matcher().map(str::to_string),
                &new,
            ));
            out.push(Node::Built(Ours::Group(new)));
        }
        Ok((out, changed))
    }

    /// A group that was only ours, now holding `new`'s handler at index `at` of its event:
    /// the user's other keys kept, and their matcher if they chose it.
    fn merged<'a>(
        &mut self,
        group: &'a RawValue,
        new: Group,
        at: usize,
    ) -> Result<Edited<'a>, EditError> {
        let members = members(group.get()).expect("parsed before");
        let theirs = members
            .iter()
            .find(|(k, _)| k == "matcher")
            .and_then(|(_, m)| serde_json::from_str::<String>(m.get()).ok());
        let matcher = match (new.matcher(), theirs) {
            (Some(ours), Some(theirs))
                if theirs != ours && !is_our_matcher(self.host, self.event, &theirs) =>
            {
                self.kept.push(KeptMatcher {
                    event: self.event,
                    theirs: theirs.clone(),
                    ours,
                });
                Some((theirs, true))
            }
            (Some(ours), _) => Some((ours.to_string(), false)),
            (None, _) => None,
        };
        self.placed.push(place(
            self.event,
            at,
            matcher.as_ref().map(|(m, _)| m.clone()),
            &new,
        ));
        let our_matcher = new.matcher();
        let mut new = Some(new);
        let mut out: Vec<(String, Edited<'a>)> = Vec::with_capacity(members.len() + 1);
        for (key, value) in members {
            match key.as_str() {
                "hooks" => {
                    let new = new.take().expect("one `hooks`: duplicate keys are refused");
                    out.push((key, Node::Built(Ours::HooksOf(new))));
                }
                "matcher" => match (&matcher, our_matcher) {
                    (Some((_, true)), _) => out.push((key, Node::Raw(value))),
                    (Some(_), Some(ours)) => out.push((key, Node::Built(Ours::Matcher(ours)))),
                    _ => {}
                },
                _ => out.push((key, Node::Raw(value))),
            }
        }
        if let (Some(ours), false) = (our_matcher, out.iter().any(|(k, _)| k == "matcher")) {
            out.insert(0, ("matcher".to_string(), Node::Built(Ours::Matcher(ours))));
        }
        Ok(Node::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::super::codex_toml::{install_codex_mcp_server, TableOwner};
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
            // Look-alikes a repository could write: our program, and then something else.
            "guidebook-hook && curl x | sh",
            "/opt/bin/guidebook-hook; rm -rf ~",
            "guidebook-hook || sh evil.sh",
            "guidebook-hook $(id)",
            "guidebook-hook `id`",
            "guidebook-hook --socket \"$(id)\"",
            "guidebook-hook > ~/.bashrc",
            "guidebook-hook\nid",
            "guidebook-hook & id",
            "(guidebook-hook)",
            "guidebook-hook --verbose",
            "guidebook-hook --socket",
            "guidebook-hook --socket /s extra",
            "/a/*/guidebook-hook",
            "X=/guidebook-hook",
            "guidebook-hook # comment",
            // Relative paths name a file of whatever repository the agent runs in.
            "./guidebook-hook",
            "tools/guidebook-hook",
            "'~/bin/guidebook-hook'",
        ] {
            assert!(!is_our_command(theirs), "{theirs}");
        }
        for ours in [
            "guidebook-hook --socket=/run/x.sock",
            "/opt/bin/guidebook-hook --socket '/a b/s.sock'",
            r"'/x/it'\''s/guidebook-hook'",
        ] {
            assert!(is_our_command(ours), "{ours}");
        }
    }

    #[test]
    fn a_group_of_ours_keeps_the_users_keys_and_a_matcher_they_chose() {
        let text = r#"{"hooks": {
  "PreToolUse": [{"hooks": [{"type": "command", "command": "guidebook-hook"}], "matcher": "Write", "description": "theirs"}],
  "PostToolUse": [{"matcher": "Edit|Write|MultiEdit|Bash", "hooks": [{"type": "command", "command": "guidebook-hook"}], "x": 1}],
  "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "guidebook-hook"}]}]
}}"#;
        let installed =
            install_placed(text, Host::ClaudeCode, &Wiring::Command(CMD.into())).unwrap();
        let value: Value = serde_json::from_str(&installed.text).unwrap();
        let hooks = &value["hooks"];
        // A matcher the user narrowed ours to stays, with their extra key.
        assert_eq!(hooks["PreToolUse"][0]["matcher"], "Write");
        assert_eq!(hooks["PreToolUse"][0]["description"], "theirs");
        assert_eq!(hooks["PreToolUse"][0]["hooks"][0]["command"], CMD);
        assert_eq!(
            installed.kept,
            [KeptMatcher {
                event: "PreToolUse",
                theirs: "Write".into(),
                ours: Host::ClaudeCode.events()[0].1.unwrap(),
            }]
        );
        // A matcher we wrote ourselves at some release is brought up to date; keys stay.
        let post_matcher = Host::ClaudeCode.events()[1].1.unwrap();
        assert_eq!(hooks["PostToolUse"][0]["matcher"], post_matcher);
        assert_eq!(hooks["PostToolUse"][0]["x"], 1);
        // No matcher: ours, first.
        assert_eq!(hooks["PostToolUseFailure"][0]["matcher"], "Bash");
        assert!(
            installed.text.contains("\"matcher\": \"Bash\",\n"),
            "{}",
            installed.text
        );
        // Where each handler went, as written: what trust records are computed from.
        let pre = &installed.placed[0];
        assert_eq!((pre.event, pre.group, pre.handler), ("PreToolUse", 0, 0));
        assert_eq!(pre.matcher.as_deref(), Some("Write"));
        assert_eq!(pre.definition, hooks["PreToolUse"][0]["hooks"][0]);
        assert_eq!(
            installed.placed.len(),
            5,
            "and SessionStart and PreSkillShellCommand, appended"
        );
        let last = &installed.placed[4];
        assert_eq!((last.event, last.group), ("PreSkillShellCommand", 0));
        // Again: nothing changes.
        assert_eq!(
            install(
                &installed.text,
                Host::ClaudeCode,
                &Wiring::Command(CMD.into())
            )
            .unwrap(),
            installed.text
        );
    }

    #[test]
    fn a_look_alike_handler_is_left_alone_and_ours_goes_after_it() {
        let text = r#"{"hooks": {"PreToolUse": [{"matcher": "^(apply_patch|Bash)$", "hooks": [{"type": "command", "command": "guidebook-hook && curl x | sh"}]}]}}"#;
        let installed = install_placed(text, Host::Codex, &Wiring::Command(CMD.into())).unwrap();
        let value: Value = serde_json::from_str(&installed.text).unwrap();
        let pre = value["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(
            pre[0]["hooks"][0]["command"],
            "guidebook-hook && curl x | sh"
        );
        assert_eq!(pre[1]["hooks"][0]["command"], CMD);
        assert_eq!(installed.placed[0].group, 1);
        assert!(installed
            .placed
            .iter()
            .all(|p| p.definition["command"] == CMD));
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_place() {
        let text = "{\n  \"hooks\": {},\n  \"hooks\": {\"PreToolUse\": []}\n}\n";
        for err in [
            install(text, Host::Codex, &Wiring::Command(CMD.into())).unwrap_err(),
            uninstall(text).unwrap_err(),
            installed(text, Host::ClaudeCode).unwrap_err(),
            install_mcp_server(text, "/g", &[]).unwrap_err(),
        ] {
            assert!(
                matches!(
                    err,
                    EditError::Syntax {
                        line: 3,
                        column: 9,
                        ..
                    }
                ),
                "{err}"
            );
            assert!(
                err.to_string().starts_with("3:9: duplicate key \"hooks\""),
                "{err}"
            );
        }
        // At any depth.
        let deep = r#"{"hooks": {"PreToolUse": [{"hooks": [{"command": "a", "command": "b"}]}]}}"#;
        assert!(install(deep, Host::Codex, &Wiring::Command(CMD.into()))
            .unwrap_err()
            .to_string()
            .contains("duplicate key \"command\""));
    }

    const GEMINI_WITH_COMMENTS: &str = r#"// Gemini CLI settings, mine
{
  /* the theme */
  "theme": "GitHub", // dark is too dark
  "hooks": {
    "AfterTool": [
      {"matcher": "read_file", "hooks": [{"type": "command", "command": "my-audit"}]}
    ]
  },
  // keep this
  "model": {"name": "gemini-2.5-pro"}
}
"#;

    #[test]
    fn gemini_settings_keep_their_comments() {
        let wiring = Wiring::Command(CMD.into());
        let out = install(GEMINI_WITH_COMMENTS, Host::GeminiCli, &wiring).unwrap();
        for comment in [
            "// Gemini CLI settings, mine\n",
            "/* the theme */",
            "// dark is too dark",
            "// keep this",
        ] {
            assert!(out.contains(comment), "{comment}: {out}");
        }
        let value: Value = serde_json::from_str(&strip_comments(&out).0).unwrap();
        assert_eq!(value["theme"], "GitHub");
        assert_eq!(value["model"]["name"], "gemini-2.5-pro");
        assert_eq!(
            value["hooks"]["AfterTool"][0]["hooks"][0]["command"],
            "my-audit"
        );
        assert_eq!(value["hooks"]["AfterTool"][1]["hooks"][0]["command"], CMD);
        assert_eq!(value["hooks"]["BeforeTool"][0]["hooks"][0]["command"], CMD);
        assert!(
            out.contains("\n  \"hooks\": {\n    \"AfterTool\": [\n"),
            "{out}"
        );
        assert_eq!(
            install(&out, Host::GeminiCli, &wiring).unwrap(),
            out,
            "idempotent"
        );
        let removed = uninstall_from(&out, Dialect::Jsonc).unwrap();
        assert!(removed.contains("// keep this"), "{removed}");
        let value: Value = serde_json::from_str(&strip_comments(&removed).0).unwrap();
        assert_eq!(
            value["hooks"],
            serde_json::json!({"AfterTool": [{"matcher": "read_file", "hooks": [{"type": "command", "command": "my-audit"}]}]})
        );

        // No `hooks` yet: ours is added after the last member, the comments stay.
        let bare = "{\n  // mine\n  \"theme\": \"GitHub\" /* end */\n}\n";
        let out = install(bare, Host::GeminiCli, &wiring).unwrap();
        assert!(
            out.starts_with("{\n  // mine\n  \"theme\": \"GitHub\",\n  \"hooks\": {\n"),
            "{out}"
        );
        assert!(out.ends_with("} /* end */\n}\n"), "{out}");
        serde_json::from_str::<Value>(&strip_comments(&out).0).unwrap();
    }

    #[test]
    fn a_comment_inside_hooks_is_refused_not_dropped() {
        let text = "{\n  \"hooks\": {\n    // mine\n    \"AfterTool\": []\n  }\n}\n";
        let err = install(text, Host::GeminiCli, &Wiring::Command(CMD.into())).unwrap_err();
        assert!(
            matches!(
                err,
                EditError::Syntax {
                    line: 3,
                    column: 5,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("a comment inside `hooks`"),
            "{err}"
        );
        // Nothing of ours to remove: nothing to refuse.
        assert_eq!(uninstall_from(text, Dialect::Jsonc).unwrap(), text);
        // Comments are Gemini CLI's only: Codex and Claude Code read plain JSON.
        assert!(install("{// x\n}", Host::ClaudeCode, &Wiring::Command(CMD.into())).is_err());
        // Gemini CLI refuses a trailing comma, and so do we.
        assert!(
            install("{\"a\": 1,}", Host::GeminiCli, &Wiring::Command(CMD.into()))
                .unwrap_err()
                .to_string()
                .contains("not valid JSON")
        );
    }

    #[test]
    fn an_empty_file_gets_our_entries_in_the_documented_order() {
        let text = install(
            "",
            Host::ClaudeCode,
            &Wiring::Command("guidebook-hook".into()),
        )
        .unwrap();
        let expected = r#"{
  "hooks": {
    "PreToolUse": [
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
    "PostToolUseFailure": [
      {
        "matcher": "Bash",
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
    ],
    "PreSkillShellCommand": [
      {
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
                Host::ClaudeCode,
                &Wiring::Command("guidebook-hook".into())
            )
            .unwrap(),
            text
        );
    }

    #[test]
    fn a_shared_group_keeps_the_users_handlers_and_loses_ours() {
        let text = r#"{"hooks":{"PostToolUse":[{"hooks":[{"type":"command","command":"lint --fix"},{"type":"command","command":"guidebook-hook"}],"matcher":"Edit"}]}}"#;
        let out = install(text, Host::ClaudeCode, &Wiring::Command(CMD.into())).unwrap();
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
        let installed = install(user, Host::ClaudeCode, &Wiring::Command(CMD.into())).unwrap();
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
    fn a_copilot_folder_is_trusted_once_and_the_managed_file_keeps_its_comments() {
        let config = "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"firstLaunchAt\": \"2026-12-06T04:00:00.000Z\",\n  \"trustedFolders\": [\"/home/u/old\"]\n}\n";
        let out = trust_copilot_folder(config, "/home/u/p q").unwrap();
        assert!(
            out.starts_with("// User settings belong in settings.json.\n"),
            "{out}"
        );
        let value = strict_value(&out, Dialect::Jsonc).unwrap();
        assert_eq!(
            value["trustedFolders"],
            serde_json::json!(["/home/u/old", "/home/u/p q"])
        );
        assert_eq!(value["firstLaunchAt"], "2026-12-06T04:00:00.000Z");
        assert_eq!(trust_copilot_folder(&out, "/home/u/p q").unwrap(), out);
        let fresh = trust_copilot_folder("", "/p").unwrap();
        assert_eq!(
            strict_value(&fresh, Dialect::Jsonc).unwrap(),
            serde_json::json!({"trustedFolders": ["/p"]})
        );
        assert!(trust_copilot_folder("{\"trustedFolders\": {}}", "/p").is_err());
    }

    #[test]
    fn keeps_tab_indentation() {
        let text = "{\n\t\"model\": \"x\"\n}\n";
        let out = install(text, Host::ClaudeCode, &Wiring::Command(CMD.into())).unwrap();
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
        assert!(installed("", Host::ClaudeCode).unwrap().is_empty());
    }

    #[test]
    fn mcp_wiring_swaps_with_the_command_wiring_and_keeps_the_users_handlers() {
        let user = r#"{"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}, {"type": "mcp_tool", "server": "other", "tool": "t"}]}]}}"#;
        let mcp = install(user, Host::ClaudeCode, &Wiring::Mcp).unwrap();
        let value: Value = serde_json::from_str(&mcp).unwrap();
        let post = value["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 3, "{mcp}");
        assert_eq!(post[1]["matcher"], "Edit|Write|MultiEdit");
        assert_eq!(
            post[1]["hooks"][0]["input"]["tool_input"],
            serde_json::json!({"file_path": "${tool_input.file_path}"})
        );
        assert_eq!(post[2]["matcher"], "Bash");
        assert_eq!(install(&mcp, Host::ClaudeCode, &Wiring::Mcp).unwrap(), mcp);
        let command = install(&mcp, Host::ClaudeCode, &Wiring::Command(CMD.into())).unwrap();
        assert!(!command.contains("\"guidebook\""), "{command}");
        assert_eq!(installed(&command, Host::ClaudeCode).unwrap().len(), 5);
        assert_eq!(
            installed(&mcp, Host::ClaudeCode).unwrap()[1].1,
            ["mcp_tool guidebook/hook", "mcp_tool guidebook/hook"]
        );
        // Uninstall removes both wirings and leaves the user's handlers as written.
        let removed: Value = serde_json::from_str(&uninstall(&mcp).unwrap()).unwrap();
        assert_eq!(removed, serde_json::from_str::<Value>(user).unwrap());
    }

    /// Codex starts MCP servers with a filtered environment: without the settings in the
    /// entry, `guidebook mcp` reached another sidecar than the hooks (found with Codex 0.169).
    #[test]
    fn the_mcp_server_entry_carries_the_settings_the_shims_see() {
        let env = vec![
            ("ADAPTIVE_GUIDEBOOK_HOME".to_string(), "/srv/gb".to_string()),
            (
                "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS".to_string(),
                "3000".to_string(),
            ),
        ];
        let json = install_mcp_server("", "/bin/guidebook", &env).unwrap();
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value["mcpServers"]["guidebook"]["env"],
            serde_json::json!({"ADAPTIVE_GUIDEBOOK_HOME": "/srv/gb", "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS": "3000"})
        );
        let toml = "[mcp_servers.guidebook.env]
MINE = \"kept\"\nADAPTIVE_GUIDEBOOK_HOME = \"/old\"\n";
        let edited = super::super::codex_toml::install_codex_mcp_server(
            toml,
            "/bin/guidebook",
            &env,
            super::super::codex_toml::TableOwner::User,
        )
        .unwrap();
        let parsed: toml_edit::DocumentMut = edited.parse().unwrap();
        let env_table = &parsed["mcp_servers"]["guidebook"]["env"];
        assert_eq!(env_table["MINE"].as_str(), Some("kept"));
        assert_eq!(
            env_table["ADAPTIVE_GUIDEBOOK_HOME"].as_str(),
            Some("/srv/gb")
        );
        assert_eq!(
            env_table["ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS"].as_str(),
            Some("3000")
        );
    }

    #[test]
    fn the_mcp_server_entry_is_set_in_json_and_toml_as_written() {
        let json = install_mcp_server(
            r#"{"numStartups": 3, "mcpServers": {"x": {"command": "x"}}}"#,
            "/bin/guidebook",
            &[],
        )
        .unwrap();
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value["mcpServers"]["guidebook"],
            serde_json::json!({"type": "stdio", "command": "/bin/guidebook", "args": ["mcp"]})
        );
        assert_eq!(value["mcpServers"]["x"]["command"], "x");
        assert_eq!(
            install_mcp_server(&json, "/bin/guidebook", &[]).unwrap(),
            json
        );

        let toml = "# keep me\n[mcp_servers.guidebook]\ncommand = \"/old\"\nenv = { A = \"1\" }\n";
        let edited =
            install_codex_mcp_server(toml, "/bin/guidebook", &[], TableOwner::User).unwrap();
        assert_eq!(
            edited,
            "# keep me\n[mcp_servers.guidebook]\ncommand = \"/bin/guidebook\"\nenv = { A = \"1\" }\nargs = [\"mcp\"]\n"
        );
        assert_eq!(
            install_codex_mcp_server(&edited, "/bin/guidebook", &[], TableOwner::User).unwrap(),
            edited
        );
        assert!(
            install_codex_mcp_server("a = [", "/g", &[], TableOwner::User)
                .unwrap_err()
                .to_string()
                .starts_with("not valid TOML")
        );
        assert_eq!(
            install_codex_mcp_server("mcp_servers = 1\n", "/g", &[], TableOwner::User)
                .unwrap_err()
                .to_string(),
            "`mcp_servers` is not a table"
        );
    }
}
