//! The real agents' runs, shared by their tests (`claude_real`, `codex_real`, `gemini_real`,
//! `copilot_real`, `opencode_real`, `shell_writes_real`): each agent's model API mocked on a [`MockServer`] in its own streaming
//! wire format, the settings each agent's scratch user needs, and each agent launched against
//! its mock with our hooks finding a given socket.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::{json, Value};

use super::{guidebook_exe, run_bounded, shim_exe, PATIENT_HOOK_TIMEOUT_MS};
use crate::agents::{sse, MockServer, CLAUDE_CODE, CODEX, COPILOT_CLI, GEMINI_CLI, OPENCODE};

/// Whether a model request offers tools: an agent's own turn, not a side request.
fn offers_tools(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// The Anthropic Messages API as Claude Code streams it: each request that offers tools gets the
/// next scripted `tool_use` block (then a closing text), anything else a short text answer.
pub struct MockMessages {
    server: MockServer,
}

impl MockMessages {
    pub fn start(script: Vec<(&'static str, Value)>) -> MockMessages {
        let script = Mutex::new(script.into_iter());
        let server = MockServer::start(move |request, n| {
            if request.method != "POST" || !request.path.starts_with("/v1/messages") {
                return (200, "application/json", "{}".to_string());
            }
            if request.path.contains("count_tokens") {
                return (
                    200,
                    "application/json",
                    r#"{"input_tokens":10}"#.to_string(),
                );
            }
            let model = request.body["model"].clone();
            let message = json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
                "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}});
            let tool = offers_tools(&request.body)
                .then(|| script.lock().unwrap().next())
                .flatten();
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
            if request.body["stream"] != true {
                let mut whole = message.clone();
                whole["content"] = json!([{"type": "text", "text": "Done."}]);
                whole["stop_reason"] = json!("end_turn");
                return (200, "application/json", whole.to_string());
            }
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
        });
        MockMessages { server }
    }

    /// The model requests that offered tools (the agent's own turns), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens"))
            .map(|r| r.body)
            .filter(offers_tools)
            .collect()
    }
}

/// Claude Code (`claude`) in `work` for `home`'s user, its model at `mock` and our hooks finding
/// `socket`; the caller adds the arguments.
pub fn claude_command(home: &Path, work: &Path, mock: &MockMessages, socket: &Path) -> Command {
    let mut cmd = Command::new(CLAUDE_CODE.exe());
    cmd.current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://127.0.0.1:{}", mock.server.port),
        )
        .env("ANTHROPIC_API_KEY", "sk-not-a-real-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env(
            "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
            PATIENT_HOOK_TIMEOUT_MS,
        );
    cmd
}

/// A local stand-in for the OpenAI Responses API that Codex streams from: each model request
/// gets the next scripted output item (a tool call, say), then an assistant message, as
/// server-sent events; every request is kept for the test to read.
pub struct MockResponses {
    server: MockServer,
}

impl MockResponses {
    pub fn start(script: Vec<Value>) -> MockResponses {
        let script = Mutex::new(script.into_iter());
        let server = MockServer::start(move |request, n| {
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
        });
        MockResponses { server }
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The bodies of the model requests, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.body)
            .collect()
    }
}

/// The texts of the `developer` messages in one request Codex sent.
pub fn developer_texts(request: &Value) -> Vec<String> {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "developer")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

/// `guidebook hooks install --codex ARGS` for the user whose home is `home`; it must succeed.
/// Returns what it printed.
pub fn install_codex_hooks(home: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(guidebook_exe());
    cmd.env_clear()
        .env("HOME", home)
        .args(["hooks", "install", "--codex"])
        .args(args);
    let out = run_bounded(cmd, b"", "guidebook hooks install");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scratch user for Codex: its home with `.codex/config.toml` pointing the model at `mock`,
/// our hooks installed (and trusted, unless `trust` is false) running the real shim.
pub fn codex_user(home: &Path, mock: &MockResponses, trust: bool) {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            mock.port()
        ),
    )
    .unwrap();
    let shim = shim_exe();
    let mut args = vec!["--hook-command", shim.to_str().unwrap()];
    if trust {
        args.push("--trust");
    }
    install_codex_hooks(home, &args);
}

/// `codex exec` in `work` for `home`'s user, with the hooks finding `socket`.
pub fn codex_exec(home: &Path, work: &Path, socket: &Path, prompt: &str) -> Output {
    let mut cmd = Command::new(CODEX.exe());
    cmd.args([
        "exec",
        "--skip-git-repo-check",
        "-s",
        "workspace-write",
        prompt,
    ])
    .current_dir(work)
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", home)
    .env("CODEX_HOME", home.join(".codex"))
    .env("MOCK_API_KEY", "not-a-real-key")
    .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
    .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
    .env(
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        PATIENT_HOOK_TIMEOUT_MS,
    );
    run_bounded(cmd, b"", "codex exec")
}

