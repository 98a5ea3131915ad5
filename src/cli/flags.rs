//! `guidebook flags list|get|set|init`: reads and changes feature flags. Writes: the flags file.
//!
//! Asks the running sidecar (so its environment overrides show); when none runs, works on the
//! flags file directly through the same domain code ([`Flags`]).

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use guidebook_hook::protocol::{method, no_params, Call, IsEnabled, SetFlag};
use serde::de::DeserializeOwned;

use super::client::{self, Reply};
use super::{CliError, UsageError};
use crate::config::Settings;
use crate::flags::{Flags, HOOKS_ENABLED, PROGRESSIVE_DISCLOSURE};
use crate::rpc::get_flags::{FlagState, FlagsAnswer};

#[derive(Debug, Subcommand)]
pub enum FlagsCommand {
    /// Every flag as served, with the file's error if it has one.
    List {
        /// Print the raw `getFlags` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Whether FLAG is on (for KEY, when its rollout is below 100 %): prints true or false. A
    /// name neither the flags file nor the product knows is an error naming the known ones.
    Get {
        flag: String,
        /// The rollout key, usually a session id.
        #[arg(long)]
        key: Option<String>,
    },
    /// Change FLAG (created, off, if the file lacks it: the output then says it is new) and
    /// rewrite the file atomically.
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
            let answer: FlagsAnswer = match ask(settings, &no_params(method::GET_FLAGS))? {
                Some(answer) => answer,
                None => Flags::open(settings.flags.clone()).report().into(),
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
            // A misspelt name would read as off, exit 0, and a script would never notice.
            let local = match ask::<FlagsAnswer>(settings, &no_params(method::GET_FLAGS))? {
                Some(answer) => {
                    known(&flag, &answer)?;
                    None
                }
                None => {
                    let flags = Flags::open(settings.flags.clone());
                    known(&flag, &flags.report().into())?;
                    Some(flags)
                }
            };
            let call = IsEnabled {
                flag: flag.clone(),
                key: key.clone(),
            }
            .call();
            let on = match local {
                Some(flags) => flags.is_enabled(&flag, key.as_deref()),
                None => match ask(settings, &call)? {
                    Some(on) => on,
                    None => Flags::open(settings.flags.clone()).is_enabled(&flag, key.as_deref()),
                },
            };
            println!("{on}");
            Ok(ExitCode::SUCCESS)
        }
        FlagsCommand::Set {
            flag,
            enabled,
            rollout,
        } => {
            if enabled.is_none() && rollout.is_none() {
                return Err(UsageError::NothingToSet.into());
            }
            // Setting a name the file lacks is how a team adds a flag, so it is not refused;
            // but it is said, so that a misspelt name is noticed (and can be removed again).
            let running = ask::<FlagsAnswer>(settings, &no_params(method::GET_FLAGS))?;
            let before = match &running {
                Some(answer) => known(&flag, answer),
                None => known(&flag, &Flags::open(settings.flags.clone()).report().into()),
            };
            let call = SetFlag {
                flag: flag.clone(),
                enabled,
                rollout_percent: rollout,
            }
            .call();
            let answer = match running {
                Some(_) => ask(settings, &call)?,
                None => None,
            };
            let state: FlagState = match answer {
                Some(state) => state,
                None => {
                    // clap keeps --rollout within 0..=100.
                    let rollout = rollout.map(|p| p.min(100) as u8);
                    let flags = Flags::open(settings.flags.clone());
                    flags
                        .set(&flag, enabled, rollout, &crate::flags::updated_by())?
                        .into()
                }
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
            if let Err(UsageError::UnknownFlag { known, .. }) = before {
                println!("{flag} is a new flag (the flags known before: {known})");
            }
            Ok(ExitCode::SUCCESS)
        }
        FlagsCommand::Init => {
            let path = &settings.flags;
            if std::fs::symlink_metadata(path).is_ok() {
                println!("{} exists; left as it is", path.display());
                return Ok(ExitCode::SUCCESS);
            }
            let sample = crate::sample::SAMPLE_FILES
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
fn ask<T: DeserializeOwned>(settings: &Settings, call: &Call) -> Result<Option<T>, CliError> {
    match client::ask(settings, call, TIMEOUT)? {
        Reply::Answer(answer) => Ok(Some(answer)),
        Reply::NotRunning(why) => {
            eprintln!(
                "guidebook: {why}; using {} directly",
                settings.flags.display()
            );
            Ok(None)
        }
    }
}

/// Whether `flag` is one `flags get` can answer for: a flag served (the file's, or one the
/// environment overrides) or one the product itself reads (off until the file names it).
fn known(flag: &str, served: &FlagsAnswer) -> Result<(), UsageError> {
    let mut names: Vec<&str> = served.flags.keys().map(String::as_str).collect();
    names.extend([HOOKS_ENABLED, PROGRESSIVE_DISCLOSURE]);
    names.sort_unstable();
    names.dedup();
    if names.contains(&flag) {
        return Ok(());
    }
    Err(UsageError::UnknownFlag {
        given: flag.to_string(),
        known: names.join(", "),
    })
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
