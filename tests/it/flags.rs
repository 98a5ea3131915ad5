//! Feature flags through the real sidecar: changes served on the next request, broken files
//! that never replace the last good flags (also while requests run), environment overrides,
//! `setFlag`'s atomic rewrite (also when the writer is killed) and bounded wait for its lock, and
//! `guidebook flags`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

fn flags_json(progressive: bool, hooks_rollout: u8) -> String {
    format!(
        r#"{{
  "_meta": {{"version": 7, "updated_at": "2026-12-01T00:00:00Z", "updated_by": "test"}},
  "flags": {{
    "progressive_disclosure": {{"enabled": {progressive}, "description": "pd", "rollout_percent": 100, "owner": "dx"}},
    "hooks_enabled": {{"enabled": true, "description": "he", "rollout_percent": {hooks_rollout}, "owner": "dx"}}
  }}
}}
"#
    )
}

fn is_enabled(sidecar: &Sidecar, flag: &str) -> Value {
    sidecar.result("isEnabled", json!({"flag": flag}))
}

#[test]
fn a_changed_flags_file_is_served_on_the_next_request_and_a_broken_one_never() {
    let sidecar = Sidecar::start_default();
    let path = sidecar.home.join("feature_flags.json");
    // No file: every flag off, and that is not an error.
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(false));
    let flags = sidecar.result("getFlags", json!({}));
    assert_eq!(flags["error"], Value::Null);
    assert_eq!(flags["flags"], json!({}));

    std::fs::write(&path, flags_json(true, 100)).unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
    let flags = sidecar.result("getFlags", json!({}));
    assert_eq!(flags["version"], json!(7));
    assert_eq!(flags["path"], json!(path.display().to_string()));
    assert_eq!(
        flags["flags"]["hooks_enabled"],
        json!({"enabled": true, "rolloutPercent": 100, "description": "he", "owner": "dx",
               "overriddenBy": null})
    );

    // Truncated mid-write, garbage, a schema violation, a directory: the last good flags stay.
    let good = flags_json(true, 100);
    let broken: [(&str, String); 4] = [
        ("truncated", good[..good.len() / 2].to_string()),
        ("garbage", "\u{0}\u{1}garbage".to_string()),
        (
            "schema",
            good.replace("\"enabled\": true", "\"enabled\": \"yes\""),
        ),
        ("empty", String::new()),
    ];
    for (what, text) in &broken {
        std::fs::write(&path, text).unwrap();
        assert_eq!(
            is_enabled(&sidecar, "progressive_disclosure"),
            json!(true),
            "{what}"
        );
        let flags = sidecar.result("getFlags", json!({}));
        let error = flags["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {flags}"));
        assert!(
            error.starts_with(&format!("{}:", path.display())),
            "{error}"
        );
        assert_eq!(flags["flags"]["progressive_disclosure"]["enabled"], true);
        let status = sidecar.result("status", json!({}));
        assert_eq!(status["flags"]["error"], flags["error"], "{what}");
    }
    // Fixed: the new content is served and the error clears.
    std::fs::write(&path, flags_json(false, 100)).unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(false));
    assert_eq!(sidecar.result("getFlags", json!({}))["error"], Value::Null);
    // Deleted: every flag off, and the error says so.
    std::fs::write(&path, flags_json(true, 100)).unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(false));
    assert_eq!(is_enabled(&sidecar, "hooks_enabled"), json!(false));
    let flags = sidecar.result("getFlags", json!({}));
    assert!(
        flags["error"].as_str().unwrap().contains("deleted"),
        "{flags}"
    );
    assert_eq!(flags["flags"], json!({}));
}

