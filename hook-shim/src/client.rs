//! A blocking HTTP/1.1 client for JSON-RPC calls on the sidecar's Unix socket, deadline-bound.
//!
//! One call per connection ([`post`]) or many on a kept-alive one ([`post_keep_alive`]).
//! Reads and writes: the socket.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Responses larger than this are refused; a search answer is a few kilobytes.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Why the exchange with the sidecar produced no response body.
#[derive(Debug)]
pub enum ClientError {
    /// The socket could not be connected (missing, refused, permission).
    Connect(io::Error),
    /// The deadline passed before the exchange finished.
    TimedOut,
    /// Reading or writing the socket failed.
    Io(io::Error),
    /// The response was not the HTTP the client understands.
    Http(&'static str),
    /// The sidecar answered with a status other than 200.
    Status(u16),
    /// The sidecar closed a kept-alive connection without answering (it was restarted, say);
    /// the request can be sent again on a new connection.
    Closed,
    /// The socket file belongs to another user: whoever bound it is not this user's sidecar,
    /// and nothing is sent to it (session ids, file paths) or believed from it.
    Foreign { owner: u32, me: u32 },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect(e) => write!(f, "cannot reach the sidecar: {e}"),
            ClientError::TimedOut => write!(f, "the sidecar did not answer in time"),
            ClientError::Io(e) => write!(f, "talking to the sidecar failed: {e}"),
            ClientError::Http(why) => write!(f, "bad HTTP response from the sidecar: {why}"),
            ClientError::Status(code) => write!(f, "the sidecar answered HTTP {code}"),
            ClientError::Foreign { owner, me } => write!(
                f,
                "the socket belongs to uid {owner}, not to this user (uid {me}): not talking to it"
            ),
            ClientError::Closed => write!(f, "the sidecar closed the connection without answering"),
        }
    }
}

/// The time left until `deadline`, or `TimedOut` if none is. Socket timeouts of zero mean
/// "block forever" to the OS, so an exhausted budget must never reach them.
fn remaining(deadline: Instant) -> Result<Duration, ClientError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(ClientError::TimedOut)
    } else {
        Ok(left)
    }
}

fn io_error(e: io::Error) -> ClientError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ClientError::TimedOut,
        _ => ClientError::Io(e),
    }
}

/// Connects to the sidecar's socket. A Unix-socket connect either succeeds or fails at once,
/// except when the listener's backlog is full; the binary's watchdog covers that case.
///
/// A socket file owned by another user is refused before connecting: the file is created by
/// whoever binds it, so in a shared directory (a socket path under `/tmp`, say) another user
/// could otherwise stand in for the sidecar. (The sidecar checks its clients' uid the same way
/// from its side.)
pub fn connect(socket: &Path, deadline: Instant) -> Result<UnixStream, ClientError> {
    remaining(deadline)?;
    if let Ok(meta) = std::fs::metadata(socket) {
        let me = effective_uid();
        if meta.uid() != me {
            return Err(ClientError::Foreign {
                owner: meta.uid(),
                me,
            });
        }
    }
    UnixStream::connect(socket).map_err(ClientError::Connect)
}

/// This process's effective uid. std has no safe call for it; `geteuid` is in every Unix libc,
/// which std links already, so no crate is needed for it.
pub fn effective_uid() -> u32 {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid takes no arguments, has no preconditions and cannot fail.
    unsafe { geteuid() }
}

/// Sends `body` as `POST /` and returns the body of a 200 response, all before `deadline`.
/// The request asks the sidecar to close the connection after its answer.
pub fn post(
    stream: &mut UnixStream,
    body: &str,
    deadline: Instant,
) -> Result<Vec<u8>, ClientError> {
    exchange(stream, body, deadline, false)
}

/// Like [`post`], but the connection stays open for the next call: the answer is complete
/// when its `Content-Length` (or last chunk) has arrived, not at end of file. A connection the
/// sidecar closed in the meantime fails with [`ClientError::Closed`] (or an I/O error on the
/// write) before anything was answered, and the caller may retry on a new one.
pub fn post_keep_alive(
    stream: &mut UnixStream,
    body: &str,
    deadline: Instant,
) -> Result<Vec<u8>, ClientError> {
    exchange(stream, body, deadline, true)
}

fn exchange(
    stream: &mut UnixStream,
    body: &str,
    deadline: Instant,
    keep_alive: bool,
) -> Result<Vec<u8>, ClientError> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    );
    stream
        .set_write_timeout(Some(remaining(deadline)?))
        .map_err(ClientError::Io)?;
    stream.write_all(request.as_bytes()).map_err(io_error)?;

    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    loop {
        // Recomputed before every read so that a trickling answer cannot outlive the deadline.
        stream
            .set_read_timeout(Some(remaining(deadline)?))
            .map_err(ClientError::Io)?;
        let read = match stream.read(&mut chunk) {
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e)),
        };
        if read == 0 && buffer.is_empty() && keep_alive {
            return Err(ClientError::Closed);
        }
        buffer.extend_from_slice(&chunk[..read]);
        if buffer.len() > MAX_RESPONSE_BYTES {
            return Err(ClientError::Http("response too large"));
        }
        match parse_http_response(&buffer, read == 0)? {
            Some((200, body)) => return Ok(body),
            Some((status, _)) => return Err(ClientError::Status(status)),
            None => {}
        }
    }
}

