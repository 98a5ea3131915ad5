//! Our entries merged in and out of the hosts' JSON settings (Codex's `hooks.json`, Claude
//! Code's `settings.json` and `mcpServers`), leaving everything else as written. Pure.

use serde::ser::Serializer;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::host::{
    is_our_command, is_our_handler, is_our_mcp_tool, Group, Host, McpServer, Wiring, MCP_HOOK_TOOL,
    MCP_SERVER,
};
use super::json_tree::{
    edit_member, members, object_members, parse_document, render, syntax_error, EditError, Node,
};

/// The values of ours that the edited documents hold.
#[derive(Debug)]
enum Ours {
    Group(Group),
    Server(McpServer),
}

impl Serialize for Ours {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ours::Group(group) => group.serialize(s),
            Ours::Server(server) => server.serialize(s),
        }
    }
}

type Edited<'a> = Node<'a, Ours>;

/// `text` with our entries for `host` installed, wired as `wiring`: in each of the host's
/// events, the first group that holds only our handlers is replaced by ours (so a second install
/// changes nothing, and installing the other wiring swaps them in place) and any other such
/// group is dropped; a group shared with the user's own handlers loses our handler and keeps
/// theirs; if no group of ours was there, ours are appended. Other events, other keys and the
/// user's groups are left as written. An empty text is an empty document.
pub fn install(text: &str, host: Host, wiring: &Wiring) -> Result<String, EditError> {
    let top = edit_member(parse_document(text)?, "hooks", |hooks| {
        let events = match hooks {
            Some(raw) => object_members(raw, "hooks", "the document")?,
            None => Vec::new(),
        };
        let mut ours = host.groups(wiring);
        let mut out = Vec::with_capacity(events.len() + ours.len());
        for (event, groups) in events {
            let node = match ours.iter().position(|(e, _)| *e == event) {
                Some(i) => {
                    let (_, mine) = ours.remove(i);
                    let path = format!("hooks.{event}");
                    Node::Array(edit_groups(groups, &path, as_nodes(mine))?.0)
                }
                None => Node::Raw(groups),
            };
            out.push((event, node));
        }
        for (event, mine) in ours {
            out.push((event.to_string(), Node::Array(as_nodes(mine))));
        }
        Ok(Node::Object(out))
    })?;
    Ok(render(&Node::Object(top), text))
}

fn as_nodes<'a>(groups: Vec<Group>) -> Vec<Edited<'a>> {
    groups
        .into_iter()
        .map(|g| Node::Built(Ours::Group(g)))
        .collect()
}

/// `text` (Claude Code's `~/.claude.json` or a project's `.mcp.json`) with our MCP server
/// `mcpServers.guidebook` set to run `command mcp`; everything else as written.
pub fn install_mcp_server(
    text: &str,
    command: &str,
    env: &[(String, String)],
) -> Result<String, EditError> {
    let top = edit_member(parse_document(text)?, "mcpServers", |servers| {
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
        Ok(Node::Object(servers))
    })?;
    Ok(render(&Node::Object(top), text))
}

/// `text` without any of our handlers, in any event: groups left empty by that are dropped, and
/// so are events left without groups. Everything else is left as written.
pub fn uninstall(text: &str) -> Result<String, EditError> {
    let top = parse_document(text)?;
    let Some(hooks) = top.iter().find(|(k, _)| k == "hooks").map(|(_, v)| *v) else {
        return Ok(text.to_string());
    };
    let mut changed = false;
    let mut events = Vec::new();
    for (event, groups) in object_members(hooks, "hooks", "the document")? {
        let path = format!("hooks.{event}");
        let (edited, event_changed) = edit_groups(groups, &path, Vec::new())?;
        if !event_changed {
            events.push((event, Node::Raw(groups)));
        } else {
            changed = true;
            if !edited.is_empty() {
                events.push((event, Node::Array(edited)));
            }
        }
    }
    if !changed {
        return Ok(text.to_string());
    }
    let top = edit_member(top, "hooks", |_| Ok(Node::<Ours>::Object(events)))?;
    Ok(render(&Node::Object(top), text))
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

/// Removes our handlers from an event's groups (as written) and puts `ours` (if any) in place
/// of the first group that was only ours, or at the end. Says whether anything changed.
fn edit_groups<'a>(
    groups: &'a RawValue,
    path: &str,
    mut ours: Vec<Edited<'a>>,
) -> Result<(Vec<Edited<'a>>, bool), EditError> {
    let items: Vec<&'a RawValue> = serde_json::from_str(groups.get())
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
    Ok((out, changed))
}

#[cfg(test)]
mod tests {
    use super::super::codex_toml::install_codex_mcp_server;
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
        assert_eq!(installed(&command, Host::Claude).unwrap().len(), 4);
        assert_eq!(
            installed(&mcp, Host::Claude).unwrap()[1].1,
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
        let edited =
            super::super::codex_toml::install_codex_mcp_server(toml, "/bin/guidebook", &env)
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
        let edited = install_codex_mcp_server(toml, "/bin/guidebook", &[]).unwrap();
        assert_eq!(
            edited,
            "# keep me\n[mcp_servers.guidebook]\ncommand = \"/bin/guidebook\"\nenv = { A = \"1\" }\nargs = [\"mcp\"]\n"
        );
        assert_eq!(
            install_codex_mcp_server(&edited, "/bin/guidebook", &[]).unwrap(),
            edited
        );
        assert!(install_codex_mcp_server("a = [", "/g", &[])
            .unwrap_err()
            .to_string()
            .starts_with("not valid TOML"));
        assert_eq!(
            install_codex_mcp_server("mcp_servers = 1\n", "/g", &[])
                .unwrap_err()
                .to_string(),
            "`mcp_servers` is not a table"
        );
    }
}
