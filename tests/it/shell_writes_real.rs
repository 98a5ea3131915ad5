//! The real agents editing a Kotlin file through their shell tool, with our hooks, against mock
//! model APIs: Claude Code's `Bash`, Codex's `exec_command` and Gemini CLI's
//! `run_shell_command` running `sed -i` get the
//! guideline into their next model request, as an edit tool's change would; a `sed -i` that
//! only rewrites another line of the file (whose match was there before) does not. Reads: the
//! npm registry once per cache directory (`target/agents/`); writes: temp directories.

use std::process::Command;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::agents::{
    install_shim_hooks, npm_cli, printed, sse, MockServer, CLAUDE_CODE, CODEX, GEMINI_CLI,
};
use crate::harness::*;

/// `GlobalScope.launch` in `acme/*` Kotlin, counted only on the lines a change wrote.
const GLOBALSCOPE_IN_CHANGES: &str =
    "id: kotlin-no-globalscope\nscope:\n  repositories: ['acme/*']\n  languages: [kotlin]\n\
    match:\n  in: changes\n  any:\n    - regex:\n        pattern: 'GlobalScope\\.launch'\n\
    content: Do not launch in GlobalScope; use the component's own scope.\n";

/// The first `sed` rewrites line 2 of a file whose line 3 already launches in GlobalScope
/// (uncommitted); the second writes the launch itself.
const UNRELATED_SED: &str = "sed -i 's/fun start() = 1/fun start() = 10/' src/main/kotlin/Jobs.kt";
const WRITING_SED: &str =
    "sed -i 's/fun start() = 10/fun start() = GlobalScope.launch { }/' src/main/kotlin/Jobs.kt";
const BEFORE: &str = "package acme\nfun start() = 1\nfun later() = GlobalScope.launch { }\n";
const AFTER: &str =
    "package acme\nfun start() = GlobalScope.launch { }\nfun later() = GlobalScope.launch { }\n";

struct Scene {
    _dir: tempfile::TempDir,
    sidecar: Sidecar,
    work: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(&root, "kotlin-no-globalscope", GLOBALSCOPE_IN_CHANGES);
    let sidecar = Sidecar::start(&root);
    let work = dir.path().join("orders");
    git_repo(&work, Some("git@github.com:acme/orders.git"));
    write_file(
        &work,
        "src/main/kotlin/Jobs.kt",
        "package acme\nfun start() = 1\nfun later() = 2\n",
    );
    git_commit_all(&work, "jobs");
    write_file(&work, "src/main/kotlin/Jobs.kt", BEFORE);
    let home = dir.path().join("user");
    std::fs::create_dir_all(&home).unwrap();
    Scene {
        _dir: dir,
        sidecar,
        work,
        home,
    }
}

fn shown(text: &str) -> usize {
    text.matches("[kotlin-no-globalscope]").count()
}

/// The Anthropic Messages API, streamed: each request that offers tools gets the next scripted
/// `tool_use`, anything else a short text. (The same mock as `claude_real`'s, cut to what this
/// test needs.)
fn mock_messages(script: Vec<(&'static str, Value)>) -> MockServer {
    let script = Mutex::new(script.into_iter());
    MockServer::start(move |request, n| {
        if request.method != "POST" || !request.path.starts_with("/v1/messages") {
            return (200, "application/json", "{}".to_string());
        }
        if request.path.contains("count_tokens") {
            return (200, "application/json", r#"{"input_tokens":10}"#.into());
        }
        let message = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
            "model": request.body["model"], "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}});
        let offers_tools = request.body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty());
        let tool = offers_tools
            .then(|| script.lock().unwrap().next())
            .flatten();
        if request.body["stream"] != true {
            let mut whole = message.clone();
            whole["content"] = json!([{"type": "text", "text": "Done."}]);
            whole["stop_reason"] = json!("end_turn");
            return (200, "application/json", whole.to_string());
        }
        let (block, delta, stop) = match tool {
            Some((name, input)) => (
                json!({"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}),
                json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                "tool_use",
            ),
            None => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": "Done."}),
                "end_turn",
            ),
        };
        let events = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": message}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": delta}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        (200, "text/event-stream", events)
    })
}

/// The model's own turns (requests that offered tools), in order.
fn claude_turns(mock: &MockServer) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens"))
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect()
}

#[test]
fn claude_code_running_sed_in_place_through_bash_gets_the_guideline_in_its_next_request() {
    let scene = scene();
    install_shim_hooks(&scene.home, "--claude");
    let bash = |command: &str| ("Bash", json!({"command": command, "description": "edit"}));
    let mock = mock_messages(vec![bash(UNRELATED_SED), bash(WRITING_SED)]);
    let mut cmd = Command::new(npm_cli(CLAUDE_CODE));
    cmd.args(["-p", "launch the jobs", "--model", "claude-sonnet-4-5"])
        .args(["--allowedTools", "Bash"])
        .current_dir(&scene.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &scene.home)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-not-a-real-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env(
            "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
            PATIENT_HOOK_TIMEOUT_MS,
        );
    let out = run_bounded(cmd, b"", "claude -p");
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let turns = claude_turns(&mock);
    assert_eq!(turns.len(), 3, "sed, sed, done: {said}");
    let messages = |i: usize| turns[i]["messages"].to_string();
    assert_eq!(
        shown(&messages(1)),
        0,
        "the first sed wrote no launch: {}",
        messages(1)
    );
    assert_eq!(
        shown(&messages(2)),
        1,
        "the request after the second sed carries the guideline: {}",
        messages(2)
    );
    assert!(
        messages(2).contains("PostToolUse:Bash hook additional context"),
        "{}",
        messages(2)
    );
}

