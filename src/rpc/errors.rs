//! The one mapping from internal errors to JSON-RPC error objects. The codes are listed in
//! `rpc-schema/openrpc.json`.

use jsonrpsee::types::ErrorObjectOwned;

use crate::store::StoreError;

/// -32602: a param is missing, of the wrong type, or has a bad value.
pub const INVALID_PARAMS: i32 = -32602;
/// The caller's `deadlineMs` passed before the answer could be committed.
pub const DEADLINE_EXCEEDED: i32 = -32001;
/// The database could not be read or written (for example, locked past the busy timeout).
pub const STORAGE_ERROR: i32 = -32010;
/// The flags file could not be updated (it is invalid, the write failed, or another process
/// held its lock for too long).
pub const FLAGS_ERROR: i32 = -32020;
/// A request over one of the limits on a whole request: more calls in a batch than
/// `MAX_BATCH_CALLS`, or more paths across a batch than `MAX_REQUEST_PATHS`. Answered once for
/// the request, with `id: null`; nothing in it was run.
pub const REQUEST_TOO_LARGE: i32 = -32030;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error("{0}")]
    InvalidParams(String),
    #[error("deadline exceeded")]
    DeadlineExceeded,
    #[error("storage error: {0}")]
    Storage(StoreError),
    #[error("flags file error: {0}")]
    Flags(crate::flags::FlagsError),
}

impl From<StoreError> for RpcError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::DeadlineExceeded => RpcError::DeadlineExceeded,
            e => RpcError::Storage(e),
        }
    }
}

impl From<crate::search::SearchError> for RpcError {
    fn from(e: crate::search::SearchError) -> Self {
        match e {
            crate::search::SearchError::DeadlineExceeded => RpcError::DeadlineExceeded,
            crate::search::SearchError::Store(e) => e.into(),
        }
    }
}

impl From<crate::explain::ExplainError> for RpcError {
    fn from(e: crate::explain::ExplainError) -> Self {
        match e {
            crate::explain::ExplainError::DeadlineExceeded => RpcError::DeadlineExceeded,
            crate::explain::ExplainError::Store(e) => e.into(),
        }
    }
}

impl RpcError {
    pub fn code(&self) -> i32 {
        match self {
            RpcError::InvalidParams(_) => INVALID_PARAMS,
            RpcError::DeadlineExceeded => DEADLINE_EXCEEDED,
            RpcError::Storage(_) => STORAGE_ERROR,
            RpcError::Flags(_) => FLAGS_ERROR,
        }
    }

    pub fn into_object(self) -> ErrorObjectOwned {
        match &self {
            RpcError::Storage(e) => tracing::warn!("{e}"),
            RpcError::Flags(e) => tracing::warn!("{e}"),
            _ => {}
        }
        ErrorObjectOwned::owned(self.code(), self.to_string(), None::<()>)
    }
}
