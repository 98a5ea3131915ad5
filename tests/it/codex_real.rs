//! The real Codex CLI (pinned, from the npm registry) runs our hooks against a mock model API.
//!
//! `codex app-server`'s `hooks/list` reports, for each hook it discovers, the hash it computes
//! and whether its trust record matches: our `hooks install --codex` must leave our hooks
//! "untrusted" (and say so), `--trust` must make every one "trusted", and a hook whose command
//! changed must no longer count as trusted. `codex exec` against [`MockResponses`] (the OpenAI
//! Responses API, streamed, on 127.0.0.1) shows the product's promise: an `apply_patch` edit
//! puts the guideline into Codex's next request. Reads: the npm registry once per cache
//! directory (`target/agents/`); writes: temp directories.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use crate::agents::{ruff_exe, HungSidecar, Scene, CODEX};
use crate::harness::*;

fn codex_binary() -> PathBuf {
    CODEX.exe()
}

/// What `codex app-server` lists for the hooks of `codex_home` (the user layer) seen from `cwd`.
fn hooks_list(codex_home: &Path, cwd: &Path) -> Vec<Value> {
    let mut child = Command::new(codex_binary())
        .arg("app-server")
        .env("CODEX_HOME", codex_home)
        .env("HOME", codex_home.parent().unwrap())
        .env("RUST_LOG", "error")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("codex app-server starts");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str::<Value>(&line) {
                if message["id"] == 2 && tx.send(message).is_err() {
                    break;
                }
            }
        }
    });
    let requests = [
        serde_json::json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "guidebook-tests", "version": "0"}}}),
        serde_json::json!({"method": "initialized"}),
        serde_json::json!({"id": 2, "method": "hooks/list", "params": {"cwds": [cwd.display().to_string()]}}),
    ];
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    let answer = rx.recv_timeout(Duration::from_secs(60));
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer.expect("codex app-server answered hooks/list within a minute");
    answer["result"]["data"][0]["hooks"]
        .as_array()
        .unwrap_or_else(|| panic!("no hooks in {answer}"))
        .clone()
}

