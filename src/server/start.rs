//! The daemon's start-up: private directories, the sample guidebook, the engine, the socket
//! (bound, or adopted from systemd), the Prometheus endpoint and the team push if configured,
//! readiness, the watch over the sources (reloads on change), and serving until shutdown.
//!
//! `guidebook serve` is a thin caller of [`start`]; everything a daemon does between its
//! arguments and its exit lives here.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{inherited_listener, ActivationError, Notifier, SocketError};
use crate::config::Settings;
use crate::engine::Engine;
use crate::sample::install_sample;
use crate::sources::watch::{Watch, WatchConfig, WatchKey, WatchMode};
use crate::store::StoreError;

/// Why the daemon could not start (or stopped with an error).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error(transparent)]
    Activation(#[from] ActivationError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        source: std::io::Error,
    },
}

/// Runs the daemon for `settings` until the future that `shutdown()` makes resolves (it is created
/// inside the daemon's runtime, before the socket exists, so that signal handlers are in place
/// by the time a client can connect).
pub fn start<F: Future<Output = ()> + Send + 'static>(
    mut settings: Settings,
    shutdown: impl FnOnce() -> F,
) -> Result<(), StartError> {
    // Everything the daemon creates from here on (the database, its WAL and shared-memory
    // files, the parse cache, a flags file, the sample guidebook) is its user's alone: it holds
    // what the agents were shown and edited.
    // SAFETY: umask has no preconditions and cannot fail.
    unsafe { libc::umask(0o077) };
    let nofile = raise_descriptor_limit();
    // Both take variables out of the environment, which is only sound while this process has
    // a single thread; and children (git) must not inherit them.
    let notifier = Notifier::from_env();
    let inherited = inherited_listener()?;
    if let Some(listener) = &inherited {
        let path = listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(|p| p.to_path_buf()));
        // The socket the service manager bound is the one clients reach; `status` must name it.
        if let Some(path) = path.filter(|p| *p != settings.socket) {
            tracing::warn!(
                configured = %settings.socket.display(),
                inherited = %path.display(),
                "serving the socket the service manager passed, not the configured one"
            );
            settings.socket = path;
        }
    }
    // Every directory that holds state must be private before anything is read from it or
    // written to it.
    super::prepare_directory(&settings.home, &settings.home, "HOME_DIR")?;
    if let Some(dir) = settings.db.parent() {
        super::prepare_directory(dir, &settings.home, "database directory")?;
    }
    if settings.root_is_default() {
        let root = &settings.guidebook_root;
        if install_sample(root).map_err(|source| StartError::Io {
            doing: format!("installing the sample guidebook into {}", root.display()),
            source,
        })? {
            tracing::info!(root = %root.display(), "installed the sample guidebook");
        }
    }
    // The guidebook is compiled on a thread of its own while the socket comes up: `status`
    // answers at once, and the first searches wait for the load (within their deadline).
    let engine = Arc::new(Engine::open_unloaded(settings.clone())?);
    // Reloads on change; armed once the first load is done (see `arm_sources`).
    let watch = Arc::new(watch_sources(&engine, &settings));
    // Each team guidebook fetched now and every `refreshMinutes`; a fetch that moved a checkout
    // reloads the guidebook at once (the watch would see the files change too).
    let refresher = (!settings.team_guidebooks.is_empty()).then(|| {
        let engine = engine.clone();
        crate::sources::team::spawn_refresher(settings.team_guidebooks.clone(), move |name| {
            tracing::info!(team = name, "team guidebook updated");
            engine.guidebook.reload();
            engine.warm();
        })
    });
    // The team push on a thread of its own, never on a hook's path.
    if let Some(team) = &settings.team_metrics {
        tracing::info!(url = %team.remote_write_url, "pushing settled adherence for the team");
        crate::metrics::team::push::spawn(
            team.clone(),
            engine.team.clone(),
            engine.team_push.clone(),
        )
        .map_err(|source| StartError::Io {
            doing: "starting the team metrics push".into(),
            source,
        })?;
    }
    {
        let engine = engine.clone();
        let watch = watch.clone();
        let settings = settings.clone();
        std::thread::Builder::new()
            .name("guidebook-load".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                // The parse cache is written by the first check for changes, not while the
                // first searches want the cores.
                engine
                    .guidebook
                    .reload_with(crate::guidebook::CacheWrite::Later);
                tracing::info!(
                    took_ms = started.elapsed().as_millis() as u64,
                    "guidebook ready"
                );
                arm_sources(&watch, &settings);
            })
            .map_err(|source| StartError::Io {
                doing: "starting the guidebook loader".into(),
                source,
            })?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("guidebook")
        // Searches block the worker that read them (`rpc::off_the_reactor`), which the
        // runtime replaces from the blocking pool, and every thread that scans keeps its own
        // regex cache (tens of MiB with a large guidebook). tokio's default of 512 threads
        // would let a burst of requests multiply that; 16 is more than two cores can use.
        .max_blocking_threads(16)
        .build()
        .map_err(|source| StartError::Io {
            doing: "starting the async runtime".into(),
            source,
        })?;
    // The signal handlers go in before the socket exists: a SIGTERM sent as soon as the socket
    // accepts must shut down cleanly, not kill the process with the socket left behind.
    let shutdown = {
        let _runtime = runtime.enter();
        shutdown()
    };
    let activated = inherited.is_some();
    let super::BoundSocket {
        listener,
        file: socket_file,
    } = match inherited {
        Some(listener) => super::adopt(listener, &settings.home)?,
        None => super::bind(&settings.socket, &settings.home)?,
    };
    let socket_file = runtime.block_on(async {
        let listener =
            tokio::net::UnixListener::from_std(listener).map_err(|source| StartError::Io {
                doing: "registering the listening socket".into(),
                source,
            })?;
        // The exact tokenizer's vocabulary (tens of MiB, tens of milliseconds) is built on first
        // need only: a search whose text is within its budget in bytes never needs it.
        let endpoint = match settings.metrics_listen {
            Some(addr) => {
                let listener =
                    super::metrics_http::bind(addr).map_err(|source| StartError::Io {
                        doing: format!("listening for Prometheus on {addr} (metricsListen)"),
                        source,
                    })?;
                if addr.ip().is_loopback() {
                    tracing::info!(%addr, "serving /metrics");
                } else {
                    // Allowed by `metricsAllowRemote` (the settings refuse it otherwise).
                    tracing::warn!(
                        %addr,
                        "serving /metrics beyond loopback (metricsAllowRemote): anyone who can \
                         reach this address reads the counters, without authentication"
                    );
                }
                Some(tokio::spawn(super::metrics_http::serve(
                    listener,
                    engine.clone(),
                )))
            }
            None => None,
        };
        tracing::info!(
            socket = %settings.socket.display(),
            db = %settings.db.display(),
            root = %settings.guidebook_root.display(),
            version = crate::VERSION,
            activated,
            "listening"
        );
        notifier.notify(&format!(
            "READY=1\nSTATUS=listening on {}",
            settings.socket.display()
        ));
        let shutdown = async move {
            shutdown.await;
            notifier.notify("STOPPING=1");
        };
        let limits = super::Limits {
            max_request_bytes: settings.max_request_bytes,
            max_connections: super::connection_cap(nofile),
            idle_timeout: Duration::from_millis(settings.idle_timeout_ms),
            body_timeout: super::body_timeout(Duration::from_millis(settings.idle_timeout_ms)),
        };
        let module = crate::rpc::module(engine.clone());
        // The accept loop runs on a worker, not on this thread: a connection it spawns then
        // waits in that worker's own queue and runs there next, where one spawned from outside
        // the workers would first have to wake one (a thread hop on every request's path).
        let serving = tokio::spawn(async move {
            let mut socket_file = socket_file;
            super::run(
                listener,
                module,
                limits,
                shutdown,
                // An inherited socket stays: systemd keeps listening on it while the daemon is
                // down, and the next connection starts the daemon again.
                || socket_file.remove(),
            )
            .await;
            socket_file
        });
        let socket_file = match serving.await {
            Ok(socket_file) => socket_file,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        if let Some(endpoint) = endpoint {
            endpoint.abort();
        }
        Ok::<_, StartError>(socket_file)
    })?;
    // No reload starts from here on (one under way finishes on the watch's thread).
    drop(watch);
    drop(refresher);
    // What the recorder still holds is written before the process can exit, and so is a parse
    // cache whose write was put off.
    engine.recorder.flush();
    engine.guidebook.write_cache();
    // The lock goes last: no second daemon starts on this path before the drain is over.
    drop(socket_file);
    tracing::info!("stopped");
    Ok(())
}

