//! `guidebook status`: asks the running sidecar for its status and prints it readably (or as
//! JSON), with the alerts of the latest weekly metrics file. Exit 1 when no sidecar answers.
//! Reads: the socket, the metrics directory.

use std::process::ExitCode;
use std::time::Duration;

use super::client::SidecarError;
use super::client::{ask, Reply};
use super::CliError;
use crate::config::Settings;
use crate::rpc::status::Status;
use guidebook_hook::protocol::{method, no_params};

pub fn run(settings: &Settings, json: bool) -> Result<ExitCode, CliError> {
    let value: serde_json::Value =
        match ask(settings, &no_params(method::STATUS), Duration::from_secs(5))? {
            Reply::Answer(v) => v,
            Reply::NotRunning(why) => {
                eprintln!(
                "guidebook: the sidecar is not running ({why}); start it with `guidebook serve`"
            );
                return Ok(ExitCode::FAILURE);
            }
        };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let s: Status = serde_json::from_value(value).map_err(|source| SidecarError::Answer {
        method: method::STATUS,
        source,
    })?;
    println!("version     {}", s.version);
    let alerts = crate::metrics::MetricsDir::new(settings.metrics_dir.clone()).latest_alerts();
    if let Some((path, alerts)) = &alerts {
        for a in alerts {
            println!("ALERT       {} ({})", a.message, path.display());
        }
    }
    println!("uptime      {}s", s.uptime_seconds);
    println!("socket      {}", s.socket);
    println!("database    {}", s.db);
    println!(
        "guidebook   {} ({} guidelines, loaded {})",
        s.guidebook.root,
        s.guidebook.guidelines,
        s.guidebook.loaded_at.as_deref().unwrap_or("never")
    );
    println!(
        "flags       {} (loaded {})",
        s.flags.path,
        s.flags.loaded_at.as_deref().unwrap_or("never")
    );
    if let Some(t) = &s.tokenizer {
        let loaded = if t.vocabulary_loaded {
            "vocabulary loaded"
        } else {
            "vocabulary not loaded yet"
        };
        println!("tokenizer   {} ({loaded})", t.name);
    }
    // One list of every file the sidecar serves from that it cannot use: the flags file's error
    // (which starts with its path) counts like a guideline's, or `errors none` would follow it.
    let flags_error = s
        .flags
        .error
        .as_ref()
        .map(|e| format!("  {e} (the last good flags are served)"));
    let count = s.guidebook.errors.len() + usize::from(flags_error.is_some());
    if count == 0 {
        println!("errors      none");
    } else {
        println!("errors      {count}");
        for e in &s.guidebook.errors {
            match (e.line, e.column) {
                (Some(l), Some(c)) => println!("  {}:{l}:{c}: {}", e.path, e.message),
                (Some(l), None) => println!("  {}:{l}: {}", e.path, e.message),
                _ => println!("  {}: {}", e.path, e.message),
            }
        }
        if let Some(line) = flags_error {
            println!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
