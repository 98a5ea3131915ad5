//! One push (settle what is due, send the changed series — or all of them — and record what the
//! server accepted) and the sidecar's push thread: every `intervalSeconds`, a failure retried
//! with backoff never further apart than the interval, a configuration error (a 4xx other than
//! 429, an unusable credential file) logged once and tried again only at the interval.

use crate::sync::Locked;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::http::{Client, HttpError};
use super::remote_write::{encode, request, HEADERS};
use super::settle::settle;
use crate::config::TeamMetrics;
use crate::store::{StoreError, TeamStore};

/// Every series is sent at least this often (with its current value), also when it did not
/// change: a Prometheus that keeps data for N days still has each series' value, and a window's
/// smallest value is known for series that changed in it.
pub const HEARTBEAT_SECONDS: i64 = 86_400;
/// The first retry waits this long; each next one twice as long, at most the interval.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Why a push did not go through.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl PushError {
    /// Whether the next try may succeed without a change of configuration.
    pub fn retryable(&self) -> bool {
        match self {
            PushError::Http(e) => e.retryable(),
            PushError::Store(_) => true,
        }
    }
}

/// What one accepted push sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// Series stored, and of them sent in this push.
    pub series: usize,
    pub sent: usize,
    /// The request body's size (snappy-compressed protobuf).
    pub bytes: usize,
    /// The server's answer.
    pub status: u16,
    /// Sessions that settled just before.
    pub settled: usize,
}

/// The push's state, which `status` (and through it `doctor`) shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushStatus {
    /// When the server last accepted a push (RFC 3339).
    pub last_push_at: Option<String>,
    /// Series stored (at most `maxSeries`), and sent by the last accepted push.
    pub series: usize,
    pub sent: usize,
    /// Sessions settled so far, and waiting to.
    pub settled_sessions: u64,
    pub pending_sessions: u64,
    /// The last failure, while it lasts; `null` once a push succeeds.
    pub last_error: Option<String>,
    /// The failure is one of configuration (a 4xx other than 429, a credential file): no
    /// retries until the interval has passed.
    pub configuration_error: bool,
}

/// Settles and pushes for one database.
#[derive(Debug, Clone)]
pub struct Pusher {
    settings: TeamMetrics,
    store: TeamStore,
    client: Client,
}

impl Pusher {
    pub fn new(settings: &TeamMetrics, store: TeamStore) -> Result<Pusher, HttpError> {
        let client = Client::new(
            settings.ca_file.as_deref(),
            Duration::from_secs(settings.timeout_seconds),
            settings.auth.clone(),
        )?;
        Ok(Pusher {
            settings: settings.clone(),
            store,
            client,
        })
    }

    /// Settles the sessions due at `now_ms` and pushes: every series with `all`, else those that
    /// changed since the last accepted push (nothing is sent when none did, unless `all`).
    pub fn push(&self, now_ms: i64, all: bool) -> Result<Pushed, PushError> {
        let settled = settle(
            &self.store,
            now_ms.div_euclid(1000),
            self.settings.settle_seconds,
            self.settings.max_series,
        )?;
        let instance = self.store.instance()?;
        let rows = self.store.series()?;
        // Samples of one series must rise in time, also across processes sharing the database.
        let at_ms = now_ms.max(self.store.last_pushed_ms()?.unwrap_or(0) + 2);
        let req = request(&rows, all, at_ms, &instance, &self.settings.labels);
        let sent = req.timeseries.len();
        if sent == 0 && !all {
            return Ok(Pushed {
                series: rows.len(),
                sent,
                bytes: 0,
                status: 0,
                settled,
            });
        }
        let body = encode(&req);
        let (status, _) = self
            .client
            .post(&self.settings.remote_write_url, &HEADERS, &body)?;
        self.store.pushed(&rows, at_ms)?;
        Ok(Pushed {
            series: rows.len(),
            sent,
            bytes: body.len(),
            status,
            settled,
        })
    }

    /// The counts behind `status`: sessions settled and waiting.
    fn sessions(&self) -> (u64, u64) {
        self.store.sessions().unwrap_or_default()
    }
}

/// Starts the push thread for `settings` over `store`, keeping `status` current.
pub fn spawn(
    settings: TeamMetrics,
    store: TeamStore,
    status: Arc<Mutex<PushStatus>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("guidebook-team-push".into())
        .spawn(move || run(settings, store, status))
}

fn run(settings: TeamMetrics, store: TeamStore, status: Arc<Mutex<PushStatus>>) {
    let interval = Duration::from_secs(settings.interval_seconds);
    let mut next_full = i64::MIN;
    let mut retry: Option<Duration> = None;
    let mut logged: Option<String> = None;
    loop {
        let now_ms = crate::time::now_millis();
        let all = now_ms.div_euclid(1000) >= next_full;
        let outcome = Pusher::new(&settings, store.clone())
            .map_err(PushError::from)
            .and_then(|p| {
                let r = p.push(now_ms, all);
                let sessions = p.sessions();
                let mut s = status.locked();
                (s.settled_sessions, s.pending_sessions) = sessions;
                r
            });
        let wait = match outcome {
            Ok(pushed) => {
                if all {
                    next_full = now_ms.div_euclid(1000) + HEARTBEAT_SECONDS;
                }
                if logged.take().is_some() {
                    tracing::info!(url = %settings.remote_write_url, "team metrics push recovered");
                }
                retry = None;
                let mut s = status.locked();
                s.series = pushed.series;
                if pushed.status != 0 {
                    s.sent = pushed.sent;
                    s.last_push_at = Some(crate::time::now_rfc3339());
                }
                s.last_error = None;
                s.configuration_error = false;
                interval
            }
            Err(e) => {
                let message = e.to_string();
                let configuration = !e.retryable();
                if logged.as_deref() != Some(message.as_str()) {
                    if configuration {
                        tracing::error!(error = %message, "team metrics push refused; not retried until the next interval: fix the configuration");
                    } else {
                        tracing::warn!(error = %message, "team metrics push failed; retrying with backoff");
                    }
                    logged = Some(message.clone());
                }
                {
                    let mut s = status.locked();
                    s.last_error = Some(message);
                    s.configuration_error = configuration;
                }
                if configuration {
                    retry = None;
                    interval
                } else {
                    let next = retry.map_or(FIRST_RETRY, |r| r * 2).min(interval);
                    retry = Some(next);
                    next
                }
            }
        };
        std::thread::sleep(wait);
    }
}
