//! Fault injection, each test bounded to a few seconds and stopping by itself: `kill -9` of the
//! sidecar in the middle of a load run, guideline, prompt-pack and flags files rewritten
//! non-atomically while requests run, and the database locked by another process.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

/// One JSON-RPC call that may fail (the sidecar may be dead): `Err` when there was no whole
/// answer. A hang still fails the test: reads are bounded by the harness's watchdog.
fn try_call(socket: &Path, method: &str, params: Value) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut stream = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(WATCHDOG)).unwrap();
    stream.set_write_timeout(Some(WATCHDOG)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let started = Instant::now();
    let read = std::io::Read::read_to_end(&mut stream, &mut raw);
    assert!(
        started.elapsed() < WATCHDOG,
        "{method}: the sidecar hung instead of answering or closing"
    );
    read.map_err(|e| e.to_string())?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no complete HTTP head")?;
    let text = String::from_utf8_lossy(&raw[split + 4..]);
    // The sidecar answers with Content-Length; a cut-off body does not parse.
    let start = text.find('{').ok_or("no body")?;
    serde_json::from_str(&text[start..]).map_err(|e| e.to_string())
}

fn write_config(dir: &Path, text: &str) -> (String, String) {
    let config = dir.join("config.yaml");
    std::fs::write(&config, text).unwrap();
    (
        "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
        config.display().to_string(),
    )
}

/// A repository whose three files match all five guidelines of [`test_guidebook`].
fn matching_files(dir: &Path) -> Vec<PathBuf> {
    let repo = dir.join("backend-order");
    git_repo(&repo, Some("git@github.com:acme/backend-order.git"));
    vec![
        write_file(
            &repo,
            "src/Main.kt",
            "class Main(val id: String) {\n    fun f() = println(id) // TODO: t\n}\n",
        ),
        write_file(
            &repo,
            "src/Inject.java",
            "class Inject { @Autowired Foo foo; }\n",
        ),
        write_file(&repo, "tools/gen.py", "n: int = 1\n"),
    ]
}

const ALL_FIVE: [&str; 5] = [
    "backend-logging",
    "java-field-injection",
    "kotlin-data-classes",
    "python-typed-fields",
    "todo-needs-ticket",
];

