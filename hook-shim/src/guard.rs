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

use edits::shell::words;
use std::path::{Path, PathBuf};

use crate::event::{EventName, HookEvent, ToolInput};
use edits::paths::{resolve, resolve_dir};

/// The places an agent must not change or talk to: the sidecar's home directory, its socket,
/// database, flags file and config file, each in every spelling a shell command may use; and
/// the places below them it may use freely (the guidebook root, which the user's guidelines
/// live in and an agent may help author).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Absolute paths, normalised, without a trailing slash.
    places: Vec<String>,
    /// Each place as a command may spell it (absolute, `~/…`, `$HOME/…`, `${HOME}/…`), with
    /// the absolute path it stands for.
    spellings: Vec<(String, String)>,
    /// File names distinctive enough to be recognised alone (`.adaptive-guidebook`), as a
    /// command run from the home directory would name them.
    names: Vec<String>,
    /// Places below a protected one that are not protected (the guidebook root).
    exempt: Vec<String>,
    /// The user's home, for `~/` in a glob.
    home: Option<String>,
}

impl Protected {
    /// The places `paths` (the sidecar's home first, then its socket, database, flags and
    /// config files; relative ones are ignored), spelled also relative to the user's `home`.
    pub fn new(paths: &[PathBuf], home: Option<&Path>) -> Protected {
        let mut protected = Protected {
            home: home
                .and_then(Path::to_str)
                .filter(|h| h.starts_with('/'))
                .map(|h| h.trim_end_matches('/').to_owned())
                .filter(|h| !h.is_empty()),
            ..Protected::default()
        };
        for path in paths {
            let Some(path) = absolute(path) else {
                continue;
            };
            if protected.places.contains(&path) {
                continue;
            }
            protected.spellings.push((path.clone(), path.clone()));
            if let Some(home) = &protected.home {
                if let Some(rest) = path
                    .strip_prefix(home.as_str())
                    .and_then(|r| r.strip_prefix('/'))
                {
                    for prefix in ["~/", "$HOME/", "${HOME}/"] {
                        protected
                            .spellings
                            .push((format!("{prefix}{rest}"), path.clone()));
                    }
                }
            }
            let name = path.rsplit('/').next().unwrap_or_default();
            if name.contains("guidebook") && !protected.names.iter().any(|n| n == name) {
                protected.names.push(name.to_owned());
            }
            protected.places.push(path);
        }
        // Longest spellings first, so that a path is read against the most specific one.
        protected
            .spellings
            .sort_by_key(|(spelling, _)| std::cmp::Reverse(spelling.len()));
        protected
    }

    /// The same places, with `exempt` (and everything below it) free to use.
    pub fn except(mut self, exempt: &[PathBuf]) -> Protected {
        self.exempt
            .extend(exempt.iter().filter_map(|p| absolute(p)));
        self
    }

    /// Whether `text` names one of the places (or anything below one that is not exempt),
    /// spelled out or by a glob.
    fn named_in(&self, text: &str) -> bool {
        let spelled = self.spellings.iter().any(|(spelling, stands_for)| {
            occurrences(text, spelling).any(|at| {
                let rest: String = text[at + spelling.len()..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && !"'\";|&<>()`,=".contains(*c))
                    .collect();
                let path = format!("{stands_for}{rest}");
                let path = resolve_dir(None, &path).unwrap_or(path);
                self.holds(&path)
            })
        });
        spelled
            // A name alone (`rm -rf .adaptive-guidebook` in the home directory); after a `/` it
            // is part of a path the spellings above have judged.
            || self.names.iter().any(|name| {
                occurrences(text, name).any(|at| !text[..at].ends_with('/'))
            })
            || words(text).iter().any(|word| self.globbed(word))
    }

