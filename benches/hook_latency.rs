//! End-to-end hook latency, measured side by side in one run: spawning `guidebook-hook` with a
//! Codex `apply_patch` event until its output is printed (warm sidecar), the same search done
//! by a cold one-shot process (`guidebook search`: load, compile, open SQLite, read, record),
//! a JSON-RPC round trip to the warm sidecar from an already running process, and the floor
//! (spawning `/bin/true`). Workload: 1,000 guidelines of 1–3 regexes, 10 Kotlin files of
//! ~20 KB. Prints medians, p99s and ratios; writes them to target/bench-results/.
//!
//! Run with `benches/hook-latency.sh` (builds the release binaries first). With
//! `HOOK_BENCH_BASELINE=DIR`, a directory holding `guidebook` and `guidebook-hook` of another
//! build (say, the `main` before a change), that build's hook and search run interleaved with
//! this one's, each against its own sidecar, and the ratios compare the two. With
//! `HOOK_BENCH_RECORDING_OFF=1` instead, the compared series is this build with metrics
//! recording off (`ADAPTIVE_GUIDEBOOK_RECORD_METRICS=0`): what recording costs a hook. With
//! `HOOK_BENCH_STATIC_SHIM=PATH`, a statically linked `guidebook-hook` (README's Linux install
//! line; `hook-latency.sh` builds one) runs interleaved against this build's sidecar too.
//! `HOOK_BENCH_PAUSE_MS=N` sleeps N ms before each search round trip (and the baseline's), as
//! an agent's edits come seconds apart: the cores have gone idle when the search arrives.
//! Without it, a round trip follows the previous series within about a millisecond.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`; anything else in the argument list is ignored.
    let runs: usize = std::env::var("HOOK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let cold_runs: usize = std::env::var("HOOK_BENCH_COLD_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let _ = args;

    let guidebook = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    let shim = guidebook.parent().unwrap().join("guidebook-hook");
    if !shim.exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "-p", "guidebook-hook"])
            .status()
            .unwrap();
        assert!(status.success(), "building guidebook-hook failed");
    }

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let root = dir.path().join("guidebook");
    let repo = dir.path().join("repo");
    common::write_guidebook(&root, 1000, 7);
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let files = common::write_kotlin_files(&repo.join("src"), 10, 20_000, 1000, 11);
    let socket = home.join("sidecar.sock");

    let daemon = common::BenchSidecar::start(&guidebook, &home, &root);
    let recording_off = std::env::var_os("HOOK_BENCH_RECORDING_OFF").is_some_and(|v| v == "1");
    let baseline = if recording_off {
        let home = home.with_file_name("home-recording-off");
        let daemon = common::BenchSidecar::start_with_env(
            &guidebook,
            &home,
            &root,
            &[("ADAPTIVE_GUIDEBOOK_RECORD_METRICS", "0")],
        );
        Some((shim.clone(), home.join("sidecar.sock"), daemon))
    } else {
        std::env::var_os("HOOK_BENCH_BASELINE").map(|dir| {
            let dir = PathBuf::from(dir);
            // A home of its own, beside this build's.
            let home = home.with_file_name("home-baseline");
            let daemon = common::BenchSidecar::start(&dir.join("guidebook"), &home, &root);
            (
                dir.join("guidebook-hook"),
                home.join("sidecar.sock"),
                daemon,
            )
        })
    };
    let compared_name = if recording_off {
        "recording off"
    } else {
        "baseline build"
    };

    // With `BENCH_MATCH_IN=changes`, each file's hunk is real: three lines of the file, the
    // middle one written (the file's first line that the corpus meant to hit a guideline), so
    // the shim finds the written line and sends it. Otherwise a hunk the shim cannot place, as
    // before.
    let mut written = serde_json::Map::new();
    let patch: String = files
        .iter()
        .map(|f| {
            if common::match_in_changes() {
                let text = std::fs::read_to_string(f).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                let hit =
                    |l: &&str| l.contains("val hit") || l.contains("Client") && l.contains(".get(");
                let at = (1..lines.len() - 1)
                    .find(|&i| hit(&lines[i]))
                    .unwrap_or(lines.len() / 2);
                written.insert(
                    f.display().to_string(),
                    serde_json::json!([[at + 1, at + 1]]),
                );
                format!(
                    "*** Update File: {}\n@@\n {}\n+{}\n {}\n",
                    f.display(),
                    lines[at - 1],
                    lines[at],
                    lines[at + 1]
                )
            } else {
                format!("*** Update File: {}\n@@\n-a\n+b\n", f.display())
            }
        })
        .collect();
    // The round trip sends what the shim would: the written lines, when there are any.
    let written = (!written.is_empty()).then_some(serde_json::Value::Object(written));
    let event = |session: &str| {
        serde_json::json!({
            "session_id": session, "turn_id": "t", "transcript_path": null,
            "cwd": repo.display().to_string(), "hook_event_name": "PostToolUse",
            "model": "gpt-5.1-codex", "permission_mode": "default", "tool_name": "apply_patch",
            "tool_input": {"command": format!("*** Begin Patch\n{patch}*** End Patch\n")},
            "tool_response": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n",
            "tool_use_id": "call_1"
        })
        .to_string()
    };
    let spawn_timed = common::spawn_timed;
    // `max_tokens` "2000" is the shim's default budget; "0" sends none.
    let hook_with = |session: &str, max_tokens: &str| {
        spawn_timed(
            Command::new(&shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", &socket)
                .env("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", max_tokens),
            event(session).as_bytes(),
        )
    };
    let hook = |session: &str| hook_with(session, "2000");
    let static_shim = std::env::var_os("HOOK_BENCH_STATIC_SHIM").map(PathBuf::from);
    let static_hook = |session: &str| {
        let shim = static_shim.as_ref().expect("a static shim");
        spawn_timed(
            Command::new(shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", &socket)
                .env("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", "2000"),
            event(session).as_bytes(),
        )
    };
    let cold = |session: &str| {
        let mut cmd = Command::new(&guidebook);
        cmd.arg("search")
            .arg("--session")
            .arg(session)
            .args(&files)
            .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
            .env("ADAPTIVE_GUIDEBOOK_ROOT", &root)
            .env("RUST_LOG", "error");
        spawn_timed(&mut cmd, b"")
    };
    let floor = || spawn_timed(&mut Command::new("/bin/true"), b"");
    let rpc = |session: &str| rpc_round_trip(&socket, session, &files, written.as_ref());
    let base_hook = |session: &str| {
        let (shim, socket, _) = baseline.as_ref().expect("a baseline");
        spawn_timed(
            Command::new(shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
                .env("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", "2000"),
            event(session).as_bytes(),
        )
    };
    let base_rpc = |session: &str| {
        let (_, socket, _) = baseline.as_ref().expect("a baseline");
        rpc_round_trip(socket, session, &files, written.as_ref())
    };
    if baseline.is_some() {
        let (_, out) = base_hook("warmup-base");
        let (_, ours) = hook("warmup-compare");
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&ours),
            "the baseline's hook prints something else"
        );
    }

    if static_shim.is_some() {
        let (_, out) = static_hook("warmup-static");
        let (_, ours) = hook("warmup-dynamic");
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&ours),
            "the static shim prints something else"
        );
    }
    // Warm-up, and a check that every path really does the work.
    let (_, out) = hook("warmup");
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("additionalContext"),
        "the hook printed no guidelines: {text}"
    );
    let shown = text.matches("\\n\\n[g").count();
    let (_, out) = cold("warmup-cold");
    assert!(
        String::from_utf8_lossy(&out).contains("\"id\""),
        "the cold search found nothing"
    );
    for i in 0..20 {
        hook(&format!("w{i}"));
        floor();
    }

    let (mut t_hook, mut t_floor, mut t_rpc, mut t_cold) = (vec![], vec![], vec![], vec![]);
    let mut t_hook_unbudgeted = vec![];
    let (mut t_base_hook, mut t_base_rpc) = (vec![], vec![]);
    let mut t_static_hook = vec![];
    let pause = Duration::from_millis(common::env_or("HOOK_BENCH_PAUSE_MS", 0));
    // CPU time beside wall time: each warm hook's shim (its children's rusage), and each
    // sidecar's over the whole loop (all its threads: what a feature's own thread costs too).
    let (mut cpu_hook, mut cpu_base_hook) = (vec![], vec![]);
    let daemon_cpu_before = daemon.cpu();
    let base_cpu_before = baseline.as_ref().and_then(|(_, _, d)| d.cpu());
    let timed_cpu = |cpu: &mut Vec<f64>, f: &dyn Fn() -> Duration| {
        let before = common::children_cpu();
        let wall = f();
        cpu.push(ms(common::children_cpu() - before));
        ms(wall)
    };
    // Interleaved, so that whatever else the machine does affects every series alike.
    for i in 0..runs {
        // A new session each time: every hook really presents its guidelines.
        t_hook.push(timed_cpu(&mut cpu_hook, &|| hook(&format!("h{i}")).0));
        t_hook_unbudgeted.push(ms(hook_with(&format!("u{i}"), "0").0));
        t_floor.push(ms(floor().0));
        std::thread::sleep(pause);
        t_rpc.push(ms(rpc(&format!("r{i}"))));
        if static_shim.is_some() {
            t_static_hook.push(ms(static_hook(&format!("s{i}")).0));
        }
        if baseline.is_some() {
            t_base_hook.push(timed_cpu(&mut cpu_base_hook, &|| {
                base_hook(&format!("bh{i}")).0
            }));
            std::thread::sleep(pause);
            t_base_rpc.push(ms(base_rpc(&format!("br{i}"))));
        }
        if i % (runs / cold_runs.max(1)).max(1) == 0 && t_cold.len() < cold_runs {
            t_cold.push(ms(cold(&format!("c{i}")).0));
        }
    }
    // Per search the sidecar answered in the loop: three per round here, two for the baseline.
    let per_search = |before: Option<Duration>, after: Option<Duration>, searches: usize| {
        Some(ms(after? - before?) / searches.max(1) as f64)
    };
    let daemon_cpu = per_search(daemon_cpu_before, daemon.cpu(), 3 * runs);
    let base_cpu = baseline
        .as_ref()
        .and_then(|(_, _, d)| per_search(base_cpu_before, d.cpu(), 2 * runs));
    // Peak resident memory of the sidecar over the whole run (Linux only).
    let peak_rss_kib = daemon.peak_rss_kib();
    drop(daemon);

    let row = |name: &str, s: &mut Vec<f64>| {
        let med = common::percentile(s, 0.5);
        let p99 = common::percentile(s, 0.99);
        println!("{name:<44} {:>5}  {med:>9.3}  {p99:>9.3}", s.len());
        (med, p99)
    };
    println!("workload: 1000 guidelines (1-3 regexes each), 10 Kotlin files x ~20 KB, {shown} guidelines shown per hook");
    if !pause.is_zero() {
        println!(
            "each search round trip after a {} ms pause",
            pause.as_millis()
        );
    }
    println!(
        "{:<44} {:>5}  {:>9}  {:>9}",
        "series (ms)", "n", "median", "p99"
    );
    let floor_m = row("floor: spawn /bin/true", &mut t_floor);
    let rpc_m = row("sidecar search, JSON-RPC round trip", &mut t_rpc);
    let hook_m = row("hook: spawn guidebook-hook -> output (warm)", &mut t_hook);
    let unbudgeted_m = row(
        "hook without a token budget (MAX_TOKENS=0)",
        &mut t_hook_unbudgeted,
    );
    let static_m = (!t_static_hook.is_empty())
        .then(|| row("hook, statically linked shim", &mut t_static_hook));
    let cold_m = row("cold one-shot: guidebook search", &mut t_cold);
    println!(
        "ratios (medians): hook/floor {:.2}x, hook/unbudgeted {:.3}x, cold/hook {:.1}x, hook - floor = {:.3} ms",
        hook_m.0 / floor_m.0,
        hook_m.0 / unbudgeted_m.0,
        cold_m.0 / hook_m.0,
        hook_m.0 - floor_m.0
    );
    if let Some((med, _)) = static_m {
        println!(
            "static shim (medians): hook {:.3}x the dynamic one's, hook - floor = {:.3} ms",
            med / hook_m.0,
            med - floor_m.0
        );
    }
    if let Some(kib) = peak_rss_kib {
        println!("sidecar peak RSS: {:.1} MiB", kib as f64 / 1024.0);
    }
    let cpu_hook_m = common::percentile(&mut cpu_hook, 0.5);
    println!(
        "CPU (user + system): the shim {cpu_hook_m:.3} ms per hook (median); the sidecar {} ms per search (all threads, the loop's total / searches)",
        daemon_cpu.map_or("?".into(), |c| format!("{c:.3}"))
    );
    let mut compared = serde_json::Value::Null;
    if let Some((_, _, base_daemon)) = &baseline {
        let base_hook_m = row(&format!("{compared_name}: hook (warm)"), &mut t_base_hook);
        let base_rpc_m = row(
            &format!("{compared_name}: search round trip"),
            &mut t_base_rpc,
        );
        println!(
            "this build / {compared_name} (medians): hook {:.3}x, search round trip {:.3}x",
            hook_m.0 / base_hook_m.0,
            rpc_m.0 / base_rpc_m.0
        );
        let cpu_base_m = common::percentile(&mut cpu_base_hook, 0.5);
        println!(
            "{compared_name} CPU: the shim {cpu_base_m:.3} ms per hook; the sidecar {} ms per search; this build / {compared_name}: shim {:.3}x, sidecar {}",
            base_cpu.map_or("?".into(), |c| format!("{c:.3}")),
            cpu_hook_m / cpu_base_m.max(1e-9),
            match (daemon_cpu, base_cpu) {
                (Some(a), Some(b)) => format!("{:.3}x", a / b.max(1e-9)),
                _ => "?".into(),
            }
        );
        if let Some(kib) = base_daemon.peak_rss_kib() {
            println!(
                "{compared_name} sidecar peak RSS: {:.1} MiB",
                kib as f64 / 1024.0
            );
        }
        compared = serde_json::json!({
            "series": compared_name,
            "hook": {"medianMs": base_hook_m.0, "p99Ms": base_hook_m.1},
            "rpc": {"medianMs": base_rpc_m.0, "p99Ms": base_rpc_m.1},
        });
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    let _ = std::fs::create_dir_all(&out);
    let json = serde_json::json!({
        "workload": {"guidelines": 1000, "files": 10, "fileBytes": 20000, "shownPerHook": shown},
        "floor": {"medianMs": floor_m.0, "p99Ms": floor_m.1},
        "rpc": {"medianMs": rpc_m.0, "p99Ms": rpc_m.1},
        "hook": {"medianMs": hook_m.0, "p99Ms": hook_m.1},
        "hookWithoutTokenBudget": {"medianMs": unbudgeted_m.0, "p99Ms": unbudgeted_m.1},
        "cold": {"medianMs": cold_m.0, "p99Ms": cold_m.1},
        "hookStaticShim": static_m.map(|(med, p99)| serde_json::json!({"medianMs": med, "p99Ms": p99})),
        "sidecarPeakRssKiB": peak_rss_kib,
        "baseline": compared,
    });
    let _ = std::fs::write(
        out.join("hook_latency.json"),
        serde_json::to_string_pretty(&json).unwrap(),
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One `search` over a fresh connection, as the shim does it, timed from connect to the last
/// byte of the answer.
fn rpc_round_trip(
    socket: &Path,
    session: &str,
    files: &[PathBuf],
    written: Option<&serde_json::Value>,
) -> Duration {
    let mut body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "search",
        "params": {"sessionId": session, "filepaths": files}});
    if let Some(w) = written {
        body["params"]["written"] = w.clone();
    }
    let body = body.to_string();
    let request = common::http_post(&body);
    let start = Instant::now();
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let elapsed = start.elapsed();
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    elapsed
}