/// The ids in a shim's `additionalContext` (`[id]` lines).
fn ids_in_hook_output(stdout: &str) -> Vec<String> {
    if stdout.is_empty() {
        return vec![];
    }
    let value: Value = serde_json::from_str(stdout).unwrap();
    let text = value["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("");
    text.lines()
        .filter_map(|l| l.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
        .collect()
}

/// What the load threads saw acknowledged before, during and after the crash.
#[derive(Default)]
struct Acknowledged {
    /// Session → guideline ids it was shown (by a shim's output or a `search` answer).
    shown: HashMap<String, Vec<String>>,
    /// Breaker session → the highest `totalErrors` an answer reported, and how many calls were
    /// sent in all.
    breaker: HashMap<String, (u64, u64)>,
    /// Shim runs that started after the kill and ended before the restart.
    shims_in_gap: usize,
    shim_runs: usize,
    /// Calls of each kind (shim, search, `recordError`) that began after the restart began and
    /// were answered.
    after_restart: [usize; 3],
    /// The long-lived sessions answered by a search that began after the restart began.
    repeats_after_restart: BTreeSet<String>,
}

/// `kill -9` in the middle of a load of shims, searches and `recordError` calls, then a restart
/// on the same home: the database is intact, no guideline was presented twice in a session,
/// every acknowledged presentation and breaker count survived, a halted session is still halted,
/// and every shim that hit the gap printed nothing and exited 0.
///
/// Each phase lasts until the load has done what the phase is for (bounded by the watchdog),
/// not for a fixed time: a busy machine only makes the phases longer.
#[test]
fn a_kill_9_under_load_loses_no_acknowledged_write_and_presents_nothing_twice() {
    // Built before the clock starts: the first call may run cargo.
    shim_exe();
    let (dir, root) = test_guidebook_dir();
    // High totals, so that the load's one-error runs never halt their sessions by count.
    let config = write_config(
        dir.path(),
        "breaker:\n  warningLimit: 100000\n  criticalLimit: 200000\n",
    );
    let mut sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![config],
        ..SidecarOptions::default()
    });
    let files = matching_files(dir.path());
    let file_refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let filepaths = paths(&file_refs);

    // Before the load: a halted session and a session that has seen everything.
    let key = json!({"tool": "ruff", "code": "F401", "file": "/src/a.py"});
    for _ in 0..3 {
        sidecar.result(
            "recordError",
            json!({"sessionId": "halted", "errors": [key]}),
        );
    }
    let halted_before = sidecar.result("breakerStatus", json!({"sessionId": "halted"}));
    assert_eq!(halted_before["state"], "halt");
    assert_eq!(sidecar.search_ids("seen-all", &file_refs), ALL_FIVE);

    let socket = sidecar.socket.clone();
    let stop = Arc::new(AtomicBool::new(false));
    // 0 = up until the kill, 1 = killed and reaped, 2 = restarting or restarted. A shim run
    // that begins and ends in phase 1 ran while no sidecar existed: the old one was reaped
    // before the phase began, the new one is spawned only after it ended (it answers while
    // still starting, before `start_again` returns).
    let phase = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let patch = add_file_patch(
        &filepaths
            .iter()
            .map(|p| (p.as_str(), "x"))
            .collect::<Vec<_>>(),
    );
    let mut threads = Vec::new();

    // Two threads of real shims, each run a new session, autostart off so the gap stays a gap.
    for t in 0..2 {
        let (socket, stop, phase, acked) =
            (socket.clone(), stop.clone(), phase.clone(), acked.clone());
        let (patch, cwd) = (patch.clone(), dir.path().to_path_buf());
        threads.push(std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let session = format!("shim-{t}-{i}");
                let mut event = hook_event("post_tool_use_apply_patch_add.json", &session, &cwd);
                event["tool_input"]["command"] = json!(patch);
                event["tool_response"] = json!(apply_patch_response(&[]));
                let before = phase.load(Ordering::SeqCst);
                // `run_shim` fails the test unless the shim exited 0 with empty or valid output.
                let run = run_shim(
                    &event.to_string(),
                    &[
                        ("ADAPTIVE_GUIDEBOOK_SOCKET", socket.as_os_str()),
                        ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", OsStr::new("3000")),
                    ],
                );
                let after = phase.load(Ordering::SeqCst);
                let ids = ids_in_hook_output(&run.stdout);
                let mut acked = acked.lock().unwrap();
                acked.shim_runs += 1;
                if before == 2 {
                    acked.after_restart[0] += 1;
                }
                if before == 1 && after == 1 {
                    acked.shims_in_gap += 1;
                    assert_eq!(run.stdout, "", "a shim printed while no sidecar ran");
                }
                if !ids.is_empty() {
                    acked.shown.insert(session, ids);
                }
                i += 1;
            }
        }));
    }
    // Two threads of direct searches: a new session each time, and one long-lived session each
    // that is searched again and again (it must never get a guideline twice).
    for t in 0..2 {
        let (socket, stop, phase, acked, filepaths) = (
            socket.clone(),
            stop.clone(),
            phase.clone(),
            acked.clone(),
            filepaths.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                for session in [format!("direct-{t}-{i}"), format!("repeat-{t}")] {
                    let before = phase.load(Ordering::SeqCst);
                    let answer = try_call(
                        &socket,
                        "search",
                        json!({"sessionId": session, "filepaths": filepaths}),
                    );
                    match answer {
                        Ok(_) if before == 2 => {
                            let mut acked = acked.lock().unwrap();
                            acked.after_restart[1] += 1;
                            if session.starts_with("repeat-") {
                                acked.repeats_after_restart.insert(session.clone());
                            }
                        }
                        Ok(_) => {}
                        // No sidecar: no need to spin on the cores the others need.
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                    if let Ok(response) = answer {
                        assert!(response.get("error").is_none(), "{response}");
                        let mut acked = acked.lock().unwrap();
                        let shown = acked.shown.entry(session.clone()).or_default();
                        for id in ids(&response["result"]) {
                            assert!(
                                !shown.contains(&id),
                                "{id} presented twice in session {session}"
                            );
                            shown.push(id);
                        }
                    }
                }
                i += 1;
            }
        }));
    }
    // Two threads recording one new error key per call in their own session.
    for t in 0..2 {
        let (socket, stop, phase, acked) =
            (socket.clone(), stop.clone(), phase.clone(), acked.clone());
        threads.push(std::thread::spawn(move || {
            let session = format!("count-{t}");
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let error = json!({"tool": "ruff", "code": format!("E{sent}"), "file": "/a.py"});
                sent += 1;
                let before = phase.load(Ordering::SeqCst);
                let answer = try_call(
                    &socket,
                    "recordError",
                    json!({"sessionId": session, "errors": [error]}),
                );
                if answer.is_err() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let mut acked = acked.lock().unwrap();
                if before == 2 && answer.is_ok() {
                    acked.after_restart[2] += 1;
                }
                let entry = acked.breaker.entry(session.clone()).or_default();
                entry.1 = sent;
                if let Ok(response) = answer {
                    let total = response["result"]["totalErrors"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("{response}"));
                    entry.0 = entry.0.max(total);
                }
            }
        }));
    }

    // Each phase ends once the load has done what the phase is for.
    let wait_for = |what: &str, done: &dyn Fn(&Acknowledged) -> bool| {
        let started = Instant::now();
        while !done(&acked.lock().unwrap()) {
            assert!(
                started.elapsed() < WATCHDOG,
                "not within {WATCHDOG:?}: {what}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    // Up: both long-lived sessions were shown everything, and every kind of call was answered.
    wait_for("the load before the kill", &|a| {
        a.shim_runs >= 2
            && (0..2).all(|t| {
                a.shown
                    .get(&format!("repeat-{t}"))
                    .is_some_and(|s| s.len() == 5)
            })
            && a.breaker.len() == 2
            && a.breaker.values().all(|(total, _)| *total > 0)
    });
    sidecar.kill();
    phase.store(1, Ordering::SeqCst);
    // Down: until a shim ran from start to end with no sidecar at all.
    wait_for("a shim run while the sidecar was down", &|a| {
        a.shims_in_gap > 0
    });
    phase.store(2, Ordering::SeqCst);
    sidecar.start_again();
    // Up again: every kind of call answered anew, and both long-lived sessions searched again
    // (each search asserts that nothing it was shown before the crash comes back).
    wait_for("the load after the restart", &|a| {
        a.after_restart.iter().all(|n| *n >= 2) && a.repeats_after_restart.len() == 2
    });
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a load thread failed");
    }
    let acked = Arc::try_unwrap(acked).ok().unwrap().into_inner().unwrap();
    eprintln!(
        "{} shim runs, {} of them in the gap; {} sessions shown guidelines",
        acked.shim_runs,
        acked.shims_in_gap,
        acked.shown.len()
    );
    assert!(
        acked.shims_in_gap > 0,
        "no shim ran while the sidecar was down"
    );

    let db = rusqlite::Connection::open(&sidecar.db).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    // Nothing presented twice: the table's key forbids two rows of one (session, guideline), so
    // counting them proves nothing. What proves it is above: each long-lived session was shown
    // everything before the kill and searched again after the restart, and every answer was
    // checked against what the session had been shown.

    // Every acknowledged presentation survived the crash, so none comes back in its session.
    let mut stored = db
        .prepare("SELECT session_id, guideline_id FROM presentation")
        .unwrap();
    let stored: BTreeSet<(String, String)> = stored
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (session, shown) in &acked.shown {
        for id in shown {
            assert!(
                stored.contains(&(session.clone(), id.clone())),
                "{session}/{id} was acknowledged but is not stored"
            );
        }
        let again = sidecar.search_ids(session, &file_refs);
        assert!(
            again.iter().all(|id| !shown.contains(id)),
            "{session} was shown {again:?} again"
        );
    }
    assert_eq!(
        sidecar.search_ids("seen-all", &file_refs),
        Vec::<String>::new()
    );

    // Breaker state: the halt is intact, and each session counts every acknowledged run (and
    // no more runs than were sent; the one in flight at the kill may or may not count).
    assert_eq!(
        sidecar.result("breakerStatus", json!({"sessionId": "halted"})),
        halted_before
    );
    for (session, (acknowledged, sent)) in &acked.breaker {
        let status = sidecar.result("breakerStatus", json!({"sessionId": session}));
        let total = status["totalErrors"].as_u64().unwrap();
        assert!(
            *acknowledged <= total && total <= *sent,
            "{session}: {acknowledged} acknowledged, {sent} sent, {total} stored"
        );
        assert_eq!(status["state"], "continue", "{status}");
    }
}

/// One way to break a file without going through a rename.
#[derive(Debug, Clone, Copy)]
enum Breakage {
    Truncated,
    HalfWritten,
    Directory,
}

const BREAKAGES: [Breakage; 3] = [
    Breakage::Truncated,
    Breakage::HalfWritten,
    Breakage::Directory,
];

/// Breaks `path` (whose good content is `good`) in place, the way a non-atomic writer or a
/// confused tool leaves it.
fn break_file(path: &Path, good: &str, how: Breakage) {
    match how {
        Breakage::Truncated => std::fs::write(path, "").unwrap(),
        Breakage::HalfWritten => std::fs::write(path, &good[..good.len() / 2]).unwrap(),
        Breakage::Directory => {
            let aside = swap_path(path);
            std::fs::create_dir(&aside).unwrap();
            exchange(path, &aside);
        }
    }
}

/// Puts the good content back, whatever state `path` is in.
fn restore_file(path: &Path, good: &str) {
    if path.is_dir() {
        let aside = swap_path(path);
        exchange(path, &aside);
        std::fs::remove_dir(&aside).unwrap();
    }
    std::fs::write(path, good).unwrap();
}

/// Where a file waits while a directory takes its place: a name no loader picks up.
fn swap_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".swapped");
    path.with_file_name(name)
}