/// The Gemini API as Gemini CLI streams it (`streamGenerateContent?alt=sse`): each agent turn
/// (a request that offers tools) gets the next scripted function call, then a closing text;
/// its side requests (token counts, checks) get a bare answer.
pub struct MockGemini {
    server: MockServer,
}

impl MockGemini {
    pub fn start(script: Vec<(&'static str, Value)>) -> MockGemini {
        let script = Mutex::new(script.into_iter());
        let server = MockServer::start(move |request, _| {
            if request.path.contains(":countTokens") {
                return (200, "application/json", r#"{"totalTokens":10}"#.to_string());
            }
            let usage =
                json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
            let offers_tools = offers_tools(&request.body);
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
        });
        MockGemini { server }
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The agent's turns (requests that offered tools), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .map(|r| r.body)
            .filter(offers_tools)
            .collect()
    }
}

/// A headless user of the Gemini API: Gemini CLI needs the auth type named for a custom base
/// URL.
pub fn gemini_api_user(home: &Path) {
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        "{\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}\n}\n",
    )
    .unwrap();
}

/// `gemini -p PROMPT --yolo` in `work` for `home`'s user, its model at `mock` and our hooks
/// finding `socket`.
pub fn gemini(home: &Path, work: &Path, mock: &MockGemini, socket: &Path, prompt: &str) -> Output {
    gemini_with_budget(
        home,
        work,
        mock,
        socket,
        prompt,
        PATIENT_HOOK_TIMEOUT_MS,
        &[],
    )
}

/// [`gemini`] with the shim's hook budget (`ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS`) set to
/// `budget_ms`, and `extra` arguments.
pub fn gemini_with_budget(
    home: &Path,
    work: &Path,
    mock: &MockGemini,
    socket: &Path,
    prompt: &str,
    budget_ms: &str,
    extra: &[&str],
) -> Output {
    let mut cmd = Command::new(GEMINI_CLI.exe());
    cmd.args(["-m", "gemini-2.5-pro", "-p", prompt, "--yolo"])
        .args(extra)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GEMINI_API_KEY", "not-a-real-key")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.server.port),
        )
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", budget_ms);
    run_bounded(cmd, b"", "gemini -p")
}

/// The OpenAI chat-completions API as Copilot CLI and OpenCode stream it: each request that
/// offers tools gets the next scripted function call, anything else (OpenCode's title request)
/// a short text answer; every request is kept.
pub struct MockChatCompletions {
    server: MockServer,
}

impl MockChatCompletions {
    pub fn start(script: Vec<(&'static str, Value)>) -> MockChatCompletions {
        let script = Mutex::new(script.into_iter());
        let server = MockServer::start(move |request, n| {
            if request.method != "POST" || !request.path.ends_with("/chat/completions") {
                return (
                    200,
                    "application/json",
                    r#"{"object":"list","data":[]}"#.into(),
                );
            }
            let call = offers_tools(&request.body)
                .then(|| script.lock().unwrap().next())
                .flatten();
            let (delta, finish) = match call {
                Some((name, args)) => (
                    json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                        "id": format!("call_{n}"), "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}),
                    "tool_calls",
                ),
                None => (json!({"role": "assistant", "content": "Done."}), "stop"),
            };
            let chunk = |delta: Value, finish: Value| {
                json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion.chunk",
                    "created": 0, "model": "gpt-4.1",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
            };
            let events = [chunk(delta, Value::Null), chunk(json!({}), json!(finish))]
                .iter()
                .map(|c| format!("data: {c}\n\n"))
                .collect::<String>()
                + "data: [DONE]\n\n";
            (200, "text/event-stream", events)
        });
        MockChatCompletions { server }
    }

    pub fn port(&self) -> u16 {
        self.server.port
    }

    /// The agent's turns (requests that offered tools), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body)
            .filter(offers_tools)
            .collect()
    }
}

/// The tool results one chat-completions request carries (`role: tool` messages), in order.
pub fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        })
        .collect()
}