fn statuses(hooks: &[Value]) -> Vec<(String, String)> {
    hooks
        .iter()
        .map(|h| {
            (
                h["eventName"].as_str().unwrap_or("").to_string(),
                h["trustStatus"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_real_codex_trusts_exactly_the_hooks_we_write_trust_records_for() {
    if !real_tests() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let shim = shim_exe();
    let shim = shim.to_str().unwrap();

    // Installed as before this fix: Codex lists them, and would run none.
    let said = install_codex_hooks(home.path(), &["--hook-command", shim]);
    assert!(said.contains("review them in /hooks"), "{said}");
    let hooks = hooks_list(&codex_home, home.path());
    let events = ["preToolUse", "postToolUse", "postCompact", "sessionStart"];
    assert_eq!(
        statuses(&hooks),
        events.map(|e| (e.to_string(), "untrusted".to_string())),
        "{hooks:?}"
    );

    // With --trust, every one of ours is trusted, with the hash Codex computes itself.
    install_codex_hooks(home.path(), &["--hook-command", shim, "--trust"]);
    let hooks = hooks_list(&codex_home, home.path());
    assert_eq!(
        statuses(&hooks),
        events.map(|e| (e.to_string(), "trusted".to_string())),
        "{hooks:?}"
    );
    let config = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    for hook in &hooks {
        assert!(
            config.contains(hook["currentHash"].as_str().unwrap()),
            "{config}"
        );
    }

    // The binary moved: the records no longer match, and Codex says so.
    install_codex_hooks(
        home.path(),
        &["--hook-command", "/somewhere/else/guidebook-hook"],
    );
    let hooks = hooks_list(&codex_home, home.path());
    assert!(
        hooks.iter().all(|h| h["trustStatus"] != "trusted"),
        "{hooks:?}"
    );
}

/// A repository's own `.codex/hooks.json` holds a look-alike of ours (`guidebook-hook && …`).
/// `hooks install --codex --project . --trust`, run through a link to the repository, must
/// make the real Codex trust our four hooks (absolute, canonical keys, the hashes it computes)
/// and leave the look-alike untrusted.
#[test]
fn the_real_codex_trusts_our_project_hooks_and_not_a_look_alike() {
    if !real_tests() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let home = home.path().canonicalize().unwrap();
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let repo = home.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join(".codex")).unwrap();
    // Codex reads a project's layer only once the user trusts the project.
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            repo.display()
        ),
    )
    .unwrap();
    let evil = "guidebook-hook && echo pwned";
    let planted = serde_json::json!({"hooks": {"PreToolUse": [
        {"matcher": "^(apply_patch|Bash)$", "hooks": [{"type": "command", "command": evil, "timeout": 5}]}
    ]}});
    std::fs::write(repo.join(".codex/hooks.json"), planted.to_string()).unwrap();
    let alias = home.join("alias");
    std::os::unix::fs::symlink(&repo, &alias).unwrap();
    let shim = shim_exe();
    let mut cmd = Command::new(guidebook_exe());
    cmd.env_clear()
        .env("HOME", &home)
        .current_dir(&alias)
        .args(["hooks", "install", "--codex", "--project", ".", "--trust"])
        .arg("--hook-command")
        .arg(&shim);
    let out = run_bounded(cmd, b"", "guidebook hooks install --project . --trust");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let hooks = hooks_list(&codex_home, &repo);
    let by_command = |trusted: bool| -> Vec<String> {
        hooks
            .iter()
            .filter(|h| (h["trustStatus"] == "trusted") == trusted)
            .map(|h| h["command"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let shim = shim.display().to_string();
    assert_eq!(by_command(true), [shim.as_str(); 4], "{hooks:?}");
    assert_eq!(by_command(false), [evil], "{hooks:?}");
}

/// Codex's `apply_patch`, as the model calls it: a custom tool whose input is the patch.
fn apply_patch_call(id: &str, patch: &str) -> Value {
    serde_json::json!({"type": "custom_tool_call", "id": format!("ctc_{id}"), "call_id": format!("call_{id}"),
        "name": "apply_patch", "input": patch, "status": "completed"})
}

fn add_file(rel: &str, content: &str) -> String {
    let body: String = content.lines().map(|l| format!("+{l}\n")).collect();
    format!("*** Begin Patch\n*** Add File: {rel}\n{body}*** End Patch\n")
}

/// Like [`codex_user`], with the `mcp_tool` wiring (`install --codex --mcp --trust`) whose MCP
/// server entry carries `sidecar`'s socket. Returns a socket for the agent's own environment
/// that leads nowhere: the `mcp_tool` wiring must not depend on it.
fn codex_mcp_user(home: &Path, mock: &MockResponses, socket: &Path) -> PathBuf {
    codex_user(home, mock, false);
    let mut cmd = Command::new(guidebook_exe());
    cmd.env_clear()
        .env("HOME", home)
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .args(["hooks", "install", "--codex", "--mcp", "--trust"]);
    let out = run_bounded(cmd, b"", "guidebook hooks install --codex --mcp --trust");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    home.join("no-sidecar.sock")
}

#[test]
fn a_codex_edit_puts_the_guideline_into_its_next_request_once_per_session() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let mock = MockResponses::start(vec![
        apply_patch_call("1", &add_file("src/main/kotlin/Jobs.kt", kotlin)),
        apply_patch_call("2", &add_file("src/main/kotlin/More.kt", kotlin)),
    ]);
    codex_user(&home, &mock, true);

    let out = codex_exec(&home, &work, &sidecar.socket, "add the jobs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        kotlin,
        "the patch was really applied"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "patch, patch, message");
    let shown = |request: &Value| {
        developer_texts(request)
            .iter()
            .filter(|t| t.contains("[kotlin-no-globalscope]"))
            .count()
    };
    assert_eq!(shown(&requests[0]), 0);
    assert_eq!(
        shown(&requests[1]),
        1,
        "the next request carries the guideline"
    );
    assert!(developer_texts(&requests[1])
        .iter()
        .any(|t| t.starts_with("Adaptive Guidebook guidelines relevant to the latest changes:")));
    assert_eq!(
        shown(&requests[2]),
        1,
        "a second matching edit does not repeat it"
    );

    // A new session: shown again.
    let mock2 = MockResponses::start(vec![apply_patch_call(
        "3",
        &add_file("src/main/kotlin/Third.kt", kotlin),
    )]);
    codex_user(&home, &mock2, true);
    let out = codex_exec(&home, &work, &sidecar.socket, "one more");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(shown(&mock2.requests()[1]), 1);

    // No sidecar, autostart off: the task completes, the file is written, nothing injected.
    let mock3 = MockResponses::start(vec![apply_patch_call(
        "4",
        &add_file("src/main/kotlin/Fourth.kt", kotlin),
    )]);
    codex_user(&home, &mock3, true);
    let nowhere = dir.path().join("no-sidecar.sock");
    let out = codex_exec(&home, &work, &nowhere, "and another");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(work.join("src/main/kotlin/Fourth.kt").exists());
    assert_eq!(shown(&mock3.requests()[1]), 0);

    // Installed without trust records, in a fresh user: Codex skips our hooks silently.
    let mock4 = MockResponses::start(vec![apply_patch_call(
        "5",
        &add_file("src/main/kotlin/Fifth.kt", kotlin),
    )]);
    let untrusting = dir.path().join("untrusting");
    codex_user(&untrusting, &mock4, false);
    let out = codex_exec(&untrusting, &work, &sidecar.socket, "and the last");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(shown(&mock4.requests()[1]), 0, "untrusted hooks never run");
}

/// The breaker inside Codex: three failing runs of the real `ruff` through its `exec_command`
/// tool halt the session. Codex answers `continue: false` from `PostToolUse` by handing the
/// model the stop reason in place of the third run's output (it does not end the turn), and the
/// `apply_patch` the model asks for next is blocked by our `PreToolUse` deny: no file written.
#[test]
fn failing_ruff_runs_in_codex_halt_the_session_and_its_next_patch_is_denied() {
    if !real_tests() {
        return;
    }
    breaker_scenario(false);
}

/// The same through the `mcp_tool` wiring.
#[test]
fn failing_ruff_runs_halt_the_session_through_the_mcp_tool_wiring_too() {
    if !real_tests() {
        return;
    }
    breaker_scenario(true);
}

fn breaker_scenario(mcp: bool) {
    let Scene {
        dir,
        sidecar,
        work,
        home: _home,
    } = Scene::lint();
    let lint = format!("{} check --no-cache src", ruff_exe().display());
    let run = |id: &str| {
        serde_json::json!({"type": "function_call", "id": format!("fc_{id}"),
            "call_id": format!("call_{id}"), "name": "exec_command",
            "arguments": serde_json::json!({"cmd": lint}).to_string(), "status": "completed"})
    };
    let mock = MockResponses::start(vec![
        run("1"),
        run("2"),
        run("3"),
        apply_patch_call("4", &add_file("src/new.py", "x = 1\n")),
    ]);
    let home = dir.path().join("user");
    let agent_socket = if mcp {
        codex_mcp_user(&home, &mock, &sidecar.socket)
    } else {
        codex_user(&home, &mock, true);
        sidecar.socket.clone()
    };
    let out = codex_exec(&home, &work, &agent_socket, "lint and fix");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");

    let outputs: Vec<Value> = mock.requests().last().unwrap()["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| {
            item["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("_call_output"))
        })
        .cloned()
        .collect();
    assert_eq!(outputs.len(), 4, "three runs and the patch: {said}");
    assert!(
        outputs[0]["output"].as_str().unwrap().contains("F401"),
        "the real ruff ran and failed: {}",
        outputs[0]
    );
    let reason = outputs[2]["output"].as_str().unwrap();
    let app = work.join("src/app.py");
    assert!(
        reason.starts_with(&format!(
            "Circuit breaker: ruff F401 in {} failed 3 check runs in a row.",
            app.display()
        )),
        "the stop reason replaced the third run's output: {reason}"
    );
    assert!(
        outputs[3]["output"]
            .as_str()
            .unwrap()
            .starts_with(&format!("Command blocked by PreToolUse hook: {reason}")),
        "{}",
        outputs[3]
    );
    assert!(!work.join("src/new.py").exists(), "the patch was denied");
}

/// The agent cannot lift its own guardrails through its shell: Codex's `exec_command` running
/// `guidebook breaker reset` is blocked by our trusted `PreToolUse` hook before it runs, in
/// both wirings, and the model reads why as the call's output.
#[test]
fn the_agents_own_breaker_reset_through_its_shell_is_blocked_before_it_runs() {
    if !real_tests() {
        return;
    }
    for mcp in [false, true] {
        let Scene {
            dir,
            sidecar,
            work,
            home: _home,
        } = Scene::api();
        let marker = work.join("ran");
        let cmd = format!(
            "touch {} && guidebook breaker reset --session me",
            marker.display()
        );
        let mock = MockResponses::start(vec![serde_json::json!({"type": "function_call",
            "id": "fc_1", "call_id": "call_1", "name": "exec_command",
            "arguments": serde_json::json!({"cmd": cmd}).to_string(), "status": "completed"})]);
        let home = dir.path().join("user");
        let agent_socket = if mcp {
            codex_mcp_user(&home, &mock, &sidecar.socket)
        } else {
            codex_user(&home, &mock, true);
            sidecar.socket.clone()
        };
        let out = codex_exec(&home, &work, &agent_socket, "unblock yourself");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        assert!(!marker.exists(), "mcp {mcp}: the command ran: {said}");
        let last = mock.requests().last().unwrap().to_string();
        assert!(
            last.contains("Command blocked by PreToolUse hook: Adaptive Guidebook: this would reset the circuit breaker"),
            "mcp {mcp}: {said} {last}"
        );
    }
}

/// The `mcp_tool` wiring in the real Codex: `hooks install --codex --mcp --trust` registers
/// `guidebook mcp` (carrying the installer's sidecar settings: Codex filters an MCP server's
/// environment) and trusts its handlers with the hash Codex computes for `mcp_tool` hooks, so
/// that `codex exec` runs them without a bypass flag and the guideline reaches the next request;
/// the same scenarios as the command wiring: once per session, again in a new one, and no
/// sidecar behind the MCP server leaves the task untouched.
#[test]
fn the_mcp_tool_wiring_is_trusted_and_puts_the_guideline_into_the_next_request() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let mock = MockResponses::start(vec![
        apply_patch_call("1", &add_file("src/main/kotlin/Jobs.kt", kotlin)),
        apply_patch_call("2", &add_file("src/main/kotlin/More.kt", kotlin)),
    ]);
    let agent_socket = codex_mcp_user(&home, &mock, &sidecar.socket);
    let hooks = hooks_list(&home.join(".codex"), &work);
    assert!(
        hooks
            .iter()
            .all(|h| h["handlerType"] == "mcpTool" && h["trustStatus"] == "trusted"),
        "{hooks:?}"
    );

    // The agent's own env points nowhere: the hooks reach the sidecar through the MCP server.
    let out = codex_exec(&home, &work, &agent_socket, "add the jobs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        kotlin
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "patch, patch, message");
    let shown = |request: &Value| {
        developer_texts(request)
            .iter()
            .filter(|t| t.contains("[kotlin-no-globalscope]"))
            .count()
    };
    assert_eq!(shown(&requests[0]), 0);
    assert_eq!(
        shown(&requests[1]),
        1,
        "the next request carries the guideline"
    );
    assert_eq!(
        shown(&requests[2]),
        1,
        "a second matching edit does not repeat it"
    );

    // A new session: shown again.
    let again = MockResponses::start(vec![apply_patch_call(
        "4",
        &add_file("src/main/kotlin/Again.kt", kotlin),
    )]);
    let agent_socket = codex_mcp_user(&home, &again, &sidecar.socket);
    let out = codex_exec(&home, &work, &agent_socket, "once more");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(shown(&again.requests()[1]), 1);

    // No sidecar behind the MCP server (autostart off): the task completes, nothing is added.
    let mock2 = MockResponses::start(vec![apply_patch_call(
        "3",
        &add_file("src/main/kotlin/Last.kt", kotlin),
    )]);
    let lonely = dir.path().join("lonely");
    let dead = codex_mcp_user(&lonely, &mock2, &dir.path().join("dead.sock"));
    let out = codex_exec(&lonely, &work, &dead, "the last");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(work.join("src/main/kotlin/Last.kt").exists());
    assert_eq!(shown(&mock2.requests()[1]), 0);
}

/// A sidecar that hangs, with the shim's budget (15 s) beyond the hook's timeout (5 s): Codex
/// gives up on each hook at its timeout ("hook: PreToolUse Failed" on stderr), applies the
/// patch and adds nothing to the next request.
#[test]
fn a_hook_that_times_out_leaves_the_task_untouched() {
    if !real_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("orders");
    git_repo(&work, Some("git@github.com:acme/orders.git"));
    let mock = MockResponses::start(vec![apply_patch_call("1", &add_file("src/Jobs.kt", "x\n"))]);
    let home = dir.path().join("user");
    codex_user(&home, &mock, true);
    let hung = HungSidecar::bind(dir.path().join("hung.sock"));
    let out = codex_exec(&home, &work, &hung.path, "add");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.contains("hook: PostToolUse Failed"), "{said}");
    assert!(work.join("src/Jobs.kt").exists());
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(developer_texts(&requests[1])
        .iter()
        .all(|t| !t.contains("Adaptive Guidebook")));
}

/// Line `n` of `text` replaced by `new_line`, as a Codex patch with two lines of context.
fn replace_line_patch(rel: &str, text: &str, n: usize, new_line: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut patch = format!("*** Begin Patch\n*** Update File: {rel}\n@@\n");
    for line in &lines[n - 3..n - 1] {
        patch.push_str(&format!(" {line}\n"));
    }
    patch.push_str(&format!("-{}\n+{new_line}\n", lines[n - 1]));
    patch.push_str(&format!(" {}\n*** End Patch\n", lines[n]));
    patch
}

/// Issue 38, items 4 and 6, with the real Codex: two `apply_patch` updates of a Kotlin file
/// that already holds `Thread.sleep(` on line 3 (not committed, so the sidecar's own fallback
/// would count it). The first writes line 10 without it: the `in: changes` guideline stays out
/// of the next request; the second writes `Thread.sleep(` on line 11: the next request carries
/// it. The hook runs through a wrapper that copies the file when the hook starts: at each
/// `PostToolUse` the updated file is already on disk in its post-image.
#[test]
fn a_codex_update_shows_an_in_changes_guideline_only_for_the_lines_it_wrote() {
    if !real_tests() {
        return;
    }
    let SleepyScene {
        dir,
        sidecar,
        repo,
        jobs,
        home,
    } = SleepyScene::new();
    let first = sleepy_jobs().replace("val x10 = 10", "val ten = 10");
    let second = first.replace("val x11 = 11", "val eleven = Thread.sleep(11)");
    let mock = MockResponses::start(vec![
        apply_patch_call(
            "1",
            &replace_line_patch("src/Jobs.kt", &sleepy_jobs(), 10, "val ten = 10"),
        ),
        apply_patch_call(
            "2",
            &replace_line_patch("src/Jobs.kt", &first, 11, "val eleven = Thread.sleep(11)"),
        ),
    ]);
    codex_user(&home, &mock, false);
    // Our hooks through a wrapper that keeps each event and the file as the hook found it.
    let seen = dir.path().join("seen");
    std::fs::create_dir_all(&seen).unwrap();
    let wrapper = dir.path().join("hook.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nat={seen}/$(date +%s%N)\ncp {jobs} \"$at.kt\"\ntee \"$at.json\" | exec {shim}\n",
            seen = seen.display(),
            jobs = jobs.display(),
            shim = shim_exe().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    install_codex_hooks(
        &home,
        &["--hook-command", wrapper.to_str().unwrap(), "--trust"],
    );

    let out = codex_exec(&home, &repo, &sidecar.socket, "tidy the jobs");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert_eq!(std::fs::read_to_string(&jobs).unwrap(), second, "{said}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "patch, patch, message: {said}");
    let shown = |request: &Value| {
        developer_texts(request)
            .iter()
            .filter(|t| t.contains("[no-thread-sleep]"))
            .count()
    };
    assert_eq!(shown(&requests[1]), 0, "line 10 has no Thread.sleep(");
    assert_eq!(shown(&requests[2]), 1, "line 11 does");

    // What the file held when each PostToolUse hook started: the patch's post-image.
    let mut at_post_tool_use = Vec::new();
    let mut records: Vec<PathBuf> = std::fs::read_dir(&seen)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    records.sort();
    for record in records {
        let event: Value =
            serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        if event["hook_event_name"] == "PostToolUse" && event["tool_name"] == "apply_patch" {
            at_post_tool_use.push(std::fs::read_to_string(record.with_extension("kt")).unwrap());
        }
    }
    assert_eq!(at_post_tool_use, [first, second]);
}

/// Issue 40 with the real Codex: the model's `apply_patch` adds a password literal that a
/// `severity: block` guideline forbids. Our `PreToolUse` denies it before it is applied (the
/// file on disk unchanged), the model's next request carries the reason (the guideline, its
/// content and the line), and its corrected patch, made against the unchanged file, goes
/// through and is written. The password already on line 2 was not written by either patch.
#[test]
fn a_codex_patch_that_breaks_a_block_guideline_is_denied_and_the_corrected_one_is_written() {
    if !real_tests() {
        return;
    }
    let BlockScene {
        dir: _dir,
        sidecar,
        repo,
        db,
        home,
    } = BlockScene::new();
    let patch = |line: &str| {
        format!(
            "*** Begin Patch\n*** Update File: src/Db.kt\n@@\n val user = \"app\"\n+{line}\n val timeout = 5\n*** End Patch\n"
        )
    };
    let mock = MockResponses::start(vec![
        apply_patch_call("1", &patch(BAD_LINE)),
        apply_patch_call("2", &patch(GOOD_LINE)),
    ]);
    codex_user(&home, &mock, true);
    let out = codex_exec(&home, &repo, &sidecar.socket, "connect to the database");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        db_with(GOOD_LINE),
        "the corrected patch applied to the unchanged file: {said}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "patch, patch, message: {said}");
    let output_of = |request: &Value, call: &str| -> String {
        request["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["call_id"] == call && item["type"] == "custom_tool_call_output")
            .map(|item| item["output"].to_string())
            .unwrap_or_else(|| panic!("no output of {call} in {request}"))
    };
    let denied = output_of(&requests[1], "call_1");
    let reason = Value::from(blocked_reason("src/Db.kt")).to_string();
    assert!(
        denied.contains("Command blocked by PreToolUse hook")
            && denied.contains(reason.trim_matches('"')),
        "the next request carries the reason: {denied}"
    );
    let applied = output_of(&requests[2], "call_2");
    assert!(
        !applied.contains("blocked") && applied.contains("src/Db.kt"),
        "{applied}"
    );
}

/// Issue 39, item 6, with the real Codex: in a trusted repository, the first `apply_patch` of
/// `src/Jobs.kt` brings each applicable rule of the repository (its Cursor rule, its Copilot
/// instructions, the nested `src/AGENTS.md`, its `.guidebook/` guideline) into the next request,
/// once: the second patch adds none again. The same repository untrusted brings none.
#[test]
fn a_codex_patch_brings_a_trusted_repositorys_rules_once_and_an_untrusted_ones_never() {
    if !real_tests() {
        return;
    }
    for trusted in [true, false] {
        let RulesScene {
            dir: _dir,
            sidecar,
            repo,
            jobs,
            home,
        } = RulesScene::new(trusted);
        let first = sleepy_jobs().replace("val x10 = 10", "val ten = Thread.sleep(10)");
        let second = first.replace("val x11 = 11", "val eleven = Thread.sleep(11)");
        let mock = MockResponses::start(vec![
            apply_patch_call(
                "1",
                &replace_line_patch(
                    "src/Jobs.kt",
                    &sleepy_jobs(),
                    10,
                    "val ten = Thread.sleep(10)",
                ),
            ),
            apply_patch_call(
                "2",
                &replace_line_patch("src/Jobs.kt", &first, 11, "val eleven = Thread.sleep(11)"),
            ),
        ]);
        codex_user(&home, &mock, true);
        let out = codex_exec(&home, &repo, &sidecar.socket, "tidy the jobs");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        assert_eq!(std::fs::read_to_string(&jobs).unwrap(), second, "{said}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 3, "patch, patch, message: {said}");
        let counts = |request: &Value| rule_counts(&developer_texts(request).join("\n"));
        let expected = if trusted { 1 } else { 0 };
        assert_eq!(counts(&requests[1]), [expected; 4], "trusted: {trusted}");
        assert_eq!(
            counts(&requests[2]),
            [expected; 4],
            "the second patch adds none again (trusted: {trusted})"
        );
    }
}
