//! Structural (`ast`) leaves end to end: the hook with 50 structural guidelines among 1,000 vs
//! the regex-only hook, side by side in one run, and the sidecar's RSS at 10,000 guidelines.
//!
//! Each hook is the real `guidebook-hook` spawned with a Codex `apply_patch` event naming one
//! ~20 KB Kotlin file, until it has printed its output (a new session each time, so every hook
//! really presents). Two sidecars serve two guidebooks built from the same seed: the 1,000
//! regex guidelines of the other benches, every 20th turned into a Kotlin-scoped guideline
//! about `callNN`: in `regex` by regexes (`\.callNN\(`), in `mixed` by structural leaves
//! (`$R.callNN($$$)`); both show the same guidelines. Three files: `hits` holds a call of each
//! of the 50 (and mentions in comments and strings), `one` of the first only, `plain` none of
//! their literals, so the structural leaves' prefilter keeps it from being parsed. The six
//! series run interleaved. Then each guidebook is rebuilt at 10,000 guidelines (500 of them
//! structural in `mixed`) and each sidecar's peak RSS is read after the same hooks.
//!
//! `cargo bench --bench structural` (release); `STRUCTURAL_BENCH_RUNS` (default 200). Prints
//! medians and p99s; writes them to target/bench-results/structural.json. No timed asserts.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Writes `count` guidelines with the common generator, then turns every 20th guideline into a
/// Kotlin-scoped one about `callNN` (50 in 1,000): structural leaves when `structural` is set,
/// else the regexes a team would write for the same calls (which also hit comments). Returns
/// how many are structural.
fn guidebook(root: &Path, count: usize, structural: bool) -> usize {
    common::write_guidebook(root, count, 7);
    let mut n = 0;
    for i in (0..count).step_by(20) {
        let k = n % 50;
        let leaves = if structural {
            format!("    - ast:\n        pattern: '$R.call{k:02}($$$)'\n    - ast:\n        pattern: 'runBlocking{k:02} {{ $$$ }}'\n")
        } else {
            format!("    - regex:\n        pattern: '\\.call{k:02}\\('\n    - regex:\n        pattern: 'runBlocking{k:02}\\s*\\{{'\n")
        };
        let yaml = format!(
            "id: g{i:05}\nscope:\n  languages: [kotlin]\nmatch:\n  any:\n{leaves}content: |\n  Guideline {i}: keep call{k:02} behind its port.\n"
        );
        let path = root
            .join("guidelines")
            .join(format!("g{i:05}"))
            .join("guideline.yaml");
        std::fs::write(path, yaml).unwrap();
        n += 1;
    }
    if structural {
        n
    } else {
        0
    }
}

/// A ~20 KB Kotlin file: the common generator's, plus a call of the first `hits` of the 50
/// `callNN` and a mention of each in a comment and a string.
fn kotlin_file(dir: &Path, name: &str, hits: usize) -> PathBuf {
    let files = common::write_kotlin_files(&dir.join(name), 1, 20_000, 1000, 11);
    let path = files[0].clone();
    if hits > 0 {
        let mut s = std::fs::read_to_string(&path).unwrap();
        s.push_str("class Calls(private val repo: Repo) {\n");
        for k in 0..hits {
            s.push_str(&format!(
                "    // repo.call{k:02}(id) is what we avoid\n    fun f{k}(id: Long) = repo.call{k:02}(id, \"call{k:02}\")\n"
            ));
        }
        s.push_str("}\n");
        std::fs::write(&path, s).unwrap();
    }
    path
}