    /// Whether the glob `word` (`~/.adaptive-g*/*.db`) could name a place, something below
    /// one, or a directory above one.
    fn globbed(&self, word: &str) -> bool {
        if !word.contains(['*', '?', '[']) {
            return false;
        }
        let expanded = match (&self.home, word) {
            (Some(home), w) if w.starts_with("~/") => format!("{home}/{}", &w[2..]),
            (Some(home), w) if w.starts_with("$HOME/") => format!("{home}/{}", &w[6..]),
            (Some(home), w) if w.starts_with("${HOME}/") => format!("{home}/{}", &w[8..]),
            _ => word.to_owned(),
        };
        if !expanded.starts_with('/') {
            return false;
        }
        let pattern: Vec<&str> = expanded.split('/').filter(|c| !c.is_empty()).collect();
        self.places.iter().any(|place| {
            let place: Vec<&str> = place.split('/').filter(|c| !c.is_empty()).collect();
            pattern
                .iter()
                .zip(&place)
                .all(|(p, c)| glob_component(p.as_bytes(), c.as_bytes()))
        })
    }

    /// Whether the absolute `path` is one of the places or below one, and not exempt.
    fn holds(&self, path: &str) -> bool {
        let below = |place: &String| {
            path == place
                || path
                    .strip_prefix(place.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        self.places.iter().any(below) && !self.exempt.iter().any(below)
    }
}

/// `path` absolute and normalised (`..`, `.`, `//` folded, a `/proc/self/root` prefix dropped),
/// or `None` when it is relative or not UTF-8.
fn absolute(path: &Path) -> Option<String> {
    let path = path.to_str().filter(|p| p.starts_with('/'))?;
    normalised(path)
}

fn normalised(path: &str) -> Option<String> {
    let path = resolve_dir(None, path).unwrap_or_else(|| path.to_owned());
    let path = match path.strip_prefix("/proc/") {
        Some(rest) => match rest.split_once('/') {
            Some((_, "root")) => "/".to_owned(),
            Some((_, after)) => after
                .strip_prefix("root/")
                .map(|r| format!("/{r}"))
                .unwrap_or(path),
            None => path,
        },
        None => path,
    };
    (!path.is_empty()).then_some(path)
}

/// Whether [`check`] has anything to judge in `event`: a shell command or an edit about to run.
/// Every other event (every `PostToolUse`, the hook's busiest path) needs no protected places.
pub fn judges(event: &HookEvent) -> bool {
    matches!(
        event.name,
        EventName::PreToolUse | EventName::PreSkillShellCommand
    ) && event.tool.as_ref().is_some_and(|tool| {
        matches!(
            tool.input,
            ToolInput::Shell {
                command: Some(_),
                ..
            } | ToolInput::Patch(_)
                | ToolInput::EditFile(Some(_))
        )
    })
}

/// The deny reason for `event` when it would lift a guardrail, else `None`. Only a tool call
/// about to run (`PreToolUse`, Gemini CLI's `BeforeTool`) and a skill's shell command about to
/// run (Claude Code's `PreSkillShellCommand`) are judged.
pub fn check(event: &HookEvent, protected: &Protected) -> Option<String> {
    if !matches!(
        event.name,
        EventName::PreToolUse | EventName::PreSkillShellCommand
    ) {
        return None;
    }
    let tool = event.tool.as_ref()?;
    let cwd = event.cwd.as_deref();
    let what = match &tool.input {
        ToolInput::Shell {
            command: Some(command),
            ..
        } => judge_command(&command.text(), event.command_dir().as_deref(), protected)?,
        ToolInput::Patch(patches) => patches
            .iter()
            .find_map(|patch| patch_writes_into(patch, cwd, protected))?,
        ToolInput::EditFile(Some(file)) => {
            let file = resolve(cwd, file).and_then(|f| normalised(&f))?;
            protected
                .holds(&file)
                .then(|| format!("write the sidecar's own file {file}"))?
        }
        _ => return None,
    };
    Some(reason(&what))
}

/// What a patch would do to a protected place: every path it names counts, the files it deletes
/// and the old names of the files it moves too (deleting the flags file turns every flag off).
fn patch_writes_into(patch: &str, base: Option<&str>, protected: &Protected) -> Option<String> {
    patch.lines().find_map(|line| {
        let line = line.trim();
        let path = [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|marker| line.strip_prefix(marker))?
        .trim();
        let path = resolve(base, path).and_then(|p| normalised(&p))?;
        protected
            .holds(&path)
            .then(|| format!("write the sidecar's own file {path}"))
    })
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

/// What the shell command `text`, run in `dir`, would do to the guardrails, if anything.
fn judge_command(text: &str, dir: Option<&str>, protected: &Protected) -> Option<String> {
    judge(text, dir, protected, 0)
}

/// Shells whose `-c` argument is a command text of its own.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "fish"];

/// Words that open or join a shell construct and run no program themselves.
pub(crate) const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in",
    "case", "esac", "builtin",
];

fn judge(text: &str, dir: Option<&str>, protected: &Protected, depth: usize) -> Option<String> {
    if depth > 4 {
        return None;
    }
    let (commands, heredoc_patches) = split_heredocs(text);
    // A heredoc is data, not commands; but a patch handed to `apply_patch` is an edit.
    if let Some(what) = heredoc_patches
        .iter()
        .find_map(|patch| patch_writes_into(patch, dir, protected))
    {
        return Some(what);
    }
    let names_us = commands.contains("guidebook");
    let looked_up_us = segments(&commands).iter().any(|segment| {
        let words = words(segment);
        strip_wrappers(&words).is_some_and(|(program, args)| {
            matches!(
                basename(program),
                "pgrep" | "pidof" | "ps" | "grep" | "egrep" | "rg" | "lsof" | "fuser"
            ) && args.iter().any(|a| a.contains("guidebook"))
        })
    });
    for segment in segments(&commands) {
        let all = words(&segment);
        let start = all
            .iter()
            .position(|w| !KEYWORDS.contains(&w.as_str()))
            .unwrap_or(all.len());
        let words = &all[start..];
        let Some((program, args)) = strip_wrappers(words) else {
            continue;
        };
        let name = basename(program);
        if SHELLS.contains(&name) {
            if let Some(script) = dash_c(args) {
                if let Some(what) = judge(script, dir, protected, depth + 1) {
                    return Some(what);
                }
            }
        }
        if name == "eval" {
            if let Some(what) = judge(&args.join(" "), dir, protected, depth + 1) {
                return Some(what);
            }
        }
        if let Some(what) = guidebook_control(name, args, words, names_us) {
            return Some(what);
        }
        if let Some(what) = stops_the_sidecar(name, args, looked_up_us) {
            return Some(what);
        }
        if let Some(what) = removes_our_plugin(name, args) {
            return Some(what);
        }
        if protected.named_in(&segment)
            && (!is_reader(name, args) || redirects_into(&segment, protected))
        {
            return Some(format!(
                "change or talk to the sidecar's own files or socket (`{}`)",
                segment.trim()
            ));
        }
    }
    None
}

/// A program's file name: `/usr/bin/guidebook` → `guidebook`.
pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// The script of `sh -c SCRIPT` (also `-lc`, `-ec`, …), if these are such a shell's arguments.
pub(crate) fn dash_c(args: &[String]) -> Option<&str> {
    let at = args
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))?;
    args.get(at + 1).map(String::as_str)
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
    "sort",
    "uniq",
    "cut",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "column",
];

