//! `guidebook hooks install|uninstall`: our hook entries in (or out of) the agents' settings.
//!
//! `--codex|--claude|--gemini|--copilot|--opencode [--mcp] [--trust] [--project DIR]
//! [--print]`: Codex's `hooks.json`, Claude Code's and Gemini CLI's `settings.json`, GitHub
//! Copilot CLI's `hooks/guidebook.json`, our OpenCode plugin ([`opencode`]); with `--mcp`, `mcp_tool` hooks
//! and our MCP server in Codex's `config.toml` or Claude Code's `~/.claude.json` / `.mcp.json`;
//! with `--trust`, Codex's trust records for exactly the handlers this run wrote, in the user's
//! `config.toml`. Reads: those files, the environment (`HOME`, `CODEX_HOME`,
//! `CLAUDE_CONFIG_DIR`, `GEMINI_CLI_HOME`, `COPILOT_HOME`, `XDG_CONFIG_HOME`, `PATH`). Writes: those files, atomically, each
//! after a new timestamped backup beside it (the last five kept).
//!
//! One run is one transaction as far as files allow: every file is read, checked and edited
//! in memory before the first is written, so a malformed `config.toml` leaves `hooks.json`
//! untouched; Codex's trust records are written last, once `hooks.json` reads back as written.
//! In a project, no link below the project's directory is followed; in the user's own scope,
//! the user's links (dotfiles) are resolved and the resolved path is printed ([`files`]).
//!
//! - [`host`]: each host's events, matchers and templates, and which handlers are ours;
//! - [`json_tree`]: the text-preserving JSON editor (duplicate keys refused, comments read);
//! - [`edit`]: our entries merged in and out of the JSON settings, and where they landed;
//! - [`codex_toml`]: our MCP server in Codex's `config.toml`;
//! - [`codex_trust`]: Codex's trust records, computed from what this run wrote;
//! - [`files`]: where the files are, read and written without following a planted link;
//! - [`plugin`]: our Claude Code plugin and Gemini CLI extension, as the agents installed them;
//! - [`gemini_policy`]: our Gemini CLI policy file, deny rules for the control commands;
//! - [`marked`]: a file wholly ours, known by its first line (those two).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgGroup, Args, Subcommand};

use super::{CliError, UsageError};
mod codex_toml;
pub mod codex_trust;
mod edit;
mod files;
pub mod gemini_policy;
mod host;
mod json_tree;
mod marked;
pub mod opencode;
pub mod plugin;

pub use codex_toml::{install_codex_mcp_server, TableOwner};
use edit::trust_copilot_folder;
pub use edit::{install_mcp_server, installed};
use edit::{install_placed, uninstall_from, Placed};
use files::{FileError, Located, Scope, Snapshot};
pub(crate) use host::HostHooks;
pub use host::{program, Host, Wiring, HOOK_PROGRAM};
pub use json_tree::EditError;

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Add guidebook-hook to the agents' hook configuration (again: replaces ours, adds none).
    Install {
        #[command(flatten)]
        target: Target,
        /// The command the hooks run [default: the guidebook-hook next to this binary, else
        /// the one on PATH]
        #[arg(long, value_name = "CMD", conflicts_with = "mcp")]
        hook_command: Option<String>,
        /// Wire the hooks as `mcp_tool` calls on `guidebook mcp` (no process per hook) instead
        /// of commands, and register that MCP server: Codex's config.toml, Claude Code's
        /// ~/.claude.json (or DIR/.mcp.json with --project).
        #[arg(long)]
        mcp: bool,
        /// Codex: also write Codex's trust records for exactly these hooks into its config.toml,
        /// so that it runs them without a review in /hooks (either wiring). Copilot CLI with
        /// --project: also add DIR to trustedFolders in its config.json, so that it runs the
        /// repository's hooks in prompt mode (-p).
        #[arg(long)]
        trust: bool,
    },
    /// Remove every guidebook-hook entry from the agents' hook configuration.
    Uninstall {
        #[command(flatten)]
        target: Target,
    },
}

