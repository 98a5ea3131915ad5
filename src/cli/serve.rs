//! `guidebook serve`: runs the sidecar in the foreground until SIGTERM or SIGINT.
//!
//! Everything it does is [`server::start`]'s; this file only supplies the signals.

use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::server;

pub fn run(settings: Settings) -> Result<ExitCode, CliError> {
    server::start(settings, server::termination_signal)?;
    Ok(ExitCode::SUCCESS)
}
