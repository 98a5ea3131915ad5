//! How the cost of a search grows, one fresh release sidecar per point so that each peak RSS is
//! its own: guidelines 100 → 1,000 → 10,000 (10 Kotlin files of ~20 KB per search); file size
//! 1 KB → 2 MB (one file, 1,000 guidelines); files per search 1 → 100 (~20 KB each, 1,000
//! guidelines). Each point: the warm `search` round trip over the socket (median, p99), and for
//! the guideline sweep also the hook end to end (spawn `guidebook-hook` → output) and a cold
//! one-shot `guidebook search` (in the sidecar's home, so with the parse cache its first load
//! wrote), and the time a restart on that home takes to answer (`restart ms`: the guidebook
//! taken from the parse cache). Writes target/bench-results/scaling.json.
//!
//! Run with `benches/run-all.sh` (builds the release binaries first). Env: SCALING_RUNS (warm
//! samples per point, default 100), SCALING_COLD_RUNS (default 5), SCALING_POINT_SECS (a point
//! stops sampling after this long, with at least 3 samples; default 60: at 10,000 guidelines a
//! search took minutes before the patterns were split into sets of 2,048), SCALING_GUIDELINES
//! (default `100,1000,10000`), SCALING_SWEEPS
//! (`0` skips the file-size and file-count sweeps), BENCH_CORPUS (`near-miss` for the near-miss
//! corpus), BENCH_GUIDEBOOK (a directory with another build's binaries to measure),
//! SCALING_KEEP (`1` keeps the generated guidebooks and files). Each guideline-count point's
//! answer is checked against the plain `regex` crate, pattern by pattern.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{env_or, percentile, search_once, BenchSidecar};
use serde_json::{json, Value};

