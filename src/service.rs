//! The service definitions `guidebook service install` writes: the systemd user units and the
//! launchd agent, rendered from the templates under `systemd/` and `launchd/` for one user and
//! one binary. Pure: reads and writes nothing.

use std::path::{Path, PathBuf};

const SYSTEMD_SOCKET: &str = include_str!("../systemd/guidebook.socket");
const SYSTEMD_SERVICE: &str = include_str!("../systemd/guidebook.service");
const LAUNCHD_AGENT: &str = include_str!("../launchd/dev.adaptive-guidebook.sidecar.plist");

/// The launchd job label, also the plist's file name.
pub const LAUNCHD_LABEL: &str = "dev.adaptive-guidebook.sidecar";
/// The unit names, also their file names.
pub const SOCKET_UNIT: &str = "guidebook.socket";
pub const SERVICE_UNIT: &str = "guidebook.service";
/// Every file `install` writes carries this, and `uninstall` removes only files that do.
pub const MARKER: &str = "Written by `guidebook service install`";

/// Which service manager the files are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Manager {
    /// launchd on macOS, systemd everywhere else.
    pub fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }
}

/// What the files are rendered for.
#[derive(Debug, Clone)]
pub struct ServiceTarget {
    /// The `guidebook` binary the service runs.
    pub exe: PathBuf,
    /// The user's home directory (`$HOME`).
    pub user_home: PathBuf,
    /// Where systemd user units go: `$XDG_CONFIG_HOME/systemd/user`.
    pub systemd_dir: PathBuf,
    /// The socket the service listens on.
    pub socket: PathBuf,
    /// `ADAPTIVE_GUIDEBOOK_HOME`, when the installing user set one: the service gets it too, so
    /// it finds the same database and guidebook.
    pub guidebook_home: Option<PathBuf>,
}

/// One file to write, with its exact content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceFile {
    pub path: PathBuf,
    pub content: String,
}

/// The files `install` writes for `manager`, in the order to write them.
pub fn files(manager: Manager, target: &ServiceTarget) -> Vec<ServiceFile> {
    match manager {
        Manager::Systemd => vec![
            ServiceFile {
                path: target.systemd_dir.join(SOCKET_UNIT),
                content: systemd_socket(target),
            },
            ServiceFile {
                path: target.systemd_dir.join(SERVICE_UNIT),
                content: systemd_service(target),
            },
        ],
        Manager::Launchd => vec![ServiceFile {
            path: launch_agents_dir(&target.user_home).join(format!("{LAUNCHD_LABEL}.plist")),
            content: launchd_agent(target),
        }],
    }
}

pub fn launch_agents_dir(user_home: &Path) -> PathBuf {
    user_home.join("Library/LaunchAgents")
}

