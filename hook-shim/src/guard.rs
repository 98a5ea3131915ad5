//! The agent cannot lift its own guardrails through its tools: a `PreToolUse` whose command or
//! edit would reset the breaker, change flags or hooks, or touch the sidecar's own files is
//! denied with a reason that says a person must do it. Reads: the typed event and the places to
//! protect. Writes: nothing.
//!
//! This is a tripwire, not a sandbox. It reads the command the agent asked for as text, the way
//! a reviewer would, and catches the direct ways: the `guidebook` CLI's control commands
//! (`breaker reset`, `flags set|init`, `hooks install|uninstall`, `service install|uninstall`,
//! `mcp --orchestrator`), a command that names the sidecar's socket, database, flags file,
//! config file or home directory and is not a plain reader (`cat`, `grep`, `ls`, … with no
//! redirection into them), stopping the sidecar (`pkill guidebook`, `systemctl stop`), and an
//! edit tool writing below those places. A script the agent writes first and runs later, or
//! a path built at run time, gets past it; the boundary that holds against those is the
//! operating system's (another user, or the agent's sandbox denying the socket), as
//! docs/security.md says.

use std::path::{Path, PathBuf};

use crate::event::{EventName, HookEvent, ToolInput};
use crate::plan::changed_files_of;

/// The places an agent must not change or talk to: the sidecar's home directory, its socket,
/// database, flags file and config file, each in every spelling a shell command may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Absolute paths, normalised, without a trailing slash.
    places: Vec<String>,
    /// Each place as a command may spell it: absolute, `~/…`, `$HOME/…`, `${HOME}/…`.
    spellings: Vec<String>,
    /// File names distinctive enough to be recognised alone (`.adaptive-guidebook`), as a
    /// command run from the home directory would name them.
    names: Vec<String>,
}

impl Protected {
    /// The places `paths` (the sidecar's home first, then its socket, database, flags and
    /// config files; relative ones are ignored), spelled also relative to the user's `home`.
    pub fn new(paths: &[PathBuf], home: Option<&Path>) -> Protected {
        let mut protected = Protected::default();
        let home = home
            .and_then(Path::to_str)
            .filter(|h| h.starts_with('/'))
            .map(|h| h.trim_end_matches('/').to_owned());
        for path in paths {
            let Some(path) = path.to_str().filter(|p| p.starts_with('/')) else {
                continue;
            };
            let path = crate::paths::resolve_dir(None, path).unwrap_or_else(|| path.to_owned());
            if path.is_empty() || protected.places.contains(&path) {
                continue;
            }
            protected.spellings.push(path.clone());
            if let Some(home) = home.as_deref().filter(|h| !h.is_empty()) {
                if let Some(rest) = path.strip_prefix(home).and_then(|r| r.strip_prefix('/')) {
                    for prefix in ["~/", "$HOME/", "${HOME}/"] {
                        protected.spellings.push(format!("{prefix}{rest}"));
                    }
                }
            }
            let name = path.rsplit('/').next().unwrap_or_default();
            if name.contains("guidebook") && !protected.names.iter().any(|n| n == name) {
                protected.names.push(name.to_owned());
            }
            protected.places.push(path);
        }
        protected
    }

    /// Whether `text` names one of the places (or anything below one).
    fn named_in(&self, text: &str) -> bool {
        self.spellings
            .iter()
            .chain(&self.names)
            .any(|spelling| mentions(text, spelling))
    }

