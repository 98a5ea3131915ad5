//! `guidebook review [--base REV [--head REV] | --staged] [--format text|json|sarif]`: the
//! guidelines over a git diff's changed files, as the edit hook would apply them; exit 1 when a
//! `block` guideline fires, 2 when the review cannot be made. Reads: the guidebook, the
//! repository. Records nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use serde::Serialize;
use serde_json::{json, Value};

use super::CliError;
use crate::config::Settings;
use crate::guidebook::Severity;
use crate::review::{first_line, review, ReviewReport, Target};

/// How the findings are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReviewFormat {
    /// `path:line: id [severity] message`, one finding a line.
    Text,
    /// One JSON object: what was compared and the findings.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
}

/// What the command line asked for.
#[derive(Debug)]
pub struct ReviewArgs {
    pub base: Option<String>,
    pub head: Option<String>,
    pub staged: bool,
    pub format: ReviewFormat,
    pub repo: Option<PathBuf>,
}

/// The exit status of a review that could not be made (a usage or git error).
const CANNOT_REVIEW: u8 = 2;

pub fn run(settings: &Settings, args: ReviewArgs) -> Result<ExitCode, CliError> {
    let fail = |message: String| {
        eprintln!("guidebook: error: {message}");
        Ok(ExitCode::from(CANNOT_REVIEW))
    };
    let root = &settings.guidebook_root;
    if !root.is_dir() {
        return fail(format!(
            "the guidebook root {} is not a directory: give --guidebook-root DIR or set \
             ADAPTIVE_GUIDEBOOK_ROOT",
            root.display()
        ));
    }
    let target = match (args.base, args.staged) {
        (Some(base), _) => Target::Range {
            base,
            head: args.head,
        },
        (None, true) => Target::Staged,
        (None, false) => Target::WorkingTree,
    };
    let dir = match args.repo {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|source| CliError::Io {
            doing: "reading the current directory".into(),
            source,
        })?,
    };
    // As the hook would: the root, the team guidebooks and the trusted repositories' rules.
    let snapshot = crate::sources::load_guidebook(settings).snapshot();
    for e in &snapshot.errors {
        eprintln!("guidebook: warning: {e}");
    }
    let report = match review(&snapshot, &dir, &target, settings.max_file_bytes) {
        Ok(report) => report,
        Err(e) => return fail(e.to_string()),
    };
    match args.format {
        ReviewFormat::Text => {
            print!("{}", to_text(&report));
            eprintln!("{}", summary(&report));
        }
        ReviewFormat::Json => println!("{}", to_json(&report)),
        ReviewFormat::Sarif => println!(
            "{}",
            serde_json::to_string_pretty(&to_sarif(&report)).unwrap_or_default()
        ),
    }
    Ok(if report.blocked() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One line per finding: `src/A.kt:12: no-thread-sleep [block] Use delay() …`.
fn to_text(report: &ReviewReport) -> String {
    report
        .findings
        .iter()
        .map(|f| {
            format!(
                "{}:{}: {} [{}] {}\n",
                f.path,
                f.line,
                f.id(),
                f.severity().as_str(),
                f.message()
            )
        })
        .collect()
}

/// What was reviewed and found, for standard error.
fn summary(report: &ReviewReport) -> String {
    let blocks = report
        .findings
        .iter()
        .filter(|f| f.severity() == Severity::Block)
        .count();
    format!(
        "guidebook review: {} changed file(s) ({}), {} finding(s), {} block{}",
        report.files,
        report.compared,
        report.findings.len(),
        blocks,
        if blocks > 0 {
            ": a `block` guideline fired"
        } else {
            ""
        }
    )
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    root: String,
    compared: &'a str,
    files: usize,
    skipped: usize,
    blocked: bool,
    elapsed_ms: u128,
    findings: Vec<JsonFinding<'a>>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    path: &'a str,
    line: usize,
    id: &'a str,
    severity: &'static str,
    message: &'a str,
}

fn to_json(report: &ReviewReport) -> String {
    let out = JsonReport {
        root: report.root.display().to_string(),
        compared: &report.compared,
        files: report.files,
        skipped: report.skipped,
        blocked: report.blocked(),
        elapsed_ms: report.elapsed.as_millis(),
        findings: report
            .findings
            .iter()
            .map(|f| JsonFinding {
                path: &f.path,
                line: f.line,
                id: f.id(),
                severity: f.severity().as_str(),
                message: f.message(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// A severity as a SARIF level.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "note",
        Severity::Warn => "warning",
        Severity::Block => "error",
    }
}

/// The report as a SARIF 2.1.0 log: one run, a rule for each guideline that fired (its content
/// as the description and help), one result per finding at its line, paths relative to
/// `%SRCROOT%`.
fn to_sarif(report: &ReviewReport) -> Value {
    let mut rules: Vec<Value> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut results = Vec::with_capacity(report.findings.len());
    for f in &report.findings {
        let g = &f.guideline;
        let rule = *index.entry(&g.id).or_insert_with(|| {
            let short = first_line(&g.content);
            rules.push(json!({
                "id": g.id,
                "name": rule_name(&g.id),
                "shortDescription": {"text": short},
                "fullDescription": {"text": g.content.trim_end()},
                "help": {"text": g.content.trim_end(), "markdown": g.content.trim_end()},
                "defaultConfiguration": {"level": level(g.severity)},
                "properties": {
                    "tags": ["guidebook", g.severity.as_str()],
                    "severity": g.severity.as_str(),
                },
            }));
            rules.len() - 1
        });
        results.push(json!({
            "ruleId": g.id,
            "ruleIndex": rule,
            "level": level(g.severity),
            "message": {"text": sentence(f.message())},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": uri_path(&f.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": f.line},
                }
            }],
        }));
    }
    let mut root = uri_path(&report.root.display().to_string());
    if !root.ends_with('/') {
        root.push('/');
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "guidebook",
                "fullName": "Adaptive Guidebook",
                "version": crate::VERSION,
                "semanticVersion": crate::VERSION,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": format!("file://{root}")}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}

/// A guideline id (`no-thread-sleep`) as a SARIF rule name (`NoThreadSleep`).
fn rule_name(id: &str) -> String {
    id.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// SARIF wants each message to end as a sentence ends.
fn sentence(text: &str) -> String {
    match text.chars().last() {
        Some('.' | '!' | '?') => text.to_string(),
        _ => format!("{text}."),
    }
}

/// A path as a URI path: every byte but the unreserved ones and `/` percent-encoded.
fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_are_written_as_sarif_wants_them() {
        assert_eq!(uri_path("src/My File ï.kt"), "src/My%20File%20%C3%AF.kt");
        assert_eq!(rule_name("no-thread-sleep"), "NoThreadSleep");
        assert_eq!(sentence("Use delay()"), "Use delay().");
        assert_eq!(sentence("Stop."), "Stop.");
    }
}
