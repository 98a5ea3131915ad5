//! `guidebook import REPO [--out DIR]`: a repository's native rule files turned into
//! guideline.yaml files.
//!
//! Prints one line per guideline written, per rule that cannot be applied at an edit (not
//! mapped) and per file not read. Exit 0 when written, 1 when a rule file does not read as its
//! format or a guideline is in the way (then nothing is written). Reads: the repository's rule
//! files (never through a symlink), the guidebook at `--out`; writes: under `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::guidebook::Guidebook;
use crate::sources::import::{plan, write};

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The repository whose rule files to import.
    #[arg(value_name = "REPO")]
    pub repo: PathBuf,
    /// Where to write the guideline directories (default: the guidebook root).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(settings: &Settings, args: ImportArgs) -> Result<ExitCode, CliError> {
    let repo = std::fs::canonicalize(&args.repo).map_err(|source| CliError::Io {
        doing: format!("opening the repository {}", args.repo.display()),
        source,
    })?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| settings.guidebook_root.clone());
    let plan = plan(&repo, &out, &settings.repository_rules);
    let taken: Vec<(String, PathBuf)> = if out.is_dir() {
        Guidebook::load(out.clone())
            .snapshot()
            .guidelines
            .iter()
            .map(|g| (g.id().to_string(), g.guideline.source.clone()))
            .collect()
    } else {
        Vec::new()
    };
    for (path, why) in &plan.not_mapped {
        println!("not mapped: {}: {why}", path.display());
    }
    for (path, why) in &plan.skipped {
        println!("not read: {}: {why}", path.display());
    }
    let written = match write(&plan, &taken) {
        Ok(written) => written,
        Err(e) => {
            eprintln!("guidebook import: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    for (i, path) in plan.imported.iter().zip(&written) {
        println!(
            "imported {} as {} ({})",
            i.relative.display(),
            i.id,
            path.display()
        );
    }
    println!(
        "{} rule file(s) of {} imported into {}; {} not mapped, {} not read",
        written.len(),
        repo.display(),
        out.display(),
        plan.not_mapped.len(),
        plan.skipped.len()
    );
    Ok(ExitCode::SUCCESS)
}