/// Parses an HTTP/1.1 response from `buffer`: `Some((status, body))` once it is complete,
/// `None` while more bytes are needed. `eof` says the peer closed the connection, which
/// completes a body without a length and truncates one with it. Informational (1xx) responses
/// are skipped.
fn parse_http_response(buffer: &[u8], eof: bool) -> Result<Option<(u16, Vec<u8>)>, ClientError> {
    let mut buffer = buffer;
    loop {
        let Some(head_len) = find(buffer, b"\r\n\r\n") else {
            return incomplete(eof, "truncated headers");
        };
        let head = std::str::from_utf8(&buffer[..head_len])
            .map_err(|_| ClientError::Http("headers are not UTF-8"))?;
        let rest = &buffer[head_len + 4..];
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .filter(|line| line.starts_with("HTTP/1."))
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or(ClientError::Http("bad status line"))?;
        if (100..200).contains(&status) {
            buffer = rest;
            continue;
        }
        let mut content_length = None;
        let mut chunked = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                let length = value
                    .parse::<usize>()
                    .map_err(|_| ClientError::Http("bad Content-Length"))?;
                content_length = Some(length);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
            }
        }
        // A chunked encoding wins over a Content-Length, as RFC 9112 §6.3 requires.
        if chunked {
            return match decode_chunked(rest)? {
                Some(body) => Ok(Some((status, body))),
                None => incomplete(eof, "truncated chunked body"),
            };
        }
        return match content_length {
            Some(length) if rest.len() >= length => Ok(Some((status, rest[..length].to_vec()))),
            Some(_) => incomplete(eof, "truncated body"),
            None if eof => Ok(Some((status, rest.to_vec()))),
            None => Ok(None),
        };
    }
}

fn incomplete<T>(eof: bool, why: &'static str) -> Result<Option<T>, ClientError> {
    if eof {
        Err(ClientError::Http(why))
    } else {
        Ok(None)
    }
}

/// Decodes a chunked body: `Some(body)` once the last (zero-size) chunk has arrived, `None`
/// while more bytes are needed. Chunk extensions and trailers are ignored.
fn decode_chunked(mut data: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
    let mut body = Vec::new();
    loop {
        let Some(line_len) = find(data, b"\r\n") else {
            return Ok(None);
        };
        let size_line = std::str::from_utf8(&data[..line_len])
            .map_err(|_| ClientError::Http("bad chunk size"))?;
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size_hex, 16).map_err(|_| ClientError::Http("bad chunk size"))?;
        if size == 0 {
            return Ok(Some(body));
        }
        let chunk_start = line_len + 2;
        let chunk_end = chunk_start
            .checked_add(size)
            .filter(|&end| end <= MAX_RESPONSE_BYTES)
            .ok_or(ClientError::Http("chunk too large"))?;
        if data.len() < chunk_end + 2 {
            return Ok(None);
        }
        if &data[chunk_end..chunk_end + 2] != b"\r\n" {
            return Err(ClientError::Http("chunk not followed by CRLF"));
        }
        body.extend_from_slice(&data[chunk_start..chunk_end]);
        data = &data[chunk_end + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8], eof: bool) -> Option<(u16, Vec<u8>)> {
        parse_http_response(bytes, eof).unwrap()
    }

    #[test]
    fn content_length_body() {
        let response =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 4\r\n\r\n[1,2]";
        assert_eq!(parse(response, false), Some((200, b"[1,2".to_vec())));
        assert_eq!(parse(&response[..30], false), None);
        assert!(
            parse_http_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n[]", true).is_err()
        );
    }

    #[test]
    fn chunked_body_with_extensions_and_trailers() {
        let response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n[{\"\r\nB\r\nid\":\"a\"}]  \r\n0\r\nTrailer: v\r\n\r\n";
        assert_eq!(
            parse(response, false),
            Some((200, b"[{\"id\":\"a\"}]  ".to_vec()))
        );
        assert_eq!(parse(&response[..60], false), None);
        assert!(parse_http_response(&response[..60], true).is_err());
        assert!(parse_http_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            false
        )
        .is_err());
    }

    #[test]
    fn body_to_eof_and_informational_responses() {
        let response = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}";
        assert_eq!(parse(response, false), None);
        assert_eq!(parse(response, true), Some((200, b"{}".to_vec())));
    }

    #[test]
    fn other_statuses_and_garbage() {
        assert_eq!(
            parse(
                b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n",
                false
            ),
            Some((413, Vec::new()))
        );
        assert!(parse_http_response(b"SSH-2.0-OpenSSH\r\n\r\n", false).is_err());
        assert!(parse_http_response(b"HTTP/1.1 200", true).is_err());
    }
}
