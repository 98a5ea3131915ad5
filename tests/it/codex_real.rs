//! The real Codex CLI (pinned, from the npm registry) judges our hooks and trust records.
//!
//! `codex app-server`'s `hooks/list` reports, for each hook it discovers, the hash it computes
//! and whether its trust record matches. Our `hooks install --codex` must leave our hooks
//! "untrusted" (and say so), `--trust` must make every one "trusted", and a hook whose command
//! changed must no longer count as trusted. Reads: the npm registry once per cache directory
//! (`target/agents/`); writes: temp directories.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::harness::*;

/// The Codex CLI these tests run; moving to a newer release is this one line.
pub const CODEX_VERSION: &str = "0.169.0";

/// The pinned `codex`, installed with npm into `target/agents/codex-VERSION` on first use and
/// reused after that (no network once it is there).
pub fn codex_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let dir = manifest_dir()
                .join("target/agents")
                .join(format!("codex-{CODEX_VERSION}"));
            let bin = dir.join("node_modules/.bin/codex");
            if !bin.exists() {
                let mut npm = Command::new("npm");
                npm.args([
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                ])
                .arg(&dir)
                .arg(format!("@openai/codex@{CODEX_VERSION}"));
                let out = run_bounded(npm, b"", "npm install @openai/codex");
                assert!(
                    out.status.success() && bin.exists(),
                    "installing Codex {CODEX_VERSION} with npm failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            bin
        })
        .clone()
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

fn install(home: &Path, args: &[&str]) -> String {
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
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let shim = shim_exe();
    let shim = shim.to_str().unwrap();

    // Installed as before this fix: Codex lists them, and would run none.
    let said = install(home.path(), &["--hook-command", shim]);
    assert!(said.contains("review them in /hooks"), "{said}");
    let hooks = hooks_list(&codex_home, home.path());
    let events = ["preToolUse", "postToolUse", "postCompact", "sessionStart"];
    assert_eq!(
        statuses(&hooks),
        events.map(|e| (e.to_string(), "untrusted".to_string())),
        "{hooks:?}"
    );

    // With --trust, every one of ours is trusted, with the hash Codex computes itself.
    install(home.path(), &["--hook-command", shim, "--trust"]);
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
    install(
        home.path(),
        &["--hook-command", "/somewhere/else/guidebook-hook"],
    );
    let hooks = hooks_list(&codex_home, home.path());
    assert!(
        hooks.iter().all(|h| h["trustStatus"] != "trusted"),
        "{hooks:?}"
    );
}
