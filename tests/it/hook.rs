//! The whole path of the product: a Codex or Claude Code hook event through the real
//! `guidebook-hook` and the real sidecar to the `additionalContext` text, and the shim's
//! silence when the sidecar is down or hangs.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::Path;

use serde_json::{json, Value};

use crate::harness::*;

pub(crate) const BACKEND_ORDER: &str = "git@github.com:acme/backend-order.git";

pub(crate) const ORDER_PRINTER_KT: &str = "package com.acme.order\n\nclass OrderPrinter(val id: String) {\n    fun show() = println(id)\n}\n";

/// The exact line the contract fixes for `backend-logging` + `kotlin-data-classes`: the header,
/// then per guideline a blank line, `[id]` and the content with trailing whitespace removed.
pub(crate) const BACKEND_KOTLIN_OUTPUT: &str = concat!(
    r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"#,
    r#""Adaptive Guidebook guidelines relevant to the latest changes:\n\n"#,
    r#"[backend-logging]\nUse the structured logger (\"log.info\"), not println.\n\n"#,
    r#"[kotlin-data-classes]\nKotlin classes:\n- prefer data classes for DTOs\n- keep constructors small"}}"#,
    "\n"
);

/// A sidecar on the test guidebook and a backend-order repository to edit in.
fn setup() -> (Sidecar, tempfile::TempDir, std::path::PathBuf) {
    let (root_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    let repo = root_dir.path().join("backend-order");
    git_repo(&repo, Some(BACKEND_ORDER));
    (sidecar, root_dir, repo)
}

/// A Codex `apply_patch` event (the fixture's shape) adding `rel` with `content`, which the
/// test has written to disk as the tool would have.
pub(crate) fn codex_add(session: &str, repo: &Path, rel: &str, content: &str) -> Value {
    write_file(repo, rel, content);
    let mut event = hook_event("post_tool_use_apply_patch_add.json", session, repo);
    event["tool_input"]["command"] = json!(add_file_patch(&[(rel, content)]));
    event["tool_response"] = json!(apply_patch_response(&[&format!("A {rel}")]));
    event
}

/// The ids named in a hook output's `additionalContext`, in order.
fn shown_ids(stdout: &str) -> Vec<String> {
    if stdout.is_empty() {
        return Vec::new();
    }
    let value: Value = serde_json::from_str(stdout).unwrap();
    let text = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
        .collect()
}

#[test]
fn codex_apply_patch_prints_the_contract_text_once_per_session_until_reset() {
    let (sidecar, _root, repo) = setup();
    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    let event = codex_add("codex-s1", &repo, rel, ORDER_PRINTER_KT);

    let first = sidecar.hook(&event);
    assert_eq!(
        first.stdout, BACKEND_KOTLIN_OUTPUT,
        "stderr: {}",
        first.stderr
    );

    let again = sidecar.hook(&event);
    assert_eq!(
        again.stdout, "",
        "the same edit in the same session shows nothing new"
    );

    let other = codex_add("codex-s2", &repo, rel, ORDER_PRINTER_KT);
    assert_eq!(
        sidecar.hook(&other).stdout,
        BACKEND_KOTLIN_OUTPUT,
        "another session gets it"
    );

    // Claude Code's SessionStart after compaction forgets what the session was shown.
    let compact = hook_event("claude_session_start_compact.json", "codex-s1", &repo);
    assert_eq!(sidecar.hook(&compact).stdout, "", "a reset prints nothing");
    assert_eq!(
        sidecar.hook(&event).stdout,
        BACKEND_KOTLIN_OUTPUT,
        "shown again after compact"
    );
    assert_eq!(sidecar.hook(&event).stdout, "");

    // So does Codex's PostCompact.
    let post_compact = hook_event("codex_post_compact.json", "codex-s1", &repo);
    assert_eq!(sidecar.hook(&post_compact).stdout, "");
    assert_eq!(
        sidecar.hook(&event).stdout,
        BACKEND_KOTLIN_OUTPUT,
        "shown again after PostCompact"
    );

    // A SessionStart that is not after compaction or /clear resets nothing.
    let startup = hook_event("claude_session_start_startup.json", "codex-s1", &repo);
    assert_eq!(sidecar.hook(&startup).stdout, "");
    assert_eq!(sidecar.hook(&event).stdout, "");
}

#[test]
fn codex_apply_patch_variants_name_the_files_that_exist_after_the_patch() {
    let (sidecar, _root, repo) = setup();

    // The older builds' tool_response: a JSON document, as a string, whose `output` holds the
    // summary.
    let rel = "src/main/kotlin/com/acme/order/Legacy.kt";
    let legacy_summary = |rel: &str| {
        json!({"output": format!("Success. Updated the following files:\nA {rel}\n"),
               "metadata": {"exit_code": 0, "duration_seconds": 0.0}})
        .to_string()
    };
    write_file(&repo, rel, ORDER_PRINTER_KT);
    let mut legacy = hook_event(
        "post_tool_use_apply_patch_legacy_structured_response.json",
        "legacy",
        &repo,
    );
    legacy["tool_input"]["command"] = json!(add_file_patch(&[(rel, ORDER_PRINTER_KT)]));
    legacy["tool_response"] = json!(legacy_summary(rel));
    assert_eq!(sidecar.hook(&legacy).stdout, BACKEND_KOTLIN_OUTPUT);
    // The legacy summary alone names the file too.
    legacy["session_id"] = json!("legacy-summary-only");
    legacy["tool_input"]["command"] = json!("");
    assert_eq!(sidecar.hook(&legacy).stdout, BACKEND_KOTLIN_OUTPUT);

    // A move: the new name is what exists and is searched.
    let new_rel = "src/main/kotlin/com/acme/order/Renamed.kt";
    write_file(&repo, new_rel, ORDER_PRINTER_KT);
    let mut moved = hook_event(
        "codex_post_tool_use_apply_patch_move_mixed_paths.json",
        "move",
        &repo,
    );
    moved["tool_input"]["command"] = json!(format!(
        "*** Begin Patch\n*** Update File: src/main/kotlin/Old.kt\n*** Move to: {new_rel}\n@@\n-class Old\n+class OrderPrinter(val id: String)\n*** End Patch\n"
    ));
    moved["tool_response"] = json!(apply_patch_response(&[&format!("M {new_rel}")]));
    assert_eq!(sidecar.hook(&moved).stdout, BACKEND_KOTLIN_OUTPUT);

    // A delete names nothing, even though the deleted path still holds matching text here:
    // only the added file's guideline comes.
    write_file(&repo, "docs/legacy.md", "TODO: remove this page\n");
    write_file(
        &repo,
        "src/main/kotlin/Added.kt",
        "class Added(val x: Int)\n",
    );
    let mut deleted = hook_event("post_tool_use_apply_patch_delete.json", "delete", &repo);
    assert_eq!(
        sidecar.hook(&deleted).stdout,
        "",
        "a delete alone asks nothing"
    );
    // The added file is named by its absolute path, as Codex may do.
    let added = repo.join("src/main/kotlin/Added.kt").display().to_string();
    deleted["tool_input"]["command"] = json!(format!(
        "*** Begin Patch\n*** Delete File: docs/legacy.md\n*** Add File: {added}\n+class Added(val x: Int)\n*** End Patch\n"
    ));
    deleted["tool_response"] = json!(apply_patch_response(&[
        "D docs/legacy.md",
        &format!("A {added}")
    ]));
    assert_eq!(
        shown_ids(&sidecar.hook(&deleted).stdout),
        ["kotlin-data-classes"]
    );
    let explained = sidecar.result(
        "explain",
        json!({"filepaths": [repo.join("docs/legacy.md")], "sessionId": "delete"}),
    );
    assert_eq!(
        explained["guidelines"],
        json!([{"id": "todo-needs-ticket", "alreadyPresented": false}])
    );

    // An apply_patch heredoc in a Codex Bash call, relative to its `cd`.
    write_file(
        &repo,
        "backend/app/orders.py",
        "class Order:\n    total: int = 0\n",
    );
    write_file(
        &repo,
        "backend/tests/test_orders.py",
        "def test_total():\n    assert True  # TODO: refunds\n",
    );
    let heredoc = hook_event(
        "codex_post_tool_use_bash_apply_patch_heredoc.json",
        "bash",
        &repo,
    );
    assert_eq!(
        shown_ids(&sidecar.hook(&heredoc).stdout),
        ["python-typed-fields", "todo-needs-ticket"]
    );
    // A Bash call without a patch asks nothing.
    let no_patch = hook_event("codex_post_tool_use_bash_no_patch.json", "bash-2", &repo);
    assert_eq!(sidecar.hook(&no_patch).stdout, "");
}

#[test]
fn claude_code_edit_write_and_multiedit_show_guidelines_for_their_file() {
    let (sidecar, _root, repo) = setup();
    let claude = |fixture: &str, session: &str, path: &Path| {
        let mut event = hook_event(fixture, session, &repo);
        event["tool_input"]["file_path"] = json!(path.display().to_string());
        event["tool_response"]["filePath"] = json!(path.display().to_string());
        event
    };

    let java = write_file(
        &repo,
        "src/main/java/com/acme/OrderController.java",
        "class OrderController {\n    @Autowired private OrderService service;\n}\n",
    );
    let out = sidecar.hook(&claude("claude_post_tool_use_edit.json", "edit", &java));
    assert_eq!(
        shown_ids(&out.stdout),
        ["java-field-injection"],
        "{}",
        out.stderr
    );

    let python = write_file(&repo, "scripts/seed.py", "count: int = 3\n");
    let out = sidecar.hook(&claude("claude_post_tool_use_write.json", "write", &python));
    assert_eq!(shown_ids(&out.stdout), ["python-typed-fields"]);

    let kotlin = write_file(
        &repo,
        "app/src/main/kotlin/com/acme/OrderService.kt",
        ORDER_PRINTER_KT,
    );
    let out = sidecar.hook(&claude(
        "claude_post_tool_use_multiedit.json",
        "multi",
        &kotlin,
    ));
    assert_eq!(out.stdout, BACKEND_KOTLIN_OUTPUT);

    // Reading a file changes nothing and asks nothing.
    let out = sidecar.hook(&claude("claude_post_tool_use_read.json", "read", &kotlin));
    assert_eq!(out.stdout, "");
}

/// Gemini CLI's `AfterTool` of `write_file` and `replace`, through the real shim and sidecar:
/// its own output shape, once per session; `PreCompress` (which Gemini CLI fires before every
/// model turn) resets nothing.
#[test]
fn gemini_cli_write_file_and_replace_show_guidelines_in_its_after_tool_shape() {
    let (sidecar, _root, repo) = setup();
    let gemini = |fixture: &str, session: &str, path: &Path| {
        let mut event = hook_event(fixture, session, &repo);
        event["tool_input"]["file_path"] = json!(path.display().to_string());
        event
    };
    let kotlin = write_file(
        &repo,
        "app/src/main/kotlin/com/acme/OrderService.kt",
        ORDER_PRINTER_KT,
    );
    let out = sidecar.hook(&gemini("gemini_after_tool_write_file.json", "g1", &kotlin));
    let value: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let expected: Value = serde_json::from_str(BACKEND_KOTLIN_OUTPUT).unwrap();
    assert_eq!(value["hookSpecificOutput"]["hookEventName"], "AfterTool");
    assert_eq!(
        value["hookSpecificOutput"]["additionalContext"],
        expected["hookSpecificOutput"]["additionalContext"],
        "the same text as for Codex"
    );
    assert_eq!(value.as_object().unwrap().len(), 1);
    assert_eq!(value["hookSpecificOutput"].as_object().unwrap().len(), 2);

    // The same file edited again in the session: nothing new to say, said as `{}` (Gemini CLI
    // would show a hook's stderr to the user if its stdout were empty).
    let out = sidecar.hook(&gemini("gemini_after_tool_replace.json", "g1", &kotlin));
    assert_eq!(out.stdout, "{}\n", "{}", out.stderr);
    // Before a write there is nothing to show (and the breaker is off).
    let out = sidecar.hook(&gemini("gemini_before_tool_write_file.json", "g1", &kotlin));
    assert_eq!(out.stdout, "{}\n");
    // PreCompress asks nothing, and the session still has seen it.
    let out = sidecar.hook(&hook_event("gemini_pre_compress.json", "g1", &repo));
    assert_eq!(out.stdout, "");
    let out = sidecar.hook(&gemini("gemini_after_tool_replace.json", "g1", &kotlin));
    assert_eq!(out.stdout, "{}\n");
}

#[test]
fn shim_finds_the_sidecar_by_socket_flag_and_by_home_dir_default() {
    let (sidecar, _root, repo) = setup();
    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    let patient = (
        "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
        OsStr::new(PATIENT_HOOK_TIMEOUT_MS),
    );

    // `--socket` wins over an environment that points nowhere.
    let event = codex_add("by-flag", &repo, rel, ORDER_PRINTER_KT).to_string();
    let run = run_shim_with_args(
        &[OsStr::new("--socket"), sidecar.socket.as_os_str()],
        &event,
        &[
            (
                "ADAPTIVE_GUIDEBOOK_SOCKET",
                OsStr::new("/nonexistent/s.sock"),
            ),
            patient,
        ],
    );
    assert_eq!(run.stdout, BACKEND_KOTLIN_OUTPUT, "{}", run.stderr);

    // No socket given: `$ADAPTIVE_GUIDEBOOK_HOME/sidecar.sock`.
    let event = codex_add("by-home", &repo, rel, ORDER_PRINTER_KT).to_string();
    let run = run_shim(
        &event,
        &[
            ("ADAPTIVE_GUIDEBOOK_HOME", sidecar.home.as_os_str()),
            patient,
        ],
    );
    assert_eq!(run.stdout, BACKEND_KOTLIN_OUTPUT, "{}", run.stderr);
}

/// Whether the ELF executable at `path` names a program interpreter (a `PT_INTERP` program
/// header): every dynamically linked executable does, a static one does not.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn has_interpreter(path: &Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(
        &elf[..5],
        b"\x7fELF\x02",
        "{} is no 64-bit ELF file",
        path.display()
    );
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3
    })
}

