//! The JSON-RPC face: one file per method (its params, result and `handle`), the registration
//! table below, and [`errors`], the one place errors become JSON-RPC error objects. Only this
//! module knows wire types.

pub mod ab_assign;
pub mod begin_shell_command;
pub mod breaker_status;
pub mod build_prompt;
pub mod check_edit;
pub mod discover;
pub mod end_shell_command;
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
use jsonrpsee::types::{ErrorCode, ErrorObjectOwned, Params};
use jsonrpsee::RpcModule;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::engine::Engine;
pub use errors::RpcError;

/// The registration table: every method the sidecar answers, and the handler behind it. The
/// names come from the protocol every client builds its requests with.
///
/// Handlers that touch files or SQLite run off the reactor ([`off_the_reactor`]) so that they
/// never stall the tasks that accept connections; so does `buildPrompt` (CPU only, but a task
/// near the 1 MiB body limit takes milliseconds to encode) and every flag method (a `stat` per
/// call, and sometimes a read or a write).
pub fn module(engine: Arc<Engine>) -> RpcModule<Engine> {
    let mut m = RpcModule::from_arc(engine);
    blocking(&mut m, method::SEARCH, search::handle);
    blocking(&mut m, method::EXPLAIN, explain::handle);
    blocking(&mut m, method::CHECK_EDIT, check_edit::handle);
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
    // Shell commands that write files: a begin keeps what the command names, an end searches
    // what it changed.
    blocking(
        &mut m,
        method::BEGIN_SHELL_COMMAND,
        begin_shell_command::handle,
    );
    blocking(&mut m, method::END_SHELL_COMMAND, end_shell_command::handle);
    m.register_method(method::DISCOVER, |p, _, _| {
        parse::<discover::Params>(&p)
            .map(|_| discover::handle())
            .map_err(RpcError::into_object)
    })
    .expect("unique method name");
    m
}

/// Registers `handle` for `name`, run off the reactor (see [`off_the_reactor`]): params parsed
/// into `P` (errors naming the param), the time the request arrived for deadlines, errors
/// mapped in one place.
fn blocking<P, R>(
    m: &mut RpcModule<Engine>,
    name: &'static str,
    handle: fn(&Engine, P, Instant) -> Result<R, RpcError>,
) where
    P: DeserializeOwned + 'static,
    R: Serialize + Clone + Send + 'static,
{
    m.register_async_method(name, move |p, e, _| async move {
        let received = Instant::now();
        // Counted while it waits and runs (see `Engine::calls`).
        let call = e.calls.enter();
        off_the_reactor(move || {
            let _call = call;
            parse(&p)
                .and_then(|p| handle(&e, p, received))
                .map_err(RpcError::into_object)
        })
        .await
    })
    .expect("unique method name");
}

/// Runs `f`, which may block, without stalling the tasks that accept and serve connections.
///
/// On the daemon's multi-threaded runtime it runs on the thread that read the request, never
/// handed to another thread and back (which after an idle pause cost two wake-ups, about a
/// tenth of a millisecond of every call), under `block_in_place`: the runtime first hands this
/// worker's other tasks to another thread, so that however many calls block, the runtime still
/// serves.
///
/// Every call takes that path, also one that has the daemon to itself. Running such a call
/// straight on its worker (saving the hand-off, 5–6 % of a search's round trip) hung the whole
/// daemon when the call waited on a database lock: a task the worker had just spawned (a new
/// connection's, the accept loop's) waits in the worker's LIFO slot, which no other worker
/// steals, so nothing was accepted or answered until the lock was released. On a
/// single-threaded runtime (which has no `block_in_place`) `f` goes to the blocking pool. A
/// panic in `f` is a bug; the caller gets an internal error, the daemon goes on.
async fn off_the_reactor<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, ErrorObjectOwned> + Send + 'static,
) -> Result<R, ErrorObjectOwned> {
    fn run<R>(f: impl FnOnce() -> Result<R, ErrorObjectOwned>) -> Result<R, ErrorObjectOwned> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(ErrorCode::InternalError.into()))
    }
    let handle = tokio::runtime::Handle::current();
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(|| run(f)),
        _ => tokio::task::spawn_blocking(f)
            .await
            .unwrap_or_else(|_| Err(ErrorCode::InternalError.into())),
    }
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

pub use guidebook_hook::protocol::MAX_FILEPATHS;

/// The most calls one batch may hold. No client of ours batches more than a few; a batch of
/// hundreds is one request's worth of work multiplied, which the per-call caps do not see.
pub const MAX_BATCH_CALLS: usize = 64;

/// The most file paths one request may name across all the calls of a batch: the same as one
/// call may, so that batching does not multiply the files one request reads.
pub const MAX_REQUEST_PATHS: usize = MAX_FILEPATHS;

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

/// The moment `deadline_ms` after the request was received, when the caller gave one.
pub(crate) fn deadline_of(received: Instant, deadline_ms: Option<u64>) -> Option<Instant> {
    deadline_ms.map(|ms| received + std::time::Duration::from_millis(ms))
}

