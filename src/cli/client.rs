//! Calls the running sidecar from the CLI through the shim's blocking client and the shared
//! protocol, so that the CLI and the hooks speak to the socket the same way. Reads and writes:
//! the socket.

use std::time::{Duration, Instant};

use guidebook_hook::client::{self, ClientError};
use guidebook_hook::protocol::{self, Call, CallError};
use serde::de::DeserializeOwned;

use super::CliError;
use crate::config::Settings;

/// Why the sidecar could not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// The call failed: a timeout, bad HTTP, or the sidecar's own error object.
    #[error("{method}: {source}")]
    Call {
        method: &'static str,
        source: CallError,
    },
    /// The answer did not have the shape the method returns.
    #[error("unexpected {method} answer: {source}")]
    Answer {
        method: &'static str,
        source: serde_json::Error,
    },
}

/// What the sidecar said, if one runs.
pub enum Reply<T> {
    Answer(T),
    /// Nothing answers on the socket: the sidecar is not running (the text says where).
    NotRunning(String),
}

/// The sidecar's answer to `call`, or [`Reply::NotRunning`] when nothing answers on the socket.
pub fn ask<T: DeserializeOwned>(
    settings: &Settings,
    call: &Call,
    timeout: Duration,
) -> Result<Reply<T>, CliError> {
    let deadline = Instant::now() + timeout;
    let answered = protocol::call(call, |body| {
        let mut stream = client::connect(&settings.socket, deadline)?;
        client::post(&mut stream, body, deadline)
    });
    let method = call.method;
    match answered {
        Ok(value) => serde_json::from_value(value)
            .map(Reply::Answer)
            .map_err(|source| SidecarError::Answer { method, source }.into()),
        Err(CallError::Exchange(e @ ClientError::Connect(_))) => Ok(Reply::NotRunning(format!(
            "{e} at {}",
            settings.socket.display()
        ))),
        Err(source) => Err(SidecarError::Call { method, source }.into()),
    }
}
