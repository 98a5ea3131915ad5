//! `guidebook test [DIR] [--json]`: runs every guideline's examples; exit 1 on any failure.
//!
//! One line per failing example (`path:line: id: example 2 of match did not match`), then a
//! summary. Guidelines that fail to load are listed too: their examples cannot run. Reads: the
//! guidebook.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use crate::config::Settings;
use crate::guidebook::{run_examples, ExampleReport, Guidebook, GuidelineSnapshot};

/// `--json`: what `guidebook test` found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TestReport {
    root: String,
    guidelines: usize,
    guidelines_with_examples: usize,
    examples: usize,
    failed: usize,
    failures: Vec<Failure>,
    errors: Vec<Failure>,
}

#[derive(Debug, Serialize)]
struct Failure {
    path: String,
    line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    list: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    example: Option<usize>,
    message: String,
}

pub fn run(settings: &Settings, dir: Option<PathBuf>, json: bool) -> ExitCode {
    let root = dir.unwrap_or_else(|| settings.guidebook_root.clone());
    let snapshot = Guidebook::load(root.clone()).snapshot();
    let report = run_examples(&snapshot);
    if json {
        let out = TestReport {
            root: root.display().to_string(),
            guidelines: snapshot.guidelines.len(),
            guidelines_with_examples: report.guidelines,
            examples: report.examples,
            failed: report.failures.len(),
            failures: report
                .failures
                .iter()
                .map(|f| Failure {
                    path: f.path.display().to_string(),
                    line: f.line,
                    id: Some(f.id.clone()),
                    list: Some(f.expect.key()),
                    example: Some(f.index),
                    message: f.to_string(),
                })
                .collect(),
            errors: snapshot
                .errors
                .iter()
                .map(|e| Failure {
                    path: e.path.display().to_string(),
                    line: e.line,
                    id: None,
                    list: None,
                    example: None,
                    message: e.to_string(),
                })
                .collect(),
        };
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        for e in &snapshot.errors {
            println!("{e}");
        }
        print_failures(&report);
        println!("{}", summary(&snapshot, &report, &root));
    }
    if report.failures.is_empty() && snapshot.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One line per failing example.
pub fn print_failures(report: &ExampleReport) {
    for f in &report.failures {
        println!("{f}");
    }
}

/// `ok: 36 examples of 12 guidelines passed in ROOT`, or how many failed.
pub fn summary(
    snapshot: &GuidelineSnapshot,
    report: &ExampleReport,
    root: &std::path::Path,
) -> String {
    let without = snapshot.guidelines.len() - report.guidelines;
    let without = match without {
        0 => String::new(),
        1 => "; 1 guideline has no examples".to_string(),
        n => format!("; {n} guidelines have no examples"),
    };
    if report.failures.is_empty() && snapshot.errors.is_empty() {
        format!(
            "ok: {} examples of {} guidelines passed in {}{without}",
            report.examples,
            report.guidelines,
            root.display()
        )
    } else {
        format!(
            "{} of {} examples failed, {} guideline file error(s) in {}{without}",
            report.failures.len(),
            report.examples,
            snapshot.errors.len(),
            root.display()
        )
    }
}
