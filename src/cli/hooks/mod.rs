//! `guidebook hooks install|uninstall`: our hook entries in (or out of) the agents' settings.
//!
//! `--codex|--claude [--mcp] [--project DIR] [--print]`: Codex's `hooks.json` and Claude Code's
//! `settings.json`; with `--mcp`, `mcp_tool` hooks and our MCP server in Codex's `config.toml`
//! or Claude Code's `~/.claude.json` / `.mcp.json`. Reads: those files, the environment
//! (`HOME`, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `PATH`). Writes: those files, atomically, after
//! a `.bak` copy.
//!
//! - [`host`]: each host's events, matchers and templates, and which handlers are ours;
//! - [`json_tree`]: the text-preserving JSON editor;
//! - [`edit`]: our entries merged in and out of the JSON settings;
//! - [`codex_toml`]: our MCP server in Codex's `config.toml`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgGroup, Args, Subcommand};

use super::{CliError, UsageError};
mod codex_toml;
pub mod codex_trust;
mod edit;
mod host;
mod json_tree;

pub use codex_toml::install_codex_mcp_server;
pub use edit::{install, install_mcp_server, installed, uninstall};
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
        /// so that it runs them without a review in /hooks (either wiring).
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
#[command(group(ArgGroup::new("host").required(true).multiple(true).args(["codex", "claude", "gemini"])))]
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
            hosts.push(Host::Claude);
        }
        if self.gemini {
            hosts.push(Host::Gemini);
        }
        hosts
    }
}

