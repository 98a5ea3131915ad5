//! The JSON-RPC face: one file per method (its params, result and `handle`), the registration
//! table below, and [`errors`], the one place errors become JSON-RPC error objects. Only this
//! module knows wire types.

pub mod ab_assign;
pub mod breaker_status;
pub mod build_prompt;
pub mod discover;
pub mod errors;
pub mod explain;
pub mod get_flags;
pub mod is_enabled;
pub mod record_error;
pub mod record_qc_result;
pub mod record_qc_review;
pub mod record_session_tokens;
pub mod reset_breaker;
pub mod reset_session;
pub mod search;
pub mod set_flag;
pub mod status;

use std::sync::Arc;
use std::time::Instant;

use guidebook_hook::protocol::method;
use jsonrpsee::types::Params;
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::engine::Engine;
pub use errors::RpcError;

/// The registration table: every method the sidecar answers, and the handler behind it. The
/// names come from the protocol every client builds its requests with.
///
/// Handlers that touch files or SQLite run on tokio's blocking pool so that they never stall
/// the reactor that accepts connections; so does `buildPrompt` (CPU only, but a task near the
/// 1 MiB body limit takes milliseconds to encode) and every flag method (a `stat` per call, and
/// sometimes a read or a write).
pub fn module(engine: Arc<Engine>) -> RpcModule<Engine> {
    let mut m = RpcModule::from_arc(engine);
    blocking(&mut m, method::SEARCH, search::handle);
    blocking(&mut m, method::EXPLAIN, |e, p, _| explain::handle(e, p));
    blocking(&mut m, method::RESET_SESSION, |e, p, _| {
        reset_session::handle(e, p)
    });
    blocking(&mut m, method::BUILD_PROMPT, |e, p, _| {
        build_prompt::handle(e, p)
    });
    blocking(&mut m, method::STATUS, |e, p, _| Ok(status::handle(e, p)));
    blocking(&mut m, method::GET_FLAGS, |e, p, _| {
        Ok(get_flags::handle(e, p))
    });
    blocking(&mut m, method::IS_ENABLED, |e, p, _| {
        is_enabled::handle(e, p)
    });
    blocking(&mut m, method::SET_FLAG, |e, p, _| set_flag::handle(e, p));
    // The circuit breaker: each call is one short SQLite transaction.
    blocking(&mut m, method::RECORD_ERROR, record_error::handle);
    blocking(&mut m, method::BREAKER_STATUS, |e, p, _| {
        breaker_status::handle(e, p)
    });
    blocking(&mut m, method::RESET_BREAKER, |e, p, _| {
        reset_breaker::handle(e, p)
    });
    // The rollout's measurements: each call is one short SQLite transaction.
    blocking(&mut m, method::RECORD_QC_RESULT, record_qc_result::handle);
    blocking(&mut m, method::RECORD_QC_REVIEW, |e, p, _| {
        record_qc_review::handle(e, p)
    });
    blocking(&mut m, method::RECORD_SESSION_TOKENS, |e, p, _| {
        record_session_tokens::handle(e, p)
    });
    blocking(&mut m, method::AB_ASSIGN, |e, p, _| ab_assign::handle(e, p));
    m.register_method(method::DISCOVER, |p, _, _| {
        parse::<discover::Params>(&p)
            .map(|_| discover::handle())
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m
}

/// Registers `handle` for `name` on the blocking pool: params parsed into `P` (errors naming
/// the param), the time the request arrived for deadlines, errors mapped in one place.
fn blocking<P, R>(
    m: &mut RpcModule<Engine>,
    name: &'static str,
    handle: fn(&Engine, P, Instant) -> Result<R, RpcError>,
) where
    P: DeserializeOwned + 'static,
    R: Serialize + Clone + Send + 'static,
{
    m.register_blocking_method(name, move |p, e, _| {
        let received = Instant::now();
        parse(&p)
            .and_then(|p| handle(&e, p, received))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
}

/// Parses a method's params: always one JSON object with camelCase keys. Absent params count as
/// `{}`. Errors name the offending param (`filepaths[2]: invalid type …`).
pub fn parse<T: DeserializeOwned>(params: &Params) -> Result<T, RpcError> {
    let raw = params.as_str().unwrap_or("{}");
    if raw.trim_start().starts_with('[') {
        return Err(RpcError::InvalidParams(
            "params must be one object with named members, not an array".into(),
        ));
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // serde_json appends " at line 1 column N", which means nothing to a caller.
        let inner = inner
            .split(" at line ")
            .next()
            .unwrap_or(&inner)
            .to_string();
        RpcError::InvalidParams(if path == "." {
            inner
        } else {
            format!("{path}: {inner}")
        })
    })
}

/// Checks that a required string param is not empty.
pub(crate) fn non_empty(name: &str, value: &str) -> Result<(), RpcError> {
    if value.is_empty() {
        Err(RpcError::InvalidParams(format!(
            "{name}: must not be empty"
        )))
    } else {
        Ok(())
    }
}

/// The most paths one call may name. An agent's edit touches a handful of files; a list this
/// long is a bug on the caller's side, and refusing it keeps one request from reading a tree.
pub const MAX_FILEPATHS: usize = 1000;

/// Checks that every path is absolute: the sidecar has no working directory of the caller's to
/// resolve a relative one against.
pub(crate) fn absolute_paths(paths: &[String]) -> Result<(), RpcError> {
    if paths.len() > MAX_FILEPATHS {
        return Err(RpcError::InvalidParams(format!(
            "filepaths: {} paths given; at most {MAX_FILEPATHS} per call",
            paths.len()
        )));
    }
    for (i, p) in paths.iter().enumerate() {
        if !p.starts_with('/') {
            return Err(RpcError::InvalidParams(format!(
                "filepaths[{i}]: `{p}` is not an absolute path"
            )));
        }
        if p.contains('\0') {
            return Err(RpcError::InvalidParams(format!(
                "filepaths[{i}]: contains a NUL byte"
            )));
        }
    }
    Ok(())
}
