//! The real Prometheus from Debian's package, started on a temp port and temp storage (with its
//! remote-write receiver, optionally behind its own web config: basic auth and TLS), killed
//! when dropped, restartable on the same storage; and a minimal remote-write receiver of our
//! own for what a real server cannot be made to answer on demand (503, 429, 400).

use super::*;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A real `prometheus` process.
pub struct Prometheus {
    pub dir: TempDir,
    pub port: u16,
    web_config: Option<PathBuf>,
    child: Option<Child>,
}

/// A port nothing listens on right now.
pub fn unused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn prometheus_exe() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("prometheus"))
                .find(|p| p.is_file())
        })
        .expect(
            "the real Prometheus server is needed: apt-get install prometheus (.ci/run installs it)",
        )
}

impl Prometheus {
    /// Starts Prometheus with the remote-write receiver; `web_config` is the text of its
    /// `--web.config.file`, if any (written beside its storage).
    pub fn start(web_config: Option<&str>) -> Prometheus {
        let dir = tempfile::Builder::new()
            .prefix("gb-prom-")
            .tempdir()
            .unwrap();
        let web_config = web_config.map(|text| {
            let path = dir.path().join("web.yml");
            std::fs::write(&path, text).unwrap();
            path
        });
        let mut p = Prometheus {
            port: unused_port(),
            dir,
            web_config,
            child: None,
        };
        p.spawn();
        p
    }

    /// The remote-write URL, over `scheme` (`http`, or `https` with a TLS web config).
    pub fn write_url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}/api/v1/write", self.port)
    }

    pub fn base_url(&self, scheme: &str) -> String {
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let config = self.dir.path().join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("prometheus.log"))
            .unwrap();
        let mut cmd = Command::new(prometheus_exe());
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--web.enable-remote-write-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(web) = &self.web_config {
            cmd.arg(format!("--web.config.file={}", web.display()));
        }
        self.child = Some(cmd.spawn().expect("starting prometheus"));
        self.wait_ready();
    }

    /// Polls until Prometheus accepts connections and says it is ready (any answer of its web
    /// server counts: behind basic auth, `/-/ready` answers 401).
    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Some((status, _)) = plain_get(self.port, "/-/ready") {
                if status == 200 || status == 401 || status == 400 {
                    return;
                }
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("prometheus exited with {status}:\n{}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "prometheus not ready within 60 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// Kills it (SIGKILL), its storage kept.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and storage.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none());
        self.spawn();
    }

    /// The instant vector of `query` (plain HTTP, no auth): (labels, value) per series.
    pub fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let path = format!("/api/v1/query?query={}", encode_component(query));
        let (status, body) = plain_get(self.port, &path).expect("prometheus answers");
        assert_eq!(status, 200, "{query}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["metric"].clone(),
                    s["value"][1].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.kill();
    }
}

fn encode_component(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `GET path` on 127.0.0.1:port over plain HTTP/1.0 (so the body comes unchunked): the status
/// and body, or `None` if nothing answers.
pub fn plain_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::net::TcpStream;
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = Vec::new();
    s.read_to_end(&mut text).ok()?;
    let text = String::from_utf8_lossy(&text).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// One request a [`Receiver`] got: its headers (names lowercased) and body.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub status: u16,
}

/// A remote-write receiver of our own on 127.0.0.1: answers each POST with the next status of
/// `statuses` (the last one repeated) and keeps what it got.
pub struct Receiver {
    pub port: u16,
    pub got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub fn start(statuses: &[u16]) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let statuses = statuses.to_vec();
        {
            let got = got.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { return };
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let n = got.lock().unwrap().len();
                    let status = statuses[n.min(statuses.len() - 1)];
                    let Some(request) = read_request(&mut stream, status) else {
                        continue;
                    };
                    got.lock().unwrap().push(request);
                    let reason = if status < 300 { "OK" } else { "Refused" };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} {reason}\r\nContent-Length: 7\r\nConnection: close\r\n\r\nanswer\n"
                    );
                }
            });
        }
        Receiver { port, got }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

/// Reads one request off `stream`, to be answered with `status`.
fn read_request(stream: &mut std::net::TcpStream, status: u16) -> Option<Received> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).ok()?;
    Some(Received {
        headers,
        body,
        status,
    })
}