pub fn run(command: HooksCommand) -> Result<ExitCode, CliError> {
    let (target, wiring, trust_codex) = match command {
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
    if wiring == Some(Wiring::Mcp) && hosts.contains(&Host::Gemini) {
        return Err(UsageError::NoMcpHooks(Host::Gemini.name()).into());
    }
    for host in hosts {
        let path = config_file(host, target.project.as_deref())?;
        // Before an uninstall, our handlers' trust records: they go with the handlers.
        let untrust_keys = match (host, &wiring) {
            (Host::Codex, None) => codex_trust::our_handlers(&path, &read_config(&path)?)
                .map(|ours| ours.into_iter().map(|o| o.key).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let before = match host {
            Host::Codex => read_config(&path)?,
            _ => String::new(),
        };
        let edit = |original: &str| match &wiring {
            Some(wiring) => install(original, host, wiring),
            None => uninstall(original),
        };
        let verb = if wiring.is_some() {
            "hooks installed in"
        } else {
            "hooks removed from"
        };
        apply(host, &path, edit, verb, target.print)?;
        if host == Host::Codex {
            codex_trust_step(
                &path,
                &before,
                &wiring,
                trust_codex,
                &untrust_keys,
                target.print,
            )?;
        }
        if wiring == Some(Wiring::Mcp) {
            let server_path = mcp_server_file(host, target.project.as_deref())?;
            let command = mcp_server_command()?;
            let env = mcp_server_env();
            let edit = |original: &str| match host {
                Host::Codex => install_codex_mcp_server(original, &command, &env),
                Host::Claude | Host::Gemini => install_mcp_server(original, &command, &env),
            };
            if target.print {
                println!("--- {}", server_path.display());
            }
            apply(
                host,
                &server_path,
                edit,
                "MCP server `guidebook` set in",
                target.print,
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Edits the file at `path` with `edit` and writes it (or prints it, with `print`), saying what
/// was done.
fn apply(
    host: Host,
    path: &Path,
    edit: impl Fn(&str) -> Result<String, EditError>,
    verb: &str,
    print: bool,
) -> Result<(), CliError> {
    let original = read_config(path)?;
    let edited = edit(&original).map_err(|source| CliError::HookConfig {
        path: path.to_path_buf(),
        source,
    })?;
    if print {
        print!("{edited}");
        return Ok(());
    }
    if edited == original {
        println!(
            "{}: up to date, nothing to change in {}",
            host.name(),
            path.display()
        );
        return Ok(());
    }
    let backup = write_atomically(path, &edited).map_err(|source| CliError::Io {
        doing: format!("writing {}", path.display()),
        source,
    })?;
    match backup {
        Some(backup) => println!(
            "{}: {verb} {} (previous version: {})",
            host.name(),
            path.display(),
            backup.display()
        ),
        None => println!("{}: {verb} {}", host.name(), path.display()),
    }
    Ok(())
}

/// Where `host` reads MCP servers from: Codex's `config.toml` beside its `hooks.json`; Claude
/// Code's `.mcp.json` in the project, or its user file `~/.claude.json`
/// (`$CLAUDE_CONFIG_DIR/.claude.json`).
pub fn mcp_server_file(host: Host, project: Option<&Path>) -> Result<PathBuf, CliError> {
    match (host, project) {
        (Host::Codex, _) => Ok(config_file(host, project)?.with_file_name("config.toml")),
        (Host::Claude | Host::Gemini, Some(project)) => Ok(project.join(".mcp.json")),
        (Host::Claude | Host::Gemini, None) => {
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
        Host::Claude => (".claude", "settings.json", "CLAUDE_CONFIG_DIR"),
        Host::Gemini => (".gemini", "settings.json", ""),
    };
    if let Some(project) = project {
        return Ok(project.join(dir_name).join(file_name));
    }
    // Gemini CLI's variable names the home its `.gemini` lives in, not the directory itself.
    if host == Host::Gemini {
        if let Some(home) = std::env::var_os("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
            return Ok(PathBuf::from(home).join(dir_name).join(file_name));
        }
    }
    if let Some(dir) = (!env_dir.is_empty())
        .then(|| std::env::var_os(env_dir))
        .flatten()
        .filter(|v| !v.is_empty())
    {
        return Ok(PathBuf::from(dir).join(file_name));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or(UsageError::NoHomeForHooks)?;
    Ok(PathBuf::from(home).join(dir_name).join(file_name))
}

/// Codex's trust records after an install or uninstall of our hooks in `hooks_json` (whose
/// text was `before`): with `--trust`, records for exactly our handlers (and none left for
/// their old places); after an uninstall, ours removed; otherwise, how to get them reviewed.
fn codex_trust_step(
    hooks_json: &Path,
    before: &str,
    wiring: &Option<Wiring>,
    trust: bool,
    untrust_keys: &[String],
    print: bool,
) -> Result<(), CliError> {
    let config = codex_config_file()?;
    match wiring {
        None => {
            if untrust_keys.is_empty() || !config.exists() || print {
                return Ok(());
            }
            apply(
                Host::Codex,
                &config,
                |text: &str| codex_trust::untrust(text, untrust_keys),
                "Codex trust records of our hooks removed from",
                false,
            )
        }
        Some(_) if trust => {
            let text = if print {
                // Nothing was written: the records are for the file as it would be.
                install(before, Host::Codex, wiring.as_ref().expect("installing")).map_err(
                    |source| CliError::HookConfig {
                        path: hooks_json.to_path_buf(),
                        source,
                    },
                )?
            } else {
                read_config(hooks_json)?
            };
            let ours = codex_trust::our_handlers(hooks_json, &text).map_err(|source| {
                CliError::HookConfig {
                    path: hooks_json.to_path_buf(),
                    source,
                }
            })?;
            let stale: Vec<String> = codex_trust::our_handlers(hooks_json, before)
                .map(|old| old.into_iter().map(|o| o.key).collect())
                .unwrap_or_default();
            if print {
                println!("--- {}", config.display());
            }
            apply(
                Host::Codex,
                &config,
                |text: &str| codex_trust::trust(text, &ours, &stale),
                "Codex trust records for our hooks set in",
                print,
            )
        }
        Some(_) => {
            if !print {
                println!(
                    "Codex runs these hooks only once they are trusted: open `codex`, review them \
                     in /hooks, or run `guidebook hooks install --codex --trust`"
                );
            }
            Ok(())
        }
    }
}

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
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let sibling = std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(HOOK_PROGRAM))
        .filter(|p| executable(p));
    sibling.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(HOOK_PROGRAM))
            .find(|p| p.is_absolute() && executable(p))
    })
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

/// Replaces the file at `path` with `text` so that a reader sees the old or the new file, never
/// a half-written one: the text goes to a temp file in the same directory, is synced, and is
/// renamed over the file; then the directory is synced. An existing file is first copied to
/// `<file>.bak` (returned) and its mode is kept. A symlink is followed, so a settings file kept
/// in a dotfiles repository stays a link.
fn write_atomically(path: &Path, text: &str) -> io::Result<Option<PathBuf>> {
    let target = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        Err(e) if e.kind() == io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let dir = target.parent().unwrap_or(Path::new("/")).to_path_buf();
    std::fs::create_dir_all(&dir)?;
    let existing = std::fs::metadata(&target).ok();
    let backup = match &existing {
        Some(_) => {
            let backup = PathBuf::from(format!("{}.bak", target.display()));
            std::fs::copy(&target, &backup)?;
            File::open(&backup)?.sync_all()?;
            Some(backup)
        }
        None => None,
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.guidebook-{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        let mode = existing
            .as_ref()
            .map_or(0o644, |m| m.permissions().mode() & 0o7777);
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        std::fs::rename(&temp, &target)?;
        File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map(|()| backup)
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
    }

    #[test]
    fn atomic_write_keeps_the_mode_follows_links_and_backs_up() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        let backup = write_atomically(&link, "{\"a\": 1}\n").unwrap().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"a\": 1}\n");
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), "{}\n");
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o640
        );

        let fresh = dir.path().join("new/.codex/hooks.json");
        assert_eq!(write_atomically(&fresh, "{}\n").unwrap(), None);
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "{}\n");
        let leftovers = std::fs::read_dir(fresh.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");
    }
}
