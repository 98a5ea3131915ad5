//! The real OpenCode (pinned, from npm) with our plugin, against a mock chat API.
//!
//! `opencode run`, its model a custom OpenAI-compatible provider on a local mock, in a scratch
//! home whose `~/.config/opencode/plugin/adaptive-guidebook.js` `guidebook hooks install
//! --opencode` wrote: a `write` of a Kotlin file in a repository in scope (or a `sed -i`
//! through its `bash`) puts the guideline into the next request (appended to the tool's
//! output), once per session; three failing `ruff` runs halt the session and its next edit is
//! denied; the agent's own flag change is blocked; a `block` guideline's hit is denied before it
//! is written; without a sidecar the task completes quietly. Reads: the npm registry once per
//! cache directory; writes: temp directories.

use serde_json::{json, Value};

use crate::agents::{install_shim_hooks, printed, ruff_exe, HungSidecar, Scene};
use crate::harness::*;

/// How often the request carries the guideline.
fn shown(request: &Value) -> usize {
    request["messages"]
        .to_string()
        .matches("[kotlin-no-globalscope]")
        .count()
}

fn succeeded(out: &std::process::Output) -> String {
    let said = printed(out);
    assert!(out.status.success(), "{said}");
    said
}

#[test]
fn an_opencode_write_puts_the_guideline_into_its_next_request_once_per_session() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    install_shim_hooks(&home, "--opencode");

    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let write = |rel: &str| {
        (
            "write",
            json!({"filePath": work.join(rel).display().to_string(), "content": kotlin}),
        )
    };
    let mock = MockChatCompletions::start(vec![
        write("src/main/kotlin/Jobs.kt"),
        write("src/main/kotlin/More.kt"),
    ]);
    let said = succeeded(&opencode(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "add the jobs",
        &[],
    ));
    assert_eq!(
        std::fs::read_to_string(work.join("src/main/kotlin/Jobs.kt")).ok(),
        Some(kotlin.to_string()),
        "{said}"
    );
    let turns = mock.turns();
    assert_eq!(turns.len(), 3, "write, write, done: {said}");
    assert_eq!(shown(&turns[0]), 0);
    let results = tool_results(&turns[1]);
    assert!(
        results[0].starts_with("Wrote file successfully.\n\n")
            && results[0].contains("[kotlin-no-globalscope]"),
        "the write's output carries the guideline: {results:?}"
    );
    assert_eq!(shown(&turns[2]), 1, "not repeated in the session");

    // A new session: shown again, after an `edit` of the file.
    let jobs = work.join("src/main/kotlin/Jobs.kt");
    let mock = MockChatCompletions::start(vec![(
        "edit",
        json!({"filePath": jobs.display().to_string(), "oldString": "fun start()",
            "newString": "fun stop() = GlobalScope.launch { }\nfun start()"}),
    )]);
    let said = succeeded(&opencode(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "once more",
        &[],
    ));
    assert!(
        std::fs::read_to_string(&jobs)
            .unwrap()
            .contains("fun stop()"),
        "{said}"
    );
    assert_eq!(shown(&mock.turns()[1]), 1, "{said}");

    // Without a sidecar: the task completes, nothing is added, nothing is said.
    let mock = MockChatCompletions::start(vec![write("src/main/kotlin/Last.kt")]);
    let none = dir.path().join("none.sock");
    let said = succeeded(&opencode(&home, &work, &mock, &none, "the last", &[]));
    assert!(work.join("src/main/kotlin/Last.kt").exists(), "{said}");
    assert_eq!(
        tool_results(&mock.turns()[1]),
        ["Wrote file successfully."],
        "{said}"
    );
    assert!(!said.contains("guidebook"), "{said}");
}

/// The breaker inside OpenCode: three failing runs of the real `ruff` through its `bash` halt
/// the session. OpenCode has no `continue: false`: our plugin appends the reason to the third
/// run's output, which the model reads, and the `write` it asks for next is thrown out of
/// `tool.execute.before` (the model reads the reason as the tool's result) before anything is
/// written.
#[test]
fn failing_ruff_runs_in_opencode_halt_the_session_and_deny_its_next_edit() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::lint();
    install_shim_hooks(&home, "--opencode");

    let lint = format!("{} check --no-cache src", ruff_exe().display());
    let run = || ("bash", json!({"command": lint, "description": "lint"}));
    let new_file = work.join("src/new.py");
    let mock = MockChatCompletions::start(vec![
        run(),
        run(),
        run(),
        (
            "write",
            json!({"filePath": new_file.display().to_string(), "content": "x = 1\n"}),
        ),
    ]);
    let said = succeeded(&opencode(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "lint and fix",
        &[],
    ));
    let turns = mock.turns();
    assert_eq!(turns.len(), 5, "three runs, the write, done: {said}");
    let reason = format!(
        "Circuit breaker: ruff F401 in {} failed 3 check runs in a row.",
        work.join("src/app.py").display()
    );
    let third = tool_results(&turns[3]);
    assert!(third[2].contains(&reason), "the model is told: {third:?}");
    assert!(!new_file.exists(), "{said}");
    let last = tool_results(&turns[4]);
    assert!(
        last[3].starts_with("Circuit breaker: ruff F401"),
        "the write was denied: {last:?}"
    );
    let session = last[3]
        .split("--session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the reason names the session: {}", last[3]))
        .trim_end_matches(['`', '.', ')']);
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(status["state"], "halt", "{status}");
    assert_eq!(status["totalErrors"], 3, "{status}");
}

