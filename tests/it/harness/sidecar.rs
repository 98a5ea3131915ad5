//! A real `guidebook serve` on a temp socket with a temp HOME, killed when dropped, and the
//! calls the tests make of it: JSON-RPC, the CLI, the shim, `status` polled until it holds.

use super::*;

/// How to start a sidecar.
#[derive(Debug, Default)]
pub struct SidecarOptions {
    /// The guidebook root; `None` leaves the default (`HOME/guidebook`, the embedded sample).
    pub root: Option<PathBuf>,
    /// Socket path; `None` leaves the default `HOME/sidecar.sock`.
    pub socket: Option<PathBuf>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

/// A real `guidebook serve` on a temp socket with a temp HOME. Killed when dropped.
pub struct Sidecar {
    /// Owns every file of this sidecar; removed on drop.
    pub dir: TempDir,
    /// `ADAPTIVE_GUIDEBOOK_HOME`.
    pub home: PathBuf,
    pub socket: PathBuf,
    pub db: PathBuf,
    /// `HOME` for the daemon and the git it runs: keeps the developer's git config out.
    pub user_home: PathBuf,
    options: SidecarOptions,
    stderr_path: PathBuf,
    child: Option<Child>,
}

impl Sidecar {
    /// Starts a sidecar serving the guidebook at `root`.
    pub fn start(root: &Path) -> Sidecar {
        Self::start_with(SidecarOptions {
            root: Some(root.to_path_buf()),
            ..SidecarOptions::default()
        })
    }

    /// Starts a sidecar with the default root (the embedded sample, installed on first start).
    pub fn start_default() -> Sidecar {
        Self::start_with(SidecarOptions::default())
    }

    pub fn start_with(options: SidecarOptions) -> Sidecar {
        let dir = tempfile::Builder::new()
            .prefix("gb-it-")
            .tempdir()
            .expect("a temp dir");
        let home = dir.path().join("home");
        let user_home = dir.path().join("user");
        std::fs::create_dir_all(&user_home).unwrap();
        let socket = options
            .socket
            .clone()
            .unwrap_or_else(|| home.join("sidecar.sock"));
        let mut sidecar = Sidecar {
            db: home.join("adaptive-guidebook.db"),
            stderr_path: dir.path().join("sidecar.stderr"),
            home,
            socket,
            user_home,
            options,
            dir,
            child: None,
        };
        sidecar.spawn();
        sidecar
    }

