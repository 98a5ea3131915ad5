//! Serves the JSON-RPC module over a Unix socket: jsonrpsee's tower service on each accepted
//! `tokio::net::UnixStream` whose peer is this user, and a graceful shutdown that stops
//! accepting, lets in-flight requests finish, and then returns.

mod activation;
mod connections;
mod ids;
pub mod metrics_http;
mod socket;
mod start;

pub use activation::{inherited_listener, ActivationError, Notifier};
pub use socket::{adopt, bind, prepare_directory, BoundSocket, SocketError, SocketFile};
pub use start::{start, StartError};

use std::future::Future;
use std::time::Duration;

use jsonrpsee::server::{serve_with_graceful_shutdown, stop_channel, Server, ServerConfig};
use jsonrpsee::{Methods, RpcModule};
use tokio::net::UnixListener;
use tokio::task::JoinSet;

use crate::engine::Engine;

/// How long shutdown waits for in-flight requests before giving up on them. A request is
/// bounded by its own deadlines long before this.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection accepted before shutdown gets to start reading its request before it
/// is told to shut down. hyper's graceful shutdown closes a connection that has not started
/// reading yet without an answer, although its request may already be in the socket.
const FIRST_READ_GRACE: Duration = Duration::from_millis(500);

/// Limits applied to every connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_request_bytes: u32,
    /// The most connections open at once; past it the oldest idle one is closed to make room
    /// (see `connections`).
    pub max_connections: usize,
    /// A connection without a request for this long is closed.
    pub idle_timeout: Duration,
    /// How long a request's body may take to arrive once its head has; then HTTP 408 (see
    /// [`body_timeout`]).
    pub body_timeout: Duration,
}

/// How long a request's body may take to arrive once its head has. The hook, the CLI and
/// `guidebook mcp` send the body in the same write as the head, so this is only ever reached by
/// a client that declares a body and holds it back. Until its body has arrived a request does
/// not protect its connection from being closed to make room (see `connections`), and this
/// bounds how long it keeps it open otherwise.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(2);

/// The body timeout for an idle timeout of `idle_timeout`: [`BODY_TIMEOUT`], or the idle
/// timeout if that is shorter (a body never gets longer than a connection may sit idle).
pub fn body_timeout(idle_timeout: Duration) -> Duration {
    BODY_TIMEOUT.min(idle_timeout)
}

/// The most connections the socket keeps open at once, descriptors permitting (see
/// [`connection_cap`]). A hook makes one connection per call and `guidebook mcp` keeps a few per
/// agent session: 256 is far beyond what the agents of one user open, and few enough that the
/// daemon keeps descriptors for its database, the files it reads and its guidebook.
pub const MAX_CONNECTIONS: usize = 256;

/// The connection cap for a descriptor limit of `nofile`: at most [`MAX_CONNECTIONS`], and at
/// most a quarter of the limit, so that connections alone never exhaust it.
pub fn connection_cap(nofile: u64) -> usize {
    (nofile / 4).clamp(8, MAX_CONNECTIONS as u64) as usize
}

