//! The JSON-RPC 2.0 wire format between the hook and the sidecar: request bodies and response parsing. Reads: a response body. Writes: nothing.

use std::fmt;

use serde_json::Value;

use crate::plan::Action;

/// Limits the caller puts on one sidecar call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// The caller's remaining patience, sent as `deadlineMs` so that the sidecar records
    /// nothing once the caller has given up.
    pub deadline_ms: u64,
    /// The token budget for the hook text, sent as `maxTokens` when set. The sidecar refuses
    /// the param until its `search` implements the budget, so the binary leaves it `None`.
    pub max_tokens: Option<u64>,
}

/// The JSON-RPC 2.0 request body for `action`, or `None` for [`Action::Nothing`].
///
/// `search` carries `sessionId`, `filepaths`, `deadlineMs` and, if set, `maxTokens`;
/// `resetSession` carries only `sessionId`. The JSON is assembled by hand so that it reads in
/// the order of the contract (`jsonrpc`, `id`, `method`, `params`).
pub fn request_body(action: &Action, id: u64, limits: &CallLimits) -> Option<String> {
    let params = match action {
        Action::Nothing => return None,
        Action::Search {
            session_id,
            filepaths,
        } => {
            let mut params = format!(
                r#"{{"sessionId":{},"filepaths":{},"deadlineMs":{}"#,
                json_string(session_id),
                Value::from(filepaths.as_slice()),
                limits.deadline_ms
            );
            if let Some(max_tokens) = limits.max_tokens {
                params.push_str(&format!(r#","maxTokens":{max_tokens}"#));
            }
            params.push('}');
            params
        }
        Action::ResetSession { session_id } => {
            format!(r#"{{"sessionId":{}}}"#, json_string(session_id))
        }
    };
    let method = action.method()?;
    Some(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
    ))
}

fn json_string(text: &str) -> Value {
    Value::String(text.to_owned())
}

/// Why a JSON-RPC response carried no usable result.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseError {
    /// The body was not a JSON-RPC response object.
    Malformed(String),
    /// The sidecar answered with a JSON-RPC error object.
    Rpc { code: i64, message: String },
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResponseError::Malformed(why) => write!(f, "malformed JSON-RPC response: {why}"),
            ResponseError::Rpc { code, message } => write!(f, "sidecar error {code}: {message}"),
        }
    }
}

impl std::error::Error for ResponseError {}

/// The `result` of a JSON-RPC 2.0 response body, or why there is none.
pub fn parse_response(body: &[u8]) -> Result<Value, ResponseError> {
    let response: Value = serde_json::from_slice(body)
        .map_err(|e| ResponseError::Malformed(format!("invalid JSON: {e}")))?;
    let Value::Object(mut response) = response else {
        return Err(ResponseError::Malformed("not an object".to_owned()));
    };
    if let Some(error) = response.get("error") {
        return Err(ResponseError::Rpc {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_owned(),
        });
    }
    response
        .remove("result")
        .ok_or_else(|| ResponseError::Malformed("neither result nor error".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: CallLimits = CallLimits {
        deadline_ms: 1950,
        max_tokens: Some(2000),
    };

    #[test]
    fn search_request_body() {
        let action = Action::Search {
            session_id: "sess \"1\"".into(),
            filepaths: vec!["/p/a.rs".into(), "/p/b c.kt".into()],
        };
        assert_eq!(
            request_body(&action, 1, &LIMITS).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"search","params":{"sessionId":"sess \"1\"","filepaths":["/p/a.rs","/p/b c.kt"],"deadlineMs":1950,"maxTokens":2000}}"#
        );
        let no_budget = CallLimits {
            deadline_ms: 0,
            max_tokens: None,
        };
        let body: Value =
            serde_json::from_str(&request_body(&action, 7, &no_budget).unwrap()).unwrap();
        assert_eq!(body["id"], 7);
        assert_eq!(
            body["params"],
            json!({"sessionId": "sess \"1\"", "filepaths": ["/p/a.rs", "/p/b c.kt"], "deadlineMs": 0})
        );
    }

    #[test]
    fn reset_session_request_body() {
        let action = Action::ResetSession {
            session_id: "s-1".into(),
        };
        assert_eq!(
            request_body(&action, 2, &LIMITS).unwrap(),
            r#"{"jsonrpc":"2.0","id":2,"method":"resetSession","params":{"sessionId":"s-1"}}"#
        );
        assert_eq!(request_body(&Action::Nothing, 1, &LIMITS), None);
    }

    #[test]
    fn parses_results_and_errors() {
        assert_eq!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"result":[]}"#),
            Ok(json!([]))
        );
        assert_eq!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            Ok(Value::Null)
        );
        assert_eq!(
            parse_response(
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"deadline exceeded"}}"#
            ),
            Err(ResponseError::Rpc {
                code: -32001,
                message: "deadline exceeded".into()
            })
        );
        assert!(matches!(
            parse_response(b"<html>"),
            Err(ResponseError::Malformed(_))
        ));
        assert!(matches!(
            parse_response(b"[1]"),
            Err(ResponseError::Malformed(_))
        ));
        assert!(matches!(
            parse_response(br#"{"jsonrpc":"2.0","id":1}"#),
            Err(ResponseError::Malformed(_))
        ));
    }
}