/// Raises this process's soft limit on open descriptors to its hard limit, so that a burst of
/// connections or files does not hit a soft limit the shell happened to set (256 on macOS,
/// 1,024 on many Linux systems), and returns the limit in force. On macOS the hard limit may be
/// "unlimited", which the kernel refuses as a soft limit; `OPEN_MAX` (10,240) is tried then.
fn raise_descriptor_limit() -> u64 {
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            tracing::warn!(
                "cannot read the descriptor limit: {}",
                std::io::Error::last_os_error()
            );
            return 1024;
        }
        let before = limit.rlim_cur;
        if before >= limit.rlim_max {
            tracing::info!(limit = before, "descriptor limit already at its maximum");
            return before;
        }
        for soft in [limit.rlim_max, limit.rlim_max.min(10_240)] {
            let raised = libc::rlimit {
                rlim_cur: soft,
                rlim_max: limit.rlim_max,
            };
            if soft > before && libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                tracing::info!(from = before, to = soft, "raised the descriptor limit");
                return soft;
            }
        }
        tracing::warn!(
            limit = before,
            "cannot raise the descriptor limit: {}",
            std::io::Error::last_os_error()
        );
        before
    }
}

/// The watch over every source the daemon serves from, not armed yet ([`arm_sources`] does
/// that once the first load is done). Replaces the poll that re-walked the whole guidebook
/// root every `reloadIntervalMs`: idle, that cost 1.0 % of a core at 1,000 guidelines and
/// 4.8 % at 10,000; now a source is checked only when a notification says it changed
/// (`reloadIntervalMs` is the fallback poll's interval, for a source that cannot be watched).
fn watch_sources(engine: &Arc<Engine>, settings: &Settings) -> Watch {
    let config = WatchConfig::new(Duration::from_millis(settings.reload_interval_ms.max(50)));
    let engine = engine.clone();
    Watch::start(config, move |watch, keys| {
        reload_changed(&engine, watch, keys)
    })
}

