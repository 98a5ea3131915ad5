//! Running as a service: socket activation by the real `systemd-socket-activate` with sd_notify
//! readiness, the units `guidebook service install` writes checked by `systemd-analyze verify`,
//! the launchd agent parsed by Python's plistlib, another uid refused, unsafe directories
//! refused, SIGTERM in the middle of a burst, and credentials kept out of the log.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

fn private_dir(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    chmod(path, 0o700);
    path.to_path_buf()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A log without its terminal colour codes.
fn plain(log: &str) -> String {
    regex::Regex::new(r"\x1b\[[0-9;]*m")
        .unwrap()
        .replace_all(log, "")
        .into_owned()
}

/// Receives one sd_notify datagram, bounded by the watchdog.
fn notification(receiver: &UnixDatagram) -> String {
    let mut buf = [0u8; 512];
    let n = receiver
        .recv(&mut buf)
        .expect("an sd_notify message within the watchdog");
    text(&buf[..n])
}

#[test]
fn service_socket_activation_answers_on_the_inherited_socket_and_notifies_systemd() {
    let dir = tempfile::tempdir().unwrap();
    let home = private_dir(&dir.path().join("home"));
    let user_home = private_dir(&dir.path().join("user"));
    let socket = home.join("sidecar.sock");
    let notify_path = dir.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(WATCHDOG)).unwrap();
    let (_root_dir, root) = test_guidebook_dir();
    let stderr_path = dir.path().join("stderr");

    // systemd-socket-activate binds the socket, waits for the first connection, then execs
    // `guidebook serve` in its own process with LISTEN_FDS=1 and LISTEN_PID set. It passes on
    // only the variables named with --setenv.
    let mut activator = Command::new("systemd-socket-activate");
    activator
        .arg("--listen")
        .arg(&socket)
        .arg("--fdname=guidebook")
        .arg(format!(
            "--setenv=ADAPTIVE_GUIDEBOOK_HOME={}",
            home.display()
        ))
        .arg(format!(
            "--setenv=ADAPTIVE_GUIDEBOOK_ROOT={}",
            root.display()
        ))
        .arg(format!("--setenv=NOTIFY_SOCKET={}", notify_path.display()))
        .arg("--setenv=RUST_LOG=info")
        .arg("--setenv=GIT_CONFIG_NOSYSTEM=1")
        .arg(guidebook_exe())
        .arg("serve")
        .env("HOME", &user_home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut child = activator
        .spawn()
        .expect("running systemd-socket-activate (Debian package `systemd`)");
    let log = || plain(&std::fs::read_to_string(&stderr_path).unwrap_or_default());
    // The socket file appears at bind, before systemd-socket-activate listens on it: until
    // then a connection is refused, so the test retries (a refused connection does not count
    // as the first one).
    let started = Instant::now();
    let mut first = loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "systemd-socket-activate exited:\n{}",
            log()
        );
        match UnixStream::connect(&socket) {
            Ok(stream) => break stream,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
                assert!(started.elapsed() < WATCHDOG, "no socket ({e}):\n{}", log());
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("connecting to {}: {e}", socket.display()),
        }
    };

    // The first request starts the daemon, which answers it on the inherited socket.
    send_request(
        &mut first,
        json!({"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}})
            .to_string()
            .as_bytes(),
    );
    let (status, body) = read_response(&mut first);
    assert_eq!(status, 200, "{}", log());
    let response: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(response["result"]["socket"], socket.display().to_string());
    // The guidebook is compiled after the socket answers.
    let started = Instant::now();
    let loaded = loop {
        let (_, body) = http_post(
            &socket,
            json!({"jsonrpc": "2.0", "id": 2, "method": "status", "params": {}})
                .to_string()
                .as_bytes(),
        );
        let response: Value = serde_json::from_slice(&body).unwrap();
        if !response["result"]["guidebook"]["loadedAt"].is_null() {
            break response;
        }
        assert!(started.elapsed() < WATCHDOG, "never loaded:\n{}", log());
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(loaded["result"]["guidebook"]["guidelines"], 5);
    let ready = notification(&notify);
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert!(log().contains("activated=true"), "{}", log());

    // The inherited socket is still the single instance on its path.
    let second = run_bounded(
        {
            let mut cmd = isolated_guidebook();
            cmd.arg("serve")
                .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
                .env("HOME", &user_home);
            cmd
        },
        b"",
        "a second guidebook serve",
    );
    assert!(!second.status.success());
    assert!(
        text(&second.stderr).contains("already running"),
        "{}",
        text(&second.stderr)
    );

    // SIGTERM: STOPPING=1, exit 0, and the socket file is left to the manager that bound it.
    // SAFETY: our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(notification(&notify), "STOPPING=1");
    let status = wait_bounded(&mut child, WATCHDOG, "activated guidebook serve");
    assert_eq!(status.code(), Some(0), "{}", log());
    assert!(
        socket.exists(),
        "an inherited socket belongs to the service manager"
    );
}

/// Runs `guidebook ARGS` with only `HOME` and `XDG_CONFIG_HOME` pointing into the test's dirs.
fn service_cli(user_home: &Path, config_home: &Path, path: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = isolated_guidebook();
    cmd.args(args)
        .env("HOME", user_home)
        .env("XDG_CONFIG_HOME", config_home);
    if let Some(dir) = path {
        let system = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{system}", dir.display()));
    }
    run_bounded(cmd, b"", "guidebook service")
}

fn systemd_analyze_verify(runtime: &Path, user_home: &Path, units: &[PathBuf]) -> Output {
    let mut cmd = Command::new("systemd-analyze");
    cmd.args(["--user", "verify"])
        .args(units)
        // A user manager needs a runtime directory even offline; no systemd runs here.
        .env("XDG_RUNTIME_DIR", runtime)
        .env("HOME", user_home);
    run_bounded(cmd, b"", "systemd-analyze verify")
}

#[test]
fn service_install_writes_units_that_systemd_verifies_and_status_and_uninstall_agree() {
    let dir = tempfile::tempdir().unwrap();
    let user_home = private_dir(&dir.path().join("user"));
    let config_home = dir.path().join("config");
    let runtime = private_dir(&dir.path().join("run"));
    let unit_dir = config_home.join("systemd/user");
    let socket_unit = unit_dir.join("guidebook.socket");
    let service_unit = unit_dir.join("guidebook.service");
    let exe = guidebook_exe().canonicalize().unwrap();

    let out = service_cli(&user_home, &config_home, None, &["service", "install"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!("wrote {} (created)", socket_unit.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("wrote {} (created)", service_unit.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "  systemctl --user daemon-reload\n  systemctl --user enable --now guidebook.socket\n"
        ),
        "{stdout}"
    );
    // The default socket unit is the committed one; the service runs this very binary.
    let committed = |name: &str| std::fs::read_to_string(manifest_dir().join(name)).unwrap();
    assert_eq!(
        std::fs::read_to_string(&socket_unit).unwrap(),
        committed("systemd/guidebook.socket")
    );
    let service = std::fs::read_to_string(&service_unit).unwrap();
    assert!(
        service.contains(&format!("\nExecStart={} serve\n", exe.display())),
        "{service}"
    );
    assert!(service.contains("\nType=notify\n") && service.contains("\nRestart=on-failure\n"));

    // systemd's own verifier accepts them, without a single warning.
    let verify = systemd_analyze_verify(
        &runtime,
        &user_home,
        &[socket_unit.clone(), service_unit.clone()],
    );
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "{}",
        text(&verify.stderr)
    );
    // And it does check them: the committed template names a binary that is not there.
    let template = dir.path().join("template");
    std::fs::create_dir(&template).unwrap();
    let template_service = template.join("guidebook.service");
    std::fs::write(&template_service, committed("systemd/guidebook.service")).unwrap();
    std::fs::write(
        template.join("guidebook.socket"),
        committed("systemd/guidebook.socket"),
    )
    .unwrap();
    let verify = systemd_analyze_verify(&runtime, &user_home, &[template_service]);
    assert!(
        text(&verify.stderr).contains(".cargo/bin/guidebook"),
        "{}",
        text(&verify.stderr)
    );

    // status: both current, nothing answering on the socket.
    let out = service_cli(&user_home, &config_home, None, &["service", "status"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert_eq!(
        stdout.matches("installed, up to date").count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("sidecar: not answering"), "{stdout}");
    std::fs::write(
        &service_unit,
        service.replace("RestartSec=2", "RestartSec=9"),
    )
    .unwrap();
    let out = service_cli(&user_home, &config_home, None, &["service", "status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("differs"),
        "{}",
        text(&out.stdout)
    );

    // --now runs systemctl (a stand-in that records its arguments).
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("systemctl.calls");
    std::fs::write(
        bin.join("systemctl"),
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", calls.display()),
    )
    .unwrap();
    chmod(&bin.join("systemctl"), 0o755);
    let out = service_cli(
        &user_home,
        &config_home,
        Some(&bin),
        &["service", "install", "--now"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("wrote {} (updated)", service_unit.display())),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "--user daemon-reload\n--user enable --now guidebook.socket\n"
    );

    // uninstall removes what install wrote and the link `enable` made, and nothing else.
    let wants = unit_dir.join("sockets.target.wants");
    std::fs::create_dir(&wants).unwrap();
    std::os::unix::fs::symlink(&socket_unit, wants.join("guidebook.socket")).unwrap();
    let neighbour = unit_dir.join("other.service");
    std::fs::write(&neighbour, "[Service]\nExecStart=/bin/true\n").unwrap();
    let out = service_cli(&user_home, &config_home, None, &["service", "uninstall"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(!socket_unit.exists() && !service_unit.exists(), "{stdout}");
    assert!(std::fs::symlink_metadata(wants.join("guidebook.socket")).is_err());
    assert!(neighbour.exists());
    assert!(
        stdout.contains("systemctl --user disable --now guidebook.socket guidebook.service"),
        "{stdout}"
    );
    // A file of the same name that install did not write is left alone.
    std::fs::write(&service_unit, "[Service]\nExecStart=/bin/true\n").unwrap();
    let out = service_cli(&user_home, &config_home, None, &["service", "uninstall"]);
    assert!(service_unit.exists());
    assert!(
        text(&out.stdout).contains("was not written by"),
        "{}",
        text(&out.stdout)
    );
}

/// The plist at `path` as JSON, parsed by Python's plistlib (the format launchd reads).
fn parse_plist(path: &Path) -> Value {
    let script = "import json, plistlib, sys\n\
                  with open(sys.argv[1], 'rb') as f:\n    print(json.dumps(plistlib.load(f)))\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script]).arg(path);
    let out = run_bounded(cmd, b"", "python3 plistlib");
    assert!(
        out.status.success(),
        "{} does not parse: {}",
        path.display(),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_agent_keys(plist: &Value) {
    assert_eq!(plist["Label"], "dev.adaptive-guidebook.sidecar");
    assert_eq!(plist["ProgramArguments"][1], "serve");
    assert_eq!(plist["RunAtLoad"], true);
    assert_eq!(plist["KeepAlive"], json!({"SuccessfulExit": false}));
    assert!(plist["StandardOutPath"].is_string() && plist["StandardErrorPath"].is_string());
}

#[test]
fn service_launchd_agent_parses_and_has_the_required_keys() {
    let committed =
        parse_plist(&manifest_dir().join("launchd/dev.adaptive-guidebook.sidecar.plist"));
    assert_agent_keys(&committed);

    let dir = tempfile::tempdir().unwrap();
    let user_home = private_dir(&dir.path().join("user"));
    let out = service_cli(
        &user_home,
        &dir.path().join("config"),
        None,
        &["service", "install", "--manager", "launchd"],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let path = user_home.join("Library/LaunchAgents/dev.adaptive-guidebook.sidecar.plist");
    assert!(
        stdout.contains(&format!("wrote {} (created)", path.display())),
        "{stdout}"
    );
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    assert!(
        stdout.contains(&format!("launchctl bootstrap gui/{uid} {}", path.display())),
        "{stdout}"
    );
    let installed = parse_plist(&path);
    assert_agent_keys(&installed);
    assert_eq!(
        installed["ProgramArguments"][0],
        guidebook_exe()
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    let log = user_home.join("Library/Logs/adaptive-guidebook.log");
    assert_eq!(installed["StandardErrorPath"], log.display().to_string());
}

/// A copy of the `guidebook` binary that `nobody` can run (the target directory may sit in a
/// home that `nobody` cannot enter).
fn exe_for_nobody(dir: &Path) -> PathBuf {
    let probe = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(guidebook_exe())
        .arg("--version")
        .output()
        .expect("running setpriv");
    if probe.status.success() {
        return guidebook_exe().to_path_buf();
    }
    let copy_dir = dir.join("bin");
    std::fs::create_dir(&copy_dir).unwrap();
    chmod(&copy_dir, 0o755);
    let copy = copy_dir.join("guidebook");
    std::fs::copy(guidebook_exe(), &copy).unwrap();
    chmod(&copy, 0o755);
    copy
}

#[test]
fn service_a_client_running_as_another_uid_is_refused() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test runs as root to drop to `nobody`"
    );
    let (_dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start(&root);
    // Loosen the file permissions so that `nobody` can reach the socket at all: what is tested
    // is the daemon's own uid check, which holds even when the modes are wrong.
    chmod(sidecar.dir.path(), 0o711);
    chmod(&sidecar.home, 0o711);
    chmod(&sidecar.socket, 0o666);
    let exe = exe_for_nobody(sidecar.dir.path());

    // Our own client, as nobody, does not even talk to a socket that is not its user's.
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(exe)
        .args(["status", "--json", "--socket"])
        .arg(&sidecar.socket)
        .env_clear()
        .env("HOME", "/nonexistent")
        .env("PATH", "/usr/bin:/bin");
    let out = run_bounded(cmd, b"", "guidebook status as nobody");
    assert!(
        !out.status.success(),
        "nobody was served: {}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("belongs to uid 0"),
        "{}",
        text(&out.stderr)
    );

    // Any other client, as nobody, is refused by the sidecar itself: a raw `status` request.
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .args(["python3", "-c"])
        .arg(
            "import socket, sys\n\
             s = socket.socket(socket.AF_UNIX)\n\
             s.settimeout(10)\n\
             s.connect(sys.argv[1])\n\
             body = b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}'\n\
             try: s.sendall(b'POST / HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n\
             Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n\
             except OSError: pass\n\
             out = b''\n\
             while True:\n\
             \x20   try: chunk = s.recv(4096)\n\
             \x20   except OSError: break\n\
             \x20   if not chunk: break\n\
             \x20   out += chunk\n\
             sys.stdout.write(out.decode('latin-1'))\n",
        )
        .arg(&sidecar.socket)
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    let out = run_bounded(cmd, b"", "a raw client as nobody");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("version"),
        "nobody was served: {}",
        text(&out.stdout)
    );
    let refused = || {
        sidecar
            .stderr()
            .contains("refused a connection from uid 65534")
    };
    let started = Instant::now();
    while !refused() {
        assert!(
            started.elapsed() < WATCHDOG,
            "no refusal logged:\n{}",
            sidecar.stderr()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The owner is served on the same socket.
    assert!(sidecar.result("status", json!({}))["version"].is_string());
}

fn serve_with_home(home: &Path, extra: &[(&str, &Path)]) -> Output {
    let user_home = home.parent().unwrap().join("user");
    std::fs::create_dir_all(&user_home).unwrap();
    let mut cmd = isolated_guidebook();
    cmd.arg("serve")
        .env("ADAPTIVE_GUIDEBOOK_HOME", home)
        .env("HOME", &user_home);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    run_bounded(cmd, b"", "guidebook serve")
}

#[test]
fn service_a_world_writable_state_directory_stops_the_start_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    chmod(&home, 0o777);
    let out = serve_with_home(&home, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for needle in [
        "refusing to start: HOME_DIR",
        &home.display().to_string(),
        "writable by group or others (mode 0777)",
        &format!("run `chmod 700 {}`", home.display()),
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert_eq!(
        std::fs::read_dir(&home).unwrap().count(),
        0,
        "nothing was written"
    );

    // The database's directory gets the same check.
    chmod(&home, 0o700);
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o770);
    let out = serve_with_home(&home, &[("ADAPTIVE_GUIDEBOOK_DB", &shared.join("gb.db"))]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("database directory {}", shared.display()))
            && stderr.contains("mode 0770"),
        "{stderr}"
    );
    assert!(!shared.join("gb.db").exists());
}

#[test]
fn service_sigterm_during_a_burst_answers_every_accepted_request_and_keeps_the_database_consistent()
{
    let (dir, root) = test_guidebook_dir();
    let mut sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![("RUST_LOG".into(), "info".into())],
        ..SidecarOptions::default()
    });
    // Each search reads four 512 KiB files, so requests overlap and some are mid-flight.
    let big = dir.path().join("big.txt");
    let mut content = String::from("TODO: first line\n");
    while content.len() < 512 * 1024 {
        content.push_str("val order = repository.findById(id) ?: error(\"missing order\")\n");
    }
    std::fs::write(&big, &content).unwrap();
    let mut files = vec![big.display().to_string()];
    for i in 0..3 {
        let link = dir.path().join(format!("link-{i}.txt"));
        std::fs::hard_link(&big, &link).unwrap();
        files.push(link.display().to_string());
    }

    let answered = Arc::new(Mutex::new(BTreeSet::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..12)
        .map(|t| {
            let (socket, files) = (sidecar.socket.clone(), files.clone());
            let (answered, count) = (answered.clone(), count.clone());
            std::thread::spawn(move || {
                for k in 0.. {
                    // Not reaching the daemon any more is the only way out of the loop:
                    // connection refused, or no socket file.
                    let mut stream = match UnixStream::connect(&socket) {
                        Ok(s) => s,
                        Err(e) => {
                            assert!(
                                matches!(
                                    e.kind(),
                                    ErrorKind::NotFound | ErrorKind::ConnectionRefused
                                ),
                                "client {t}: {e}"
                            );
                            return;
                        }
                    };
                    let session = format!("c{t}-{k}");
                    let body = json!({"jsonrpc": "2.0", "id": k, "method": "search",
                        "params": {"sessionId": session, "filepaths": files}});
                    send_request(&mut stream, body.to_string().as_bytes());
                    // Connected means accepted: the answer must come, whole.
                    let (status, body) = read_response(&mut stream);
                    assert_eq!(status, 200, "{session}: {}", String::from_utf8_lossy(&body));
                    let response: Value = serde_json::from_slice(&body)
                        .unwrap_or_else(|e| panic!("{session}: incomplete answer ({e})"));
                    assert_eq!(ids(&response["result"]), ["todo-needs-ticket"], "{session}");
                    answered.lock().unwrap().insert(session);
                    count.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let started = Instant::now();
    while count.load(Ordering::SeqCst) < 24 {
        assert!(started.elapsed() < WATCHDOG, "the burst made no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    sidecar.signal(libc::SIGTERM);
    for client in clients {
        client.join().expect("every accepted request was answered");
    }
    let status = sidecar.wait_exit();
    assert_eq!(status.code(), Some(0), "{}", sidecar.stderr());
    assert!(!sidecar.socket.exists(), "the socket file is removed");
    let log = plain(&sidecar.stderr());
    assert!(
        regex::Regex::new(r"draining in-flight requests connections=[1-9]")
            .unwrap()
            .is_match(&log),
        "nothing was in flight at SIGTERM:\n{log}"
    );

    // The database is intact and records exactly what was answered: every answered session
    // once, nothing for a request that was not answered.
    let db = rusqlite::Connection::open(&sidecar.db).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut rows = db
        .prepare("SELECT session_id, guideline_id FROM presentation")
        .unwrap();
    let rows: Vec<(String, String)> = rows
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let sessions: BTreeSet<String> = rows.iter().map(|(s, _)| s.clone()).collect();
    assert_eq!(rows.len(), sessions.len(), "one row per session");
    assert!(rows.iter().all(|(_, g)| g == "todo-needs-ticket"));
    assert_eq!(sessions, *answered.lock().unwrap());
}

#[test]
fn service_credentials_in_a_remote_url_never_reach_the_log() {
    let (dir, root) = test_guidebook_dir();
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![("RUST_LOG".into(), "trace".into())],
        ..SidecarOptions::default()
    });
    let repo = dir.path().join("backend-x");
    git_repo(
        &repo,
        Some("https://alice:s3cret-token@git.example.com/acme/backend-x.git"),
    );
    let file = write_file(&repo, "src/Main.kt", "fun main() { println(\"hi\") }\n");
    // Resolving the repository is what lets the `acme/backend-*` guideline apply.
    assert_eq!(sidecar.search_ids("s", &[&file]), ["backend-logging"]);
    let explained = sidecar.explain(&[&file]);
    assert_eq!(explained["files"][0]["repository"], "acme/backend-x");

    let log = sidecar.stderr();
    assert!(
        log.contains("acme/backend-x"),
        "identity resolution is logged:\n{log}"
    );
    assert!(
        !log.contains("s3cret"),
        "a credential reached the log:\n{log}"
    );
    assert!(
        !log.contains("alice"),
        "a user name reached the log:\n{log}"
    );
}
