//! Team guidebooks from git: a local bare repository as the remote, fetched, refreshed, kept.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

/// One refresh interval (`refreshMinutes: 1`) and the slack around it: a clone, a reload.
const REFRESHED_WITHIN: Duration = Duration::from_secs(100);

fn no_print(content: &str) -> String {
    format!(
        "id: acme-no-print\nscope:\n  languages: [python]\n\
         match:\n  regex:\n    pattern: 'print\\('\ncontent: '{content}'\n"
    )
}

/// A team remote: a bare repository, and a work repository pushing to it.
struct TeamRemote {
    bare: PathBuf,
    work: PathBuf,
}

impl TeamRemote {
    fn new(dir: &Path) -> TeamRemote {
        let bare = dir.join("acme.git");
        std::fs::create_dir_all(&bare).unwrap();
        git(&bare, &["init", "-q", "--bare"]);
        let work = dir.join("acme-work");
        git_repo(&work, Some(bare.to_str().unwrap()));
        TeamRemote { bare, work }
    }

    /// Commits the team's `acme-no-print` guideline with `content` and pushes it; the commit.
    fn push(&self, content: &str) -> String {
        write_file(
            &self.work,
            "guidelines/no-print/guideline.yaml",
            &no_print(content),
        );
        git_commit_all(&self.work, content);
        git(
            &self.work,
            &["push", "-q", "origin", "HEAD:refs/heads/main"],
        );
        git(&self.work, &["rev-parse", "HEAD"]).trim().to_string()
    }
}

/// The team source's `state.json` (what `status` and `doctor` read).
fn state(sidecar: &Sidecar) -> Value {
    std::fs::read(sidecar.home.join("sources/acme/state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// The `(id, content)` pairs `search` returns for `file` in a session never used before.
fn served(sidecar: &Sidecar, file: &Path) -> Vec<(String, String)> {
    static SESSION: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SESSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let result = sidecar.result(
        "search",
        json!({"sessionId": format!("team-{n}"), "filepaths": [file.display().to_string()]}),
    );
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().to_string(),
                g["content"].as_str().unwrap().trim().to_string(),
            )
        })
        .collect()
}

