//! Per-hook latency of the two wirings, side by side in one run, on one warm sidecar: a command
//! hook (spawn `guidebook-hook`, write the event to its stdin, wait for its output and exit) and
//! an `mcp_tool` hook (`tools/call hook` on an initialized `guidebook mcp` session: one line out,
//! one line back, no process started). The same Codex `apply_patch` event for both, each call in
//! a fresh session so that every one searches, records and renders guidelines; the two series
//! are interleaved so that machine noise hits both alike, and each pair's outputs must be equal.
//! Workload: 200 guidelines of 1–3 regexes, one Kotlin file of ~8 KB per edit. Prints medians,
//! p99s and the ratio; writes them to target/bench-results/mcp_latency.json.
//!
//! `cargo bench --bench mcp_latency` (MCP_BENCH_RUNS=N for more or fewer pairs; default 300).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn main() {
    let runs: usize = std::env::var("MCP_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let guidebook = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    let shim = guidebook.parent().unwrap().join("guidebook-hook");
    let profile_flag: &[&str] = if guidebook.parent().unwrap().ends_with("release") {
        &["--release"]
    } else {
        &[]
    };
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "-p", "guidebook-hook"])
        .args(profile_flag)
        .status()
        .unwrap();
    assert!(
        built.success() && shim.exists(),
        "building guidebook-hook failed"
    );

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("guidebook");
    let repo = dir.path().join("repo");
    common::write_guidebook(&root, 200, 7);
    // One guideline every edited file matches, so that each fresh session is shown something.
    let services = root.join("guidelines/services");
    std::fs::create_dir_all(&services).unwrap();
    std::fs::write(
        services.join("guideline.yaml"),
        "id: services\nscope:\n  languages: [kotlin]\nmatch:\n  any:\n    - regex:\n        \
         pattern: '^@Service'\ncontent: |\n  Keep services thin: no I/O in constructors.\n",
    )
    .unwrap();
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let file = common::write_kotlin_files(&repo.join("src"), 1, 8_000, 200, 11).remove(0);
    let env = [
        ("ADAPTIVE_GUIDEBOOK_HOME", home.as_os_str()),
        ("ADAPTIVE_GUIDEBOOK_ROOT", root.as_os_str()),
    ];

    // Killed when dropped, also when an assertion below fails.
    let daemon = common::BenchSidecar::start(&guidebook, &home, &root);
    let socket = daemon.socket.clone();

    let mut mcp = Reaped(
        Command::new(&guidebook)
            .arg("mcp")
            .envs(env)
            .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut to_mcp = mcp.0.stdin.take().unwrap();
    let mut from_mcp = BufReader::new(mcp.0.stdout.take().unwrap());
    let mut request = |message: Value| -> Value {
        send(&mut to_mcp, &message);
        if message.get("id").is_none() {
            return Value::Null;
        }
        loop {
            let mut line = String::new();
            assert!(
                from_mcp.read_line(&mut line).unwrap() > 0,
                "guidebook mcp exited"
            );
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer.get("id").is_some() {
                return answer;
            }
        }
    };
    let init = request(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    request(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let event = |session: &str| {
        json!({
            "session_id": session, "turn_id": "t",
            "transcript_path": "/tmp/rollout.jsonl",
            "cwd": repo.display().to_string(), "hook_event_name": "PostToolUse",
            "model": "gpt-5.1-codex", "permission_mode": "default", "tool_name": "apply_patch",
            "tool_input": {"command": format!(
                "*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n", file.display())},
            "tool_response": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM src/File0.kt\n",
            "tool_use_id": "call_1"
        })
    };

    let mut t_shim = Vec::with_capacity(runs);
    let mut t_mcp = Vec::with_capacity(runs);
    let mut shown = 0;
    // A few unmeasured rounds first: page cache, the sidecar's DFA caches, the pool.
    for i in 0..runs + 10 {
        let shim_event = event(&format!("shim-{i}")).to_string();
        let started = Instant::now();
        let out = run_shim(&shim, &socket, &shim_event);
        let shim_time = started.elapsed();

        let id = i as u64 + 1;
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "hook", "arguments": event(&format!("mcp-{i}"))}});
        let started = Instant::now();
        let answer = request(call);
        let mcp_time = started.elapsed();
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {answer}"));
        assert_eq!(text, out, "both wirings print the same for the same edit");
        assert!(!text.is_empty(), "every fresh session is shown guidelines");
        shown = text.matches("\\n\\n[").count();
        if i >= 10 {
            t_shim.push(ms(shim_time));
            t_mcp.push(ms(mcp_time));
        }
    }
    drop(to_mcp);
    drop(mcp);
    drop(daemon);

    let row = |name: &str, s: &mut Vec<f64>| {
        let med = common::percentile(s, 0.5);
        let p99 = common::percentile(s, 0.99);
        println!("{name:<52} {:>5}  {med:>9.3}  {p99:>9.3}", s.len());
        (med, p99)
    };
    println!(
        "workload: 201 guidelines (1-3 regexes each), one Kotlin file of ~8 KB per edit, a fresh \
         session per hook ({shown} guidelines shown each)"
    );
    println!(
        "{:<52} {:>5}  {:>9}  {:>9}",
        "series (ms)", "n", "median", "p99"
    );
    let shim_m = row("command hook: spawn guidebook-hook -> output", &mut t_shim);
    let mcp_m = row(
        "mcp_tool hook: tools/call hook on guidebook mcp",
        &mut t_mcp,
    );
    println!(
        "ratio (medians): command/mcp {:.1}x; saved per hook {:.3} ms",
        shim_m.0 / mcp_m.0,
        shim_m.0 - mcp_m.0
    );
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    let _ = std::fs::create_dir_all(&out);
    let json = json!({
        "workload": {"guidelines": 201, "fileBytes": 8000, "shownPerHook": shown, "runs": runs},
        "commandHook": {"medianMs": shim_m.0, "p99Ms": shim_m.1},
        "mcpToolHook": {"medianMs": mcp_m.0, "p99Ms": mcp_m.1},
    });
    let _ = std::fs::write(
        out.join("mcp_latency.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    );
}

/// Runs the shim once on `event` and returns its stdout, timed by the caller from spawn to exit.
fn run_shim(shim: &Path, socket: &Path, event: &str) -> String {
    let mut child = Command::new(shim)
        .arg("--socket")
        .arg(socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// A child process killed and reaped when dropped.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn send(to: &mut std::process::ChildStdin, message: &Value) {
    writeln!(to, "{message}").unwrap();
    to.flush().unwrap();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
