//! Resolves the sidecar's settings with the contract's precedence: command-line flag >
//! environment variable > `config.yaml` > default. Reads: the environment and `config.yaml`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::tokens::Tokenizer;

pub(crate) mod team_metrics;
pub use team_metrics::{TeamAuth, TeamMetrics};

/// Everything the sidecar and the CLI need to know about where things live and how big they may
/// be. Built once at start-up and never mutated.
#[derive(Debug, Clone)]
pub struct Settings {
    pub home: PathBuf,
    pub socket: PathBuf,
    pub db: PathBuf,
    pub guidebook_root: PathBuf,
    pub flags: PathBuf,
    /// The config file that was read, if any.
    pub config: Option<PathBuf>,
    /// Largest accepted HTTP request body; larger ones get HTTP 413.
    pub max_request_bytes: u32,
    /// Changed files are matched on at most this many leading bytes.
    pub max_file_bytes: u64,
    /// How long a database call waits for a lock held by another connection or process.
    pub busy_timeout_ms: u64,
    /// How often the guidebook root is checked for changed files.
    pub reload_interval_ms: u64,
    /// How `buildPrompt` (and token budgets) count tokens.
    pub tokenizer: Tokenizer,
    /// When the circuit breaker warns and halts (`breaker:` in `config.yaml`).
    pub breaker: BreakerLimits,
    /// The `.metrics/` directory: baseline, weekly and A/B files.
    pub metrics_dir: PathBuf,
    /// Where the Prometheus endpoint listens (`/metrics`); off when `None`. An address beyond
    /// loopback only with `metrics_allow_remote`.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Whether `metrics_listen` may be an address other machines can reach.
    pub metrics_allow_remote: bool,
    /// A connection to the socket without a request for this long is closed.
    pub idle_timeout_ms: u64,
    /// Whether prompt builds, edit hooks and breaker verdicts are recorded in SQLite.
    pub record_metrics: bool,
    /// Which rule files of a trusted repository are read, and the caps on reading them
    /// (`repositoryRules:`).
    pub repository_rules: RepositoryRules,
    /// Team guidebooks fetched from git (`teamGuidebooks:`), in priority order after the root.
    pub team_guidebooks: Vec<TeamGuidebook>,
    /// Where settled adherence is pushed for the team (`teamMetrics:`); off when `None`.
    pub team_metrics: Option<TeamMetrics>,
}

/// `repositoryRules:` in `config.yaml`: which rule files a trusted repository's guidelines come
/// from (each format can be turned off) and the caps that keep reading them cheap.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct RepositoryRules {
    /// `.guidebook/**/guideline.yaml`.
    pub guidebook: bool,
    /// `AGENTS.md` in a directory below the root.
    pub agents_md: bool,
    /// `CLAUDE.md` in a directory below the root.
    pub claude_md: bool,
    /// Also the root's own `AGENTS.md` and `CLAUDE.md`, which the hosts already load.
    pub root_files: bool,
    /// `.cursor/rules/**/*.mdc`.
    pub cursor: bool,
    /// `.claude/rules/**/*.md`.
    pub claude_rules: bool,
    /// `.github/instructions/**/*.instructions.md`.
    pub copilot: bool,
    /// `.continue/rules/**/*.md`.
    pub r#continue: bool,
    /// A rule file larger than this is not read (an error names it).
    pub max_file_bytes: u64,
    /// At most this many rule files per repository; the rest are reported, not read.
    pub max_files: usize,
    /// At most this many bytes of rule files per repository.
    pub max_bytes: u64,
    /// The repository's rules take at most this many tokens of one hook's text.
    pub max_tokens: u64,
}

impl Default for RepositoryRules {
    fn default() -> Self {
        RepositoryRules {
            guidebook: true,
            agents_md: true,
            claude_md: true,
            root_files: false,
            cursor: true,
            claude_rules: true,
            copilot: true,
            r#continue: true,
            max_file_bytes: 64 * 1024,
            max_files: 1_000,
            max_bytes: 4 * 1024 * 1024,
            max_tokens: 1_500,
        }
    }
}