/// README's Linux install line links the shim statically, which saves every hook the dynamic
/// loader's work (about 0.3 ms a start, see docs/benchmarks.md). That build must stay
/// possible (no proc-macro crate may enter the shim's dependencies) and answer exactly as
/// the ordinary one does, error paths included.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn a_statically_linked_shim_answers_exactly_like_the_ordinary_one() {
    let (sidecar, _root, repo) = setup();
    let dynamic = shim_exe();
    let fixed = static_shim_exe();
    assert!(has_interpreter(&dynamic), "the ordinary build is dynamic");
    assert!(
        !has_interpreter(&fixed),
        "{} names a program interpreter: not statically linked",
        fixed.display()
    );

    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    for (session, exe) in [("ordinary", &dynamic), ("static", &fixed)] {
        let event = codex_add(session, &repo, rel, ORDER_PRINTER_KT);
        let first = sidecar.hook_with(exe, &event);
        assert_eq!(
            first.stdout, BACKEND_KOTLIN_OUTPUT,
            "{session}: {}",
            first.stderr
        );
        assert_eq!(sidecar.hook_with(exe, &event).stdout, "", "{session}: seen");
    }

    // No sidecar listening: silence, exit 0 and the same diagnostic from both.
    let (_dir, event) = add_event_for("nobody");
    let nowhere = [(
        "ADAPTIVE_GUIDEBOOK_SOCKET",
        OsStr::new("/nonexistent/s.sock"),
    )];
    let ordinary = run_shim_exe(&dynamic, &[], &event, &nowhere);
    let fixed = run_shim_exe(&fixed, &[], &event, &nowhere);
    assert_eq!(
        (fixed.stdout.as_str(), fixed.stderr.as_str()),
        ("", ordinary.stderr.as_str())
    );
    assert!(
        fixed.stderr.contains("/nonexistent/s.sock"),
        "{}",
        fixed.stderr
    );
}

