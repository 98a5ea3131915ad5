//! A deterministic synthetic workload shared by the benchmarks: guidebooks and Kotlin files.
//!
//! A guidebook of N guidelines with 1–3 regexes each (shaped like real ones: identifiers,
//! annotations, call sites, config keys) and Kotlin files of about 20 KB in a git repository
//! with a real `origin`. `BENCH_CORPUS=near-miss` switches every bench to the near-miss corpus:
//! patterns naming domain identifiers (`\bOrderInvoiceLedgerImpl\(`) and files dense with
//! identifiers that share their words and prefixes (`OrderInvoiceLedgerBuilder(x)`), with one
//! real hit in about 200 lines.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A small xorshift generator: the workload must be identical run to run, and a dependency for
/// this would be overkill.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "order",
    "payment",
    "invoice",
    "customer",
    "account",
    "ledger",
    "shipment",
    "cart",
    "catalog",
    "pricing",
    "refund",
    "session",
    "token",
    "inventory",
    "warehouse",
    "audit",
];

fn camel(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Pattern shapes seen in real guidebooks; `{n}` and `{w}` make each one distinct.
fn pattern(rng: &mut Rng, n: usize) -> String {
    let w = WORDS[rng.below(WORDS.len() as u64) as usize];
    let cw = camel(&[w]);
    match rng.below(8) {
        0 => format!(r"\b{w}Client{n}\s*\.\s*(get|post|put)\s*\("),
        1 => format!(r"import\s+com\.acme\.legacy\.{w}{n}\b"),
        2 => format!(r"@Deprecated{cw}{n}\b"),
        3 => format!(r"(?i)todo[-_ ]{w}-{n}"),
        4 => format!(r"val\s+\w+{cw}Config{n}\s*="),
        5 => format!(r#""{w}\.endpoint\.{n}"\s*[:=]"#),
        6 => format!(r"{cw}Repository{n}\.find(All|By\w+)\("),
        _ => format!(r"Thread\.sleep\(\s*{n}\d{{2,}}\s*\)"),
    }
}

/// Whether `BENCH_CORPUS=near-miss` asks for the near-miss corpus.
pub fn near_miss() -> bool {
    std::env::var("BENCH_CORPUS").is_ok_and(|c| c == "near-miss")
}

/// Whether `BENCH_MATCH_IN=changes` asks for guidelines that look only at the written lines.
pub fn match_in_changes() -> bool {
    std::env::var("BENCH_MATCH_IN").is_ok_and(|c| c == "changes")
}

/// The corpus's name, for reports.
pub fn corpus_name() -> &'static str {
    if near_miss() {
        "near-miss"
    } else {
        "classic"
    }
}

const SUFFIXES: &[&str] = &[
    "Impl",
    "Builder",
    "Factory",
    "Client",
    "Service",
    "Repository",
    "Handler",
    "Mapper",
    "Validator",
    "Provider",
];

/// The identifier of near-miss pattern `k`: three domain words and a suffix, all distinct up to
/// 16 × 16 × 16 × 10 combinations.
fn near_miss_identifier(k: usize) -> String {
    let w = |i: usize| camel(&[WORDS[i % WORDS.len()]]);
    format!(
        "{}{}{}{}",
        w(k),
        w(k / 16 + 3),
        w(k / 256 + 7),
        SUFFIXES[(k / 4096) % SUFFIXES.len()]
    )
}

/// Near-miss pattern `k`, in one of three shapes.
fn near_miss_pattern(k: usize) -> String {
    let id = near_miss_identifier(k);
    match k % 3 {
        0 => format!(r"\b{id}\("),
        1 => format!(r"\b{id}\.\w+\("),
        _ => format!(r"val\s+\w+\s*:\s*{id}\b"),
    }
}

/// Near-miss guideline `i`'s patterns: 1–3 of them, numbered so that they stay distinct.
fn near_miss_patterns(i: usize) -> Vec<usize> {
    (0..1 + i % 3).map(|j| i * 3 + j).collect()
}

/// Writes `count` guidelines under `root/guidelines/gNNNN/guideline.yaml`. About a third are
/// scoped to Kotlin, a sixth to Java, a sixth to YAML, the rest unscoped; a quarter carry a
/// repository scope. With `BENCH_CORPUS=near-miss`, the patterns are the near-miss ones; with
/// `BENCH_MATCH_IN=changes`, every guideline says `match.in: changes`.
pub fn write_guidebook(root: &Path, count: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for i in 0..count {
        let dir = root.join("guidelines").join(format!("g{i:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut yaml = format!("id: g{i:05}\n");
        let langs = match rng.below(6) {
            0 | 1 => Some("[kotlin]"),
            2 => Some("[java]"),
            3 => Some("[yaml]"),
            _ => None,
        };
        let repos = match rng.below(8) {
            0 => Some("['acme/backend-*']"),
            1 => Some("['acme/**']"),
            _ => None,
        };
        if langs.is_some() || repos.is_some() {
            yaml.push_str("scope:\n");
            if let Some(r) = repos {
                yaml.push_str(&format!("  repositories: {r}\n"));
            }
            if let Some(l) = langs {
                yaml.push_str(&format!("  languages: {l}\n"));
            }
        }
        yaml.push_str("match:\n");
        if match_in_changes() {
            yaml.push_str("  in: changes\n");
        }
        yaml.push_str("  any:\n");
        let patterns: Vec<String> = if near_miss() {
            near_miss_patterns(i)
                .into_iter()
                .map(near_miss_pattern)
                .collect()
        } else {
            (0..1 + rng.below(3))
                .map(|_| pattern(&mut rng, i))
                .collect()
        };
        for p in patterns {
            yaml.push_str(&format!(
                "    - regex:\n        pattern: '{}'\n",
                p.replace('\'', "''")
            ));
        }
        yaml.push_str(&format!(
            "content: |\n  Guideline {i}: keep the {} module's calls behind its port and document why.\n",
            WORDS[i % WORDS.len()]
        ));
        std::fs::write(dir.join("guideline.yaml"), yaml).unwrap();
    }
}

/// Writes `count` Kotlin files of about `bytes` bytes each into `dir`; each contains a few
/// lines that trigger guidelines with numbers below `guidelines`.
pub fn write_kotlin_files(
    dir: &Path,
    count: usize,
    bytes: usize,
    guidelines: usize,
    seed: u64,
) -> Vec<PathBuf> {
    if near_miss() {
        return write_near_miss_files(dir, count, bytes, guidelines, seed);
    }
    let mut rng = Rng::new(seed);
    std::fs::create_dir_all(dir).unwrap();
    (0..count)
        .map(|f| {
            let mut s = format!("package com.acme.backend.file{f}\n\nimport kotlinx.coroutines.flow.Flow\nimport org.springframework.stereotype.Service\n\n");
            let mut fun = 0;
            while s.len() < bytes {
                let w = WORDS[rng.below(WORDS.len() as u64) as usize];
                let cw = camel(&[w]);
                s.push_str(&format!(
                    "@Service\nclass {cw}Service{f}x{fun}(private val repo: {cw}Repository) {{\n    suspend fun handle{cw}(id: Long, request: {cw}Request): {cw}Response {{\n        val existing = repo.findById(id) ?: throw NotFoundException(\"{w} $id\")\n        val updated = existing.copy(status = request.status, updatedAt = clock.now())\n        logger.info(\"updated {w} {{}}\", id)\n        return {cw}Response.from(repo.save(updated))\n    }}\n}}\n\n"
                ));
                if rng.below(4) == 0 {
                    let n = rng.below(guidelines as u64);
                    s.push_str(&format!("// todo-{w}-{n}: revisit\nval x{fun} = {w}Client{n}.get(\"/{w}\")\n"));
                }
                fun += 1;
            }
            let p = dir.join(format!("File{f}.kt"));
            std::fs::write(&p, s).unwrap();
            p
        })
        .collect()
}

/// Kotlin files dense with identifiers that share words and prefixes with the near-miss
/// patterns (the same words, another suffix or order, a call where a declaration is wanted),
/// and one real hit of a guideline below `guidelines` in about 200 lines.
fn write_near_miss_files(
    dir: &Path,
    count: usize,
    bytes: usize,
    guidelines: usize,
    seed: u64,
) -> Vec<PathBuf> {
    let mut rng = Rng::new(seed);
    std::fs::create_dir_all(dir).unwrap();
    (0..count)
        .map(|f| {
            let mut s = format!("package com.acme.backend.file{f}\n\nimport com.acme.domain.*\n\n");
            let mut lines = 0;
            while s.len() < bytes {
                let k = rng.below((guidelines as u64 * 3).max(1)) as usize;
                let near = near_miss_identifier(k);
                let other = SUFFIXES[rng.below(SUFFIXES.len() as u64) as usize];
                let stem = near.trim_end_matches(|c: char| c.is_ascii_lowercase());
                let stem = stem
                    .strip_suffix(|c: char| c.is_ascii_uppercase())
                    .unwrap_or(stem);
                // Mostly the same words with another ending; one line in six names a guideline's
                // identifier exactly, in a place its pattern does not match.
                let line = match rng.below(6) {
                    0 => format!("    val x{lines} = {stem}{other}Builder(x)\n"),
                    1 => format!(
                        "    val y{lines}: {stem}{other}s = {stem}{other}Factory.create()\n"
                    ),
                    2 => format!("    fun make{lines}(): {stem}Dto = {stem}Dto({lines})\n"),
                    3 => format!("    // see {near}Test for the contract\n"),
                    4 => format!("    private val h{lines} = {stem}{other}Holder()\n"),
                    _ => format!("    val z{lines} = listOf({stem}, {stem}{other}s)\n"),
                };
                s.push_str(&line);
                lines += 1;
                if rng.below(200) == 0 {
                    let i = rng.below(guidelines.max(1) as u64) as usize;
                    let id = near_miss_identifier(near_miss_patterns(i)[0]);
                    s.push_str(&format!("    val hit{lines} = {id}(x)\n"));
                }
            }
            let p = dir.join(format!("File{f}.kt"));
            std::fs::write(&p, s).unwrap();
            p
        })
        .collect()
}

/// `git init` + `git remote add origin URL` in `dir`.
pub fn git_repo(dir: &Path, origin: &str) {
    std::fs::create_dir_all(dir).unwrap();
    for args in [vec!["init", "-q"], vec!["remote", "add", "origin", origin]] {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(&args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}

/// Median and the given percentile of `samples` (sorted in place), in the samples' unit.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let idx = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[idx.min(samples.len() - 1)]
}

/// A `guidebook serve` started for a benchmark; killed when dropped.
pub struct BenchSidecar {
    pub child: std::process::Child,
    pub socket: PathBuf,
    /// From spawn until the socket accepted a connection (the guidebook is compiled after).
    pub startup: std::time::Duration,
    /// From spawn until the first `search` was answered: the guidebook loaded and compiled.
    pub ready: std::time::Duration,
}

impl BenchSidecar {
    /// Starts the release `guidebook serve` with its home under `home`, serving `root`.
    pub fn start(guidebook: &Path, home: &Path, root: &Path) -> BenchSidecar {
        Self::start_with_env(guidebook, home, root, &[])
    }

    /// Like [`BenchSidecar::start`], with more environment for the daemon.
    pub fn start_with_env(
        guidebook: &Path,
        home: &Path,
        root: &Path,
        env: &[(&str, &str)],
    ) -> BenchSidecar {
        let socket = home.join("sidecar.sock");
        let started = std::time::Instant::now();
        let child = Command::new(guidebook)
            .arg("serve")
            .envs(env.iter().copied())
            .env("ADAPTIVE_GUIDEBOOK_HOME", home)
            .env("ADAPTIVE_GUIDEBOOK_ROOT", root)
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(120),
                "sidecar did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let startup = started.elapsed();
        // The first search waits for the guidebook's first load.
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"sessionId":"bench-ready","filepaths":["/nonexistent/bench-ready.kt"]}}"#;
        let mut s = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        use std::io::{Read, Write};
        s.write_all(http_post(body).as_bytes()).unwrap();
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "the first search failed"
        );
        BenchSidecar {
            startup,
            ready: started.elapsed(),
            child,
            socket,
        }
    }

    /// Peak resident memory so far (`VmHWM`, Linux only), in KiB.
    /// CPU time (user + system) the sidecar has used so far, all its threads (Linux only).
    pub fn cpu(&self) -> Option<std::time::Duration> {
        process_cpu(self.child.id())
    }

    pub fn peak_rss_kib(&self) -> Option<u64> {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()?
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }
}

impl Drop for BenchSidecar {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// One `search` over a fresh connection, as the shim does it: the time from connect to the last
/// byte, and the number of guidelines returned. `Err` on any failure.
pub fn search_once(
    socket: &Path,
    session: &str,
    files: &[PathBuf],
) -> Result<(std::time::Duration, usize), String> {
    let (elapsed, text) = post_search(socket, session, files)?;
    Ok((elapsed, text.matches("\"id\":\"g").count()))
}

/// The ids of the guidelines one `search` returns (a new session, no budget).
pub fn search_ids(socket: &Path, session: &str, files: &[PathBuf]) -> Result<Vec<String>, String> {
    let (_, text) = post_search(socket, session, files)?;
    let json = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("{e}: {text}"))?;
    let list = v["result"].as_array().ok_or_else(|| text.clone())?;
    Ok(list
        .iter()
        .filter_map(|g| g["id"].as_str().map(str::to_string))
        .collect())
}

/// One `search` over a fresh connection: its round trip and the whole HTTP response, or the
/// response when it is not a result.
fn post_search(
    socket: &Path,
    session: &str,
    files: &[PathBuf],
) -> Result<(std::time::Duration, String), String> {
    use std::io::{Read, Write};
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "search",
        "params": {"sessionId": session, "filepaths": files}})
    .to_string();
    let request = http_post(&body);
    let start = std::time::Instant::now();
    let mut s = std::os::unix::net::UnixStream::connect(socket).map_err(|e| e.to_string())?;
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let text = String::from_utf8_lossy(&out).into_owned();
    if !text.starts_with("HTTP/1.1 200") || text.contains("\"error\"") {
        return Err(text);
    }
    Ok((elapsed, text))
}