/// One entry of `teamGuidebooks:`: a guidebook kept in a git repository, fetched into
/// `HOME_DIR/sources/<name>` and refreshed in the background.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TeamGuidebook {
    /// Names the source in `status`, `doctor`, `explain` and the hook text; also its directory
    /// (lowercase letters, digits, `-`, `_`).
    pub name: String,
    /// What `git clone` takes: a URL, `user@host:path`, or a local path.
    pub url: String,
    /// The branch or tag to follow; the remote's default branch when absent.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Minutes between background refreshes.
    #[serde(default = "default_refresh_minutes")]
    pub refresh_minutes: u64,
    /// Where its checkout lives (`HOME_DIR/sources/<name>`), filled in when settings resolve.
    #[serde(skip)]
    pub dir: PathBuf,
}

fn default_refresh_minutes() -> u64 {
    15
}

/// The circuit breaker's limits. `config.yaml` may set any of them under `breaker:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct BreakerLimits {
    /// A `(tool, code, file)` key present in this many consecutive check runs halts.
    pub same_error_limit: u32,
    /// A session with at least this many errors (distinct per run, summed) gets a warning.
    pub warning_limit: u64,
    /// A session with at least this many errors halts.
    pub critical_limit: u64,
}

impl Default for BreakerLimits {
    fn default() -> Self {
        BreakerLimits {
            same_error_limit: 3,
            warning_limit: 15,
            critical_limit: 30,
        }
    }
}

impl BreakerLimits {
    /// Why these limits cannot work, if they cannot: each must be at least 1, and a warning
    /// that comes only with (or after) the halt would never be seen.
    pub fn check(&self) -> Result<(), String> {
        if self.same_error_limit == 0 {
            return Err("breaker.sameErrorLimit must be at least 1".into());
        }
        if self.warning_limit == 0 {
            return Err("breaker.warningLimit must be at least 1".into());
        }
        if self.warning_limit >= self.critical_limit {
            return Err(format!(
                "breaker.warningLimit ({}) must be below breaker.criticalLimit ({})",
                self.warning_limit, self.critical_limit
            ));
        }
        Ok(())
    }
}

/// Values given on the command line; they win over everything else.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub socket: Option<PathBuf>,
    pub db: Option<PathBuf>,
    pub guidebook_root: Option<PathBuf>,
    pub flags: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub metrics_dir: Option<PathBuf>,
}

/// What can go wrong while resolving settings; each variant names the file or variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot find a home directory: set ADAPTIVE_GUIDEBOOK_HOME or HOME")]
    NoHome,
    #[error("reading config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("environment variable {name}: {message}")]
    Env { name: &'static str, message: String },
}

/// The keys `config.yaml` may hold. Unknown keys are an error so that a typo never silently
/// falls back to a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConfigFile {
    socket: Option<PathBuf>,
    db: Option<PathBuf>,
    guidebook_root: Option<PathBuf>,
    flags: Option<PathBuf>,
    max_request_bytes: Option<u32>,
    max_file_bytes: Option<u64>,
    busy_timeout_ms: Option<u64>,
    reload_interval_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    breaker: Option<BreakerLimits>,
    tokenizer: Option<TokenizerName>,
    metrics_dir: Option<PathBuf>,
    metrics_listen: Option<String>,
    metrics_allow_remote: Option<bool>,
    record_metrics: Option<bool>,
    repository_rules: Option<RepositoryRules>,
    team_guidebooks: Option<Vec<TeamGuidebook>>,
    team_metrics: Option<team_metrics::TeamMetricsFile>,
}

/// The `tokenizer` values `config.yaml` accepts; an unknown one is an error naming the file.
#[derive(Debug, Clone, Copy, Deserialize)]
enum TokenizerName {
    #[serde(rename = "cl100k_base")]
    Cl100k,
    #[serde(rename = "o200k_base")]
    O200k,
    #[serde(rename = "estimate")]
    Estimate,
}

impl From<TokenizerName> for Tokenizer {
    fn from(n: TokenizerName) -> Tokenizer {
        match n {
            TokenizerName::Cl100k => Tokenizer::Cl100k,
            TokenizerName::O200k => Tokenizer::O200k,
            TokenizerName::Estimate => Tokenizer::Estimate,
        }
    }
}