/// A writer rewrites the file in place, non-atomically (truncate, then two halves), as fast as
/// it can, while clients ask. Every version written has the flag on, so every answer must be
/// `true`: a request that saw a half-written file must get the last good flags, not an error.
#[test]
fn requests_during_non_atomic_rewrites_never_fail_and_stay_last_good() {
    let sidecar = Sidecar::start_default();
    let path = sidecar.home.join("feature_flags.json");
    let good = flags_json(true, 100);
    std::fs::write(&path, &good).unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));

    let stop = Arc::new(AtomicBool::new(false));
    let rewrites = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, rewrites, path, good) =
            (stop.clone(), rewrites.clone(), path.clone(), good.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut f = std::fs::File::create(&path).unwrap();
                let (a, b) = good.as_bytes().split_at(good.len() / 2);
                f.write_all(a).unwrap();
                std::thread::sleep(Duration::from_micros(200));
                f.write_all(b).unwrap();
                rewrites.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut answers = 0;
    let mut saw_error = false;
    // At least 1.5 s, and until both sides have done enough to overlap: a busy machine makes
    // the run longer, never thinner.
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500)
        || rewrites.load(Ordering::Relaxed) <= 10
        || answers <= 10
    {
        assert!(
            started.elapsed() < WATCHDOG,
            "{} rewrites, {answers} answers in {WATCHDOG:?}",
            rewrites.load(Ordering::Relaxed)
        );
        assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
        let flags = sidecar.result("getFlags", json!({}));
        assert_eq!(flags["flags"]["progressive_disclosure"]["enabled"], true);
        saw_error |= flags["error"].is_string();
        answers += 2;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let rewrites = rewrites.load(Ordering::Relaxed);
    // Once the writer stopped with a whole file, the error clears.
    std::fs::write(&path, &good).unwrap();
    assert_eq!(sidecar.result("getFlags", json!({}))["error"], Value::Null);
    eprintln!("{rewrites} rewrites, {answers} answers, a half-written file seen: {saw_error}");
}

#[test]
fn environment_overrides_win_and_unparseable_ones_are_ignored_with_a_warning() {
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![
            ("FF_OVERRIDE_PROGRESSIVE_DISCLOSURE".into(), "false".into()),
            ("FF_OVERRIDE_HOOKS_ENABLED".into(), "sometimes".into()),
            ("FF_OVERRIDE_BRAND_NEW".into(), "true".into()),
        ],
        ..SidecarOptions::default()
    });
    std::fs::write(
        sidecar.home.join("feature_flags.json"),
        flags_json(true, 100),
    )
    .unwrap();
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(false));
    assert_eq!(is_enabled(&sidecar, "hooks_enabled"), json!(true));
    assert_eq!(is_enabled(&sidecar, "brand_new"), json!(true));
    let flags = sidecar.result("getFlags", json!({}));
    assert_eq!(
        flags["flags"]["progressive_disclosure"]["overriddenBy"],
        "env"
    );
    assert_eq!(flags["flags"]["progressive_disclosure"]["enabled"], false);
    assert_eq!(flags["flags"]["hooks_enabled"]["overriddenBy"], Value::Null);
    assert_eq!(flags["flags"]["brand_new"]["overriddenBy"], "env");
    let stderr = sidecar.stderr();
    assert!(
        stderr.contains("FF_OVERRIDE_HOOKS_ENABLED") && stderr.contains("sometimes"),
        "{stderr}"
    );
}

#[test]
fn rollout_through_the_sidecar_follows_the_murmur3_buckets() {
    let sidecar = Sidecar::start_default();
    std::fs::write(
        sidecar.home.join("feature_flags.json"),
        r#"{"flags": {"gr1": {"enabled": true, "rollout_percent": 73},
                      "groupX": {"enabled": true, "rollout_percent": 24}}}"#,
    )
    .unwrap();
    // Unleash's shared vectors: bucket("gr1", "123") = 73, bucket("groupX", "999") = 25.
    let ask = |flag: &str, key: Option<&str>| {
        sidecar.result("isEnabled", json!({"flag": flag, "key": key}))
    };
    assert_eq!(ask("gr1", Some("123")), json!(true));
    assert_eq!(ask("groupX", Some("999")), json!(false));
    assert_eq!(ask("gr1", None), json!(false), "below 100 % without a key");
    assert_eq!(ask("unknown", Some("123")), json!(false));
}

