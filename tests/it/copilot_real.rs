//! The real GitHub Copilot CLI (pinned, from npm) with our hooks, against a mock chat API.
//!
//! `copilot -p --allow-all`, offline (`COPILOT_OFFLINE`, its model a local OpenAI-compatible
//! mock), in a scratch home whose `hooks/guidebook.json` `guidebook hooks install --copilot`
//! wrote: a `create` of a Kotlin file in a repository in scope (or a `sed -i` through its
//! `bash`) puts the guideline into the next request (appended to the tool's result), once per
//! session, and again after `/compact`; three failing `ruff` runs halt the session and its next
//! edit is denied; the agent's own flag change is blocked; a `block` guideline's hit is denied
//! before it is written; without a sidecar the task completes quietly; a repository's hooks run
//! only once `--trust` trusted the folder. Reads: the npm registry once per cache directory;
//! writes: temp directories and Copilot CLI's unpacked cache under `target/agents/`.

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
fn a_copilot_cli_create_puts_the_guideline_into_its_next_request_once_per_session() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    install_shim_hooks(&home, "--copilot");
    // Copilot CLI's `create` makes no directory: "Parent directory does not exist".
    std::fs::create_dir_all(work.join("src/main/kotlin")).unwrap();

    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let create = |rel: &str| {
        (
            "create",
            json!({"path": work.join(rel).display().to_string(), "file_text": kotlin}),
        )
    };
    let mock = MockChatCompletions::start(vec![
        create("src/main/kotlin/Jobs.kt"),
        create("src/main/kotlin/More.kt"),
    ]);
    let said = succeeded(&copilot(
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
        "{said} {:?}",
        mock.turns().iter().map(tool_results).collect::<Vec<_>>()
    );
    let turns = mock.turns();
    assert_eq!(turns.len(), 3, "create, create, done: {said}");
    assert_eq!(shown(&turns[0]), 0);
    let results = tool_results(&turns[1]);
    assert!(
        results[0].contains("Additional guidance from postToolUse hooks:")
            && results[0].contains("[kotlin-no-globalscope]"),
        "the create's result carries the guideline: {results:?}"
    );
    assert_eq!(shown(&turns[2]), 1, "not repeated in the session");

    // A new session: shown again, after an `edit` of the file.
    let jobs = work.join("src/main/kotlin/Jobs.kt");
    let mock = MockChatCompletions::start(vec![(
        "edit",
        json!({"path": jobs.display().to_string(), "old_str": "fun start()",
            "new_str": "fun stop() = GlobalScope.launch { }\nfun start()"}),
    )]);
    let said = succeeded(&copilot(
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
    let mock = MockChatCompletions::start(vec![create("src/main/kotlin/Last.kt")]);
    let none = dir.path().join("none.sock");
    let said = succeeded(&copilot(&home, &work, &mock, &none, "the last", &[]));
    assert!(work.join("src/main/kotlin/Last.kt").exists(), "{said}");
    assert_eq!(shown(&mock.turns()[1]), 0);
    assert!(!said.contains("guidebook-hook"), "{said}");
    assert!(!said.contains("Denied"), "{said}");
}

/// The breaker inside Copilot CLI: three failing runs of the real `ruff` through its `bash`
/// (each a `postToolUse`: a command that exits 1 is still a successful tool call) halt the
/// session. Copilot CLI ignores `continue: false` after a tool, so the model reads the reason
/// in the third run's result, and the `create` it asks for next is denied by our `preToolUse`
/// before anything is written.
#[test]
fn failing_ruff_runs_in_copilot_cli_halt_the_session_and_deny_its_next_edit() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::lint();
    install_shim_hooks(&home, "--copilot");

    let lint = format!("{} check --no-cache src", ruff_exe().display());
    let run = || ("bash", json!({"command": lint, "description": "lint"}));
    let new_file = work.join("src/new.py");
    let mock = MockChatCompletions::start(vec![
        run(),
        run(),
        run(),
        (
            "create",
            json!({"path": new_file.display().to_string(), "file_text": "x = 1\n"}),
        ),
    ]);
    let said = succeeded(&copilot(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "lint and fix",
        &[],
    ));
    let turns = mock.turns();
    assert_eq!(turns.len(), 5, "three runs, the create, done: {said}");
    let reason = format!(
        "Circuit breaker: ruff F401 in {} failed 3 check runs in a row.",
        work.join("src/app.py").display()
    );
    let third = tool_results(&turns[3]);
    assert!(third[2].contains(&reason), "the model is told: {third:?}");
    assert!(!new_file.exists(), "{said}");
    let last = tool_results(&turns[4]);
    assert!(
        last[3].starts_with("Denied by preToolUse hook: Circuit breaker: ruff F401"),
        "the create was denied: {last:?}"
    );
    let session = reason_session(&last[3]);
    let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
    assert_eq!(status["state"], "halt", "{status}");
    assert_eq!(status["totalErrors"], 3, "{status}");
}

/// The session a breaker's reason names (`--session ID` in its reset command).
fn reason_session(reason: &str) -> String {
    reason
        .split("--session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the reason names the session: {reason}"))
        .trim_end_matches(['`', '.', ')'])
        .to_string()
}