/// The agent cannot lift its own guardrails through its shell: `bash` running `guidebook flags
/// set` is thrown out before it runs, and the model reads why.
#[test]
fn the_agents_own_flag_change_through_opencodes_bash_is_denied() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::api();
    install_shim_hooks(&home, "--opencode");
    let marker = work.join("ran");
    let command = format!(
        "touch {} && guidebook flags set hooks_enabled false",
        marker.display()
    );
    let mock = MockChatCompletions::start(vec![(
        "bash",
        json!({"command": command, "description": "turn the hooks off"}),
    )]);
    let said = succeeded(&opencode(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "hooks off",
        &[],
    ));
    assert!(!marker.exists(), "the command ran: {said}");
    let results = tool_results(mock.turns().last().unwrap());
    assert!(
        results[0].starts_with("Adaptive Guidebook: this would change a feature flag"),
        "{results:?}"
    );
}

/// Issue 40 with OpenCode: an `edit` that adds a password literal a `severity: block` guideline
/// forbids is thrown out before it is written, the model reads the reason, and its corrected
/// `edit` goes through.
#[test]
fn an_opencode_edit_that_breaks_a_block_guideline_is_denied_and_the_corrected_one_is_written() {
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
    install_shim_hooks(&home, "--opencode");
    let user = "val user = \"app\"\n";
    let edit = |line: &str| {
        (
            "edit",
            json!({"filePath": db.display().to_string(), "oldString": user,
                "newString": format!("{user}{line}\n")}),
        )
    };
    let mock = MockChatCompletions::start(vec![edit(BAD_LINE), edit(GOOD_LINE)]);
    let said = succeeded(&opencode(
        &home,
        &repo,
        &mock,
        &sidecar.socket,
        "connect",
        &[],
    ));
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        db_with(GOOD_LINE),
        "{said}"
    );
    let turns = mock.turns();
    assert_eq!(turns.len(), 3, "edit, edit, done: {said}");
    assert_eq!(
        tool_results(&turns[1])[0],
        blocked_reason("src/Db.kt"),
        "{said}"
    );
}

/// An edit through the shell: `bash` running `sed -i` on a committed Kotlin file gets the
/// guideline into the next request, as an edit tool's change does (our plugin's
/// `tool.execute.before` and `after` of `bash`: `beginShellCommand`, `endShellCommand`).
#[test]
fn opencode_running_sed_in_place_through_bash_gets_the_guideline_in_its_next_request() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    write_file(
        &work,
        "src/main/kotlin/Jobs.kt",
        "package acme\nfun start() = 1\n",
    );
    git_commit_all(&work, "jobs");
    install_shim_hooks(&home, "--opencode");
    let sed =
        "sed -i 's/fun start() = 1/fun start() = GlobalScope.launch { }/' src/main/kotlin/Jobs.kt";
    let mock = MockChatCompletions::start(vec![(
        "bash",
        json!({"command": sed, "description": "edit"}),
    )]);
    let said = succeeded(&opencode(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "launch",
        &[],
    ));
    assert!(
        std::fs::read_to_string(work.join("src/main/kotlin/Jobs.kt"))
            .unwrap()
            .contains("GlobalScope.launch"),
        "{said}"
    );
    let results = tool_results(&mock.turns()[1]);
    assert!(
        results[0].contains("[kotlin-no-globalscope]"),
        "{results:?}"
    );
}

/// A sidecar that hangs: with the shim's default budget (2 s) the shim gives up first, twice per
/// edit (before and after); the task completes, the file is written and nothing is added. (The
/// plugin's own 5 s kill, reached with a budget beyond it, costs 10 s an edit: not run here.)
#[test]
fn a_hung_sidecar_leaves_the_task_untouched() {
    if !real_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("orders");
    git_repo(&work, Some("git@github.com:acme/orders.git"));
    let home = dir.path().join("user");
    install_shim_hooks(&home, "--opencode");
    let hung = HungSidecar::bind(dir.path().join("hung.sock"));
    let path = work.join("Quick.kt");
    let mock = MockChatCompletions::start(vec![(
        "write",
        json!({"filePath": path.display().to_string(), "content": "x\n"}),
    )]);
    let out = opencode_with_budget(&home, &work, &mock, &hung.path, "add", &[], "2000");
    let said = succeeded(&out);
    assert!(path.exists(), "{said}");
    assert_eq!(
        tool_results(&mock.turns()[1]),
        ["Wrote file successfully."],
        "{said}"
    );
}