/// Arms the watch: the guidebook root (guideline files and `prompts/`), each team guidebook's
/// checkout (which may not exist yet) and `trust.json`. Then every source is checked once:
/// whatever changed between the first load and the watches being in place is seen (and the
/// parse cache, whose write the first load put off, is written).
fn arm_sources(watch: &Watch, settings: &Settings) {
    watch.add(WatchKey::Guidebook, settings.guidebook_root.clone(), true);
    for team in &settings.team_guidebooks {
        watch.add(WatchKey::Team(team.name.clone()), team.dir.clone(), true);
    }
    watch.add(
        WatchKey::Trust,
        crate::sources::trust::store_path(settings),
        false,
    );
    watch.check_all();
    match watch.mode() {
        WatchMode::Notify => tracing::info!("watching the sources for changes"),
        WatchMode::Polling { keys } => tracing::warn!(
            ?keys,
            every_ms = settings.reload_interval_ms,
            "these sources cannot be watched (no file watcher, or the inotify watch limit: \
             fs.inotify.max_user_watches); they are polled"
        ),
    }
}

/// What the watch calls (on its own thread) with the sources that changed: the guidebook and
/// its prompt packs are reloaded for the root or a team guidebook; the rest goes to
/// [`sources_changed`]. Then the recent files are evaluated once against what is served.
fn reload_changed(engine: &Engine, watch: &Watch, keys: &[WatchKey]) {
    if keys
        .iter()
        .any(|k| matches!(k, WatchKey::Guidebook | WatchKey::Team(_)))
    {
        let started = Instant::now();
        engine.guidebook.reload();
        engine.prompts.reload();
        tracing::debug!(
            ?keys,
            took_ms = crate::time::log_ms(started.elapsed()),
            "checked the guidebook for changes"
        );
    }
    let others: Vec<WatchKey> = keys
        .iter()
        .filter(|k| matches!(k, WatchKey::Trust | WatchKey::Repository(_)))
        .cloned()
        .collect();
    if !others.is_empty() {
        sources_changed(engine, watch, &others);
    }
    if !keys.is_empty() {
        engine.warm();
    }
}

/// `trust.json` or a trusted repository's rule files changed (`keys` holds only
/// [`WatchKey::Trust`] and [`WatchKey::Repository`]), on the watch's thread: every trusted
/// repository is loaded again after a change of `trust.json` (a new trust, an untrust, new
/// hashes), else only the repositories whose directories saw a change; then the watch is made
/// to cover exactly the served repositories' rule directories (each one its own key).
fn sources_changed(engine: &Engine, watch: &Watch, keys: &[WatchKey]) {
    let repositories = &engine.repositories;
    let before = repositories.watch_set();
    if keys.contains(&WatchKey::Trust) {
        repositories.reload_all(&engine.guidebook);
    } else {
        let roots: std::collections::BTreeSet<std::path::PathBuf> = keys
            .iter()
            .filter_map(|k| match k {
                WatchKey::Repository(dir) => repositories.root_of(dir),
                _ => None,
            })
            .collect();
        for root in roots {
            repositories.reload(&root, &engine.guidebook);
        }
    }
    let after = repositories.watch_set();
    for (dir, _) in before.difference(&after) {
        if !after.iter().any(|(d, _)| d == dir) {
            watch.remove(&WatchKey::Repository(dir.clone()));
        }
    }
    for (dir, recursive) in after.difference(&before) {
        watch.add(WatchKey::Repository(dir.clone()), dir.clone(), *recursive);
    }
}
