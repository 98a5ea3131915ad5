//! `guidebook explain --session ID FILE...`: which guidelines apply to and match each file, why.
//!
//! Prints a table (or the raw result with `--json`). Asks the running sidecar; when none runs,
//! evaluates in-process against the same guidebook and database. Records nothing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use guidebook_hook::protocol::Explain;

use super::client::{ask, Reply};
use super::CliError;
use crate::config::Settings;
use crate::engine::Engine;
use crate::explain::{explain, Explanation};

pub fn run(
    settings: &Settings,
    session: Option<String>,
    json: bool,
    files: Vec<PathBuf>,
) -> Result<ExitCode, CliError> {
    let filepaths = super::absolute_paths(files)?;
    let call = Explain {
        filepaths: filepaths.clone(),
        session_id: session.clone(),
    }
    .call();
    let explanation: Explanation = match ask(settings, &call, Duration::from_secs(10))? {
        Reply::Answer(explanation) => explanation,
        Reply::NotRunning(why) => {
            eprintln!("guidebook: {why}; evaluating in-process");
            let engine = Engine::open(settings.clone())?;
            explain(&engine, &filepaths, session.as_deref())?
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&explanation).unwrap_or_default()
        );
    } else {
        print!("{}", table(&explanation));
    }
    Ok(ExitCode::SUCCESS)
}

/// One row per (file, matching guideline); a file without matches gets one row that says why.
fn table(e: &Explanation) -> String {
    let presented = |id: &str| {
        e.guidelines
            .iter()
            .any(|g| g.id == id && g.already_presented)
    };
    let mut rows = vec![[
        "FILE".to_string(),
        "REPOSITORY".into(),
        "LANGUAGE".into(),
        "GUIDELINE".into(),
        "LINE".into(),
        "PATTERN".into(),
    ]];
    for f in &e.files {
        let repo = f.repository.clone().unwrap_or_else(|| "-".into());
        let lang = f.language.clone().unwrap_or_else(|| "-".into());
        if let Some(why) = &f.skipped {
            rows.push([
                f.path.clone(),
                repo.clone(),
                lang.clone(),
                format!("(skipped: {why})"),
                String::new(),
                String::new(),
            ]);
        } else if f.matches.is_empty() {
            rows.push([
                f.path.clone(),
                repo.clone(),
                lang.clone(),
                "(no match)".into(),
                String::new(),
                String::new(),
            ]);
        }
        for m in &f.matches {
            let id = if presented(&m.id) {
                format!("{} (already presented)", m.id)
            } else {
                m.id.clone()
            };
            rows.push([
                f.path.clone(),
                repo.clone(),
                lang.clone(),
                id,
                m.line.map_or_else(|| "-".into(), |l| l.to_string()),
                m.pattern.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
    }
    let mut widths = [0usize; 6];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    // Where each matching guideline came from, and the repository rules that wait.
    let mut sources = std::collections::BTreeMap::new();
    for m in e.files.iter().flat_map(|f| &f.matches) {
        sources.insert(m.id.as_str(), m.source.as_str());
    }
    if !sources.is_empty() {
        out.push('\n');
        for (id, source) in sources {
            out.push_str(&format!("{id}: from {source}\n"));
        }
    }
    let mut told = std::collections::BTreeSet::new();
    for rules in e.files.iter().filter_map(|f| f.repository_rules.as_ref()) {
        if rules.waiting.is_empty() || !told.insert(rules.root.as_str()) {
            continue;
        }
        out.push_str(&format!(
            "\n{} ({}, {} rules served): rule files not served:\n",
            rules.root,
            if rules.trusted {
                "trusted"
            } else {
                "not trusted"
            },
            rules.served
        ));
        for w in &rules.waiting {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}
