//! The hook with a trusted repository's rules, side by side in one run with the same repository
//! untrusted: 200 native rule files and 200 `.guidebook/` guidelines beside a 1,000-guideline
//! guidebook, a Codex `apply_patch` of 10 Kotlin files × 20 KB; then the first hook right after
//! a rule file changes, and how long the sidecar takes to serve the change.
//!
//! `cargo bench --bench repository_rules` (release). `REPO_BENCH_RUNS` (default 300),
//! `REPO_BENCH_CHANGES` (default 20), `REPO_BENCH_GUIDELINES` (the repository's `.guidebook/`
//! guidelines, default 200), `REPO_BENCH_SHIM` (another `guidebook-hook`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let runs: usize = common::env_or("REPO_BENCH_RUNS", 300);
    let changes: usize = common::env_or("REPO_BENCH_CHANGES", 20);
    let guidebook = PathBuf::from(env!("CARGO_BIN_EXE_guidebook"));
    // `REPO_BENCH_SHIM=PATH`: another shim, say the statically linked one README installs.
    let shim = std::env::var_os("REPO_BENCH_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| guidebook.parent().unwrap().join("guidebook-hook"));
    assert!(
        shim.exists(),
        "build the shim first: cargo build --release -p guidebook-hook"
    );

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let repo = dir.path().join("repo");
    common::write_guidebook(&root, 1000, 7);
    common::git_repo(&repo, "git@github.com:acme/backend-order.git");
    let files = common::write_kotlin_files(&repo.join("src"), 10, 20_000, 1000, 11);
    let native = write_rule_files(&repo);
    let repo_guidelines: usize = common::env_or("REPO_BENCH_GUIDELINES", 200);
    if repo_guidelines > 0 {
        common::write_guidebook(&repo.join(".guidebook"), repo_guidelines, 9);
    }

    let plain_home = dir.path().join("home-untrusted");
    let trusted_home = dir.path().join("home-trusted");
    let out = Command::new(&guidebook)
        .args(["trust", repo.to_str().unwrap()])
        .env("ADAPTIVE_GUIDEBOOK_HOME", &trusted_home)
        .env("ADAPTIVE_GUIDEBOOK_ROOT", &root)
        .output()
        .unwrap();
    assert!(out.status.success(), "guidebook trust: {out:?}");
    let plain = common::BenchSidecar::start(&guidebook, &plain_home, &root);
    let trusted = common::BenchSidecar::start(&guidebook, &trusted_home, &root);
    let served = || served(&trusted_home.join("sidecar.sock"));
    let started = Instant::now();
    while served() < 200 + repo_guidelines as u64 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "rules not served: {}",
            served()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let first_served = served();

    let patch: String = files
        .iter()
        .map(|f| format!("*** Update File: {}\n@@\n-a\n+b\n", f.display()))
        .collect();
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
    let hook = |home: &Path, session: &str| {
        common::spawn_timed(
            Command::new(&shim)
                .env("ADAPTIVE_GUIDEBOOK_SOCKET", home.join("sidecar.sock"))
                .env("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", "2000"),
            event(session).as_bytes(),
        )
    };
    let floor = || common::spawn_timed(&mut Command::new("/bin/true"), b"");
    let (_, out) = hook(&trusted_home, "warm-trusted");
    let text = String::from_utf8_lossy(&out);
    let repo_shown = text.matches("[repo:").count();
    assert!(repo_shown > 0, "no repository rule shown: {text}");
    let (_, out) = hook(&plain_home, "warm-plain");
    assert!(!String::from_utf8_lossy(&out).contains("[repo:"));
    for i in 0..20 {
        hook(&trusted_home, &format!("w{i}"));
        hook(&plain_home, &format!("v{i}"));
        floor();
    }

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut t_floor, mut t_plain, mut t_trusted) = (vec![], vec![], vec![]);
    for i in 0..runs {
        t_floor.push(ms(floor().0));
        t_plain.push(ms(hook(&plain_home, &format!("p{i}")).0));
        t_trusted.push(ms(hook(&trusted_home, &format!("t{i}")).0));
    }

    let steady_rss = (plain.peak_rss_kib(), trusted.peak_rss_kib());
    // A rule file changes: the first hook right after it, and when the change is served.
    let agents = repo.join(&native[0]);
    let original = std::fs::read_to_string(&agents).unwrap();
    let (mut t_after, mut t_served) = (vec![], vec![]);
    for i in 0..changes {
        let changed = i % 2 == 0;
        let text = if changed {
            format!("{original}\nChanged {i}.\n")
        } else {
            original.clone()
        };
        let want = if changed {
            first_served - 1
        } else {
            first_served
        };
        std::fs::write(&agents, text).unwrap();
        let at = Instant::now();
        t_after.push(ms(hook(&trusted_home, &format!("c{i}")).0));
        while served() != want {
            assert!(
                at.elapsed() < Duration::from_secs(30),
                "the change was not served"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        t_served.push(ms(at.elapsed()));
        std::thread::sleep(Duration::from_millis(200));
    }
    let trusted_rss = trusted.peak_rss_kib();
    let plain_rss = plain.peak_rss_kib();
    drop((plain, trusted));

    let row = |name: &str, s: &mut Vec<f64>| {
        let med = common::percentile(s, 0.5);
        let p90 = common::percentile(s, 0.9);
        println!("{name:<52} {:>5}  {med:>8.3}  {p90:>8.3}", s.len());
        med
    };
    println!(
        "workload: 1000 guidelines; repository: {} native rule files + 200 .guidebook guidelines ({first_served} served), 10 Kotlin files x 20 KB; {repo_shown} repository rules shown per hook",
        native.len()
    );
    println!(
        "{:<52} {:>5}  {:>8}  {:>8}",
        "series (ms)", "n", "median", "p90"
    );
    let f = row("floor: spawn /bin/true", &mut t_floor);
    let p = row("hook, repository untrusted", &mut t_plain);
    let t = row(
        "hook, repository trusted (its rules served)",
        &mut t_trusted,
    );
    let a = row("first hook right after a rule file changed", &mut t_after);
    let s = row("rule file change -> served (status)", &mut t_served);
    println!(
        "hook - floor: untrusted {:.3} ms, trusted {:.3} ms; trusted/untrusted {:.3}x; right after a change {:.3} ms",
        p - f,
        t - f,
        t / p,
        a - f
    );
    if let (Some(a), Some(b)) = steady_rss {
        println!(
            "sidecar peak RSS before the changes: untrusted {:.1} MiB, trusted {:.1} MiB",
            a as f64 / 1024.0,
            b as f64 / 1024.0
        );
    }
    if let (Some(a), Some(b)) = (plain_rss, trusted_rss) {
        println!(
            "sidecar peak RSS: untrusted {:.1} MiB, trusted {:.1} MiB",
            a as f64 / 1024.0,
            b as f64 / 1024.0
        );
    }
    let json = serde_json::json!({
        "floorMs": f, "hookUntrustedMs": p, "hookTrustedMs": t,
        "hookAfterChangeMs": a, "changeServedMs": s, "repositoryRulesShown": repo_shown,
    });
    let _ = std::fs::write(
        common::results_dir().join("repository_rules.json"),
        json.to_string(),
    );
}

/// 200 native rule files: 100 Cursor rules, 50 Copilot instructions, 50 nested `AGENTS.md`,
/// each scoped to its own directory but for a few that take in `src/`. Their relative paths.
fn write_rule_files(repo: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut write = |rel: String, text: String| {
        let path = repo.join(&rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        out.push(PathBuf::from(rel));
    };
    for i in 0..50 {
        let rel = if i == 0 {
            "src/AGENTS.md".to_string()
        } else {
            format!("pkg{i}/AGENTS.md")
        };
        write(
            rel,
            format!("# Module {i}\n\nKeep module {i}'s public API small and documented.\n"),
        );
    }
    for i in 0..100 {
        let globs = if i < 3 {
            "src/**/*.kt".to_string()
        } else {
            format!("lib{i}/**/*.kt")
        };
        write(
            format!(".cursor/rules/rule{i}.mdc"),
            format!("---\ndescription: rule {i}\nglobs: \"{globs}\"\nalwaysApply: false\n---\nRule {i}: prefer immutable data in these files.\n"),
        );
    }
    for i in 0..50 {
        let apply = if i < 2 {
            "src/**".to_string()
        } else {
            format!("svc{i}/**")
        };
        write(
            format!(".github/instructions/i{i}.instructions.md"),
            format!("---\napplyTo: \"{apply}\"\n---\nInstruction {i}: handle errors explicitly.\n"),
        );
    }
    out
}

/// How many repository rules the sidecar at `socket` serves (its `status`).
fn served(socket: &Path) -> u64 {
    use std::io::{Read, Write};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"status","params":{}}"#;
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else {
        return 0;
    };
    if s.write_all(common::http_post(body).as_bytes()).is_err() {
        return 0;
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let json = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    v["result"]["sources"]["repositories"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["served"].as_u64()).sum())
        .unwrap_or(0)
}