/// Whether `program args` only reads: a reader, `sed` without `-i`, `find` that neither deletes
/// nor runs nor writes anything.
pub(crate) fn is_reader(program: &str, args: &[String]) -> bool {
    match program {
        // `-i`, `-ni`, `-i.bak`, `--in-place`: it writes the file back.
        "sed" => !args.iter().any(|a| {
            a.starts_with("--in-place")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
        }),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete"
                    | "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        _ => READERS.contains(&program),
    }
}

/// Global options of the `guidebook` CLI that take a value.
const GLOBAL_VALUE_OPTIONS: &[&str] = &[
    "--socket",
    "--db",
    "--guidebook-root",
    "--flags",
    "--config",
    "--metrics-dir",
];

/// Programs whose arguments are text, not a command: `git commit -m "… guidebook …"`.
const TEXT_PROGRAMS: &[&str] = &[
    "echo", "printf", "git", "gh", "glab", "grep", "egrep", "fgrep", "rg", "man", "which", "type",
    "whereis", "apropos", "cat", "less", "head", "tail",
];

/// The control command a simple command runs, if it is one of `guidebook`'s: `guidebook …`
/// itself, the `guidebook` word anywhere after a wrapper's options (`nice -n 10 guidebook …`),
/// `cargo run … -- …` (in this repository `cargo run` runs `guidebook`), or a control verb
/// after a command substitution that found it (`$(command -v guidebook) breaker reset`).
fn guidebook_control(
    program: &str,
    args: &[String],
    words: &[String],
    names_us: bool,
) -> Option<String> {
    let cli: &[String] = if program == "guidebook" {
        args
    } else if program == "cargo" && args.first().is_some_and(|a| a == "run" || a == "r") {
        let dash = args.iter().position(|a| a == "--")?;
        &args[dash + 1..]
    } else if let Some(at) = words.iter().position(|w| basename(w) == "guidebook") {
        if TEXT_PROGRAMS.contains(&program) {
            return None;
        }
        &words[at + 1..]
    } else if names_us && matches!(program, "breaker" | "flags" | "hooks" | "service" | "mcp") {
        let first = words.iter().position(|w| w == program)?;
        &words[first..]
    } else {
        return None;
    };
    judge_cli(cli)
}

