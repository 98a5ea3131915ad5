//! `guidebook report`: per-guideline adherence as one self-contained HTML page, or JSON; with
//! `--team URL`, the team's, from the pushed counters in Prometheus. Reads: the database's
//! adherence records, or the query API at URL. Writes: the page (`--out`, default
//! METRICS_DIR/adherence.html).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::metrics::team::http::Client;
use crate::metrics::team::query::{self, QueryError};
use crate::metrics::{adherence, adherence_html, day_start};

/// Runs `guidebook report`: the page into `out` (or, with `json` and no `out`, the numbers on
/// stdout only); with `team` (the query API's URL and label filters), the team's numbers.
pub fn run(
    settings: &Settings,
    since: Option<String>,
    out: Option<PathBuf>,
    json: bool,
    team: Option<(String, Vec<String>)>,
) -> Result<ExitCode, CliError> {
    let since = match since {
        Some(text) => Some((day_start(Some(&text))?, text)),
        None => None,
    };
    let now = crate::time::now_epoch();
    let report = match team {
        None => adherence::report(&super::metrics::store(settings)?, since, now)?,
        Some((url, labels)) => match team_report(settings, &url, &labels, since, now) {
            Ok(report) => report,
            Err(e) => {
                eprintln!("guidebook: report --team: {e}");
                return Ok(ExitCode::from(if matches!(e, QueryError::Label(_)) {
                    2
                } else {
                    1
                }));
            }
        },
    };
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
        let from = report
            .instances
            .map(|n| format!(" from {n} sidecars"))
            .unwrap_or_default();
        println!(
            "wrote {}: {} guidelines over {} sessions ({} held out){from}",
            out.display(),
            report.guidelines.len(),
            report.sessions,
            report.holdout_sessions
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The team's report from the query API at `url`, with the push's credentials and CA file.
fn team_report(
    settings: &Settings,
    url: &str,
    labels: &[String],
    since: Option<(i64, String)>,
    now: i64,
) -> Result<adherence::AdherenceReport, QueryError> {
    let filters = labels
        .iter()
        .map(|l| query::label_filter(l))
        .collect::<Result<Vec<_>, _>>()?;
    let (ca, auth, timeout) = match &settings.team_metrics {
        Some(t) => (
            t.ca_file.as_deref(),
            t.auth.clone(),
            t.timeout_seconds.max(30),
        ),
        None => (None, crate::config::TeamAuth::None, 30),
    };
    let client = Client::new(ca, std::time::Duration::from_secs(timeout), auth)?;
    query::team_report(&client, url, since, &filters, now)
}