pub const DEFAULT_MAX_REQUEST_BYTES: u32 = 1024 * 1024;
pub const DEFAULT_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_RELOAD_INTERVAL_MS: u64 = 400;
/// An idle keep-alive connection is closed after this long: `guidebook mcp` keeps its
/// connections open between an agent's edits and sends its next call on a new one when the
/// sidecar has closed the old one, so closing costs it a connect, while holding connections
/// forever let one client exhaust the daemon's descriptors.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 30_000;

impl Settings {
    /// Resolves settings from the process environment.
    pub fn resolve(overrides: &Overrides) -> Result<Settings, ConfigError> {
        Self::resolve_with(overrides, |k| std::env::var_os(k).filter(|v| !v.is_empty()))
    }

    /// Resolves settings with `env` standing in for the process environment (for tests).
    pub fn resolve_with(
        overrides: &Overrides,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Settings, ConfigError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let abs = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
        let home = match env("ADAPTIVE_GUIDEBOOK_HOME") {
            Some(h) => abs(PathBuf::from(h)),
            None => {
                PathBuf::from(env("HOME").ok_or(ConfigError::NoHome)?).join(".adaptive-guidebook")
            }
        };

        let explicit_config = overrides
            .config
            .clone()
            .or_else(|| env("ADAPTIVE_GUIDEBOOK_CONFIG").map(PathBuf::from))
            .map(&abs);
        let config_path = explicit_config
            .clone()
            .unwrap_or_else(|| home.join("config.yaml"));
        let (file, config) = match std::fs::read_to_string(&config_path) {
            Ok(text) => (
                parse_config(&config_path, &text)?,
                Some(config_path.clone()),
            ),
            // Only the default location is optional: a config the user named must exist.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit_config.is_none() => {
                (ConfigFile::default(), None)
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: config_path,
                    source,
                })
            }
        };
        // Relative paths inside config.yaml are relative to the file, not to wherever the
        // daemon happened to be started.
        let config_dir = config_path.parent().unwrap_or(Path::new("/")).to_path_buf();
        // `~/x` is the user's home, as a shell reads it: the sample writes paths that way, and
        // `<config dir>/~/x` is never what was meant.
        let user_home = env("HOME");
        let from_file = |p: &Option<PathBuf>| -> Result<Option<PathBuf>, ConfigError> {
            let Some(p) = p else { return Ok(None) };
            let p = match p.strip_prefix("~") {
                Ok(rest) => match &user_home {
                    Some(home) if rest.as_os_str().is_empty() => PathBuf::from(home),
                    Some(home) => Path::new(home).join(rest),
                    None => {
                        return Err(ConfigError::Invalid {
                            path: config_path.clone(),
                            message: format!("{} starts with `~` but HOME is not set", p.display()),
                        })
                    }
                },
                Err(_) => p.clone(),
            };
            Ok(Some(if p.is_absolute() {
                p
            } else {
                config_dir.join(p)
            }))
        };
        let pick = |flag: &Option<PathBuf>, var: &str, file: Option<PathBuf>, default: PathBuf| {
            flag.clone()
                .map(&abs)
                .or_else(|| env(var).map(|v| abs(PathBuf::from(v))))
                .or(file)
                .unwrap_or(default)
        };

        let metrics_listen =
            match env("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN") {
                Some(v) => Some(parse_listen(&v.to_string_lossy()).map_err(|message| {
                    ConfigError::Env {
                        name: "ADAPTIVE_GUIDEBOOK_METRICS_LISTEN",
                        message,
                    }
                })?),
                None => match &file.metrics_listen {
                    Some(v) => Some(parse_listen(v).map_err(|message| ConfigError::Invalid {
                        path: config_path.clone(),
                        message: format!("metricsListen: {message}"),
                    })?),
                    None => None,
                },
            };
        let boolean = |name: &'static str| -> Result<Option<bool>, ConfigError> {
            match env(name) {
                Some(v) => match v.to_string_lossy().as_ref() {
                    "1" | "true" => Ok(Some(true)),
                    "0" | "false" => Ok(Some(false)),
                    other => Err(ConfigError::Env {
                        name,
                        message: format!("`{other}` is not one of 1, true, 0, false"),
                    }),
                },
                None => Ok(None),
            }
        };
        let record_metrics = boolean("ADAPTIVE_GUIDEBOOK_RECORD_METRICS")?
            .unwrap_or(file.record_metrics.unwrap_or(true));
        let metrics_allow_remote = boolean("ADAPTIVE_GUIDEBOOK_METRICS_ALLOW_REMOTE")?
            .unwrap_or(file.metrics_allow_remote.unwrap_or(false));
        // The endpoint answers anyone who can reach it, without authentication: beyond
        // loopback only when the user said so in a setting of its own, never by a typo of the
        // address.
        if let Some(addr) = metrics_listen.filter(|a| !a.ip().is_loopback()) {
            if !metrics_allow_remote {
                let message = format!(
                    "`{addr}` can be reached from other machines; set metricsAllowRemote: true \
                     in config.yaml (or ADAPTIVE_GUIDEBOOK_METRICS_ALLOW_REMOTE=1) to serve \
                     /metrics there, or listen on 127.0.0.1"
                );
                return Err(match env("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN") {
                    Some(_) => ConfigError::Env {
                        name: "ADAPTIVE_GUIDEBOOK_METRICS_LISTEN",
                        message,
                    },
                    None => ConfigError::Invalid {
                        path: config_path.clone(),
                        message: format!("metricsListen: {message}"),
                    },
                });
            }
        }
        let idle_timeout_ms = match file.idle_timeout_ms {
            Some(0) => {
                return Err(ConfigError::Invalid {
                    path: config_path.clone(),
                    message: "idleTimeoutMs must be at least 1".into(),
                })
            }
            Some(ms) => ms,
            None => DEFAULT_IDLE_TIMEOUT_MS,
        };
        let team_guidebooks = team_guidebooks(&config_path, file.team_guidebooks, &home)?;
        let team_metrics = team_metrics::resolve(
            file.team_metrics,
            env("ADAPTIVE_GUIDEBOOK_TEAM_METRICS_URL").map(|v| v.to_string_lossy().into_owned()),
            |p| {
                from_file(&Some(p.clone()))
                    .map(|p| p.expect("a path was given"))
                    .map_err(|e| match e {
                        ConfigError::Invalid { message, .. } => message,
                        other => other.to_string(),
                    })
            },
        )
        .map_err(|message| ConfigError::Invalid {
            path: config_path.clone(),
            message,
        })?;
        let settings = Settings {
            repository_rules: file.repository_rules.unwrap_or_default(),
            team_guidebooks,
            team_metrics,
            metrics_dir: pick(
                &overrides.metrics_dir,
                "ADAPTIVE_GUIDEBOOK_METRICS_DIR",
                from_file(&file.metrics_dir)?,
                home.join("metrics"),
            ),
            metrics_listen,
            metrics_allow_remote,
            idle_timeout_ms,
            record_metrics,
            socket: pick(
                &overrides.socket,
                "ADAPTIVE_GUIDEBOOK_SOCKET",
                from_file(&file.socket)?,
                home.join("sidecar.sock"),
            ),
            db: pick(
                &overrides.db,
                "ADAPTIVE_GUIDEBOOK_DB",
                from_file(&file.db)?,
                home.join("adaptive-guidebook.db"),
            ),
            guidebook_root: pick(
                &overrides.guidebook_root,
                "ADAPTIVE_GUIDEBOOK_ROOT",
                from_file(&file.guidebook_root)?,
                home.join("guidebook"),
            ),
            flags: pick(
                &overrides.flags,
                "ADAPTIVE_GUIDEBOOK_FLAGS",
                from_file(&file.flags)?,
                home.join("feature_flags.json"),
            ),
            config,
            max_request_bytes: file.max_request_bytes.unwrap_or(DEFAULT_MAX_REQUEST_BYTES),
            max_file_bytes: file.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
            busy_timeout_ms: file.busy_timeout_ms.unwrap_or(DEFAULT_BUSY_TIMEOUT_MS),
            reload_interval_ms: file
                .reload_interval_ms
                .unwrap_or(DEFAULT_RELOAD_INTERVAL_MS),
            tokenizer: file.tokenizer.map(Tokenizer::from).unwrap_or_default(),
            breaker: file.breaker.unwrap_or_default(),
            home,
        };
        Ok(settings)
    }

    /// Whether the guidebook root is the default one, which `serve` may create from the
    /// embedded sample. A root the user chose is never written to.
    pub fn root_is_default(&self) -> bool {
        self.guidebook_root == self.home.join("guidebook")
    }
}

