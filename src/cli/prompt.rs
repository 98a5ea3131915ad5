//! `guidebook prompt --role R --phase P --task T [--context JSON] [--stats]`: builds a prompt in
//! this process from the guidebook root's packs (no sidecar) and prints it, or with `--stats`
//! the tokens of each section. The phase is taken as given, whatever the
//! `progressive_disclosure` flag says, so pack authors can see every phase. Reads: prompt packs.

use std::process::ExitCode;

use super::{CliError, UsageError};
use crate::config::Settings;
use crate::prompt::{self, Phase, PromptPacks, PromptRequest};

pub struct PromptArgs {
    pub role: String,
    pub phase: String,
    pub task: String,
    pub context: Option<String>,
    pub stats: bool,
}

pub fn run(settings: &Settings, args: PromptArgs) -> Result<ExitCode, CliError> {
    let phase = Phase::from_name(&args.phase).ok_or_else(|| UsageError::Phase {
        given: args.phase.clone(),
        expected: Phase::NAMES.join(", "),
    })?;
    let context = match &args.context {
        None => None,
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            Ok(_) => return Err(UsageError::ContextNotObject.into()),
            Err(e) => return Err(UsageError::ContextNotJson(e).into()),
        },
    };
    let packs = PromptPacks::load(settings.guidebook_root.clone()).snapshot();
    for e in &packs.errors {
        eprintln!("guidebook: warning: {e}");
    }
    let pack = packs
        .get(&args.role)
        .ok_or_else(|| UsageError::UnknownRole {
            role: args.role.clone(),
            known: packs.roles().join(", "),
        })?;
    let tokenizer = settings.tokenizer;
    let built = prompt::build(
        pack,
        PromptRequest {
            task: &args.task,
            context: context.as_ref(),
            phase,
        },
        tokenizer,
        true,
    );
    if !args.stats {
        println!("{}", built.text);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:<20} {:>7}", "section", "tokens");
    for s in &built.sections {
        println!(
            "{:<20} {:>7}",
            s.name,
            tokenizer.count(&built.text[s.range.clone()])
        );
    }
    println!(
        "{:<20} {:>7}   ({}, phase {}, limit {}{})",
        "total",
        built.tokens,
        tokenizer.name(),
        built.phase.name(),
        built
            .phase
            .limit()
            .map_or("none".to_string(), |l| l.to_string()),
        if built.truncated { ", truncated" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}
