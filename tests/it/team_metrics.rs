//! The team push end to end against the real Prometheus: two sidecars with their own homes
//! push their settled adherence over remote write, Prometheus's API shows the series, and
//! `guidebook report --team` equals the sum of their own `report --json`; Prometheus killed and
//! restarted on its storage while hooks go on; its own web config (basic auth, TLS with a
//! generated certificate); what leaves the machine; retries and configuration errors against a
//! receiver of our own; `guidebook metrics push`, `status` and `doctor`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

/// A whole-file guideline: `Thread.sleep(` anywhere in a Kotlin file.
const NO_SLEEP: &str = "id: no-thread-sleep\nscope: {languages: [kotlin]}\n\
    match:\n  regex: {pattern: 'Thread\\.sleep\\('}\n\
    content: Use delay() in coroutines, not Thread.sleep().\n";
/// A second one, on `println(`.
const NO_PRINTLN: &str = "id: no-println\nscope: {languages: [kotlin]}\n\
    match:\n  regex: {pattern: 'println\\('}\n\
    content: Use the logger, not println.\n";

const PLAIN: &str = "package app\nfun a() = 1\nfun b() = 2\nfun c() = 3\n";
const SLEEP: &str = "fun a() = Thread.sleep(10)";

/// How long the tests wait for pushes to land: a cold start of two sidecars and Prometheus on a
/// busy two-core machine, pushing every second.
const LANDING: Duration = Duration::from_secs(90);

/// One developer: a sidecar with its own home pushing to `url` every second, a session settling
/// three seconds after its last event (a session's hooks here come well within that), and a
/// repository of Kotlin files.
struct Developer {
    sidecar: Sidecar,
    repo: PathBuf,
    _dir: tempfile::TempDir,
}

/// `config.yaml` in `dir`: `teamMetrics` with `extra` (its own lines, two spaces in), pushing
/// every second unless `extra` says otherwise.
fn team_config(dir: &Path, extra: &str) -> PathBuf {
    let config = dir.join("config.yaml");
    let interval = if extra.contains("intervalSeconds:") {
        ""
    } else {
        "  intervalSeconds: 1\n"
    };
    std::fs::write(
        &config,
        format!(
            "teamMetrics:\n{interval}  settleSeconds: 3\n  labels: {{team: payments}}\n{extra}"
        ),
    )
    .unwrap();
    config
}

impl Developer {
    fn start(root: &Path, url: &str, extra: &str) -> Developer {
        let dir = tempfile::Builder::new()
            .prefix("gb-dev-")
            .tempdir()
            .unwrap();
        let config = team_config(dir.path(), &format!("  remoteWriteUrl: {url}\n{extra}"));
        let sidecar = Sidecar::start_with(SidecarOptions {
            root: Some(root.to_path_buf()),
            env: vec![(
                "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
                config.display().to_string(),
            )],
            ..SidecarOptions::default()
        });
        let repo = dir.path().join("checkout-of-secret-project");
        git_repo(&repo, Some("git@github.com:acme/secret-project.git"));
        for name in ["A", "B", "C", "D", "H"] {
            write_file(&repo, &format!("src/{name}.kt"), PLAIN);
        }
        git_commit_all(&repo, "init");
        Developer {
            sidecar,
            repo,
            _dir: dir,
        }
    }

    /// The agent of `session` replaces line `line` of `src/NAME.kt` with `new_line`, and the
    /// shim gets Claude Code's `PostToolUse` for it; the shim's stdout.
    fn edit(&self, session: &str, name: &str, line: usize, new_line: &str) -> String {
        let path = self.repo.join(format!("src/{name}.kt"));
        let before = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = before.lines().collect();
        lines[line - 1] = new_line;
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let event = claude_edit_event(session, &path, &before, line, new_line);
        self.sidecar.hook(&event).stdout
    }