/// A stdin event that would print guidelines if a sidecar answered.
fn add_event_for(session: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let event = codex_add(
        session,
        dir.path(),
        "Main.kt",
        "class Main(val x: Int)\n// TODO: x\n",
    );
    (dir, event.to_string())
}

/// A shim with a short budget and autostart off: it must give up, not start a sidecar.
fn impatient_shim(stdin: &str, socket: &Path) -> ShimRun {
    run_shim(
        stdin,
        &[
            ("ADAPTIVE_GUIDEBOOK_SOCKET", socket.as_os_str()),
            ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", OsStr::new("500")),
            ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", OsStr::new("1")),
        ],
    )
}

#[test]
fn shim_prints_nothing_and_exits_0_when_the_sidecar_never_started_or_was_killed() {
    let (dir, stdin) = add_event_for("down");
    let never = impatient_shim(&stdin, &dir.path().join("no-such.sock"));
    assert_eq!(never.stdout, "");
    assert!(
        never.stderr.contains("cannot reach the sidecar"),
        "{}",
        never.stderr
    );

    // A killed sidecar leaves its socket file behind, with nobody listening.
    let (_root_dir, root) = test_guidebook_dir();
    let mut sidecar = Sidecar::start(&root);
    sidecar.kill();
    assert!(sidecar.socket.exists(), "SIGKILL leaves the socket file");
    let killed = impatient_shim(&stdin, &sidecar.socket);
    assert_eq!(killed.stdout, "");
}