/// Where Copilot CLI unpacks itself (235 MB) on first run: one directory beside its install,
/// shared by every test, and filled once, before any test runs it.
fn copilot_cache() -> std::path::PathBuf {
    let exe = COPILOT_CLI.exe();
    let cache = exe
        .ancestors()
        .nth(3)
        .expect("target/agents/<name>/node_modules/.bin/copilot")
        .join("cache");
    static UNPACKED: std::sync::Once = std::sync::Once::new();
    UNPACKED.call_once(|| {
        let mut cmd = Command::new(&exe);
        cmd.arg("--version")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &cache)
            .env("COPILOT_HOME", cache.join("home"))
            .env("XDG_CACHE_HOME", &cache)
            .env("COPILOT_AUTO_UPDATE", "false");
        let out = run_bounded(cmd, b"", "copilot --version");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    cache
}

/// `copilot -p PROMPT --allow-all` (tools and paths: its `bash` runs `ruff` from outside
/// `work`) in `work` for `home`'s user (`COPILOT_HOME` is
/// `home/.copilot`), offline (`COPILOT_OFFLINE`), its model (`gpt-4.1`: the `create`/`edit`
/// tools) at `mock`, our hooks finding `socket`; `extra` arguments after.
pub fn copilot(
    home: &Path,
    work: &Path,
    mock: &MockChatCompletions,
    socket: &Path,
    prompt: &str,
    extra: &[&str],
) -> Output {
    copilot_with_budget(
        home,
        work,
        mock,
        socket,
        prompt,
        extra,
        PATIENT_HOOK_TIMEOUT_MS,
    )
}

/// [`copilot`] with the shim's hook budget (`ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS`) set to
/// `budget_ms`.
pub fn copilot_with_budget(
    home: &Path,
    work: &Path,
    mock: &MockChatCompletions,
    socket: &Path,
    prompt: &str,
    extra: &[&str],
    budget_ms: &str,
) -> Output {
    let cmd = copilot_command(home, work, mock, socket, prompt, extra, budget_ms);
    run_bounded(cmd, b"", "copilot -p")
}

/// The command [`copilot_with_budget`] runs, for a caller that runs it its own way.
pub fn copilot_command(
    home: &Path,
    work: &Path,
    mock: &MockChatCompletions,
    socket: &Path,
    prompt: &str,
    extra: &[&str],
    budget_ms: &str,
) -> Command {
    let cache = copilot_cache();
    let mut cmd = Command::new(COPILOT_CLI.exe());
    cmd.args(["-p", prompt, "--allow-all"])
        .args(extra)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("COPILOT_HOME", home.join(".copilot"))
        .env("XDG_CACHE_HOME", cache)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{}/v1", mock.port()),
        )
        .env("COPILOT_PROVIDER_API_KEY", "not-a-real-key")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", budget_ms);
    cmd
}

/// A scratch OpenCode user whose model is `mock` (a custom OpenAI-compatible provider), in
/// `home/.config/opencode/opencode.json`. Its config directory is seeded with what OpenCode's
/// background `npm install` of `@opencode-ai/plugin` would leave, which offline costs a run
/// about 75 s of retries.
pub fn opencode_user(home: &Path, mock: &MockChatCompletions) {
    let config = home.join(".config/opencode");
    std::fs::create_dir_all(config.join("node_modules")).unwrap();
    std::fs::write(
        config.join("package-lock.json"),
        json!({"lockfileVersion": 3, "packages": {"": {"dependencies":
            {"@opencode-ai/plugin": OPENCODE.version()}}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        config.join("opencode.json"),
        json!({"$schema": "https://opencode.ai/config.json",
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                "options": {"baseURL": format!("http://127.0.0.1:{}/v1", mock.port()),
                    "apiKey": "not-a-real-key"},
                "models": {"m1": {"name": "m1", "tool_call": true}}}},
            "model": "mock/m1", "autoupdate": false, "share": "disabled"})
        .to_string(),
    )
    .unwrap();
}

/// `opencode run PROMPT` in `work` for `home`'s user (every XDG directory under `home`), its
/// model at `mock` (see [`opencode_user`], written again for this mock), our plugin's hooks
/// finding `socket`; `extra` arguments before the prompt.
pub fn opencode(
    home: &Path,
    work: &Path,
    mock: &MockChatCompletions,
    socket: &Path,
    prompt: &str,
    extra: &[&str],
) -> Output {
    opencode_with_budget(
        home,
        work,
        mock,
        socket,
        prompt,
        extra,
        PATIENT_HOOK_TIMEOUT_MS,
    )
}

/// [`opencode`] with the shim's hook budget (`ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS`) set to
/// `budget_ms`.
pub fn opencode_with_budget(
    home: &Path,
    work: &Path,
    mock: &MockChatCompletions,
    socket: &Path,
    prompt: &str,
    extra: &[&str],
    budget_ms: &str,
) -> Output {
    opencode_user(home, mock);
    let mut cmd = Command::new(OPENCODE.exe());
    cmd.arg("run")
        .args(extra)
        .arg(prompt)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "true")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "true")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "true")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", budget_ms);
    run_bounded(cmd, b"", "opencode run")
}