/// Which files to edit, and whether to only show the result.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("host").required(true).multiple(true).args(["codex", "claude", "gemini", "copilot", "opencode"])))]
pub struct Target {
    /// Codex: ~/.codex/hooks.json ($CODEX_HOME/hooks.json), or DIR/.codex/hooks.json
    #[arg(long)]
    codex: bool,
    /// Claude Code: ~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json), or
    /// DIR/.claude/settings.json
    #[arg(long)]
    claude: bool,
    /// Gemini CLI: ~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json), or
    /// DIR/.gemini/settings.json (command hooks only: no --mcp)
    #[arg(long)]
    gemini: bool,
    /// GitHub Copilot CLI: ~/.copilot/hooks/guidebook.json ($COPILOT_HOME/hooks/), or
    /// DIR/.github/hooks/guidebook.json (command hooks only: no --mcp)
    #[arg(long)]
    copilot: bool,
    /// OpenCode: our plugin ~/.config/opencode/plugin/adaptive-guidebook.js
    /// ($XDG_CONFIG_HOME/opencode/plugin/), or DIR/.opencode/plugin/adaptive-guidebook.js
    /// (no --mcp)
    #[arg(long)]
    opencode: bool,
    /// Configure the project in DIR instead of the user's own settings.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the resulting file to stdout and write nothing (one host at a time).
    #[arg(long)]
    print: bool,
}

impl Target {
    fn hosts(&self) -> Vec<Host> {
        let mut hosts = Vec::new();
        if self.codex {
            hosts.push(Host::Codex);
        }
        if self.claude {
            hosts.push(Host::ClaudeCode);
        }
        if self.gemini {
            hosts.push(Host::GeminiCli);
        }
        if self.copilot {
            hosts.push(Host::CopilotCli);
        }
        if self.opencode {
            hosts.push(Host::OpenCode);
        }
        hosts
    }
}