/// Accepts connections on `listener` until `shutdown` resolves, then calls `stop_listening`
/// (which removes the socket file, so that new clients find no sidecar rather than a backlog
/// that will be reset), answers the connections already waiting, and drains.
///
/// Only connections from this process's effective uid are served: anyone else is refused before
/// a byte is read.
///
/// Invariant: once this returns, no request is being handled, so closing the database is safe.
pub async fn run(
    listener: UnixListener,
    module: RpcModule<Engine>,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send,
    stop_listening: impl FnOnce() + Send,
) {
    // SAFETY: geteuid has no preconditions.
    let owner = unsafe { libc::geteuid() };
    let config = ServerConfig::builder()
        .max_request_body_size(limits.max_request_bytes)
        .max_response_body_size(32 << 20)
        .max_connections(512)
        .http_only()
        .build();
    let builder = Server::builder().set_config(config).to_service_builder();
    let methods: Methods = module.into();
    let (stop_handle, server_handle) = stop_channel();
    let mut connections = JoinSet::new();
    let open = connections::Connections::new(limits.max_connections, limits.idle_timeout);
    let serve = |stream: tokio::net::UnixStream| {
        let Some(slot) = open.admit() else {
            // Every open connection is answering a request: this one is closed unanswered
            // rather than let the daemon run out of descriptors.
            tracing::warn!(
                cap = limits.max_connections,
                "refused a connection: every open connection is busy"
            );
            return None;
        };
        let slot = std::sync::Arc::new(slot);
        let service = connections::Tracked {
            inner: ids::CheckIds {
                inner: builder.clone().build(methods.clone(), stop_handle.clone()),
                max_body: limits.max_request_bytes as usize,
                body_timeout: limits.body_timeout,
            },
            slot: slot.clone(),
        };
        let stop = stop_handle.clone().shutdown();
        let closing = slot.clone();
        // hyper's graceful shutdown closes an idle connection at once, and one answering a
        // request right after its answer.
        let stopped = async move {
            tokio::select! {
                _ = async {
                    stop.await;
                    tokio::time::sleep(FIRST_READ_GRACE).await;
                } => {}
                _ = closing.closing() => {}
            }
        };
        Some(async move {
            tokio::select! {
                ended = serve_with_graceful_shutdown(stream, service, stopped) => {
                    if let Err(e) = ended {
                        tracing::debug!("connection ended: {e}");
                    }
                }
                _ = slot.abandoned() => {
                    tracing::debug!("dropped a connection that never finished its request");
                }
            }
        })
    };
    tokio::pin!(shutdown);

    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if peer_is(&stream, owner) {
                        if let Some(task) = serve(stream) {
                            connections.spawn(task);
                        }
                    }
                }
                Err(e) => {
                    // Usually EMFILE: back off a little instead of spinning on the error.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            // Reap finished connections so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = &mut shutdown => break,
        }
    }

    stop_listening();
    // Clients whose connections wait in the backlog have sent their requests and count as in
    // flight: take them before the listener closes, which would reset them.
    if let Ok(listener) = listener.into_std() {
        while let Ok((stream, _)) = listener.accept() {
            match stream
                .set_nonblocking(true)
                .and_then(|()| tokio::net::UnixStream::from_std(stream))
            {
                Ok(stream) => {
                    if peer_is(&stream, owner) {
                        if let Some(task) = serve(stream) {
                            connections.spawn(task);
                        }
                    }
                }
                Err(e) => tracing::warn!("cannot serve a pending connection: {e}"),
            }
        }
    }
    let _ = server_handle.stop();
    let in_flight = connections.len();
    tracing::info!(
        connections = in_flight,
        "shutting down: draining in-flight requests"
    );
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            remaining = connections.len(),
            "drain timed out; abandoning the remaining connections"
        );
        connections.abort_all();
    }
}

/// Whether the process at the other end of `stream` runs as `owner` (`SO_PEERCRED` on Linux,
/// `getpeereid` on macOS). The socket file's mode already keeps others out; this holds even
/// when that mode or its directory's was loosened, or when the socket was bound by someone else.
fn peer_is(stream: &tokio::net::UnixStream, owner: u32) -> bool {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == owner => true,
        Ok(cred) => {
            tracing::warn!(
                uid = cred.uid(),
                pid = cred.pid(),
                "refused a connection from uid {}: only uid {owner} may use this sidecar",
                cred.uid()
            );
            false
        }
        Err(e) => {
            tracing::warn!("refused a connection whose peer cannot be identified: {e}");
            false
        }
    }
}

/// Installs the SIGTERM and SIGINT handlers now, and returns a future that resolves on the
/// first of them. Must be called inside a tokio runtime, and before the socket is bound: from the
/// moment the socket accepts, a SIGTERM must drain, never kill with the default action.
pub fn termination_signal() -> impl Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate())
        .map_err(|e| tracing::error!("cannot listen for SIGTERM: {e}"))
        .ok();
    let int = signal(SignalKind::interrupt())
        .map_err(|e| tracing::error!("cannot listen for SIGINT: {e}"))
        .ok();
    async move {
        let (Some(mut term), Some(mut int)) = (term, int) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_most_descriptors_to_the_rest_of_the_daemon() {
        assert_eq!(connection_cap(1 << 20), MAX_CONNECTIONS);
        assert_eq!(connection_cap(1024), MAX_CONNECTIONS);
        // macOS's default soft limit, were it not raised.
        assert_eq!(connection_cap(256), 64);
        assert_eq!(connection_cap(0), 8);
    }

    #[test]
    fn a_body_gets_two_seconds_or_the_idle_timeout_if_shorter() {
        assert_eq!(body_timeout(Duration::from_secs(30)), BODY_TIMEOUT);
        assert_eq!(
            body_timeout(Duration::from_millis(200)),
            Duration::from_millis(200)
        );
    }
}