/// Replaces the value of every `Key=` line of a unit file.
fn set_key(unit: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key}=");
    let mut out = String::with_capacity(unit.len());
    for line in unit.lines() {
        if line.starts_with(&prefix) {
            out.push_str(&prefix);
            out.push_str(value);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// A path as a systemd unit file reads it: `%h/...` when under the home directory, `%`
/// escaped, quoted when it holds spaces or quotes.
fn unit_path(path: &Path, user_home: &Path) -> String {
    let text = match path.strip_prefix(user_home) {
        Ok(rest) => format!("%h/{}", rest.display().to_string().replace('%', "%%")),
        Err(_) => path.display().to_string().replace('%', "%%"),
    };
    if text.contains([' ', '\t', '"', '\'', '\\']) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}

fn systemd_socket(target: &ServiceTarget) -> String {
    // ListenStream= takes no quotes; a socket path with spaces cannot be expressed, and
    // `%h/...` keeps the default path identical to the committed template.
    let escape = |p: &Path| p.display().to_string().replace('%', "%%");
    let path = match target.socket.strip_prefix(&target.user_home) {
        Ok(rest) => format!("%h/{}", escape(rest)),
        Err(_) => escape(&target.socket),
    };
    set_key(SYSTEMD_SOCKET, "ListenStream", &path)
}

fn systemd_service(target: &ServiceTarget) -> String {
    let mut exec = format!("{} serve", unit_path(&target.exe, &target.user_home));
    if let Some(home) = &target.guidebook_home {
        let value = format!("ADAPTIVE_GUIDEBOOK_HOME={}", home.display()).replace('%', "%%");
        exec.push_str(&format!(
            "\nEnvironment=\"{}\"",
            value.replace('\\', "\\\\").replace('"', "\\\"")
        ));
    }
    set_key(SYSTEMD_SERVICE, "ExecStart", &exec)
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn launchd_agent(target: &ServiceTarget) -> String {
    let exe = format!(
        "<string>{}</string>",
        xml_escape(&target.exe.display().to_string())
    );
    let mut plist = LAUNCHD_AGENT.replace("<string>$HOME/.cargo/bin/guidebook</string>", &exe);
    if let Some(home) = &target.guidebook_home {
        let env = format!(
            "\t<key>EnvironmentVariables</key>\n\t<dict>\n\t\t<key>ADAPTIVE_GUIDEBOOK_HOME</key>\n\t\t<string>{}</string>\n\t</dict>\n</dict>\n</plist>",
            xml_escape(&home.display().to_string())
        );
        plist = plist.replace("</dict>\n</plist>", &env);
    }
    // Only `<string>` values hold `$HOME`; the comment keeps its literal text.
    plist.replace(
        "<string>$HOME/",
        &format!(
            "<string>{}/",
            xml_escape(&target.user_home.display().to_string())
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(home: &str) -> ServiceTarget {
        ServiceTarget {
            exe: PathBuf::from("/opt/guide book/bin/guidebook"),
            user_home: PathBuf::from(home),
            systemd_dir: PathBuf::from(home).join(".config/systemd/user"),
            socket: PathBuf::from(home).join(".adaptive-guidebook/sidecar.sock"),
            guidebook_home: None,
        }
    }

    #[test]
    fn the_default_socket_unit_is_the_committed_template() {
        let files = files(Manager::Systemd, &target("/home/ann"));
        assert_eq!(
            files[0].path,
            Path::new("/home/ann/.config/systemd/user/guidebook.socket")
        );
        assert_eq!(files[0].content, SYSTEMD_SOCKET);
        assert!(files[1]
            .content
            .contains("\nExecStart=\"/opt/guide book/bin/guidebook\" serve\n"));
        assert!(files.iter().all(|f| f.content.contains(MARKER)));
    }

    #[test]
    fn paths_under_home_use_percent_h_and_percent_is_escaped() {
        let mut t = target("/home/ann");
        t.exe = PathBuf::from("/home/ann/bin/50%/guidebook");
        t.socket = PathBuf::from("/run/user/1000/gb.sock");
        t.guidebook_home = Some(PathBuf::from("/srv/gb"));
        let files = files(Manager::Systemd, &t);
        assert!(files[0]
            .content
            .contains("\nListenStream=/run/user/1000/gb.sock\n"));
        assert!(files[1]
            .content
            .contains("\nExecStart=%h/bin/50%%/guidebook serve\nEnvironment=\"ADAPTIVE_GUIDEBOOK_HOME=/srv/gb\"\n"));
    }

    #[test]
    fn the_agent_has_absolute_paths_and_escaped_xml() {
        let mut t = target("/Users/a&b");
        t.guidebook_home = Some(PathBuf::from("/Users/a&b/gb"));
        let plist = &files(Manager::Launchd, &t)[0];
        assert_eq!(
            plist.path,
            Path::new("/Users/a&b/Library/LaunchAgents/dev.adaptive-guidebook.sidecar.plist")
        );
        assert!(
            !plist.content.contains("<string>$HOME"),
            "{}",
            plist.content
        );
        assert!(plist
            .content
            .contains("<string>/Users/a&amp;b/Library/Logs/adaptive-guidebook.log</string>"));
        assert!(plist.content.contains(
            "<key>ADAPTIVE_GUIDEBOOK_HOME</key>\n\t\t<string>/Users/a&amp;b/gb</string>"
        ));
    }
}
