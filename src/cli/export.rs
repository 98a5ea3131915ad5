//! `guidebook export --format F --out DIR`: the guidebook written in an agent's native rule
//! format, for the hosts no hook reaches; what the format cannot express is reported.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// cursor, claude, copilot, continue or agents-md.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// The directory to write into (a repository's root, typically).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The guidebook to export (default: the guidebook root).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Cursor,
    Claude,
    Copilot,
    Continue,
    AgentsMd,
}

pub fn run(_settings: &Settings, _args: ExportArgs) -> Result<ExitCode, CliError> {
    todo!("guidebook export")
}
