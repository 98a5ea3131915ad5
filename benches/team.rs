//! The team push at the scale a company reaches, against one real Prometheus (Debian's
//! `prometheus`, started here with its remote-write receiver on a temp port and storage):
//!
//! 1. a push of `maxSeries` (2,000) series: encoded in process (wall, CPU, bytes), and
//!    `guidebook metrics push` end to end from a database holding them (wall, CPU);
//! 2. `TEAM_BENCH_SIDECARS` (1,000) simulated sidecars of `TEAM_BENCH_GUIDELINES` (200) active
//!    guidelines, 10 series each (2,000 per sidecar, the budget): each sends its first full
//!    push, then `TEAM_BENCH_ROUNDS` (5) rounds in which a tenth of its series changed, as the
//!    real push encodes them (previous value 1 ms before the new one) — Prometheus's CPU time
//!    and resident memory for it;
//! 3. `guidebook report --team` over all of it: wall and CPU time (the CLI's and Prometheus's),
//!    `TEAM_BENCH_REPORT_RUNS` (3) runs, median.
//!
//! Run with `benches/team.sh` (which also runs the hook with teamMetrics on and off).

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use adaptive_guidebook::config::TeamAuth;
use adaptive_guidebook::metrics::team::http::Client;
use adaptive_guidebook::metrics::team::remote_write::{
    self, Label, Sample, TimeSeries, WriteRequest,
};
use adaptive_guidebook::metrics::team::series::COUNTS;

