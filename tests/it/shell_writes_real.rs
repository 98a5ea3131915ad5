//! The real agents editing a Kotlin file through their shell tool, with our hooks, against mock
//! model APIs: Claude Code's `Bash`, Codex's `exec_command` and Gemini CLI's
//! `run_shell_command` running `sed -i` get the
//! guideline into their next model request, as an edit tool's change would; a `sed -i` that
//! only rewrites another line of the file (whose match was there before) does not. Reads: the
//! npm registry once per cache directory (`target/agents/`); writes: temp directories.

use serde_json::{json, Value};

use crate::agents::{install_shim_hooks, printed, CLAUDE_MODEL};
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

/// The texts of the `developer` messages in one request Codex sent, as one.
fn developer_text(request: &Value) -> String {
    developer_texts(request).join("\n")
}

#[test]
fn claude_code_running_sed_in_place_through_bash_gets_the_guideline_in_its_next_request() {
    if !real_tests() {
        return;
    }
    let scene = scene();
    install_shim_hooks(&scene.home, "--claude");
    let bash = |command: &str| ("Bash", json!({"command": command, "description": "edit"}));
    let mock = MockMessages::start(vec![bash(UNRELATED_SED), bash(WRITING_SED)]);
    let mut cmd = claude_command(&scene.home, &scene.work, &mock, &scene.sidecar.socket);
    cmd.args(["-p", "launch the jobs", "--model", CLAUDE_MODEL])
        .args(["--allowedTools", "Bash"]);
    let out = run_bounded(cmd, b"", "claude -p");
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let turns = mock.turns();
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

#[test]
fn codex_running_sed_in_place_through_its_shell_gets_the_guideline_in_its_next_request() {
    if !real_tests() {
        return;
    }
    let scene = scene();
    let exec = |id: &str, cmd: &str| {
        json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
            "name": "exec_command", "arguments": json!({"cmd": cmd}).to_string(),
            "status": "completed"})
    };
    let mock = MockResponses::start(vec![exec("1", UNRELATED_SED), exec("2", WRITING_SED)]);
    codex_user(&scene.home, &mock, true);
    let out = codex_exec(
        &scene.home,
        &scene.work,
        &scene.sidecar.socket,
        "launch the jobs",
    );
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "sed, sed, message: {said}");
    assert_eq!(
        shown(&developer_text(&requests[1])),
        0,
        "the first sed wrote no launch"
    );
    let next = developer_text(&requests[2]);
    assert_eq!(
        shown(&next),
        1,
        "the request after the second sed: {next} {said}"
    );
    assert!(next.contains("Adaptive Guidebook guidelines relevant to the latest changes:"));
}

#[test]
fn gemini_cli_running_sed_in_place_through_its_shell_gets_the_guideline_in_its_next_request() {
    if !real_tests() {
        return;
    }
    let scene = scene();
    gemini_api_user(&scene.home);
    install_shim_hooks(&scene.home, "--gemini");
    let shell = |command: &str| ("run_shell_command", json!({"command": command}));
    let mock = MockGemini::start(vec![shell(UNRELATED_SED), shell(WRITING_SED)]);
    let out = gemini(
        &scene.home,
        &scene.work,
        &mock,
        &scene.sidecar.socket,
        "launch the jobs",
    );
    let said = printed(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(scene.work.join("src/main/kotlin/Jobs.kt")).unwrap(),
        AFTER,
        "both seds really ran: {said}"
    );
    let turns = mock.turns();
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