/// A `metricsListen` value: `HOST:PORT`, or a bare port, which listens on loopback only.
fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("`{text}` is not an address: write 127.0.0.1:PORT (or just PORT for loopback)")
    })
}

/// `teamGuidebooks:` checked (names valid and distinct, a URL given), each with its checkout
/// directory under `home`.
fn team_guidebooks(
    path: &Path,
    given: Option<Vec<TeamGuidebook>>,
    home: &Path,
) -> Result<Vec<TeamGuidebook>, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (i, mut team) in given.unwrap_or_default().into_iter().enumerate() {
        let name_ok = !team.name.is_empty()
            && team.name.len() <= 64
            && team
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !name_ok {
            return Err(invalid(format!(
                "teamGuidebooks[{i}].name `{}`: use lowercase letters, digits, `-` and `_` (at \
                 most 64)",
                team.name
            )));
        }
        if !seen.insert(team.name.clone()) {
            return Err(invalid(format!(
                "teamGuidebooks[{i}].name `{}` is used twice",
                team.name
            )));
        }
        if team.url.trim().is_empty() {
            return Err(invalid(format!("teamGuidebooks[{i}].url is empty")));
        }
        if team.refresh_minutes == 0 {
            return Err(invalid(format!(
                "teamGuidebooks[{i}].refreshMinutes must be at least 1"
            )));
        }
        team.dir = home.join("sources").join(&team.name);
        out.push(team);
    }
    Ok(out)
}

