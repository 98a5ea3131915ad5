//! `guidebook mcp` as a real child process, spoken to by hand over its stdio (newline-delimited
//! JSON-RPC, the MCP stdio transport) against a real sidecar: the handshake under `2025-06-18`,
//! the newest version with a handshake, and the newest (handshake-less) one; `tools/list`; the
//! `hook` tool byte for byte against the real `guidebook-hook` for an `apply_patch` edit, a
//! breaker halt and a `PreToolUse` deny; silence at once when the sidecar is down; the agent
//! tools and their errors.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Instant;

use serde_json::{json, Value};

use crate::harness::*;
use crate::hook::{codex_add, BACKEND_KOTLIN_OUTPUT, BACKEND_ORDER, ORDER_PRINTER_KT};

/// The protocol versions the tests speak: the one Codex and Claude Code use today, and the
/// newest this SDK answers `initialize` with.
const V_2025_06_18: &str = "2025-06-18";
const V_NEWEST_WITH_HANDSHAKE: &str = "2025-11-25";
/// The newest version: no handshake, every request carries its protocol version in `_meta`.
const V_NEWEST: &str = "2026-07-28";

/// A running `guidebook mcp`, spoken to over its stdin and stdout. Killed when dropped.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    /// Set for the handshake-less protocol: sent in every request's `_meta`.
    inline_version: Option<&'static str>,
}

impl McpClient {
    /// Starts `cmd` (a `guidebook mcp` command) and, unless `version` is the newest
    /// (handshake-less) one, initializes the session with `version`.
    pub fn start(mut cmd: Command, version: &'static str) -> McpClient {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning guidebook mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            child,
            stdin,
            lines,
            next_id: 1,
            inline_version: None,
        };
        if version == V_NEWEST {
            client.inline_version = Some(version);
        } else {
            let init = client.request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "guidebook-it", "version": "1"}}),
            );
            assert_eq!(
                init["result"]["protocolVersion"], version,
                "the server speaks the client's version: {init}"
            );
            assert_eq!(init["result"]["serverInfo"]["name"], "guidebook");
            assert!(
                init["result"]["capabilities"]["tools"].is_object(),
                "{init}"
            );
            client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        client
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .expect("writing to guidebook mcp");
    }

    /// Sends one request and returns its response (notifications in between are skipped).
    pub fn request(&mut self, method: &str, mut params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        if let Some(version) = self.inline_version {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let started = Instant::now();
        loop {
            let left = WATCHDOG.saturating_sub(started.elapsed());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("guidebook mcp gave no answer to {method} within {WATCHDOG:?}")
            });
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line:?}"));
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `tools/call`: the whole `result` (which must be there: tool failures are results).
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{name}: {response}");
        response["result"].clone()
    }

    /// The `hook` tool's text, checked to be a successful call with one text content.
    pub fn hook(&mut self, event: &Value) -> String {
        let result = self.call_tool("hook", event.clone());
        assert_eq!(
            result["isError"], false,
            "hook never fails the call: {result}"
        );
        let content = result["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{result}");
        assert_eq!(content[0]["type"], "text");
        content[0]["text"].as_str().expect("text").to_owned()
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `guidebook mcp` for this sidecar, with autostart off (a test owns its daemons) and a patient
/// hook timeout, as the shim runs in [`Sidecar::hook`].
fn mcp_command(sidecar: &Sidecar) -> Command {
    let mut cmd = sidecar.guidebook(&["mcp"]);
    cmd.env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1").env(
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        PATIENT_HOOK_TIMEOUT_MS,
    );
    cmd
}

/// `guidebook mcp --orchestrator` for this sidecar: every tool, the orchestrator's included.
fn orchestrator_command(sidecar: &Sidecar) -> Command {
    let mut cmd = mcp_command(sidecar);
    cmd.arg("--orchestrator");
    cmd
}