#[test]
fn set_flag_rewrites_the_file_and_refuses_to_overwrite_a_broken_one() {
    let sidecar = Sidecar::start_default();
    let path = sidecar.home.join("feature_flags.json");
    std::fs::write(&path, flags_json(false, 100)).unwrap();

    let set = sidecar.result(
        "setFlag",
        json!({"flag": "progressive_disclosure", "enabled": true}),
    );
    assert_eq!(
        set,
        json!({"enabled": true, "rolloutPercent": 100, "description": "pd", "owner": "dx",
               "overriddenBy": null})
    );
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
    let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(on_disk["flags"]["progressive_disclosure"]["enabled"], true);
    assert_eq!(on_disk["flags"]["hooks_enabled"]["description"], "he");
    assert_eq!(on_disk["_meta"]["version"], 7);
    assert_ne!(on_disk["_meta"]["updated_at"], "2026-12-01T00:00:00Z");
    assert!(on_disk["_meta"]["updated_by"]
        .as_str()
        .unwrap()
        .contains("guidebook setFlag"));

    let set = sidecar.result("setFlag", json!({"flag": "new_flag", "rolloutPercent": 40}));
    assert_eq!(set["enabled"], false);
    assert_eq!(set["rolloutPercent"], 40);

    let (code, message) = sidecar.error("setFlag", json!({"flag": "x", "rolloutPercent": 101}));
    assert_eq!(
        (code, message.contains("rolloutPercent")),
        (-32602, true),
        "{message}"
    );
    let (code, message) = sidecar.error("setFlag", json!({"flag": "no spaces", "enabled": true}));
    assert_eq!(
        (code, message.contains("not a valid flag name")),
        (-32602, true)
    );

    std::fs::write(&path, "{\"flags\": {").unwrap();
    let (code, message) = sidecar.error(
        "setFlag",
        json!({"flag": "progressive_disclosure", "enabled": false}),
    );
    assert_eq!(code, -32020, "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"flags\": {");
    // The served flags are still the last good ones.
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
}

/// Another process holding the flags file's write lock makes `setFlag` fail after a bounded
/// wait, with an error naming the lock, instead of holding the call (and a daemon thread)
/// until the holder lets go; once it does, `setFlag` works again.
#[test]
fn set_flag_waits_for_a_held_lock_for_a_bounded_time() {
    let sidecar = Sidecar::start_default();
    let path = sidecar.home.join("feature_flags.json");
    std::fs::write(&path, flags_json(false, 100)).unwrap();
    let lock_path = sidecar.home.join("feature_flags.json.lock");
    let holder = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap();
    holder.lock().unwrap();
    // The harness's client fails the test if no answer comes within its watchdog.
    let (code, message) = sidecar.error(
        "setFlag",
        json!({"flag": "progressive_disclosure", "enabled": true}),
    );
    assert_eq!(code, -32020, "{message}");
    assert!(
        message.contains(&lock_path.display().to_string()),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        flags_json(false, 100),
        "nothing was written"
    );
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(false));
    holder.unlock().unwrap();
    sidecar.result(
        "setFlag",
        json!({"flag": "progressive_disclosure", "enabled": true}),
    );
    assert_eq!(is_enabled(&sidecar, "progressive_disclosure"), json!(true));
}

