//! Measuring the rollout: what the sidecar records ([`recorder`]), the live counters of the
//! Prometheus endpoint ([`telemetry`]), the `.metrics/` files ([`files`]: baseline, weekly,
//! comparison, alert), the haiku A/B test ([`ab`]), the statistics behind them ([`stats`]), the
//! trend picture ([`plot`]), per-guideline adherence ([`adherence`]) and its team-wide push
//! and report ([`team`]). Reads: the metrics
//! tables. Writes: the metrics directory.

pub mod ab;
pub mod adherence;
pub mod adherence_html;
pub mod files;
pub mod plot;
pub mod recorder;
pub mod stats;
pub mod team;
pub mod telemetry;

use std::path::{Path, PathBuf};

pub use files::{Alert, MetricsData, MetricsFile};
pub use recorder::Recorder;
pub use telemetry::{HookKind, Telemetry};

use crate::store::{MetricsStore, StoreError, WindowData};
use crate::time::{date_of, parse_date};

/// The days a baseline covers, and a week.
pub const BASELINE_DAYS: i64 = 30;
pub const WEEK_DAYS: i64 = 7;
pub(crate) const DAY: i64 = 86_400;

/// The largest metrics file read (a weekly file is a few KiB).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// The format description written into every metrics directory.
pub const README: &str = include_str!("README.md");

