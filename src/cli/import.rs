//! `guidebook import DIR`: a repository's native rule files turned into guideline.yaml files.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The repository whose rule files to import.
    #[arg(value_name = "REPO")]
    pub repo: PathBuf,
    /// Where to write the guideline directories (default: the guidebook root).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(_settings: &Settings, _args: ImportArgs) -> Result<ExitCode, CliError> {
    todo!("guidebook import")
}
