//! `scripts/test`, the README's test command: on a machine that lacks what the tests need and
//! where it cannot install anything, it stops before building with one message that names what
//! is missing and the command that installs it.

use std::path::Path;
use std::process::Command;

use crate::harness::*;

/// A directory of links to the programs `scripts/test` may call, minus `leave_out`: a machine
/// where those are not installed (and neither is apt-get, nor sudo).
fn path_without(dir: &Path, leave_out: &[&str]) -> std::path::PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for program in [
        "bash",
        "dirname",
        "sed",
        "git",
        "cc",
        "python3",
        "systemd-socket-activate",
        "systemd-analyze",
        "setpriv",
        "prometheus",
        "openssl",
        "chromium",
        "node",
        "npm",
    ] {
        if leave_out.contains(&program) {
            continue;
        }
        if let Some(found) = which(program) {
            std::os::unix::fs::symlink(found, bin.join(program)).unwrap();
        }
    }
    bin
}

#[test]
fn the_test_command_names_what_is_missing_and_how_to_install_it_before_building() {
    let dir = tempfile::tempdir().unwrap();
    let bin = path_without(dir.path(), &["prometheus", "setpriv"]);
    let mut cmd = Command::new(bin.join("bash"));
    cmd.arg(manifest_dir().join("scripts/test"))
        .arg("--offline")
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", dir.path());
    let out = run_bounded(cmd, b"", "scripts/test without prometheus");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("prometheus (the real Prometheus: scraping /metrics, the team push's remote-write receiver)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("setpriv (the other-user checks)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("sudo apt-get install --no-install-recommends util-linux prometheus"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).is_empty(),
        "nothing was built or run"
    );
}

#[test]
fn the_test_command_without_the_registries_says_what_it_leaves_out() {
    let dir = tempfile::tempdir().unwrap();
    let bin = path_without(dir.path(), &["npm", "node", "prometheus"]);
    let run = |offline: bool| {
        let mut cmd = Command::new(bin.join("bash"));
        cmd.arg(manifest_dir().join("scripts/test"));
        if offline {
            cmd.arg("--offline");
        }
        cmd.env_clear().env("PATH", &bin).env("HOME", dir.path());
        run_bounded(cmd, b"", "scripts/test without npm")
    };
    // Online, npm and node are needed and named, with the way out.
    let online = run(false);
    let stderr = String::from_utf8_lossy(&online.stderr);
    assert_eq!(online.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("npm (the real agents' CLIs)"), "{stderr}");
    assert!(stderr.contains("scripts/test --offline"), "{stderr}");
    // Offline, they are not needed: only prometheus is missing.
    let offline = run(true);
    let stderr = String::from_utf8_lossy(&offline.stderr);
    assert!(!stderr.contains("npm"), "{stderr}");
    assert!(stderr.contains("prometheus"), "{stderr}");
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A plain `cargo test` is fast and offline: every test of a `*_real` module (they install
/// agents and tools from npm and PyPI) starts with the [`real_tests`] gate, which
/// `scripts/test` opens unless `--offline`.
#[test]
fn every_real_agent_test_is_gated_and_the_test_command_opens_the_gate() {
    let mut ungated = Vec::new();
    let mut gated = 0;
    for entry in std::fs::read_dir(manifest_dir().join("tests/it")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with("_real.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("#[test]\n") {
            let body = &text[at..];
            let open = body.find(") {\n").expect("a test function") + 4;
            let name_line = body[..open].lines().last().unwrap_or_default().to_string();
            if body[open..].trim_start().starts_with("if !real_tests() {") {
                gated += 1;
            } else {
                ungated.push(format!("{name}: {name_line}"));
            }
        }
    }
    assert!(gated > 40, "{gated} gated tests found");
    assert_eq!(
        ungated,
        Vec::<String>::new(),
        "real tests a plain `cargo test` would run"
    );
    let script = std::fs::read_to_string(manifest_dir().join("scripts/test")).unwrap();
    assert!(
        script.contains(&format!("export {REAL_TESTS_VARIABLE}=1")),
        "scripts/test opens the gate"
    );
}