    /// Whether the absolute `path` is one of the places or below one.
    fn holds(&self, path: &str) -> bool {
        self.places.iter().any(|place| {
            path == place
                || path
                    .strip_prefix(place.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// The deny reason for `event` when it would lift a guardrail, else `None`. Only a tool call
/// about to run (`PreToolUse`, Gemini CLI's `BeforeTool`) is judged.
pub fn check(event: &HookEvent, protected: &Protected) -> Option<String> {
    if event.name != EventName::PreToolUse {
        return None;
    }
    let tool = event.tool.as_ref()?;
    let what = match &tool.input {
        ToolInput::Shell {
            command: Some(command),
            ..
        } => judge_command(&command.text(), protected)?,
        ToolInput::Patch(_) | ToolInput::EditFile(_) => {
            let file = changed_files_of(event)
                .into_iter()
                .find(|f| protected.holds(f))?;
            format!("write the sidecar's own file {file}")
        }
        _ => return None,
    };
    Some(reason(&what))
}

/// The text a denied agent reads: what its call would have done, that a person must do it, and
/// that it should not look for another way.
pub fn reason(what: &str) -> String {
    format!(
        "Adaptive Guidebook: this would {what}. The guidebook's guardrails (the circuit breaker, \
         the feature flags, the hooks) are the user's to change, never the agent's: do not try \
         another way around this. If you believe it must be done, stop and ask the user to do \
         it in their own terminal."
    )
}

/// What the shell command `text` would do to the guardrails, if anything.
fn judge_command(text: &str, protected: &Protected) -> Option<String> {
    let segments = segments(text);
    for segment in &segments {
        let words = words(segment);
        let (program, args) = match strip_wrappers(&words) {
            Some((program, args)) => (program, args),
            None => continue,
        };
        let name = program.rsplit('/').next().unwrap_or(program);
        if let Some(what) = guidebook_control(name, args) {
            return Some(what);
        }
        if let Some(what) = stops_the_sidecar(name, args, text) {
            return Some(what);
        }
        if protected.named_in(segment) {
            let reader = READERS.contains(&name);
            if !reader || redirects_into(segment, protected) {
                return Some(format!(
                    "change or talk to the sidecar's own files or socket (`{}`)",
                    segment.trim()
                ));
            }
        }
    }
    None
}

/// Programs that only read the files they are given; anything else that names a protected place
/// may write to it, or connect to the socket.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "ls",
    "stat",
    "wc",
    "file",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "jq",
    "diff",
    "cmp",
    "sha256sum",
    "md5sum",
    "du",
    "tree",
    "readlink",
    "realpath",
    "test",
    "[",
    "echo",
    "printf",
];

/// Global options of the `guidebook` CLI that take a value.
const GLOBAL_VALUE_OPTIONS: &[&str] = &[
    "--socket",
    "--db",
    "--guidebook-root",
    "--flags",
    "--config",
    "--metrics-dir",
];

/// The control command `program args` runs, if it is one of `guidebook`'s (also through `cargo
/// run … --`, as a developer of this project's agent would run it).
fn guidebook_control(program: &str, args: &[String]) -> Option<String> {
    let args: &[String] = match program {
        "guidebook" => args,
        "cargo" if args.first().is_some_and(|a| a == "run") => {
            let dash = args.iter().position(|a| a == "--")?;
            if !args[..dash].iter().any(|a| a.contains("guidebook")) {
                return None;
            }
            &args[dash + 1..]
        }
        _ => return None,
    };
    let mut positional = Vec::new();
    let mut flags = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if GLOBAL_VALUE_OPTIONS.contains(&arg.as_str()) {
            rest.next();
        } else if arg.starts_with('-') {
            flags.push(arg.as_str());
        } else {
            positional.push(arg.as_str());
        }
    }
    let control = match positional.as_slice() {
        ["breaker", "reset", ..] => "reset the circuit breaker (`guidebook breaker reset`)",
        ["flags", "set", ..] => "change a feature flag (`guidebook flags set`)",
        ["flags", "init", ..] => "rewrite the feature flags file (`guidebook flags init`)",
        ["hooks", verb @ ("install" | "uninstall"), ..] => {
            return Some(format!(
                "change the agents' hooks (`guidebook hooks {verb}`)"
            ))
        }
        ["service", verb @ ("install" | "uninstall"), ..] => {
            return Some(format!(
                "change how the sidecar runs (`guidebook service {verb}`)"
            ))
        }
        ["mcp", ..] if flags.contains(&"--orchestrator") => {
            "record orchestrator metrics (`guidebook mcp --orchestrator`)"
        }
        _ => return None,
    };
    Some(control.to_owned())
}

/// Whether the command stops the sidecar: `pkill`/`killall` naming it, `kill` of a pid that
/// `pgrep`/`pidof` found by its name, or the service manager stopping it.
fn stops_the_sidecar(program: &str, args: &[String], whole: &str) -> Option<String> {
    let names_us = |s: &str| s.contains("guidebook");
    let stops = match program {
        "pkill" | "killall" => args.iter().any(|a| names_us(a)),
        // A bare pid says nothing; a pid looked up by our name does.
        "kill" => segments(whole).iter().any(|segment| {
            let words = words(segment);
            strip_wrappers(&words).is_some_and(|(program, args)| {
                matches!(program.rsplit('/').next(), Some("pgrep" | "pidof"))
                    && args.iter().any(|a| names_us(a))
            })
        }),
        "systemctl" | "launchctl" => {
            args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "stop" | "kill" | "disable" | "mask" | "unload" | "bootout" | "remove"
                )
            }) && args.iter().any(|a| names_us(a))
        }
        _ => false,
    };
    stops.then(|| "stop the sidecar, and with it the guardrails".to_owned())
}

