//! The rollout's measurements end to end: what the real sidecar records (prompt builds, edit
//! hooks, an orchestrator's QC results, re-reviews, session tokens, A/B assignments), the
//! `.metrics/` files `guidebook metrics` and `guidebook ab report` write from them, the alert,
//! and the Prometheus endpoint scraped by a real Prometheus, loopback unless allowed, and capped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{Sidecar, SidecarOptions, WATCHDOG};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `guidebook ARGS --json`, polled until `done` holds for its JSON: the recorder writes the
/// sidecar's own observations on its thread, a moment after the call that made them. The last
/// run's output (whatever its exit status) and JSON.
fn poll(
    sidecar: &Sidecar,
    args: &[&str],
    done: impl Fn(&Value) -> bool,
) -> (std::process::Output, Value) {
    let started = Instant::now();
    loop {
        let out = sidecar.cli(args);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{args:?}: not JSON ({e}): {}{}", stdout(&out), stderr(&out))
        });
        if done(&v) {
            return (out, v);
        }
        assert!(
            started.elapsed() < WATCHDOG,
            "{args:?} never got there: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn qc(
    sidecar: &Sidecar,
    task: &str,
    passed: bool,
    issue: Option<&str>,
    secs: f64,
    model: &str,
) -> Value {
    let mut p = json!({"taskId": task, "passed": passed, "durationSec": secs, "model": model});
    if let Some(t) = issue {
        p["issueType"] = json!(t);
    }
    sidecar.result("recordQcResult", p)
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn the_sidecars_observations_and_an_orchestrators_reports_make_the_baseline() {
    let sidecar = Sidecar::start_default();
    sidecar.result(
        "setFlag",
        json!({"flag": "progressive_disclosure", "enabled": true, "rolloutPercent": 100}),
    );
    // Prompt builds of one team and level ("2", 2 and "lv2" are one level), in each phase.
    let mut tokens = serde_json::Map::new();
    for (phase, level) in [
        ("summary", json!(2)),
        ("standard", json!("lv2")),
        ("full", json!("2")),
    ] {
        let built = sidecar.result(
            "buildPrompt",
            json!({"task": "Add a field to Order", "disclosurePhase": phase, "sessionId": "s1",
                   "context": {"team": "backend", "level": level}}),
        );
        assert_eq!(built["phase"], phase);
        tokens.insert(phase.into(), built["tokens"].clone());
    }
    // Edit hooks: s1 edits 2 files, then 1; s2 edits 1.
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, "x = 1\n").unwrap();
        p.display().to_string()
    };
    let (a, b, c) = (file("a.py"), file("b.py"), file("c.py"));
    sidecar.result("search", json!({"sessionId": "s1", "filepaths": [a, b]}));
    sidecar.result("search", json!({"sessionId": "s1", "filepaths": [c]}));
    sidecar.result("search", json!({"sessionId": "s2", "filepaths": [a]}));
    // An orchestrator's reports.
    assert_eq!(
        qc(&sidecar, "T1", true, None, 10.0, "sonnet"),
        json!({"recorded": true, "group": null})
    );
    qc(&sidecar, "T2", true, None, 20.0, "sonnet");
    qc(&sidecar, "T3", false, Some("code_defect"), 30.0, "sonnet");
    qc(&sidecar, "T4", false, Some("report_format"), 40.0, "sonnet");
    let review = sidecar.result(
        "recordQcReview",
        json!({"taskId": "T1", "defectFound": true, "reviewer": "opus"}),
    );
    assert_eq!(
        review,
        json!({"recorded": true, "replaced": false, "model": "sonnet"})
    );
    sidecar.result(
        "recordQcReview",
        json!({"taskId": "T2", "defectFound": true}),
    );
    let again = sidecar.result(
        "recordQcReview",
        json!({"taskId": "T2", "defectFound": false}),
    );
    assert_eq!(
        again["replaced"], true,
        "a second review replaces the first"
    );
    sidecar.result(
        "recordSessionTokens",
        json!({"sessionId": "s1", "tokens": 1000}),
    );
    sidecar.result(
        "recordSessionTokens",
        json!({"sessionId": "s2", "tokens": 3000}),
    );
    sidecar.result(
        "recordSessionTokens",
        json!({"sessionId": "s1", "tokens": 2000}),
    );

    // Bad reports are refused, naming the param, and write nothing.
    for (method, params, names) in [
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": true, "issueType": "other", "durationSec": 1, "model": "m"}),
            "issueType",
        ),
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": false, "durationSec": 1, "model": "m"}),
            "issueType",
        ),
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": false, "issueType": "typo", "durationSec": 1, "model": "m"}),
            "typo",
        ),
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": true, "durationSec": -1, "model": "m"}),
            "durationSec",
        ),
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": "yes", "durationSec": 1, "model": "m"}),
            "passed",
        ),
        (
            "recordQcResult",
            json!({"taskId": "", "passed": true, "durationSec": 1, "model": "m"}),
            "taskId",
        ),
        (
            "recordQcResult",
            json!({"taskId": "T9", "passed": true, "durationSec": 1}),
            "model",
        ),
        (
            "recordQcReview",
            json!({"taskId": "T404", "defectFound": true}),
            "T404",
        ),
        (
            "recordQcReview",
            json!({"taskId": "T3", "defectFound": true}),
            "failure",
        ),
        (
            "recordSessionTokens",
            json!({"sessionId": "s1", "tokens": -5}),
            "tokens",
        ),
        (
            "recordSessionTokens",
            json!({"sessionId": "s1", "tokens": 1.5}),
            "tokens",
        ),
        ("abAssign", json!({"taskId": ""}), "taskId"),
        ("abAssign", json!({"task": "T1"}), "task"),
    ] {
        let (code, message) = sidecar.error(method, params.clone());
        assert_eq!(code, -32602, "{method} {params}: {message}");
        assert!(message.contains(names), "{method} {params}: {message}");
    }

    let (out, baseline) = poll(
        &sidecar,
        &["metrics", "baseline", "--json", "--by", "qa"],
        |v| {
            v["data"]["session_write_edit_count"]["max"] == json!(3.0)
                && v["data"]["build_prompt_tokens"]["backend_lv2"]["full"].is_number()
        },
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let data = &baseline["data"];
    assert_eq!(baseline["measurement_type"], "baseline");
    assert_eq!(baseline["measured_by"], "qa");
    for phase in ["summary", "standard", "full"] {
        assert!(
            close(
                &data["build_prompt_tokens"]["backend_lv2"][phase],
                tokens[phase].as_f64().unwrap()
            ),
            "{phase}: {data}"
        );
    }
    assert_eq!(
        data["build_prompt_tokens"].as_object().unwrap().len(),
        1,
        "{data}"
    );
    assert!(close(&data["qc_pass_rate"]["last_30d"], 0.5), "{data}");
    assert_eq!(
        data["qc_pass_rate"]["by_issue_type"],
        json!({"code_defect": 0.25, "report_format": 0.25, "task_interpretation": 0.0, "other": 0.0})
    );
    assert!(
        close(&data["qc_execution_time_sec"]["mean"], 25.0),
        "{data}"
    );
    assert!(close(&data["qc_execution_time_sec"]["p95"], 38.5), "{data}");
    assert!(
        close(&data["session_write_edit_count"]["mean"], 2.0),
        "{data}"
    );
    assert!(
        close(&data["session_token_consumption"]["mean"], 2500.0),
        "{data}"
    );
    assert!(
        close(&data["session_token_consumption"]["p95"], 2950.0),
        "{data}"
    );
    assert_eq!(
        data["qc_false_negative_rate"],
        json!({"model": "sonnet", "rate": 0.5, "re_reviewed": 2, "false_negatives": 1})
    );
    let today = baseline["measurement_date"].as_str().unwrap();
    let path = sidecar
        .home
        .join(format!("metrics/baseline/baseline_{today}.json"));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written, baseline, "the file holds what was printed");
    let readme = std::fs::read_to_string(sidecar.home.join("metrics/README.md")).unwrap();
    assert!(readme.contains("delta_from_baseline"), "{readme}");
}

