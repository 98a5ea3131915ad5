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
    if let Some(sources) = &s.sources {
        for t in &sources.teams {
            println!("team        {}", team_line(t));
        }
        for r in &sources.repositories {
            println!(
                "repository  {} (trusted, {} rules served, {} files not served)",
                r.root,
                r.served,
                r.waiting.len()
            );
            for w in &r.waiting {
                println!("  {w}");
            }
        }
    }
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

/// A team guidebook's line: its name, where it comes from, the revision served and its age.
pub(super) fn team_line(t: &crate::rpc::status::TeamStatus) -> String {
    let from = match &t.git_ref {
        Some(r) => format!("{} ({r})", t.url),
        None => t.url.clone(),
    };
    let at = match (&t.revision, t.age_seconds) {
        (Some(rev), Some(age)) => format!("at {} fetched {} ago", short(rev), age_text(age)),
        (Some(rev), None) => format!("at {}", short(rev)),
        (None, _) => "not fetched yet".into(),
    };
    match &t.error {
        Some(e) => format!("{} from {from}: {at}; last fetch failed: {e}", t.name),
        None => format!("{} from {from}: {at}", t.name),
    }
}

fn short(revision: &str) -> &str {
    &revision[..revision.len().min(12)]
}

/// `age` seconds as the largest whole unit (`42s`, `7m`, `3h`, `2d`).
fn age_text(age: u64) -> String {
    match age {
        0..=59 => format!("{age}s"),
        60..=3599 => format!("{}m", age / 60),
        3600..=86_399 => format!("{}h", age / 3600),
        _ => format!("{}d", age / 86_400),
    }
}
