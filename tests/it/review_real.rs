//! `guidebook review` checked by the real tools around it: the SARIF it writes validated by
//! Microsoft's official validator (`sarif-multitool validate`, pinned, from npm) and by the
//! SARIF 2.1.0 JSON Schema that package ships; and the repository's `.pre-commit-hooks.yaml`
//! run by the real pre-commit framework (pinned, from PyPI, in a venv), refusing a commit
//! with a `block` finding and letting the fixed one through. Reads: the npm registry and PyPI
//! once per cache directory (`target/agents/`); `scripts/test --offline` skips this module.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::agents::npm_cli;
use crate::harness::*;
use crate::review::{review, scene, PRINTLN, SLEEP, TODO};

/// Microsoft's SARIF validator, pinned.
const SARIF_MULTITOOL: (&str, &str, &str) =
    ("@microsoft/sarif-multitool", "5.7.0", "sarif-multitool");

/// The pre-commit framework, pinned.
const PRE_COMMIT: &str = "4.7.0";

/// How long installing a tool from a registry may take.
const INSTALL_LIMIT: Duration = Duration::from_secs(300);

/// The SARIF 2.1.0 JSON Schema shipped in the validator's package.
fn sarif_schema() -> PathBuf {
    let exe = npm_cli(SARIF_MULTITOOL);
    let modules = exe.parent().unwrap().parent().unwrap();
    modules.join("@microsoft/sarif-multitool-linux/sarif-2.1.0.json")
}

/// `sarif-multitool validate FILE` against the shipped schema: the results of its own SARIF
/// log (each a rule broken, with its level).
fn multitool_validate(file: &Path) -> Vec<(String, String)> {
    let exe = npm_cli(SARIF_MULTITOOL);
    let log = file.with_extension("validation.sarif");
    let mut cmd = Command::new(&exe);
    cmd.arg("validate")
        .arg(file)
        .arg("--json-schema")
        .arg(sarif_schema())
        .arg("--output")
        .arg(&log)
        .args(["--log", "ForceOverwrite"]);
    let out = run_bounded(cmd, b"", "sarif-multitool validate");
    assert!(
        out.status.success(),
        "sarif-multitool validate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ruleId"].as_str().unwrap_or("").to_string(),
                // A result without a level is a warning (SARIF §3.27.10).
                r["level"].as_str().unwrap_or("warning").to_string(),
            )
        })
        .collect()
}

