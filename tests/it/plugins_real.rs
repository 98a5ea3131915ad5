//! Our Claude Code plugin and Gemini CLI extension, installed with the real CLIs' own commands.
//!
//! From the checkout (`claude plugin marketplace add <checkout>`, `gemini extensions install
//! <checkout>/integrations/gemini-cli`, our binaries on `PATH` as `cargo install` puts them) and
//! from the release archive `scripts/package` writes (its plugin and extension carry the
//! binaries, `PATH` has none of ours): validated by the CLI, installed, the edit scenario
//! passes (the guideline in the next request, once per session), uninstalled, and after that
//! nothing of ours runs or stays in the agent's settings. Reads: the npm registry once per
//! cache directory; writes: temp directories.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use crate::agents::{path_with_ours, printed, Scene, CLAUDE_CODE, CLAUDE_MODEL, GEMINI_CLI};
use crate::harness::*;

/// The plugin's and the extension's name, and the marketplace's.
const NAME: &str = "adaptive-guidebook";

/// The Kotlin file every scenario writes: it launches in `GlobalScope`.
const KOTLIN: &str = "package acme\nfun start() = GlobalScope.launch { }\n";

/// `PATH` without any directory that holds a `guidebook-hook` or a `guidebook`: what the
/// release archive's plugin must run with.
fn path_without_ours() -> OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&rest)
        .filter(|dir| !dir.join("guidebook-hook").exists() && !dir.join("guidebook").exists());
    std::env::join_paths(kept).unwrap()
}

/// `scripts/package --bin-dir <our debug binaries>`, unpacked in `dir`: the archive's top
/// directory.
fn release_archive(dir: &Path) -> PathBuf {
    // Run from `dir`, `--out` relative to it.
    let mut package = Command::new("bash");
    package
        .current_dir(dir)
        .arg(manifest_dir().join("scripts/package"))
        .arg("--bin-dir")
        .arg(shim_exe().parent().unwrap())
        .args(["--out", "dist"]);
    let out = run_bounded(package, b"", "scripts/package");
    assert!(out.status.success(), "{}", printed(&out));
    let archive = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        archive.starts_with(&dir.join("dist/").display().to_string())
            && archive.ends_with(".tar.gz"),
        "{archive}"
    );
    let mut untar = Command::new("tar");
    untar.arg("-xzf").arg(&archive).arg("-C").arg(dir);
    let out = run_bounded(untar, b"", "tar -xzf");
    assert!(out.status.success(), "{}", printed(&out));
    let top = dir.join(format!("adaptive-guidebook-{}", env!("CARGO_PKG_VERSION")));
    for exe in ["guidebook", "guidebook-hook"] {
        assert!(
            top.join("integrations/claude-code/bin").join(exe).is_file()
                && top.join("integrations/gemini-cli/bin").join(exe).is_file(),
            "the archive's plugin and extension carry {exe}"
        );
    }
    top
}

/// Every file under `dir` whose text names us (relative to `dir`, with the words around), skipping
/// `skip`'s subtrees.
fn files_naming_us(dir: &Path, skip: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if skip
                .iter()
                .any(|s| rel == *s || rel.starts_with(&format!("{s}/")))
            {
                continue;
            }
            // The backups `guidebook hooks install|uninstall` made in `doctor_sees_the_plugin`.
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.contains(".guidebook-") && name.ends_with(".bak") {
                continue;
            }
            if path.is_dir() && !path.is_symlink() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                if let Some(at) = text.find(NAME) {
                    let from = (0..=at.saturating_sub(80))
                        .rev()
                        .find(|i| text.is_char_boundary(*i))
                        .unwrap_or(0);
                    let to = ((at + 80).min(text.len())..=text.len())
                        .find(|i| text.is_char_boundary(*i))
                        .unwrap_or(text.len());
                    found.push(format!("{rel}: …{}…", &text[from..to]));
                }
            }
        }
    }
    found.sort();
    found
}

/// The line `guidebook doctor` prints for `check` (`claude hooks`, `gemini hooks`).
fn doctor_line(scene: &Scene, path: &OsString, check: &str) -> String {
    let mut cmd = Command::new(guidebook_exe());
    cmd.arg("doctor")
        .env_clear()
        .env("PATH", path)
        .env("HOME", &scene.home)
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket);
    let out = run_bounded(cmd, b"", "guidebook doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.contains(&format!(" {check}: ")))
        .unwrap_or_else(|| panic!("no {check} line: {text}"))
        .to_owned()
}

