//! A minimal blocking HTTP/1.1 client on the sidecar's socket, separate from the product's
//! (`guidebook_hook::client`), for requests the product would never send.

use super::*;

/// A minimal blocking HTTP/1.1 client: `POST /` with `Connection: close`, read to EOF. A read
/// that waits longer than [`WATCHDOG`] fails the test: the sidecar must never hang.
pub fn http_post(socket: &Path, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = UnixStream::connect(socket)
        .unwrap_or_else(|e| panic!("connecting to {}: {e}", socket.display()));
    send_request(&mut stream, body);
    read_response(&mut stream)
}

/// Writes the request. A write error is ignored: a server may refuse an oversized body and
/// close early, and its answer is still there to read.
pub fn send_request(stream: &mut UnixStream, body: &[u8]) {
    stream.set_write_timeout(Some(WATCHDOG)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
}

/// Reads `stream` to EOF within [`WATCHDOG`], failing the test with `hung` if the daemon keeps
/// it open longer; another error (a reset) comes back with what was read before it.
pub fn read_to_end_bounded(
    stream: &mut UnixStream,
    hung: &str,
) -> (Vec<u8>, Option<std::io::Error>) {
    stream.set_read_timeout(Some(WATCHDOG)).unwrap();
    let mut raw = Vec::new();
    let error = stream.read_to_end(&mut raw).err();
    if let Some(e) = &error {
        let timed_out = matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        );
        assert!(!timed_out, "{hung}");
    }
    (raw, error)
}

/// Reads a whole response to EOF and returns its status and (de-chunked) body.
pub fn read_response(stream: &mut UnixStream) -> (u16, Vec<u8>) {
    let (raw, error) = read_to_end_bounded(
        stream,
        &format!("the sidecar hung: no complete answer within {WATCHDOG:?}"),
    );
    if let Some(e) = error {
        // A reset after the whole response arrived is fine; the parse below checks that.
        assert!(!raw.is_empty(), "reading the response: {e}");
    }
    parse_http(&raw)
}

fn parse_http(raw: &[u8]) -> (u16, Vec<u8>) {
    let text = String::from_utf8_lossy(raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no complete HTTP head in {text:?}"));
    let head = std::str::from_utf8(&raw[..split]).expect("ASCII head");
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line in {head:?}"));
    let rest = &raw[split + 4..];
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        let mut data = rest;
        loop {
            let eol = data
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size line");
            let size_text = std::str::from_utf8(&data[..eol]).unwrap();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16)
                .expect("hex chunk size");
            if size == 0 {
                return (status, body);
            }
            assert!(data.len() >= eol + 2 + size, "truncated chunk in {text:?}");
            body.extend_from_slice(&data[eol + 2..eol + 2 + size]);
            data = &data[eol + 2 + size + 2..];
        }
    }
    match header("content-length") {
        Some(len) => {
            let len: usize = len.parse().expect("numeric Content-Length");
            assert!(rest.len() >= len, "truncated body: {text:?}");
            (status, rest[..len].to_vec())
        }
        None => (status, rest.to_vec()),
    }
}
