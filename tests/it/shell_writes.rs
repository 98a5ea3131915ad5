//! Shell commands that write files, through the real shim and the real daemon: the shell tool's
//! `PreToolUse` (the shim asks `beginShellCommand`), the command itself run by a real shell in
//! a real git repository, then its `PostToolUse` (`endShellCommand`): the guidelines of an
//! edit, for the files the command changed, on the lines it wrote.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::*;

/// `GlobalScope.launch` in Kotlin, counted only where the change wrote it.
const GLOBALSCOPE_IN_CHANGES: &str = "id: kotlin-no-globalscope\nscope:\n  languages: [kotlin]\n\
    match:\n  in: changes\n  any:\n    - regex: {pattern: 'GlobalScope\\.launch'}\n\
    content: Do not launch in GlobalScope; use the component's own scope.\n";

struct Scene {
    _dir: tempfile::TempDir,
    sidecar: Sidecar,
    repo: std::path::PathBuf,
}

/// A sidecar serving [`GLOBALSCOPE_IN_CHANGES`] and an `acme/orders` repository with one
/// committed Kotlin file and, uncommitted, `GlobalScope.launch` on its line 3: a search
/// without written lines (the diff against the last commit) would count it.
fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write_guideline(&root, "kotlin-no-globalscope", GLOBALSCOPE_IN_CHANGES);
    let sidecar = Sidecar::start(&root);
    let repo = dir.path().join("orders");
    git_repo(&repo, Some("git@github.com:acme/orders.git"));
    write_file(
        &repo,
        "src/Jobs.kt",
        "package acme\nfun start() = 1\nfun later() = 2\n",
    );
    write_file(&repo, ".gitignore", "build/\n");
    git_commit_all(&repo, "jobs");
    write_file(
        &repo,
        "src/Jobs.kt",
        "package acme\nfun start() = 1\nfun later() = GlobalScope.launch { }\n",
    );
    Scene {
        _dir: dir,
        sidecar,
        repo,
    }
}

/// A Claude Code `Bash` event for `command` in `cwd`.
fn bash(event: &str, session: &str, cwd: &Path, command: &str) -> Value {
    json!({"session_id": session, "hook_event_name": event, "cwd": cwd.display().to_string(),
        "tool_name": "Bash", "tool_input": {"command": command, "description": "edit"},
        "tool_use_id": "toolu_1"})
}

/// A Codex shell event (`exec_command`, reported as `Bash` with its `turn_id`).
fn codex_shell(event: &str, session: &str, cwd: &Path, command: &str) -> Value {
    json!({"session_id": session, "turn_id": "t1", "hook_event_name": event,
        "cwd": cwd.display().to_string(), "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": "call_1"})
}

/// What the agent is shown after running `command` in `scene.repo`: the shim's `PreToolUse`
/// (which must print nothing), the command through `bash -c`, then its `PostToolUse`.
fn run(
    scene: &Scene,
    host: fn(&str, &str, &Path, &str) -> Value,
    session: &str,
    command: &str,
) -> String {
    let pre = scene
        .sidecar
        .hook(&host("PreToolUse", session, &scene.repo, command));
    assert_eq!(pre.stdout, "", "a begin shows nothing: {pre:?}");
    let mut shell = Command::new("bash");
    shell.arg("-c").arg(command).current_dir(&scene.repo);
    let out = run_bounded(shell, b"", command);
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let post = scene
        .sidecar
        .hook(&host("PostToolUse", session, &scene.repo, command));
    post.stdout
}

fn shown(stdout: &str) -> bool {
    stdout.contains("[kotlin-no-globalscope]")
}

#[test]
fn sed_in_place_gets_the_guideline_only_when_it_writes_the_match() {
    let scene = scene();
    // Line 2 rewritten: the match on line 3 was there before (uncommitted), not written now.
    let out = run(
        &scene,
        bash,
        "s1",
        "sed -i 's/start() = 1/start() = 10/' src/Jobs.kt",
    );
    assert_eq!(out, "", "the match was not on a line the command wrote");
    assert_eq!(
        std::fs::read_to_string(scene.repo.join("src/Jobs.kt")).unwrap(),
        "package acme\nfun start() = 10\nfun later() = GlobalScope.launch { }\n"
    );
    // Now sed writes the match itself.
    let out = run(
        &scene,
        bash,
        "s1",
        "sed -i -e 's/fun start() = 10/fun start() = GlobalScope.launch { }/' src/Jobs.kt",
    );
    assert!(shown(&out), "{out}");
    assert!(out.contains("PostToolUse"), "{out}");
    // The same through Codex's shell, in a session of its own.
    let out = run(
        &scene,
        codex_shell,
        "codex-1",
        "sed -i.bak 's/package acme/package acme \\/\\/ GlobalScope.launch/' src/Jobs.kt",
    );
    assert!(shown(&out), "{out}");
}

