//! The Prometheus endpoint: `GET /metrics` answered with the OpenMetrics text of the live
//! counters, over plain HTTP/1.1 on the `metricsListen` address (off unless configured). One
//! request per connection; a slow or oversized request is dropped, never waited on.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::engine::Engine;

/// The content type of the OpenMetrics text format, which Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The most a request head may take; Prometheus's is a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the endpoint (in the daemon's runtime).
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let std = std::net::TcpListener::bind(addr)?;
    std.set_nonblocking(true)?;
    TcpListener::from_std(std)
}

/// Serves until the task is aborted.
pub async fn serve(listener: TcpListener, engine: Arc<Engine>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, say: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let engine = engine.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(READ_TIMEOUT * 2, answer(stream, &engine)).await;
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
