//! The team push's HTTP: one blocking client (ureq over rustls) with the configured CA file or
//! the system's roots, the push's timeout and credentials read from files that only their
//! owner may read; a POST of a remote-write body and a GET of the query API, each answered with
//! the status and a bounded body.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::TeamAuth;

/// The most bytes of an answer read (a query answer of the team's counters; an error text).
const MAX_ANSWER_BYTES: u64 = 64 << 20;
/// The most bytes of a token, password or CA file.
const MAX_SECRET_BYTES: u64 = 1 << 20;

/// Why a request did not get an answer, or got one that is not a success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// A setting the request needs is unusable (a credential or CA file): not retried.
    #[error("{0}")]
    Config(String),
    /// No answer: refused, unreachable, timed out, TLS failed.
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    /// The server answered with a status other than 2xx.
    #[error("{url} answered HTTP {status}{}", body_text(body))]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

fn body_text(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        let cut: String = body.chars().take(300).collect();
        let one_line = cut.replace(['\n', '\t'], " ");
        format!(": {}", crate::sources::visible::visible(&one_line).0)
    }
}

impl HttpError {
    /// Whether a later try may succeed (the remote-write spec: 5xx and 429 are retried, other
    /// 4xx are not).
    pub fn retryable(&self) -> bool {
        match self {
            HttpError::Config(_) => false,
            HttpError::Transport { .. } => true,
            HttpError::Status { status, .. } => *status == 429 || *status >= 500,
        }
    }
}

/// A client for one server: its TLS roots, timeout and credentials.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    auth: TeamAuth,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// A client trusting `ca_file`'s certificates (PEM) if given, the system's roots otherwise.
    pub fn new(
        ca_file: Option<&Path>,
        timeout: Duration,
        auth: TeamAuth,
    ) -> Result<Client, HttpError> {
        let roots = match ca_file {
            Some(path) => {
                let pem = read_capped(path, "caFile")?;
                let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                    .filter_map(|item| match item {
                        Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                        _ => None,
                    })
                    .collect();
                if certs.is_empty() {
                    return Err(HttpError::Config(format!(
                        "caFile {}: no PEM certificate in it",
                        path.display()
                    )));
                }
                ureq::tls::RootCerts::Specific(Arc::new(certs))
            }
            None => ureq::tls::RootCerts::PlatformVerifier,
        };
        let tls = ureq::tls::TlsConfig::builder().root_certs(roots).build();
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            // A redirect would carry the credentials elsewhere.
            .max_redirects(0)
            .user_agent(format!("adaptive-guidebook/{}", env!("CARGO_PKG_VERSION")))
            .tls_config(tls)
            .build()
            .new_agent();
        Ok(Client { agent, auth })
    }

    /// The `Authorization` header's value, read from its file now (a rotated token is used at
    /// the next request).
    fn authorization(&self) -> Result<Option<String>, HttpError> {
        match &self.auth {
            TeamAuth::None => Ok(None),
            TeamAuth::Bearer { token_file } => {
                let token = secret(token_file, "bearerTokenFile")?;
                Ok(Some(format!("Bearer {token}")))
            }
            TeamAuth::Basic {
                username,
                password_file,
            } => {
                let password = secret(password_file, "basicAuth.passwordFile")?;
                Ok(Some(format!(
                    "Basic {}",
                    base64(format!("{username}:{password}").as_bytes())
                )))
            }
        }
    }

    /// POSTs `body` with `headers`; the answer's status and body on a 2xx.
    pub fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, String), HttpError> {
        let mut request = self.agent.post(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(auth) = self.authorization()? {
            request = request.header("Authorization", auth);
        }
        answer(url, request.send(body))
    }

    /// GETs `url` (its query already encoded).
    pub fn get(&self, url: &str) -> Result<(u16, String), HttpError> {
        let mut request = self.agent.get(url);
        if let Some(auth) = self.authorization()? {
            request = request.header("Authorization", auth);
        }
        answer(url, request.call())
    }
}

