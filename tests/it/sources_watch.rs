//! Every source watched: edits, renames, atomic replaces, recreated directories, no polling.
//!
//! Each sidecar here polls once an hour (`reloadIntervalMs`), so only a file-system
//! notification can explain a change being served within the tests' bounded waits.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::*;

/// How long a change may take to be served: generous, a notification takes milliseconds.
const LIMIT: Duration = Duration::from_secs(10);

/// A sidecar serving `root` that polls once an hour.
fn hourly_sidecar(dir: &Path, root: &Path) -> Sidecar {
    let config = dir.join("config.yaml");
    std::fs::write(&config, "reloadIntervalMs: 3600000\n").unwrap();
    Sidecar::start_with(SidecarOptions {
        root: Some(root.to_path_buf()),
        env: vec![(
            "ADAPTIVE_GUIDEBOOK_CONFIG".into(),
            config.display().to_string(),
        )],
        ..SidecarOptions::default()
    })
}

/// A guideline that matches `word` and says `content`.
fn guideline(id: &str, word: &str, content: &str) -> String {
    format!(
        "id: {id}\nmatch:\n  any:\n    - regex:\n        pattern: '{word}'\ncontent: {content}\n"
    )
}

/// The `(id, content)` pairs `search` serves for `file`, in a session of its own.
fn served(sidecar: &Sidecar, file: &Path) -> Vec<(String, String)> {
    static SESSION: AtomicUsize = AtomicUsize::new(0);
    let session = format!("watch-{}", SESSION.fetch_add(1, Ordering::Relaxed));
    let result = sidecar.result(
        "search",
        json!({"sessionId": session, "filepaths": [file.display().to_string()]}),
    );
    let mut out: Vec<(String, String)> = result
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().into(),
                g["content"].as_str().unwrap().into(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Waits (bounded, never a fixed sleep) until `file` is served exactly `want`.
fn served_within(sidecar: &Sidecar, file: &Path, what: &str, want: &[(&str, &str)]) {
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(id, content)| (id.to_string(), content.to_string()))
        .collect();
    let started = Instant::now();
    loop {
        let got = served(sidecar, file);
        if got == want {
            return;
        }
        assert!(
            started.elapsed() < LIMIT,
            "{what}: not served within {LIMIT:?}; serving {got:?}, want {want:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Writes `text` to a temporary file beside `path` and renames it over `path`, as editors and
/// `git checkout` do.
fn replace(path: &Path, text: &str) {
    let temp: PathBuf = path.with_file_name(".guideline.yaml.swp");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

#[test]
fn edits_renames_replaces_and_recreated_directories_are_served_without_polling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    let alpha = root.join("alpha/guideline.yaml");
    write(&alpha, &guideline("alpha", "alphaCall", "Alpha one."));
    let file = write_file(dir.path(), "work/Main.kt", "alphaCall()\nbetaCall()\n");
    let sidecar = hourly_sidecar(dir.path(), &root);
    served_within(
        &sidecar,
        &file,
        "the first load",
        &[("alpha", "Alpha one.")],
    );

    std::fs::write(&alpha, guideline("alpha", "alphaCall", "Alpha two.")).unwrap();
    served_within(
        &sidecar,
        &file,
        "an edit in place",
        &[("alpha", "Alpha two.")],
    );

    replace(&alpha, &guideline("alpha", "alphaCall", "Alpha three."));
    served_within(
        &sidecar,
        &file,
        "an atomic replace",
        &[("alpha", "Alpha three.")],
    );

    let beta = root.join("team/beta/guideline.yaml");
    write(&beta, &guideline("beta", "betaCall", "Beta."));
    served_within(
        &sidecar,
        &file,
        "a new guideline directory",
        &[("alpha", "Alpha three."), ("beta", "Beta.")],
    );

    // Renamed to a hidden name (which the guidebook skips), then back under another name.
    std::fs::rename(root.join("alpha"), root.join(".alpha")).unwrap();
    served_within(
        &sidecar,
        &file,
        "a directory renamed away",
        &[("beta", "Beta.")],
    );
    std::fs::rename(root.join(".alpha"), root.join("renamed")).unwrap();
    let alpha = root.join("renamed/guideline.yaml");
    served_within(
        &sidecar,
        &file,
        "a directory renamed in",
        &[("alpha", "Alpha three."), ("beta", "Beta.")],
    );
    std::fs::write(&alpha, guideline("alpha", "alphaCall", "Alpha four.")).unwrap();
    served_within(
        &sidecar,
        &file,
        "an edit in the renamed directory",
        &[("alpha", "Alpha four."), ("beta", "Beta.")],
    );

    // Moved out of the root and in again from outside.
    let outside = dir.path().join("outside");
    std::fs::rename(root.join("team"), &outside).unwrap();
    served_within(
        &sidecar,
        &file,
        "a directory moved out",
        &[("alpha", "Alpha four.")],
    );
    std::fs::rename(&outside, root.join("team")).unwrap();
    served_within(
        &sidecar,
        &file,
        "a directory moved in",
        &[("alpha", "Alpha four."), ("beta", "Beta.")],
    );
    std::fs::write(&beta, guideline("beta", "betaCall", "Beta two.")).unwrap();
    served_within(
        &sidecar,
        &file,
        "an edit in the moved-in directory",
        &[("alpha", "Alpha four."), ("beta", "Beta two.")],
    );

    // A subdirectory of the root deleted and recreated.
    std::fs::remove_dir_all(root.join("team")).unwrap();
    served_within(
        &sidecar,
        &file,
        "a subdirectory deleted",
        &[("alpha", "Alpha four.")],
    );
    write(&beta, &guideline("beta", "betaCall", "Beta three."));
    served_within(
        &sidecar,
        &file,
        "the subdirectory recreated",
        &[("alpha", "Alpha four."), ("beta", "Beta three.")],
    );
    std::fs::write(&beta, guideline("beta", "betaCall", "Beta four.")).unwrap();
    served_within(
        &sidecar,
        &file,
        "an edit in the recreated subdirectory",
        &[("alpha", "Alpha four."), ("beta", "Beta four.")],
    );

    // The whole root deleted and recreated (`rm -rf root && mkdir root`).
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    write(&alpha, &guideline("alpha", "alphaCall", "Alpha five."));
    served_within(
        &sidecar,
        &file,
        "the root recreated",
        &[("alpha", "Alpha five.")],
    );
    std::fs::write(&alpha, guideline("alpha", "alphaCall", "Alpha six.")).unwrap();
    served_within(
        &sidecar,
        &file,
        "an edit in the recreated root",
        &[("alpha", "Alpha six.")],
    );

    // A checkout switched: the root renamed away and another put in its place.
    std::fs::rename(&root, dir.path().join("old-guidebook")).unwrap();
    write(&beta, &guideline("beta", "betaCall", "Beta five."));
    served_within(
        &sidecar,
        &file,
        "another root in its place",
        &[("beta", "Beta five.")],
    );
}

#[test]
fn a_root_that_does_not_exist_yet_is_served_once_created() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("later/guidebook");
    let file = write_file(dir.path(), "work/Main.kt", "alphaCall()\n");
    let sidecar = hourly_sidecar(dir.path(), &root);
    served_within(&sidecar, &file, "nothing yet", &[]);
    write(
        &root.join("alpha/guideline.yaml"),
        &guideline("alpha", "alphaCall", "Alpha."),
    );
    served_within(&sidecar, &file, "the root created", &[("alpha", "Alpha.")]);
}

#[test]
fn prompt_packs_are_watched_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("guidebook");
    write(
        &root.join("alpha/guideline.yaml"),
        &guideline("alpha", "alphaCall", "Alpha."),
    );
    let sidecar = hourly_sidecar(dir.path(), &root);
    let pack = root.join("prompts/reviewer.yaml");
    let named = |status: &Value| {
        status["guidebook"]["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == pack.display().to_string())
    };
    sidecar.wait_for_status("loaded", |s| s["guidebook"]["guidelines"] == 1);
    write(&pack, "this: [is not a pack\n");
    sidecar.wait_for_status("a broken pack named", named);
    std::fs::remove_file(&pack).unwrap();
    sidecar.wait_for_status("the broken pack gone", |s| !named(s));
}