/// What `doctor` says of an installed, enabled plugin: ok, its version, and the shim its hooks
/// run (the plugin's own copy when `bundled`, else ours on `PATH`); with our hooks also in the
/// agent's settings, that they would run twice.
fn doctor_sees_the_plugin(scene: &Scene, path: &OsString, host: &str, bundled: bool) {
    let check = format!("{host} hooks");
    let line = doctor_line(scene, path, &check);
    assert!(
        line.starts_with("ok")
            && line.contains(&format!(
                "the {NAME} plugin {} in ",
                env!("CARGO_PKG_VERSION")
            )),
        "{line}"
    );
    let running = line
        .split_once(", running ")
        .map(|(_, shim)| shim.trim_end())
        .unwrap_or_else(|| panic!("{line}"));
    // Where the agent keeps its copy of the plugin: the bundled shim runs from there.
    let installed = match host {
        "claude" => scene
            .home
            .join(".claude/plugins/cache")
            .join(NAME)
            .join(NAME)
            .join(env!("CARGO_PKG_VERSION")),
        _ => scene.home.join(".gemini/extensions").join(NAME),
    };
    assert!(
        line.contains(&format!(" in {}, ", installed.display())),
        "{line}"
    );
    let expected = if bundled {
        installed.join("bin/guidebook-hook").display().to_string()
    } else {
        shim_exe().display().to_string()
    };
    assert_eq!(running, expected, "{line}");
    let flag = format!("--{host}");
    let mut install = Command::new(guidebook_exe());
    install
        .env_clear()
        .env("HOME", &scene.home)
        .args(["hooks", "install", &flag]);
    assert!(run_bounded(install, b"", "hooks install").status.success());
    let line = doctor_line(scene, path, &check);
    assert!(
        line.starts_with("warn") && line.contains("ours run twice"),
        "{line}"
    );
    let mut uninstall = Command::new(guidebook_exe());
    uninstall
        .env_clear()
        .env("HOME", &scene.home)
        .args(["hooks", "uninstall", &flag]);
    assert!(run_bounded(uninstall, b"", "hooks uninstall")
        .status
        .success());
}

/// `AGENT ARGS` (its executable `exe`) for the scene's user, outside any model run (plugin
/// management); `stdin` answers its questions. Must succeed; what it printed.
fn agent_cli(exe: &Path, scene: &Scene, path: &OsString, args: &[&str], stdin: &[u8]) -> String {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .current_dir(&scene.home)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &scene.home)
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1");
    let what = format!("{} {}", exe.display(), args.join(" "));
    let out = run_bounded(cmd, stdin, &what);
    assert!(out.status.success(), "{what}: {}", printed(&out));
    printed(&out)
}

fn claude_cli(scene: &Scene, path: &OsString, args: &[&str]) -> String {
    agent_cli(&CLAUDE_CODE.exe(), scene, path, args, b"")
}

fn gemini_cli(scene: &Scene, path: &OsString, args: &[&str], stdin: &[u8]) -> String {
    agent_cli(&GEMINI_CLI.exe(), scene, path, args, stdin)
}

/// How many times the guideline's block appears in one request's `key` (Claude Code's
/// `messages`, Gemini CLI's `contents`).
fn shown(request: &serde_json::Value, key: &str) -> usize {
    request[key]
        .to_string()
        .matches("[kotlin-no-globalscope]")
        .count()
}

/// One `claude -p` run that writes `rel` and then edits it; the model's turns.
fn claude_writes(scene: &Scene, path: &OsString, rel: &str) -> Vec<serde_json::Value> {
    let file = scene.work.join(rel);
    let mock = MockMessages::start(vec![
        (
            "Write",
            json!({"file_path": file.display().to_string(), "content": KOTLIN}),
        ),
        (
            "Edit",
            json!({"file_path": file.display().to_string(), "old_string": "start()", "new_string": "begin()"}),
        ),
    ]);
    let mut cmd = claude_command(&scene.home, &scene.work, &mock, &scene.sidecar.socket);
    cmd.env("PATH", path).args([
        "-p",
        "add the jobs",
        "--permission-mode",
        "acceptEdits",
        "--model",
        CLAUDE_MODEL,
    ]);
    let out = run_bounded(cmd, b"", "claude -p");
    assert!(out.status.success(), "{}", printed(&out));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        KOTLIN.replace("start()", "begin()"),
        "the Write and the Edit really happened"
    );
    mock.turns()
}