/// The params an edit's calls (`search`, `checkEdit`) share, checked: `sessionId` not empty,
/// `filepaths` absolute, and `written` / `contents` turned into edits (see [`edits_of`]).
pub(crate) fn checked_edits(
    engine: &Engine,
    session_id: &str,
    filepaths: &[String],
    written: Option<WrittenParam>,
    contents: Option<std::collections::HashMap<String, String>>,
) -> Result<crate::engine::Edits, RpcError> {
    non_empty("sessionId", session_id)?;
    absolute_paths(filepaths)?;
    edits_of(filepaths, written, contents, engine.settings.max_file_bytes)
}

/// The most written-line ranges one file may carry.
pub(crate) const MAX_WRITTEN_RANGES: usize = 100_000;

/// Lines written per file (`[first, last]`, 1-based, inclusive), by path as in `filepaths`.
pub(crate) type WrittenParam = std::collections::HashMap<String, Vec<[u64; 2]>>;

/// The `written` and `contents` params checked against `filepaths` and turned into what the
/// evaluation takes: each key must be one of `filepaths`, each range 1-based with
/// `first <= last`; content beyond `max_bytes` is cut there, as a file read would be.
pub(crate) fn edits_of(
    filepaths: &[String],
    written: Option<WrittenParam>,
    contents: Option<std::collections::HashMap<String, String>>,
    max_bytes: u64,
) -> Result<crate::engine::Edits, RpcError> {
    use crate::guidebook::Written;
    let known: std::collections::HashSet<&str> = filepaths.iter().map(String::as_str).collect();
    let unknown = |param: &str, key: &str| {
        RpcError::InvalidParams(format!("{param}: `{key}` is not one of filepaths"))
    };
    let mut edits = crate::engine::Edits::new();
    for (path, ranges) in written.unwrap_or_default() {
        if !known.contains(path.as_str()) {
            return Err(unknown("written", &path));
        }
        if ranges.len() > MAX_WRITTEN_RANGES {
            return Err(RpcError::InvalidParams(format!(
                "written[\"{path}\"]: {} ranges given; at most {MAX_WRITTEN_RANGES}",
                ranges.len()
            )));
        }
        let mut lines = Vec::with_capacity(ranges.len());
        for (i, &[first, last]) in ranges.iter().enumerate() {
            if first == 0 || first > last {
                return Err(RpcError::InvalidParams(format!(
                    "written[\"{path}\"][{i}]: [{first}, {last}] is not a line range; lines are 1-based and first <= last"
                )));
            }
            lines.push([first as usize, last as usize]);
        }
        edits.entry(path).or_default().written = Some(Written::lines(lines));
    }
    for (path, content) in contents.unwrap_or_default() {
        if !known.contains(path.as_str()) {
            return Err(unknown("contents", &path));
        }
        let mut bytes = content.into_bytes();
        bytes.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
        edits.entry(path).or_default().content = Some(std::sync::Arc::new(bytes));
    }
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_name_the_param_path_and_range_they_refuse() {
        let paths = vec!["/r/a.kt".to_string()];
        let err = |w: WrittenParam| match edits_of(&paths, Some(w), None, 10) {
            Err(RpcError::InvalidParams(m)) => m,
            other => panic!("{other:?}"),
        };
        let one = |k: &str, r: Vec<[u64; 2]>| WrittenParam::from([(k.to_string(), r)]);
        assert_eq!(
            err(one("/r/b.kt", vec![])),
            "written: `/r/b.kt` is not one of filepaths"
        );
        assert!(err(one("/r/a.kt", vec![[1, 2], [0, 3]]))
            .starts_with("written[\"/r/a.kt\"][1]: [0, 3]"));
        assert!(err(one("/r/a.kt", vec![[5, 4]])).contains("first <= last"));
        let contents = std::collections::HashMap::from([("/r/a.kt".to_string(), "x".repeat(20))]);
        let edits = edits_of(
            &paths,
            Some(one("/r/a.kt", vec![[3, 4], [1, 1]])),
            Some(contents),
            10,
        )
        .unwrap();
        let e = &edits["/r/a.kt"];
        assert_eq!(
            e.written,
            Some(crate::guidebook::Written::lines(vec![[1, 1], [3, 4]]))
        );
        assert_eq!(e.content.as_ref().unwrap().len(), 10, "cut at the file cap");
    }

    fn thread() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[test]
    fn on_the_daemons_runtime_a_handler_runs_on_the_thread_that_received_it() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let (received, ran) = runtime.block_on(async {
            tokio::spawn(async move {
                let received = thread();
                let ran = off_the_reactor(|| Ok(thread())).await.unwrap();
                (received, ran)
            })
            .await
            .unwrap()
        });
        assert_eq!(received, ran, "handed to another thread");
        // Meanwhile the runtime goes on serving other tasks.
        let served = runtime.block_on(async {
            // A std channel: handlers wait on std primitives.
            let (tx, rx) = std::sync::mpsc::channel();
            let blocked = tokio::spawn(off_the_reactor(move || {
                let answer: Result<u8, _> = rx
                    .recv()
                    .map_err(|_| ErrorObjectOwned::from(ErrorCode::InternalError));
                answer
            }));
            // This task needs a worker while the other one blocks its thread.
            tokio::spawn(async move { tx.send(7).unwrap() })
                .await
                .unwrap();
            blocked.await.unwrap()
        });
        assert_eq!(served.unwrap(), 7);
    }

    /// Runs `work` on its own thread and waits at most 20 s for its answer: a runtime that
    /// stopped serving leaves that thread blocked, and the test fails instead of hanging.
    fn within_20s<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(work());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .ok()
    }

    /// A task the blocking call's worker spawned just before (as the accept loop spawns a new
    /// connection's task on its own worker) still runs while the call blocks: the daemon does
    /// not stop accepting while one call waits on a database lock. Runs straight on its worker,
    /// the call held the task in the worker's LIFO slot, which no other worker steals: this
    /// hung.
    #[test]
    fn a_task_spawned_on_the_blocked_worker_still_runs() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let answer = within_20s(move || {
            runtime.block_on(async {
                tokio::spawn(async {
                    let (tx, rx) = std::sync::mpsc::channel::<u8>();
                    tokio::spawn(async move { tx.send(3).unwrap() });
                    off_the_reactor(move || {
                        rx.recv()
                            .map_err(|_| ErrorObjectOwned::from(ErrorCode::InternalError))
                    })
                    .await
                })
                .await
                .unwrap()
            })
        });
        assert_eq!(
            answer.map(|a| a.ok()),
            Some(Some(3)),
            "the spawned task never ran"
        );
    }

    /// However many calls block at once, the runtime still serves: two blocked calls on a
    /// runtime of two workers, and a third task that answers them both.
    #[test]
    fn the_runtime_still_serves_while_every_worker_blocks() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let answers = within_20s(move || {
            runtime.block_on(async {
                let (tx1, rx1) = std::sync::mpsc::channel::<u8>();
                let (tx2, rx2) = std::sync::mpsc::channel::<u8>();
                let wait = |rx: std::sync::mpsc::Receiver<u8>| {
                    move || {
                        rx.recv()
                            .map_err(|_| ErrorObjectOwned::from(ErrorCode::InternalError))
                    }
                };
                let first = tokio::spawn(off_the_reactor(wait(rx1)));
                let second = tokio::spawn(off_the_reactor(wait(rx2)));
                // Both calls are blocked on their workers' threads before the answer is sent.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                tokio::spawn(async move {
                    tx1.send(1).unwrap();
                    tx2.send(2).unwrap();
                })
                .await
                .unwrap();
                (
                    first.await.unwrap().unwrap(),
                    second.await.unwrap().unwrap(),
                )
            })
        });
        assert_eq!(
            answers,
            Some((1, 2)),
            "the runtime stopped serving while two calls blocked"
        );
    }

    #[test]
    fn a_panicking_handler_is_an_internal_error_on_either_runtime() {
        let multi = tokio::runtime::Builder::new_multi_thread().build().unwrap();
        let single = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for runtime in [multi, single] {
            let answer = runtime.block_on(async move {
                tokio::spawn(off_the_reactor(|| -> Result<(), _> { panic!("a bug") }))
                    .await
                    .unwrap()
            });
            assert_eq!(answer.unwrap_err().code(), ErrorCode::InternalError.code());
            // And a handler that does not panic is answered, off the reactor there too.
            let ok = runtime.block_on(off_the_reactor(|| Ok(5)));
            assert_eq!(ok.unwrap(), 5);
        }
    }

    /// A method is counted in `Engine::calls` while it runs (what keeps a search beside
    /// others from enlisting helpers), and no longer once answered, in error or not.
    #[test]
    fn a_call_is_counted_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(crate::engine::test_engine(dir.path()));
        let mut m = RpcModule::from_arc(engine.clone());
        blocking(&mut m, "test/calls", |e, _: serde_json::Value, _| {
            Ok(e.calls.count())
        });
        blocking(
            &mut m,
            "test/fails",
            |_, _: serde_json::Value, _| -> Result<(), _> {
                Err(RpcError::InvalidParams("no".into()))
            },
        );
        let runtime = tokio::runtime::Builder::new_multi_thread().build().unwrap();
        runtime.block_on(async {
            let ask = |method: &str| {
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{}}}}"#)
            };
            let (inside, _) = m.raw_json_request(&ask("test/calls"), 1).await.unwrap();
            assert!(inside.get().contains(r#""result":1"#), "{inside}");
            let (failed, _) = m.raw_json_request(&ask("test/fails"), 1).await.unwrap();
            assert!(failed.get().contains(r#""error""#), "{failed}");
        });
        assert_eq!(
            engine.calls.count(),
            0,
            "every call uncounted once answered"
        );
    }
}