pub fn run(command: HooksCommand) -> Result<ExitCode, CliError> {
    let (target, wiring, trust_asked) = match command {
        HooksCommand::Install {
            target,
            hook_command,
            mcp,
            trust,
        } => {
            let wiring = match (mcp, hook_command) {
                (true, _) => Wiring::Mcp,
                (false, Some(c)) => Wiring::Command(c),
                (false, None) => Wiring::Command(default_hook_command()),
            };
            (target, Some(wiring), trust)
        }
        HooksCommand::Uninstall { target } => (target, None, false),
    };
    let hosts = target.hosts();
    if target.print && hosts.len() > 1 {
        return Err(UsageError::PrintOneFile.into());
    }
    if wiring == Some(Wiring::Mcp) {
        for host in [Host::GeminiCli, Host::CopilotCli, Host::OpenCode] {
            if hosts.contains(&host) {
                return Err(UsageError::NoMcpHooks(host.name()).into());
            }
        }
    }
    let project = target.project.as_deref().map(project_dir).transpose()?;
    let scope = match &project {
        Some(dir) => Scope::Project(dir.clone()),
        None => Scope::User,
    };
    // Every file is read and edited in memory first; only then is any written.
    let mut plan = Plan::default();
    for host in hosts {
        let path = config_file(host, project.as_deref())?;
        let hooks = match host {
            Host::CopilotCli | Host::OpenCode => plan.open_ours(host, &path, &scope)?,
            Host::Codex | Host::ClaudeCode | Host::GeminiCli => plan.open(host, &path, &scope)?,
        };
        if host == Host::OpenCode {
            match &wiring {
                Some(Wiring::Command(command)) => {
                    plan.edit(hooks, "plugin written to", |text| {
                        opencode::install(text, command, host.hook_timeout()).map(|t| (t, ()))
                    })?;
                }
                Some(Wiring::Mcp) => unreachable!("refused above"),
                None => {
                    if !plan.original(hooks).is_empty() && !opencode::is_ours(plan.original(hooks))
                    {
                        plan.note(format!(
                            "OpenCode: {} is not our plugin: left alone",
                            path.display()
                        ));
                    }
                    plan.edit(hooks, "plugin removed:", |text| {
                        Ok((opencode::uninstall(text), ()))
                    })?;
                }
            }
            continue;
        }
        let Some(wiring) = &wiring else {
            // Our handlers' trust records go with them.
            let untrust_keys: Vec<String> = match host {
                Host::Codex => codex_trust::our_handlers(&path, plan.original(hooks))
                    .map(|ours| ours.into_iter().map(|o| o.key).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            plan.edit(hooks, "hooks removed from", |text| {
                uninstall_from(text, host.dialect()).map(|t| (t, ()))
            })?;
            if host == Host::GeminiCli {
                let policy =
                    plan.open_ours(host, &gemini_policy_file(project.as_deref())?, &scope)?;
                plan.edit(policy, "policy removed:", |text| {
                    Ok((gemini_policy::uninstall(text), ()))
                })?;
            }
            let config = codex_config_file()?;
            if !untrust_keys.is_empty() && config.exists() && !target.print {
                let config = plan.open(Host::Codex, &config, &Scope::User)?;
                plan.edit(
                    config,
                    "Codex trust records of our hooks removed from",
                    |text| codex_trust::untrust(text, &untrust_keys).map(|t| (t, ())),
                )?;
            }
            continue;
        };
        let before = plan.original(hooks).to_string();
        let installed = plan.edit(hooks, "hooks installed in", |text| {
            install_placed(text, host, wiring).map(|i| (i.text.clone(), i))
        })?;
        if host == Host::GeminiCli {
            let policy = plan.open_ours(host, &gemini_policy_file(project.as_deref())?, &scope)?;
            plan.edit(policy, "policy written to", |text| {
                gemini_policy::install(text).map(|t| (t, ()))
            })?;
        }
        for kept in &installed.kept {
            plan.note(format!(
                "{}: kept your matcher `{}` on {} in {} (ours: `{}`)",
                host.name(),
                kept.theirs,
                kept.event,
                path.display(),
                kept.ours
            ));
        }
        if host == Host::Codex && trust_asked {
            let ours = codex_trust::records(&path, &installed.placed);
            // Records this install moved our handlers away from.
            let stale: Vec<String> = codex_trust::our_handlers(&path, &before)
                .map(|old| old.into_iter().map(|o| o.key).collect())
                .unwrap_or_default();
            let config = plan.open(Host::Codex, &codex_config_file()?, &Scope::User)?;
            plan.edit(config, "Codex trust records for our hooks set in", |text| {
                codex_trust::trust(text, &ours, &stale).map(|t| (t, ()))
            })?;
            // The records are written only once the hooks file reads back as written.
            plan.verify(hooks, installed.placed.clone(), config);
        } else if host == Host::Codex && !target.print {
            plan.note(
                "Codex runs these hooks only once they are trusted: open `codex`, review them \
                 in /hooks, or run `guidebook hooks install --codex --trust`"
                    .to_string(),
            );
        }
        if let (Host::CopilotCli, Some(dir)) = (host, &project) {
            let folder = dir.display().to_string();
            if trust_asked {
                let config = plan.open(host, &copilot_config_file()?, &Scope::User)?;
                plan.edit(config, "project folder trusted in", |text| {
                    trust_copilot_folder(text, &folder).map(|t| (t, ()))
                })?;
            } else if !target.print {
                plan.note(format!(
                    "GitHub Copilot CLI runs a repository's hooks only in a folder it trusts: \
                     answer its folder-trust question when it starts in {folder}, run it there \
                     with --trust-folder, or run `guidebook hooks install --copilot --project \
                     {folder} --trust` (adds it to trustedFolders in {})",
                    copilot_config_file()?.display()
                ));
            }
        }
        if *wiring == Wiring::Mcp {
            let server_path = mcp_server_file(host, project.as_deref())?;
            let command = mcp_server_command()?;
            let env = mcp_server_env();
            let server = plan.open(host, &server_path, &scope)?;
            // In a project, our entry is rewritten whole: a key the repository put on it would
            // shape the server that the `mcp_tool` hooks (trusted, with `--trust`) call.
            let owner = match &scope {
                Scope::Project(_) => TableOwner::Project,
                Scope::User => TableOwner::User,
            };
            plan.edit(server, "MCP server `guidebook` set in", |original| {
                match host {
                    Host::Codex => install_codex_mcp_server(original, &command, &env, owner),
                    Host::ClaudeCode | Host::GeminiCli | Host::CopilotCli | Host::OpenCode => {
                        install_mcp_server(original, &command, &env)
                    }
                }
                .map(|t| (t, ()))
            })?;
        }
    }
    if target.print {
        plan.print();
    } else {
        plan.write()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--project DIR` as an absolute path, canonical as far as it exists: Codex keys its trust
/// records by the canonical path of the project's `hooks.json`, and a link in DIR itself is
/// the user's own choice of name (the links refused are those below it).
fn project_dir(dir: &Path) -> Result<PathBuf, CliError> {
    let absolute = std::path::absolute(dir).map_err(|source| CliError::Io {
        doing: format!("making {} absolute", dir.display()),
        source,
    })?;
    Ok(canonical_prefix(&absolute))
}

/// `path` with its longest existing ancestor canonicalised and the rest appended as written
/// (`..` and `.` in the rest resolved lexically).
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    part => out.push(part),
                }
            }
            return out;
        }
        match (at.parent(), at.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The files one run edits, each read once and edited in memory, in the order first opened;
/// written only once every edit has succeeded.
#[derive(Default)]
struct Plan {
    files: Vec<PlannedFile>,
    notes: Vec<String>,
    /// A hooks file to read back after writing, the handlers that must be in it, and the file
    /// (the trust records) written only if they are.
    checks: Vec<(usize, Vec<Placed>, usize)>,
}

struct PlannedFile {
    host: Host,
    located: Located,
    before: Snapshot,
    text: String,
    verbs: Vec<&'static str>,
    /// A file only we write (Copilot CLI's hooks file of ours, our OpenCode plugin, our Gemini
    /// CLI policy file): removed, not written, once nothing of ours is left in it.
    ours: bool,
}

impl Plan {
    /// The file at `path`, read now (once per run: a second edit of it starts from the first's
    /// result), by `scope`'s rule.
    fn open(&mut self, host: Host, path: &Path, scope: &Scope) -> Result<usize, CliError> {
        let refused = |source: FileError| CliError::HookConfig {
            path: path.to_path_buf(),
            source: EditError::File(source),
        };
        let located = files::locate(path, scope).map_err(refused)?;
        if let Some(i) = self
            .files
            .iter()
            .position(|f| f.located.real == located.real)
        {
            return Ok(i);
        }
        let before = files::read(&located).map_err(refused)?;
        self.files.push(PlannedFile {
            host,
            text: before.text.clone(),
            located,
            before,
            verbs: Vec::new(),
            ours: false,
        });
        Ok(self.files.len() - 1)
    }

    /// [`Plan::open`] for a file only we write.
    fn open_ours(&mut self, host: Host, path: &Path, scope: &Scope) -> Result<usize, CliError> {
        let i = self.open(host, path, scope)?;
        self.files[i].ours = true;
        Ok(i)
    }

    /// The text of file `i` as it was read.
    fn original(&self, i: usize) -> &str {
        &self.files[i].before.text
    }

    /// Edits file `i` in memory; an edit that fails fails the run before anything is written.
    fn edit<T>(
        &mut self,
        i: usize,
        verb: &'static str,
        edit: impl FnOnce(&str) -> Result<(String, T), EditError>,
    ) -> Result<T, CliError> {
        let file = &mut self.files[i];
        let (text, out) = edit(&file.text).map_err(|source| CliError::HookConfig {
            path: file.located.named.clone(),
            source,
        })?;
        file.text = text;
        file.verbs.push(verb);
        Ok(out)
    }

    fn verify(&mut self, hooks: usize, placed: Vec<Placed>, then: usize) {
        self.checks.push((hooks, placed, then));
    }

    fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// `--print`: each file as it would be, the second and later under a `--- PATH` line.
    fn print(&self) {
        for (i, file) in self.files.iter().enumerate() {
            if i > 0 {
                println!("--- {}", file.located.named.display());
            }
            print!("{}", file.text);
        }
    }

    /// Writes the changed files, saying what was done: the trust records last, once the hooks
    /// file they are for reads back as written.
    fn write(&self) -> Result<(), CliError> {
        let after_check: Vec<usize> = self.checks.iter().map(|c| c.2).collect();
        let mut written = Vec::new();
        for (i, file) in self.files.iter().enumerate() {
            if !after_check.contains(&i) {
                self.write_one(file, &mut written)?;
            }
        }
        for (hooks, placed, _) in &self.checks {
            let file = &self.files[*hooks];
            let read_back = files::read(&file.located)
                .map(|s| s.text)
                .map_err(|e| e.to_string());
            let problem = match read_back {
                Ok(text) if text != file.text => Some(
                    "it is not what was just written (did something else change it?)".to_string(),
                ),
                Ok(text) => codex_trust::check_written(&text, placed).err(),
                Err(e) => Some(e),
            };
            if let Some(problem) = problem {
                return Err(CliError::Io {
                    doing: format!(
                        "reading {} back after writing it (written: {})",
                        file.located.named.display(),
                        shown(&written)
                    ),
                    source: io::Error::other(format!(
                        "{problem}; no Codex trust record was written: run the install again"
                    )),
                });
            }
        }
        for i in after_check {
            self.write_one(&self.files[i], &mut written)?;
        }
        for note in &self.notes {
            println!("{note}");
        }
        Ok(())
    }

    fn write_one(&self, file: &PlannedFile, written: &mut Vec<PathBuf>) -> Result<(), CliError> {
        let named = &file.located.named;
        let name = file.host.name();
        if file.text == file.before.text {
            println!(
                "{name}: up to date, nothing to change in {}",
                named.display()
            );
            return Ok(());
        }
        // A file of ours with nothing of ours left is removed rather than written.
        let removing = file.ours && nothing_of_ours_left(file.host, &file.text);
        let (doing, done) = if removing {
            ("removing", files::remove(&file.located, &file.before))
        } else {
            (
                "writing",
                files::write(&file.located, &file.text, &file.before),
            )
        };
        let backup = done.map_err(|e| CliError::Io {
            doing: format!(
                "{doing} {} (written before it: {})",
                named.display(),
                shown(written)
            ),
            source: io::Error::other(e),
        })?;
        written.push(named.clone());
        for verb in &file.verbs {
            println!("{name}: {verb} {}", named.display());
        }
        if let Some(real) = file.located.resolved().filter(|_| !removing) {
            println!("  {} is a link: wrote {}", named.display(), real.display());
        }
        if let Some(backup) = backup {
            println!("  previous version: {}", backup.display());
        }
        Ok(())
    }
}

/// Whether a file only we write holds nothing of ours any more: empty, or, for Copilot CLI's
/// hooks file, no hook left and no other key.
fn nothing_of_ours_left(host: Host, text: &str) -> bool {
    match host {
        Host::CopilotCli => serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
            v.as_object().is_some_and(|top| {
                top.iter().all(|(key, value)| match key.as_str() {
                    "hooks" => value.as_object().is_some_and(|h| h.is_empty()),
                    "version" => true,
                    _ => false,
                })
            })
        }),
        Host::Codex | Host::ClaudeCode | Host::GeminiCli | Host::OpenCode => text.is_empty(),
    }
}

fn shown(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "none".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where `host` reads MCP servers from: Codex's `config.toml` beside its `hooks.json`; Claude
/// Code's `.mcp.json` in the project, or its user file `~/.claude.json`
/// (`$CLAUDE_CONFIG_DIR/.claude.json`).
pub fn mcp_server_file(host: Host, project: Option<&Path>) -> Result<PathBuf, CliError> {
    match (host, project) {
        (Host::Codex, _) => Ok(config_file(host, project)?.with_file_name("config.toml")),
        (Host::ClaudeCode | Host::GeminiCli | Host::CopilotCli | Host::OpenCode, Some(project)) => {
            Ok(project.join(".mcp.json"))
        }
        (Host::ClaudeCode | Host::GeminiCli | Host::CopilotCli | Host::OpenCode, None) => {
            if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
                return Ok(PathBuf::from(dir).join(".claude.json"));
            }
            let home = std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .ok_or(UsageError::NoHomeForHooks)?;
            Ok(PathBuf::from(home).join(".claude.json"))
        }
    }
}

/// The settings of this environment (`ADAPTIVE_GUIDEBOOK_*`), for the MCP server entry: the
/// hosts start MCP servers with a filtered environment, and `guidebook mcp` must reach the same
/// sidecar, with the same hook settings, as the shims the hooks run.
fn mcp_server_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, v)| k.starts_with("ADAPTIVE_GUIDEBOOK_") && !v.is_empty())
        .collect();
    env.sort();
    env
}

/// The `guidebook` the MCP server entry runs: this binary, by its absolute path (hosts start
/// MCP servers without a shell, so it is not quoted).
fn mcp_server_command() -> Result<String, CliError> {
    let exe = std::env::current_exe().map_err(|source| CliError::Io {
        doing: "finding this binary's path".into(),
        source,
    })?;
    Ok(exe.display().to_string())
}

/// The file holding `host`'s hooks: the project's, or the user's.
pub fn config_file(host: Host, project: Option<&Path>) -> Result<PathBuf, CliError> {
    let (dir_name, file_name, env_dir) = match host {
        Host::Codex => (".codex", "hooks.json", "CODEX_HOME"),
        Host::ClaudeCode => (".claude", "settings.json", "CLAUDE_CONFIG_DIR"),
        Host::GeminiCli => (".gemini", "settings.json", ""),
        // Copilot CLI reads every `*.json` in `hooks/` of its home (`$COPILOT_HOME`, else
        // `~/.copilot`), and a repository's `.github/hooks/`: one file there is ours.
        Host::CopilotCli => match project {
            Some(project) => return Ok(project.join(".github/hooks").join(COPILOT_HOOKS_FILE)),
            None => (".copilot", "hooks/guidebook.json", "COPILOT_HOME"),
        },
        // OpenCode loads every `*.js` in `plugin/` of its config directory
        // (`$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`) and a project's `.opencode`.
        Host::OpenCode => {
            let dir = match project {
                Some(project) => project.join(".opencode"),
                None => match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
                    Some(config) => PathBuf::from(config).join("opencode"),
                    None => {
                        let home = std::env::var_os("HOME")
                            .filter(|v| !v.is_empty())
                            .ok_or(UsageError::NoHomeForHooks)?;
                        PathBuf::from(home).join(".config/opencode")
                    }
                },
            };
            return Ok(dir.join("plugin").join(opencode::FILE_NAME));
        }
    };
    if let Some(project) = project {
        return Ok(project.join(dir_name).join(file_name));
    }
    // Gemini CLI's variable names the home its `.gemini` lives in, not the directory itself.
    if host == Host::GeminiCli {
        if let Some(home) = std::env::var_os("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(home).join(dir_name).join(file_name));
        }
    }
    if let Some(dir) = (!env_dir.is_empty())
        .then(|| std::env::var_os(env_dir))
        .flatten()
        .filter(|v| !v.is_empty())
    {
        // Codex canonicalises `CODEX_HOME`, and keys its trust records by the result.
        let dir = match host {
            Host::Codex => std::fs::canonicalize(&dir).unwrap_or_else(|_| PathBuf::from(dir)),
            _ => PathBuf::from(dir),
        };
        return Ok(dir.join(file_name));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or(UsageError::NoHomeForHooks)?;
    Ok(PathBuf::from(home).join(dir_name).join(file_name))
}

/// Our Gemini CLI policy file: `policies/` beside the user's `settings.json`, or a project's
/// `.gemini/policies/`.
pub fn gemini_policy_file(project: Option<&Path>) -> Result<PathBuf, CliError> {
    let settings = config_file(Host::GeminiCli, project)?;
    let dir = settings.parent().unwrap_or(Path::new("."));
    Ok(dir.join("policies").join(gemini_policy::FILE_NAME))
}

/// Copilot CLI's own `config.json` (`$COPILOT_HOME/config.json`, else `~/.copilot/config.json`),
/// where it keeps the folders it trusts.
pub fn copilot_config_file() -> Result<PathBuf, CliError> {
    let hooks = config_file(Host::CopilotCli, None)?;
    let home = hooks
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/"));
    Ok(home.join("config.json"))
}

/// Our hooks file's name in Copilot CLI's `hooks/` directories.
const COPILOT_HOOKS_FILE: &str = "guidebook.json";

/// Codex's own `config.toml` (`$CODEX_HOME/config.toml`, else `~/.codex/config.toml`), where
/// its hook trust records live whichever hooks file they are for.
pub fn codex_config_file() -> Result<PathBuf, CliError> {
    Ok(config_file(Host::Codex, None)?.with_file_name("config.toml"))
}

/// The file's text; a missing file is an empty one.
pub fn read_config(path: &Path) -> Result<String, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(CliError::Io {
            doing: format!("reading {}", path.display()),
            source,
        }),
    }
}

/// The absolute path of the `guidebook-hook` installed with this binary, else the first on
/// `PATH`, shell-quoted if it needs to be; the bare name, with a warning, if there is none.
fn default_hook_command() -> String {
    match find_hook_binary() {
        Some(path) => shell_quote(&path.display().to_string()),
        None => {
            eprintln!(
                "guidebook: warning: no {HOOK_PROGRAM} next to this binary or on PATH; the hooks \
                 run the bare name `{HOOK_PROGRAM}` (install it with `cargo install --path \
                 hook-shim`, or give --hook-command)"
            );
            HOOK_PROGRAM.to_string()
        }
    }
}

/// `guidebook-hook` next to the running `guidebook`, else the first executable one on `PATH`.
pub fn find_hook_binary() -> Option<PathBuf> {
    let sibling = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(HOOK_PROGRAM))
        .filter(|p| executable(p));
    sibling.or_else(hook_binary_on_path)
}

/// The first executable `guidebook-hook` in an absolute directory of `PATH`.
pub fn hook_binary_on_path() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(HOOK_PROGRAM))
        .find(|p| p.is_absolute() && executable(p))
}

/// Whether `path` is a file someone may execute.
pub fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Hosts run hook commands through a shell, so a path with spaces or other specials is quoted.
fn shell_quote(word: &str) -> String {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+~,:@%".contains(c));
    if plain && !word.is_empty() {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_paths_a_shell_would_split() {
        assert_eq!(
            shell_quote("/usr/bin/guidebook-hook"),
            "/usr/bin/guidebook-hook"
        );
        assert_eq!(
            shell_quote("/Users/a b/guidebook-hook"),
            "'/Users/a b/guidebook-hook'"
        );
        assert_eq!(
            shell_quote("/x/it's/guidebook-hook"),
            r"'/x/it'\''s/guidebook-hook'"
        );
        assert!(host::is_our_command(&shell_quote("/a b/guidebook-hook")));
        assert!(host::is_our_command(&shell_quote(
            "/x/it's (new)/guidebook-hook"
        )));
    }

    /// The trust records are written only when the hooks file reads back as this run left it:
    /// here something else rewrote it between our read and our check.
    #[test]
    fn no_trust_record_when_the_hooks_file_is_not_what_we_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let hooks_json = dir.path().join("hooks.json");
        let config = dir.path().join("config.toml");
        std::fs::write(&hooks_json, "{}\n").unwrap();
        std::fs::write(&config, "model = \"x\"\n").unwrap();
        let mut plan = Plan::default();
        let hooks = plan.open(Host::Codex, &hooks_json, &Scope::User).unwrap();
        let trust = plan.open(Host::Codex, &config, &Scope::User).unwrap();
        plan.edit(trust, "trust set in", |t| Ok((format!("{t}[hooks]\n"), ())))
            .unwrap();
        plan.verify(hooks, Vec::new(), trust);
        std::fs::write(&hooks_json, "{\"hooks\": {\"Stop\": []}}\n").unwrap();
        let err = plan.write().unwrap_err().to_string();
        assert!(err.contains("no Codex trust record was written"), "{err}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "model = \"x\"\n");
    }
}
