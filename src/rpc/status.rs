//! Answers `status`: version, uptime, where things live, and the guidebook's load state with
//! every file error (path, line, message) of guidelines and prompt packs, the team push's state.
//! Reads: guideline snapshot, prompt packs, settings, the team push's state.

use crate::sync::Locked;
use serde::{Deserialize, Serialize};

use crate::engine::Engine;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub version: String,
    pub uptime_seconds: u64,
    pub socket: String,
    pub db: String,
    pub guidebook: GuidebookStatus,
    pub flags: FlagsStatus,
    /// Absent in the answers of sidecars older than this field.
    #[serde(default)]
    pub tokenizer: Option<TokenizerStatus>,
    /// The sources beside the root: team guidebooks and trusted repositories. Absent in the
    /// answers of sidecars older than this field.
    #[serde(default)]
    pub sources: Option<SourcesStatus>,
    /// The team push (`teamMetrics`); `null` when it is off, and in the answers of sidecars
    /// older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_metrics: Option<TeamMetricsStatus>,
}

/// The team push's state: its last accepted push, its series, its last failure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TeamMetricsStatus {
    /// The remote-write URL pushed to.
    pub url: String,
    /// When the server last accepted a push (RFC 3339); `null` before the first.
    pub last_push_at: Option<String>,
    /// Series kept (at most `maxSeries`), and series the last accepted push sent.
    pub series: usize,
    pub sent: usize,
    /// Sessions settled so far, and sessions waiting to settle.
    pub settled_sessions: u64,
    pub pending_sessions: u64,
    /// The last failure, while it lasts.
    pub last_error: Option<String>,
    /// Whether that failure is one of configuration (a 4xx other than 429, a credential or CA
    /// file): tried again only at the next interval.
    pub configuration_error: bool,
}

impl TeamMetricsStatus {
    fn of(engine: &Engine) -> Option<TeamMetricsStatus> {
        let team = engine.settings.team_metrics.as_ref()?;
        let s = engine.team_push.locked().clone();
        Some(TeamMetricsStatus {
            url: team.remote_write_url.clone(),
            last_push_at: s.last_push_at,
            series: s.series,
            sent: s.sent,
            settled_sessions: s.settled_sessions,
            pending_sessions: s.pending_sessions,
            last_error: s.last_error,
            configuration_error: s.configuration_error,
        })
    }
}

/// The team guidebooks and the trusted repositories' rules being served.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SourcesStatus {
    pub teams: Vec<TeamStatus>,
    pub repositories: Vec<RepositoryStatus>,
}

/// One team guidebook: what its checkout is at, and since when.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamStatus {
    pub name: String,
    pub url: String,
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// The commit served; `null` until a first fetch succeeded.
    pub revision: Option<String>,
    /// When a fetch last succeeded.
    pub fetched_at: Option<String>,
    /// Seconds since then.
    pub age_seconds: Option<u64>,
    /// Why the last fetch failed (the last good checkout is served); `null` when it did not.
    pub error: Option<String>,
}

/// One trusted repository: how many of its rules are served, and which files are not, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryStatus {
    pub root: String,
    pub served: usize,
    /// `FILE: STATE: REASON` per file not served (`new`/`changed` wait for `guidebook trust`).
    pub waiting: Vec<String>,
    /// Files in error, with line and column.
    pub errors: Vec<String>,
}

impl TeamStatus {
    /// What `team`'s `state.json` says now, its age counted from the last good fetch.
    pub fn of(team: &crate::config::TeamGuidebook) -> TeamStatus {
        let state = crate::sources::team::TeamState::read(team);
        TeamStatus {
            age_seconds: state.age_seconds(),
            name: team.name.clone(),
            url: team.url.clone(),
            git_ref: team.git_ref.clone(),
            revision: state.revision,
            fetched_at: state.fetched_at,
            error: state.error,
        }
    }
}

/// The sources' state as `status` reports it.
pub fn sources_status(engine: &Engine) -> SourcesStatus {
    SourcesStatus {
        teams: engine
            .settings
            .team_guidebooks
            .iter()
            .map(TeamStatus::of)
            .collect(),
        repositories: engine
            .repositories
            .reports()
            .into_iter()
            .map(|r| RepositoryStatus {
                root: r.root.display().to_string(),
                served: r.served,
                waiting: r.waiting.iter().map(|w| w.line()).collect(),
                errors: r.errors,
            })
            .collect(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenizerStatus {
    pub name: String,
    pub vocabulary_loaded: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuidebookStatus {
    pub root: String,
    pub guidelines: usize,
    pub loaded_at: Option<String>,
    pub errors: Vec<FileError>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileError {
    pub path: String,
    pub line: Option<usize>,
    /// 1-based, in characters, when known (YAML syntax errors, a tab in the indentation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
}

/// The flags file's state: when the served flags were read, and the file's error, if any.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlagsStatus {
    pub path: String,
    pub loaded_at: Option<String>,
    pub error: Option<String>,
}

pub fn handle(engine: &Engine, _params: Params) -> Status {
    let s = engine.guidebook.snapshot();
    let flags = engine.flags.snapshot();
    Status {
        version: crate::VERSION.to_string(),
        uptime_seconds: engine.started.elapsed().as_secs(),
        socket: engine.settings.socket.display().to_string(),
        db: engine.settings.db.display().to_string(),
        guidebook: GuidebookStatus {
            root: s.root.display().to_string(),
            guidelines: s.guidelines.len(),
            // `null` while the first load is still compiling.
            loaded_at: engine
                .guidebook
                .is_loaded()
                .then(|| crate::time::rfc3339(s.loaded_at)),
            // Guideline and prompt-pack files share one list: both live under the root.
            errors: s
                .errors
                .iter()
                .chain(engine.prompts.snapshot().errors.iter())
                .map(|e| FileError {
                    path: e.path.display().to_string(),
                    line: e.line,
                    column: e.column,
                    message: e.message.clone(),
                })
                .collect(),
        },
        sources: Some(sources_status(engine)),
        team_metrics: TeamMetricsStatus::of(engine),
        tokenizer: Some(TokenizerStatus {
            name: engine.tokenizer.name().to_string(),
            vocabulary_loaded: crate::tokens::vocabulary_loaded(),
        }),
        flags: FlagsStatus {
            path: engine.flags.path().display().to_string(),
            loaded_at: Some(crate::time::rfc3339(flags.loaded_at)),
            error: flags.error.clone(),
        },
    }
}