/// The SARIF of a review with a finding of each severity, one in a file whose name needs
/// percent-encoding: its rules and results as GitHub code scanning reads them, valid for the
/// official validator and the official schema.
#[test]
fn review_sarif_is_valid_for_the_official_validator_and_schema() {
    if !real_tests() {
        return;
    }
    let (dir, root, work) = scene(&[SLEEP, TODO, PRINTLN]);
    write_file(&work, "src/main/App.kt", "fun a() {}\n");
    git_commit_all(&work, "base");
    write_file(
        &work,
        "src/main/App.kt",
        "fun a() {}\nfun b() { Thread.sleep(1) }\nfun c() { println(\"c\") } // TODO\n",
    );
    write_file(
        &work,
        "src/main/Mein Modul ü.kt",
        "fun d() { Thread.sleep(2) }\n",
    );
    let out = review(&root, &work, &["--format", "sarif"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();

    // What GitHub reads: the driver, a rule per guideline that fired, results pointing at them.
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "guidebook");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    let rules = driver["rules"].as_array().unwrap();
    let rule_ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let mut sorted = rule_ids.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        ["no-println-in-main", "no-thread-sleep", "todo-in-file"]
    );
    let sleep = rules.iter().find(|r| r["id"] == "no-thread-sleep").unwrap();
    assert_eq!(sleep["defaultConfiguration"]["level"], "error");
    assert_eq!(
        sleep["shortDescription"]["text"],
        "Use delay() in coroutines, not Thread.sleep()."
    );
    assert_eq!(
        sleep["fullDescription"]["text"],
        "Use delay() in coroutines, not Thread.sleep().\nIt blocks the thread."
    );
    assert!(sleep["help"]["text"]
        .as_str()
        .unwrap()
        .contains("It blocks"));
    assert_eq!(
        sleep["properties"]["tags"],
        serde_json::json!(["guidebook", "block"])
    );
    let levels: Vec<(&str, &str)> = rules
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["defaultConfiguration"]["level"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(levels.contains(&("todo-in-file", "warning")), "{levels:?}");
    assert!(
        levels.contains(&("no-println-in-main", "note")),
        "{levels:?}"
    );
    let results = run["results"].as_array().unwrap();
    let seen: Vec<(String, u64, String)> = results
        .iter()
        .map(|r| {
            let index = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(
                r["ruleId"], rules[index]["id"],
                "ruleIndex points at its rule"
            );
            assert_eq!(r["level"], rules[index]["defaultConfiguration"]["level"]);
            let location = &r["locations"][0]["physicalLocation"];
            assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
            (
                location["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                location["region"]["startLine"].as_u64().unwrap(),
                r["ruleId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("src/main/App.kt", 2, "no-thread-sleep"),
        ("src/main/App.kt", 3, "no-println-in-main"),
        ("src/main/App.kt", 3, "todo-in-file"),
        ("src/main/Mein%20Modul%20%C3%BC.kt", 1, "no-thread-sleep"),
    ];
    assert_eq!(
        seen,
        expected.map(|(u, l, id)| (u.to_string(), l, id.to_string()))
    );
    let base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with("/orders/"),
        "{base}"
    );

    // The official validator: nothing at error level.
    let file = dir.path().join("review.sarif");
    std::fs::write(&file, &out.stdout).unwrap();
    let broken = multitool_validate(&file);
    let errors: Vec<_> = broken
        .iter()
        .filter(|(_, level)| level == "error")
        .collect();
    assert!(errors.is_empty(), "the validator found errors: {broken:?}");

    // The validator does read ours: the same log without a result's message is an error.
    let mut bad = sarif.clone();
    bad["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    let bad_file = dir.path().join("broken.sarif");
    std::fs::write(&bad_file, serde_json::to_vec_pretty(&bad).unwrap()).unwrap();
    let found = multitool_validate(&bad_file);
    assert!(
        found
            .iter()
            .any(|(rule, level)| rule == "JSON1002" && level == "error"),
        "a missing message went unnoticed: {found:?}"
    );

    // The schema the validator ships, applied on its own.
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(sarif_schema()).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let problems: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(!validator.is_valid(&bad), "the schema requires a message");
}

/// The pre-commit framework, installed into a venv under `target/agents/` on first use.
fn pre_commit_exe() -> PathBuf {
    let dir = manifest_dir()
        .join("target/agents")
        .join(format!("pre-commit-{PRE_COMMIT}"));
    let exe = dir.join("bin/pre-commit");
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if !exe.exists() {
        let log = std::env::temp_dir().join(format!("pre-commit-{PRE_COMMIT}-install.log"));
        let venv = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&dir)
            .status();
        assert!(
            venv.is_ok_and(|s| s.success()),
            "python3 -m venv {} failed",
            dir.display()
        );
        let mut pip = Command::new(dir.join("bin/pip"));
        pip.args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("pre-commit=={PRE_COMMIT}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
        let mut child = pip.spawn().expect("running pip");
        let status = wait_bounded(&mut child, INSTALL_LIMIT, "pip install pre-commit");
        if !(status.success() && exe.exists()) {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_dir_all(&dir);
            panic!("installing pre-commit=={PRE_COMMIT} with pip failed: {said}");
        }
    }
    exe
}

/// A command in `work` with the guidebook on PATH, the guidebook root set, and git and
/// pre-commit isolated from the machine's configuration and caches.
fn in_repo(program: &Path, work: &Path, root: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(program);
    let bin = guidebook_exe().parent().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    for var in [
        "ADAPTIVE_GUIDEBOOK_SOCKET",
        "ADAPTIVE_GUIDEBOOK_DB",
        "ADAPTIVE_GUIDEBOOK_FLAGS",
        "ADAPTIVE_GUIDEBOOK_CONFIG",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ] {
        cmd.env_remove(var);
    }
    cmd.current_dir(work)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("HOME", home)
        .env("ADAPTIVE_GUIDEBOOK_HOME", home.join(".adaptive-guidebook"))
        .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
        .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
        .env("PRE_COMMIT_HOME", home.join("pre-commit-cache"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Guidebook Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Guidebook Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid");
    cmd
}

/// Runs `cmd` with a limit generous enough for pre-commit's first clone of the hook repository.
fn run_long(mut cmd: Command, what: &str) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id() as libc::pid_t;
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: our child, not yet reaped (the waiter is blocked on it).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} hung");
        }
    }
}

fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The repository's `.pre-commit-hooks.yaml`, served from a hook repository of its own and
/// run by the real pre-commit as a `git commit` hook: the commit with a `block` finding is
/// refused and the finding printed; once fixed, the commit is made.
#[test]
fn the_pre_commit_hook_refuses_a_commit_with_a_block_finding_and_takes_the_fix() {
    if !real_tests() {
        return;
    }
    let pre_commit = pre_commit_exe();
    let (dir, root, work) = scene(&[SLEEP, TODO]);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();

    // A hook repository holding exactly the file this repository ships.
    let hooks = dir.path().join("hooks");
    git_repo(&hooks, None);
    std::fs::copy(
        manifest_dir().join(".pre-commit-hooks.yaml"),
        hooks.join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git_commit_all(&hooks, "hooks");
    let rev = git(&hooks, &["rev-parse", "HEAD"]).trim().to_string();

    write_file(
        &work,
        ".pre-commit-config.yaml",
        &format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: guidebook-review\n",
            hooks.display()
        ),
    );
    write_file(&work, "src/A.kt", "fun a() {\n    Thread.sleep(1)\n}\n");
    git_commit_all(&work, "base");
    let base = git(&work, &["rev-parse", "HEAD"]);

    let mut install = in_repo(&pre_commit, &work, &root, &home);
    install.arg("install");
    let out = run_long(install, "pre-commit install");
    assert!(out.status.success(), "{}", printed(&out));

    // A new sleep, staged: the commit is refused, the finding shown, nothing committed.
    write_file(
        &work,
        "src/A.kt",
        "fun a() {\n    Thread.sleep(1)\n}\nfun b() { Thread.sleep(2) } // TODO\n",
    );
    git(&work, &["add", "src/A.kt"]);
    let mut commit = in_repo(Path::new("git"), &work, &root, &home);
    commit.args(["commit", "-m", "sleep"]);
    let out = run_long(commit, "git commit (refused)");
    let said = printed(&out);
    assert!(!out.status.success(), "the commit went through: {said}");
    assert!(said.contains("guidebook review"), "{said}");
    assert!(said.contains("Failed"), "{said}");
    assert!(
        said.contains("src/A.kt:4: no-thread-sleep [block] Use delay() in coroutines"),
        "{said}"
    );
    assert_eq!(
        git(&work, &["rev-parse", "HEAD"]),
        base,
        "nothing committed"
    );

    // Fixed (a warning stays, and does not block): the commit is made.
    write_file(
        &work,
        "src/A.kt",
        "fun a() {\n    Thread.sleep(1)\n}\nsuspend fun b() { delay(2) } // TODO\n",
    );
    git(&work, &["add", "src/A.kt"]);
    let mut commit = in_repo(Path::new("git"), &work, &root, &home);
    commit.args(["commit", "-m", "delay"]);
    let out = run_long(commit, "git commit (fixed)");
    let said = printed(&out);
    assert!(out.status.success(), "the fixed commit was refused: {said}");
    assert!(said.contains("Passed"), "{said}");
    assert_ne!(git(&work, &["rev-parse", "HEAD"]), base, "committed");
}