/// The OpenAI Responses API, streamed: each request gets the next scripted output item, then
/// an assistant message. (The same mock as `codex_real`'s.)
fn mock_responses(script: Vec<Value>) -> MockServer {
    let script = Mutex::new(script.into_iter());
    MockServer::start(move |request, n| {
        if request.method != "POST" {
            return (200, "application/json", r#"{"models":[]}"#.to_string());
        }
        let item = script.lock().unwrap().next().unwrap_or_else(|| {
            json!({"type": "message", "role": "assistant", "id": format!("msg_{n}"),
                "content": [{"type": "output_text", "text": "Done."}]})
        });
        let id = format!("resp_{n}");
        let events = sse(&[
            (
                "response.created",
                json!({"type": "response.created", "response": {"id": id}}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            ),
            (
                "response.completed",
                json!({"type": "response.completed", "response": {"id": id,
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
            ),
        ]);
        (200, "text/event-stream", events)
    })
}

/// The texts of the `developer` messages in one request Codex sent.
fn developer_texts(request: &Value) -> String {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "developer")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn codex_running_sed_in_place_through_its_shell_gets_the_guideline_in_its_next_request() {
    let scene = scene();
    let exec = |id: &str, cmd: &str| {
        json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
            "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string(),
            "status": "completed"})
    };
    let mock = mock_responses(vec![exec("1", UNRELATED_SED), exec("2", WRITING_SED)]);
    let codex_home = scene.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            mock.port
        ),
    )
    .unwrap();
    let mut install = Command::new(guidebook_exe());
    install
        .env_clear()
        .env("HOME", &scene.home)
        .args(["hooks", "install", "--codex", "--trust", "--hook-command"])
        .arg(shim_exe());
    let out = run_bounded(install, b"", "guidebook hooks install --codex --trust");
    assert!(out.status.success(), "{}", printed(&out));

    let mut cmd = Command::new(npm_cli(CODEX));
    cmd.args([
        "exec",
        "--skip-git-repo-check",
        "-s",
        "workspace-write",
        "launch the jobs",
    ])
    .current_dir(&scene.work)
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", &scene.home)
    .env("CODEX_HOME", &codex_home)
    .env("MOCK_API_KEY", "not-a-real-key")
    .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket)
    .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
    .env(
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        PATIENT_HOOK_TIMEOUT_MS,
    );
    let out = run_bounded(cmd, b"", "codex exec");
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let requests: Vec<Value> = mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body)
        .collect();
    assert_eq!(requests.len(), 3, "sed, sed, message: {said}");
    assert_eq!(
        shown(&developer_texts(&requests[1])),
        0,
        "the first sed wrote no launch"
    );
    let next = developer_texts(&requests[2]);
    assert_eq!(
        shown(&next),
        1,
        "the request after the second sed: {next} {said}"
    );
    assert!(next.contains("Adaptive Guidebook guidelines relevant to the latest changes:"));
}

/// The Gemini API as Gemini CLI streams it: each agent turn (a request that offers tools) gets
/// the next scripted function call, then a closing text. (The same mock as `gemini_real`'s.)
fn mock_gemini(script: Vec<(&'static str, Value)>) -> MockServer {
    let script = Mutex::new(script.into_iter());
    MockServer::start(move |request, _| {
        if request.path.contains(":countTokens") {
            return (200, "application/json", r#"{"totalTokens":10}"#.to_string());
        }
        let usage =
            json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
        let offers_tools = request.body["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty());
        let parts = match offers_tools
            .then(|| script.lock().unwrap().next())
            .flatten()
        {
            Some((name, args)) => json!([{"functionCall": {"name": name, "args": args}}]),
            None if offers_tools => json!([{"text": "Done."}]),
            None => json!([{"text": "{}"}]),
        };
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": parts},
            "finishReason": "STOP", "index": 0}], "usageMetadata": usage});
        if request.path.contains(":streamGenerateContent") {
            (200, "text/event-stream", format!("data: {chunk}\r\n\r\n"))
        } else {
            (200, "application/json", chunk.to_string())
        }
    })
}

#[test]
fn gemini_cli_running_sed_in_place_through_its_shell_gets_the_guideline_in_its_next_request() {
    let scene = scene();
    std::fs::create_dir_all(scene.home.join(".gemini")).unwrap();
    std::fs::write(
        scene.home.join(".gemini/settings.json"),
        "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}\n}\n",
    )
    .unwrap();
    install_shim_hooks(&scene.home, "--gemini");
    let shell = |command: &str| ("run_shell_command", json!({"command": command}));
    let mock = mock_gemini(vec![shell(UNRELATED_SED), shell(WRITING_SED)]);
    let mut cmd = Command::new(npm_cli(GEMINI_CLI));
    cmd.args(["-m", "gemini-2.5-pro", "-p", "launch the jobs", "--yolo"])
        .current_dir(&scene.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &scene.home)
        .env("GEMINI_API_KEY", "not-a-real-key")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port),
        )
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env(
            "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
            PATIENT_HOOK_TIMEOUT_MS,
        );
    let out = run_bounded(cmd, b"", "gemini -p");
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let turns: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert_eq!(turns.len(), 3, "sed, sed, done: {said}");
    let contents = |i: usize| turns[i]["contents"].to_string();
    assert_eq!(
        shown(&contents(1)),
        0,
        "the first sed wrote no launch: {}",
        contents(1)
    );
    assert_eq!(
        shown(&contents(2)),
        1,
        "after the second sed: {} {said}",
        contents(2)
    );
}
