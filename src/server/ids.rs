//! Request ids that JSON-RPC 2.0 does not allow get -32600, not silence; batches over the caps are
//! refused whole. Wraps the tower service.
//!
//! jsonrpsee reads a request whose `id` is an object, an array, a fraction or an integer beyond
//! 64 bits as a *notification* (the id is dropped as an unknown member) and answers nothing: the
//! caller sees HTTP 200 with the body `null`. JSON-RPC 2.0 wants an error object, -32600 Invalid
//! Request with `id: null`. [`CheckIds`] looks at the ids before jsonrpsee does: a single request
//! with such an id is answered with that error; in a batch, such members get that error and the
//! others are served as usual, their answers and the errors in one array.
//!
//! The same look at a batch counts its calls and the file paths they name: one request may
//! hold at most `MAX_BATCH_CALLS` calls and name at most `MAX_REQUEST_PATHS` paths in all, or
//! it is answered with one -32030 error and nothing in it runs. The per-call cap on paths does
//! not see a batch of many calls that each stay under it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body_util::{BodyExt, Limited};
use jsonrpsee::server::{HttpBody, HttpResponse};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::connections::BodyArrived;
use crate::rpc::errors::REQUEST_TOO_LARGE;
use crate::rpc::{MAX_BATCH_CALLS, MAX_REQUEST_PATHS};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The error object for a request with an id JSON-RPC does not allow.
pub const INVALID_ID: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid request: the id must be a string, an integer or null"},"id":null}"#;

/// What to do with one request body.
#[derive(Debug, PartialEq, Eq)]
pub enum Ids {
    /// Every id is fine (or the body is not JSON-RPC at all): jsonrpsee answers it.
    Pass,
    /// A single request with a bad id: answer [`INVALID_ID`].
    Reject,
    /// A batch with bad ids: `forward` (the other members, if any) goes to jsonrpsee, and one
    /// [`INVALID_ID`] per bad member joins its answer.
    Batch { forward: Option<String>, bad: usize },
    /// A batch over a cap: answered with this -32030 error object alone.
    TooLarge(String),
}

/// The error object for a request over a cap; `why` names the cap.
fn too_large(why: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "error": {"code": REQUEST_TOO_LARGE, "message": format!("request too large: {why}")},
        "id": null,
    })
    .to_string()
}

#[derive(Deserialize)]
struct ParamsOnly {
    #[serde(default)]
    params: Option<PathsOnly>,
}

#[derive(Deserialize)]
struct PathsOnly {
    #[serde(default)]
    filepaths: Option<Vec<IgnoredAny>>,
    /// `beginShellCommand`'s and `endShellCommand`'s named files.
    #[serde(default)]
    targets: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    mentioned: Option<Vec<IgnoredAny>>,
}

/// How many file paths a member's `params.filepaths`, `targets` and `mentioned` name; a member
/// of any other shape names none here (its method refuses it on its own).
fn paths_in(member: &str) -> usize {
    serde_json::from_str::<ParamsOnly>(member)
        .ok()
        .and_then(|m| m.params)
        .map_or(0, |p| {
            [p.filepaths, p.targets, p.mentioned]
                .into_iter()
                .flatten()
                .map(|paths| paths.len())
                .sum()
        })
}

#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// Whether a member's `id` is one JSON-RPC allows (absent, `null`, a string, or an integer that
/// fits the server's id type); a member that is not an object is left to jsonrpsee.
fn id_is_valid(member: &str) -> bool {
    let Ok(IdOnly { id: Some(id) }) = serde_json::from_str::<IdOnly>(member) else {
        return true;
    };
    serde_json::from_str::<jsonrpsee::types::Id>(id.get()).is_ok()
}