/// Checks a `hook` text the way the shim's stdout is checked: empty, or one line of JSON valid
/// against Codex's output schema for the event.
fn assert_valid(event: &Value, text: &str) {
    match event["hook_event_name"].as_str() {
        Some("PreToolUse") => assert_valid_pre_tool_use_output(text),
        _ => assert_valid_hook_output(text),
    }
}

#[test]
fn tools_list_names_every_tool_with_a_schema_under_each_protocol_version() {
    let sidecar = Sidecar::start_default();
    for version in [V_2025_06_18, V_NEWEST_WITH_HANDSHAKE, V_NEWEST] {
        // What an agent's MCP config starts: no orchestrator tool.
        let mut agent = McpClient::start(mcp_command(&sidecar), version);
        let list = agent.request("tools/list", json!({}));
        let names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "hook",
                "search_guidelines",
                "explain_guidelines",
                "build_prompt",
                "record_error",
                "breaker_status",
                "list_flags",
            ],
            "{version}"
        );
        let mut mcp = McpClient::start(orchestrator_command(&sidecar), version);
        let list = mcp.request("tools/list", json!({}));
        let tools = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"));
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "hook",
                "search_guidelines",
                "explain_guidelines",
                "build_prompt",
                "record_error",
                "breaker_status",
                "list_flags",
                "record_qc_result",
                "record_qc_review",
                "record_session_tokens",
                "ab_assign"
            ],
            "{version}"
        );
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert!(tool["description"].as_str().unwrap().len() > 60, "{tool}");
        }
    }
}

