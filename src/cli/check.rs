//! `guidebook check [DIR]`: validates every guideline under DIR and prints `file:line: message`
//! per problem. Exit 1 on any error. Reads: the guidebook.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Settings;
use crate::guidebook::Guidebook;

pub fn run(settings: &Settings, dir: Option<PathBuf>) -> ExitCode {
    let root = dir.unwrap_or_else(|| settings.guidebook_root.clone());
    let snapshot = Guidebook::load(root.clone()).snapshot();
    for e in &snapshot.errors {
        println!("{e}");
    }
    if snapshot.errors.is_empty() {
        println!(
            "ok: {} guidelines, {} patterns in {}",
            snapshot.guidelines.len(),
            snapshot.pattern_count(),
            root.display()
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "{} error(s) in {} ({} valid guidelines)",
            snapshot.errors.len(),
            root.display(),
            snapshot.guidelines.len()
        );
        ExitCode::FAILURE
    }
}