#[test]
fn shim_gives_up_silently_on_a_sidecar_that_accepts_but_never_answers() {
    let (dir, stdin) = add_event_for("hang");
    let socket = dir.path().join("mute.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    // Accepts, reads the request, and holds the connection open without a word.
    let holder = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut sink = Vec::new();
        let _ = conn.read_to_end(&mut sink);
        sink
    });
    let run = impatient_shim(&stdin, &socket);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("did not answer in time") || run.stderr.contains("gave up"),
        "{}",
        run.stderr
    );
    // The shim exited, so its end of the connection closed and the holder sees EOF.
    let request = holder.join().unwrap();
    assert!(String::from_utf8_lossy(&request).contains("\"method\":\"search\""));
}

/// A host's edit event for a session, writing the given line 10.
type EventFor<'a> = Box<dyn Fn(&str, &str) -> Value + 'a>;

/// Whether the shim's output hands the agent [`SLEEP_IN_CHANGES`].
fn shows_sleep(run: &ShimRun) -> bool {
    run.stdout
        .contains("[no-thread-sleep]\\nUse delay() in coroutines")
}

fn assert_valid_output(host: &str, stdout: &str) {
    match host {
        "gemini" => assert_valid_gemini_output(stdout),
        _ if stdout.is_empty() => {}
        _ => assert_valid_hook_output(stdout),
    }
}