/// Swaps two paths in one step (`renameat2(RENAME_EXCHANGE)`), so that the file is never
/// missing: a missing file is a deletion, which the loaders rightly treat as one.
fn exchange(a: &Path, b: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two valid NUL-terminated paths.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
}

/// The files the rewrite test breaks, with their good content.
struct Watched {
    guideline: (PathBuf, String),
    pack: (PathBuf, String),
    flags: (PathBuf, String),
}

const PACK_MARKER: &str = "MARKER-last-good-pack";
const GUIDELINE_MARKER: &str = "MARKER-last-good-guideline";

/// Every answer the readers get must come from the good versions: the guideline with its
/// content, the pack with its marker, the flag on.
fn assert_last_good(socket: &Path, session: &str, file: &str) {
    if let Some(problem) = last_good_problem(socket, session, file) {
        panic!("{problem}");
    }
}

/// What in the answers is not from the good versions, if anything (a request that fails
/// panics: that is never acceptable).
fn last_good_problem(socket: &Path, session: &str, file: &str) -> Option<String> {
    let search = try_call(
        socket,
        "search",
        json!({"sessionId": session, "filepaths": [file]}),
    )
    .expect("search answered");
    assert!(search.get("error").is_none(), "{search}");
    if search["result"] != json!([{"id": "faulty", "content": format!("{GUIDELINE_MARKER}\n")}]) {
        return Some(format!(
            "search did not answer from the last good guideline: {search}"
        ));
    }
    let prompt = try_call(
        socket,
        "buildPrompt",
        json!({"task": "Fix it.", "role": "default"}),
    )
    .expect("buildPrompt answered");
    if !prompt["result"]["prompt"]
        .as_str()
        .is_some_and(|p| p.contains(PACK_MARKER))
    {
        let text = prompt.to_string();
        return Some(format!(
            "buildPrompt did not answer from the last good pack: {}",
            &text[..300.min(text.len())]
        ));
    }
    let flags = try_call(socket, "getFlags", json!({})).expect("getFlags answered");
    if flags["result"]["flags"]["hooks_enabled"]["enabled"] != true {
        return Some(format!("getFlags is not the last good flags: {flags}"));
    }
    let enabled = try_call(socket, "isEnabled", json!({"flag": "hooks_enabled"}))
        .expect("isEnabled answered");
    if enabled["result"] != true {
        return Some(format!(
            "isEnabled is not from the last good flags: {enabled}"
        ));
    }
    None
}

