//! `guidebook breaker status|reset --session ID`: a session's circuit-breaker state, and the
//! reset that lets a halted agent go on. Asks the running sidecar; when none runs, works on the
//! database directly with the same code. Writes: the breaker tables (`reset`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use guidebook_hook::protocol::{Call, SessionCall};
use serde::de::DeserializeOwned;

use super::client::{self, Reply};
use super::CliError;
use crate::breaker::Breaker;
use crate::config::Settings;
use crate::rpc::record_error::BreakerAnswer;
use crate::rpc::reset_breaker::ResetAnswer;
use crate::store::{BreakerStore, Database};

#[derive(Debug, Subcommand)]
pub enum BreakerCommand {
    /// The session's state: continue, warning or halt, its error total, and what tripped it.
    Status {
        #[arg(long, value_name = "ID")]
        session: String,
        /// Print the raw `breakerStatus` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget the session's breaker state (halt, streaks, totals) so the agent may go on.
    Reset {
        #[arg(long, value_name = "ID")]
        session: String,
    },
}

const TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(settings: &Settings, command: BreakerCommand) -> Result<ExitCode, CliError> {
    match command {
        BreakerCommand::Status { session, json } => {
            let asked = ask(settings, &SessionCall::breaker_status(&session).call())?;
            let answer: BreakerAnswer = match asked {
                Some(answer) => answer,
                None => in_process(settings)?.status(&session)?.into(),
            };
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&answer).unwrap_or_default()
                );
            } else {
                print!("{}", describe(&session, &answer));
            }
            Ok(ExitCode::SUCCESS)
        }
        BreakerCommand::Reset { session } => {
            let asked = ask::<ResetAnswer>(settings, &SessionCall::reset_breaker(&session).call())?;
            let reset = match asked {
                Some(answer) => answer.reset,
                None => in_process(settings)?.reset(&session)?,
            };
            if reset {
                println!("breaker reset for session {session}");
            } else {
                println!("session {session} had no breaker state; nothing to reset");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The answer as a few aligned lines.
fn describe(session: &str, a: &BreakerAnswer) -> String {
    let mut out = format!(
        "session  {session}\nstate    {}\nerrors   {}\n",
        a.state, a.total_errors
    );
    if let Some(t) = &a.tripped_by {
        out.push_str(&format!(
            "tripped  {} {} in {} ({} runs in a row)\n",
            t.tool, t.code, t.file, t.streak
        ));
    }
    if let Some(reason) = &a.reason {
        out.push_str(&format!("reason   {reason}\n"));
    }
    out
}

/// The breaker over the database itself, for when no sidecar runs.
fn in_process(settings: &Settings) -> Result<Breaker, CliError> {
    let db = Database::open(
        &settings.db,
        Duration::from_millis(settings.busy_timeout_ms),
    )?;
    Ok(Breaker::new(BreakerStore::new(db), settings.breaker))
}

/// The sidecar's answer, or `None` when no sidecar runs (the caller then works in-process).
fn ask<T: DeserializeOwned>(settings: &Settings, call: &Call) -> Result<Option<T>, CliError> {
    match client::ask(settings, call, TIMEOUT)? {
        Reply::Answer(answer) => Ok(Some(answer)),
        Reply::NotRunning(why) => {
            eprintln!("guidebook: {why}; using {} directly", settings.db.display());
            Ok(None)
        }
    }
}