/// A whole `POST /` request carrying `body`, to be sent in one write as the shim sends it: a
/// request written piece by piece (`write!` on the stream) reaches the sidecar in several
/// segments, each a wake-up and a read of its own, which the shim never pays.
pub fn http_post(body: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An environment variable parsed, or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where the benchmarks write their JSON: `target/bench-results/`.
pub fn results_dir() -> PathBuf {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&out).unwrap();
    out
}

/// Runs `cmd` with `stdin` written to it and its stderr discarded: the time from spawn to exit,
/// and what it printed.
pub fn spawn_timed(
    cmd: &mut std::process::Command,
    stdin: &[u8],
) -> (std::time::Duration, Vec<u8>) {
    use std::io::{Read, Write};
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.wait().unwrap();
    (start.elapsed(), out)
}

/// CPU time (user + system) process `pid` has used so far, from `/proc/PID/stat` (Linux only).
pub fn process_cpu(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Some(std::time::Duration::from_micros(
        ticks * 1_000_000 / per_second,
    ))
}

/// CPU time (user + system) of this process's children that have been waited for.
pub fn children_cpu() -> std::time::Duration {
    rusage_cpu(libc::RUSAGE_CHILDREN)
}

/// CPU time (user + system) of the calling thread.
pub fn thread_cpu() -> std::time::Duration {
    rusage_cpu(libc::RUSAGE_THREAD)
}

fn rusage_cpu(who: libc::c_int) -> std::time::Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}