/// What the `guidebook` arguments `cli` would change, if they are a control command.
fn judge_cli(cli: &[String]) -> Option<String> {
    let mut positional = Vec::new();
    let mut flags = Vec::new();
    let mut rest = cli.iter();
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
        ["mcp", ..] if flags.iter().any(|f| f.starts_with("--orchestrator")) => {
            "record orchestrator metrics (`guidebook mcp --orchestrator`)"
        }
        // Trust is the user's to give: an agent steered by a repository's rule file must not
        // have that file served by trusting it itself. Looking is allowed.
        ["trust", ..] if !flags.iter().any(|f| matches!(*f, "--list" | "--dry-run")) => {
            "trust a repository's rule files (`guidebook trust`): only the user may"
        }
        ["untrust", ..] => "change which repositories are trusted (`guidebook untrust`)",
        _ => return None,
    };
    Some(control.to_owned())
}

/// The name of our Claude Code plugin, its marketplace and our Gemini CLI extension.
const PLUGIN: &str = "adaptive-guidebook";

/// Whether the command takes our plugin or extension out of the agent with the agent's own
/// CLI: `claude plugin uninstall|remove|rm|disable adaptive-guidebook…` (or `disable --all`),
/// `claude plugin marketplace remove|rm adaptive-guidebook`, `gemini extensions|extension
/// uninstall|disable adaptive-guidebook` (or `--all`, or the extension's source path). The verbs
/// are found anywhere among the words, so global options before them (`gemini -m x …`) and
/// `npx [-p] @anthropic-ai/claude-code …` change nothing.
fn removes_our_plugin(program: &str, args: &[String]) -> Option<String> {
    let agent_of = |word: &str| {
        let package = word.strip_prefix('@').unwrap_or(word);
        match package.split('@').next().unwrap_or(package) {
            "anthropic-ai/claude-code" | "claude" => Some("claude"),
            "google/gemini-cli" | "gemini" => Some("gemini"),
            _ => None,
        }
    };
    // The program first: most commands are no agent's CLI and end here.
    let program = match program {
        "npx" | "bunx" | "pnpx" => args.iter().find_map(|w| agent_of(w))?,
        other => agent_of(other)?,
    };
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let all = words.iter().any(|w| matches!(*w, "--all" | "-a"));
    let names_us = words.iter().any(|w| {
        w.strip_prefix(PLUGIN)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('@'))
            || (program == "gemini" && w.trim_end_matches('/').ends_with("integrations/gemini-cli"))
    });
    let positional: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !w.starts_with('-'))
        .collect();
    let found = |sequence: &[&[&str]]| {
        positional
            .windows(sequence.len())
            .find(|window| {
                window
                    .iter()
                    .zip(sequence)
                    .all(|(w, one_of)| one_of.contains(w))
            })
            .map(|window| window.join(" "))
    };
    const PLUGIN_WORDS: &[&str] = &["plugin", "plugins"];
    let what = match program {
        "claude" => found(&[PLUGIN_WORDS, &["marketplace"], &["remove", "rm"]])
            .filter(|_| names_us)
            .or_else(|| {
                found(&[PLUGIN_WORDS, &["uninstall", "remove", "rm", "disable"]])
                    .filter(|_| names_us || all)
            })?,
        _ => found(&[&["extensions", "extension"], &["uninstall", "disable"]])
            .filter(|_| names_us || all)?,
    };
    Some(format!(
        "take the Adaptive Guidebook plugin out of the agent (`{program} {what}`)"
    ))
}