fn parse_config(path: &Path, text: &str) -> Result<ConfigFile, ConfigError> {
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
    }
    let file: ConfigFile = serde_yaml::from_str(text).map_err(|e| ConfigError::Invalid {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if let Some(limits) = &file.breaker {
        limits.check().map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_live_under_home_dir() {
        let s = Settings::resolve_with(&Overrides::default(), env(&[("HOME", "/nonexistent-h")]))
            .unwrap();
        assert_eq!(s.home, PathBuf::from("/nonexistent-h/.adaptive-guidebook"));
        assert_eq!(s.socket, s.home.join("sidecar.sock"));
        assert_eq!(s.db, s.home.join("adaptive-guidebook.db"));
        assert_eq!(s.guidebook_root, s.home.join("guidebook"));
        assert_eq!(s.flags, s.home.join("feature_flags.json"));
        assert!(s.root_is_default());
        assert_eq!(s.max_request_bytes, DEFAULT_MAX_REQUEST_BYTES);
        assert_eq!(s.metrics_dir, s.home.join("metrics"));
        assert_eq!(s.metrics_listen, None, "the endpoint is off by default");
        assert!(s.record_metrics);
    }

    #[test]
    fn metrics_settings_come_from_env_and_file_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "metricsDir: m\nmetricsListen: \"9464\"\nrecordMetrics: false\n",
        )
        .unwrap();
        let s = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", home)]),
        )
        .unwrap();
        assert_eq!(s.metrics_dir, dir.path().join("m"));
        assert_eq!(s.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert!(!s.record_metrics);
        let s = Settings::resolve_with(
            &Overrides::default(),
            env(&[
                ("ADAPTIVE_GUIDEBOOK_HOME", home),
                ("ADAPTIVE_GUIDEBOOK_METRICS_DIR", "/env/metrics"),
                ("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN", "[::1]:9000"),
                ("ADAPTIVE_GUIDEBOOK_RECORD_METRICS", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(s.metrics_dir, PathBuf::from("/env/metrics"));
        assert_eq!(s.metrics_listen, Some("[::1]:9000".parse().unwrap()));
        assert!(s.record_metrics);
        assert!(!s.metrics_allow_remote);
        std::fs::write(dir.path().join("config.yaml"), "metricsListen: localhost\n").unwrap();
        let err = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", home)]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.yaml") && err.contains("metricsListen"),
            "{err}"
        );
        let err = Settings::resolve_with(
            &Overrides::default(),
            env(&[("HOME", home), ("ADAPTIVE_GUIDEBOOK_RECORD_METRICS", "yes")]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("ADAPTIVE_GUIDEBOOK_RECORD_METRICS"), "{err}");
    }

    #[test]
    fn a_remote_metrics_address_needs_its_own_setting() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let resolve = |yaml: &str, vars: &[(&str, &str)]| {
            std::fs::write(dir.path().join("config.yaml"), yaml).unwrap();
            let mut vars = vars.to_vec();
            vars.push(("ADAPTIVE_GUIDEBOOK_HOME", home));
            Settings::resolve_with(&Overrides::default(), env(&vars))
        };
        for (yaml, vars) in [
            ("metricsListen: 0.0.0.0:9464\n", vec![]),
            (
                "",
                vec![("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN", "192.0.2.7:9464")],
            ),
            ("metricsListen: \"[::]:9464\"\n", vec![]),
        ] {
            let err = resolve(yaml, &vars).unwrap_err().to_string();
            assert!(err.contains("metricsAllowRemote"), "{err}");
        }
        let err = resolve("", &[("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN", "0.0.0.0:9464")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ADAPTIVE_GUIDEBOOK_METRICS_LISTEN"), "{err}");
        let s = resolve(
            "metricsListen: 0.0.0.0:9464\nmetricsAllowRemote: true\n",
            &[],
        )
        .unwrap();
        assert_eq!(s.metrics_listen, Some("0.0.0.0:9464".parse().unwrap()));
        assert!(s.metrics_allow_remote);
        let s = resolve(
            "metricsListen: 0.0.0.0:9464\n",
            &[("ADAPTIVE_GUIDEBOOK_METRICS_ALLOW_REMOTE", "true")],
        )
        .unwrap();
        assert!(s.metrics_allow_remote);
        // Loopback needs no opt-in, and the opt-in alone opens nothing.
        let s = resolve("metricsListen: 127.0.0.1:9464\n", &[]).unwrap();
        assert!(!s.metrics_allow_remote);
        let s = resolve("metricsAllowRemote: true\n", &[]).unwrap();
        assert_eq!(s.metrics_listen, None);
    }

    #[test]
    fn the_idle_timeout_comes_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = env(&[("ADAPTIVE_GUIDEBOOK_HOME", dir.path().to_str().unwrap())]);
        let s = Settings::resolve_with(&Overrides::default(), &home).unwrap();
        assert_eq!(s.idle_timeout_ms, DEFAULT_IDLE_TIMEOUT_MS);
        std::fs::write(dir.path().join("config.yaml"), "idleTimeoutMs: 250\n").unwrap();
        let s = Settings::resolve_with(&Overrides::default(), &home).unwrap();
        assert_eq!(s.idle_timeout_ms, 250);
        std::fs::write(dir.path().join("config.yaml"), "idleTimeoutMs: 0\n").unwrap();
        let err = Settings::resolve_with(&Overrides::default(), &home).unwrap_err();
        assert!(err.to_string().contains("idleTimeoutMs"), "{err}");
    }

    #[test]
    fn flag_beats_env_beats_file_beats_default() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "socket: /file/s.sock\ndb: rel.db\nguidebookRoot: /file/root\nmaxFileBytes: 10\n",
        )
        .unwrap();
        let e = env(&[
            ("ADAPTIVE_GUIDEBOOK_HOME", home),
            ("ADAPTIVE_GUIDEBOOK_SOCKET", "/env/s.sock"),
            ("ADAPTIVE_GUIDEBOOK_DB", "/env/x.db"),
        ]);
        let flags = Overrides {
            socket: Some("/flag/s.sock".into()),
            ..Overrides::default()
        };
        let s = Settings::resolve_with(&flags, e).unwrap();
        assert_eq!(s.socket, PathBuf::from("/flag/s.sock"));
        assert_eq!(s.db, PathBuf::from("/env/x.db"));
        assert_eq!(s.guidebook_root, PathBuf::from("/file/root"));
        assert_eq!(s.flags, dir.path().join("feature_flags.json"));
        assert_eq!(s.max_file_bytes, 10);

        let s = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", home)]),
        )
        .unwrap();
        assert_eq!(
            s.db,
            dir.path().join("rel.db"),
            "relative to the config file"
        );
    }

    #[test]
    fn unknown_config_key_is_an_error_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.yaml"), "db: /x\nsockett: /y\n").unwrap();
        let err = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", dir.path().to_str().unwrap())]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("config.yaml"), "{err}");
        assert!(err.contains("sockett"), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn tokenizer_defaults_to_cl100k_and_an_unknown_one_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = env(&[("ADAPTIVE_GUIDEBOOK_HOME", dir.path().to_str().unwrap())]);
        let s = Settings::resolve_with(&Overrides::default(), &home).unwrap();
        assert_eq!(s.tokenizer, Tokenizer::Cl100k);
        for (name, want) in [
            ("o200k_base", Tokenizer::O200k),
            ("estimate", Tokenizer::Estimate),
        ] {
            std::fs::write(
                dir.path().join("config.yaml"),
                format!("tokenizer: {name}\n"),
            )
            .unwrap();
            let s = Settings::resolve_with(&Overrides::default(), &home).unwrap();
            assert_eq!(s.tokenizer, want);
        }
        std::fs::write(dir.path().join("config.yaml"), "tokenizer: p50k_base\n").unwrap();
        let err = Settings::resolve_with(&Overrides::default(), &home)
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.yaml"), "{err}");
        assert!(
            err.contains("p50k_base") && err.contains("cl100k_base"),
            "{err}"
        );
    }

    #[test]
    fn breaker_limits_come_from_the_file_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        let resolve = |yaml: &str| {
            std::fs::write(dir.path().join("config.yaml"), yaml).unwrap();
            Settings::resolve_with(
                &Overrides::default(),
                env(&[("ADAPTIVE_GUIDEBOOK_HOME", home)]),
            )
        };
        let s = resolve("db: /x.db\n").unwrap();
        assert_eq!(s.breaker, BreakerLimits::default());
        let s = resolve("breaker:\n  sameErrorLimit: 2\n  criticalLimit: 40\n").unwrap();
        assert_eq!(
            s.breaker,
            BreakerLimits {
                same_error_limit: 2,
                warning_limit: 15,
                critical_limit: 40
            }
        );
        let err = resolve("breaker:\n  warningLimit: 30\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("warningLimit (30) must be below"), "{err}");
        let err = resolve("breaker:\n  sameErrorLimit: 0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sameErrorLimit must be at least 1"), "{err}");
        let err = resolve("breaker:\n  sameErorLimit: 2\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sameErorLimit"), "{err}");
    }

    #[test]
    fn a_named_config_must_exist() {
        let flags = Overrides {
            config: Some("/nonexistent/config.yaml".into()),
            ..Overrides::default()
        };
        let err = Settings::resolve_with(&flags, env(&[("HOME", "/h")])).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/config.yaml"));
    }

    #[test]
    fn a_tilde_in_a_config_path_is_the_users_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_str().unwrap();
        std::fs::write(
            dir.path().join("config.yaml"),
            "guidebookRoot: ~/team-guidebook\ndb: ~/x/a.db\nflags: ~/f.json\nmetricsDir: ~/m\n\
             socket: ~user/s.sock\n",
        )
        .unwrap();
        let s = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", home), ("HOME", "/users/me")]),
        )
        .unwrap();
        assert_eq!(s.guidebook_root, PathBuf::from("/users/me/team-guidebook"));
        assert_eq!(s.db, PathBuf::from("/users/me/x/a.db"));
        assert_eq!(s.flags, PathBuf::from("/users/me/f.json"));
        assert_eq!(s.metrics_dir, PathBuf::from("/users/me/m"));
        // Only `~/` starts the home (a bare `~` is YAML's null); `~user` is a name like any
        // other.
        assert_eq!(s.socket, dir.path().join("~user/s.sock"));
        // Without HOME there is no home to put there: an error naming the file, never `<dir>/~`.
        let err = Settings::resolve_with(
            &Overrides::default(),
            env(&[("ADAPTIVE_GUIDEBOOK_HOME", home)]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.yaml") && err.contains("HOME is not set"),
            "{err}"
        );
    }
}
