//! `guidebook scan REPO [--json]`: every guideline against every file of a repository, a dry run.
//!
//! Prints a noise table (each guideline's share of the files it fires on, noisiest first) and
//! the files and first lines each fires on; a progress bar on a terminal, none when piped.
//! Records nothing. Reads: the guidebook, the repository.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use super::CliError;
use crate::config::Settings;
use crate::scan::{scan, ScanReport};

/// How many files per guideline the text report lists; `--json` has them all.
const LISTED_FILES: usize = 10;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    root: String,
    repositories: &'a [String],
    files: usize,
    skipped: usize,
    bytes: u64,
    elapsed_ms: u128,
    guidelines: Vec<JsonGuideline<'a>>,
}

#[derive(Serialize)]
struct JsonGuideline<'a> {
    id: &'a str,
    severity: &'a str,
    /// Where it came from: `guidebook FILE:LINE`, `team guidebook NAME: FILE:LINE` or
    /// `FILE:LINE in this repository`.
    source: &'a str,
    files: usize,
    applicable: usize,
    share: f64,
    /// Files where a `guidebook:allow` comment let its matches through.
    allowed: usize,
    hits: Vec<JsonHit<'a>>,
}

#[derive(Serialize)]
struct JsonHit<'a> {
    path: String,
    line: usize,
    pattern: &'a str,
}

pub fn run(settings: &Settings, repo: PathBuf, json: bool) -> Result<ExitCode, CliError> {
    let repo = std::fs::canonicalize(&repo).map_err(|source| CliError::Io {
        doing: format!("opening {}", repo.display()),
        source,
    })?;
    // The guidebook as the sidecar serves it: the root, the team guidebooks, and the trusted
    // repositories' own rules.
    let snapshot = crate::sources::load_guidebook(settings).snapshot();
    for e in &snapshot.errors {
        eprintln!("guidebook: warning: {e}");
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {pos} files scanned ({elapsed})")
                .expect("a valid template"),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        bar
    });
    let progress = || {
        if let Some(bar) = &bar {
            bar.inc(1);
        }
    };
    let report = scan(&snapshot, &repo, settings.max_file_bytes, 0, &progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        println!("{}", to_json(&report));
    } else {
        print!("{}", to_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(report: &ScanReport) -> String {
    let out = JsonReport {
        root: report.root.display().to_string(),
        repositories: &report.repositories,
        files: report.files,
        skipped: report.skipped,
        bytes: report.bytes,
        elapsed_ms: report.elapsed.as_millis(),
        guidelines: report
            .guidelines
            .iter()
            .map(|g| JsonGuideline {
                id: &g.id,
                severity: g.severity,
                source: &g.source,
                files: g.hits.len(),
                applicable: g.applicable,
                share: g.share,
                allowed: g.allowed,
                hits: g
                    .hits
                    .iter()
                    .map(|h| JsonHit {
                        path: h.path.display().to_string(),
                        line: h.line,
                        pattern: &h.pattern,
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

fn to_text(report: &ScanReport) -> String {
    let mut out = format!(
        "scanned {} files ({:.1} MB{}) of {} in {:.2} s with {} guidelines\n\n",
        report.files,
        report.bytes as f64 / 1e6,
        match report.skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        },
        match report.repositories.as_slice() {
            [] => report.root.display().to_string(),
            repos => format!("{} ({})", report.root.display(), repos.join(", ")),
        },
        report.elapsed.as_secs_f64(),
        report.guidelines.len()
    );
    out.push_str(&format!(
        "{:>7}  {:>6}  {:>8}  GUIDELINE\n",
        "SHARE", "FILES", "APPLIES"
    ));
    for g in &report.guidelines {
        out.push_str(&format!(
            "{:>6.1}%  {:>6}  {:>8}  {}\n",
            g.share * 100.0,
            g.hits.len(),
            g.applicable,
            g.id
        ));
    }
    for g in report.guidelines.iter().filter(|g| g.allowed > 0) {
        out.push_str(&format!(
            "\n{} is allowed by guidebook:allow in {} file(s)",
            g.id, g.allowed
        ));
    }
    if report.guidelines.iter().any(|g| g.allowed > 0) {
        out.push('\n');
    }
    for g in report.guidelines.iter().filter(|g| !g.hits.is_empty()) {
        out.push_str(&format!("\n{} fires on {} file(s):\n", g.id, g.hits.len()));
        for hit in g.hits.iter().take(LISTED_FILES) {
            let path = hit.path.strip_prefix(&report.root).unwrap_or(&hit.path);
            out.push_str(&format!(
                "  {}:{}  {}\n",
                path.display(),
                hit.line,
                hit.pattern
            ));
        }
        if g.hits.len() > LISTED_FILES {
            out.push_str(&format!("  ... and {} more\n", g.hits.len() - LISTED_FILES));
        }
    }
    out
}