/// Whether a redirection in `segment` writes into a protected place.
fn redirects_into(segment: &str, protected: &Protected) -> bool {
    segment.match_indices('>').any(|(at, _)| {
        let target = segment[at..]
            .trim_start_matches(['>', '|', '&'])
            .trim_start();
        let target = words(target);
        target
            .first()
            .is_some_and(|t| protected.named_in(t) || t.starts_with('$'))
    })
}

/// The simple commands of a shell text: split at `;`, `&`, `|`, newlines, parentheses,
/// backquotes and `$(`. Quotes are not respected: a separator inside quotes only makes more,
/// smaller segments, and a segment that names a protected place is judged on its own first word,
/// which then is not a reader: the safe side.
fn segments(text: &str) -> Vec<String> {
    text.split([';', '&', '|', '\n', '(', ')', '`'])
        .map(|s| s.trim_start_matches('$').to_owned())
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// The words of a simple command, with quotes and backslashes removed (as far as a shell would
/// without expanding anything).
fn words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = segment.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The program a simple command runs and its arguments, past variable assignments and the
/// wrappers that run another program (`env`, `sudo`, `command`, `exec`, `nohup`, `time`,
/// `nice`, `timeout`, `xargs`).
fn strip_wrappers(words: &[String]) -> Option<(&str, &[String])> {
    let mut i = 0;
    loop {
        let word = words.get(i)?;
        let name = word.rsplit('/').next().unwrap_or(word);
        let is_assignment = word.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if is_assignment {
            i += 1;
            continue;
        }
        match name {
            "env" | "sudo" | "command" | "exec" | "nohup" | "time" | "nice" | "xargs" | "doas" => {
                i += 1;
                // Their own options (and `timeout`'s duration) come before the program.
                while words.get(i).is_some_and(|w| w.starts_with('-')) {
                    i += 1;
                }
            }
            "timeout" => {
                i += 1;
                while words.get(i).is_some_and(|w| w.starts_with('-')) {
                    i += 1;
                }
                i += 1;
            }
            _ => return Some((word.as_str(), &words[i + 1..])),
        }
    }
}

/// Whether `text` names the path `spelling` as a whole path or a prefix of one: the match is
/// not in the middle of a longer name on either side.
fn mentions(text: &str, spelling: &str) -> bool {
    let is_name_char = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
    text.match_indices(spelling).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + spelling.len()..].chars().next();
        before.is_none_or(|c| !is_name_char(c)) && after.is_none_or(|c| !is_name_char(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn protected() -> Protected {
        Protected::new(
            &[
                PathBuf::from("/home/u/.adaptive-guidebook"),
                PathBuf::from("/home/u/.adaptive-guidebook/sidecar.sock"),
                PathBuf::from("/home/u/.adaptive-guidebook/adaptive-guidebook.db"),
                PathBuf::from("/srv/flags/feature_flags.json"),
                PathBuf::from("/home/u/.adaptive-guidebook/config.yaml"),
            ],
            Some(Path::new("/home/u")),
        )
    }

    fn shell(command: &str) -> HookEvent {
        HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "cwd": "/w", "tool_input": {"command": command}}))
        .unwrap()
    }

    fn denied(command: &str) -> bool {
        check(&shell(command), &protected()).is_some()
    }

    #[test]
    fn the_control_commands_of_the_cli_are_denied() {
        for command in [
            "guidebook breaker reset --session s",
            "guidebook --socket /tmp/x.sock breaker reset --session s",
            "~/.cargo/bin/guidebook flags set hooks_enabled false",
            "cd /w && ADAPTIVE_GUIDEBOOK_HOME=/x guidebook flags set hooks_enabled off",
            "env -i guidebook flags init",
            "ls; guidebook hooks uninstall --codex",
            "echo $(guidebook breaker reset --session s)",
            "guidebook service uninstall",
            "sudo -n guidebook breaker reset --session s",
            "cargo run --bin guidebook -- breaker reset --session s",
            "echo '{}' | guidebook mcp --orchestrator",
            "timeout 5 guidebook flags set x y",
        ] {
            assert!(denied(command), "{command}");
        }
    }

    #[test]
    fn the_cli_s_other_commands_and_ordinary_commands_pass() {
        for command in [
            "guidebook status",
            "guidebook breaker status --session s",
            "guidebook flags list",
            "guidebook explain src/a.py",
            "guidebook doctor",
            "cargo test && ruff check .",
            "git commit -m 'guidebook flags set is documented'",
            "grep -rn breaker src/",
            "cat ~/.adaptive-guidebook/sidecar.log",
            "tail -n 50 /home/u/.adaptive-guidebook/sidecar.log 2>/dev/null",
            "ls -la ~/.adaptive-guidebook",
            "jq . /srv/flags/feature_flags.json > /tmp/flags.json",
            "cat /home/u/.adaptive-guidebook-old/x > /home/u/y",
            "echo apply_patch",
            "cd /home/u/src/guidebook-site && kill %1",
            "pkill -f vite",
        ] {
            assert!(!denied(command), "{command}");
        }
    }

    #[test]
    fn writing_or_talking_to_the_sidecar_s_places_is_denied() {
        for command in [
            "curl --unix-socket ~/.adaptive-guidebook/sidecar.sock http://x/ -d '{\"method\":\"resetBreaker\"}'",
            "socat - UNIX-CONNECT:/home/u/.adaptive-guidebook/sidecar.sock",
            "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('$HOME/.adaptive-guidebook/sidecar.sock')\"",
            "sqlite3 ${HOME}/.adaptive-guidebook/adaptive-guidebook.db 'delete from breaker_runs'",
            "rm -rf ~/.adaptive-guidebook",
            "cd ~ && rm -rf .adaptive-guidebook",
            "echo '{}' > /srv/flags/feature_flags.json",
            "cat new.json >> \"/srv/flags/feature_flags.json\"",
            "echo x | tee /srv/flags/feature_flags.json",
            "sed -i s/true/false/ /srv/flags/feature_flags.json",
            "cp /tmp/f.json /srv/flags/feature_flags.json",
            "cd /home/u/.adaptive-guidebook && rm adaptive-guidebook.db",
            "printf 'breaker: {}' > ~/.adaptive-guidebook/config.yaml",
            "pkill -f 'guidebook serve'",
            "kill $(pgrep -f guidebook)",
            "systemctl --user stop guidebook.service",
            "kill -9 `pidof guidebook`",
        ] {
            assert!(denied(command), "{command}");
        }
    }

    #[test]
    fn an_edit_tool_writing_below_a_protected_place_is_denied() {
        let write = |path: &str| {
            HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PreToolUse",
                "tool_name": "Write", "cwd": "/w", "tool_input": {"file_path": path}}))
            .unwrap()
        };
        assert!(check(&write("/srv/flags/feature_flags.json"), &protected()).is_some());
        assert!(check(
            &write("/home/u/.adaptive-guidebook/guidebook/x/guideline.yaml"),
            &protected()
        )
        .is_some());
        assert!(check(&write("/w/src/app.py"), &protected()).is_none());
        let patch = HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch", "cwd": "/home/u",
            "tool_input": {"command": "*** Begin Patch\n*** Update File: .adaptive-guidebook/config.yaml\n@@\n-a\n+b\n*** End Patch\n"}}))
        .unwrap();
        assert!(check(&patch, &protected()).is_some());
    }

    #[test]
    fn only_a_tool_about_to_run_is_judged() {
        let after = HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": "guidebook breaker reset --session s"}}))
        .unwrap();
        assert_eq!(check(&after, &protected()), None);
        let gemini = HookEvent::read(&json!({"session_id": "s", "hook_event_name": "BeforeTool",
            "tool_name": "run_shell_command", "tool_input": {"command": "guidebook flags set a b"}}))
        .unwrap();
        let reason = check(&gemini, &protected()).unwrap();
        assert!(reason.contains("`guidebook flags set`"), "{reason}");
        assert!(reason.contains("ask the user"), "{reason}");
    }

    #[test]
    fn mentions_are_whole_paths() {
        assert!(mentions("rm /a/b", "/a/b"));
        assert!(mentions("rm '/a/b/c'", "/a/b"));
        assert!(!mentions("rm /a/bc", "/a/b"));
        assert!(!mentions("rm /x/a/b", "/a/b"));
        assert!(mentions(
            "cd ~ && rm .adaptive-guidebook",
            ".adaptive-guidebook"
        ));
        assert!(mentions(
            "rm ~/.adaptive-guidebook/x",
            ".adaptive-guidebook"
        ));
        assert!(!mentions(
            "rm ~/.adaptive-guidebook-old",
            ".adaptive-guidebook"
        ));
        assert!(!mentions("rm x.adaptive-guidebook", ".adaptive-guidebook"));
    }
}