    /// The environment every `guidebook` process of this sidecar runs with.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "ADAPTIVE_GUIDEBOOK_HOME".into(),
                self.home.display().to_string(),
            ),
            ("HOME".into(), self.user_home.display().to_string()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("RUST_LOG".into(), "warn".into()),
        ];
        if let Some(root) = &self.options.root {
            env.push(("ADAPTIVE_GUIDEBOOK_ROOT".into(), root.display().to_string()));
        }
        if let Some(socket) = &self.options.socket {
            env.push((
                "ADAPTIVE_GUIDEBOOK_SOCKET".into(),
                socket.display().to_string(),
            ));
        }
        env.extend(self.options.env.iter().cloned());
        env
    }

    /// A `guidebook ARGS` command with this sidecar's environment.
    pub fn guidebook(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(guidebook_exe());
        for var in INHERITED_SETTINGS {
            cmd.env_remove(var);
        }
        cmd.args(args).envs(self.env()).current_dir(self.dir.path());
        cmd
    }

    /// Runs `guidebook ARGS` to completion (bounded by the watchdog).
    pub fn cli(&self, args: &[&str]) -> Output {
        run_bounded(self.guidebook(args), b"", "guidebook CLI")
    }

    fn spawn(&mut self) {
        let stderr = std::fs::File::create(&self.stderr_path).unwrap();
        let child = self
            .guidebook(&["serve"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawning guidebook serve");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Polls until the socket accepts connections and the guidebook is loaded (the daemon
    /// answers before it has compiled its guidebook; `status` says `loadedAt: null` until
    /// then); fails with the daemon's stderr if it exits.
    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if UnixStream::connect(&self.socket).is_ok() {
                let status = self.call("status", json!({}));
                if !status["result"]["guidebook"]["loadedAt"].is_null() {
                    return;
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "guidebook serve exited early with {status}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                started.elapsed() < WATCHDOG,
                "guidebook serve did not listen on {} within {WATCHDOG:?}:\n{}",
                self.socket.display(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// What the daemon logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn pid(&self) -> libc::pid_t {
        self.child.as_ref().expect("running").id() as libc::pid_t
    }

    /// Stops the daemon (SIGTERM) and starts a new one on the same home, database and socket.
    pub fn restart(&mut self) {
        let status = self.stop();
        assert!(status.success(), "the sidecar exited with {status}");
        self.spawn();
    }

    /// Sends SIGTERM and waits (bounded) for the daemon to exit; returns its exit status.
    pub fn stop(&mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit()
    }

    /// Waits (bounded) for the daemon to exit after a signal; returns its exit status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        wait_bounded(&mut child, WATCHDOG, "guidebook serve after a signal")
    }

    /// Starts a new daemon on the same home, database and socket after [`Sidecar::kill`] or
    /// [`Sidecar::stop`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the sidecar is still running");
        self.spawn();
    }

    /// Sends SIGKILL and reaps the daemon: a crash that leaves the socket file behind.
    pub fn kill(&mut self) {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let _ = child.wait();
    }

    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: the pid is our own child, not yet reaped.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid());
    }

    /// Sends one HTTP/1.1 `POST /` with `body` and returns the status and body.
    pub fn raw(&self, body: &[u8]) -> (u16, Vec<u8>) {
        http_post(&self.socket, body)
    }

    /// One JSON-RPC call; returns the whole response object.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, body) = self.raw(request.to_string().as_bytes());
        assert_eq!(
            status,
            200,
            "{method}: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
        serde_json::from_slice(&body).unwrap_or_else(|e| {
            panic!(
                "{method}: response is not JSON ({e}): {}",
                String::from_utf8_lossy(&body)
            )
        })
    }

    /// A call that must succeed; returns its `result`.
    pub fn result(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// A call that must fail; returns its error `code` and `message`.
    pub fn error(&self, method: &str, params: Value) -> (i64, String) {
        rpc_error(&self.call(method, params))
    }

    /// The ids `search` returns for these files in this session (recording them).
    pub fn search_ids(&self, session: &str, files: &[&Path]) -> Vec<String> {
        ids(&self.result(
            "search",
            json!({"sessionId": session, "filepaths": paths(files)}),
        ))
    }

    /// The `explain` result for these files.
    pub fn explain(&self, files: &[&Path]) -> Value {
        self.result("explain", json!({"filepaths": paths(files)}))
    }

    /// Runs the real shim on `event` against this sidecar, with a patient timeout.
    pub fn hook(&self, event: &Value) -> ShimRun {
        self.hook_with(&shim_exe(), event)
    }

    /// [`Sidecar::hook`] with a given build of the shim.
    pub fn hook_with(&self, exe: &Path, event: &Value) -> ShimRun {
        run_shim_exe(
            exe,
            &[],
            &event.to_string(),
            &[
                ("ADAPTIVE_GUIDEBOOK_SOCKET", self.socket.as_os_str()),
                (
                    "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
                    OsStr::new(PATIENT_HOOK_TIMEOUT_MS),
                ),
                ("HOME", self.user_home.as_os_str()),
            ],
        )
    }

    /// Polls `status` until `done` holds, bounded (the sidecar reloads about every 400 ms).
    pub fn wait_for_status(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let limit = Duration::from_secs(10);
        let started = Instant::now();
        loop {
            let status = self.result("status", json!({}));
            if done(&status) {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "{what}: not within {limit:?}; last status {status}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The `code` and `message` of a JSON-RPC error response.
pub fn rpc_error(response: &Value) -> (i64, String) {
    let error = response
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {response}"));
    (
        error["code"].as_i64().expect("an integer code"),
        error["message"].as_str().expect("a message").to_string(),
    )
}

pub fn paths(files: &[&Path]) -> Vec<String> {
    files.iter().map(|p| p.display().to_string()).collect()
}

/// The `id`s of a `search` result, in order.
pub fn ids(result: &Value) -> Vec<String> {
    result
        .as_array()
        .unwrap_or_else(|| panic!("search result is not an array: {result}"))
        .iter()
        .map(|g| g["id"].as_str().expect("an id").to_string())
        .collect()
}

/// Turns the `hooks_enabled` flag on in the sidecar's flags file (the circuit breaker's switch).
pub fn enable_hooks(sidecar: &Sidecar) {
    std::fs::write(
        sidecar.home.join("feature_flags.json"),
        r#"{"flags": {"hooks_enabled": {"enabled": true}}}"#,
    )
    .unwrap();
}