/// Polls `check` until it gives a value, for at most `limit`; past it, fails naming the team
/// source's state and the sidecar's log.
fn wait_until<T>(
    sidecar: &Sidecar,
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(done) = check() {
            return done;
        }
        assert!(
            started.elapsed() < limit,
            "{what}: not within {limit:?}; state.json {}; sidecar log:\n{}",
            state(sidecar),
            sidecar.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_team_guidebook_is_served_refreshed_and_kept_when_its_remote_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let remote = TeamRemote::new(dir.path());
    let first = remote.push("Acme v1: use the logger.");

    // The user's own root, with a guideline of its own.
    let root = dir.path().join("guidebook");
    write_guideline(
        &root,
        "own",
        "id: own-todo\nmatch:\n  regex:\n    pattern: 'TODO'\ncontent: Link the ticket.\n",
    );
    let config = write_file(
        dir.path(),
        "config.yaml",
        &format!(
            "teamGuidebooks:\n  - name: acme\n    url: '{}'\n    refreshMinutes: 1\n",
            remote.bare.display()
        ),
    );
    let mut sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    let file = write_file(dir.path(), "app/main.py", "print('hi')  # TODO\n");

    // Cloned at start, served beside the root's guideline.
    let content = |want: &'static str| {
        let sidecar = &sidecar;
        let file = &file;
        move || {
            let got = served(sidecar, file);
            got.iter()
                .any(|(id, c)| id == "acme-no-print" && c == want)
                .then_some(got)
        }
    };
    let got = wait_until(
        &sidecar,
        "the team guideline is served after the first clone",
        Duration::from_secs(30),
        content("Acme v1: use the logger."),
    );
    assert!(got.iter().any(|(id, _)| id == "own-todo"), "{got:?}");
    // search names where the team guideline came from: the source, its file and line.
    let found = sidecar.result(
        "search",
        json!({"sessionId": "team-source", "filepaths": [file.display().to_string()]}),
    );
    let team = found
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "acme-no-print")
        .unwrap();
    assert_eq!(
        team["source"], "team guidebook acme: guidelines/no-print/guideline.yaml:1",
        "{found}"
    );
    assert_eq!(state(&sidecar)["revision"], first);
    let team = &sidecar.result("status", json!({}))["sources"]["teams"][0];
    assert_eq!(team["revision"], first, "{team}");
    assert_eq!(team["error"], Value::Null, "{team}");
    let checkout = sidecar.home.join("sources/acme/checkout");
    assert!(checkout
        .join("guidelines/no-print/guideline.yaml")
        .is_file());

    // A pushed change arrives with the next refresh.
    let second = remote.push("Acme v2: use structlog.");
    wait_until(
        &sidecar,
        "the pushed change is served after a refresh",
        REFRESHED_WITHIN,
        content("Acme v2: use structlog."),
    );
    assert_eq!(state(&sidecar)["revision"], second);
    assert_eq!(state(&sidecar)["error"], Value::Null);

    // The remote goes away: the refresh fails, is recorded, and the last good copy is served.
    let attempted = state(&sidecar)["lastAttemptAt"].clone();
    std::fs::rename(&remote.bare, dir.path().join("acme.gone")).unwrap();
    let failed = wait_until(
        &sidecar,
        "the failed refresh is recorded",
        REFRESHED_WITHIN,
        || {
            let s = state(&sidecar);
            (s["lastAttemptAt"] != attempted && s["error"].is_string()).then_some(s)
        },
    );
    assert!(
        failed["error"].as_str().unwrap().contains("acme.git"),
        "{failed}"
    );
    assert_eq!(failed["revision"], second, "{failed}");
    // status (from the sidecar) and doctor (without it) say so, with the revision still served.
    let team = &sidecar.result("status", json!({}))["sources"]["teams"][0];
    assert_eq!(team["name"], "acme", "{team}");
    assert_eq!(team["revision"], second, "{team}");
    assert!(team["ageSeconds"].is_u64(), "{team}");
    assert!(
        team["error"].as_str().unwrap().contains("acme.git"),
        "{team}"
    );
    let doctor = sidecar.cli(&["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor.contains(&format!("at {}", &second[..12])) && doctor.contains("last fetch failed"),
        "{doctor}"
    );
    let got = served(&sidecar, &file);
    assert!(
        got.contains(&("acme-no-print".into(), "Acme v2: use structlog.".into())),
        "{got:?}"
    );

    // Restarted while the remote is still unreachable: the refresh at start fails, and the
    // checkout on disk is what is served.
    sidecar.restart();
    wait_until(
        &sidecar,
        "the refresh at start fails",
        Duration::from_secs(30),
        || {
            sidecar
                .stderr()
                .contains("team guidebook refresh failed")
                .then_some(())
        },
    );
    let got = served(&sidecar, &file);
    assert!(
        got.contains(&("acme-no-print".into(), "Acme v2: use structlog.".into())),
        "{got:?}"
    );
    assert_eq!(state(&sidecar)["revision"], second);
    assert!(state(&sidecar)["error"].is_string());
}

#[test]
fn a_team_guideline_whose_id_the_root_has_is_not_served_and_is_reported_naming_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let remote = TeamRemote::new(dir.path());
    remote.push("Acme: use the logger.");
    let root = dir.path().join("guidebook");
    let own = write_guideline(&root, "mine", &no_print("Mine: print is fine here."));
    let config = write_file(
        dir.path(),
        "config.yaml",
        &format!(
            "teamGuidebooks:\n  - name: acme\n    url: '{}'\n",
            remote.bare.display()
        ),
    );
    let sidecar = Sidecar::start_with(SidecarOptions {
        root: Some(root),
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    });
    let team_file = sidecar
        .home
        .join("sources/acme/checkout/guidelines/no-print/guideline.yaml");
    let status = wait_until(
        &sidecar,
        "the collision is reported once the team guidebook is cloned",
        Duration::from_secs(30),
        || {
            let status = sidecar.result("status", json!({}));
            status["guidebook"]["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["path"] == team_file.display().to_string())
                .then_some(status)
        },
    );
    let error = status["guidebook"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == team_file.display().to_string())
        .unwrap()
        .clone();
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("acme-no-print") && message.contains(&own.display().to_string()),
        "{error}"
    );
    let file = write_file(dir.path(), "main.py", "print('hi')\n");
    assert_eq!(
        served(&sidecar, &file),
        [(
            "acme-no-print".to_string(),
            "Mine: print is fine here.".to_string()
        )]
    );
}