    /// Its own `report --json`.
    fn report(&self) -> Value {
        let out = self.sidecar.cli(&["report", "--json"]);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `status`'s `teamMetrics`, the whole answer checked against its declared schema.
    fn team_status(&self) -> Value {
        let status = self.sidecar.result("status", json!({}));
        let doc = crate::openrpc::document();
        crate::openrpc::assert_valid(
            &crate::openrpc::result_validator(&doc, "status"),
            "status",
            &status,
        );
        status["teamMetrics"].clone()
    }

    /// Polls `status` until every session has settled and the push that followed was accepted.
    fn wait_settled(&self, sessions: u64) -> Value {
        let started = Instant::now();
        loop {
            let t = self.team_status();
            if t["settledSessions"] == sessions
                && t["pendingSessions"] == 0
                && t["lastError"].is_null()
                && !t["lastPushAt"].is_null()
            {
                // One more interval: the push after the settling.
                std::thread::sleep(Duration::from_millis(1500));
                return self.team_status();
            }
            assert!(
                started.elapsed() < LANDING,
                "sessions never settled and pushed: {t:#}\n{}",
                self.sidecar.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn guidebook_root(dir: &Path) -> PathBuf {
    let root = dir.join("guidebook");
    write_guideline(&root, "no-thread-sleep", NO_SLEEP);
    write_guideline(&root, "no-println", NO_PRINTLN);
    root
}

/// The numbers `report --team` must equal: per guideline, and the sessions.
fn counts(report: &Value) -> (u64, u64, BTreeMap<String, Vec<Value>>) {
    let mut by_id = BTreeMap::new();
    for g in report["guidelines"].as_array().unwrap() {
        let v = vec![
            g["fires"].clone(),
            g["fires_on_written_lines"].clone(),
            g["presentations"].clone(),
            g["followed"].clone(),
            g["repeated"].clone(),
            g["no_evidence"].clone(),
            g["held_out"].clone(),
            g["blocks"].clone(),
            g["corrected"].clone(),
            g["allowances"].clone(),
            g["holdout"]["table"].clone(),
        ];
        by_id.insert(g["id"].as_str().unwrap().to_string(), v);
    }
    (
        report["sessions"].as_u64().unwrap(),
        report["holdout_sessions"].as_u64().unwrap(),
        by_id,
    )
}

/// The sum of two reports' numbers, as JSON values like theirs.
fn sum(a: &Value, b: &Value) -> (u64, u64, BTreeMap<String, Vec<Value>>) {
    fn add(x: &Value, y: &Value) -> Value {
        match (x, y) {
            (Value::Null, v) | (v, Value::Null) => v.clone(),
            (Value::Number(x), Value::Number(y)) => {
                json!(x.as_u64().unwrap() + y.as_u64().unwrap())
            }
            (Value::Array(x), Value::Array(y)) => {
                Value::Array(x.iter().zip(y).map(|(x, y)| add(x, y)).collect())
            }
            (Value::Object(x), Value::Object(y)) => Value::Object(
                x.iter()
                    .map(|(k, v)| (k.clone(), add(v, y.get(k).unwrap_or(&Value::Null))))
                    .collect(),
            ),
            (x, y) => panic!("cannot add {x} and {y}"),
        }
    }
    let (sa, ha, mut ga) = counts(a);
    let (sb, hb, gb) = counts(b);
    for (id, vb) in gb {
        let entry = ga.entry(id).or_insert_with(|| vec![Value::Null; vb.len()]);
        *entry = entry.iter().zip(&vb).map(|(x, y)| add(x, y)).collect();
    }
    (sa + sb, ha + hb, ga)
}

/// `report --team URL --json ARGS` until its numbers equal `want` (the pushes land a moment
/// after the settling); the report.
fn team_report_until(
    dev: &Developer,
    url: &str,
    args: &[&str],
    want: &(u64, u64, BTreeMap<String, Vec<Value>>),
) -> Value {
    let started = Instant::now();
    let mut all = vec!["report", "--team", url, "--json"];
    all.extend_from_slice(args);
    loop {
        let out = dev.sidecar.cli(&all);
        let last = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            if &counts(&v) == want {
                return v;
            }
            assert!(
                started.elapsed() < LANDING,
                "the team report never added up:\nwant {want:#?}\ngot {:#?}",
                counts(&v)
            );
        } else {
            assert!(started.elapsed() < LANDING, "report --team failed: {last}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The scripted sessions of developer A: followed, repeated, no evidence; of B: followed and a
/// hold-out session whose guideline is matched again.
fn sessions_a(a: &Developer) {
    assert!(a
        .edit("a-followed", "A", 2, SLEEP)
        .contains("no-thread-sleep"));
    assert_eq!(a.edit("a-followed", "A", 2, "fun a() = delay(10)"), "");
    assert!(a
        .edit("a-repeated", "B", 2, SLEEP)
        .contains("no-thread-sleep"));
    a.edit("a-repeated", "B", 3, "fun b() = println(2)");
    assert!(a
        .edit("a-silent", "C", 2, SLEEP)
        .contains("no-thread-sleep"));
}

fn sessions_b(b: &Developer) {
    assert!(b
        .edit("b-followed", "A", 2, SLEEP)
        .contains("no-thread-sleep"));
    assert_eq!(b.edit("b-followed", "A", 2, "fun a() = delay(10)"), "");
    b.sidecar.result(
        "setFlag",
        json!({"flag": "guideline_holdout", "enabled": true, "rolloutPercent": 100}),
    );
    assert_eq!(
        b.edit("b-held", "H", 2, SLEEP),
        "",
        "held out: shown nothing"
    );
    b.edit("b-held", "H", 3, "fun c() = Thread.sleep(3)");
    b.sidecar.result(
        "setFlag",
        json!({"flag": "guideline_holdout", "enabled": false}),
    );
}

/// Two sidecars push to one real Prometheus; its API has their series (two instances, the
/// static label, no path), and `report --team` equals the sum of their own reports, the
/// hold-out verdict computed on the summed table. Then Prometheus is killed while hooks go on,
/// restarted on its storage, and the team report catches up with everything: nothing is lost.
#[test]
fn two_sidecars_push_to_a_real_prometheus_and_the_team_report_is_their_sum() {
    let dir = tempfile::tempdir().unwrap();
    let root = guidebook_root(dir.path());
    let mut prom = Prometheus::start(None);
    let a = Developer::start(&root, &prom.write_url("http"), "");
    let b = Developer::start(&root, &prom.write_url("http"), "");
    sessions_a(&a);
    sessions_b(&b);
    a.wait_settled(3);
    b.wait_settled(2);
    let want = sum(&a.report(), &b.report());
    assert_eq!((want.0, want.1), (5, 1), "{want:#?}");
    let team = team_report_until(&a, &prom.base_url("http"), &[], &want);
    assert_eq!(team["instances"], 2, "{team:#}");
    // The hold-out verdict is the local one's, on the team's table.
    let g = team["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "no-thread-sleep")
        .unwrap();
    let table = &g["holdout"]["table"];
    let verdict = adaptive_guidebook::metrics::adherence::holdout_test(
        "no-thread-sleep",
        (
            table[0][0].as_u64().unwrap() + table[0][1].as_u64().unwrap(),
            table[0][0].as_u64().unwrap(),
        ),
        (
            table[1][0].as_u64().unwrap() + table[1][1].as_u64().unwrap(),
            table[1][0].as_u64().unwrap(),
        ),
    );
    assert_eq!(g["holdout"]["verdict"], json!(verdict.verdict));
    // Shown: a-repeated's file still matched at its next edit; held out: b-held's did.
    assert_eq!(table, &json!([[1, 3], [1, 0]]), "{g:#}");

    // Prometheus's own API: two instances, the configured label, and nothing that names a
    // path, a repository, a session or a user.
    let series = prom.query("{__name__=~\"guidebook_team_.*\"}");
    let instances: std::collections::BTreeSet<String> = series
        .iter()
        .map(|(m, _)| m["instance"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(instances.len(), 2, "{series:?}");
    for (labels, _) in &series {
        assert_eq!(labels["team"], "payments");
        let text = labels.to_string();
        for private in [
            "secret-project",
            "checkout",
            "src/",
            ".kt",
            "a-followed",
            "b-held",
            "acme",
        ] {
            assert!(
                !text.contains(private),
                "{private} left the machine: {text}"
            );
        }
        for name in labels.as_object().unwrap().keys() {
            assert!(
                [
                    "__name__",
                    "guideline",
                    "group",
                    "outcome",
                    "instance",
                    "team"
                ]
                .contains(&name.as_str()),
                "label {name}: {text}"
            );
        }
    }

    // Prometheus goes down; hooks go on and still answer; the push says what failed.
    prom.kill();
    assert!(a.edit("a-later", "D", 2, SLEEP).contains("no-thread-sleep"));
    a.edit("a-later", "D", 2, "fun a() = delay(1)");
    let started = Instant::now();
    loop {
        let t = a.team_status();
        if !t["lastError"].is_null() {
            assert_eq!(t["configurationError"], false, "{t:#}");
            break;
        }
        assert!(
            started.elapsed() < LANDING,
            "no error while Prometheus is down: {t:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    prom.start_again();
    a.wait_settled(4);
    let want = sum(&a.report(), &b.report());
    assert_eq!(want.0, 6);
    let team = team_report_until(
        &b,
        &prom.base_url("http"),
        &["--label", "team=payments"],
        &want,
    );
    assert_eq!(team["instances"], 2);
    // The Grafana dashboard's queries run on the real Prometheus and say what the report says.
    let dashboard = dashboard_answers(&prom);
    assert_eq!(dashboard["Sidecars"], 2.0, "{dashboard:?}");
    assert_eq!(dashboard["Settled sessions"], want.0 as f64);
    let followed: u64 = want.2.values().map(|v| v[3].as_u64().unwrap_or(0)).sum();
    assert_eq!(
        dashboard["Adherence per guideline/followed"],
        followed as f64
    );
    // A filter that matches no series: nothing counted, and no sidecar.
    let out = b.sidecar.cli(&[
        "report",
        "--team",
        &prom.base_url("http"),
        "--json",
        "--label",
        "team=other",
    ]);
    assert!(out.status.success(), "{out:?}");
    let none: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&none["sessions"], &none["instances"]),
        (&json!(0), &json!(0))
    );
    // --since today counts what settled today: everything here.
    let today = std::process::Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .unwrap();
    let today = String::from_utf8(today.stdout).unwrap().trim().to_string();
    team_report_until(&a, &prom.base_url("http"), &["--since", &today], &want);
    // And the HTML page says how many sidecars it sums.
    let page = dir.path().join("team.html");
    let out = a.sidecar.cli(&[
        "report",
        "--team",
        &prom.base_url("http"),
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("from 2 sidecars"),
        "{out:?}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("2 sidecars"),
        "the page names the sidecars it sums"
    );
}

/// Every query of `integrations/grafana/team-adherence.json`, its variables filled in (the
/// last day, every team), evaluated by the real Prometheus: per panel title the sum of its
/// values, and per `title/outcome` for the series that carry an outcome.
fn dashboard_answers(prom: &Prometheus) -> BTreeMap<String, f64> {
    let path = manifest_dir().join("integrations/grafana/team-adherence.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut sums = BTreeMap::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__range", "86400s")
                .replace("$team", ".*");
            assert!(!expr.contains('$'), "a variable left in {expr}");
            for (labels, value) in prom.query(&expr) {
                *sums.entry(title.to_string()).or_default() += value;
                if let Some(outcome) = labels["outcome"].as_str() {
                    *sums.entry(format!("{title}/{outcome}")).or_default() += value;
                }
            }
        }
    }
    sums
}

/// A certificate authority and a server certificate for 127.0.0.1 signed by it, made by the
/// real `openssl` (rustls, rightly, refuses a CA certificate as the server's own): (CA
/// certificate, server certificate, server key).
fn certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let path = |name: &str| dir.join(name);
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .output()
            .expect("openssl is needed for the TLS test (.ci/run installs it)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=team test CA",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "key.pem",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        path("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "cert.pem",
    ]);
    (path("ca.pem"), path("cert.pem"), path("key.pem"))
}

/// bcrypt of `team-secret` (cost 4), as Prometheus's web config wants it.
const TEAM_SECRET_BCRYPT: &str = "$2b$04$GBfVuRVLjbDCvJRIXTUuE.PH/YwksdgZZt6udsmMZcumSl9de144u";

fn secret_file(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// Prometheus behind its own web config (TLS with a generated certificate, basic auth): the
/// push with `caFile` and `basicAuth` lands and `report --team` reads it back with the same;
/// a wrong password is a configuration error (status, doctor, the log once, `metrics push` exit
/// 1 naming status and URL); a password file others can read is refused naming it; without the
/// CA file the certificate is not trusted.
#[test]
fn prometheus_behind_basic_auth_and_tls_takes_the_push_with_the_configured_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificate(dir.path());
    let prom = Prometheus::start(Some(&format!(
        "tls_server_config:\n  cert_file: {}\n  key_file: {}\nbasic_auth_users:\n  team: '{TEAM_SECRET_BCRYPT}'\n",
        cert.display(),
        key.display()
    )));
    let root = guidebook_root(dir.path());
    let password = secret_file(dir.path(), "password", "team-secret\n", 0o600);
    let auth = format!(
        "  caFile: {}\n  basicAuth: {{username: team, passwordFile: {}}}\n",
        ca.display(),
        password.display()
    );
    let a = Developer::start(&root, &prom.write_url("https"), &auth);
    sessions_a(&a);
    a.wait_settled(3);
    let want = counts(&a.report());
    team_report_until(&a, &prom.base_url("https"), &[], &want);
    let out = a.sidecar.cli(&["metrics", "push"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("HTTP 204"),
        "{out:?}"
    );
    let doctor = String::from_utf8_lossy(&a.sidecar.cli(&["doctor"]).stdout).into_owned();
    let line = doctor
        .lines()
        .find(|l| l.contains("team metrics"))
        .unwrap_or_default()
        .to_string();
    assert!(line.starts_with("ok"), "{doctor}");
    assert!(line.contains("last push 20"), "{line}");

    // The wrong password: 401 for the next session's push, a configuration error, not retried
    // in a storm.
    std::fs::write(&password, "wrong\n").unwrap();
    assert!(a.edit("a-after", "D", 2, SLEEP).contains("no-thread-sleep"));
    let started = Instant::now();
    let t = loop {
        let t = a.team_status();
        if t["configurationError"] == true {
            break t;
        }
        assert!(started.elapsed() < LANDING, "no configuration error: {t:#}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(t["lastError"].as_str().unwrap().contains("401"), "{t:#}");
    std::thread::sleep(Duration::from_secs(3));
    let log = a.sidecar.stderr();
    assert_eq!(
        log.matches("team metrics push refused").count(),
        1,
        "logged once: {log}"
    );
    let doctor = String::from_utf8_lossy(&a.sidecar.cli(&["doctor"]).stdout).into_owned();
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("team metrics") && l.contains("FAIL") && l.contains("401")),
        "{doctor}"
    );
    let out = a.sidecar.cli(&["metrics", "push"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 401") && err.contains(&prom.write_url("https")),
        "{err}"
    );
    // A password file the group can read is refused, naming it.
    std::fs::write(&password, "team-secret\n").unwrap();
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = a.sidecar.cli(&["metrics", "push"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&password.display().to_string()) && err.contains("chmod 600"),
        "{err}"
    );
    // Without the CA file, the generated certificate is not trusted.
    let config = team_config(
        dir.path(),
        &format!(
            "  remoteWriteUrl: {}\n  basicAuth: {{username: team, passwordFile: {}}}\n",
            prom.write_url("https"),
            password.display()
        ),
    );
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut cmd = a.sidecar.guidebook(&["metrics", "push"]);
    cmd.env("ADAPTIVE_GUIDEBOOK_CONFIG", &config);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .to_lowercase()
            .contains("certificate"),
        "{out:?}"
    );
}

/// A receiver that answers 503, then 429, then 204: the push retries (the spec's retryable
/// statuses) and the accepted push carries everything; with the protocol's headers and the
/// bearer token; the body decodes as the spec's WriteRequest, labels sorted.
#[test]
fn a_failed_push_is_retried_and_the_next_success_carries_everything() {
    let dir = tempfile::tempdir().unwrap();
    let root = guidebook_root(dir.path());
    let receiver = Receiver::start(&[503, 429, 204]);
    let token = secret_file(dir.path(), "token", "t0ken-abc\n", 0o600);
    let a = Developer::start(
        &root,
        &receiver.url(),
        &format!("  bearerTokenFile: {}\n", token.display()),
    );
    sessions_a(&a);
    a.wait_settled(3);
    let got = receiver.received();
    assert!(got.len() >= 3, "{got:?}");
    assert_eq!(
        got.iter().take(3).map(|r| r.status).collect::<Vec<_>>(),
        [503, 429, 204]
    );
    let header = |r: &Received, name: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let accepted = got.iter().find(|r| r.status == 204).unwrap();
    assert_eq!(header(accepted, "content-encoding"), "snappy");
    assert_eq!(header(accepted, "content-type"), "application/x-protobuf");
    assert_eq!(
        header(accepted, "x-prometheus-remote-write-version"),
        "0.1.0"
    );
    assert_eq!(header(accepted, "authorization"), "Bearer t0ken-abc");
    assert!(header(accepted, "user-agent").starts_with("adaptive-guidebook/"));
    // What the last accepted pushes carried adds up to the local report.
    let mut latest: BTreeMap<Vec<(String, String)>, f64> = BTreeMap::new();
    for r in got.iter().filter(|r| r.status == 204) {
        let req = adaptive_guidebook::metrics::team::remote_write::decode(&r.body).unwrap();
        for t in req.timeseries {
            let names: Vec<&str> = t.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "labels sorted by name");
            assert_eq!(names[0], "__name__");
            let key = t
                .labels
                .iter()
                .map(|l| (l.name.clone(), l.value.clone()))
                .filter(|(k, _)| k != "instance")
                .collect();
            latest.insert(key, t.samples.last().unwrap().value);
        }
    }
    let value = |metric: &str, extra: &[(&str, &str)]| {
        latest
            .iter()
            .filter(|(k, _)| {
                k.iter().any(|(n, v)| n == "__name__" && v == metric)
                    && extra
                        .iter()
                        .all(|(en, ev)| k.iter().any(|(n, v)| n == en && v == ev))
            })
            .map(|(_, v)| *v)
            .sum::<f64>()
    };
    let report = a.report();
    let g = report["guidelines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "no-thread-sleep")
        .unwrap();
    assert_eq!(
        value(
            "guidebook_team_fires_total",
            &[("guideline", "no-thread-sleep")]
        ),
        g["fires"].as_f64().unwrap()
    );
    assert_eq!(
        value(
            "guidebook_team_presentations_total",
            &[("guideline", "no-thread-sleep"), ("group", "shown")]
        ),
        g["presentations"].as_f64().unwrap()
    );
    assert_eq!(
        value(
            "guidebook_team_presentations_total",
            &[("outcome", "followed")]
        ),
        g["followed"].as_f64().unwrap()
    );
    assert_eq!(value("guidebook_team_sessions_total", &[]), 3.0);
    assert!(a.team_status()["lastError"].is_null());
}

/// A 4xx other than 429 is a configuration error: logged once, shown by `status`, and tried
/// again only once per interval — not retried with backoff.
#[test]
fn a_4xx_is_a_configuration_error_logged_once_and_not_retried_in_a_storm() {
    let dir = tempfile::tempdir().unwrap();
    let root = guidebook_root(dir.path());
    let receiver = Receiver::start(&[400]);
    let a = Developer::start(&root, &receiver.url(), "  intervalSeconds: 4\n");
    sessions_a(&a);
    let started = Instant::now();
    let t = loop {
        let t = a.team_status();
        if t["configurationError"] == true {
            break t;
        }
        assert!(started.elapsed() < LANDING, "no configuration error: {t:#}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        t["lastError"].as_str().unwrap().contains("HTTP 400"),
        "{t:#}"
    );
    let first = receiver.received().len();
    std::thread::sleep(Duration::from_secs(6));
    let later = receiver.received().len();
    // A retry with backoff would have sent 1 s, 2 s and 4 s after: three or more in 6 s. One
    // per interval sends at most two.
    assert!(later - first <= 2, "{first} then {later} requests in 6 s");
    assert_eq!(
        a.sidecar
            .stderr()
            .matches("team metrics push refused")
            .count(),
        1,
        "{}",
        a.sidecar.stderr()
    );
    // `metrics push` says the status and the URL, exit 1.
    let out = a.sidecar.cli(&["metrics", "push"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HTTP 400") && err.contains(&receiver.url()),
        "{err}"
    );
}

/// Settling survives a restart: counters kept in the database only rise, a session is counted
/// once, and the instance id stays.
#[test]
fn counters_survive_a_restart_and_a_session_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = guidebook_root(dir.path());
    let receiver = Receiver::start(&[204]);
    let mut a = Developer::start(&root, &receiver.url(), "");
    sessions_a(&a);
    a.wait_settled(3);
    let instance_of = |r: &Received| {
        adaptive_guidebook::metrics::team::remote_write::decode(&r.body)
            .unwrap()
            .timeseries
            .iter()
            .flat_map(|t| t.labels.clone())
            .find(|l| l.name == "instance")
            .map(|l| l.value)
    };
    let before = receiver.received();
    let instance = before.iter().rev().find_map(instance_of).unwrap();
    a.sidecar.restart();
    // The first push after a start sends every series with its stored value.
    let started = Instant::now();
    let sessions = loop {
        let got = receiver.received();
        let after: Vec<_> = got[before.len()..].to_vec();
        if let Some(r) = after.iter().find(|r| instance_of(r).is_some()) {
            break adaptive_guidebook::metrics::team::remote_write::decode(&r.body).unwrap();
        }
        assert!(started.elapsed() < LANDING, "no push after the restart");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut total = 0.0;
    for t in &sessions.timeseries {
        assert!(
            t.labels
                .iter()
                .any(|l| l.name == "instance" && l.value == instance),
            "same instance"
        );
        if t.labels
            .iter()
            .any(|l| l.value == "guidebook_team_sessions_total")
        {
            total += t.samples.last().unwrap().value;
        }
    }
    assert_eq!(total, 3.0, "the three sessions, once");
    assert_eq!(a.team_status()["settledSessions"], 3);
}
