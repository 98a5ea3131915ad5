//! `guidebook service install|uninstall|status`: writes the systemd user units (or the launchd
//! agent) for this user and this binary, says what it wrote and what to run next, or runs it
//! with `--now`. Reads: `$HOME`, `$XDG_CONFIG_HOME`, the socket. Writes: the unit or plist files.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use clap::{Subcommand, ValueEnum};

use super::client::{ask, Reply};
use super::{CliError, UsageError};
use crate::config::Settings;
use crate::service::{
    files, Manager, ServiceFile, ServiceTarget, LAUNCHD_LABEL, MARKER, SERVICE_UNIT, SOCKET_UNIT,
};
use guidebook_hook::protocol::{method, no_params};

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the service files for this user, pointing at this binary.
    Install {
        /// Also load and start the service (`systemctl --user` / `launchctl`).
        #[arg(long)]
        now: bool,
        #[arg(long, value_enum, default_value_t = ManagerArg::native())]
        manager: ManagerArg,
    },
    /// Remove exactly the files `install` wrote.
    Uninstall {
        /// Also stop and unload the service first.
        #[arg(long)]
        now: bool,
        #[arg(long, value_enum, default_value_t = ManagerArg::native())]
        manager: ManagerArg,
    },
    /// Whether the files are installed and current, and whether the socket answers. Exit 1 when
    /// a file is missing or differs from what `install` would write.
    Status {
        #[arg(long, value_enum, default_value_t = ManagerArg::native())]
        manager: ManagerArg,
    },
}

/// The service manager to write files for (default: launchd on macOS, systemd elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerArg {
    Systemd,
    Launchd,
}

impl ManagerArg {
    fn native() -> ManagerArg {
        match Manager::native() {
            Manager::Systemd => ManagerArg::Systemd,
            Manager::Launchd => ManagerArg::Launchd,
        }
    }
}

impl From<ManagerArg> for Manager {
    fn from(m: ManagerArg) -> Manager {
        match m {
            ManagerArg::Systemd => Manager::Systemd,
            ManagerArg::Launchd => Manager::Launchd,
        }
    }
}

pub fn run(settings: &Settings, command: ServiceCommand) -> Result<ExitCode, CliError> {
    match command {
        ServiceCommand::Install { now, manager } => install(settings, manager.into(), now),
        ServiceCommand::Uninstall { now, manager } => uninstall(settings, manager.into(), now),
        ServiceCommand::Status { manager } => status(settings, manager.into()),
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn target(settings: &Settings) -> Result<ServiceTarget, CliError> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|source| CliError::Io {
            doing: "finding this binary's path".into(),
            source,
        })?;
    let user_home = env_path("HOME").ok_or(UsageError::NoHomeForService)?;
    let config_home = env_path("XDG_CONFIG_HOME").unwrap_or_else(|| user_home.join(".config"));
    Ok(ServiceTarget {
        exe,
        systemd_dir: config_home.join("systemd/user"),
        socket: settings.socket.clone(),
        guidebook_home: env_path("ADAPTIVE_GUIDEBOOK_HOME").map(|_| settings.home.clone()),
        user_home,
    })
}

fn io(doing: String) -> impl FnOnce(std::io::Error) -> CliError {
    move |source| CliError::Io { doing, source }
}

/// Writes `file` through a temp file and a rename, so a half-written unit is never loaded.
fn write_file(file: &ServiceFile) -> Result<&'static str, CliError> {
    let path = &file.path;
    let old = std::fs::read_to_string(path).ok();
    if old.as_deref() == Some(file.content.as_str()) {
        return Ok("unchanged");
    }
    let dir = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(file.content.as_bytes())?;
        f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(format!("writing {}", path.display()))(e)
    })?;
    Ok(if old.is_some() { "updated" } else { "created" })
}

/// The commands that load and start the installed files.
fn start_commands(manager: Manager, written: &[ServiceFile]) -> Vec<Vec<String>> {
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match manager {
        Manager::Systemd => vec![
            argv(&["systemctl", "--user", "daemon-reload"]),
            argv(&["systemctl", "--user", "enable", "--now", SOCKET_UNIT]),
        ],
        Manager::Launchd => vec![vec![
            "launchctl".into(),
            "bootstrap".into(),
            gui_domain(),
            written[0].path.display().to_string(),
        ]],
    }
}

fn stop_commands(manager: Manager) -> Vec<Vec<String>> {
    match manager {
        Manager::Systemd => vec![vec![
            "systemctl".into(),
            "--user".into(),
            "disable".into(),
            "--now".into(),
            SOCKET_UNIT.into(),
            SERVICE_UNIT.into(),
        ]],
        Manager::Launchd => vec![vec![
            "launchctl".into(),
            "bootout".into(),
            format!("{}/{LAUNCHD_LABEL}", gui_domain()),
        ]],
    }
}