/// The Claude Code round trip from a marketplace at `source` (the checkout, or the unpacked
/// archive) with `path` as the user's `PATH`.
fn claude_plugin_round_trip(source: &Path, path: OsString, bundled: bool) {
    let scene = Scene::orders();
    let home = scene.home.clone();
    let source = source.to_str().unwrap();
    let validated = claude_cli(&scene, &path, &["plugin", "validate", source]);
    assert!(validated.contains("Validation passed"), "{validated}");
    let plugin = format!("{source}/integrations/claude-code");
    let validated = claude_cli(&scene, &path, &["plugin", "validate", &plugin]);
    assert!(validated.contains("Validation passed"), "{validated}");

    // Two steps from the checkout (add the marketplace, install from it), one from the archive.
    let id = format!("{NAME}@{NAME}");
    if bundled {
        claude_cli(
            &scene,
            &path,
            &["plugin", "install", NAME, "--marketplace", source],
        );
    } else {
        claude_cli(&scene, &path, &["plugin", "marketplace", "add", source]);
        claude_cli(&scene, &path, &["plugin", "install", &id]);
    }
    doctor_sees_the_plugin(&scene, &path, "claude", bundled);
    let servers = claude_cli(&scene, &path, &["mcp", "list"]);
    assert!(
        servers.contains("guidebook") && servers.contains("Connected"),
        "the plugin's MCP server starts: {servers}"
    );

    let turns = claude_writes(&scene, &path, "src/main/kotlin/Jobs.kt");
    assert_eq!(turns.len(), 3, "write, edit, done");
    assert_eq!(shown(&turns[0], "messages"), 0);
    assert_eq!(
        shown(&turns[1], "messages"),
        1,
        "the request after the Write carries the guideline"
    );
    assert!(turns[1]["messages"]
        .to_string()
        .contains("PostToolUse:Write hook additional context"));
    assert_eq!(
        shown(&turns[2], "messages"),
        1,
        "the Edit does not repeat it"
    );

    // The agent cannot take the plugin out itself: our PreToolUse denies its Bash call.
    let uninstall = format!("claude plugin uninstall {id}");
    let mock = MockMessages::start(vec![("Bash", json!({"command": uninstall}))]);
    let mut cmd = claude_command(&scene.home, &scene.work, &mock, &scene.sidecar.socket);
    cmd.env("PATH", &path).args([
        "-p",
        "remove the guidebook plugin",
        "--allowedTools",
        "Bash",
        "--model",
        CLAUDE_MODEL,
    ]);
    let out = run_bounded(cmd, b"", "claude -p");
    assert!(out.status.success(), "{}", printed(&out));
    let after = mock.turns()[1]["messages"].to_string();
    assert!(
        after.contains("take the Adaptive Guidebook plugin out of the agent"),
        "{after}"
    );
    let listed = claude_cli(&scene, &path, &["plugin", "list"]);
    assert!(listed.contains(&id), "still installed: {listed}");

    claude_cli(&scene, &path, &["plugin", "uninstall", &id]);
    claude_cli(&scene, &path, &["plugin", "marketplace", "remove", NAME]);
    // Claude Code keeps its cached copy of an uninstalled plugin, marked `.orphaned_at`, and
    // deletes it itself 14 days later.
    let cache = home.join(".claude/plugins/cache").join(NAME).join(NAME);
    for version in std::fs::read_dir(&cache).into_iter().flatten().flatten() {
        assert!(
            version.path().join(".orphaned_at").is_file(),
            "{} is marked orphaned",
            version.path().display()
        );
    }
    // Besides: its session transcripts and telemetry, and in `~/.claude.json` the plugin's id
    // under `declinedPlugins` (so it is not offered again).
    let left = files_naming_us(
        &home,
        &[
            ".claude/plugins/cache",
            ".claude/telemetry",
            ".claude/projects",
            ".claude.json",
        ],
    );
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(state["declinedPlugins"], json!([format!("{NAME}@{NAME}")]));
    state.as_object_mut().unwrap().remove("declinedPlugins");
    assert!(!state.to_string().contains(NAME), "{state}");
    assert!(left.is_empty(), "uninstalled, yet naming us: {left:?}");
    let line = doctor_line(&scene, &path, "claude hooks");
    assert!(
        line.starts_with("warn") && line.contains("none in"),
        "{line}"
    );
    let turns = claude_writes(&scene, &path, "src/main/kotlin/After.kt");
    assert_eq!(
        shown(&turns[1], "messages"),
        0,
        "once uninstalled, no hook of ours runs"
    );
}

#[test]
fn the_claude_code_plugin_from_the_checkout_installs_serves_an_edit_and_uninstalls() {
    if !real_tests() {
        return;
    }
    claude_plugin_round_trip(manifest_dir(), path_with_ours(), false);
}

#[test]
fn the_claude_code_plugin_from_the_release_archive_brings_its_own_binaries() {
    if !real_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let top = release_archive(dir.path());
    claude_plugin_round_trip(&top, path_without_ours(), true);
}