fn answer(
    url: &str,
    result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<(u16, String), HttpError> {
    let mut response = result.map_err(|e| HttpError::Transport {
        url: url.to_string(),
        message: e.to_string(),
    })?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER_BYTES)
        .read_to_string()
        .unwrap_or_default();
    if (200..300).contains(&status) {
        Ok((status, body))
    } else {
        Err(HttpError::Status {
            url: url.to_string(),
            status,
            body,
        })
    }
}

/// A credential file's content, trimmed: refused when group or others may read it, when it is
/// not a regular file, or empty.
pub fn secret(path: &Path, key: &str) -> Result<String, HttpError> {
    let text = read_capped(path, key)?;
    let meta = std::fs::metadata(path).map_err(|e| config(path, key, &e.to_string()))?;
    if meta.mode() & 0o077 != 0 {
        return Err(config(
            path,
            key,
            &format!(
                "readable by group or others (mode {:o}); run chmod 600 {}",
                meta.mode() & 0o777,
                path.display()
            ),
        ));
    }
    let text = String::from_utf8(text).map_err(|_| config(path, key, "not UTF-8 text"))?;
    let text = text.trim();
    if text.is_empty() {
        return Err(config(path, key, "empty"));
    }
    if text.contains(['\r', '\n']) {
        return Err(config(path, key, "holds more than one line"));
    }
    Ok(text.to_string())
}

fn config(path: &Path, key: &str, why: &str) -> HttpError {
    HttpError::Config(format!("teamMetrics.{key} {}: {why}", path.display()))
}

/// A regular file's first bytes (not a FIFO, not through a symlink's loop), capped.
fn read_capped(path: &Path, key: &str) -> Result<Vec<u8>, HttpError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| config(path, key, &e.to_string()))?;
    let meta = file
        .metadata()
        .map_err(|e| config(path, key, &e.to_string()))?;
    if !meta.is_file() {
        return Err(config(path, key, "not a regular file"));
    }
    let mut out = Vec::new();
    file.take(MAX_SECRET_BYTES)
        .read_to_end(&mut out)
        .map_err(|e| config(path, key, &e.to_string()))?;
    Ok(out)
}

/// Standard base64 with padding (basic authentication's encoding).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `url` with `path` appended to its path (one `/` between them).
pub fn join(url: &str, path: &str) -> String {
    format!(
        "{}/{}",
        url.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// A component of a URL's query, percent-encoded.
pub fn query_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        for (text, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("user:pa ss", "dXNlcjpwYSBzcw=="),
        ] {
            assert_eq!(base64(text.as_bytes()), want, "{text}");
        }
    }

    #[test]
    fn a_secret_readable_by_others_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = secret(&path, "bearerTokenFile").unwrap_err().to_string();
        assert!(
            err.contains(&path.display().to_string()) && err.contains("chmod 600"),
            "{err}"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(secret(&path, "bearerTokenFile").unwrap(), "s3cret");
        std::fs::write(&path, "\n").unwrap();
        assert!(secret(&path, "bearerTokenFile")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(secret(&dir.path().join("missing"), "bearerTokenFile").is_err());
        assert!(secret(dir.path(), "bearerTokenFile")
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
    }

    #[test]
    fn only_5xx_429_and_no_answer_are_retried() {
        let status = |status| HttpError::Status {
            url: "u".into(),
            status,
            body: String::new(),
        };
        assert!(status(500).retryable());
        assert!(status(503).retryable());
        assert!(status(429).retryable());
        assert!(!status(400).retryable());
        assert!(!status(401).retryable());
        assert!(!status(404).retryable());
        assert!(HttpError::Transport {
            url: "u".into(),
            message: "refused".into()
        }
        .retryable());
        assert!(!HttpError::Config("x".into()).retryable());
    }

    #[test]
    fn urls_join_and_queries_encode() {
        assert_eq!(
            join("http://h:9/", "/api/v1/query"),
            "http://h:9/api/v1/query"
        );
        assert_eq!(
            join("http://h:9/prom", "api/v1/query"),
            "http://h:9/prom/api/v1/query"
        );
        assert_eq!(
            query_component("a{b=\"c\"}[5m] x"),
            "a%7Bb%3D%22c%22%7D%5B5m%5D%20x"
        );
    }
}
