//! The daemon's start-up: private directories, the sample guidebook, the engine, the socket
//! (bound, or adopted from systemd), the Prometheus endpoint if configured, readiness, the reload
//! loop, and serving until shutdown.
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
pub fn start<F: Future<Output = ()>>(
    mut settings: Settings,
    shutdown: impl FnOnce() -> F,
) -> Result<(), StartError> {
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
    {
        let engine = engine.clone();
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
            })
            .map_err(|source| StartError::Io {
                doing: "starting the guidebook loader".into(),
                source,
            })?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("guidebook")
        // Searches run on the blocking pool, and every thread that scans keeps its own
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
        file: mut socket_file,
    } = match inherited {
        Some(listener) => super::adopt(listener, &settings.home)?,
        None => super::bind(&settings.socket, &settings.home)?,
    };
    runtime.block_on(async {
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
                tracing::info!(%addr, "serving /metrics");
                Some(tokio::spawn(super::metrics_http::serve(
                    listener,
                    engine.clone(),
                )))
            }
            None => None,
        };
        let reloader = tokio::spawn(reload_loop(
            engine.clone(),
            Duration::from_millis(settings.reload_interval_ms.max(50)),
        ));
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
        let shutdown = async {
            shutdown.await;
            notifier.notify("STOPPING=1");
        };
        let limits = super::Limits {
            max_request_bytes: settings.max_request_bytes,
        };
        super::run(
            listener,
            crate::rpc::module(engine.clone()),
            limits,
            shutdown,
            // An inherited socket stays: systemd keeps listening on it while the daemon is
            // down, and the next connection starts the daemon again.
            || socket_file.remove(),
        )
        .await;
        reloader.abort();
        if let Some(endpoint) = endpoint {
            endpoint.abort();
        }
        Ok::<_, StartError>(())
    })?;
    // What the recorder still holds is written before the process can exit, and so is a parse
    // cache whose write was put off.
    engine.recorder.flush();
    engine.guidebook.write_cache();
    // The lock goes last: no second daemon starts on this path before the drain is over.
    drop(socket_file);
    tracing::info!("stopped");
    Ok(())
}

/// Re-reads the guidebook (guidelines and prompt packs) on an interval. A poll (a `stat` per
/// guideline file) rather than a file-system watcher: it sees edits through symlinks, network
/// mounts and editors that replace files, and needs no extra dependency. A check costs about
/// 10–20 ms per thousand files on a laptop, so past a few thousand the interval stretches (see
/// [`reload_pause`]).
async fn reload_loop(engine: Arc<Engine>, every: Duration) {
    // Checks start an interval after the first load is done: one that started while it ran
    // would walk the root again at once, on the cores the first searches are waiting for.
    while !engine.guidebook.is_loaded() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut pause = every;
    loop {
        tokio::time::sleep(pause).await;
        let engine = engine.clone();
        let started = Instant::now();
        let reloaded = tokio::task::spawn_blocking(move || {
            engine.guidebook.reload();
            engine.prompts.reload();
        });
        if let Err(e) = reloaded.await {
            tracing::error!("guidebook reload panicked: {e}");
        }
        pause = reload_pause(every, started.elapsed());
    }
}

/// How long to wait before the next check for changes: `every`, or longer when a check takes
/// more than a quarter of that. Walking and `stat`ing 10,000 guideline files every 400 ms took
/// half a core, which searches on a laptop's two cores then went without.
fn reload_pause(every: Duration, took: Duration) -> Duration {
    every.max(took * RELOAD_CHECK_SHARE)
}

/// A check for changes waits at least this many times as long as the last one took.
const RELOAD_CHECK_SHARE: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_for_changes_take_at_most_a_fifth_of_a_core() {
        let every = Duration::from_millis(400);
        // A small guidebook is checked on the interval.
        assert_eq!(reload_pause(every, Duration::from_millis(3)), every);
        assert_eq!(reload_pause(every, Duration::from_millis(100)), every);
        // A large one waits four times as long as its check took.
        let took = Duration::from_millis(250);
        let pause = reload_pause(every, took);
        assert_eq!(pause, Duration::from_millis(1000));
        assert!(took.as_secs_f64() / (took + pause).as_secs_f64() <= 0.2);
    }
}
