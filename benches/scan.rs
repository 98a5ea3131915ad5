//! Scan throughput against ripgrep on the same files and the same patterns: the sidecar's
//! in-process scan (read each file once, one pass of the matching engine for all 1,000 guidelines' patterns,
//! one thread) against `rg -c -f patterns.txt FILES` with one thread (`-j1`) and with its
//! default parallelism. Two corpora: generated Kotlin (200 files of ~50 KB) and a real
//! repository (`SCAN_REPO`, default this repository; files as `rg --files` lists them, so
//! `.gitignore`d files are left out of both). Medians of SCAN_RUNS (default 5) runs; writes
//! target/bench-results/scan.json.
//!
//! Then the whole `guidebook scan --json REPO` command (walk, parallel evaluation with repository
//! identity and language scope, report) against `rg -c -f patterns.txt REPO` (walk and search,
//! all cores) on the real repository, each walking it itself.
//!
//! The two do not compute quite the same thing: the set scan reports *which* patterns match
//! each file (what a search needs), `rg -c` counts the lines matching *any* pattern. Both read
//! every byte of every file. ripgrep missing: the benchmark says so and exits 0. A ripgrep run
//! longer than SCAN_RG_TIMEOUT_SECS (default 60) is stopped; its MB/s is then an upper bound.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use adaptive_guidebook::guidebook::Guidebook;
use common::{env_or, percentile};
use serde_json::{json, Value};

fn main() {
    if Command::new("rg").arg("--version").output().is_err() {
        println!("scan: ripgrep (`rg`) is not installed; skipping (apt-get install ripgrep)");
        return;
    }
    let runs: usize = env_or("SCAN_RUNS", 5);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    common::write_guidebook(&root, 1000, 7);
    let guidebook = Guidebook::load(root);
    let snapshot = guidebook.snapshot();
    assert!(snapshot.errors.is_empty(), "{:?}", snapshot.errors);
    let patterns: Vec<String> = snapshot
        .guidelines
        .iter()
        .flat_map(|g| g.guideline.patterns.clone())
        .collect();
    let patterns_file = dir.path().join("patterns.txt");
    std::fs::write(&patterns_file, patterns.join("\n") + "\n").unwrap();

    let generated = common::write_kotlin_files(&dir.path().join("kotlin"), 200, 50_000, 1000, 23);
    let repo = std::env::var_os("SCAN_REPO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let real = rg_files(&repo);

    println!(
        "{} patterns from 1000 guidelines; median of {runs} runs",
        patterns.len()
    );
    println!(
        "{:<40} {:>6} {:>8} {:>12} {:>12} {:>12} {:>7}",
        "corpus", "files", "MB", "set MB/s", "rg -j1 MB/s", "rg MB/s", "set/rg1"
    );
    let mut rows = Vec::new();
    for (name, files) in [
        ("generated Kotlin, 200 x 50 KB".to_string(), generated),
        (format!("{} (rg --files)", repo.display()), real),
    ] {
        let row = compare(&snapshot, &patterns_file, &files, runs);
        println!(
            "{:<40} {:>6} {:>8.1} {:>12.1} {:>12.1} {:>12.1} {:>6.2}x",
            name,
            files.len(),
            row["bytes"].as_f64().unwrap() / 1e6,
            row["setMBPerS"].as_f64().unwrap(),
            row["rgOneThreadMBPerS"].as_f64().unwrap(),
            row["rgMBPerS"].as_f64().unwrap(),
            row["setMBPerS"].as_f64().unwrap() / row["rgOneThreadMBPerS"].as_f64().unwrap(),
        );
        rows.push(json!({"corpus": name, "result": row}));
    }
    let command = compare_commands(&root_of(&guidebook), &patterns_file, &repo, runs);
    println!(
        "whole commands on {}: `guidebook scan --json` {:.1} MB/s ({:.3} s), `rg -c -f` {:.1} MB/s ({:.3} s): scan/rg {:.2}x",
        repo.display(),
        command["scanMBPerS"].as_f64().unwrap(),
        command["scanSecs"].as_f64().unwrap(),
        command["rgMBPerS"].as_f64().unwrap(),
        command["rgSecs"].as_f64().unwrap(),
        command["scanMBPerS"].as_f64().unwrap() / command["rgMBPerS"].as_f64().unwrap(),
    );
    let out = common::results_dir().join("scan.json");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&json!({
            "patterns": patterns.len(), "runs": runs, "corpora": rows, "commands": command
        }))
        .unwrap(),
    )
    .unwrap();
    println!("wrote {}", out.display());
}

fn root_of(guidebook: &Guidebook) -> PathBuf {
    guidebook.root().to_path_buf()
}

