//! `guidebook trust [DIR]`, `guidebook trust --list` and `guidebook untrust [DIR]`: show a
//! repository's rule files as they are and record them as trusted, or forget them.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// A directory of the repository (default: the current directory).
    pub dir: Option<PathBuf>,
    /// List the trusted repositories and whether each one's files still match.
    #[arg(long, conflicts_with = "dir")]
    pub list: bool,
}

#[derive(Debug, clap::Args)]
pub struct UntrustArgs {
    /// A directory of the repository (default: the current directory).
    pub dir: Option<PathBuf>,
}

pub fn run(_settings: &Settings, _args: TrustArgs) -> Result<ExitCode, CliError> {
    todo!("guidebook trust")
}

pub fn run_untrust(_settings: &Settings, _args: UntrustArgs) -> Result<ExitCode, CliError> {
    todo!("guidebook untrust")
}