fn main() {
    let runs: usize = env_or("SCALING_RUNS", 100);
    let cold_runs: usize = env_or("SCALING_COLD_RUNS", 5);
    let budget = Duration::from_secs_f64(env_or("SCALING_POINT_SECS", 60.0));
    // `BENCH_GUIDEBOOK=DIR` measures another build's `guidebook` and `guidebook-hook` instead.
    let guidebook = std::env::var_os("BENCH_GUIDEBOOK")
        .map(|dir| PathBuf::from(dir).join("guidebook"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_guidebook")));
    let shim = guidebook.parent().unwrap().join("guidebook-hook");
    assert!(
        shim.exists(),
        "{} is missing: run benches/run-all.sh, which builds it",
        shim.display()
    );
    // `SCALING_KEEP=1` leaves the generated guidebooks and files behind, to look into.
    let dir = tempfile::Builder::new()
        .disable_cleanup(std::env::var_os("SCALING_KEEP").is_some())
        .tempdir()
        .unwrap();
    println!("generated under {}", dir.path().display());
    let repo = dir.path().join("repo");
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");

    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "point",
        "rpc med",
        "rpc p99",
        "hook med",
        "cold med",
        "socket ms",
        "ready ms",
        "restart ms",
        "RSS MiB"
    );
    let mut guidelines_rows = Vec::new();
    let counts: Vec<usize> = std::env::var("SCALING_GUIDELINES")
        .unwrap_or_else(|_| "100,1000,10000".into())
        .split(',')
        .map(|c| {
            c.trim()
                .parse()
                .expect("SCALING_GUIDELINES: comma-separated counts")
        })
        .collect();
    for count in counts {
        let root = dir.path().join(format!("gb{count}"));
        common::write_guidebook(&root, count, 7);
        let files =
            common::write_kotlin_files(&repo.join(format!("g{count}")), 10, 20_000, count, 11);
        let point = measure(
            &guidebook,
            Some(&shim),
            dir.path(),
            &root,
            &repo,
            &files,
            runs,
            cold_runs,
            budget,
        );
        print_row(&format!("{count} guidelines, 10 x 20 KB"), &point);
        let checked = verify(&guidebook, dir.path(), &root, &files);
        guidelines_rows.push(json!({"guidelines": count, "point": point, "verified": checked}));
    }

    let root = dir.path().join("gb1000");
    if !root.exists() {
        common::write_guidebook(&root, 1000, 7);
    }
    let sweeps = env_or("SCALING_SWEEPS", 1) != 0;
    let mut size_rows = Vec::new();
    for bytes in [1_000usize, 10_000, 100_000, 1_000_000, 2_000_000]
        .into_iter()
        .filter(|_| sweeps)
    {
        let files = common::write_kotlin_files(&repo.join(format!("s{bytes}")), 1, bytes, 1000, 13);
        let point = measure(
            &guidebook,
            None,
            dir.path(),
            &root,
            &repo,
            &files,
            runs,
            0,
            budget,
        );
        print_row(&format!("1 file of {} KB", bytes / 1000), &point);
        size_rows.push(json!({"fileBytes": bytes, "point": point}));
    }
    let mut count_rows = Vec::new();
    for n in [1usize, 10, 100].into_iter().filter(|_| sweeps) {
        let files = common::write_kotlin_files(&repo.join(format!("n{n}")), n, 20_000, 1000, 17);
        let point = measure(
            &guidebook,
            None,
            dir.path(),
            &root,
            &repo,
            &files,
            runs,
            0,
            budget,
        );
        print_row(&format!("{n} files x 20 KB"), &point);
        count_rows.push(json!({"files": n, "point": point}));
    }

    let json = json!({
        "runs": runs,
        "coldRuns": cold_runs,
        "byGuidelines": guidelines_rows,
        "byFileSize": size_rows,
        "byFileCount": count_rows,
    });
    let name = std::env::var("SCALING_OUT").unwrap_or_else(|_| "scaling".into());
    let out = common::results_dir().join(format!("{name}.json"));
    std::fs::write(&out, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    println!("wrote {}", out.display());
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_row(name: &str, p: &Value) {
    let f = |k: &str| p[k].as_f64().map_or("-".to_string(), |v| format!("{v:.3}"));
    println!(
        "{name:<34} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
        f("rpcMedianMs"),
        f("rpcP99Ms"),
        f("hookMedianMs"),
        f("coldMedianMs"),
        f("startupMs"),
        f("readyMs"),
        f("restartReadyMs"),
        p["peakRssKiB"]
            .as_f64()
            .map_or("-".into(), |k| format!("{:.1}", k / 1024.0)),
    );
}

/// The point's answer checked against the plain `regex` crate: a search in a fresh session on a
/// fresh sidecar must return exactly the guidelines that apply to a Kotlin file of
/// `acme/backend-order` and have a pattern matching one of `files`, each pattern compiled on
/// its own. Panics on any difference; returns how many guidelines matched.
fn verify(guidebook: &Path, base: &Path, root: &Path, files: &[PathBuf]) -> usize {
    use adaptive_guidebook::guidebook::{find_guideline_files, parse_guideline};
    let home = tempfile::tempdir_in(base).unwrap();
    let sidecar = BenchSidecar::start(guidebook, home.path(), root);
    let mut got = common::search_ids(&sidecar.socket, "verify", files).expect("search");
    got.sort();
    drop(sidecar);
    let contents: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let mut expected = Vec::new();
    for (path, _) in find_guideline_files(root).unwrap() {
        let text = std::fs::read_to_string(&path).unwrap();
        let g = parse_guideline(&path, &text).unwrap();
        let language_ok = g.languages.as_ref().is_none_or(|l| l.contains(&"kotlin"));
        let repo_ok = g.repositories.as_ref().is_none_or(|globs| {
            globs.iter().any(|glob| {
                globset::GlobBuilder::new(glob)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .build()
                    .unwrap()
                    .compile_matcher()
                    .is_match("acme/backend-order")
            })
        });
        if !(language_ok && repo_ok) {
            continue;
        }
        let matches = g.patterns.iter().any(|p| {
            let r = regex::bytes::RegexBuilder::new(p)
                .multi_line(true)
                .build()
                .unwrap();
            contents.iter().any(|c| r.is_match(c))
        });
        if matches {
            expected.push(g.id);
        }
    }
    expected.sort();
    assert_eq!(
        got,
        expected,
        "{}: the search's guidelines differ from the regex crate's",
        root.display()
    );
    println!(
        "  verified against the regex crate: {} guidelines",
        got.len()
    );
    got.len()
}

/// One point: a fresh sidecar on `root`, warm searches of `files` (a new session each, so each
/// records), optionally the hook end to end and the cold one-shot search.
#[allow(clippy::too_many_arguments)]
fn measure(
    guidebook: &Path,
    shim: Option<&Path>,
    base: &Path,
    root: &Path,
    repo: &Path,
    files: &[PathBuf],
    runs: usize,
    cold_runs: usize,
    budget: Duration,
) -> Value {
    let home = tempfile::tempdir_in(base).unwrap();
    let sidecar = BenchSidecar::start(guidebook, home.path(), root);
    let (_, shown) = search_once(&sidecar.socket, "warmup", files).expect("warm-up search");
    // The cold one-shot is to find the parse cache the sidecar's first load owes, which the
    // sidecar writes at its first check for changes, a reload interval after that load: wait
    // for it, within bounds (a build without a parse cache never writes one).
    let cache = home.path().join("guidebook-cache.json");
    let wait_until = Instant::now() + Duration::from_secs(2).max(sidecar.ready * 2);
    while cold_runs > 0 && !cache.exists() && Instant::now() < wait_until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    for i in 0..10 {
        search_once(&sidecar.socket, &format!("w{i}"), files).unwrap();
        if started.elapsed() > budget / 10 {
            break;
        }
    }
    let started = Instant::now();
    let mut rpc = Vec::with_capacity(runs);
    let mut hook = Vec::new();
    let mut cold = Vec::new();
    let mut hook_silent = 0;
    let event = |session: &str| {
        let patch: String = files
            .iter()
            .map(|f| format!("*** Update File: {}\n@@\n-a\n+b\n", f.display()))
            .collect();
        json!({
            "session_id": session, "cwd": repo.display().to_string(),
            "hook_event_name": "PostToolUse", "tool_name": "apply_patch",
            "tool_input": {"command": format!("*** Begin Patch\n{patch}*** End Patch\n")},
            "tool_response": "Exit code: 0\nOutput:\nSuccess.\n",
        })
        .to_string()
    };
    // Interleaved, so that whatever else the machine does affects every series alike.
    for i in 0..runs {
        if i >= 3 && started.elapsed() > budget {
            break;
        }
        rpc.push(ms(search_once(&sidecar.socket, &format!("r{i}"), files)
            .unwrap()
            .0));
        if let Some(shim) = shim {
            let start = Instant::now();
            let mut child = Command::new(shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", &sidecar.socket)
                .env("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(event(&format!("h{i}")).as_bytes())
                .unwrap();
            let mut out = Vec::new();
            child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
            child.wait().unwrap();
            hook.push(ms(start.elapsed()));
            // A search slower than the hook's 2 s budget is given up: the hook prints nothing.
            hook_silent += usize::from(out.is_empty());
        }
        let cold_due = i % (runs / cold_runs.max(1)).max(1) == 0 || started.elapsed() > budget / 2;
        if cold.len() < cold_runs && cold_due {
            let start = Instant::now();
            let out = Command::new(guidebook)
                .args(["search", "--session", &format!("c{i}")])
                .args(files)
                .env("ADAPTIVE_GUIDEBOOK_HOME", home.path())
                .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
                .env("RUST_LOG", "error")
                .stderr(Stdio::null())
                .output()
                .unwrap();
            cold.push(ms(start.elapsed()));
            assert!(out.status.success(), "cold search failed");
        }
    }
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    let med = |s: &mut Vec<f64>| (!s.is_empty()).then(|| percentile(s, 0.5));
    let p99 = |s: &mut Vec<f64>| (!s.is_empty()).then(|| percentile(s, 0.99));
    let rpc_med = percentile(&mut rpc, 0.5);
    let peak_rss = sidecar.peak_rss_kib();
    // A restart on the same home: the guidebook is unchanged since the first load wrote the
    // parse cache (a build without one parses it all again).
    let (startup, ready) = (sidecar.startup, sidecar.ready);
    drop(sidecar);
    let restart_ready = BenchSidecar::start(guidebook, home.path(), root).ready;
    json!({
        "samples": rpc.len(),
        "files": files.len(),
        "bytes": bytes,
        "shown": shown,
        "startupMs": ms(startup),
        "readyMs": ms(ready),
        "restartReadyMs": ms(restart_ready),
        "rpcMedianMs": rpc_med,
        "rpcP99Ms": percentile(&mut rpc, 0.99),
        "rpcMBPerS": bytes as f64 / 1e6 / (rpc_med / 1000.0),
        "hookMedianMs": med(&mut hook),
        "hookP99Ms": p99(&mut hook),
        "hookSilentRuns": hook_silent,
        "coldMedianMs": med(&mut cold),
        "peakRssKiB": peak_rss,
    })
}
