//! `guidebook report`: per-guideline adherence as one self-contained HTML page, or JSON.
//! Reads: the database's adherence records. Writes: the page (`--out`, default
//! METRICS_DIR/adherence.html).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::metrics::{adherence, adherence_html, day_start};

/// Runs `guidebook report`: the page into `out` (or, with `json` and no `out`, the numbers on
/// stdout only).
pub fn run(
    settings: &Settings,
    since: Option<String>,
    out: Option<PathBuf>,
    json: bool,
) -> Result<ExitCode, CliError> {
    let since = match since {
        Some(text) => Some((day_start(Some(&text))?, text)),
        None => None,
    };
    let store = super::metrics::store(settings)?;
    let report = adherence::report(&store, since, crate::time::now_epoch())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("report serializes")
        );
        if out.is_none() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let out = out.unwrap_or_else(|| settings.metrics_dir.join("adherence.html"));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
            doing: format!("creating {}", parent.display()),
            source,
        })?;
    }
    std::fs::write(&out, adherence_html::page(&report)).map_err(|source| CliError::Io {
        doing: format!("writing {}", out.display()),
        source,
    })?;
    if !json {
        println!(
            "wrote {}: {} guidelines over {} sessions ({} held out)",
            out.display(),
            report.guidelines.len(),
            report.sessions,
            report.holdout_sessions
        );
    }
    Ok(ExitCode::SUCCESS)
}
