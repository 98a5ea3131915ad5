//! `guidebook metrics baseline|weekly|report|push` and `guidebook ab report`: the `.metrics/`
//! files computed from the database, the A/B verdict, the trend picture, and a team push now.
//! Reads: the database, the metrics directory. Writes: the metrics directory, the team's
//! remote-write endpoint.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

use super::CliError;
use crate::config::Settings;
use crate::metrics::{self, ab, files, plot, MetricsDir, MetricsError};
use crate::store::{Database, MetricsStore};

/// Exit status of `metrics weekly` when the week raised an alert (so cron or CI notices).
pub const ALERT_EXIT: u8 = 3;

#[derive(Debug, Subcommand)]
pub enum MetricsCommand {
    /// Write the baseline (Week 0): the 30 days ending on DATE, into baseline/baseline_DATE.json.
    Baseline {
        /// The last day measured (YYYY-MM-DD, UTC; default: today).
        #[arg(long, value_name = "DATE")]
        date: Option<String>,
        /// Who measured, for `measured_by` (default: $USER).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        /// Print the file written instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Write the week ending on DATE into weekly/metrics_DATE.json, compared with the latest
    /// baseline; exit 3 if the QC pass rate fell 20 points or more below it.
    Weekly {
        #[arg(long, value_name = "DATE")]
        date: Option<String>,
        /// The baseline to compare with (default: the latest one on or before DATE).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Settle what is due and push every team counter to teamMetrics.remoteWriteUrl now; exit 0
    /// when the server accepted it, 1 with the server's status and URL otherwise, 2 when
    /// teamMetrics is not configured.
    Push,
    /// Draw the weekly trend against the baseline as an SVG picture.
    Report {
        /// Where to write it (default: METRICS_DIR/report.svg).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AbCommand {
    /// Judge the haiku A/B test: the 2×2 table, Fisher's exact p-value, the sample needed and a
    /// verdict; writes ab_test/ab_results_weekN.json.
    Report {
        /// The test week (default: the current one); week 1 begins with the first assignment.
        // Week 0 does not exist: it used to be read as week 1 without a word.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        week: Option<u32>,
        #[arg(long)]
        json: bool,
    },
}

pub(super) fn store(settings: &Settings) -> Result<MetricsStore, CliError> {
    let db = Database::open(
        &settings.db,
        Duration::from_millis(settings.busy_timeout_ms),
    )?;
    Ok(MetricsStore::new(db))
}

/// `guidebook metrics push`: one full push from this process (beside a running sidecar's, whose
/// counters it shares through the database).
fn push(settings: &Settings) -> Result<ExitCode, CliError> {
    let Some(team) = &settings.team_metrics else {
        eprintln!(
            "guidebook: teamMetrics is not configured: add teamMetrics.remoteWriteUrl to {} (or set ADAPTIVE_GUIDEBOOK_TEAM_METRICS_URL)",
            settings
                .config
                .as_deref()
                .unwrap_or(&settings.home.join("config.yaml"))
                .display()
        );
        return Ok(ExitCode::from(2));
    };
    let db = Database::open(
        &settings.db,
        Duration::from_millis(settings.busy_timeout_ms),
    )?;
    let pushed = crate::metrics::team::Pusher::new(team, crate::store::TeamStore::new(db))
        .map_err(crate::metrics::team::PushError::from)
        .and_then(|p| p.push(crate::time::now_millis(), true));
    match pushed {
        Ok(p) => {
            println!(
                "pushed {} series ({} bytes) to {}: HTTP {}; {} sessions settled now",
                p.sent, p.bytes, team.remote_write_url, p.status, p.settled
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("guidebook: team metrics push failed: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn measured_by(by: Option<String>) -> String {
    by.or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "guidebook".into())
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).expect("metrics serialize")
}

pub fn run(settings: &Settings, command: MetricsCommand) -> Result<ExitCode, CliError> {
    let dir = MetricsDir::new(settings.metrics_dir.clone());
    match command {
        MetricsCommand::Baseline { date, by, json } => {
            let day = metrics::day_start(date.as_deref())?;
            let file = metrics::baseline(&store(settings)?, day, &measured_by(by))?;
            let path = dir.baseline_path(&file.measurement_date);
            dir.write_json(&path, &file)?;
            if json {
                println!("{}", pretty(&file));
            } else {
                println!("wrote {}", path.display());
                print_summary(&file.data);
            }
            Ok(ExitCode::SUCCESS)
        }
        MetricsCommand::Weekly {
            date,
            baseline,
            by,
            json,
        } => {
            let day = metrics::day_start(date.as_deref())?;
            let today = crate::time::date_of(day);
            let base_path = match baseline {
                Some(p) => p,
                None => dir.baseline_for(&today)?,
            };
            let base = dir.read(&base_path)?;
            let (file, alerts) =
                metrics::weekly(&store(settings)?, day, &measured_by(by), &base, &base_path)?;
            let path = dir.weekly_path(&file.measurement_date);
            dir.write_json(&path, &file)?;
            if json {
                println!("{}", pretty(&file));
            } else {
                println!(
                    "wrote {} (baseline {})",
                    path.display(),
                    base_path.display()
                );
                print_summary(&file.data);
                print_comparison(&file);
            }
            for a in &alerts {
                tracing::warn!("{}", a.message);
                eprintln!("ALERT: {}", a.message);
            }
            Ok(if alerts.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(ALERT_EXIT)
            })
        }
        MetricsCommand::Push => push(settings),
        MetricsCommand::Report { out } => {
            let out = out.unwrap_or_else(|| dir.root.join("report.svg"));
            let weeks: Vec<_> = dir
                .dated("weekly", "metrics_")
                .into_iter()
                .map(|(_, p)| dir.read(&p))
                .collect::<Result<_, _>>()?;
            let last = weeks
                .last()
                .map(|w| w.measurement_date.clone())
                .unwrap_or_else(|| crate::time::date_of(crate::time::now_epoch()));
            let base = dir.read(&dir.baseline_for(&last)?)?;
            let ab: Vec<ab::AbReport> = (1..=520)
                .map(|n| dir.ab_path(n))
                .filter(|p| p.exists())
                .map(|p| dir.read_json(&p))
                .collect::<Result<_, MetricsError>>()?;
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
                    doing: format!("creating {}", parent.display()),
                    source,
                })?;
            }
            plot::draw(
                &plot::Trend {
                    baseline: &base,
                    weeks: &weeks,
                    ab: &ab,
                },
                &out,
            )
            .map_err(|e| CliError::Io {
                doing: format!("drawing {}", out.display()),
                source: std::io::Error::other(e),
            })?;
            println!(
                "wrote {} ({} weeks against the baseline of {}, {} A/B weeks)",
                out.display(),
                weeks.len(),
                base.measurement_date,
                ab.len()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub fn run_ab(settings: &Settings, command: AbCommand) -> Result<ExitCode, CliError> {
    let AbCommand::Report { week, json } = command;
    let dir = MetricsDir::new(settings.metrics_dir.clone());
    let report = metrics::ab_report(&store(settings)?, week, crate::time::now_epoch())?;
    let path = dir.ab_path(report.week);
    dir.write_json(&path, &report)?;
    if json {
        println!("{}", pretty(&report));
        return Ok(ExitCode::SUCCESS);
    }
    let rate = |r: Option<f64>| r.map_or("—".to_string(), |r| format!("{:.1} %", r * 100.0));
    println!(
        "haiku A/B test, week {} ({} to {}), written to {}",
        report.week,
        report.from,
        report.to,
        path.display()
    );
    println!("             false neg.  true neg.  re-reviewed  FN rate");
    for (name, g) in [("haiku", &report.haiku), ("sonnet", &report.sonnet)] {
        println!(
            "  {name:<9} {:>11} {:>10} {:>12}  {}",
            g.false_negatives,
            g.true_negatives,
            g.re_reviewed_passes,
            rate(g.false_negative_rate)
        );
    }
    println!(
        "Fisher's exact test (two-sided): p = {} (α = {})",
        ab::format_p(report.fisher_exact_p_two_sided),
        report.alpha
    );
    println!(
        "sample: {} per group needed for power {:.2} (5 % → 20 %; formula {:.1}, design minimum {}): {}",
        report.power_analysis.required_per_group,
        report.power_analysis.power,
        report.power_analysis.formula_per_group,
        report.power_analysis.design_minimum_per_group,
        if report.sample_sufficient { "sufficient" } else { "not yet" }
    );
    println!("verdict: {}", report.verdict);
    Ok(ExitCode::SUCCESS)
}

fn print_summary(d: &files::MetricsData) {
    let f = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:.3}"));
    println!(
        "  qc_pass_rate.last_30d          {}",
        f(d.qc_pass_rate.last_30d)
    );
    println!(
        "  qc_execution_time_sec          mean {} p95 {}",
        f(d.qc_execution_time_sec.mean),
        f(d.qc_execution_time_sec.p95)
    );
    println!(
        "  session_write_edit_count       mean {} max {}",
        f(d.session_write_edit_count.mean),
        f(d.session_write_edit_count.max)
    );
    println!(
        "  session_token_consumption      mean {} p95 {}",
        f(d.session_token_consumption.mean),
        f(d.session_token_consumption.p95)
    );
    println!(
        "  qc_false_negative_rate         {} ({} re-reviewed, model {})",
        f(d.qc_false_negative_rate.rate),
        d.qc_false_negative_rate.re_reviewed,
        d.qc_false_negative_rate.model.as_deref().unwrap_or("none")
    );
    for (key, phases) in &d.build_prompt_tokens {
        let p = |name: &str| f(phases.get(name).copied().flatten());
        println!(
            "  build_prompt_tokens.{key:<10} summary {} standard {} full {}",
            p("summary"),
            p("standard"),
            p("full")
        );
    }
}

fn print_comparison(file: &files::MetricsFile) {
    for key in ["only_in_baseline", "only_in_current"] {
        if let Some(paths) = file.rest.get(key).and_then(|v| v.as_array()) {
            if !paths.is_empty() {
                let list: Vec<&str> = paths.iter().filter_map(|p| p.as_str()).collect();
                println!("  {key}: {}", list.join(", "));
            }
        }
    }
    if let Some(checks) = file
        .rest
        .get("token_budget_checks")
        .and_then(|v| v.as_array())
    {
        for c in checks {
            if c["ok"] == serde_json::Value::Bool(false) {
                println!(
                    "  token budget: {} {} = {} outside {}–{}",
                    c["key"].as_str().unwrap_or(""),
                    c["check"].as_str().unwrap_or(""),
                    c["ratio"],
                    c["min"],
                    c["max"]
                );
            }
        }
    }
}