#[test]
fn hook_returns_byte_for_byte_what_the_shim_prints_for_an_apply_patch_edit() {
    let (root_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let repo = root_dir.path().join("backend-order");
    git_repo(&repo, Some(BACKEND_ORDER));
    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    let input_schema = jsonschema::validator_for(&fixture(
        "codex-hook-schemas/post-tool-use.command.input.schema.json",
    ))
    .unwrap();

    for version in [V_2025_06_18, V_NEWEST_WITH_HANDSHAKE, V_NEWEST] {
        let mut mcp = McpClient::start(mcp_command(&sidecar), version);
        // Fresh sessions for each, so that both are shown the same guidelines.
        let shim_event = codex_add(&format!("shim-{version}"), &repo, rel, ORDER_PRINTER_KT);
        let mcp_event = codex_add(&format!("mcp-{version}"), &repo, rel, ORDER_PRINTER_KT);
        assert!(
            input_schema.is_valid(&mcp_event),
            "a Codex PostToolUse input"
        );

        let shim = sidecar.hook(&shim_event);
        let text = mcp.hook(&mcp_event);
        assert_eq!(shim.stdout, BACKEND_KOTLIN_OUTPUT, "{}", shim.stderr);
        assert_eq!(
            text, shim.stdout,
            "{version}: the tool's text is the shim's stdout"
        );
        assert_valid(&mcp_event, &text);

        // Shown once per session, through either wiring.
        assert_eq!(mcp.hook(&mcp_event), "");
        assert_eq!(sidecar.hook(&mcp_event).stdout, "");
        // A compaction resets the session through the tool as through the shim.
        let compact = hook_event("codex_post_compact.json", &format!("mcp-{version}"), &repo);
        assert_eq!(mcp.hook(&compact), "");
        assert_eq!(mcp.hook(&mcp_event), BACKEND_KOTLIN_OUTPUT);
    }
}

/// Turns `hooks_enabled` on for every session of this sidecar.
#[test]
fn hook_returns_the_shims_breaker_halt_and_pre_tool_use_deny() {
    let sidecar = Sidecar::start_default();
    enable_hooks(&sidecar);
    let post = fixture("hooks/codex_post_tool_use_bash_pyright.json");
    let pre = fixture("hooks/codex_pre_tool_use_apply_patch.json");
    let session = post["session_id"].as_str().unwrap().to_owned();
    let mut mcp = McpClient::start(mcp_command(&sidecar), V_2025_06_18);

    // Before the halt, an edit is allowed through both wirings.
    assert_eq!(mcp.hook(&pre), "");
    // Three pyright runs with the same errors, through the tool: the third halts.
    assert_eq!(mcp.hook(&post), "");
    assert_eq!(mcp.hook(&post), "");
    let halt = mcp.hook(&post);
    assert!(
        halt.starts_with(r#"{"continue":false,"stopReason":"Circuit breaker: pyright"#),
        "{halt}"
    );
    assert!(halt.contains(&format!("--session {session}")), "{halt}");
    assert_valid(&post, &halt);
    // The halt is sticky, so the shim's next run of the same check prints the same line.
    let shim_halt = sidecar.hook(&post);
    assert_eq!(halt, shim_halt.stdout, "{}", shim_halt.stderr);
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(
        status["totalErrors"], 12,
        "four runs of three errors, none lost"
    );

    // The halted session's edit is denied, by the tool exactly as by the shim.
    let deny = mcp.hook(&pre);
    let shim_deny = sidecar.hook(&pre);
    assert_eq!(deny, shim_deny.stdout);
    assert!(
        deny.starts_with(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","#
        ),
        "{deny}"
    );
    assert_valid(&pre, &deny);

    // The agent's own reset through its shell is denied by the tool exactly as by the shim.
    let mut reset = pre.clone();
    reset["tool_name"] = json!("Bash");
    reset["tool_input"] =
        json!({"command": format!("guidebook breaker reset --session {session}")});
    let denied = mcp.hook(&reset);
    assert_eq!(denied, sidecar.hook(&reset).stdout);
    assert!(
        denied.contains("\"permissionDecision\":\"deny\""),
        "{denied}"
    );

    // After a reset, the edit goes through again.
    sidecar.cli(&["breaker", "reset", "--session", &session]);
    assert_eq!(mcp.hook(&pre), "");
}

#[test]
fn hook_answers_empty_text_at_once_when_the_sidecar_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nobody.sock");
    let mut cmd = isolated_guidebook();
    cmd.arg("mcp")
        .env("ADAPTIVE_GUIDEBOOK_HOME", dir.path())
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &socket)
        .env("HOME", dir.path())
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        // A hook patient far beyond the client's watchdog: an answer that waited for the
        // timeout instead of ending at the failed connect would fail the test there, however
        // fast or busy the machine.
        .env(
            "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
            (10 * WATCHDOG.as_millis()).to_string(),
        );
    let mut mcp = McpClient::start(cmd, V_2025_06_18);
    let repo = dir.path().join("repo");
    let event = codex_add("down", &repo, "src/A.kt", ORDER_PRINTER_KT);
    for event in [event, fixture("hooks/codex_pre_tool_use_apply_patch.json")] {
        assert_eq!(mcp.hook(&event), "");
    }
    // The agent tools say what is wrong instead.
    let result = mcp.call_tool("list_flags", json!({}));
    assert_eq!(result["isError"], true, "{result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("cannot reach the sidecar"), "{message}");
    assert!(message.contains(&socket.display().to_string()), "{message}");
}

fn tool_json(mcp: &mut McpClient, name: &str, arguments: Value) -> Value {
    let result = mcp.call_tool(name, arguments);
    assert_eq!(result["isError"], false, "{name}: {result}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{name} answers JSON text ({e}): {result}"))
}