/// What can go wrong with the metrics directory and its files.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("{doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    BadFile { path: PathBuf, message: String },
    #[error("no baseline in {}: run `guidebook metrics baseline` first", dir.display())]
    NoBaseline { dir: PathBuf },
    #[error("`{0}` is not a date: use YYYY-MM-DD")]
    BadDate(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The `.metrics/` directory and the layout of the design.
#[derive(Debug, Clone)]
pub struct MetricsDir {
    pub root: PathBuf,
}

impl MetricsDir {
    pub fn new(root: PathBuf) -> Self {
        MetricsDir { root }
    }

    pub fn baseline_path(&self, date: &str) -> PathBuf {
        self.root
            .join("baseline")
            .join(format!("baseline_{date}.json"))
    }

    pub fn weekly_path(&self, date: &str) -> PathBuf {
        self.root
            .join("weekly")
            .join(format!("metrics_{date}.json"))
    }

    pub fn ab_path(&self, week: u32) -> PathBuf {
        self.root
            .join("ab_test")
            .join(format!("ab_results_week{week}.json"))
    }

    /// Writes `value` as pretty JSON to `path` (through a temporary file and a rename, so a
    /// reader never sees half a file), creating the layout and its README as needed.
    pub fn write_json(
        &self,
        path: &Path,
        value: &impl serde::Serialize,
    ) -> Result<(), MetricsError> {
        let io = |doing, path: &Path| {
            let path = path.to_path_buf();
            move |source| MetricsError::Io {
                doing,
                path,
                source,
            }
        };
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
        let readme = self.root.join("README.md");
        if std::fs::read_to_string(&readme).ok().as_deref() != Some(README) {
            std::fs::write(&readme, README).map_err(io("writing", &readme))?;
        }
        let mut text = serde_json::to_string_pretty(value).expect("metrics serialize");
        text.push('\n');
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io("writing", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io("renaming", &tmp))
    }

    /// Reads a baseline or weekly file.
    pub fn read(&self, path: &Path) -> Result<MetricsFile, MetricsError> {
        self.read_json(path)
    }

    /// Reads any file of the directory (an A/B report, say) as `T`.
    pub fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &Path,
    ) -> Result<T, MetricsError> {
        // The one capped, non-blocking reader: a FIFO or a device named as a baseline is an
        // error, never a hang, and a huge file is refused.
        let text =
            crate::watched::read_text(path, MAX_FILE_BYTES).map_err(|e| MetricsError::BadFile {
                path: path.to_path_buf(),
                message: e.message,
            })?;
        serde_json::from_str(&text).map_err(|e| MetricsError::BadFile {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// The files of `sub` whose names are `<prefix>YYYY-MM-DD.json`, oldest first.
    pub fn dated(&self, sub: &str, prefix: &str) -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(self.root.join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let date = name.strip_prefix(prefix)?.strip_suffix(".json")?;
                parse_date(date)?;
                Some((date.to_string(), e.path()))
            })
            .collect();
        out.sort();
        out
    }

    /// The latest baseline on or before `date`.
    pub fn baseline_for(&self, date: &str) -> Result<PathBuf, MetricsError> {
        self.dated("baseline", "baseline_")
            .into_iter()
            .rev()
            .find(|(d, _)| d.as_str() <= date)
            .map(|(_, p)| p)
            .ok_or_else(|| MetricsError::NoBaseline {
                dir: self.root.join("baseline"),
            })
    }

    /// The alerts of the latest weekly file, if there is one.
    pub fn latest_alerts(&self) -> Option<(PathBuf, Vec<Alert>)> {
        let (_, path) = self.dated("weekly", "metrics_").pop()?;
        let file = self.read(&path).ok()?;
        let alerts = file
            .rest
            .get("alerts")
            .and_then(|a| serde_json::from_value(a.clone()).ok())
            .unwrap_or_default();
        Some((path, alerts))
    }
}

/// A date argument (default: today, UTC) as the epoch second its day begins.
pub fn day_start(date: Option<&str>) -> Result<i64, MetricsError> {
    match date {
        Some(d) => parse_date(d).ok_or_else(|| MetricsError::BadDate(d.to_string())),
        None => Ok(crate::time::now_epoch().div_euclid(DAY) * DAY),
    }
}

/// The records of the `days` ending with the day that begins at `day`, and of the 30 days
/// ending with it (the pass rate's own window; the same read when `days` is 30).
fn windows(
    store: &MetricsStore,
    day: i64,
    days: i64,
) -> Result<(WindowData, WindowData), MetricsError> {
    let end = day + DAY;
    let data = store.window(end - days * DAY, end)?;
    let qc_30d = if days == BASELINE_DAYS {
        data.clone()
    } else {
        store.window(end - BASELINE_DAYS * DAY, end)?
    };
    Ok((data, qc_30d))
}

/// The baseline of the 30 days ending with `day`.
pub fn baseline(
    store: &MetricsStore,
    day: i64,
    measured_by: &str,
) -> Result<MetricsFile, MetricsError> {
    let (data, qc_30d) = windows(store, day, BASELINE_DAYS)?;
    let data = files::measure(&data, &qc_30d);
    let mut rest = std::collections::BTreeMap::new();
    rest.insert(
        "_window".into(),
        serde_json::json!({"from": date_of(day - (BASELINE_DAYS - 1) * DAY), "to": date_of(day)}),
    );
    Ok(MetricsFile {
        measurement_date: date_of(day),
        measurement_type: "baseline".into(),
        measured_by: measured_by.into(),
        data,
        rest,
    })
}

/// The week ending with `day`, compared with `base` (read from `base_path`).
pub fn weekly(
    store: &MetricsStore,
    day: i64,
    measured_by: &str,
    base: &MetricsFile,
    base_path: &Path,
) -> Result<(MetricsFile, Vec<Alert>), MetricsError> {
    let (week, qc_30d) = windows(store, day, WEEK_DAYS)?;
    let mut data = files::measure(&week, &qc_30d);
    // The week's own pass rate, next to the 30 days' one the baseline is compared by.
    let last_7d = (!week.qc_results.is_empty()).then(|| {
        week.qc_results.iter().filter(|r| r.passed).count() as f64 / week.qc_results.len() as f64
    });
    data.qc_pass_rate
        .rest
        .insert("last_7d".into(), serde_json::json!(last_7d));
    let base_data = serde_json::to_value(&base.data).expect("metrics serialize");
    let cur_data = serde_json::to_value(&data).expect("metrics serialize");
    let cmp = files::compare(&base_data, &cur_data);
    let mut alerts = Vec::new();
    let current_rate = last_7d.or(data.qc_pass_rate.last_30d);
    if let (Some(b), Some(c)) = (base.data.qc_pass_rate.last_30d, current_rate) {
        alerts.extend(files::pass_rate_alert(b, c));
    }
    let checks = files::budget_checks(&data, &base.data);
    let mut rest = std::collections::BTreeMap::new();
    rest.insert(
        "_window".into(),
        serde_json::json!({"from": date_of(day - (WEEK_DAYS - 1) * DAY), "to": date_of(day)}),
    );
    rest.insert("_baseline_file".into(), serde_json::json!(base_path));
    rest.insert("delta_from_baseline".into(), cmp.delta);
    rest.insert(
        "only_in_baseline".into(),
        serde_json::json!(cmp.only_in_baseline),
    );
    rest.insert(
        "only_in_current".into(),
        serde_json::json!(cmp.only_in_current),
    );
    rest.insert("token_budget_checks".into(), serde_json::json!(checks));
    rest.insert("alerts".into(), serde_json::json!(alerts));
    Ok((
        MetricsFile {
            measurement_date: date_of(day),
            measurement_type: "weekly".into(),
            measured_by: measured_by.into(),
            data,
            rest,
        },
        alerts,
    ))
}

/// The A/B report of week `week` (default: the current one), counted from the day the first
/// task was assigned; cumulative from that day to the week's end.
pub fn ab_report(
    store: &MetricsStore,
    week: Option<u32>,
    today: i64,
) -> Result<ab::AbReport, MetricsError> {
    let start = store
        .first_assignment()?
        .map_or(today, |at| at.div_euclid(DAY) * DAY);
    let week = week
        .unwrap_or_else(|| ((today - start).max(0) / (WEEK_DAYS * DAY)) as u32 + 1)
        .max(1);
    let end = start + week as i64 * WEEK_DAYS * DAY;
    let passes = store.reviewed_passes(start, end)?;
    Ok(ab::report(
        week,
        date_of(start),
        date_of(end - DAY),
        &passes,
    ))
}
