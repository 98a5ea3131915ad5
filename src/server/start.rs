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
        reloader.abort();
        if let Some(endpoint) = endpoint {
            endpoint.abort();
        }
        Ok::<_, StartError>(socket_file)
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

/// Re-reads the guidebook (guidelines and prompt packs) on an interval. A poll (a `stat` per
/// guideline file) rather than a file-system watcher: it sees edits through symlinks, network
/// mounts and editors that replace files, and needs no extra dependency. A check is not free
/// (about 8–10 ms of CPU at 1,000 guideline directories, 80–120 ms at 10,000), so the next one
/// waits in proportion to the CPU time the last one used (see [`reload_pause`]).
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
        let cpu_before = process_cpu_time();
        let reloaded = tokio::task::spawn_blocking(move || {
            engine.guidebook.reload();
            engine.prompts.reload();
        });
        if let Err(e) = reloaded.await {
            tracing::error!("guidebook reload panicked: {e}");
        }
        // The whole process's CPU time: a check walks on every core, and whatever searches
        // ran meanwhile count too, which only spaces checks out more while the daemon is busy.
        let cpu = process_cpu_time().saturating_sub(cpu_before);
        pause = reload_pause(every, cpu);
        tracing::debug!(
            took_ms = crate::time::log_ms(started.elapsed()),
            cpu_ms = crate::time::log_ms(cpu),
            next_in_ms = pause.as_millis() as u64,
            "checked the guidebook for changes"
        );
    }
}

/// How long to wait before the next check for changes: `every`, or longer when the last check
/// used more CPU time than [`RELOAD_CHECK_SHARE`] of one core allows, but never more than
/// [`RELOAD_PAUSE_MAX`]. An idle daemon on a laptop must not burn a core checking files: with
/// the pause in proportion to wall time, 10,000 guideline directories checked on two threads
/// every 400–470 ms took 31 % of a core while nobody called the daemon.
fn reload_pause(every: Duration, cpu: Duration) -> Duration {
    (cpu * RELOAD_CHECK_SHARE).min(RELOAD_PAUSE_MAX).max(every)
}

/// The next check waits at least this many times the CPU time the last one used: the checks
/// take at most about a twentieth of one core (1 / (1 + 20)).
const RELOAD_CHECK_SHARE: u32 = 20;

/// However costly a check, the next one comes within this long (a configured interval that is
/// longer still is kept).
const RELOAD_PAUSE_MAX: Duration = Duration::from_secs(30);

/// The CPU time (user and system) this process has used so far, all threads together.
fn process_cpu_time() -> Duration {
    // SAFETY: `getrusage` writes into the zeroed struct it is given and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let of = |t: libc::timeval| {
        Duration::new(t.tv_sec.max(0) as u64, 0) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    of(usage.ru_utime) + of(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_for_changes_take_at_most_a_twentieth_of_a_core() {
        let every = Duration::from_millis(400);
        let ms = Duration::from_millis;
        // A small guidebook is checked on the interval.
        assert_eq!(reload_pause(every, ms(3)), every);
        assert_eq!(reload_pause(every, ms(20)), every);
        // A large one waits twenty times the CPU time its check used: 10,000 guideline
        // directories walked on two threads (100 ms of wall time, 200 ms of CPU).
        let cpu = ms(200);
        let pause = reload_pause(every, cpu);
        assert_eq!(pause, ms(4000));
        assert!(cpu.as_secs_f64() / (cpu + pause).as_secs_f64() <= 0.05);
        // However large, a change is seen within half a minute.
        assert_eq!(
            reload_pause(every, Duration::from_secs(5)),
            RELOAD_PAUSE_MAX
        );
        // A configured interval longer than that is kept.
        let hourly = Duration::from_secs(3600);
        assert_eq!(reload_pause(hourly, Duration::from_secs(5)), hourly);
    }

    #[test]
    fn process_cpu_time_counts_work_on_every_thread() {
        // Each thread spins until it has itself used 40 ms of CPU, however loaded the machine.
        let thread_cpu = || {
            // SAFETY: `clock_gettime` writes into the zeroed struct it is given.
            let mut t: libc::timespec = unsafe { std::mem::zeroed() };
            assert_eq!(
                unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) },
                0
            );
            Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
        };
        let spin = || {
            let start = thread_cpu();
            let mut x = 0u64;
            while thread_cpu() - start < Duration::from_millis(40) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        let before = process_cpu_time();
        std::thread::scope(|s| {
            s.spawn(spin);
            s.spawn(spin);
        });
        let used = process_cpu_time() - before;
        // Both threads' 40 ms (rusage counts in microseconds; a little slack for rounding).
        assert!(used >= Duration::from_millis(79), "counted {used:?}");
    }
}