/// The agent cannot lift its own guardrails through its shell: `bash` running `guidebook flags
/// set` is denied by our `preToolUse` before it runs, and the model reads why.
#[test]
fn the_agents_own_flag_change_through_copilot_clis_bash_is_denied() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::api();
    install_shim_hooks(&home, "--copilot");
    let marker = work.join("ran");
    let command = format!(
        "touch {} && guidebook flags set hooks_enabled false",
        marker.display()
    );
    let mock = MockChatCompletions::start(vec![(
        "bash",
        json!({"command": command, "description": "turn the hooks off"}),
    )]);
    let said = succeeded(&copilot(
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
        results[0].starts_with(
            "Denied by preToolUse hook: Adaptive Guidebook: this would change a feature flag"
        ),
        "{results:?}"
    );
}

/// Issue 40 with Copilot CLI: an `edit` that adds a password literal a `severity: block`
/// guideline forbids is denied before it is written, the model reads the reason, and its
/// corrected `edit` goes through.
#[test]
fn a_copilot_cli_edit_that_breaks_a_block_guideline_is_denied_and_the_corrected_one_is_written() {
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
    install_shim_hooks(&home, "--copilot");
    let user = "val user = \"app\"\n";
    let edit = |line: &str| {
        (
            "edit",
            json!({"path": db.display().to_string(), "old_str": user,
                "new_str": format!("{user}{line}\n")}),
        )
    };
    let mock = MockChatCompletions::start(vec![edit(BAD_LINE), edit(GOOD_LINE)]);
    let said = succeeded(&copilot(
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
    let results = tool_results(&turns[1]);
    assert_eq!(
        results[0],
        format!("Denied by preToolUse hook: {}", blocked_reason("src/Db.kt")),
        "{said}"
    );
}

/// The session a run printed (`Resume copilot --resume=ID` in its summary).
fn resumable(said: &str) -> String {
    said.split("--resume=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the run names its session: {said}"))
        .to_string()
}

/// Copilot CLI's `/compact` (its `preCompact`) makes the session forget what it was shown:
/// resumed, a second matching `create` adds nothing; compacted, the next one shows the
/// guideline again.
#[test]
fn a_compaction_in_copilot_cli_shows_the_guideline_again() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    install_shim_hooks(&home, "--copilot");
    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let create = |name: &str| {
        (
            "create",
            json!({"path": work.join(name).display().to_string(), "file_text": kotlin}),
        )
    };
    let last_result = |mock: &MockChatCompletions| {
        let turns = mock.turns();
        tool_results(&turns[turns.len() - 1])
            .last()
            .cloned()
            .unwrap_or_default()
    };
    let mock = MockChatCompletions::start(vec![create("A.kt")]);
    let said = succeeded(&copilot(&home, &work, &mock, &sidecar.socket, "a", &[]));
    assert!(
        last_result(&mock).contains("[kotlin-no-globalscope]"),
        "{said}"
    );
    let session = resumable(&said);
    let resume = format!("--resume={session}");

    let mock = MockChatCompletions::start(vec![create("B.kt")]);
    let said = succeeded(&copilot(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "b",
        &[&resume],
    ));
    assert!(work.join("B.kt").exists(), "{said}");
    let result = last_result(&mock);
    assert!(result.starts_with("Created file"), "{result}");
    assert!(!result.contains("[kotlin-no-globalscope]"), "{result}");

    // Copilot CLI 1.0.102 does not always exit after `-p /compact`: on a loaded machine its log
    // ends with "Compacted conversation history" and the process waits on. The compaction (and
    // our `preCompact` before it) is done by then; the run is given 15 s, then stopped.
    let mock = MockChatCompletions::start(vec![]);
    let mut compact = copilot_command(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "/compact",
        &[&resume],
        PATIENT_HOOK_TIMEOUT_MS,
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    while compact.try_wait().unwrap().is_none()
        && started.elapsed() < std::time::Duration::from_secs(15)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = compact.kill();
    let _ = compact.wait();
    assert!(
        !mock.turns().is_empty(),
        "the compaction asked the model for its summary"
    );

    let mock = MockChatCompletions::start(vec![create("C.kt")]);
    let said = succeeded(&copilot(
        &home,
        &work,
        &mock,
        &sidecar.socket,
        "c",
        &[&resume],
    ));
    assert!(
        last_result(&mock).contains("[kotlin-no-globalscope]"),
        "shown again after the compaction: {said}"
    );
}

/// A repository's hooks (`--project`): Copilot CLI 1.0.102 runs them in prompt mode only in a
/// folder it trusts, and skips them silently otherwise; `--trust` adds the project to its
/// `trustedFolders`, after which they run.
#[test]
fn copilot_cli_runs_a_repositorys_hooks_only_once_the_folder_is_trusted() {
    if !real_tests() {
        return;
    }
    let Scene {
        dir: _dir,
        sidecar,
        work,
        home,
    } = Scene::orders();
    let work = work.canonicalize().unwrap();
    let install = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(guidebook_exe());
        cmd.env_clear()
            .env("HOME", &home)
            .args(["hooks", "install", "--copilot", "--project"])
            .arg(&work)
            .arg("--hook-command")
            .arg(shim_exe())
            .args(extra);
        let out = run_bounded(cmd, b"", "guidebook hooks install --copilot --project");
        succeeded(&out)
    };
    let said = install(&[]);
    assert!(said.contains("only in a folder it trusts"), "{said}");
    let kotlin = "package acme\nfun start() = GlobalScope.launch { }\n";
    let create = |name: &str| {
        (
            "create",
            json!({"path": work.join(name).display().to_string(), "file_text": kotlin}),
        )
    };
    let mock = MockChatCompletions::start(vec![create("A.kt")]);
    let said = succeeded(&copilot(&home, &work, &mock, &sidecar.socket, "a", &[]));
    assert!(work.join("A.kt").exists(), "{said}");
    assert_eq!(shown(&mock.turns()[1]), 0, "untrusted: not run");

    install(&["--trust"]);
    let mock = MockChatCompletions::start(vec![create("B.kt")]);
    let said = succeeded(&copilot(&home, &work, &mock, &sidecar.socket, "b", &[]));
    assert_eq!(shown(&mock.turns()[1]), 1, "trusted: run: {said}");
}

