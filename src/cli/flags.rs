//! `guidebook flags list|get|set|init`: reads and changes feature flags. Asks the running
//! sidecar (so its environment overrides show); when none runs, works on the flags file
//! directly with the same code. Writes: the flags file (`set`, `init`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use serde_json::{json, Value};

use super::client::{call, CallError};
use super::CliError;
use crate::config::Settings;
use crate::flags::Flags;
use crate::rpc::get_flags::{self, FlagState, FlagsAnswer};
use crate::rpc::set_flag;

#[derive(Debug, Subcommand)]
pub enum FlagsCommand {
    /// Every flag as served, with the file's error if it has one.
    List {
        /// Print the raw `getFlags` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Whether FLAG is on (for KEY, when its rollout is below 100 %): prints true or false.
    Get {
        flag: String,
        /// The rollout key, usually a session id.
        #[arg(long)]
        key: Option<String>,
    },
    /// Change FLAG (created, off, if the file lacks it) and rewrite the file atomically.
    Set {
        flag: String,
        #[arg(long, value_name = "true|false")]
        enabled: Option<bool>,
        /// Rollout percentage, 0..=100.
        #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u64).range(0..=100))]
        rollout: Option<u64>,
    },
    /// Write the sample flags file (the team's six flags) if the flags file does not exist.
    Init,
}

const TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(settings: &Settings, command: FlagsCommand) -> Result<ExitCode, CliError> {
    match command {
        FlagsCommand::List { json } => {
            let answer: FlagsAnswer = match ask(settings, "getFlags", json!({}))? {
                Some(v) => from_value(v)?,
                None => get_flags::answer(&Flags::open(settings.flags.clone())),
            };
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&answer).unwrap_or_default()
                );
            } else {
                print!("{}", table(&answer));
            }
            Ok(if answer.error.is_some() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        FlagsCommand::Get { flag, key } => {
            let on = match ask(settings, "isEnabled", json!({"flag": flag, "key": key}))? {
                Some(v) => from_value(v)?,
                None => Flags::open(settings.flags.clone()).is_enabled(&flag, key.as_deref()),
            };
            println!("{on}");
            Ok(ExitCode::SUCCESS)
        }
        FlagsCommand::Set {
            flag,
            enabled,
            rollout,
        } => {
            let params = json!({"flag": flag, "enabled": enabled, "rolloutPercent": rollout});
            let state: FlagState = match ask(settings, "setFlag", params.clone())? {
                Some(v) => from_value(v)?,
                None => set_flag::set(&Flags::open(settings.flags.clone()), from_value(params)?)
                    .map_err(|e| CliError::Sidecar(e.to_string()))?,
            };
            println!(
                "{flag}: {} rollout {}%{}  (written to {})",
                if state.enabled { "on" } else { "off" },
                state.rollout_percent,
                if state.overridden_by.is_some() {
                    " [overridden by the environment]"
                } else {
                    ""
                },
                settings.flags.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        FlagsCommand::Init => {
            let path = &settings.flags;
            if std::fs::symlink_metadata(path).is_ok() {
                println!("{} exists; left as it is", path.display());
                return Ok(ExitCode::SUCCESS);
            }
            let sample = crate::guidebook::SAMPLE_FILES
                .iter()
                .find(|(rel, _)| *rel == "feature_flags.json")
                .map(|(_, content)| *content)
                .expect("the sample flags file is embedded");
            crate::flags::write::replace(path, sample.as_bytes()).map_err(|source| {
                CliError::Io {
                    doing: format!("writing {}", path.display()),
                    source,
                }
            })?;
            println!("wrote the sample flags to {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The sidecar's answer, or `None` when no sidecar runs (the caller then works in-process).
fn ask(settings: &Settings, method: &str, params: Value) -> Result<Option<Value>, CliError> {
    match call(settings, method, params, TIMEOUT) {
        Ok(v) => Ok(Some(v)),
        Err(CallError::Unreachable(why)) => {
            eprintln!(
                "guidebook: {why}; using {} directly",
                settings.flags.display()
            );
            Ok(None)
        }
        Err(CallError::Failed(e)) => Err(e),
    }
}

fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, CliError> {
    serde_json::from_value(v).map_err(|e| CliError::Sidecar(format!("unexpected answer: {e}")))
}

fn table(a: &FlagsAnswer) -> String {
    let mut out = format!("flags from {} (loaded {})\n", a.path, a.loaded_at);
    if let Some(e) = &a.error {
        out.push_str(&format!("error: {e}\n"));
        if !a.flags.is_empty() {
            out.push_str("  (serving the last good flags)\n");
        }
    }
    if a.flags.is_empty() {
        out.push_str("no flags: every flag is off\n");
        return out;
    }
    let width = a.flags.keys().map(String::len).max().unwrap_or(4).max(4);
    out.push_str(&format!("{:width$}  STATE  ROLLOUT  OWNER\n", "FLAG"));
    for (name, f) in &a.flags {
        out.push_str(&format!(
            "{name:width$}  {:5}  {:>6}%  {}{}\n",
            if f.enabled { "on" } else { "off" },
            f.rollout_percent,
            f.owner,
            if f.overridden_by.is_some() {
                "  (overridden by env)"
            } else {
                ""
            }
        ));
    }
    out
}
