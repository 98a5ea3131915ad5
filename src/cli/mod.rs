//! The `guidebook` command line: flags shared by every subcommand, one file per subcommand,
//! and the error type they return. `main` only parses, sets up tracing and calls [`run`].

mod breaker;
mod check;
mod client;
mod doctor;
mod explain;
mod export;
mod flags;
mod hooks;
mod import;
mod mcp;
mod metrics;
mod new;
mod prompt;
mod report;
mod review;
mod scan;
mod search;
mod serve;
mod service;
mod status;
mod test;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::config::{ConfigError, Overrides, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "guidebook",
    version,
    about = "Adaptive Guidebook: team guidelines for coding agents at the moment of change"
)]
pub struct Cli {
    /// The sidecar's Unix socket [env: ADAPTIVE_GUIDEBOOK_SOCKET]
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The SQLite database [env: ADAPTIVE_GUIDEBOOK_DB]
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// The guidebook root holding guideline.yaml files [env: ADAPTIVE_GUIDEBOOK_ROOT]
    #[arg(long, global = true, value_name = "DIR")]
    pub guidebook_root: Option<PathBuf>,
    /// The feature flags file [env: ADAPTIVE_GUIDEBOOK_FLAGS]
    #[arg(long, global = true, value_name = "PATH")]
    pub flags: Option<PathBuf>,
    /// The config file [env: ADAPTIVE_GUIDEBOOK_CONFIG]
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The metrics directory [env: ADAPTIVE_GUIDEBOOK_METRICS_DIR]
    #[arg(long, global = true, value_name = "DIR")]
    pub metrics_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the sidecar in the foreground until SIGTERM or SIGINT.
    Serve {
        /// Log format on stderr.
        #[arg(long, value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
    },
    /// Validate every guideline.yaml and prompt pack under DIR (default: the guidebook root) and run the guidelines' examples; exit 1 on any error.
    Check { dir: Option<PathBuf> },
    /// Run every guideline's examples under DIR (default: the guidebook root): one line per
    /// example that does not come out as written; exit 1 on any.
    Test {
        dir: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run every guideline against every file of REPO (walked as ripgrep walks it) and show
    /// which fire where, noisiest first. Records nothing.
    Scan {
        #[arg(value_name = "REPO")]
        repo: PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Review a git diff's changed files with the guidelines, as the edit hook would: a pull
    /// request (--base), the commit about to be made (--staged) or the working tree. Exit 1
    /// when a `block` guideline fires, 2 when the review cannot be made.
    Review {
        /// Compare from the merge base of REV and --head to --head, as a pull request shows
        /// it (e.g. origin/main); the files are read from --head, not the working tree.
        #[arg(long, value_name = "REV", conflicts_with = "staged")]
        base: Option<String>,
        /// The pull request's head commit (default: HEAD); needs --base.
        #[arg(long, value_name = "REV", requires = "base")]
        head: Option<String>,
        /// Review the index against HEAD: the commit about to be made.
        #[arg(long)]
        staged: bool,
        /// text (path:line: id [severity] message), json, or sarif (SARIF 2.1.0).
        #[arg(long, value_enum, default_value_t = review::ReviewFormat::Text)]
        format: review::ReviewFormat,
        /// A directory of the repository to review (default: the current directory).
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
    },
    /// Write a new guideline skeleton (with examples) under the guidebook root.
    New {
        /// The guideline's id (lowercase kebab-case); also its directory's name.
        id: String,
        /// The language it applies to (kotlin, java, python, ...).
        #[arg(long, value_name = "L")]
        language: Option<String>,
    },
    /// Show which guidelines apply to and match FILEs, and why. Records nothing.
    Explain {
        /// Also show whether each guideline was already presented in this session.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Print the raw `explain` result as JSON.
        #[arg(long)]
        json: bool,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Run one `search` in this process, without a sidecar: load the guidebook, open the
    /// database, read the files, record and print what a hook would be shown (JSON).
    Search {
        #[arg(long, value_name = "ID")]
        session: String,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Read and change feature flags (feature_flags.json).
    Flags {
        #[command(subcommand)]
        command: flags::FlagsCommand,
    },
    /// Install, remove or inspect the systemd user units / launchd agent that run the sidecar.
    #[command(subcommand)]
    Service(service::ServiceCommand),
    /// Configure the hooks of Codex, Claude Code, Gemini CLI, GitHub Copilot CLI and OpenCode to run
    /// guidebook-hook.
    Hooks {
        #[command(subcommand)]
        command: hooks::HooksCommand,
    },
    /// Check the whole chain: binaries, sidecar, agents' hooks, guidebook, database, flags.
    Doctor,
    /// Build a prompt from the guidebook's prompt packs in this process and print it. The phase
    /// is shown as asked, whatever the progressive_disclosure flag says.
    Prompt {
        /// The prompt pack (`prompts/<role>.yaml`).
        #[arg(long, default_value = "default")]
        role: String,
        /// summary, standard or full.
        #[arg(long, default_value = "full")]
        phase: String,
        /// The task text.
        #[arg(long)]
        task: String,
        /// A JSON object shown in the full phase.
        #[arg(long, value_name = "JSON")]
        context: Option<String>,
        /// Print the tokens of each section instead of the prompt.
        #[arg(long)]
        stats: bool,
    },
    /// A session's circuit-breaker state, or reset it so a halted agent may go on.
    Breaker {
        #[command(subcommand)]
        command: breaker::BreakerCommand,
    },
    /// Serve MCP on stdio (one process per agent session): the `hook` tool for the agents'
    /// `mcp_tool` hooks, and guideline, prompt and breaker tools for agents to call.
    Mcp {
        /// Also offer the orchestrator's tools (record_qc_result, record_qc_review,
        /// record_session_tokens, ab_assign). Never in an agent's MCP config: the model being
        /// measured must not write its own measurements.
        #[arg(long)]
        orchestrator: bool,
    },
    /// The rollout's measurements: baseline, weekly files and their trend picture.
    Metrics {
        #[command(subcommand)]
        command: metrics::MetricsCommand,
    },
    /// Per-guideline adherence (fires, presentations followed, repeated or corrected, the
    /// hold-out test) as one self-contained HTML page.
    Report {
        /// Count only what was recorded on or after DATE (YYYY-MM-DD, UTC).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// Where to write the page (default: METRICS_DIR/adherence.html).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Print the numbers as JSON (the page is written only with --out).
        #[arg(long)]
        json: bool,
        /// The team's report: every sidecar's pushed counters summed from the Prometheus-compatible
        /// query API at URL (e.g. http://prometheus:9090), with teamMetrics' credentials and CA file.
        #[arg(long, value_name = "URL")]
        team: Option<String>,
        /// With --team: only series with this label (repeatable), e.g. --label team=payments.
        #[arg(long = "label", value_name = "NAME=VALUE", requires = "team")]
        labels: Vec<String>,
    },
    /// The haiku A/B test of the QC model.
    Ab {
        #[command(subcommand)]
        command: metrics::AbCommand,
    },
    /// Show a repository's rule files exactly as they are (hidden characters made visible) and
    /// trust them: the sidecar serves a repository's rules only while they are what was trusted.
    Trust(trust::TrustArgs),
    /// Stop trusting a repository's rule files.
    Untrust(trust::UntrustArgs),
    /// Write the guidebook in an agent's native rule format, for hosts no hook reaches; report
    /// what the format cannot express.
    Export(export::ExportArgs),
    /// Turn a repository's native rule files into guideline.yaml files.
    Import(import::ImportArgs),
    /// Show the running sidecar's status.
    Status {
        /// Print the raw `status` result as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// What a subcommand can fail with. Each variant's text is printed as is.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Serve(#[from] crate::server::StartError),
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        source: std::io::Error,
    },
    /// The running sidecar could not answer, or answered with an error.
    #[error(transparent)]
    Sidecar(#[from] client::SidecarError),
    /// A search in this process failed (no sidecar involved).
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    /// A flag change refused in this process (no sidecar involved).
    #[error(transparent)]
    Flags(#[from] crate::flags::FlagsError),
    /// An agent's hook configuration that cannot be edited.
    #[error("{}{}{source}; nothing was changed", path.display(), separator(source))]
    HookConfig {
        path: PathBuf,
        source: hooks::EditError,
    },
    /// A command this one runs (`systemctl`, `launchctl`) failed.
    #[error("`{command}` failed ({status})")]
    Command {
        command: String,
        status: std::process::ExitStatus,
    },
    /// A metrics file or the metrics directory.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    /// `guidebook mcp` could not serve.
    #[error(transparent)]
    Mcp(#[from] crate::mcp::McpError),
    /// Arguments that cannot be carried out as given.
    #[error(transparent)]
    Usage(#[from] UsageError),
}

/// A syntax error starts with its line and column, which read as part of the path.
fn separator(e: &hooks::EditError) -> &'static str {
    match e {
        hooks::EditError::Syntax { .. } => ":",
        _ => ": ",
    }
}

/// Arguments that cannot be carried out as given; each text says why and what to do.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("--print shows one file: give --codex or --claude, not both")]
    PrintOneFile,
    #[error("HOME is not set: give --project DIR")]
    NoHomeForHooks,
    #[error("HOME is not set to an absolute path; cannot tell where to install")]
    NoHomeForService,
    #[error("Invalid disclosure_phase `{given}`: expected one of {expected}")]
    Phase { given: String, expected: String },
    #[error("--context must be a JSON object")]
    ContextNotObject,
    #[error("--context is not JSON: {0}")]
    ContextNotJson(serde_json::Error),
    #[error("unknown role {role:?}; known roles: {known}")]
    UnknownRole { role: String, known: String },
    #[error("give --enabled and/or --rollout: there is nothing to set")]
    NothingToSet,
    #[error("`{0}` is not a guideline id: use lowercase letters, digits and `-` (at most 128)")]
    GuidelineId(String),
    #[error("unknown language `{given}`; known languages: {known}")]
    Language { given: String, known: String },
    #[error("the id `{id}` is already used by {}", path.display())]
    IdTaken { id: String, path: PathBuf },
    #[error("{0} runs command hooks only: install without --mcp")]
    NoMcpHooks(&'static str),
    #[error(
        "unknown flag `{given}`; known flags: {known} (`guidebook flags set {given} --enabled \
         false` adds it)"
    )]
    UnknownFlag { given: String, known: String },
}

/// FILE arguments as the absolute paths the sidecar requires, resolved against the current
/// directory.
fn absolute_paths(files: Vec<PathBuf>) -> Result<Vec<String>, CliError> {
    let cwd = std::env::current_dir().map_err(|source| CliError::Io {
        doing: "reading the current directory".into(),
        source,
    })?;
    Ok(files
        .into_iter()
        .map(|f| cwd.join(f).display().to_string())
        .collect())
}

impl Cli {
    fn overrides(&self) -> Overrides {
        Overrides {
            socket: self.socket.clone(),
            db: self.db.clone(),
            guidebook_root: self.guidebook_root.clone(),
            flags: self.flags.clone(),
            config: self.config.clone(),
            metrics_dir: self.metrics_dir.clone(),
        }
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, CliError> {
    // Editing the agents' settings needs none of the sidecar's, nor a valid config.yaml.
    if let Command::Hooks { command } = cli.command {
        return hooks::run(command);
    }
    // The doctor reports settings that do not resolve instead of stopping at them.
    if let Command::Doctor = cli.command {
        return Ok(doctor::run(Settings::resolve(&cli.overrides())));
    }
    let settings = Settings::resolve(&cli.overrides())?;
    match cli.command {
        Command::Serve { .. } => serve::run(settings),
        Command::Check { dir } => Ok(check::run(&settings, dir)),
        Command::Test { dir, json } => Ok(test::run(&settings, dir, json)),
        Command::Scan { repo, json } => scan::run(&settings, repo, json),
        Command::Review {
            base,
            head,
            staged,
            format,
            repo,
        } => review::run(
            &settings,
            review::ReviewArgs {
                base,
                head,
                staged,
                format,
                repo,
            },
        ),
        Command::New { id, language } => new::run(&settings, &id, language.as_deref()),
        Command::Explain {
            session,
            json,
            files,
        } => explain::run(&settings, session, json, files),
        Command::Search { session, files } => search::run(&settings, session, files),
        Command::Status { json } => status::run(&settings, json),
        Command::Flags { command } => flags::run(&settings, command),
        Command::Service(command) => service::run(&settings, command),
        Command::Hooks { .. } | Command::Doctor => unreachable!("handled before the settings"),
        Command::Prompt {
            role,
            phase,
            task,
            context,
            stats,
        } => prompt::run(
            &settings,
            prompt::PromptArgs {
                role,
                phase,
                task,
                context,
                stats,
            },
        ),
        Command::Breaker { command } => breaker::run(&settings, command),
        Command::Mcp { orchestrator } => mcp::run(&settings, orchestrator),
        Command::Metrics { command } => metrics::run(&settings, command),
        Command::Ab { command } => metrics::run_ab(&settings, command),
        Command::Report {
            since,
            out,
            json,
            team,
            labels,
        } => report::run(&settings, since, out, json, team.map(|url| (url, labels))),
        Command::Trust(args) => trust::run(&settings, args),
        Command::Untrust(args) => trust::run_untrust(&settings, args),
        Command::Export(args) => export::run(&settings, args),
        Command::Import(args) => import::run(&settings, args),
    }
}