/// Whether the command stops the sidecar: `pkill`/`killall` naming it, `kill` of a pid that
/// the same command looked up by its name (`pgrep`, `pidof`, `ps | grep`), or the service
/// manager stopping it.
fn stops_the_sidecar(program: &str, args: &[String], looked_up_us: bool) -> Option<String> {
    let names_us = |s: &str| s.contains("guidebook");
    let stops = match program {
        "pkill" | "killall" => args.iter().any(|a| names_us(a)),
        "kill" => looked_up_us,
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
        words(target).first().is_some_and(|t| protected.named_in(t))
    })
}

/// The command text without its heredoc bodies (data, not commands), and the bodies that are
/// patches handed to `apply_patch`.
pub(crate) fn split_heredocs(text: &str) -> (String, Vec<String>) {
    let mut commands = String::new();
    let mut patches = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        commands.push_str(line);
        commands.push('\n');
        let Some(delimiter) = heredoc_delimiter(line) else {
            continue;
        };
        let mut body = String::new();
        for inner in lines.by_ref() {
            if inner.trim_start_matches('\t') == delimiter {
                break;
            }
            body.push_str(inner);
            body.push('\n');
        }
        if line.contains("apply_patch") || line.contains("applypatch") {
            patches.push(body);
        }
    }
    (commands, patches)
}

/// The delimiter of a heredoc the line opens (`<<EOF`, `<<'EOF'`, `<<"EOF"`, `<<-EOF`), not a
/// here-string (`<<<`).
fn heredoc_delimiter(line: &str) -> Option<String> {
    let at = line
        .match_indices("<<")
        .find(|(i, _)| !line[i + 2..].starts_with('<') && (*i == 0 || !line[..*i].ends_with('<')))?
        .0;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let delimiter: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!delimiter.is_empty()).then_some(delimiter)
}

/// The simple commands of a shell text: split at `;`, `&`, `|`, newlines, parentheses,
/// backquotes and `$(`. Quotes are not respected: a separator inside quotes only makes more,
/// smaller segments, and a segment that names a protected place is judged on its own first word,
/// which then is not a reader: the safe side.
fn segments(text: &str) -> Vec<String> {
    text.replace("$(", "(")
        .split([';', '&', '|', '\n', '(', ')', '`'])
        // What a substitution leaves before the next word: a quote around it.
        .map(|s| s.trim_start_matches(['"', '\'']).to_owned())
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// The program a simple command runs and its arguments, past variable assignments and the
/// wrappers that run another program (`env`, `sudo`, `command`, `exec`, `nohup`, `time`,
/// `nice`, `timeout`, `xargs`).
pub(crate) fn strip_wrappers(words: &[String]) -> Option<(&str, &[String])> {
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

/// Where `spelling` occurs in `text` as a whole path or a prefix of one: not in the middle of a
/// longer name on either side.
fn occurrences<'a>(text: &'a str, spelling: &'a str) -> impl Iterator<Item = usize> + 'a {
    let is_name_char = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-');
    text.match_indices(spelling).filter_map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + spelling.len()..].chars().next();
        (before.is_none_or(|c| !is_name_char(c)) && after.is_none_or(|c| !is_name_char(c)))
            .then_some(at)
    })
}