/// `guidebook scan --json REPO` (release binary, this guidebook) against `rg -c -f patterns REPO`
/// with its default parallelism: both walk the repository themselves; medians of `runs`.
fn compare_commands(root: &Path, patterns_file: &Path, repo: &Path, runs: usize) -> Value {
    let guidebook = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    let home = tempfile::tempdir().unwrap();
    let (mut scan, mut rg) = (vec![], vec![]);
    let mut bytes = 0u64;
    let limit: f64 = env_or("SCAN_RG_TIMEOUT_SECS", 60.0);
    let mut timed_out = false;
    for _ in 0..runs {
        let start = Instant::now();
        let out = Command::new(&guidebook)
            .arg("--guidebook-root")
            .arg(root)
            .args(["scan", "--json"])
            .arg(repo)
            .env("ADAPTIVE_GUIDEBOOK_HOME", home.path())
            .env("RUST_LOG", "error")
            .output()
            .expect("guidebook scan");
        scan.push(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        bytes = report["bytes"].as_u64().unwrap();
        let start = Instant::now();
        let mut child = Command::new("rg")
            .args(["--no-config", "-c", "-f"])
            .arg(patterns_file)
            .arg(repo)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("rg");
        // As above: past the limit ripgrep is stopped and its figure is an upper bound.
        while child.try_wait().unwrap().is_none() {
            if start.elapsed().as_secs_f64() > limit {
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        rg.push(start.elapsed().as_secs_f64());
    }
    let (scan_s, rg_s) = (percentile(&mut scan, 0.5), percentile(&mut rg, 0.5));
    json!({
        "repo": repo.display().to_string(),
        "bytes": bytes,
        "scanSecs": scan_s,
        "rgSecs": rg_s,
        "scanMBPerS": bytes as f64 / 1e6 / scan_s,
        "rgMBPerS": bytes as f64 / 1e6 / rg_s,
        "rgTimedOutAfterSecs": timed_out.then_some(limit),
    })
}

/// The files ripgrep would search under `repo` (ignore files respected), at most 20,000 of them
/// so that they fit on one command line.
fn rg_files(repo: &Path) -> Vec<PathBuf> {
    let out = Command::new("rg")
        .args(["--files", "--no-config"])
        .arg(repo)
        .output()
        .expect("rg --files");
    let mut files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .collect();
    files.sort();
    files.truncate(20_000);
    files
}

fn compare(
    snapshot: &adaptive_guidebook::guidebook::GuidelineSnapshot,
    patterns_file: &Path,
    files: &[PathBuf],
    runs: usize,
) -> Value {
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    let all = vec![true; snapshot.guidelines.len()];
    let (mut set, mut rg1, mut rgn) = (vec![], vec![], vec![]);
    let (mut set_files, mut rg_files) = (0, 0);
    let limit: f64 = env_or("SCAN_RG_TIMEOUT_SECS", 60.0);
    let mut timed_out = false;
    for _ in 0..runs {
        let start = Instant::now();
        set_files = files
            .iter()
            .filter(|f| {
                let content = std::fs::read(f).unwrap();
                !snapshot.matching(&content, &all).is_empty()
            })
            .count();
        set.push(start.elapsed().as_secs_f64());
        for (threads, series) in [(Some("-j1"), &mut rg1), (None, &mut rgn)] {
            let start = Instant::now();
            let mut child = Command::new("rg")
                .args(["--no-config", "-c", "--no-filename", "-f"])
                .arg(patterns_file)
                .args(threads)
                .arg("--")
                .args(files)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let reader = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = std::io::Read::read_to_string(&mut { stdout }, &mut s);
                s
            });
            // ripgrep can take minutes on many patterns: past the limit it is stopped and the
            // limit recorded, so the figure is an upper bound on its throughput.
            while child.try_wait().unwrap().is_none() {
                if start.elapsed().as_secs_f64() > limit {
                    let _ = child.kill();
                    let _ = child.wait();
                    timed_out = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            series.push(start.elapsed().as_secs_f64());
            rg_files = reader.join().unwrap().lines().count();
        }
    }
    let mbps = |s: &mut Vec<f64>| bytes as f64 / 1e6 / percentile(s, 0.5);
    json!({
        "files": files.len(),
        "bytes": bytes,
        "setMBPerS": mbps(&mut set),
        "rgOneThreadMBPerS": mbps(&mut rg1),
        "rgMBPerS": mbps(&mut rgn),
        "filesMatchedBySet": set_files,
        "filesMatchedByRg": rg_files,
        "rgTimedOutAfterSecs": timed_out.then_some(limit),
    })
}