/// Sorts out `body` (see [`Ids`]).
pub fn check(body: &[u8]) -> Ids {
    let Ok(text) = std::str::from_utf8(body) else {
        return Ids::Pass;
    };
    if text.trim_start().starts_with('[') {
        let Ok(members) = serde_json::from_str::<Vec<&RawValue>>(text) else {
            return Ids::Pass;
        };
        if members.len() > MAX_BATCH_CALLS {
            return Ids::TooLarge(too_large(&format!(
                "a batch of {} calls; at most {MAX_BATCH_CALLS} calls per batch",
                members.len()
            )));
        }
        let paths: usize = members.iter().map(|m| paths_in(m.get())).sum();
        if paths > MAX_REQUEST_PATHS {
            return Ids::TooLarge(too_large(&format!(
                "the batch names {paths} file paths; at most {MAX_REQUEST_PATHS} per request"
            )));
        }
        let (good, bad): (Vec<&RawValue>, Vec<&RawValue>) =
            members.into_iter().partition(|m| id_is_valid(m.get()));
        if bad.is_empty() {
            return Ids::Pass;
        }
        let forward = (!good.is_empty()).then(|| {
            let members: Vec<&str> = good.iter().map(|m| m.get()).collect();
            format!("[{}]", members.join(","))
        });
        Ids::Batch {
            forward,
            bad: bad.len(),
        }
    } else if id_is_valid(text) {
        Ids::Pass
    } else {
        Ids::Reject
    }
}

/// The tower service that runs [`check`] in front of jsonrpsee's.
#[derive(Clone)]
pub struct CheckIds<S> {
    pub inner: S,
    /// Bodies past this are left to jsonrpsee, which refuses them with HTTP 413.
    pub max_body: usize,
    /// How long the body may take to arrive once the head has, then HTTP 408. While it is read
    /// the request counts as in flight, which keeps its connection from being closed as idle:
    /// a client that sends a head and then trickles its body must not hold the connection for
    /// long. Our clients send the body in the same write as the head.
    pub body_timeout: std::time::Duration,
}

fn json_response(status: u16, body: String) -> HttpResponse {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .body(HttpBody::from(body))
        .expect("a valid response")
}