fn event(repo: &Path, file: &Path, session: &str) -> String {
    serde_json::json!({
        "session_id": session, "turn_id": "t", "transcript_path": null,
        "cwd": repo.display().to_string(), "hook_event_name": "PostToolUse",
        "model": "gpt-5.1-codex", "permission_mode": "default", "tool_name": "apply_patch",
        "tool_input": {"command": format!("*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n", file.display())},
        "tool_response": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n",
        "tool_use_id": "call_1"
    })
    .to_string()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let runs: usize = common::env_or("STRUCTURAL_BENCH_RUNS", 200);
    let guidebook_exe = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    let shim = guidebook_exe.parent().unwrap().join("guidebook-hook");
    if !shim.exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "-p", "guidebook-hook"])
            .status()
            .unwrap();
        assert!(status.success(), "building guidebook-hook failed");
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let hits = kotlin_file(&repo, "hits", 50);
    let one = kotlin_file(&repo, "one", 1);
    let plain = kotlin_file(&repo, "plain", 0);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let sizes = (size(&hits), size(&one), size(&plain));

    let serve = |name: &str, count: usize, structural: bool| {
        let root = dir.path().join(format!("{name}-{count}"));
        let n = guidebook(&root, count, structural);
        let home = dir.path().join(format!("home-{name}-{count}"));
        let daemon = common::BenchSidecar::start(&guidebook_exe, &home, &root);
        (daemon, home.join("sidecar.sock"), n)
    };
    let hook = |socket: &Path, file: &Path, session: &str| {
        common::spawn_timed(
            Command::new(&shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", socket)
                .env("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", "2000"),
            event(&repo, file, session).as_bytes(),
        )
    };

    let (regex_daemon, regex_socket, _) = serve("regex", 1000, false);
    let (mixed_daemon, mixed_socket, structural) = serve("mixed", 1000, true);
    // Warm-up, and a check that the structural guidelines fire on `hits` only.
    let shown = |out: &[u8]| -> Vec<String> {
        let text = String::from_utf8_lossy(out).into_owned();
        let mut ids: Vec<String> = text
            .split("\\n\\n[")
            .skip(1)
            .filter_map(|s| Some(s.split(']').next()?.to_string()))
            .collect();
        ids.sort();
        ids
    };
    let mixed_hits = shown(&hook(&mixed_socket, &hits, "warm-mh").1);
    let mixed_plain = shown(&hook(&mixed_socket, &plain, "warm-mp").1);
    let regex_hits = shown(&hook(&regex_socket, &hits, "warm-rh").1);
    assert_eq!(
        mixed_hits, regex_hits,
        "both guidebooks show the same guidelines"
    );
    let structural_ids: Vec<String> = (0..1000).step_by(20).map(|i| format!("g{i:05}")).collect();
    let fired = |ids: &[String]| ids.iter().filter(|i| structural_ids.contains(i)).count();
    println!(
        "shown per hook: mixed/hits {} ({} structural), mixed/plain {} ({} structural), regex/hits {}",
        mixed_hits.len(),
        fired(&mixed_hits),
        mixed_plain.len(),
        fired(&mixed_plain),
        regex_hits.len()
    );
    for i in 0..20 {
        hook(&regex_socket, &hits, &format!("w{i}"));
        hook(&mixed_socket, &hits, &format!("w{i}"));
    }

    let series = [
        (
            "regex-only, file with all 50 literals",
            &regex_socket,
            &hits,
        ),
        ("regex-only, file with 1 literal", &regex_socket, &one),
        ("regex-only, file without", &regex_socket, &plain),
        (
            "50 structural, file with all 50 literals",
            &mixed_socket,
            &hits,
        ),
        ("50 structural, file with 1 literal", &mixed_socket, &one),
        ("50 structural, file without", &mixed_socket, &plain),
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); series.len()];
    for i in 0..runs {
        for (k, (_, socket, file)) in series.iter().enumerate() {
            samples[k].push(ms(hook(socket, file, &format!("s{k}-{i}")).0));
        }
    }
    drop(regex_daemon);
    drop(mixed_daemon);

    println!(
        "workload: 1000 guidelines ({structural} structural in the mixed guidebook), one Kotlin file of {} / {} / {} bytes per hook",
        sizes.0, sizes.1, sizes.2
    );
    println!(
        "{:<44} {:>5}  {:>9}  {:>9}",
        "hook end to end (ms)", "n", "median", "p99"
    );
    let mut rows = Vec::new();
    for ((name, _, _), s) in series.iter().zip(samples.iter_mut()) {
        let (med, p99) = (common::percentile(s, 0.5), common::percentile(s, 0.99));
        println!("{name:<44} {:>5}  {med:>9.3}  {p99:>9.3}", s.len());
        rows.push(
            serde_json::json!({"series": name, "n": s.len(), "median_ms": med, "p99_ms": p99}),
        );
    }

    // RSS at 10,000 guidelines, after the same hooks on both files.
    let mut rss = Vec::new();
    for (name, structural) in [("regex", false), ("mixed", true)] {
        let (daemon, socket, n) = serve(name, 10_000, structural);
        for i in 0..20 {
            hook(&socket, &hits, &format!("rss-h{i}"));
            hook(&socket, &plain, &format!("rss-p{i}"));
        }
        let kib = daemon.peak_rss_kib();
        println!(
            "peak RSS at 10,000 guidelines, {name} ({n} structural): {} KiB",
            kib.map_or("-".into(), |k| k.to_string())
        );
        rss.push(serde_json::json!({"guidebook": name, "structural": n, "peak_rss_kib": kib}));
    }
    let out = common::results_dir().join("structural.json");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&serde_json::json!({"hook": rows, "rss": rss})).unwrap(),
    )
    .unwrap();
    println!("wrote {}", out.display());
}
