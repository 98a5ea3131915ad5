//! The `.metrics/` files: the measured figures of a window (`data`), the baseline and weekly
//! documents, the comparison of a week against the baseline (`delta_from_baseline`, metadata
//! keys skipped), the QC pass-rate alert and the token-budget checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::stats::{mean, quantile};
use crate::store::{QcRow, WindowData};

/// A QC pass rate this many percentage points below the baseline's is an alert.
pub const PASS_RATE_ALERT_POINTS: f64 = 20.0;
/// The issue types a failed QC result may carry.
pub const ISSUE_TYPES: [&str; 4] = [
    "code_defect",
    "report_format",
    "task_interpretation",
    "other",
];

/// A baseline or weekly file. Keys beginning with `_` anywhere are metadata: kept, never
/// compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsFile {
    pub measurement_date: String,
    /// `baseline` or `weekly`.
    pub measurement_type: String,
    pub measured_by: String,
    pub data: MetricsData,
    /// Everything else: metadata, and in a weekly file the comparison.
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

/// The figures. A figure without data is `null`, never zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsData {
    /// Mean tokens per phase, per `<team>_lv<level>`.
    pub build_prompt_tokens: BTreeMap<String, BTreeMap<String, Option<f64>>>,
    pub qc_pass_rate: QcPassRate,
    pub qc_execution_time_sec: MeanP95,
    pub session_write_edit_count: MeanMax,
    pub session_token_consumption: MeanP95,
    pub qc_false_negative_rate: FalseNegativeRate,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QcPassRate {
    /// Passed / all QC results of the 30 days ending on the measurement date.
    pub last_30d: Option<f64>,
    /// Per issue type: the share of those results that failed with it.
    pub by_issue_type: BTreeMap<String, Option<f64>>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanP95 {
    pub mean: Option<f64>,
    pub p95: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanMax {
    pub mean: Option<f64>,
    pub max: Option<f64>,
}

/// The share of re-reviewed QC passes in which the re-review found a defect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalseNegativeRate {
    /// The QC model most results came from.
    pub model: Option<String>,
    pub rate: Option<f64>,
    pub re_reviewed: u64,
    pub false_negatives: u64,
}

/// Figures computed from one window's records. `qc_30d` holds the QC results of the 30 days
/// ending with the window (the pass rate's own window), `data` those of the window itself.
pub fn measure(data: &WindowData, qc_30d: &WindowData) -> MetricsData {
    let mut tokens: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for (team, level, phase, n) in &data.prompt_builds {
        let key = format!(
            "{}_lv{}",
            team.as_deref().unwrap_or("unknown"),
            level.as_deref().unwrap_or("unknown")
        );
        tokens
            .entry(key)
            .or_default()
            .entry(phase.clone())
            .or_default()
            .push(*n as f64);
    }
    let build_prompt_tokens = tokens
        .into_iter()
        .map(|(key, phases)| {
            let per_phase = ["summary", "standard", "full"]
                .iter()
                .map(|p| (p.to_string(), phases.get(*p).and_then(|v| mean(v))))
                .collect();
            (key, per_phase)
        })
        .collect();

    let results = &qc_30d.qc_results;
    let total = results.len() as f64;
    let share = |keep: &dyn Fn(&QcRow) -> bool| {
        (total > 0.0).then(|| results.iter().filter(|r| keep(r)).count() as f64 / total)
    };
    let by_issue_type = ISSUE_TYPES
        .iter()
        .map(|t| {
            (
                t.to_string(),
                share(&|r| !r.passed && r.issue_type.as_deref() == Some(*t)),
            )
        })
        .collect();
    let durations: Vec<f64> = data.qc_results.iter().map(|r| r.duration_sec).collect();
    let edits: Vec<f64> = data.session_edits.iter().map(|&n| n as f64).collect();
    let session_tokens: Vec<f64> = data.session_tokens.iter().map(|&n| n as f64).collect();

    // The current QC model: the one most of the window's results came from.
    let mut models: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &data.qc_results {
        *models.entry(r.model.as_str()).or_default() += 1;
    }
    let model = models
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, _)| m.to_string());
    let reviewed: Vec<_> = data
        .reviewed_passes
        .iter()
        .filter(|r| Some(&r.model) == model.as_ref())
        .collect();
    let false_negatives = reviewed.iter().filter(|r| r.defect_found).count() as u64;
    MetricsData {
        build_prompt_tokens,
        qc_pass_rate: QcPassRate {
            last_30d: share(&|r| r.passed),
            by_issue_type,
            rest: BTreeMap::new(),
        },
        qc_execution_time_sec: MeanP95 {
            mean: mean(&durations),
            p95: quantile(&durations, 0.95),
        },
        session_write_edit_count: MeanMax {
            mean: mean(&edits),
            max: edits.iter().copied().reduce(f64::max),
        },
        session_token_consumption: MeanP95 {
            mean: mean(&session_tokens),
            p95: quantile(&session_tokens, 0.95),
        },
        qc_false_negative_rate: FalseNegativeRate {
            rate: (!reviewed.is_empty()).then(|| false_negatives as f64 / reviewed.len() as f64),
            re_reviewed: reviewed.len() as u64,
            false_negatives,
            model,
        },
        rest: BTreeMap::new(),
    }
}

