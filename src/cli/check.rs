//! `guidebook check [DIR]`: validates every guideline and prompt pack under DIR and prints
//! `file:line: message` per problem. Exit 1 on any error. Reads: the guidebook.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Settings;
use crate::guidebook::Guidebook;
use crate::prompt::PromptPacks;

pub fn run(settings: &Settings, dir: Option<PathBuf>) -> ExitCode {
    let root = dir.unwrap_or_else(|| settings.guidebook_root.clone());
    let snapshot = Guidebook::load(root.clone()).snapshot();
    let packs = PromptPacks::load(root.clone()).snapshot();
    let errors = snapshot.errors.len() + packs.errors.len();
    for e in snapshot.errors.iter().chain(&packs.errors) {
        println!("{e}");
    }
    if errors == 0 {
        println!(
            "ok: {} guidelines, {} patterns, prompt packs {} in {}",
            snapshot.guidelines.len(),
            snapshot.pattern_count(),
            packs.roles().join(", "),
            root.display()
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "{errors} error(s) in {} ({} valid guidelines, prompt packs {})",
            root.display(),
            snapshot.guidelines.len(),
            packs.roles().join(", ")
        );
        ExitCode::FAILURE
    }
}