#[test]
fn a_heredoc_a_redirection_and_an_append_get_the_guideline() {
    let scene = scene();
    let heredoc = "mkdir -p src/gen && cat > src/gen/Gen.kt <<'EOF'\npackage acme\nfun go() = GlobalScope.launch { }\nEOF";
    assert!(shown(&run(&scene, bash, "h1", heredoc)));
    let redirect = "printf 'package acme\\nfun go() = GlobalScope.launch { }\\n' > src/B.kt";
    assert!(shown(&run(&scene, bash, "h2", redirect)));
    // Appended after the uncommitted match: the appended line is written, the match is not.
    let append = "echo 'fun more() = 3' >> src/Jobs.kt";
    assert_eq!(run(&scene, bash, "h3", append), "");
    let append = "echo 'fun more() = GlobalScope.launch { }' | tee -a src/Jobs.kt";
    assert!(shown(&run(&scene, bash, "h4", append)));
}

/// A command that writes a file it does not name (a script, a generator): the repository's
/// watcher finds it; its written lines come from the last commit (an untracked file: all).
#[test]
fn a_file_a_command_writes_without_naming_it_is_found_by_the_watcher() {
    let scene = scene();
    write_file(
        &scene.repo,
        "tools/gen.sh",
        "mkdir -p src/generated\nprintf 'fun gen() = GlobalScope.launch { }\\n' > src/generated/Made.kt\n\
         printf 'fun ignored() = GlobalScope.launch { }\\n' > build/Out.kt\n",
    );
    std::fs::create_dir_all(scene.repo.join("build")).unwrap();
    let out = run(&scene, bash, "w1", "sh tools/gen.sh");
    assert!(shown(&out), "{out}");
    // Only a git-ignored file written (unnamed): nothing.
    write_file(
        &scene.repo,
        "tools/ignored.sh",
        "printf 'fun x() = GlobalScope.launch { }\\n' > build/Other.kt\n",
    );
    let out = run(&scene, bash, "w2", "sh tools/ignored.sh");
    assert_eq!(out, "");
}

/// Readers ask nothing at all, a command that changes nothing shows nothing, and the begin
/// never waits for a sidecar: with none, the command's hooks are silent and fast.
#[test]
fn readers_and_commands_that_change_nothing_show_nothing() {
    let scene = scene();
    assert_eq!(
        run(&scene, bash, "r1", "cat src/Jobs.kt | grep -n GlobalScope"),
        ""
    );
    assert_eq!(
        run(&scene, bash, "r1", "sed -i 's/nothing/here/' src/Jobs.kt"),
        ""
    );
    assert_eq!(run(&scene, bash, "r1", "touch src/Jobs.kt"), "");
    let dir = tempfile::tempdir().unwrap();
    let nobody = dir.path().join("none.sock");
    let event = bash("PreToolUse", "r2", &scene.repo, "sed -i s/a/b/ src/Jobs.kt");
    let started = std::time::Instant::now();
    let pre = run_shim(
        &event.to_string(),
        &[("ADAPTIVE_GUIDEBOOK_SOCKET", nobody.as_os_str())],
    );
    assert_eq!(pre.stdout, "");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the begin did not wait"
    );
}

/// The shim's questions, as the daemon receives them: the begin names the target and keeps
/// its content, the end finds it changed (an end without a begin searches the named target).
#[test]
fn the_daemon_answers_begin_and_end_directly() {
    let scene = scene();
    let jobs = scene.repo.join("src/Jobs.kt").display().to_string();
    let dir = scene.repo.display().to_string();
    let begun = scene.sidecar.result(
        "beginShellCommand",
        json!({"sessionId": "d", "callId": "c", "dir": dir, "targets": [jobs], "mentioned": []}),
    );
    assert_eq!(begun, json!({"watching": true, "kept": 1}));
    std::fs::write(
        scene.repo.join("src/Jobs.kt"),
        "package acme\nfun start() = GlobalScope.launch { }\nfun later() = GlobalScope.launch { }\n",
    )
    .unwrap();
    let found = scene.sidecar.result(
        "endShellCommand",
        json!({"sessionId": "d", "callId": "c", "dir": dir, "targets": [jobs]}),
    );
    assert_eq!(ids(&found), ["kotlin-no-globalscope"]);
    // No begin: the named target counts, its lines from the diff against the last commit.
    let found = scene.sidecar.result(
        "endShellCommand",
        json!({"sessionId": "d2", "callId": "never", "targets": [jobs]}),
    );
    assert_eq!(ids(&found), ["kotlin-no-globalscope"]);
    let (code, message) = scene.sidecar.error(
        "beginShellCommand",
        json!({"sessionId": "d", "callId": "c", "targets": ["relative.kt"]}),
    );
    assert_eq!(code, -32602);
    assert!(message.starts_with("targets[0]:"), "{message}");
}