/// Where two files' figures differ in shape, and by how much they differ in value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// The data tree with `(current - baseline) / baseline * 100` at every numeric leaf both
    /// files hold (`null` where the baseline is 0 or either side has no figure).
    pub delta: Value,
    /// Dotted paths of fields only one file holds.
    pub only_in_baseline: Vec<String>,
    pub only_in_current: Vec<String>,
}

/// Compares two `data` trees. Keys beginning with `_` are skipped on both sides.
pub fn compare(baseline: &Value, current: &Value) -> Comparison {
    let mut c = Comparison::default();
    c.delta = walk(baseline, current, "", &mut c).unwrap_or(Value::Object(Map::new()));
    c
}

fn walk(base: &Value, cur: &Value, path: &str, c: &mut Comparison) -> Option<Value> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (base, cur) {
        (Value::Object(b), Value::Object(k)) => {
            let mut out = Map::new();
            for (key, bv) in b.iter().filter(|(key, _)| !key.starts_with('_')) {
                match k.get(key) {
                    Some(kv) => {
                        if let Some(d) = walk(bv, kv, &join(key), c) {
                            out.insert(key.clone(), d);
                        }
                    }
                    None => c.only_in_baseline.push(join(key)),
                }
            }
            for key in k.keys().filter(|key| !key.starts_with('_')) {
                if !b.contains_key(key) {
                    c.only_in_current.push(join(key));
                }
            }
            Some(Value::Object(out))
        }
        (Value::Number(b), Value::Number(k)) => {
            let (b, k) = (b.as_f64()?, k.as_f64()?);
            Some(delta_percent(b, k).map_or(Value::Null, Value::from))
        }
        // A figure without data on either side has no delta, but is a numeric field.
        (Value::Null, Value::Number(_))
        | (Value::Number(_), Value::Null)
        | (Value::Null, Value::Null) => Some(Value::Null),
        // Strings (a model's name) and anything else are not compared.
        _ => None,
    }
}

/// `(current - baseline) / baseline * 100`; `None` when the baseline is 0.
pub fn delta_percent(baseline: f64, current: f64) -> Option<f64> {
    (baseline != 0.0).then(|| (current - baseline) / baseline * 100.0)
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// A QC pass rate that fell too far below the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    pub kind: String,
    pub baseline: f64,
    pub current: f64,
    pub drop_points: f64,
    pub message: String,
}

/// The alert for a pass rate (fractions) `PASS_RATE_ALERT_POINTS` or more percentage points
/// below the baseline's, if it fell that far. The drop is rounded to 1e-6 points first, so
/// that 0.85 → 0.65 (a drop of 19.999999999999996 in binary floating point) counts as the 20
/// points it is.
pub fn pass_rate_alert(baseline: f64, current: f64) -> Option<Alert> {
    let drop = round((baseline - current) * 100.0, 6);
    (drop >= PASS_RATE_ALERT_POINTS).then(|| Alert {
        kind: "qc_pass_rate_drop".into(),
        baseline,
        current,
        drop_points: drop,
        message: format!(
            "QC pass rate {:.1} % this week is {drop:.1} points below the baseline's {:.1} % \
             (alert at {PASS_RATE_ALERT_POINTS} points)",
            current * 100.0,
            baseline * 100.0
        ),
    })
}

