//! `guidebook report --team URL`: the adherence report computed from a Prometheus-compatible
//! query API over the pushed counters. One PromQL query per metric sums every sidecar's
//! counters by guideline, group and outcome (over all that the store keeps, or their increase
//! since `--since`); the sums become the same per-guideline totals a local report adds up, so
//! the page, the JSON and the hold-out verdict (Fisher's test on the team's table) are the
//! local report's own.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::http::{join, query_component, Client, HttpError};
use super::series::{metrics, Count, HOLDOUT, SESSIONS};
use crate::metrics::adherence::{AdherenceReport, Aggregate, Totals};

/// The window without `--since`: every counter pushed within it (a series is pushed at least
/// daily while its sidecar runs) is summed at its largest value.
pub const ALL_TIME_SECONDS: i64 = 400 * 86_400;

/// Why the team report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{url}: not a Prometheus query answer: {message}")]
    Answer { url: String, message: String },
    #[error("--label `{0}`: write NAME=VALUE, NAME a Prometheus label name")]
    Label(String),
}

/// A `--label NAME=VALUE` filter, checked.
pub fn label_filter(text: &str) -> Result<(String, String), QueryError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| QueryError::Label(text.to_string()))?;
    if !crate::config::team_metrics::is_label_name(name) {
        return Err(QueryError::Label(text.to_string()));
    }
    Ok((name.to_string(), value.to_string()))
}

/// The PromQL that sums `metric` over the sidecars, by `by`: its largest value in the window
/// (`since` absent), or its increase in the window (largest minus smallest: each push carries a
/// changed series' previous value just before its new one).
pub fn promql(
    metric: &str,
    filters: &[(String, String)],
    window_seconds: i64,
    since: bool,
    by: &str,
) -> String {
    let selector = format!(
        "{metric}{{{}}}",
        filters
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect::<Vec<_>>()
            .join(",")
    );
    let range = format!("[{window_seconds}s]");
    if since {
        format!(
            "sum by ({by}) (max_over_time({selector}{range}) - min_over_time({selector}{range}))"
        )
    } else {
        format!("sum by ({by}) (max_over_time({selector}{range}))")
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Sample>,
}

#[derive(Deserialize)]
struct Sample {
    metric: BTreeMap<String, String>,
    value: (f64, String),
}

/// One element of an instant vector: its labels and its value, rounded to a count.
type Element = (BTreeMap<String, String>, u64);

/// The instant vector `query` evaluates to at `at` (epoch seconds).
fn instant(client: &Client, base: &str, query: &str, at: i64) -> Result<Vec<Element>, QueryError> {
    let url = format!(
        "{}?query={}&time={at}",
        join(base, "api/v1/query"),
        query_component(query)
    );
    let (_, body) = client.get(&url)?;
    let bad = |message: String| QueryError::Answer {
        url: url.clone(),
        message,
    };
    let answer: Answer = serde_json::from_str(&body).map_err(|e| bad(e.to_string()))?;
    if answer.status != "success" {
        return Err(bad(answer.error.unwrap_or(answer.status)));
    }
    let data = answer.data.ok_or_else(|| bad("no data".into()))?;
    if data.result_type != "vector" {
        return Err(bad(format!(
            "a {} where a vector was expected",
            data.result_type
        )));
    }
    data.result
        .into_iter()
        .map(|s| {
            let v: f64 = s
                .value
                .1
                .parse()
                .map_err(|_| bad(format!("value `{}`", s.value.1)))?;
            Ok((s.metric, v.max(0.0).round() as u64))
        })
        .collect()
}

/// The team report at `now` (epoch seconds) from the query API at `base`.
pub fn team_report(
    client: &Client,
    base: &str,
    since: Option<(i64, String)>,
    filters: &[(String, String)],
    now: i64,
) -> Result<AdherenceReport, QueryError> {
    let window = since
        .as_ref()
        .map_or(ALL_TIME_SECONDS, |(at, _)| (now - at).max(1));
    let increase = since.is_some();
    let mut totals: BTreeMap<String, Totals> = BTreeMap::new();
    let (mut sessions, mut holdout_sessions) = (0, 0);
    for metric in metrics() {
        if metric == SESSIONS {
            let q = promql(metric, filters, window, increase, "group");
            for (labels, n) in instant(client, base, &q, now)? {
                sessions += n;
                if labels.get("group").map(String::as_str) == Some(HOLDOUT) {
                    holdout_sessions += n;
                }
            }
            continue;
        }
        let q = promql(
            metric,
            filters,
            window,
            increase,
            "guideline, group, outcome",
        );
        for (labels, n) in instant(client, base, &q, now)? {
            let label = |k: &str| labels.get(k).map_or("", String::as_str);
            let (Some(count), Some(guideline)) = (
                Count::find(metric, label("group"), label("outcome")),
                labels.get("guideline"),
            ) else {
                continue;
            };
            if n > 0 {
                count.add(totals.entry(guideline.clone()).or_default(), n);
            }
        }
    }
    let q = format!(
        "count({} > 0)",
        promql(SESSIONS, filters, window, increase, "instance")
    );
    let instances = instant(client, base, &q, now)?
        .first()
        .map_or(0, |(_, n)| *n);
    let mut report = Aggregate::of_totals(totals, sessions, holdout_sessions).report(
        since.map(|(_, t)| t),
        crate::time::rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(now.max(0) as u64),
        ),
    );
    report.instances = Some(instances);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queries_sum_the_largest_value_or_the_increase() {
        let filters = vec![("team".to_string(), "pay\"ments".to_string())];
        assert_eq!(
            promql("m", &filters, 60, false, "guideline"),
            "sum by (guideline) (max_over_time(m{team=\"pay\\\"ments\"}[60s]))"
        );
        assert_eq!(
            promql("m", &[], 60, true, "group"),
            "sum by (group) (max_over_time(m{}[60s]) - min_over_time(m{}[60s]))"
        );
    }

    #[test]
    fn label_filters_are_name_equals_value() {
        assert_eq!(
            label_filter("team=payments").unwrap(),
            ("team".into(), "payments".into())
        );
        assert_eq!(label_filter("team=").unwrap().1, "");
        for bad in ["team", "=x", "9a=b", "a-b=c"] {
            assert!(label_filter(bad).is_err(), "{bad}");
        }
    }
}