fn gui_domain() -> String {
    // SAFETY: getuid has no preconditions.
    format!("gui/{}", unsafe { libc::getuid() })
}

fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if a.contains([' ', '\'', '"', '$', '\\']) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one command, echoing it; its output is passed through.
fn run_command(argv: &[String]) -> Result<(), CliError> {
    println!("$ {}", shell_line(argv));
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .status()
        .map_err(io(format!("running {}", argv[0])))?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::Command {
            command: shell_line(argv),
            status,
        })
    }
}

fn install(settings: &Settings, manager: Manager, now: bool) -> Result<ExitCode, CliError> {
    let target = target(settings)?;
    let written = files(manager, &target);
    for file in &written {
        let what = write_file(file)?;
        println!("wrote {} ({what})", file.path.display());
    }
    println!(
        "the service runs `{} serve` and listens on {}",
        target.exe.display(),
        settings.socket.display()
    );
    let exe = target.exe.display().to_string();
    if exe.contains("/target/debug/") || exe.contains("/target/release/") {
        eprintln!(
            "guidebook: note: {exe} is a build output that the next build replaces; install with \
             `cargo install --path .` and run `guidebook service install` from there"
        );
    }
    let commands = start_commands(manager, &written);
    if now {
        for argv in &commands {
            run_command(argv)?;
        }
    } else {
        println!("to start it now and at every login, run:");
        for argv in &commands {
            println!("  {}", shell_line(argv));
        }
        println!("(or run `guidebook service install --now`)");
    }
    if manager == Manager::Systemd {
        println!(
            "logs: journalctl --user -u {SERVICE_UNIT}; to keep it running while logged out: \
             loginctl enable-linger"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Symlinks `systemctl enable` made to `file` (`*.wants/NAME` in the unit directory).
fn enable_links(file: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".wants"))
        .map(|e| e.path().join(name))
        .filter(|link| std::fs::read_link(link).is_ok_and(|to| to == file))
        .collect()
}

fn uninstall(settings: &Settings, manager: Manager, now: bool) -> Result<ExitCode, CliError> {
    let target = target(settings)?;
    let installed = files(manager, &target);
    if now {
        for argv in &stop_commands(manager) {
            // A service that is not loaded cannot be stopped; the files still go.
            if let Err(e) = run_command(argv) {
                eprintln!("guidebook: {e}; removing the files anyway");
            }
        }
    }
    for file in &installed {
        for link in enable_links(&file.path) {
            std::fs::remove_file(&link).map_err(io(format!("removing {}", link.display())))?;
            println!("removed {}", link.display());
        }
        match std::fs::read_to_string(&file.path) {
            Ok(text) if text.contains(MARKER) => {
                std::fs::remove_file(&file.path)
                    .map_err(io(format!("removing {}", file.path.display())))?;
                println!("removed {}", file.path.display());
            }
            Ok(_) => println!(
                "left {}: it was not written by `guidebook service install`",
                file.path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                println!("{}: not installed", file.path.display())
            }
            Err(e) => return Err(io(format!("reading {}", file.path.display()))(e)),
        }
    }
    let after: Vec<Vec<String>> = match manager {
        Manager::Systemd => vec![vec![
            "systemctl".into(),
            "--user".into(),
            "daemon-reload".into(),
        ]],
        Manager::Launchd => Vec::new(),
    };
    if now {
        for argv in &after {
            run_command(argv)?;
        }
    } else {
        println!("to stop a running service, run:");
        for argv in stop_commands(manager).iter().chain(&after) {
            println!("  {}", shell_line(argv));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn status(settings: &Settings, manager: Manager) -> Result<ExitCode, CliError> {
    let target = target(settings)?;
    let mut current = true;
    for file in files(manager, &target) {
        let state = match std::fs::read_to_string(&file.path) {
            Ok(text) if text == file.content => "installed, up to date",
            Ok(_) => {
                current = false;
                "installed, but differs from what `guidebook service install` would write now"
            }
            Err(_) => {
                current = false;
                "not installed"
            }
        };
        println!("{}: {state}", file.path.display());
    }
    let status =
        ask::<serde_json::Value>(settings, &no_params(method::STATUS), Duration::from_secs(2));
    match status {
        Ok(Reply::Answer(v)) => println!(
            "sidecar: answering on {} (version {})",
            settings.socket.display(),
            v["version"].as_str().unwrap_or("unknown")
        ),
        Ok(Reply::NotRunning(why)) => println!("sidecar: not answering ({why})"),
        Err(e) => println!("sidecar: answered badly: {e}"),
    }
    Ok(if current {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
