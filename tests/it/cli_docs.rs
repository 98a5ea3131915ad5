//! The README's command-line section against `--help`: every command and every long flag.
//!
//! The section lists one line per command the binaries take (`guidebook COMMAND... [flags]`,
//! then `guidebook-hook [flags]`), after one line of the global flags. Each command that
//! `guidebook --help` lists, down to its leaves, must have its line; each line must name a real
//! command, and its long flags must be exactly the ones that command's `--help` lists, besides
//! `--help`, `--version` and the global flags (which every command's help repeats).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use regex::Regex;

use crate::harness::{guidebook_exe, manifest_dir, shim_exe};

/// Flags every command has and no synopsis names.
const IMPLIED: [&str; 2] = ["--help", "--version"];

/// A command's help text, run as a user would run it.
fn help(exe: &Path, command: &[String]) -> String {
    let out = Command::new(exe)
        .args(command)
        .arg("--help")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} {} --help: {}",
        exe.display(),
        command.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The long flags a help text lists under its options (`  -h, --help`, `      --db <PATH>`).
fn help_flags(text: &str) -> BTreeSet<String> {
    let option = Regex::new(r"^\s+(?:-[A-Za-z], )?(--[a-z][a-z0-9-]*)").unwrap();
    text.lines()
        .filter_map(|line| option.captures(line).map(|c| c[1].to_string()))
        .filter(|flag| !IMPLIED.contains(&flag.as_str()))
        .collect()
}

/// The subcommands a help text lists under `Commands:` (clap's own `help` left out).
fn help_subcommands(text: &str) -> Vec<String> {
    let Some((_, rest)) = text.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every leaf command of `guidebook` with its own long flags, and the global flags.
fn guidebook_commands() -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
    let exe = guidebook_exe();
    let top = help(exe, &[]);
    let global = help_flags(&top);
    let mut leaves = BTreeMap::new();
    let mut stack: Vec<Vec<String>> = help_subcommands(&top)
        .into_iter()
        .map(|name| vec![name])
        .collect();
    while let Some(path) = stack.pop() {
        let text = help(exe, &path);
        let subcommands = help_subcommands(&text);
        if subcommands.is_empty() {
            let own = help_flags(&text).difference(&global).cloned().collect();
            leaves.insert(format!("guidebook {}", path.join(" ")), own);
        } else {
            for name in subcommands {
                let mut child = path.clone();
                child.push(name);
                stack.push(child);
            }
        }
    }
    (global, leaves)
}

/// The fenced blocks of the README's `## Command line` section: its lines that start with
/// `guidebook`, each cut at its first run of two spaces (what follows is the description).
fn readme_synopses(readme: &str) -> Vec<String> {
    let section = readme
        .split_once("\n## Command line\n")
        .expect("README.md has a `## Command line` section")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in section.lines() {
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence && line.starts_with("guidebook") {
            out.push(line.split("  ").next().unwrap().trim_end().to_string());
        }
    }
    out
}

/// A synopsis as (command, long flags): the command is its leading words up to the first
/// argument or flag (`guidebook flags set FLAG [--enabled ...]` is `guidebook flags set`).
fn parse_synopsis(line: &str) -> (String, BTreeSet<String>) {
    let flag = Regex::new(r"--[a-z][a-z0-9-]*").unwrap();
    let words: Vec<&str> = line
        .split_whitespace()
        .take_while(|w| {
            w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !w.starts_with('-')
        })
        .collect();
    let flags = flag
        .find_iter(line)
        .map(|m| m.as_str().to_string())
        .collect();
    (words.join(" "), flags)
}

/// What differs between the documented commands and the real ones; empty when they agree.
fn differences(
    synopses: &[String],
    global: &BTreeSet<String>,
    leaves: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut documented = BTreeSet::new();
    for line in synopses {
        let (command, flags) = parse_synopsis(line);
        let expected = if command == "guidebook" {
            global
        } else if let Some(own) = leaves.get(&command) {
            own
        } else {
            problems.push(format!(
                "`{line}`: `{command}` is not a command --help lists"
            ));
            continue;
        };
        if !documented.insert(command.clone()) {
            problems.push(format!("`{command}` is listed twice"));
        }
        for missing in expected.difference(&flags) {
            problems.push(format!(
                "`{command}`: {missing} is in --help but not in the README"
            ));
        }
        for extra in flags.difference(expected) {
            problems.push(format!(
                "`{command}`: {extra} is in the README but not in --help"
            ));
        }
    }
    for command in leaves
        .keys()
        .chain(std::iter::once(&"guidebook".to_string()))
    {
        if !documented.contains(command) {
            problems.push(format!("`{command}` is in --help but not in the README"));
        }
    }
    problems
}

#[test]
fn the_readmes_command_line_section_matches_help() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let synopses = readme_synopses(&readme);
    let (global, mut leaves) = guidebook_commands();
    assert!(leaves.len() > 20, "too few commands found: {leaves:?}");
    leaves.insert(
        "guidebook-hook".to_string(),
        help_flags(&help(&shim_exe(), &[])),
    );
    let problems = differences(&synopses, &global, &leaves);
    assert!(
        problems.is_empty(),
        "README.md's `## Command line` and --help disagree:\n{}",
        problems.join("\n")
    );
}

/// The comparison itself: it must see a flag missing on either side, an unknown command and a
/// command left out.
#[test]
fn the_comparison_finds_a_missing_flag_and_a_missing_command() {
    let global: BTreeSet<String> = ["--socket".to_string()].into();
    let leaves: BTreeMap<String, BTreeSet<String>> = [
        (
            "guidebook hooks install".to_string(),
            ["--codex", "--trust"].map(String::from).into(),
        ),
        ("guidebook doctor".to_string(), BTreeSet::new()),
        ("guidebook mcp".to_string(), BTreeSet::new()),
    ]
    .into();
    let synopses = [
        "guidebook [--socket PATH] COMMAND",
        "guidebook hooks install --codex [--print]",
        "guidebook doctor",
        "guidebook nope [--x]",
    ]
    .map(String::from);
    assert_eq!(
        differences(&synopses, &global, &leaves),
        [
            "`guidebook hooks install`: --trust is in --help but not in the README",
            "`guidebook hooks install`: --print is in the README but not in --help",
            "`guidebook nope [--x]`: `guidebook nope` is not a command --help lists",
            "`guidebook mcp` is in --help but not in the README",
        ]
    );
    assert_eq!(
        parse_synopsis("guidebook flags set FLAG [--enabled true|false] [--rollout PERCENT]"),
        (
            "guidebook flags set".to_string(),
            ["--enabled", "--rollout"].map(String::from).into()
        )
    );
}
