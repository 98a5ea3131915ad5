//! The rule files a repository holds: a walk from its root over a fixed list of names and places.
//!
//! The walk ([`rule_files`]) uses the `ignore` crate: hidden entries are walked (`.cursor`,
//! `.claude`, … are hidden), the repository's `.gitignore` files and `.git/info/exclude` are
//! honoured (vendored `node_modules` are not walked; the user's global excludes are not read, so
//! the daemon and the CLI see the same files whatever their environment), `.git` is never
//! entered, nor a nested repository (a directory holding `.git`: a submodule or vendored
//! checkout has rules of its own), and no symlink is followed. A rule file that is a symlink, or
//! a symlink where rule files live (`.cursor -> …`), is reported in [`Discovery::skipped`] and
//! never read. The walk is bounded: at most [`MAX_ENTRIES`] entries visited and
//! `repositoryRules.maxFiles` rule files returned.
//!
//! It runs in the CLI (`guidebook trust`) and on the daemon's background loader, never on a
//! hook's path. Reads: directory entries and `.gitignore` files beneath the root.

use std::path::{Path, PathBuf};

use crate::config::RepositoryRules;
use crate::sources::RuleFormat;

/// At most this many directory entries are visited per repository, so a huge repository (or a
/// generated tree nobody ignored) cannot stall the loader.
pub const MAX_ENTRIES: usize = 200_000;

/// One rule file found beneath a repository root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RuleFile {
    /// Relative to the root, without `.` or `..`.
    pub relative: PathBuf,
    pub format: RuleFormat,
}

/// What a walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The rule files of enabled formats, sorted by relative path, at most `maxFiles`. Not yet
    /// read: each may still be refused by [`crate::sources::read::read_beneath`] (a FIFO, too
    /// large, …).
    pub files: Vec<RuleFile>,
    /// Rule files (or places of rule files) not returned, and why: symlinks, files over the
    /// `maxFiles` cap, entries the walk could not read. Sorted by path.
    pub skipped: Vec<(PathBuf, String)>,
    /// True when the list is incomplete: more rule files than `maxFiles` (the rest are in
    /// `skipped`), or the walk stopped after [`MAX_ENTRIES`] entries (`entries_capped`).
    pub truncated: bool,
    /// The walk stopped after [`MAX_ENTRIES`] entries: rule files further on were not seen.
    pub entries_capped: bool,
}

/// The rule files beneath `root` of the formats `rules` enables; the root's own `AGENTS.md` and
/// `CLAUDE.md` only with `rootFiles`. See the module documentation for what is walked.
pub fn rule_files(root: &Path, rules: &RepositoryRules) -> Discovery {
    walk(root, rules, MAX_ENTRIES)
}