fn tool_error(mcp: &mut McpClient, name: &str, arguments: Value) -> String {
    let result = mcp.call_tool(name, arguments);
    assert_eq!(result["isError"], true, "{name}: {result}");
    result["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn agent_tools_call_the_sidecar_and_report_its_errors() {
    let (root_dir, root) = test_guidebook_dir();
    let mut sidecar = Sidecar::start(&root);
    let repo = root_dir.path().join("backend-order");
    git_repo(&repo, Some(BACKEND_ORDER));
    let file = write_file(&repo, "src/Printer.kt", ORDER_PRINTER_KT);
    let path = file.display().to_string();
    let mut mcp = McpClient::start(mcp_command(&sidecar), V_NEWEST_WITH_HANDSHAKE);

    let explained = tool_json(&mut mcp, "explain_guidelines", json!({"filepaths": [path]}));
    assert_eq!(
        explained,
        sidecar.explain(&[&file]),
        "explain records nothing"
    );
    let found = tool_json(
        &mut mcp,
        "search_guidelines",
        json!({"session_id": "agent", "filepaths": [path]}),
    );
    assert_eq!(ids(&found), ["backend-logging", "kotlin-data-classes"]);
    let again = tool_json(
        &mut mcp,
        "search_guidelines",
        json!({"session_id": "agent", "filepaths": [path], "max_tokens": 500}),
    );
    assert_eq!(again, json!([]), "shown once per session");

    let prompt = tool_json(
        &mut mcp,
        "build_prompt",
        json!({"task": "Add a refund endpoint", "disclosure_phase": "summary"}),
    );
    assert!(
        prompt["prompt"].as_str().unwrap().contains("CRITICAL"),
        "{prompt}"
    );
    assert_eq!(
        prompt["phase"], "full",
        "progressive_disclosure is off: full"
    );

    let run = json!({"session_id": "agent", "errors": [
        {"tool": "ruff", "code": "F401", "file": "/src/a.py"}]});
    assert_eq!(
        tool_json(&mut mcp, "record_error", run.clone())["state"],
        "continue"
    );
    tool_json(&mut mcp, "record_error", run.clone());
    let third = tool_json(&mut mcp, "record_error", run);
    assert_eq!(third["state"], "halt");
    let status = tool_json(&mut mcp, "breaker_status", json!({"session_id": "agent"}));
    assert_eq!(
        status,
        sidecar.result("breakerStatus", json!({"sessionId": "agent"}))
    );
    let flags = tool_json(&mut mcp, "list_flags", json!({}));
    assert!(flags["flags"].is_object(), "{flags}");

    // The agent's server offers no orchestrator tool: its model cannot write its own
    // measurements. An orchestrator starts its own with `--orchestrator`.
    let refused = tool_error(&mut mcp, "ab_assign", json!({"task_id": "T-mcp"}));
    assert!(refused.contains("--orchestrator"), "{refused}");
    let refused = tool_error(
        &mut mcp,
        "record_qc_result",
        json!({"task_id": "T-mcp", "passed": true, "duration_sec": 1.0, "model": "haiku"}),
    );
    assert!(refused.contains("--orchestrator"), "{refused}");
    assert!(
        sidecar
            .result("abAssign", json!({"taskId": "T-probe"}))
            .get("newlyAssigned")
            .is_some(),
        "the sidecar itself still answers"
    );
    let agent_mcp = mcp;
    let mut mcp = McpClient::start(orchestrator_command(&sidecar), V_NEWEST_WITH_HANDSHAKE);

    // An orchestrator's reports, through the same face.
    let assigned = tool_json(&mut mcp, "ab_assign", json!({"task_id": "T-mcp"}));
    assert_eq!(assigned["newlyAssigned"], true, "{assigned}");
    let again = sidecar.result("abAssign", json!({"taskId": "T-mcp"}));
    assert_eq!(again["newlyAssigned"], false, "{again}");
    assert_eq!(
        (&again["group"], &again["assignedAt"]),
        (&assigned["group"], &assigned["assignedAt"]),
        "the group the sidecar recorded"
    );
    let qc = tool_json(
        &mut mcp,
        "record_qc_result",
        json!({"task_id": "T-mcp", "passed": true, "duration_sec": 12.0, "model": assigned["model"]}),
    );
    assert_eq!(qc["group"], assigned["group"], "{qc}");
    let review = tool_json(
        &mut mcp,
        "record_qc_review",
        json!({"task_id": "T-mcp", "defect_found": true, "reviewer": "person"}),
    );
    assert_eq!(review["model"], assigned["model"], "{review}");
    let tokens = tool_json(
        &mut mcp,
        "record_session_tokens",
        json!({"session_id": "agent", "tokens": 1234}),
    );
    assert_eq!(tokens, json!({"recorded": true}));
    let no_type = tool_error(
        &mut mcp,
        "record_qc_result",
        json!({"task_id": "T-x", "passed": false, "duration_sec": 1.0, "model": "haiku"}),
    );
    assert!(no_type.contains("issueType"), "{no_type}");

    let mut mcp = agent_mcp;
    // Errors come back as tool errors that say what is wrong.
    let relative = tool_error(
        &mut mcp,
        "search_guidelines",
        json!({"session_id": "agent", "filepaths": ["src/Printer.kt"]}),
    );
    assert!(relative.contains("src/Printer.kt"), "{relative}");
    let unknown_role = tool_error(
        &mut mcp,
        "build_prompt",
        json!({"task": "t", "role": "nope"}),
    );
    assert!(unknown_role.contains("nope"), "{unknown_role}");
    let missing = tool_error(&mut mcp, "record_error", json!({"session_id": "agent"}));
    assert!(missing.contains("missing field `errors`"), "{missing}");
    let unknown = tool_error(&mut mcp, "no_such_tool", json!({}));
    assert!(unknown.contains("no_such_tool"), "{unknown}");

    // A restarted sidecar closes the kept-alive connection; the next call uses a new one.
    sidecar.restart();
    let flags = tool_json(&mut mcp, "list_flags", json!({}));
    assert!(flags["flags"].is_object(), "{flags}");
    let event = codex_add("after-restart", &repo, "src/Printer.kt", ORDER_PRINTER_KT);
    assert_eq!(mcp.hook(&event), BACKEND_KOTLIN_OUTPUT);
}

/// Fills an `mcp_tool` input template from a hook event as Codex does: a string that is a whole
/// `"${field}"` placeholder becomes the event's value with its JSON type; a field the event lacks
/// fails the hook (here: the test).
fn fill(template: &Value, event: &Value) -> Value {
    match template {
        Value::String(text) => {
            let field = text
                .strip_prefix("${")
                .and_then(|t| t.strip_suffix('}'))
                .unwrap_or_else(|| panic!("not a whole placeholder: {text}"));
            let value = field
                .split('.')
                .try_fold(event, |v, key| v.get(key))
                .unwrap_or_else(|| panic!("the event lacks {field}: {event}"));
            value.clone()
        }
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, event)))
                .collect(),
        ),
        other => panic!("a template holds placeholders and objects only: {other}"),
    }
}