/// One `gemini -p` run that writes `first` and then `second`; the model's turns.
fn gemini_writes(
    scene: &Scene,
    path: &OsString,
    first: &str,
    second: &str,
) -> (Output, Vec<serde_json::Value>) {
    let write = |rel: &str| {
        (
            "write_file",
            json!({"file_path": scene.work.join(rel).display().to_string(), "content": KOTLIN}),
        )
    };
    let mock = MockGemini::start(vec![write(first), write(second)]);
    let mut cmd = Command::new(GEMINI_CLI.exe());
    cmd.args(["-m", "gemini-2.5-pro", "-p", "add the jobs", "--yolo"])
        .current_dir(&scene.work)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &scene.home)
        .env("GEMINI_API_KEY", "not-a-real-key")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", mock.port()),
        )
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", &scene.sidecar.socket)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env(
            "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
            PATIENT_HOOK_TIMEOUT_MS,
        );
    let out = run_bounded(cmd, b"", "gemini -p");
    assert!(out.status.success(), "{}", printed(&out));
    for rel in [first, second] {
        assert_eq!(
            std::fs::read_to_string(scene.work.join(rel)).unwrap(),
            KOTLIN
        );
    }
    (out, mock.turns())
}

/// The Gemini CLI round trip with the extension at `extension`, `path` as the user's `PATH`.
fn gemini_extension_round_trip(extension: &Path, path: OsString, bundled: bool) {
    let scene = Scene::orders();
    let home = scene.home.clone();
    gemini_api_user(&home);
    let extension = extension.to_str().unwrap();
    gemini_cli(&scene, &path, &["extensions", "validate", extension], b"");
    // Gemini CLI asks whether to trust the folder it installs from; the user says yes.
    let installed = gemini_cli(
        &scene,
        &path,
        &["extensions", "install", extension, "--consent"],
        b"y\n",
    );
    assert!(installed.contains("installed successfully"), "{installed}");
    doctor_sees_the_plugin(&scene, &path, "gemini", bundled);
    let servers = gemini_cli(&scene, &path, &["mcp", "list"], b"");
    assert!(
        servers.contains("guidebook (from adaptive-guidebook)") && servers.contains("Connected"),
        "the extension's MCP server starts: {servers}"
    );

    let (out, turns) = gemini_writes(
        &scene,
        &path,
        "src/main/kotlin/Jobs.kt",
        "src/main/kotlin/More.kt",
    );
    assert_eq!(turns.len(), 3, "write, write, done: {}", printed(&out));
    assert_eq!(shown(&turns[0], "contents"), 0);
    assert_eq!(
        shown(&turns[1], "contents"),
        1,
        "the request after the write carries the guideline"
    );
    assert_eq!(
        shown(&turns[2], "contents"),
        1,
        "the second write does not repeat it"
    );

    let removed = gemini_cli(&scene, &path, &["extensions", "uninstall", NAME], b"");
    assert!(removed.contains("successfully uninstalled"), "{removed}");
    assert!(!home.join(".gemini/extensions").join(NAME).exists());
    // Gemini CLI keeps its own records: the integrity record of every extension it installed
    // (`extension_integrity.json`) and the folder the user trusted to install from
    // (`trustedFolders.json`); nothing else may name us.
    let left = files_naming_us(
        &home,
        &[
            ".gemini/extension_integrity.json",
            ".gemini/trustedFolders.json",
        ],
    );
    assert!(left.is_empty(), "uninstalled, yet naming us: {left:?}");
    let line = doctor_line(&scene, &path, "gemini hooks");
    assert!(
        line.starts_with("warn") && line.contains("none in"),
        "{line}"
    );
    let (_, turns) = gemini_writes(
        &scene,
        &path,
        "src/main/kotlin/After.kt",
        "src/main/kotlin/AfterToo.kt",
    );
    assert_eq!(
        shown(&turns[1], "contents"),
        0,
        "once uninstalled, no hook of ours runs"
    );
}

#[test]
fn the_gemini_cli_extension_from_the_checkout_installs_serves_an_edit_and_uninstalls() {
    if !real_tests() {
        return;
    }
    gemini_extension_round_trip(
        &manifest_dir().join("integrations/gemini-cli"),
        path_with_ours(),
        false,
    );
}

#[test]
fn the_gemini_cli_extension_from_the_release_archive_brings_its_own_binaries() {
    if !real_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let top = release_archive(dir.path());
    gemini_extension_round_trip(
        &top.join("integrations/gemini-cli"),
        path_without_ours(),
        true,
    );
}