#[test]
fn a_figure_without_data_is_null_and_recording_can_be_turned_off() {
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![("ADAPTIVE_GUIDEBOOK_RECORD_METRICS".into(), "0".into())],
        ..SidecarOptions::default()
    });
    sidecar.result(
        "buildPrompt",
        json!({"task": "t", "context": {"team": "web", "level": 1}}),
    );
    sidecar.result(
        "search",
        json!({"sessionId": "s", "filepaths": ["/nonexistent/a.py"]}),
    );
    // A status call after them: by now a recorder that was on would have been handed both.
    sidecar.result("status", json!({}));
    let out = sidecar.cli(&["metrics", "baseline", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = &v["data"];
    assert_eq!(
        data["build_prompt_tokens"],
        json!({}),
        "nothing recorded: {data}"
    );
    assert_eq!(data["qc_pass_rate"]["last_30d"], Value::Null);
    assert_eq!(
        data["qc_execution_time_sec"],
        json!({"mean": null, "p95": null})
    );
    assert_eq!(
        data["session_write_edit_count"],
        json!({"mean": null, "max": null})
    );
    assert_eq!(data["qc_false_negative_rate"]["rate"], Value::Null);
}

/// The design's Week 0 example, as the metrics README shows it.
fn design_baseline() -> Value {
    let readme = include_str!("../../src/metrics/README.md");
    let start = readme.find("```json\n").unwrap() + 8;
    let end = start + readme[start..].find("```").unwrap();
    serde_json::from_str(&readme[start..end]).unwrap()
}

#[test]
fn the_weekly_file_compares_with_the_baseline_and_a_fallen_pass_rate_alerts() {
    let sidecar = Sidecar::start_default();
    let metrics = sidecar.home.join("metrics");
    // A Week 0 written by hand in the design's format (pass rate 82 %).
    let mut base = design_baseline();
    base["measurement_date"] = json!("2000-01-01");
    std::fs::create_dir_all(metrics.join("baseline")).unwrap();
    std::fs::write(
        metrics.join("baseline/baseline_2000-01-01.json"),
        base.to_string(),
    )
    .unwrap();
    // This week: 1 of 2 QC runs passed (50 %, 32 points down).
    qc(&sidecar, "W1", true, None, 83.0, "sonnet");
    qc(
        &sidecar,
        "W2",
        false,
        Some("task_interpretation"),
        41.5,
        "sonnet",
    );
    sidecar.result(
        "buildPrompt",
        json!({"task": "t", "disclosurePhase": "full", "context": {"team": "backend", "level": 2}}),
    );
    let (out, _) = poll(&sidecar, &["metrics", "weekly", "--json"], |v| {
        v["data"]["build_prompt_tokens"]["backend_lv2"]["full"].is_number()
    });
    assert_eq!(
        out.status.code(),
        Some(3),
        "an alert exits 3: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("ALERT: QC pass rate 50.0 %"),
        "{}",
        stderr(&out)
    );
    let week: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(week["measurement_type"], "weekly");
    assert_eq!(
        week["_baseline_file"],
        json!(metrics.join("baseline/baseline_2000-01-01.json"))
    );
    let delta = &week["delta_from_baseline"];
    // (62.25 - 41.5) / 41.5 * 100
    assert!(
        close(&delta["qc_execution_time_sec"]["mean"], 50.0),
        "{delta}"
    );
    assert!(
        close(
            &delta["qc_pass_rate"]["last_30d"],
            (0.5 - 0.82) / 0.82 * 100.0
        ),
        "{delta}"
    );
    assert!(delta.get("_window").is_none() && delta.get("measurement_date").is_none());
    assert_eq!(
        delta["qc_false_negative_rate"]["rate"],
        Value::Null,
        "no re-review this week"
    );
    assert!(
        week["only_in_current"]
            .as_array()
            .unwrap()
            .contains(&json!("qc_pass_rate.last_7d")),
        "{week}"
    );
    let alerts = week["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{week}");
    assert!(close(&alerts[0]["drop_points"], 32.0), "{alerts:?}");
    let checks = week["token_budget_checks"].as_array().unwrap();
    let full = checks
        .iter()
        .find(|c| c["check"] == "full/baseline_full")
        .unwrap();
    assert!(
        full["ratio"].is_number() && full["ok"].is_boolean(),
        "{full}"
    );
    let summary = checks
        .iter()
        .find(|c| c["check"] == "summary/full")
        .unwrap();
    assert_eq!(
        summary["ok"],
        Value::Null,
        "no summary build this week: {summary}"
    );

    // The alert stays visible until a newer week has none.
    let status = sidecar.cli(&["status"]);
    assert!(
        stdout(&status).contains("ALERT       QC pass rate 50.0 %"),
        "{}",
        stdout(&status)
    );
    let doctor = sidecar.cli(&["doctor"]);
    assert!(
        stdout(&doctor).contains("warn  metrics: ")
            && stdout(&doctor).contains("32.0 points below"),
        "{}",
        stdout(&doctor)
    );

    // Against a baseline of 60 %, 50 % is 10 points down: no alert, exit 0.
    let mut lower = design_baseline();
    lower["data"]["qc_pass_rate"]["last_30d"] = json!(0.6);
    lower["_note"] = json!("metadata: never compared");
    let lower_path = sidecar.dir.path().join("lower.json");
    std::fs::write(&lower_path, lower.to_string()).unwrap();
    let out = sidecar.cli(&[
        "metrics",
        "weekly",
        "--json",
        "--baseline",
        lower_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let week: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(week["alerts"], json!([]));
    assert!(!stdout(&sidecar.cli(&["status"])).contains("ALERT"));

    // A broken baseline is named, not a crash; no baseline at all says what to run.
    std::fs::write(&lower_path, "{\"measurement_date\": 1}").unwrap();
    let out = sidecar.cli(&[
        "metrics",
        "weekly",
        "--baseline",
        lower_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("lower.json"), "{}", stderr(&out));
    // A FIFO named as the baseline is refused at once, not read forever.
    let fifo = sidecar.dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = sidecar.cli(&["metrics", "weekly", "--baseline", fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("fifo.json"), "{}", stderr(&out));
    std::fs::remove_dir_all(metrics.join("baseline")).unwrap();
    let out = sidecar.cli(&["metrics", "weekly"]);
    assert!(
        stderr(&out).contains("guidebook metrics baseline"),
        "{}",
        stderr(&out)
    );
    let out = sidecar.cli(&["metrics", "weekly", "--date", "2026-02-30"]);
    assert!(stderr(&out).contains("2026-02-30"), "{}", stderr(&out));
}

#[test]
fn ab_groups_follow_the_rollout_stick_and_the_report_judges_them() {
    let sidecar = Sidecar::start_default();
    sidecar.result(
        "setFlag",
        json!({"flag": "ab_test_haiku", "enabled": true, "rolloutPercent": 50}),
    );
    let mut groups = std::collections::BTreeMap::new();
    for i in 0..40 {
        let task = format!("task-{i}");
        let a = sidecar.result("abAssign", json!({"taskId": task}));
        let on = sidecar.result("isEnabled", json!({"flag": "ab_test_haiku", "key": task}));
        let want = if on == true { "haiku" } else { "sonnet" };
        assert_eq!(
            a["group"], want,
            "the rollout bucket of the task id: {a} {on}"
        );
        assert_eq!(a["model"], want);
        groups.insert(task, want);
    }
    let haiku = groups.values().filter(|g| **g == "haiku").count();
    assert!((8..=32).contains(&haiku), "about half of 40: {haiku}");
    // A task keeps its group when the rollout changes.
    sidecar.result(
        "setFlag",
        json!({"flag": "ab_test_haiku", "rolloutPercent": 0}),
    );
    let first_haiku = groups.iter().find(|(_, g)| **g == "haiku").unwrap().0;
    let again = sidecar.result("abAssign", json!({"taskId": first_haiku}));
    assert_eq!(
        (again["group"].as_str(), again["newlyAssigned"].as_bool()),
        (Some("haiku"), Some(false))
    );
    assert_eq!(
        sidecar.result("abAssign", json!({"taskId": "late"}))["group"],
        "sonnet"
    );

    // Every task passes QC; re-reviews find a defect in 3 of every 4 haiku passes and none of
    // the sonnet ones.
    let (mut fn_h, mut tn_h, mut tn_s) = (0u64, 0u64, 0u64);
    for (i, (task, group)) in groups.iter().enumerate() {
        let r = qc(&sidecar, task, true, None, 5.0, group);
        assert_eq!(r["group"], *group);
        let defect = *group == "haiku" && i % 4 != 0;
        sidecar.result(
            "recordQcReview",
            json!({"taskId": task, "defectFound": defect}),
        );
        match (*group, defect) {
            ("haiku", true) => fn_h += 1,
            ("haiku", false) => tn_h += 1,
            _ => tn_s += 1,
        }
    }
    let out = sidecar.cli(&["ab", "report", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["week"], 1);
    assert_eq!(report["table"], json!([[fn_h, tn_h], [0, tn_s]]));
    let p = adaptive_guidebook::metrics::stats::fisher_exact_two_sided(fn_h, tn_h, 0, tn_s);
    assert!(close(&report["fisher_exact_p_two_sided"], p), "{report}");
    assert_eq!(report["significant"], p < 0.05);
    assert_eq!(report["power_analysis"]["required_per_group"], 76);
    assert_eq!(report["power_analysis"]["design_minimum_per_group"], 75);
    assert_eq!(report["sample_sufficient"], false);
    assert!(
        report["verdict"].as_str().unwrap().starts_with("Too early"),
        "{report}"
    );
    let file = sidecar.home.join("metrics/ab_test/ab_results_week1.json");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(written, report);
    let text = stdout(&sidecar.cli(&["ab", "report"]));
    assert!(
        text.contains("Fisher's exact test (two-sided): p = "),
        "{text}"
    );
    assert!(text.contains("verdict: Too early"), "{text}");

    // The picture: the baseline, one week and this A/B week, drawn as SVG.
    assert!(sidecar.cli(&["metrics", "baseline"]).status.success());
    let weekly = sidecar.cli(&["metrics", "weekly"]);
    assert!(weekly.status.code().is_some(), "{}", stderr(&weekly));
    let out = sidecar.cli(&["metrics", "report"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(sidecar.home.join("metrics/report.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..80.min(svg.len())]
    );
    for caption in [
        "QC pass rate",
        "buildPrompt tokens per phase",
        "false-negative rate per A/B group",
    ] {
        assert!(svg.contains(caption), "{caption}");
    }
    assert!(
        svg.contains("<polyline") || svg.contains("<path"),
        "series are drawn"
    );
}

/// A port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:port; the status and body, or `None` if nothing answers.
pub(crate) fn http_get(port: u16, path: &str) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, head.to_string(), body.to_string()))
}

/// A non-loopback `metricsListen` is a configuration error naming the setting that allows
/// it; with that setting the daemon serves there, and warns.
#[test]
fn a_remote_metrics_address_needs_metrics_allow_remote() {
    let port = free_port();
    let sidecar = Sidecar::start_default();
    let remote = format!("0.0.0.0:{port}");
    let mut serve = sidecar.guidebook(&["serve"]);
    serve.env("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN", &remote).env(
        "ADAPTIVE_GUIDEBOOK_SOCKET",
        sidecar.dir.path().join("other.sock"),
    );
    let out = crate::harness::run_bounded(serve, b"", "guidebook serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("metricsAllowRemote"), "{stderr}");
    assert!(http_get(port, "/metrics").is_none(), "nothing listens");

    let config = sidecar.dir.path().join("remote.yaml");
    std::fs::write(
        &config,
        format!("metricsListen: \"{remote}\"\nmetricsAllowRemote: true\n"),
    )
    .unwrap();
    let allowed = Sidecar::start_with(SidecarOptions {
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    let (status, _, _) = http_get(port, "/metrics").expect("the endpoint answers");
    assert_eq!(status, 200);
    let log = allowed.stderr();
    assert!(
        log.contains("WARN") && log.contains("metricsAllowRemote"),
        "{log}"
    );
}

/// The daemon's open descriptors, counted in /proc.
#[cfg(target_os = "linux")]
fn open_descriptors(pid: libc::pid_t) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Connections held open without a request cost the daemon at most the endpoint's cap of
/// descriptors (the rest wait in the kernel's backlog), each is dropped after a short read
/// timeout, and a scrape behind them is answered once their turn is over.
#[cfg(target_os = "linux")]
#[test]
fn held_metrics_connections_are_capped_and_a_scrape_still_gets_through() {
    const CAP: usize = 16;
    let port = free_port();
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN".into(), port.to_string())],
        ..SidecarOptions::default()
    });
    let before = open_descriptors(sidecar.pid());
    let held: Vec<TcpStream> = (0..3 * CAP)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    // The daemon takes connections up to its cap, and no more, while they are held.
    let started = Instant::now();
    let mut most = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let now = open_descriptors(sidecar.pid()).saturating_sub(before);
        most = most.max(now);
        std::thread::sleep(Duration::from_millis(20));
    }
    // A little room for the files a reload check opens meanwhile.
    assert!(
        most <= CAP + 4,
        "{most} descriptors for {} held connections",
        held.len()
    );
    assert!(
        most >= CAP / 2,
        "the daemon took the connections it may ({most})"
    );
    // The held ones time out in turn, and a scrape behind them is answered.
    let mut scrape = TcpStream::connect(("127.0.0.1", port)).unwrap();
    scrape.set_read_timeout(Some(WATCHDOG)).unwrap();
    write!(
        scrape,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    scrape
        .read_to_string(&mut text)
        .expect("answered within the watchdog");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    drop(held);
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_the_sidecar_and_reads_a_counter_back() {
    let port = free_port();
    let sidecar = Sidecar::start_with(SidecarOptions {
        env: vec![("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN".into(), port.to_string())],
        ..SidecarOptions::default()
    });
    for session in ["p1", "p2", "p3"] {
        sidecar.result(
            "search",
            json!({"sessionId": session, "filepaths": ["/nonexistent/a.py"]}),
        );
    }
    qc(&sidecar, "P1", false, Some("other"), 3.0, "sonnet");
    let (status, head, body) = http_get(port, "/metrics").expect("the endpoint answers");
    assert_eq!(status, 200);
    assert!(
        head.contains("application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert!(
        body.contains("guidebook_hooks_served_total{kind=\"edit\"} 3\n"),
        "{body}"
    );
    assert!(
        body.contains("guidebook_search_duration_seconds_count 3\n"),
        "{body}"
    );
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(http_get(port, "/other").unwrap().0, 404);

    let prometheus = which("prometheus").expect(
        "the real Prometheus server is needed: apt-get install prometheus (.ci/run installs it)",
    );
    let dir = tempfile::tempdir().unwrap();
    let web = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: guidebook\n    \
             static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let child = Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting prometheus");
    let _prometheus = Killed(child);
    let query = "/api/v1/query?query=guidebook_hooks_served_total%7Bkind%3D%22edit%22%7D";
    let started = Instant::now();
    let value = loop {
        if let Some((200, _, body)) = http_get(web, query) {
            let v: Value = serde_json::from_str(&body).unwrap();
            if let Some(sample) = v["data"]["result"].as_array().and_then(|r| r.first()) {
                break sample.clone();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus never had the counter: {}",
            std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(value["value"][1], "3", "{value}");
    assert_eq!(value["metric"]["job"], "guidebook", "{value}");
    // A QC result per group comes through as well.
    let qc_query = "/api/v1/query?query=guidebook_qc_results_total";
    let (_, _, body) = http_get(web, qc_query).unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    let sample = &v["data"]["result"][0];
    assert_eq!(
        (
            &sample["metric"]["group"],
            &sample["metric"]["result"],
            &sample["value"][1]
        ),
        (&json!("none"), &json!("fail"), &json!("1")),
        "{v}"
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| Path::new(p).is_file())
    })
}
