//! `guidebook export --format F --out DIR`: the guidebook written in an agent's native rule
//! format, for the hosts no hook reaches; what the format cannot express is reported.
//!
//! Prints one line per file written and one per thing a guideline loses (`--json`: both as
//! JSON). Exit 0 when written (reports or not), 1 when the guidebook does not load or a file
//! in the way was not written by us (then nothing is written). Reads: the guidebook; writes:
//! under `--out`.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use super::CliError;
use crate::config::Settings;
use crate::guidebook::Guidebook;
use crate::sources::export::{plan, write, Format, Report};

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
    /// Print what was written and what was not expressed as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Cursor,
    Claude,
    Copilot,
    Continue,
    AgentsMd,
}

impl ExportFormat {
    fn domain(self) -> Format {
        match self {
            ExportFormat::Cursor => Format::Cursor,
            ExportFormat::Claude => Format::Claude,
            ExportFormat::Copilot => Format::Copilot,
            ExportFormat::Continue => Format::Continue,
            ExportFormat::AgentsMd => Format::AgentsMd,
        }
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    format: &'static str,
    out: String,
    written: Vec<String>,
    /// What each guideline lost: `{id, what}`.
    reports: &'a [Report],
}

pub fn run(settings: &Settings, args: ExportArgs) -> Result<ExitCode, CliError> {
    let root = args
        .from
        .clone()
        .unwrap_or_else(|| settings.guidebook_root.clone());
    let snapshot = Guidebook::load(root.clone()).snapshot();
    if !snapshot.errors.is_empty() {
        for e in &snapshot.errors {
            eprintln!("{e}");
        }
        eprintln!(
            "guidebook export: {} error(s) in {}; fix them first (guidebook check), nothing was written",
            snapshot.errors.len(),
            root.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    let guidelines: Vec<_> = snapshot
        .guidelines
        .iter()
        .map(|c| c.guideline.as_ref())
        .collect();
    let format = args.format.domain();
    let plan = plan(format, &guidelines);
    let written = match write(&args.out, &plan) {
        Ok(written) => written,
        Err(e) => {
            eprintln!("guidebook export: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.json {
        let report = JsonReport {
            format: format.name(),
            out: args.out.display().to_string(),
            written: written.iter().map(|p| p.display().to_string()).collect(),
            reports: &plan.reports,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    for path in &written {
        println!("wrote {}", args.out.join(path).display());
    }
    for r in &plan.reports {
        println!("{}: not expressed in {}: {}", r.id, format.name(), r.what);
    }
    println!(
        "{} guideline(s) exported as {} into {}: {} file(s), {} thing(s) not expressed",
        guidelines.len(),
        format.name(),
        args.out.display(),
        written.len(),
        plan.reports.len()
    );
    Ok(ExitCode::SUCCESS)
}
