//! `teamMetrics:` in `config.yaml`: where this sidecar pushes its settled adherence counters
//! (Prometheus remote write), with what credentials and labels, how often, and the checks that
//! name the key at fault.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// The section as written in `config.yaml` (paths not yet resolved).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct TeamMetricsFile {
    remote_write_url: Option<String>,
    bearer_token_file: Option<PathBuf>,
    basic_auth: Option<BasicAuthFile>,
    ca_file: Option<PathBuf>,
    interval_seconds: Option<u64>,
    settle_seconds: Option<u64>,
    max_series: Option<usize>,
    timeout_seconds: Option<u64>,
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BasicAuthFile {
    username: String,
    password_file: PathBuf,
}

/// The team push, resolved: on when a URL is given (in the file or by
/// `ADAPTIVE_GUIDEBOOK_TEAM_METRICS_URL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamMetrics {
    /// The remote-write endpoint (`…/api/v1/write` for Prometheus).
    pub remote_write_url: String,
    pub auth: TeamAuth,
    /// PEM certificates to trust instead of the system's roots.
    pub ca_file: Option<PathBuf>,
    /// Seconds between pushes (and the longest wait between retries).
    pub interval_seconds: u64,
    /// A session settles once it has had no event for this long.
    pub settle_seconds: u64,
    /// The most series this sidecar pushes; further guidelines are summed as `other`.
    pub max_series: usize,
    /// How long one push may take before it counts as failed.
    pub timeout_seconds: u64,
    /// Labels put on every series (e.g. `team: payments`).
    pub labels: BTreeMap<String, String>,
}

/// How the push authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamAuth {
    None,
    /// `Authorization: Bearer <the file's content, trimmed>`.
    Bearer {
        token_file: PathBuf,
    },
    /// HTTP basic authentication, the password read from a file.
    Basic {
        username: String,
        password_file: PathBuf,
    },
}

pub const DEFAULT_INTERVAL_SECONDS: u64 = 60;
pub const DEFAULT_SETTLE_SECONDS: u64 = 3600;
pub const DEFAULT_MAX_SERIES: usize = 2000;
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The fewest series a sidecar may be held to: one guideline's worth (15) plus the `other` and
/// session series the budget always keeps room for.
pub const MIN_MAX_SERIES: usize = 32;
/// Label names the push sets itself; a static label may not take them.
pub const RESERVED_LABELS: [&str; 5] = ["instance", "guideline", "group", "outcome", "job"];

/// Whether `name` is a Prometheus label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_label_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .enumerate()
            .all(|(i, b)| b == b'_' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit()))
}

