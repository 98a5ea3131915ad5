//! Starting the sidecar on demand: the real `guidebook-hook` finds no sidecar and starts the
//! real `guidebook serve` next to it, once however many shims ask at the same moment. Every
//! daemon a shim starts is stopped by [`StartedDaemons`] when the test ends.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::harness::*;
use crate::hook::{codex_add, BACKEND_KOTLIN_OUTPUT, BACKEND_ORDER, ORDER_PRINTER_KT};

/// The daemons that shims started for one socket, found by the `(pid N)` lines the shims write
/// to the daemon's log. Dropping it stops them (SIGTERM) and waits until each has let go of the
/// socket's `.lock`, so that no test leaves a daemon behind, even when it fails.
struct StartedDaemons {
    socket: PathBuf,
}

impl StartedDaemons {
    fn log(&self) -> String {
        std::fs::read_to_string(self.socket.with_extension("log")).unwrap_or_default()
    }

    fn pids(&self) -> Vec<libc::pid_t> {
        self.log()
            .lines()
            .filter(|l| l.starts_with("guidebook-hook: started"))
            .filter_map(|l| l.rsplit_once("(pid ")?.1.strip_suffix(')')?.parse().ok())
            .collect()
    }

    /// Whether some process holds the daemon's lock on this socket, that is, a daemon lives.
    fn daemon_alive(&self) -> bool {
        let Ok(lock) = std::fs::File::open(format!("{}.lock", self.socket.display())) else {
            return false;
        };
        let free = lock.try_lock().is_ok();
        !free
    }
}

impl Drop for StartedDaemons {
    fn drop(&mut self) {
        let pids = self.pids();
        for &pid in &pids {
            // SAFETY: plain kill(2); a pid that is gone yields ESRCH, which is fine.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        // Not our children (the shims were their parents), so they cannot be waited for; the
        // lock is released when the process ends, zombie or not.
        let started = Instant::now();
        while self.daemon_alive() && started.elapsed() < WATCHDOG {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.daemon_alive() {
            for &pid in &pids {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// A fresh sidecar home (nothing in it yet), a user `HOME`, and a backend-order repository.
struct Fresh {
    _dir: tempfile::TempDir,
    home: PathBuf,
    user_home: PathBuf,
    root: PathBuf,
    repo: PathBuf,
}

fn fresh() -> Fresh {
    let dir = tempfile::Builder::new()
        .prefix("gb-auto-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("guidebook");
    test_guidebook(&root);
    let repo = dir.path().join("backend-order");
    git_repo(&repo, Some(BACKEND_ORDER));
    let user_home = dir.path().join("user");
    std::fs::create_dir_all(&user_home).unwrap();
    Fresh {
        home: dir.path().join("home"),
        user_home,
        root,
        repo,
        _dir: dir,
    }
}

impl Fresh {
    /// The shim's environment with autostart on; the daemon it starts inherits it.
    fn env(&self) -> Vec<(&'static str, &OsStr)> {
        vec![
            ("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART", OsStr::new("0")),
            ("ADAPTIVE_GUIDEBOOK_HOME", self.home.as_os_str()),
            ("ADAPTIVE_GUIDEBOOK_ROOT", self.root.as_os_str()),
            ("HOME", self.user_home.as_os_str()),
            ("GIT_CONFIG_NOSYSTEM", OsStr::new("1")),
            ("RUST_LOG", OsStr::new("info")),
            (
                "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
                OsStr::new(PATIENT_HOOK_TIMEOUT_MS),
            ),
        ]
    }

    fn socket(&self) -> PathBuf {
        self.home.join("sidecar.sock")
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn eight_shims_at_once_with_no_sidecar_start_exactly_one_and_all_get_the_answer() {
    let fresh = fresh();
    let daemons = StartedDaemons {
        socket: fresh.socket(),
    };
    assert!(!fresh.home.exists(), "no sidecar has ever run here");
    let rel = "src/main/kotlin/com/acme/order/OrderPrinter.kt";
    let events: Vec<String> = (0..8)
        .map(|i| codex_add(&format!("auto-{i}"), &fresh.repo, rel, ORDER_PRINTER_KT).to_string())
        .collect();

    let barrier = Arc::new(Barrier::new(events.len()));
    let runs: Vec<ShimRun> = std::thread::scope(|scope| {
        let handles: Vec<_> = events
            .iter()
            .map(|event| {
                let barrier = barrier.clone();
                let env = fresh.env();
                scope.spawn(move || {
                    barrier.wait();
                    run_shim(event, &env)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    for run in &runs {
        assert_eq!(run.stdout, BACKEND_KOTLIN_OUTPUT, "stderr: {}", run.stderr);
    }
    let log = daemons.log();
    assert_eq!(
        count(&log, "guidebook-hook: started"),
        1,
        "exactly one shim starts a daemon:\n{log}"
    );
    assert_eq!(count(&log, " listening"), 1, "{log}");
    assert_eq!(count(&log, "already running"), 0, "{log}");
    let starters = runs
        .iter()
        .filter(|r| r.stderr.contains("started the sidecar"))
        .count();
    assert_eq!(starters, 1);

    // Detached: its own process group, so the agent's signals to the hook's group miss it.
    let [pid] = daemons.pids()[..] else {
        panic!("one pid expected in\n{log}")
    };
    // SAFETY: getpgid has no preconditions.
    assert_eq!(unsafe { libc::getpgid(pid) }, pid, "its own process group");
    assert!(daemons.daemon_alive());
    // And it keeps serving after the shims are gone: a ninth hook needs no start.
    let ninth = codex_add("auto-9", &fresh.repo, rel, ORDER_PRINTER_KT).to_string();
    assert_eq!(run_shim(&ninth, &fresh.env()).stdout, BACKEND_KOTLIN_OUTPUT);
    assert_eq!(count(&daemons.log(), "guidebook-hook: started"), 1);
    drop(daemons);
    assert!(!fresh.socket().exists(), "SIGTERM removed the socket");
}

#[test]
fn no_autostart_prints_nothing_and_starts_nothing() {
    let fresh = fresh();
    let daemons = StartedDaemons {
        socket: fresh.socket(),
    };
    let event = codex_add("off", &fresh.repo, "Main.kt", ORDER_PRINTER_KT).to_string();
    let mut env = fresh.env();
    env[0].1 = OsStr::new("1");
    let run = run_shim(&event, &env);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("cannot reach the sidecar"),
        "{}",
        run.stderr
    );
    assert!(daemons.pids().is_empty());
    assert!(
        !fresh.home.exists(),
        "nothing was created: {}",
        daemons.log()
    );
}

#[test]
fn a_socket_left_by_a_killed_sidecar_is_replaced_by_a_started_one() {
    let fresh = fresh();
    let mut crashed = Sidecar::start_with(SidecarOptions {
        root: Some(fresh.root.clone()),
        socket: Some(fresh.socket()),
        env: Vec::new(),
    });
    crashed.kill();
    assert!(fresh.socket().exists(), "SIGKILL leaves the socket file");
    let daemons = StartedDaemons {
        socket: fresh.socket(),
    };

    let event = codex_add("after-crash", &fresh.repo, "Main.kt", ORDER_PRINTER_KT).to_string();
    let run = run_shim(&event, &fresh.env());
    assert!(
        run.stdout.contains("[kotlin-data-classes]"),
        "{}",
        run.stderr
    );
    assert_eq!(daemons.pids().len(), 1, "{}", daemons.log());
    assert!(Path::new(&fresh.socket()).exists());
}