/// Line 10 of [`sleepy_jobs`] replaced by `new_line`, as a Codex patch.
fn codex_line_10_patch(new_line: &str) -> String {
    format!(
        "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n val x8 = 8\n val x9 = 9\n-val x10 = 10\n+{new_line}\n val x11 = 11\n*** End Patch\n"
    )
}

/// The shim sends the lines each host's edit wrote: an `in: changes` guideline is shown only
/// when the edit wrote its match, not for the `Thread.sleep(` already on line 3. Without the
/// written lines the sidecar would count the whole (uncommitted) file and show it every time.
#[test]
fn an_in_changes_guideline_follows_the_lines_each_hosts_edit_wrote() {
    let SleepyScene {
        dir: _dir,
        sidecar,
        repo,
        ..
    } = SleepyScene::new();
    let jobs = repo.join("src/Jobs.kt");
    let path = jobs.display().to_string();
    // The control: no written lines, the whole untracked file counts.
    let bare = sidecar.result(
        "search",
        json!({"sessionId": "control", "filepaths": [path]}),
    );
    assert_eq!(bare[0]["id"], "no-thread-sleep", "{bare}");

    let plain = "val ten = 10";
    let sleeping = "val ten = Thread.sleep(10)";
    let after = |line: &str| sleepy_jobs().replace("val x10 = 10", line);
    let cases: [(&str, EventFor); 3] = [
        (
            "codex",
            Box::new(|session: &str, line: &str| {
                codex_patch_event(session, &repo, &codex_line_10_patch(line), &["src/Jobs.kt"])
            }),
        ),
        (
            "claude",
            Box::new(|session: &str, line: &str| {
                claude_edit_event(session, &jobs, &sleepy_jobs(), 10, line)
            }),
        ),
        (
            "gemini",
            Box::new(|session: &str, line: &str| {
                gemini_replace_event(session, &jobs, &sleepy_jobs(), 10, line)
            }),
        ),
    ];
    for (host, event) in &cases {
        std::fs::write(&jobs, after(plain)).unwrap();
        let run = sidecar.hook(&event(&format!("{host}-plain"), plain));
        assert_valid_output(host, &run.stdout);
        assert!(!shows_sleep(&run), "{host}: {} {}", run.stdout, run.stderr);
        std::fs::write(&jobs, after(sleeping)).unwrap();
        let run = sidecar.hook(&event(&format!("{host}-sleeping"), sleeping));
        assert_valid_output(host, &run.stdout);
        assert!(shows_sleep(&run), "{host}: {} {}", run.stdout, run.stderr);
    }
}