/// Resolves the section: `url_env` (the environment's URL) wins over the file's; `path` turns a
/// path as written (`~/…`, relative) into one to open. Errors are `teamMetrics.KEY: why`.
pub(super) fn resolve(
    file: Option<TeamMetricsFile>,
    url_env: Option<String>,
    path: impl Fn(&PathBuf) -> Result<PathBuf, String>,
) -> Result<Option<TeamMetrics>, String> {
    let file = file.unwrap_or_default();
    let Some(url) = url_env.or(file.remote_write_url) else {
        let stray = file.bearer_token_file.is_some()
            || file.basic_auth.is_some()
            || file.labels.is_some()
            || file.ca_file.is_some();
        return if stray {
            Err("teamMetrics.remoteWriteUrl is missing (or set ADAPTIVE_GUIDEBOOK_TEAM_METRICS_URL)".into())
        } else {
            Ok(None)
        };
    };
    let url = url.trim().to_string();
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < "http://x".len()
    {
        return Err(format!(
            "teamMetrics.remoteWriteUrl `{url}` is not an http:// or https:// URL"
        ));
    }
    let auth = match (file.bearer_token_file, file.basic_auth) {
        (Some(_), Some(_)) => {
            return Err("teamMetrics: give bearerTokenFile or basicAuth, not both".into())
        }
        (Some(token), None) => TeamAuth::Bearer {
            token_file: path(&token).map_err(|e| format!("teamMetrics.bearerTokenFile: {e}"))?,
        },
        (None, Some(basic)) => {
            if basic.username.is_empty() || basic.username.contains(':') {
                return Err(
                    "teamMetrics.basicAuth.username must be non-empty and hold no `:`".into(),
                );
            }
            TeamAuth::Basic {
                username: basic.username,
                password_file: path(&basic.password_file)
                    .map_err(|e| format!("teamMetrics.basicAuth.passwordFile: {e}"))?,
            }
        }
        (None, None) => TeamAuth::None,
    };
    let at_least = |key: &str, value: Option<u64>, default: u64, min: u64| match value {
        Some(v) if v < min => Err(format!("teamMetrics.{key} must be at least {min}")),
        Some(v) => Ok(v),
        None => Ok(default),
    };
    let interval_seconds = at_least(
        "intervalSeconds",
        file.interval_seconds,
        DEFAULT_INTERVAL_SECONDS,
        1,
    )?;
    let settle_seconds = at_least(
        "settleSeconds",
        file.settle_seconds,
        DEFAULT_SETTLE_SECONDS,
        1,
    )?;
    let timeout_seconds = at_least(
        "timeoutSeconds",
        file.timeout_seconds,
        DEFAULT_TIMEOUT_SECONDS,
        1,
    )?;
    let max_series = at_least(
        "maxSeries",
        file.max_series.map(|n| n as u64),
        DEFAULT_MAX_SERIES as u64,
        MIN_MAX_SERIES as u64,
    )? as usize;
    let labels = file.labels.unwrap_or_default();
    for (name, value) in &labels {
        if !is_label_name(name) || name.starts_with("__") {
            return Err(format!(
                "teamMetrics.labels: `{name}` is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)"
            ));
        }
        if RESERVED_LABELS.contains(&name.as_str()) {
            return Err(format!(
                "teamMetrics.labels: `{name}` is set by the push itself; choose another name"
            ));
        }
        if value.is_empty() {
            return Err(format!("teamMetrics.labels.{name} is empty"));
        }
    }
    let ca_file = match &file.ca_file {
        Some(p) => Some(path(p).map_err(|e| format!("teamMetrics.caFile: {e}"))?),
        None => None,
    };
    Ok(Some(TeamMetrics {
        remote_write_url: url,
        auth,
        ca_file,
        interval_seconds,
        settle_seconds,
        max_series,
        timeout_seconds,
        labels,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Option<TeamMetrics>, String> {
        let file: TeamMetricsFile = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
        resolve(Some(file), None, |p| Ok(PathBuf::from("/h").join(p)))
    }

    #[test]
    fn the_issue_example_resolves_with_its_defaults() {
        let t = parse(
            "remoteWriteUrl: https://prometheus.example.com/api/v1/write\n\
             bearerTokenFile: team-token\nlabels: {team: payments}\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(t.interval_seconds, 60);
        assert_eq!(t.settle_seconds, 3600);
        assert_eq!(t.max_series, 2000);
        assert_eq!(
            t.auth,
            TeamAuth::Bearer {
                token_file: "/h/team-token".into()
            }
        );
        assert_eq!(t.labels["team"], "payments");
    }

    #[test]
    fn no_url_is_off_and_the_env_url_turns_it_on() {
        assert_eq!(parse("intervalSeconds: 5\n").unwrap(), None);
        let t = resolve(None, Some("http://127.0.0.1:9/api/v1/write".into()), |p| {
            Ok(p.clone())
        })
        .unwrap()
        .unwrap();
        assert_eq!(t.remote_write_url, "http://127.0.0.1:9/api/v1/write");
        assert_eq!(t.auth, TeamAuth::None);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (yaml, want) in [
            ("remoteWriteUrl: ftp://x\n", "remoteWriteUrl"),
            ("bearerTokenFile: t\n", "remoteWriteUrl is missing"),
            (
                "remoteWriteUrl: http://x\nbearerTokenFile: t\nbasicAuth: {username: u, passwordFile: p}\n",
                "not both",
            ),
            ("remoteWriteUrl: http://x\nintervalSeconds: 0\n", "intervalSeconds"),
            ("remoteWriteUrl: http://x\nmaxSeries: 10\n", "maxSeries must be at least 32"),
            ("remoteWriteUrl: http://x\nlabels: {instance: a}\n", "`instance` is set by the push"),
            ("remoteWriteUrl: http://x\nlabels: {9x: a}\n", "not a Prometheus label name"),
            ("remoteWriteUrl: http://x\nlabels: {__x: a}\n", "not a Prometheus label name"),
            ("remoteWriteUrl: http://x\nlabels: {team: ''}\n", "labels.team is empty"),
            (
                "remoteWriteUrl: http://x\nbasicAuth: {username: 'a:b', passwordFile: p}\n",
                "username",
            ),
        ] {
            let err = parse(yaml).unwrap_err();
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }
}
