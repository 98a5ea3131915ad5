//! The Prometheus endpoint: `GET /metrics` answered with the OpenMetrics text of the live
//! counters, over plain HTTP/1.1 on the `metricsListen` address (off unless configured). One
//! request per connection; a slow or oversized request is dropped, never waited on.
//!
//! Whoever can reach the address may connect, including other users of this machine, so the
//! endpoint must never cost the daemon what its socket needs: at most [`MAX_CONNECTIONS`] are
//! served at once (the rest wait in the kernel's backlog, costing the daemon no descriptor),
//! and each gets [`READ_TIMEOUT`] to send its request and [`ANSWER_TIMEOUT`] in all.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::engine::Engine;

/// The content type of the OpenMetrics text format, which Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The most a request head may take; Prometheus's is a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// The most connections served at once. Prometheus scrapes over one connection at a time;
/// a few more leave room for a person's `curl` beside it.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client may take to send its request: Prometheus sends it at once.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one connection may take in all, its answer written included (a client that does
/// not read its answer would otherwise hold the connection).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the endpoint (in the daemon's runtime).
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let std = std::net::TcpListener::bind(addr)?;
    std.set_nonblocking(true)?;
    TcpListener::from_std(std)
}

/// Serves until the task is aborted.
pub async fn serve(listener: TcpListener, engine: Arc<Engine>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        // A place first, then the connection: past the cap, connections wait in the backlog
        // instead of holding descriptors of the daemon's.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, say: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let engine = engine.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(ANSWER_TIMEOUT, answer(stream, &engine)).await;
            drop(slot);
        });
    }
}

async fn answer(mut stream: TcpStream, engine: &Engine) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            )
            .await;
        }
        let n = match tokio::time::timeout(READ_TIMEOUT, stream.read(&mut buf)).await {
            Ok(r) => r?,
            Err(_) => return Ok(()),
        };
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (parts.next().unwrap_or(&[]), parts.next().unwrap_or(&[]));
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => {
            let body = engine.telemetry.render();
            let body = if method == b"HEAD" {
                &b""[..]
            } else {
                body.as_bytes()
            };
            respond(&mut stream, "200 OK", CONTENT_TYPE, body).await
        }
        (b"GET" | b"HEAD", _) => {
            respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                b"only /metrics is served\n",
            )
            .await
        }
        _ => {
            respond(
                &mut stream,
                "405 Method Not Allowed",
                "text/plain",
                b"GET /metrics\n",
            )
            .await
        }
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}