/// An edit through the shell: `bash` running `sed -i` on a committed Kotlin file gets the
/// guideline into the next request, as an edit tool's change does (our `preToolUse` and
/// `postToolUse` of `bash`: `beginShellCommand`, `endShellCommand`).
#[test]
fn copilot_cli_running_sed_in_place_through_bash_gets_the_guideline_in_its_next_request() {
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
    install_shim_hooks(&home, "--copilot");
    let sed =
        "sed -i 's/fun start() = 1/fun start() = GlobalScope.launch { }/' src/main/kotlin/Jobs.kt";
    let mock = MockChatCompletions::start(vec![(
        "bash",
        json!({"command": sed, "description": "edit"}),
    )]);
    let said = succeeded(&copilot(
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

/// A sidecar that hangs: with the shim's budget (15 s) beyond the hook's 5 s, Copilot CLI waits 5 s for a hook and then lets the call through; with
/// the shim's default budget (2 s) the shim gives up first. Either way the task completes, the
/// file is written and nothing is added.
#[test]
fn a_hung_sidecar_leaves_the_task_untouched() {
    if !real_tests() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("orders");
    git_repo(&work, Some("git@github.com:acme/orders.git"));
    let home = dir.path().join("user");
    install_shim_hooks(&home, "--copilot");
    let hung = HungSidecar::bind(dir.path().join("hung.sock"));
    for (file, budget) in [("Slow.kt", PATIENT_HOOK_TIMEOUT_MS), ("Quick.kt", "2000")] {
        let path = work.join(file);
        let mock = MockChatCompletions::start(vec![(
            "create",
            json!({"path": path.display().to_string(), "file_text": "x\n"}),
        )]);
        let out = copilot_with_budget(&home, &work, &mock, &hung.path, "add", &[], budget);
        let said = succeeded(&out);
        assert!(path.exists(), "{budget}: {said}");
        assert!(
            !mock.turns()[1].to_string().contains("Adaptive Guidebook"),
            "{said}"
        );
    }
}