/// Whether a glob component (`*`, `?`, `[…]` as any one character) matches `name`.
fn glob_component(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob_component(&pattern[1..], name)
                || (!name.is_empty() && glob_component(pattern, &name[1..]))
        }
        (Some(b'['), Some(_)) => match pattern.iter().position(|&b| b == b']') {
            Some(close) => glob_component(&pattern[close + 1..], &name[1..]),
            None => pattern[0] == name[0] && glob_component(&pattern[1..], &name[1..]),
        },
        (Some(b'?'), Some(_)) => glob_component(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) => p == n && glob_component(&pattern[1..], &name[1..]),
        _ => false,
    }
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
        .except(&[PathBuf::from("/home/u/.adaptive-guidebook/guidebook")])
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
    fn taking_our_plugin_out_of_the_agent_is_denied_and_other_plugins_are_not() {
        for command in [
            "claude plugin uninstall adaptive-guidebook@adaptive-guidebook",
            "claude plugin disable adaptive-guidebook",
            "claude plugins remove -s user adaptive-guidebook@adaptive-guidebook",
            "claude plugin marketplace remove adaptive-guidebook",
            "npx @anthropic-ai/claude-code@2.1.328 plugin marketplace rm adaptive-guidebook",
            "npx @google/gemini-cli extensions uninstall adaptive-guidebook",
            "gemini extensions uninstall adaptive-guidebook",
            "gemini extensions disable --scope user adaptive-guidebook",
            "claude plugin rm adaptive-guidebook@adaptive-guidebook",
            "claude plugin disable --all",
            "claude --settings f.json plugin uninstall adaptive-guidebook",
            "npx -p @anthropic-ai/claude-code claude plugin disable -a",
            "gemini extensions uninstall --all",
            "gemini extension uninstall adaptive-guidebook",
            "gemini -m x extensions uninstall adaptive-guidebook",
            "gemini extensions uninstall /opt/adaptive-guidebook-0.1.0/integrations/gemini-cli/",
        ] {
            assert!(denied(command), "{command}");
        }
        for command in [
            "claude plugin uninstall other@market",
            "claude plugin install adaptive-guidebook@adaptive-guidebook",
            "claude plugin list",
            "gemini extensions uninstall other",
            "gemini extensions list",
            "claude plugin uninstall adaptive-guidebook-extra@market",
            "claude plugin marketplace remove other --all",
            "gemini extensions install /opt/ag/integrations/gemini-cli",
            "npx prettier --write adaptive-guidebook",
        ] {
            assert!(!denied(command), "{command}");
        }
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
            "guidebook trust",
            "cd /w/repo && guidebook trust .",
            "guidebook untrust /w/repo",
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
            "guidebook trust --list",
            "guidebook trust --dry-run /w/repo",
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
            "echo '{}' > ~/.adaptive-guidebook/trust.json",
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
            &write("/home/u/.adaptive-guidebook/metrics/ab_test/ab_results_week1.json"),
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
        let mentions = |text: &str, spelling: &str| occurrences(text, spelling).next().is_some();
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

    /// The review's forms: shells, keywords, wrappers with option values, substitutions,
    /// `cargo run` without `--bin`, globs, `ps | grep | xargs kill`.
    #[test]
    fn the_indirect_forms_are_denied_too() {
        for command in [
            "sh -c 'guidebook breaker reset --session s'",
            "bash -lc \"guidebook flags set hooks_enabled --enabled false\"",
            "eval \"guidebook breaker reset --session s\"",
            "{ guidebook breaker reset --session zz; }",
            "if true; then guidebook breaker reset --session zz; fi",
            "for s in a; do guidebook breaker reset --session $s; done",
            "! guidebook breaker reset --session s",
            "builtin command guidebook breaker reset --session s",
            "nice -n 10 guidebook breaker reset --session s",
            "sudo -u me guidebook flags set x --enabled true",
            "timeout -s KILL 5 guidebook breaker reset --session s",
            "env -u FOO guidebook breaker reset --session s",
            "xargs -n 1 guidebook breaker reset --session",
            "stdbuf -oL guidebook breaker reset --session s",
            "setsid guidebook flags init",
            "$(command -v guidebook) breaker reset --session s",
            "\"$(which guidebook)\" breaker reset --session s",
            "cargo run -- breaker reset --session s",
            "cargo r --bin guidebook -- flags set a --enabled false",
            "rm ~/.adaptive-g*/*.db",
            "sqlite3 ~/.adaptive-guide*/adaptive-*.db 'delete from breaker_runs'",
            "nc -U ~/.adaptive-gu*/sidecar.sock",
            "ps aux | grep guidebook | awk '{print $2}' | xargs kill",
            "cat > /srv/flags/feature_flags.json <<'EOF'\n{}\nEOF",
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: /srv/flags/feature_flags.json\n*** End Patch\nEOF",
        ] {
            assert!(denied(command), "{command}");
        }
    }

    /// The everyday commands the review found denied: authoring guidelines in the default root,
    /// reading the sidecar's files, and text that only mentions us.
    #[test]
    fn everyday_commands_that_only_read_or_mention_pass() {
        for command in [
            "guidebook test ~/.adaptive-guidebook/guidebook/no-println",
            "cd ~/.adaptive-guidebook/guidebook && git pull",
            "git -C /home/u/.adaptive-guidebook/guidebook status",
            "sed -n 1,40p ~/.adaptive-guidebook/config.yaml",
            "find ~/.adaptive-guidebook -name '*.log'",
            "sort /home/u/.adaptive-guidebook/sidecar.log | uniq -c",
            "cat ~/.adaptive-guidebook/sidecar.log > \"$TMPDIR/log.txt\"",
            "git commit -m \"guidebook breaker reset is the user's\"",
            "cat > docs/x.md <<'EOF'\nRun `guidebook breaker reset --session ID` yourself.\nThe database is ~/.adaptive-guidebook/adaptive-guidebook.db.\nEOF",
            "git commit -F - <<EOF\nguidebook breaker reset: say only the user may\nEOF",
            "echo guidebook flags set is documented",
            "cargo run -- status",
            "ls ~/.adaptive-*",
        ] {
            assert!(!denied(command), "{command}");
        }
    }

    /// Deletes, moves and paths spelled with `..`, `//` or `/proc/self/root` are edits of the
    /// place they end up at; the guidebook root is the user's to author in.
    #[test]
    fn every_path_an_edit_touches_is_judged_where_it_lands() {
        let edit = |tool: &str, input: serde_json::Value| {
            let event =
                HookEvent::read(&json!({"session_id": "s", "hook_event_name": "PreToolUse",
                "tool_name": tool, "cwd": "/w", "tool_input": input}))
                .unwrap();
            check(&event, &protected()).is_some()
        };
        let patch =
            |body: &str| json!({"command": format!("*** Begin Patch\n{body}*** End Patch\n")});
        assert!(edit(
            "apply_patch",
            patch("*** Delete File: /srv/flags/feature_flags.json\n")
        ));
        assert!(edit(
            "apply_patch",
            patch("*** Update File: /srv/flags/feature_flags.json\n*** Move to: /tmp/f.json\n@@\n-a\n+a\n")
        ));
        assert!(edit(
            "apply_patch",
            patch("*** Add File: /w/../srv/flags/feature_flags.json\n+{}\n")
        ));
        assert!(edit(
            "Write",
            json!({"file_path": "/srv//flags/./feature_flags.json"})
        ));
        assert!(edit(
            "Write",
            json!({"file_path": "/proc/self/root/srv/flags/feature_flags.json"})
        ));
        assert!(edit(
            "Write",
            json!({"file_path": "../home/u/.adaptive-guidebook/config.yaml"})
        ));
        assert!(!edit(
            "Edit",
            json!({"file_path": "/home/u/.adaptive-guidebook/guidebook/no-println/guideline.yaml"})
        ));
        assert!(!edit("apply_patch", patch("*** Delete File: /w/old.py\n")));
    }

    #[test]
    fn glob_components_match_as_a_shell_would() {
        let m = |p: &str, n: &str| glob_component(p.as_bytes(), n.as_bytes());
        assert!(m(".adaptive-g*", ".adaptive-guidebook"));
        assert!(m("*.db", "adaptive-guidebook.db"));
        assert!(m("side?ar.sock", "sidecar.sock"));
        assert!(m("[ab]*", "adaptive"));
        assert!(!m(".adaptive-x*", ".adaptive-guidebook"));
        assert!(!m("*.db", "sidecar.sock"));
    }
}
