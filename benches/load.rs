//! Load: 8 concurrent clients at full rate for a fixed time against one release sidecar (1,000
//! guidelines), each request a `search` of 10 Kotlin files of ~20 KB on a fresh connection in a
//! new session (so every one records, as hooks do). Reports requests per second, p50/p99/max
//! latency, errors and the sidecar's peak RSS; writes target/bench-results/load.json.
//!
//! Run with `benches/run-all.sh`. Env: LOAD_CLIENTS (default 8), LOAD_SECS (default 5),
//! LOAD_GUIDELINES (default 1000), BENCH_CORPUS=near-miss, BENCH_GUIDEBOOK (a directory with
//! another build's `guidebook` to measure instead).

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{env_or, percentile, search_once, BenchSidecar};
use serde_json::json;

fn main() {
    let clients: usize = env_or("LOAD_CLIENTS", 8);
    let secs: f64 = env_or("LOAD_SECS", 5.0);
    let guidelines: usize = env_or("LOAD_GUIDELINES", 1000);
    let guidebook = std::env::var_os("BENCH_GUIDEBOOK")
        .map(|dir| PathBuf::from(dir).join("guidebook"))
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_guidebook")));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let repo = dir.path().join("repo");
    common::write_guidebook(&root, guidelines, 7);
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let files = Arc::new(common::write_kotlin_files(
        &repo.join("src"),
        10,
        20_000,
        guidelines,
        11,
    ));
    let sidecar = BenchSidecar::start(&guidebook, &dir.path().join("home"), &root);
    for i in 0..20 {
        search_once(&sidecar.socket, &format!("warm{i}"), &files).unwrap();
    }

    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (socket, files, stop) = (sidecar.socket.clone(), files.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut latencies, mut errors, mut first_error) = (Vec::new(), 0u64, None);
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    match search_once(&socket, &format!("load-{c}-{i}"), &files) {
                        Ok((d, _)) => latencies.push(d.as_secs_f64() * 1000.0),
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert(e);
                        }
                    }
                    i += 1;
                }
                (latencies, errors, first_error)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    let mut errors = 0;
    for t in threads {
        let (l, e, first) = t.join().unwrap();
        latencies.extend(l);
        errors += e;
        if let Some(first) = first {
            eprintln!("first error: {first}");
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let ok = latencies.len();
    let rps = ok as f64 / elapsed;
    let p50 = percentile(&mut latencies, 0.5);
    let p99 = percentile(&mut latencies, 0.99);
    let max = percentile(&mut latencies, 1.0);
    let rss = sidecar.peak_rss_kib();
    println!(
        "load: {clients} clients x {elapsed:.1} s, search of 10 x 20 KB files, {guidelines} guidelines"
    );
    println!(
        "{ok} ok, {errors} errors, {rps:.0} req/s, p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms, peak RSS {:.1} MiB",
        rss.unwrap_or(0) as f64 / 1024.0
    );
    let json = json!({
        "clients": clients, "seconds": elapsed, "ok": ok, "errors": errors,
        "requestsPerSecond": rps, "p50Ms": p50, "p99Ms": p99, "maxMs": max,
        "peakRssKiB": rss,
    });
    let out = common::results_dir().join("load.json");
    std::fs::write(&out, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    assert_eq!(errors, 0, "requests failed under load");
}