/// Guideline, prompt-pack and flags files truncated, half-written and replaced by a directory
/// while three clients keep asking: no request fails and every answer comes from the last good
/// versions. Then each breakage alone: `status` reports it while it lasts, and the repair is
/// picked up without a restart.
#[test]
fn non_atomic_rewrites_of_every_watched_file_never_fail_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let guideline_text = format!(
        "id: faulty\nmatch:\n  any:\n    - regex:\n        pattern: 'FAULT-LINE'\n\
         content: |\n  {GUIDELINE_MARKER}\n"
    );
    let guideline = write_guideline(&root, "faulty", &guideline_text);
    let sample = std::fs::read_to_string(manifest_dir().join("guidebook/prompts/default.yaml"))
        .unwrap()
        .replace(
            "You are a senior backend engineer",
            &format!("You are {PACK_MARKER}, a senior backend engineer"),
        );
    let pack = write_file(&root, "prompts/default.yaml", &sample);
    let flags_text =
        r#"{"flags": {"hooks_enabled": {"enabled": true, "description": "on", "owner": "dx"}}}"#
            .to_string();
    let flags = dir.path().join("feature_flags.json");
    std::fs::write(&flags, &flags_text).unwrap();
    // The premise: half of each file is not a valid file (a half that parsed would be a new
    // good version, not a broken one).
    let half = |s: &str| s[..s.len() / 2].to_string();
    assert!(
        adaptive_guidebook::guidebook::parse_guideline(&guideline, &half(&guideline_text)).is_err()
    );
    assert!(adaptive_guidebook::prompt::parse_pack(&pack, "default", &half(&sample)).is_err());
    assert!(adaptive_guidebook::flags::file::parse(half(&flags_text).as_bytes()).is_err());

    let config = write_config(dir.path(), "reloadIntervalMs: 50\n");
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root.clone()),
        env: vec![
            config,
            (
                "ADAPTIVE_GUIDEBOOK_FLAGS".into(),
                flags.display().to_string(),
            ),
        ],
        ..SidecarOptions::default()
    });
    let changed = write_file(dir.path(), "work/notes.txt", "FAULT-LINE here\n");
    let changed = changed.display().to_string();
    assert_last_good(&sidecar.socket, "warm", &changed);
    let watched = Watched {
        guideline: (guideline, guideline_text),
        pack: (pack, sample),
        flags: (flags, flags_text),
    };

    // Phase 1: a writer breaks and repairs the three files as fast as the readers ask.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let (socket, stop, answered, changed) = (
                sidecar.socket.clone(),
                stop.clone(),
                answered.clone(),
                changed.clone(),
            );
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    assert_last_good(&socket, &format!("r{t}-{i}"), &changed);
                    answered.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    let files = [&watched.guideline, &watched.pack, &watched.flags];
    // At least 2 s and two rounds of every breakage, and until the readers have answered 20
    // rounds: a busy machine makes the phase longer, never thinner.
    let started = Instant::now();
    let mut breakages = 0;
    while started.elapsed() < Duration::from_millis(2000)
        || breakages < 2 * BREAKAGES.len() * files.len()
        || answered.load(Ordering::Relaxed) < 20
    {
        assert!(
            started.elapsed() < WATCHDOG,
            "the readers barely ran: {} rounds in {WATCHDOG:?}",
            answered.load(Ordering::Relaxed)
        );
        for how in BREAKAGES {
            for (path, good) in files {
                break_file(path, good, how);
                // Long enough that a reload (every 50 ms) or a request's `stat` sees it.
                std::thread::sleep(Duration::from_millis(60));
                restore_file(path, good);
                breakages += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("a reader saw a failure or a stale answer");
    }
    let answered = answered.load(Ordering::Relaxed);
    eprintln!("{breakages} breakages, {answered} rounds of answers");

    // Phase 2: each breakage alone is reported by `status` and its repair is picked up.
    for how in BREAKAGES {
        for (path, good) in files {
            let shown = path.display().to_string();
            break_file(path, good, how);
            let is_flags = *path == watched.flags.0;
            sidecar.wait_for_status(&format!("{how:?} {shown} reported"), |s| {
                if is_flags {
                    s["flags"]["error"]
                        .as_str()
                        .is_some_and(|e| e.contains(&shown))
                } else {
                    s["guidebook"]["errors"]
                        .as_array()
                        .is_some_and(|e| e.iter().any(|e| e["path"] == shown.as_str()))
                }
            });
            assert_last_good(&sidecar.socket, &format!("{how:?}-{shown}"), &changed);
            restore_file(path, good);
            // A rewrite within the file system's timestamp granularity must be seen too.
            sidecar.wait_for_status(&format!("{how:?} {shown} repaired"), |s| {
                s["flags"]["error"].is_null()
                    && s["guidebook"]["errors"]
                        .as_array()
                        .is_some_and(Vec::is_empty)
            });
        }
    }
    assert_last_good(&sidecar.socket, "after", &changed);

    // Phase 3: deleted. By the contract that is not a broken file but a withdrawn one (a deleted
    // guideline is gone, a deleted pack falls back to the embedded default, a deleted flags file
    // turns every flag off), so the answers may change; but no request fails, and putting the
    // file back restores the last good answers.
    for (path, good) in files {
        let shown = path.display().to_string();
        std::fs::remove_file(path).unwrap();
        // Past a reload (every 50 ms) and a request's `stat`.
        std::thread::sleep(Duration::from_millis(150));
        for (method, params) in [
            (
                "search",
                json!({"sessionId": format!("deleted-{shown}"), "filepaths": [changed]}),
            ),
            (
                "buildPrompt",
                json!({"task": "t", "disclosurePhase": "summary"}),
            ),
            ("getFlags", json!({})),
            ("status", json!({})),
        ] {
            let answer = try_call(&sidecar.socket, method, params)
                .unwrap_or_else(|e| panic!("{method} with {shown} deleted: {e}"));
            assert!(
                answer.get("error").is_none() && answer.get("result").is_some(),
                "{method} with {shown} deleted: {answer}"
            );
        }
        restore_file(path, good);
        // The file is back: the next reloads serve it again (a fresh session per attempt, since
        // a session is shown a guideline once).
        let started = Instant::now();
        let mut attempt = 0;
        while let Some(problem) = last_good_problem(
            &sidecar.socket,
            &format!("restored-{shown}-{attempt}"),
            &changed,
        ) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{shown} restored but not served again: {problem}"
            );
            std::thread::sleep(Duration::from_millis(20));
            attempt += 1;
        }
    }
}