/// `guidebook flags set` (no sidecar: it writes the file itself) killed with SIGKILL at random
/// moments, many times: the file is always the old version or the new one, never a broken mix,
/// and no temporary file is left behind after the next successful write. The file holds 3,000
/// flags (~400 KB) so that a kill often lands inside the write.
#[test]
fn a_flag_write_killed_at_any_point_leaves_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path = home.join("feature_flags.json");
    let mut flags = serde_json::Map::new();
    for i in 0..3000 {
        flags.insert(
            format!("flag_{i:04}"),
            json!({"enabled": false, "description": "x".repeat(80), "rollout_percent": 100,
                   "owner": "o"}),
        );
    }
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({"flags": flags})).unwrap(),
    )
    .unwrap();
    let set = |enabled: bool| {
        let mut cmd = Command::new(guidebook_exe());
        cmd.args([
            "flags",
            "set",
            "flag_0000",
            "--enabled",
            &enabled.to_string(),
        ])
        .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
        .env("ADAPTIVE_GUIDEBOOK_SOCKET", home.join("no-sidecar.sock"))
        .env_remove("ADAPTIVE_GUIDEBOOK_FLAGS")
        .env_remove("ADAPTIVE_GUIDEBOOK_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        cmd
    };
    let state = |p: &Path| -> Option<bool> {
        let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap())
            .unwrap_or_else(|e| panic!("a broken flags file after a kill: {e}"));
        assert_eq!(v["flags"].as_object().unwrap().len(), 3000);
        v["flags"]["flag_0000"]["enabled"].as_bool()
    };
    // How long one uninterrupted write takes, so the kills can be spread over all of it.
    let started = Instant::now();
    let out = run_bounded(set(!state(&path).unwrap()), b"", "guidebook flags set");
    assert!(out.status.success());
    let life_us = started.elapsed().as_micros() as u64 * 12 / 10;
    let mut seen_old = 0;
    let mut seen_new = 0;
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..60 {
        let before = state(&path).unwrap();
        let mut child = set(!before).spawn().unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(seed % life_us));
        let _ = child.kill();
        wait_bounded(&mut child, WATCHDOG, "guidebook flags set");
        let after = state(&path).unwrap();
        if after == before {
            seen_old += 1;
        } else {
            seen_new += 1;
        }
    }
    assert!(
        seen_old > 0 && seen_new > 0,
        "the kills did not span the write: {seen_old} old, {seen_new} new"
    );
    // A final, uninterrupted write cleans up any temporary file a killed writer left.
    let out = run_bounded(set(true), b"", "guidebook flags set");
    assert!(out.status.success());
    assert_eq!(state(&path), Some(true));
    let leftovers: Vec<String> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    eprintln!("killed writers: {seen_old} left the old file, {seen_new} the new one");
}

#[test]
fn the_flags_cli_works_with_and_without_a_sidecar() {
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![("FF_OVERRIDE_MODEL_MAP".into(), "true".into())],
        ..SidecarOptions::default()
    });
    let out = sidecar.cli(&["flags", "init"]);
    assert!(out.status.success(), "{out:?}");
    let out = sidecar.cli(&["flags", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for flag in [
        "progressive_disclosure",
        "worktree_readonly",
        "hooks_enabled",
        "ab_test_haiku",
        "trust_summary",
        "model_map",
    ] {
        assert!(text.contains(flag), "{text}");
    }
    // Through the sidecar, its environment's override shows.
    assert!(text.contains("overridden by env"), "{text}");
    let out = sidecar.cli(&["flags", "set", "trust_summary", "--enabled", "true"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(is_enabled(&sidecar, "trust_summary"), json!(true));
    let out = sidecar.cli(&["flags", "get", "trust_summary"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "true");
    let out = sidecar.cli(&["flags", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["flags"]["model_map"]["overriddenBy"], "env");

    // Without a sidecar the same commands work on the file.
    drop(sidecar);
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = Command::new(guidebook_exe());
        cmd.args(args)
            .env("ADAPTIVE_GUIDEBOOK_HOME", dir.path())
            .env_remove("ADAPTIVE_GUIDEBOOK_SOCKET")
            .env_remove("ADAPTIVE_GUIDEBOOK_FLAGS")
            .env_remove("ADAPTIVE_GUIDEBOOK_CONFIG");
        run_bounded(cmd, b"", "guidebook flags")
    };
    let out = run(&["flags", "get", "hooks_enabled"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "false");
    assert!(run(&["flags", "set", "hooks_enabled", "--enabled", "true"])
        .status
        .success());
    let out = run(&["flags", "get", "hooks_enabled"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "true");
    std::fs::write(dir.path().join("feature_flags.json"), "{").unwrap();
    let out = run(&["flags", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("error: "));
}
