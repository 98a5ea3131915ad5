//! `guidebook check [DIR]`: validates every guideline and prompt pack, and runs the examples.
//!
//! Prints `file:line: message` per problem (a file that does not load, an example that does not
//! come out as written). Exit 1 on any. Reads: the guidebook.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::Settings;
use crate::guidebook::{run_examples, Guidebook};
use crate::prompt::PromptPacks;

pub fn run(settings: &Settings, dir: Option<PathBuf>) -> ExitCode {
    let root = dir.unwrap_or_else(|| settings.guidebook_root.clone());
    let snapshot = Guidebook::load(root.clone()).snapshot();
    let packs = PromptPacks::load(root.clone()).snapshot();
    let examples = run_examples(&snapshot);
    let errors = snapshot.errors.len() + packs.errors.len() + examples.failures.len();
    for e in snapshot.errors.iter().chain(&packs.errors) {
        println!("{e}");
    }
    super::test::print_failures(&examples);
    if errors == 0 {
        println!(
            "ok: {} guidelines, {} patterns, {} examples, prompt packs {} in {}",
            snapshot.guidelines.len(),
            snapshot.pattern_count(),
            examples.examples,
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
