//! Calls the running sidecar from the CLI, reusing the hook shim's blocking client so that the
//! CLI and the hooks speak to the socket the same way. Reads and writes: the socket.

use std::time::{Duration, Instant};

use guidebook_hook::client::{self, ClientError};
use serde_json::Value;

use super::CliError;
use crate::config::Settings;

/// Why a call did not produce a result.
pub enum CallError {
    /// Nothing answers on the socket: the sidecar is not running.
    Unreachable(String),
    Failed(CliError),
}

/// Calls `method` with `params` and returns its result.
pub fn call(
    settings: &Settings,
    method: &str,
    params: Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let deadline = Instant::now() + timeout;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        .to_string();
    let exchange = || {
        let mut stream = client::connect(&settings.socket, deadline)?;
        client::post(&mut stream, &body, deadline)
    };
    let response = match exchange() {
        Ok(b) => b,
        Err(e @ ClientError::Connect(_)) => {
            return Err(CallError::Unreachable(format!(
                "{e} at {}",
                settings.socket.display()
            )))
        }
        Err(e) => return Err(CallError::Failed(CliError::Sidecar(e.to_string()))),
    };
    guidebook_hook::parse_response(&response)
        .map_err(|e| CallError::Failed(CliError::Sidecar(format!("{method}: {e}"))))
}
