//! The `guidebook` binary: parses the command line, sets up tracing, and hands over to the
//! library's CLI.

use std::process::ExitCode;

use clap::Parser;

use adaptive_guidebook::cli::{self, Cli, Command, LogFormat};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let format = match &cli.command {
        Command::Serve { log_format } => *log_format,
        _ => LogFormat::Text,
    };
    // The daemon logs at info by default; one-shot commands only warn, so their output stays
    // clean. RUST_LOG overrides both.
    let default = if matches!(cli.command, Command::Serve { .. }) {
        "info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a terminal: a daemon started by a hook logs to a file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("guidebook: error: {e}");
            ExitCode::FAILURE
        }
    }
}
