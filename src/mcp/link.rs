//! `guidebook mcp`'s way to the sidecar: kept-alive connections, each call deadline-bound.
//!
//! JSON-RPC over HTTP/1.1 on the sidecar's Unix socket, starting the sidecar on demand like
//! the shim. Reads and writes: the socket; may start `guidebook serve`.
//!
//! A hook through `guidebook mcp` costs one request on a connection that is already open, which
//! is what keeps it under a millisecond; the command shim pays a process start and a connect.
//! Idle connections wait in a small pool, so concurrent tool calls each get their own.

use crate::sync::Locked;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use guidebook_hook::autostart;
use guidebook_hook::client::{self, ClientError};
use guidebook_hook::link::SidecarLink;
use guidebook_hook::protocol::{self, deadline_ms, Call, CallError};

/// Idle connections kept for later calls; more than the agent's parallel tool calls is waste.
const MAX_IDLE: usize = 4;

/// The sidecar behind one socket, shared by every tool call of this server.
#[derive(Debug)]
pub struct Sidecar {
    socket: PathBuf,
    /// Whether a call that finds nothing listening may start the sidecar.
    autostart: bool,
    idle: Mutex<Vec<UnixStream>>,
}

impl Sidecar {
    pub fn new(socket: PathBuf, autostart: bool) -> Sidecar {
        Sidecar {
            socket,
            autostart,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// Connects (starting the sidecar if allowed and needed) and keeps the connection for the
    /// first call, so that the agent's first edit does not pay for a cold start.
    pub fn warm_up(&self, deadline: Instant) -> Result<(), ClientError> {
        let stream = self.connect(deadline, true)?;
        self.put_back(stream);
        Ok(())
    }

    /// One JSON-RPC exchange: `body` gets the milliseconds left for `deadlineMs`; the answer's
    /// body comes back. A kept connection the sidecar has closed since (a restart) is replaced
    /// by a new one once, transparently: nothing was answered on it, so nothing was done.
    pub fn exchange(
        &self,
        body: &dyn Fn(u64) -> String,
        may_start: bool,
        deadline: Instant,
    ) -> Result<Vec<u8>, ClientError> {
        let send = |stream: &mut UnixStream| {
            let left = deadline.saturating_duration_since(Instant::now());
            let body = body(deadline_ms(left));
            client::post_keep_alive(stream, &body, deadline)
        };
        if let Some(mut stream) = self.take_idle() {
            match send(&mut stream) {
                Ok(answer) => {
                    self.put_back(stream);
                    return Ok(answer);
                }
                Err(e) if stale(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let mut stream = self.connect(deadline, may_start)?;
        let answer = send(&mut stream)?;
        self.put_back(stream);
        Ok(answer)
    }

    /// One JSON-RPC call: its `result`, or why there is none.
    pub fn call(&self, call: &Call, timeout: Duration) -> Result<serde_json::Value, CallError> {
        let deadline = Instant::now() + timeout;
        protocol::call(call, |request| {
            self.exchange(&|_| request.to_owned(), true, deadline)
        })
    }

    fn connect(&self, deadline: Instant, may_start: bool) -> Result<UnixStream, ClientError> {
        if may_start {
            autostart::connect(&self.socket, deadline, self.autostart, &mut |problem| {
                tracing::warn!("{problem}")
            })
        } else {
            client::connect(&self.socket, deadline)
        }
    }

    fn take_idle(&self) -> Option<UnixStream> {
        self.idle.locked().pop()
    }

    fn put_back(&self, stream: UnixStream) {
        let mut idle = self.idle.locked();
        if idle.len() < MAX_IDLE {
            idle.push(stream);
        }
    }
}

/// Whether a failure on a kept connection means only that the sidecar closed it while idle.
fn stale(e: &ClientError) -> bool {
    match e {
        ClientError::Closed => true,
        ClientError::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::NotConnected
        ),
        _ => false,
    }
}

/// One hook's view of the [`Sidecar`]: its calls share the hook's deadline.
pub struct HookLink<'a> {
    pub sidecar: &'a Sidecar,
    pub deadline: Instant,
}

impl SidecarLink for HookLink<'_> {
    fn exchange(
        &mut self,
        body: &dyn Fn(u64) -> String,
        may_start: bool,
    ) -> Result<Vec<u8>, ClientError> {
        self.sidecar
            .exchange(body, may_start, self.deadline)
            .inspect_err(|e| {
                tracing::warn!("hook: {e} ({})", self.sidecar.socket.display());
            })
    }

    fn report(&mut self, problem: &str) {
        tracing::warn!("hook: {problem}");
    }
}