/// Another process holds the database's write lock until the test lets go, while requests
/// arrive: a search with a 500 ms deadline fails with -32001 and records nothing, a shim gives
/// up silently within its own timeout, and `status` answers, all while the lock is still held;
/// a search and a `recordError` without a deadline wait, and succeed once the lock is gone.
///
/// No bound on elapsed time: the sidecar's busy timeout is set far beyond any client's patience
/// here (the harness's watchdog), so a call that waited for the lock would still be waiting when
/// the test asserts that it has answered. What answered before the lock was released did not
/// wait for it, however busy the machine.
#[test]
fn a_database_locked_by_another_process_delays_or_fails_requests_but_never_hangs_them() {
    shim_exe();
    let (dir, root) = test_guidebook_dir();
    let config = write_config(
        dir.path(),
        &format!("busyTimeoutMs: {}\n", 3 * WATCHDOG.as_millis()),
    );
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![config],
        ..SidecarOptions::default()
    });
    let files = matching_files(dir.path());
    let file_refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let filepaths = paths(&file_refs);

    // The holder lets go when its stdin reaches its end: when the test drops `release`, or
    // when a failing test drops the child.
    let script = "import sqlite3, sys\n\
        c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
        c.execute('BEGIN EXCLUSIVE')\n\
        print('locked', flush=True)\n\
        sys.stdin.read()\n\
        c.execute('ROLLBACK')\n";
    let mut holder = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&sidecar.db)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let release = holder.stdin.take().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");

    let timed = |method: &'static str, params: Value| {
        let socket = sidecar.socket.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let answer = try_call(&socket, method, params).expect("an answer");
            (started.elapsed(), answer)
        })
    };
    let patient = timed(
        "search",
        json!({"sessionId": "patient", "filepaths": filepaths}),
    );
    let counted = timed(
        "recordError",
        json!({"sessionId": "patient", "errors": [{"tool": "ruff", "code": "F401", "file": "/a.py"}]}),
    );
    let hurried = timed(
        "search",
        json!({"sessionId": "hurried", "filepaths": filepaths, "deadlineMs": 500}),
    );
    let status = timed("status", json!({}));

    // The shim: its own 800 ms budget, silence and exit 0 (checked by `run_shim`, which fails
    // the test if the shim outlives the watchdog, as one waiting for the lock would).
    let patch = add_file_patch(
        &filepaths
            .iter()
            .map(|p| (p.as_str(), "x"))
            .collect::<Vec<_>>(),
    );
    let mut event = hook_event("post_tool_use_apply_patch_add.json", "shim", dir.path());
    event["tool_input"]["command"] = json!(patch);
    let shim = run_shim(
        &event.to_string(),
        &[
            ("ADAPTIVE_GUIDEBOOK_SOCKET", sidecar.socket.as_os_str()),
            ("ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS", OsStr::new("800")),
        ],
    );
    assert_eq!(
        shim.stdout, "",
        "the shim printed while the database was locked"
    );

    // `try_call` fails the test if no answer comes within the watchdog, and the lock is held
    // until after these answers: they did not wait for it.
    let (_, answer) = status.join().unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    let (took, answer) = hurried.join().unwrap();
    assert_eq!(
        rpc_error(&answer),
        (-32001, "deadline exceeded".to_string())
    );
    assert!(
        took >= Duration::from_millis(500),
        "a 500 ms deadline answered after {took:?}"
    );
    // Everything above happened while the lock was held, and the writes are still waiting.
    assert!(
        holder.try_wait().unwrap().is_none(),
        "the lock holder let go early"
    );
    assert!(
        !patient.is_finished() && !counted.is_finished(),
        "a write answered while another process held the lock"
    );

    drop(release);
    for (what, thread) in [("search", patient), ("recordError", counted)] {
        let (_, answer) = thread.join().unwrap();
        assert!(answer.get("error").is_none(), "{what}: {answer}");
    }
    let status = wait_bounded(&mut holder, WATCHDOG, "the lock holder");
    assert!(status.success());

    // The patient search recorded what it returned; the hurried one recorded nothing.
    assert_eq!(
        sidecar.search_ids("patient", &file_refs),
        Vec::<String>::new()
    );
    assert_eq!(sidecar.search_ids("hurried", &file_refs), ALL_FIVE);
    assert_eq!(
        sidecar.result("breakerStatus", json!({"sessionId": "patient"}))["totalErrors"],
        1
    );
}