fn walk(root: &Path, rules: &RepositoryRules, max_entries: usize) -> Discovery {
    let mut discovery = Discovery::default();
    let mut found = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(|entry| {
            entry.depth() == 0
                || !(entry.file_name() == ".git"
                    || entry.file_type().is_some_and(|t| t.is_dir())
                        && entry.path().join(".git").symlink_metadata().is_ok())
        })
        .build();
    let mut visited = 0usize;
    for entry in walker {
        visited += 1;
        if visited > max_entries {
            discovery.truncated = true;
            discovery.entries_capped = true;
            break;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let path = error_path(&e)
                    .and_then(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
                    .unwrap_or_default();
                if RuleFormat::of(&path).is_some() || in_rule_place(&path, rules).is_some() {
                    discovery
                        .skipped
                        .push((path, format!("cannot be walked: {e}")));
                }
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            continue;
        }
        let format = RuleFormat::of(relative).filter(|f| wanted(*f, relative, rules));
        if file_type.is_symlink() {
            if format.is_some() {
                discovery
                    .skipped
                    .push((relative.to_path_buf(), "a symlink: not followed".into()));
            } else if in_rule_place(relative, rules).is_some() {
                discovery.skipped.push((
                    relative.to_path_buf(),
                    "a symlink: not followed, nor any rule file behind it".into(),
                ));
            }
            continue;
        }
        if let Some(format) = format {
            // FIFOs, sockets and devices are listed too: the read refuses them, saying why.
            found.push(RuleFile {
                relative: relative.to_path_buf(),
                format,
            });
        }
    }
    found.sort();
    if found.len() > rules.max_files {
        discovery.truncated = true;
        for rest in found.split_off(rules.max_files) {
            discovery.skipped.push((
                rest.relative,
                format!(
                    "over the cap of {} rule files per repository (repositoryRules.maxFiles)",
                    rules.max_files
                ),
            ));
        }
    }
    discovery.files = found;
    discovery.skipped.sort();
    discovery
}

/// Whether a file of `format` at `relative` is read: its format is on, and a root
/// `AGENTS.md`/`CLAUDE.md` only with `rootFiles`.
fn wanted(format: RuleFormat, relative: &Path, rules: &RepositoryRules) -> bool {
    let at_root = relative.components().count() == 1;
    format.enabled(rules)
        && !(at_root
            && matches!(format, RuleFormat::AgentsMd | RuleFormat::ClaudeMd)
            && !rules.root_files)
}

/// The directories rule files live in, by format.
const PLACES: [(&[&str], RuleFormat); 5] = [
    (&[".guidebook"], RuleFormat::Guidebook),
    (&[".cursor", "rules"], RuleFormat::Cursor),
    (&[".claude", "rules"], RuleFormat::ClaudeRules),
    (&[".github", "instructions"], RuleFormat::Copilot),
    (&[".continue", "rules"], RuleFormat::Continue),
];

/// The enabled format whose place `relative` leads to or lies in (`.cursor`, `.cursor/rules`,
/// `.cursor/rules/sub`): a symlink there hides rule files.
fn in_rule_place(relative: &Path, rules: &RepositoryRules) -> Option<RuleFormat> {
    let parts: Vec<&str> = relative.iter().filter_map(|c| c.to_str()).collect();
    if parts.is_empty() || parts.len() != relative.iter().count() {
        return None;
    }
    PLACES.iter().find_map(|(place, format)| {
        let n = parts.len().min(place.len());
        (parts[..n] == place[..n] && format.enabled(rules)).then_some(*format)
    })
}

fn error_path(e: &ignore::Error) -> Option<&Path> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn listed(d: &Discovery) -> Vec<(String, RuleFormat)> {
        d.files
            .iter()
            .map(|f| (f.relative.display().to_string(), f.format))
            .collect()
    }

    fn sample() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir(r.join(".git")).unwrap();
        write(r, ".git/AGENTS.md", "in .git");
        write(r, "AGENTS.md", "root");
        write(r, "CLAUDE.md", "root");
        write(r, "src/api/AGENTS.md", "nested");
        write(r, "src/CLAUDE.md", "nested");
        write(r, ".guidebook/a/guideline.yaml", "id: a");
        write(r, ".guidebook/README.md", "not a rule");
        write(r, ".cursor/rules/api.mdc", "---\n---\n");
        write(r, ".cursor/rules/sub/db.mdc", "x");
        write(r, ".claude/rules/x.md", "x");
        write(r, ".github/instructions/a.instructions.md", "x");
        write(r, ".github/instructions/a.md", "not a rule");
        write(r, ".continue/rules/r.md", "x");
        write(r, ".gitignore", "node_modules/\n");
        write(r, "node_modules/pkg/AGENTS.md", "vendored");
        write(r, "vendor/lib/AGENTS.md", "a nested repository");
        std::fs::create_dir(r.join("vendor/lib/.git")).unwrap();
        dir
    }

    #[test]
    fn finds_each_format_sorted_and_skips_ignored_git_and_nested_repositories() {
        let dir = sample();
        let d = rule_files(dir.path(), &RepositoryRules::default());
        assert_eq!(
            listed(&d),
            vec![
                (".claude/rules/x.md".into(), RuleFormat::ClaudeRules),
                (".continue/rules/r.md".into(), RuleFormat::Continue),
                (".cursor/rules/api.mdc".into(), RuleFormat::Cursor),
                (".cursor/rules/sub/db.mdc".into(), RuleFormat::Cursor),
                (
                    ".github/instructions/a.instructions.md".into(),
                    RuleFormat::Copilot
                ),
                (".guidebook/a/guideline.yaml".into(), RuleFormat::Guidebook),
                ("src/CLAUDE.md".into(), RuleFormat::ClaudeMd),
                ("src/api/AGENTS.md".into(), RuleFormat::AgentsMd),
            ]
        );
        assert!(d.skipped.is_empty(), "{:?}", d.skipped);
        assert!(!d.truncated);
    }

    #[test]
    fn root_files_only_when_configured_and_formats_can_be_turned_off() {
        let dir = sample();
        let rules = RepositoryRules {
            root_files: true,
            cursor: false,
            claude_md: false,
            ..RepositoryRules::default()
        };
        let d = rule_files(dir.path(), &rules);
        let names: Vec<String> = listed(&d).into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&"AGENTS.md".to_string()), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("CLAUDE.md")), "{names:?}");
        assert!(!names.iter().any(|n| n.ends_with(".mdc")), "{names:?}");
    }

    #[test]
    fn symlinks_are_reported_never_listed_nor_walked() {
        let dir = sample();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "rules/evil.mdc", "x");
        write(outside.path(), "secret", "x");
        let r = dir.path();
        std::fs::remove_dir_all(r.join(".cursor")).unwrap();
        symlink(outside.path(), r.join(".cursor")).unwrap();
        symlink(outside.path().join("secret"), r.join("docs-AGENTS.md")).unwrap();
        std::fs::create_dir(r.join("docs")).unwrap();
        symlink(outside.path().join("secret"), r.join("docs/AGENTS.md")).unwrap();
        symlink(outside.path().join("rules"), r.join(".claude/rules/more")).unwrap();
        symlink(outside.path(), r.join("src/linked")).unwrap();
        let d = rule_files(r, &RepositoryRules::default());
        assert!(!listed(&d)
            .iter()
            .any(|(n, _)| n.contains(".cursor") || n.starts_with("docs") || n.contains("more")));
        let skipped: Vec<(String, &str)> = d
            .skipped
            .iter()
            .map(|(p, why)| (p.display().to_string(), why.as_str()))
            .collect();
        assert_eq!(
            skipped,
            vec![
                (
                    ".claude/rules/more".into(),
                    "a symlink: not followed, nor any rule file behind it"
                ),
                (
                    ".cursor".into(),
                    "a symlink: not followed, nor any rule file behind it"
                ),
                ("docs/AGENTS.md".into(), "a symlink: not followed"),
            ]
        );
    }

    #[test]
    fn caps_rule_files_and_entries() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            write(dir.path(), &format!("d{i}/AGENTS.md"), "x");
        }
        let rules = RepositoryRules {
            max_files: 3,
            ..RepositoryRules::default()
        };
        let d = rule_files(dir.path(), &rules);
        assert_eq!(d.files.len(), 3);
        assert_eq!(d.files[2].relative, Path::new("d2/AGENTS.md"));
        assert!(d.truncated && !d.entries_capped);
        assert_eq!(d.skipped.len(), 2);
        assert_eq!(d.skipped[0].0, Path::new("d3/AGENTS.md"));
        assert!(
            d.skipped[0].1.contains("cap of 3 rule files"),
            "{:?}",
            d.skipped
        );

        let d = walk(dir.path(), &RepositoryRules::default(), 4);
        assert!(d.truncated && d.entries_capped);
        assert!(d.files.len() < 5);
    }

    #[test]
    fn a_fifo_with_a_rule_name_is_listed_for_the_read_to_refuse() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
            dir.path().join("src/AGENTS.md").as_os_str(),
        ))
        .unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let d = rule_files(dir.path(), &RepositoryRules::default());
        assert_eq!(
            listed(&d),
            vec![("src/AGENTS.md".into(), RuleFormat::AgentsMd)]
        );
    }
}