/// Where Codex's hook runs before an updated file is on disk (the file still the patch's
/// pre-image), the shim builds the post-image from the patch and the sidecar matches that:
/// `Thread.sleep(` written by the patch is found although the disk does not hold it yet.
#[test]
fn a_codex_patch_not_yet_on_disk_is_matched_on_its_post_image() {
    let SleepyScene {
        dir: _dir,
        sidecar,
        repo,
        ..
    } = SleepyScene::new();
    let jobs = repo.join("src/Jobs.kt");
    let event = |session: &str, line: &str| {
        codex_patch_event(session, &repo, &codex_line_10_patch(line), &["src/Jobs.kt"])
    };
    let run = sidecar.hook(&event("pre-sleeping", "val ten = Thread.sleep(10)"));
    assert!(shows_sleep(&run), "{} {}", run.stdout, run.stderr);
    assert_eq!(
        std::fs::read_to_string(&jobs).unwrap(),
        sleepy_jobs(),
        "the disk is untouched"
    );
    let run = sidecar.hook(&event("pre-plain", "val ten = 10"));
    assert_eq!(run.stdout, "", "{}", run.stderr);
}

/// A Codex `apply_patch` whose hunk cannot be placed for sure never falls back to the whole
/// file (where `git diff HEAD` would count every line, and the `Thread.sleep(` already on line
/// 3 would be shown): in a repository with no commit yet, and in one whose working tree holds
/// earlier uncommitted edits, a hunk whose new side fits two places writes both places, and a
/// patch that cannot be placed at all (the file changed again after it) writes its `+` lines as
/// they stand.
#[test]
fn an_ambiguous_or_unplaceable_codex_hunk_never_falls_back_to_the_whole_file() {
    let SleepyScene {
        dir,
        sidecar,
        repo: dirty,
        ..
    } = SleepyScene::new();
    let fresh = dir.path().join("fresh");
    git_repo(&fresh, Some("git@github.com:acme/fresh.git"));
    write_file(&fresh, "src/Jobs.kt", &sleepy_jobs());
    // The hunk's context (`val y = 0`) and new side occur twice after the patch.
    let twice = |z: &str| {
        format!(
            "{}val y = 0\n{z}\nval w = 9\nval y = 0\n{z}\n",
            sleepy_jobs()
        )
    };
    let patch = |z: &str| {
        format!("*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n val y = 0\n-val z = 0\n+{z}\n*** End Patch\n")
    };
    for repo in [&fresh, &dirty] {
        let name = repo.file_name().unwrap().to_string_lossy().into_owned();
        let jobs = repo.join("src/Jobs.kt");
        for (z, shown) in [("val z = 1", false), ("val z = Thread.sleep(1)", true)] {
            std::fs::write(&jobs, twice(z)).unwrap();
            let session = format!("{name}-twice-{shown}");
            let run = sidecar.hook(&codex_patch_event(
                &session,
                repo,
                &patch(z),
                &["src/Jobs.kt"],
            ));
            assert_valid_output("codex", &run.stdout);
            assert_eq!(
                shows_sleep(&run),
                shown,
                "{name}, {z}: {} {}",
                run.stdout,
                run.stderr
            );
        }
        // Neither the patch's pre-image nor its post-image on disk: a formatter ran after it.
        std::fs::write(&jobs, sleepy_jobs() + "val formatted = true\n").unwrap();
        for (z, shown) in [("val z = 1", false), ("val z = Thread.sleep(1)", true)] {
            let session = format!("{name}-unplaced-{shown}");
            let run = sidecar.hook(&codex_patch_event(
                &session,
                repo,
                &patch(z),
                &["src/Jobs.kt"],
            ));
            assert_valid_output("codex", &run.stdout);
            assert_eq!(
                shows_sleep(&run),
                shown,
                "{name}, {z}: {} {}",
                run.stdout,
                run.stderr
            );
        }
    }
}