impl<S, B> tower::Service<http::Request<B>> for CheckIds<S>
where
    S: tower::Service<http::Request<HttpBody>, Response = HttpResponse, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let mut inner = self.inner.clone();
        let max_body = self.max_body;
        let body_timeout = self.body_timeout;
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            // Until its body has arrived, the request does not keep its connection from being
            // closed to make room for a new one (see `connections`).
            let arrived = parts.extensions.remove::<BodyArrived>();
            let arrived = || {
                if let Some(arrived) = &arrived {
                    arrived.now();
                }
            };
            let declared = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
            // A body without a declared length (chunked) is read here too: its batch is counted
            // like any other.
            if parts.method != http::Method::POST || declared.is_some_and(|n| n > max_body) {
                // Not a JSON-RPC call, or one jsonrpsee refuses by its size anyway: answered
                // without reading the body.
                arrived();
                return inner
                    .call(http::Request::from_parts(parts, HttpBody::new(body)))
                    .await;
            }
            let collected =
                tokio::time::timeout(body_timeout, Limited::new(body, max_body).collect()).await;
            let bytes = match collected {
                Ok(Ok(collected)) => {
                    arrived();
                    collected.to_bytes()
                }
                Ok(Err(_)) => return Ok(json_response(413, String::new())),
                Err(_) => {
                    let mut response = json_response(408, String::new());
                    response.headers_mut().insert(
                        http::header::CONNECTION,
                        http::HeaderValue::from_static("close"),
                    );
                    return Ok(response);
                }
            };
            match check(&bytes) {
                Ids::Pass => {
                    let request = http::Request::from_parts(parts, HttpBody::from(bytes.to_vec()));
                    inner.call(request).await
                }
                Ids::Reject => Ok(json_response(200, INVALID_ID.to_owned())),
                Ids::TooLarge(error) => Ok(json_response(200, error)),
                Ids::Batch { forward, bad } => {
                    let mut answers = Vec::new();
                    if let Some(forward) = forward {
                        let mut parts = parts;
                        parts.headers.insert(
                            http::header::CONTENT_LENGTH,
                            http::HeaderValue::from(forward.len()),
                        );
                        let request = http::Request::from_parts(parts, HttpBody::from(forward));
                        let response = inner.call(request).await?;
                        let body = response.into_body().collect().await?.to_bytes();
                        match serde_json::from_slice::<Vec<Box<RawValue>>>(&body) {
                            Ok(members) => {
                                answers.extend(members.iter().map(|m| m.get().to_owned()))
                            }
                            // Notifications only: nothing to answer. Anything else is kept.
                            Err(_) if body.trim_ascii().is_empty() || &body[..] == b"null" => {}
                            Err(_) => answers.push(String::from_utf8_lossy(&body).into_owned()),
                        }
                    }
                    answers.extend(std::iter::repeat_n(INVALID_ID.to_owned(), bad));
                    Ok(json_response(200, format!("[{}]", answers.join(","))))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_json_rpc_allows_pass() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"status"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","id":"2","method":"status"}]"#,
            "not json",
            "[1, 2]",
        ] {
            assert_eq!(check(body.as_bytes()), Ids::Pass, "{body}");
        }
    }

    #[test]
    fn other_ids_are_invalid_requests() {
        for id in [
            r#"{"a":1}"#,
            "[1]",
            "1.5",
            "18446744073709551616",
            "-1",
            "true",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"status"}}"#);
            assert_eq!(check(body.as_bytes()), Ids::Reject, "{id}");
        }
        let batch = r#"[{"jsonrpc":"2.0","id":{"a":1},"method":"status"},{"jsonrpc":"2.0","id":7,"method":"status"},{"jsonrpc":"2.0","id":0.5,"method":"status"}]"#;
        assert_eq!(
            check(batch.as_bytes()),
            Ids::Batch {
                forward: Some(r#"[{"jsonrpc":"2.0","id":7,"method":"status"}]"#.into()),
                bad: 2
            }
        );
        let all_bad = r#"[{"jsonrpc":"2.0","id":[],"method":"status"}]"#;
        assert_eq!(
            check(all_bad.as_bytes()),
            Ids::Batch {
                forward: None,
                bad: 1
            }
        );
        let error: serde_json::Value = serde_json::from_str(INVALID_ID).unwrap();
        assert_eq!(error["error"]["code"], -32600);
        assert!(error["id"].is_null());
    }

    fn batch(calls: usize, paths_each: usize) -> String {
        let paths: Vec<String> = (0..paths_each).map(|i| format!("/f{i}")).collect();
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "explain",
            "params": {"filepaths": paths}});
        format!("[{}]", vec![call.to_string(); calls].join(","))
    }

    fn refusal(ids: Ids) -> serde_json::Value {
        match ids {
            Ids::TooLarge(error) => serde_json::from_str(&error).unwrap(),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_batch_over_a_cap_is_refused_whole_naming_the_cap() {
        assert_eq!(check(batch(MAX_BATCH_CALLS, 1).as_bytes()), Ids::Pass);
        let error = refusal(check(batch(MAX_BATCH_CALLS + 1, 0).as_bytes()));
        assert_eq!(error["error"]["code"], REQUEST_TOO_LARGE);
        assert!(error["id"].is_null());
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("at most 64 calls per batch"), "{message}");
        // Each call within the per-call cap, the batch over the per-request one.
        assert_eq!(check(batch(2, MAX_REQUEST_PATHS / 2).as_bytes()), Ids::Pass);
        let error = refusal(check(batch(3, MAX_REQUEST_PATHS / 2).as_bytes()));
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("1500 file paths"), "{message}");
        assert!(message.contains("at most 1000 per request"), "{message}");
        // A shell command's named files count too.
        let paths: Vec<String> = (0..MAX_REQUEST_PATHS / 2 + 1)
            .map(|i| format!("/f{i}"))
            .collect();
        let begin = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "beginShellCommand",
            "params": {"sessionId": "s", "callId": "c", "targets": paths, "mentioned": paths}});
        refusal(check(format!("[{begin}]").as_bytes()));
        // Members of other shapes count no paths; their methods refuse them.
        let odd = r#"[{"jsonrpc":"2.0","id":1,"method":"explain","params":["/a"]},
            {"jsonrpc":"2.0","id":2,"method":"explain","params":{"filepaths":"/a"}}, 7]"#;
        assert_eq!(check(odd.as_bytes()), Ids::Pass);
    }
}
