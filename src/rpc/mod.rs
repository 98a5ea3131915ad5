//! The JSON-RPC face: one file per method (its params, result and `handle`), the registration
//! table below, and [`errors`], the one place errors become JSON-RPC error objects. Only this
//! module knows wire types.

pub mod breaker_status;
pub mod build_prompt;
pub mod discover;
pub mod errors;
pub mod explain;
pub mod get_flags;
pub mod is_enabled;
pub mod record_error;
pub mod reset_breaker;
pub mod reset_session;
pub mod search;
pub mod set_flag;
pub mod status;

use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::types::Params;
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;

use crate::engine::Engine;
pub use errors::RpcError;

/// The registration table: every method the sidecar answers, and the handler behind it.
///
/// Handlers that touch files or SQLite are registered as blocking methods so that they run on
/// tokio's blocking pool and never stall the reactor that accepts connections.
pub fn module(engine: Arc<Engine>) -> RpcModule<Engine> {
    let mut m = RpcModule::from_arc(engine);
    m.register_blocking_method("search", |p, e, _| {
        let received = Instant::now();
        parse(&p)
            .and_then(|p| search::handle(&e, p, received))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("explain", |p, e, _| {
        parse(&p)
            .and_then(|p| explain::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("resetSession", |p, e, _| {
        parse(&p)
            .and_then(|p| reset_session::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    // CPU only, but a task near the 1 MiB body limit takes milliseconds to encode: too long
    // for a reactor thread that also accepts connections.
    m.register_blocking_method("buildPrompt", |p, e, _| {
        parse(&p)
            .and_then(|p| build_prompt::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    // `status` stats (and may read) the flags file: a blocking method too.
    m.register_blocking_method("status", |p, e, _| {
        parse(&p)
            .map(|p| status::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    // Flag handlers `stat` (and maybe read) a small file, or write one: blocking methods.
    m.register_blocking_method("getFlags", |p, e, _| {
        parse(&p)
            .map(|p| get_flags::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("isEnabled", |p, e, _| {
        parse(&p)
            .and_then(|p| is_enabled::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("setFlag", |p, e, _| {
        parse(&p)
            .and_then(|p| set_flag::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    // The circuit breaker: each call is one short SQLite transaction.
    m.register_blocking_method("recordError", |p, e, _| {
        parse(&p)
            .and_then(|p| record_error::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("breakerStatus", |p, e, _| {
        parse(&p)
            .and_then(|p| breaker_status::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_blocking_method("resetBreaker", |p, e, _| {
        parse(&p)
            .and_then(|p| reset_breaker::handle(&e, p))
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m.register_method("rpc.discover", |p, _, _| {
        parse::<discover::Params>(&p)
            .map(|_| discover::handle())
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m
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
