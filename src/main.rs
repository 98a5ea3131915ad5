//! The `guidebook` binary: parses the command line, sets up tracing, and hands over to the
//! library's CLI.

use std::process::ExitCode;

use clap::Parser;

use adaptive_guidebook::cli::{self, Cli, Command, LogFormat};
use adaptive_guidebook::watched::FILE_ERRORS;

fn main() -> ExitCode {
    quiet_broken_pipe();
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
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // These print every file error themselves, one line each; the log line the loader writes
    // for the daemon would show each twice.
    if matches!(
        cli.command,
        Command::Check { .. } | Command::Test { .. } | Command::Doctor
    ) {
        let off = format!("{FILE_ERRORS}=off");
        filter = filter.add_directive(off.parse().expect("a target is a valid directive"));
    }
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

/// Output cut short by its reader (`guidebook prompt … | head`) ends the process quietly with
/// status 0, as other Unix tools end. Rust ignores SIGPIPE, so `println!` panics on EPIPE
/// instead; SIGPIPE is not restored, because it would also kill the daemon, or the CLI
/// mid-request, when a socket peer goes away. Any other panic is reported as before.
fn quiet_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let broken_pipe = format!("(os error {})", libc::EPIPE);
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.ends_with(&broken_pipe) {
            std::process::exit(0);
        }
        report(info)
    }));
}