/// One token-budget ratio of the design, checked for one `<team>_lv<level>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetCheck {
    pub key: String,
    /// `summary/full`, `standard/full` or `full/baseline_full`.
    pub check: String,
    pub ratio: Option<f64>,
    pub min: f64,
    pub max: f64,
    /// `None` when a figure is missing.
    pub ok: Option<bool>,
}

/// The design's token-budget ratios: summary within 15–25 % of full, standard within 40–60 %,
/// and full within 5 % of the baseline's full, for every key the week has.
pub fn budget_checks(current: &MetricsData, baseline: &MetricsData) -> Vec<BudgetCheck> {
    let mut out = Vec::new();
    for (key, phases) in &current.build_prompt_tokens {
        let get = |p: &str| phases.get(p).copied().flatten();
        let full = get("full");
        let base_full = baseline
            .build_prompt_tokens
            .get(key)
            .and_then(|p| p.get("full").copied().flatten());
        let ratio = |n: Option<f64>, d: Option<f64>| match (n, d) {
            (Some(n), Some(d)) if d > 0.0 => Some(n / d),
            _ => None,
        };
        for (check, r, min, max) in [
            ("summary/full", ratio(get("summary"), full), 0.15, 0.25),
            ("standard/full", ratio(get("standard"), full), 0.40, 0.60),
            ("full/baseline_full", ratio(full, base_full), 0.95, 1.05),
        ] {
            out.push(BudgetCheck {
                key: key.clone(),
                check: check.into(),
                ratio: r.map(|r| round(r, 4)),
                min,
                max,
                ok: r.map(|r| {
                    let r = round(r, 9);
                    r >= min && r <= max
                }),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_alert_fires_at_twenty_points_and_not_at_nineteen_point_nine() {
        assert!(pass_rate_alert(0.9, 0.7).is_some(), "20.0 points");
        assert!(
            pass_rate_alert(0.85, 0.65).is_some(),
            "20.0 points, inexact in binary"
        );
        assert!(pass_rate_alert(0.9, 0.701).is_none(), "19.9 points");
        assert!(pass_rate_alert(0.9, 0.95).is_none(), "a rise");
        let a = pass_rate_alert(0.9, 0.5).unwrap();
        assert_eq!(a.drop_points, 40.0);
        assert!(a.message.contains("40.0 points below"), "{}", a.message);
    }

    #[test]
    fn metadata_keys_are_never_compared_and_one_sided_fields_are_reported() {
        let base =
            json!({"_note": 1, "a": {"x": 10.0, "_y": 5, "gone": 1}, "z": null, "m": "sonnet"});
        let cur =
            json!({"_note": 900, "a": {"x": 12.5, "_y": 500, "new": 2}, "z": 3, "m": "haiku"});
        let c = compare(&base, &cur);
        assert_eq!(c.delta, json!({"a": {"x": 25.0}, "z": null}));
        assert_eq!(c.only_in_baseline, ["a.gone"]);
        assert_eq!(c.only_in_current, ["a.new"]);
    }

    #[test]
    fn the_designs_baseline_example_round_trips() {
        let readme = super::super::README;
        let start = readme.find("```json\n").unwrap() + 8;
        let end = start + readme[start..].find("```").unwrap();
        let example: Value = serde_json::from_str(&readme[start..end]).unwrap();
        let file: MetricsFile = serde_json::from_value(example.clone()).unwrap();
        assert_eq!(file.data.qc_pass_rate.last_30d, Some(0.82));
        assert_eq!(file.data.qc_false_negative_rate.re_reviewed, 40);
        assert!(file.rest.contains_key("_window"), "metadata is kept");
        assert_eq!(serde_json::to_value(&file).unwrap(), example);
        // A file missing a figure the format requires is refused, naming it.
        let mut broken = example.clone();
        broken["data"]
            .as_object_mut()
            .unwrap()
            .remove("qc_pass_rate");
        let err = serde_json::from_value::<MetricsFile>(broken).unwrap_err();
        assert!(err.to_string().contains("qc_pass_rate"), "{err}");
    }

    #[test]
    fn a_zero_baseline_has_no_delta() {
        let c = compare(&json!({"n": 0}), &json!({"n": 4}));
        assert_eq!(c.delta, json!({"n": null}));
        assert_eq!(delta_percent(200.0, 150.0), Some(-25.0));
    }
}