/// Whether a JSON value has a TOML form: no `null` anywhere (TOML has none).
fn toml_representable(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => items.iter().all(toml_representable),
        Value::Object(members) => members.values().all(toml_representable),
        _ => true,
    }
}

#[test]
fn hooks_install_codex_mcp_writes_a_config_codex_can_read_and_templates_that_carry_the_event() {
    let (root_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let project = root_dir.path().join("project");
    std::fs::create_dir_all(project.join(".codex")).unwrap();
    let user_config = "# mine\nmodel = \"gpt-5\"\n\n[mcp_servers.other]\ncommand = \"other\"\n";
    std::fs::write(project.join(".codex/config.toml"), user_config).unwrap();
    let project_arg = project.display().to_string();
    let install = [
        "hooks",
        "install",
        "--codex",
        "--mcp",
        "--project",
        &project_arg,
    ];
    let out = sidecar.cli(&install);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // config.toml: the user's text as written, then our server.
    let config = std::fs::read_to_string(project.join(".codex/config.toml")).unwrap();
    assert!(config.starts_with(user_config), "{config}");
    let parsed: toml_edit::DocumentMut = config.parse().expect("config.toml stays TOML");
    let ours = &parsed["mcp_servers"]["guidebook"];
    assert_eq!(
        ours["command"].as_str(),
        Some(guidebook_exe().to_str().unwrap())
    );
    let args: Vec<_> = ours["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str())
        .collect();
    assert_eq!(args, [Some("mcp")]);

    // hooks.json: the hooks.json shape, every handler an mcp_tool call on our server whose
    // input has a TOML form (Codex also reads hooks from config.toml).
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".codex/hooks.json")).unwrap())
            .unwrap();
    let events = hooks["hooks"].as_object().unwrap();
    assert_eq!(
        events.keys().map(String::as_str).collect::<Vec<_>>(),
        ["PostCompact", "PostToolUse", "PreToolUse", "SessionStart"]
    );
    let mut inputs = std::collections::HashMap::new();
    for (event, groups) in events {
        for group in groups.as_array().unwrap() {
            assert!(group["matcher"].is_null() || group["matcher"].is_string());
            for handler in group["hooks"].as_array().unwrap() {
                assert_eq!(handler["type"], "mcp_tool");
                assert_eq!(handler["server"], "guidebook");
                assert_eq!(handler["tool"], "hook");
                assert!(handler["timeout"].is_u64());
                assert!(toml_representable(&handler["input"]), "{handler}");
                let mut toml_doc = toml_edit::DocumentMut::new();
                for (key, value) in handler["input"].as_object().unwrap() {
                    let value = match value {
                        Value::String(s) => toml_edit::value(s.as_str()),
                        other => panic!("Codex templates are whole placeholders: {other}"),
                    };
                    toml_doc[key.as_str()] = value;
                }
                assert!(toml_doc
                    .to_string()
                    .parse::<toml_edit::DocumentMut>()
                    .is_ok());
                inputs.insert(event.clone(), handler["input"].clone());
            }
        }
    }

    // Each event's template names only fields its Codex event has (filling fails otherwise),
    // and the filled input makes the hook answer what the shim answers for the whole event.
    let repo = root_dir.path().join("backend-order");
    git_repo(&repo, Some(BACKEND_ORDER));
    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    let mut mcp = McpClient::start(mcp_command(&sidecar), V_2025_06_18);
    let post = codex_add("templated", &repo, rel, ORDER_PRINTER_KT);
    let filled = fill(&inputs["PostToolUse"], &post);
    assert_eq!(mcp.hook(&filled), BACKEND_KOTLIN_OUTPUT);
    let compact = hook_event("codex_post_compact.json", "templated", &repo);
    assert_eq!(mcp.hook(&fill(&inputs["PostCompact"], &compact)), "");
    let shim_event = codex_add("templated-shim", &repo, rel, ORDER_PRINTER_KT);
    assert_eq!(
        mcp.hook(&filled),
        sidecar.hook(&shim_event).stdout,
        "reset, shown again"
    );
    let pre = fixture("hooks/codex_pre_tool_use_apply_patch.json");
    assert_eq!(mcp.hook(&fill(&inputs["PreToolUse"], &pre)), "");
    let mut start = compact.clone();
    start["hook_event_name"] = json!("SessionStart");
    start["source"] = json!("clear");
    assert_eq!(mcp.hook(&fill(&inputs["SessionStart"], &start)), "");

    // Idempotent; and the command wiring replaces the MCP one (and back).
    let hooks_text = std::fs::read_to_string(project.join(".codex/hooks.json")).unwrap();
    assert!(sidecar.cli(&install).status.success());
    assert_eq!(
        std::fs::read_to_string(project.join(".codex/hooks.json")).unwrap(),
        hooks_text
    );
    assert_eq!(
        std::fs::read_to_string(project.join(".codex/config.toml")).unwrap(),
        config
    );
    let command = [
        "hooks",
        "install",
        "--codex",
        "--project",
        &project_arg,
        "--hook-command",
        "/opt/guidebook-hook",
    ];
    assert!(sidecar.cli(&command).status.success());
    let swapped = std::fs::read_to_string(project.join(".codex/hooks.json")).unwrap();
    assert!(!swapped.contains("mcp_tool"), "{swapped}");
    assert_eq!(
        swapped.matches("/opt/guidebook-hook").count(),
        4,
        "{swapped}"
    );
    assert!(sidecar.cli(&install).status.success());
    assert_eq!(
        std::fs::read_to_string(project.join(".codex/hooks.json")).unwrap(),
        hooks_text
    );
}
