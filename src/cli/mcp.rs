//! `guidebook mcp`: runs the MCP server on stdio for one agent session.
//!
//! Reads: the environment (`ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS`,
//! `ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS`, `ADAPTIVE_GUIDEBOOK_NO_AUTOSTART`), the settings for
//! the socket.

use std::process::ExitCode;
use std::time::Duration;

use super::CliError;
use crate::config::Settings;
use crate::mcp::link::Sidecar;
use crate::mcp::{self, GuidebookMcp, McpOptions};
use guidebook_hook::guard::Protected;

/// The shim's defaults, so that both wirings behave the same.
const DEFAULT_HOOK_TIMEOUT_MS: u64 = 2000;
const DEFAULT_MAX_TOKENS: u64 = 2000;
const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// The agent tools wait as long as the CLI does.
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(settings: &Settings, orchestrator: bool) -> Result<ExitCode, CliError> {
    let autostart = std::env::var_os("ADAPTIVE_GUIDEBOOK_NO_AUTOSTART").is_none_or(|v| v != "1");
    let options = McpOptions {
        hook_timeout: Duration::from_millis(
            env_u64(
                "ADAPTIVE_GUIDEBOOK_HOOK_TIMEOUT_MS",
                DEFAULT_HOOK_TIMEOUT_MS,
            )
            .min(MAX_TIMEOUT_MS),
        ),
        max_tokens: match env_u64("ADAPTIVE_GUIDEBOOK_HOOK_MAX_TOKENS", DEFAULT_MAX_TOKENS) {
            0 => None,
            n => Some(n),
        },
        tool_timeout: TOOL_TIMEOUT,
        orchestrator,
    };
    let server = GuidebookMcp::new(
        Sidecar::new(settings.socket.clone(), autostart),
        options,
        protected_places(settings),
    );
    mcp::serve(server)?;
    Ok(ExitCode::SUCCESS)
}

/// The sidecar's places the `hook` tool's guard keeps the agent away from: exactly where these
/// settings put them.
fn protected_places(settings: &Settings) -> Protected {
    let config = settings
        .config
        .clone()
        .unwrap_or_else(|| settings.home.join("config.yaml"));
    let places = [
        settings.home.clone(),
        settings.socket.clone(),
        settings.db.clone(),
        settings.flags.clone(),
        config,
    ];
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from);
    Protected::new(&places, home.as_deref()).except(std::slice::from_ref(&settings.guidebook_root))
}

/// A whole number from the environment, or `default` when unset, empty or not a number (a
/// warning says so: a typo in an agent's MCP config must not stop its session).
fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value.trim().parse().unwrap_or_else(|_| {
            tracing::warn!("{name}={value:?} is not a whole number; using {default}");
            default
        }),
        _ => default,
    }
}