const SERIES_PER_GUIDELINE: usize = 10;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sidecars: usize = common::env_or("TEAM_BENCH_SIDECARS", 1000);
    let guidelines: usize = common::env_or("TEAM_BENCH_GUIDELINES", 200);
    let rounds: usize = common::env_or("TEAM_BENCH_ROUNDS", 5);
    let report_runs: usize = common::env_or("TEAM_BENCH_REPORT_RUNS", 3);
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut prom = start_prometheus(dir.path(), port);
    let pid = prom.id();
    let write_url = format!("http://127.0.0.1:{port}/api/v1/write");
    let base = format!("http://127.0.0.1:{port}");

    // 1. One push of 2,000 series: encoded in process (what the push thread does besides the
    // database and the socket), then `guidebook metrics push` end to end from a database that
    // holds them.
    let guidebook = env!("CARGO_BIN_EXE_guidebook");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = home.join("config.yaml");
    std::fs::write(
        &config,
        format!("teamMetrics:\n  remoteWriteUrl: {write_url}\n  labels: {{team: bench}}\n"),
    )
    .unwrap();
    let push = || {
        let cpu = common::children_cpu();
        let t = Instant::now();
        let out = Command::new(guidebook)
            .args(["metrics", "push"])
            .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            t.elapsed(),
            common::children_cpu() - cpu,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    push(); // makes the database and its tables
    let max_series = 2000;
    let rows: Vec<(String, String, String, String, u64)> = (0..max_series / SERIES_PER_GUIDELINE)
        .flat_map(|g| {
            COUNTS[..SERIES_PER_GUIDELINE].iter().map(move |c| {
                (
                    c.metric.to_string(),
                    format!("guideline-{g:03}"),
                    c.group.to_string(),
                    c.outcome.to_string(),
                    1 + g as u64 % 7,
                )
            })
        })
        .collect();
    {
        let mut conn = rusqlite::Connection::open(home.join("adaptive-guidebook.db")).unwrap();
        let tx = conn.transaction().unwrap();
        for (m, g, grp, o, v) in &rows {
            tx.execute(
                "INSERT INTO team_counter (metric, guideline, grp, outcome, value) VALUES (?1, ?2, ?3, ?4, ?5)",
                rusqlite::params![m, g, grp, o, *v as i64],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let (mut walls, mut cpus) = (vec![], vec![]);
    let mut said = String::new();
    for _ in 0..11 {
        let (wall, cpu, out) = push();
        walls.push(ms(wall));
        cpus.push(ms(cpu));
        said = out;
    }
    let (mut enc_walls, mut enc_cpus) = (vec![], vec![]);
    let mut encoded = 0;
    for _ in 0..101 {
        let cpu = common::thread_cpu();
        let t = Instant::now();
        let timeseries = rows
            .iter()
            .map(|(m, g, grp, o, v)| {
                let mut labels = vec![
                    label("__name__", m),
                    label("group", grp),
                    label("guideline", g),
                    label("instance", "0123456789abcdef"),
                    label("outcome", o),
                    label("team", "bench"),
                ];
                labels.retain(|l| !l.value.is_empty());
                TimeSeries {
                    labels,
                    samples: vec![
                        Sample {
                            value: *v as f64 - 1.0,
                            timestamp: 1,
                        },
                        Sample {
                            value: *v as f64,
                            timestamp: 2,
                        },
                    ],
                }
            })
            .collect();
        encoded = remote_write::encode(&WriteRequest { timeseries }).len();
        enc_walls.push(ms(t.elapsed()));
        enc_cpus.push(ms(common::thread_cpu() - cpu));
    }
    println!(
        "1. a push of {} series: encoded in process (two samples each) {encoded} bytes, wall {:.2} ms, CPU {:.2} ms (medians of 101); `guidebook metrics push` end to end (every series, one sample each): {}; median of 11: wall {:.1} ms, CPU {:.1} ms (user + system, the whole process)",
        rows.len(),
        common::percentile(&mut enc_walls, 0.5),
        common::percentile(&mut enc_cpus, 0.5),
        said.trim(),
        common::percentile(&mut walls, 0.5),
        common::percentile(&mut cpus, 0.5)
    );

    // 2. The simulated sidecars.
    let client = Client::new(None, Duration::from_secs(120), TeamAuth::None).unwrap();
    // A counter's value in a round: its own start, one more per round (it only rises).
    let values = |s: usize, g: usize, k: usize, round: usize| -> f64 {
        ((s * 7 + g * 3 + k) % 50 + round) as f64
    };
    let cpu_before = common::process_cpu(pid).unwrap();
    let sender_before = common::thread_cpu();
    let started = Instant::now();
    let (mut bytes, mut samples) = (0usize, 0usize);
    for round in 0..=rounds {
        let round_cpu = common::process_cpu(pid).unwrap();
        let round_started = Instant::now();
        for s in 0..sidecars {
            let instance = format!(
                "{:016x}",
                (s as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            );
            let at = now_millis();
            let mut timeseries = Vec::new();
            for g in 0..guidelines {
                for (k, c) in COUNTS[..SERIES_PER_GUIDELINE].iter().enumerate() {
                    // Round 0: every series; later rounds: the tenth that changed.
                    let changed = round > 0 && (s + g + k + round) % 10 == 0;
                    if round > 0 && !changed {
                        continue;
                    }
                    let mut labels = vec![
                        label("__name__", c.metric),
                        label("group", c.group),
                        label("guideline", &format!("guideline-{g:03}")),
                        label("instance", &instance),
                        label("outcome", c.outcome),
                        label("team", "bench"),
                    ];
                    labels.retain(|l| !l.value.is_empty());
                    let now = values(s, g, k, round);
                    let mut points = vec![Sample {
                        value: now,
                        timestamp: at,
                    }];
                    if round > 0 {
                        points.insert(
                            0,
                            Sample {
                                value: values(s, g, k, round - 1),
                                timestamp: at - 1,
                            },
                        );
                    }
                    samples += points.len();
                    timeseries.push(TimeSeries {
                        labels,
                        samples: points,
                    });
                }
            }
            let body = remote_write::encode(&WriteRequest { timeseries });
            bytes += body.len();
            client
                .post(&write_url, &remote_write::HEADERS, &body)
                .unwrap_or_else(|e| panic!("sidecar {s}, round {round}: {e}"));
        }
        println!(
            "   round {round}: {:.1} s, Prometheus CPU {:.1} s, RSS {} MiB",
            round_started.elapsed().as_secs_f64(),
            (common::process_cpu(pid).unwrap() - round_cpu).as_secs_f64(),
            rss_mib(pid, "VmRSS")
        );
    }
    let wall = started.elapsed();
    let prom_cpu = common::process_cpu(pid).unwrap() - cpu_before;
    let sender_cpu = common::thread_cpu() - sender_before;
    let series = sidecars * guidelines * SERIES_PER_GUIDELINE;
    println!(
        "2. {sidecars} sidecars x {guidelines} guidelines = {series} series; {} pushes ({rounds} rounds of changes after the first), {samples} samples, {:.1} MiB on the wire",
        sidecars * (rounds + 1),
        bytes as f64 / 1048576.0
    );
    println!(
        "   ingest: wall {:.1} s; Prometheus CPU {:.1} s ({:.2} µs per sample, {:.0} % of one core); senders' CPU {:.1} s",
        wall.as_secs_f64(),
        prom_cpu.as_secs_f64(),
        prom_cpu.as_secs_f64() * 1e6 / samples as f64,
        100.0 * prom_cpu.as_secs_f64() / wall.as_secs_f64(),
        sender_cpu.as_secs_f64()
    );
    println!(
        "   Prometheus memory: RSS {} MiB, peak {} MiB ({:.1} KiB per series)",
        rss_mib(pid, "VmRSS"),
        rss_mib(pid, "VmHWM"),
        rss_mib(pid, "VmRSS") as f64 * 1024.0 / series as f64
    );

    // 3. report --team over all of it.
    let (mut walls, mut cli_cpus, mut prom_cpus) = (vec![], vec![], vec![]);
    let mut instances = 0;
    for _ in 0..report_runs {
        let cpu = common::children_cpu();
        let p = common::process_cpu(pid).unwrap();
        let t = Instant::now();
        let out = Command::new(guidebook)
            .args(["report", "--team", &base, "--json"])
            .env("ADAPTIVE_GUIDEBOOK_HOME", &home)
            .output()
            .unwrap();
        walls.push(t.elapsed().as_secs_f64());
        cli_cpus.push(ms(common::children_cpu() - cpu));
        prom_cpus.push((common::process_cpu(pid).unwrap() - p).as_secs_f64());
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        instances = v["instances"].as_u64().unwrap_or(0);
    }
    println!(
        "3. report --team over {series} series ({instances} instances with sessions): median of {report_runs}: wall {:.2} s; CPU: the CLI {:.0} ms, Prometheus {:.2} s",
        common::percentile(&mut walls, 0.5),
        common::percentile(&mut cli_cpus, 0.5),
        common::percentile(&mut prom_cpus, 0.5)
    );
    let _ = prom.kill();
    let _ = prom.wait();
}

fn label(name: &str, value: &str) -> Label {
    Label {
        name: name.into(),
        value: value.into(),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rss_mib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

// The child is returned; main kills and waits for it.
#[allow(clippy::zombie_processes)]
fn start_prometheus(dir: &std::path::Path, port: u16) -> Child {
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let mut child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("the real Prometheus: apt-get install prometheus");
    let started = Instant::now();
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("prometheus did not start within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
