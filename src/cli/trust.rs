//! `guidebook trust [DIR]`, `guidebook trust --list` and `guidebook untrust [DIR]`: show a
//! repository's rule files as they are and record them as trusted, or forget them.
//!
//! `trust` prints every rule file of the repository holding DIR in full, each under a header
//! (path, format, bytes, hash prefix), with invisible and bidirectional characters shown as
//! `<U+XXXX>`, lists the files it did not read and why, then records the canonical root with the
//! hash of each file shown in `HOME_DIR/trust.json`. The hash is of the very bytes printed, so
//! what is served is what was reviewed. Reads: the repository's rule files (beneath its root,
//! no symlinks), `trust.json`. Writes: `trust.json` (0600, atomic, under its lock).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::CliError;
use crate::config::Settings;
use crate::sources::discover::{rule_files, RuleFile};
use crate::sources::read::read_text_beneath;
use crate::sources::trust::{self, FileState, TrustError, TrustStore, Verdict};
use crate::sources::visible::visible;

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// A directory of the repository (default: the current directory).
    pub dir: Option<PathBuf>,
    /// List the trusted repositories and whether each one's files still match.
    #[arg(long, conflicts_with_all = ["dir", "dry_run"])]
    pub list: bool,
    /// Show the rule files and what would be trusted, and record nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct UntrustArgs {
    /// A directory of the repository (default: the current directory).
    pub dir: Option<PathBuf>,
}

/// What `trust` and `untrust` fail with; printed as `guidebook: error: …`, exit 1.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is not in a git repository: trust is recorded for a repository's root \
         (run `git init` there, or give a directory inside a repository)",
        dir.display()
    )]
    NotARepository { dir: PathBuf },
    #[error("{} is not trusted (`guidebook trust --list` lists the trusted repositories)", root.display())]
    NotTrusted { root: PathBuf },
    #[error(transparent)]
    Store(#[from] TrustError),
}

fn fail(e: Failure) -> ExitCode {
    eprintln!("guidebook: error: {e}");
    ExitCode::FAILURE
}

pub fn run(settings: &Settings, args: TrustArgs) -> Result<ExitCode, CliError> {
    let result = if args.list {
        list(settings)
    } else {
        trust(settings, args.dir, args.dry_run)
    };
    Ok(result.unwrap_or_else(fail))
}

pub fn run_untrust(settings: &Settings, args: UntrustArgs) -> Result<ExitCode, CliError> {
    Ok(untrust(settings, args.dir).unwrap_or_else(fail))
}

/// The canonical root of the repository holding `dir` (default: the current directory).
fn repository_root(dir: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    let canonical = std::fs::canonicalize(&dir).map_err(|source| Failure::Dir {
        dir: dir.clone(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(Failure::Dir {
            dir,
            source: std::io::Error::from(std::io::ErrorKind::NotADirectory),
        });
    }
    // `find_repository` looks from a file's directory upwards: name a file inside `dir`.
    let repo = crate::repo::find_repository(&canonical.join("-"))
        .ok_or(Failure::NotARepository { dir: dir.clone() })?;
    std::fs::canonicalize(&repo.root).map_err(|source| Failure::Dir {
        dir: repo.root,
        source,
    })
}

/// A path from a repository, for a terminal: hidden characters made visible.
fn shown(path: &Path) -> String {
    visible(&path.to_string_lossy()).0
}

fn trust(settings: &Settings, dir: Option<PathBuf>, dry_run: bool) -> Result<ExitCode, Failure> {
    let root = repository_root(dir)?;
    let rules = &settings.repository_rules;
    let store_path = trust::store_path(settings);
    let before = TrustStore::load(&store_path)?;
    let record = before.repository(&root);
    let discovery = rule_files(&root, rules);

    println!("Repository {}", shown(&root));
    println!(
        "Each rule file below is put into your coding agents' context with the guidebook's \
         authority once trusted. Read them."
    );
    let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut refused: Vec<(PathBuf, String)> = discovery.skipped.clone();
    let mut hidden_total = 0;
    let mut bytes = 0u64;
    for RuleFile { relative, format } in &discovery.files {
        let text = match read_text_beneath(&root, relative, rules.max_file_bytes) {
            Ok(text) => text,
            Err(why) => {
                refused.push((relative.clone(), why.to_string()));
                continue;
            }
        };
        bytes += text.len() as u64;
        if bytes > rules.max_bytes {
            refused.push((relative.clone(), trust::over_bytes(rules)));
            continue;
        }
        let hash = trust::hash(text.as_bytes());
        let since = match record.map(|r| r.verdict(relative, &hash)) {
            Some(Verdict::Trusted) => "unchanged since trusted",
            Some(Verdict::Changed) => "changed since trusted",
            Some(Verdict::New) | None => "new",
        };
        let name = shown(relative);
        println!();
        println!(
            "──── {name} · {} · {} bytes · sha256 {} · {since} ────",
            format.config_key(),
            text.len(),
            &hash[..12]
        );
        let (text, hidden) = visible(&text);
        print!("{text}");
        if !text.is_empty() && !text.ends_with('\n') {
            println!();
            println!("(no newline at the end of the file)");
        }
        println!("──── end of {name} ────");
        if hidden > 0 {
            hidden_total += hidden;
            println!(
                "warning: {name} holds {hidden} invisible or bidirectional character(s), shown \
                 above as <U+XXXX>; an agent reads them as they are"
            );
        }
        files.insert(relative.clone(), hash);
    }
    refused.sort();
    if !refused.is_empty() {
        println!();
        println!("Not read, never served:");
        for (path, why) in &refused {
            println!("  {}: {why}", shown(path));
        }
    }
    if discovery.entries_capped {
        println!(
            "warning: the walk stopped after {} entries; rule files further on were not seen",
            crate::sources::discover::MAX_ENTRIES
        );
    }
    println!();
    if hidden_total > 0 {
        println!(
            "warning: {hidden_total} hidden character(s) in all; check the files above before \
             relying on them"
        );
    }
    let count = files.len();
    if dry_run {
        println!(
            "Dry run: {count} rule file(s) of {} would be trusted; nothing was recorded.",
            shown(&root)
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Walking and reading happen before the lock: another `trust` waits only for the save.
    {
        let _lock = trust::lock(&store_path)?;
        let mut store = TrustStore::load(&store_path)?;
        store.trust(&root, files);
        store.save(&store_path)?;
    }
    println!(
        "Trusted {count} rule file(s) of {} (recorded in {}).",
        shown(&root),
        store_path.display()
    );
    println!(
        "A rule file that changes, or a new one, is not served until you run `guidebook trust` \
         again."
    );
    Ok(ExitCode::SUCCESS)
}

fn list(settings: &Settings) -> Result<ExitCode, Failure> {
    let store_path = trust::store_path(settings);
    let store = TrustStore::load(&store_path)?;
    if store.repositories().is_empty() {
        println!(
            "No repository is trusted. `guidebook trust [DIR]` shows a repository's rule files \
             and trusts them."
        );
        return Ok(ExitCode::SUCCESS);
    }
    for record in store.repositories() {
        println!(
            "{}: trusted {}, {} file(s)",
            shown(&record.root),
            record.trusted_at,
            record.files.len()
        );
        if !record.root.is_dir() {
            println!(
                "  the directory is gone (`guidebook untrust {}` forgets it)",
                shown(&record.root)
            );
            continue;
        }
        let state = trust::repository_state(&record.root, &settings.repository_rules, &store);
        let mut quiet = true;
        for (file, file_state) in state.waiting() {
            quiet = false;
            let why = match file_state {
                FileState::Changed => "changed since trusted",
                _ => "not trusted yet",
            };
            println!(
                "  waiting ({}): {}: {why} (`guidebook trust` to review)",
                file_state.word(),
                shown(&file.relative)
            );
        }
        for (file, file_state) in &state.files {
            if let FileState::Refused(why) = file_state {
                quiet = false;
                println!("  refused: {}: {why}", shown(&file.relative));
            }
        }
        for gone in &state.gone {
            quiet = false;
            println!("  gone: {}", shown(gone));
        }
        if state.truncated {
            quiet = false;
            println!("  warning: not every rule file was looked at (a cap of repositoryRules)");
        }
        if quiet {
            println!("  every rule file is as trusted");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn untrust(settings: &Settings, dir: Option<PathBuf>) -> Result<ExitCode, Failure> {
    let store_path = trust::store_path(settings);
    // A root whose directory is gone can still be forgotten by the path it was trusted at.
    let given = dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let absolute = std::path::absolute(&given).unwrap_or(given);
    let root = {
        let store = TrustStore::load(&store_path)?;
        if store.repository(&absolute).is_some() {
            absolute
        } else {
            repository_root(dir)?
        }
    };
    let _lock = trust::lock(&store_path)?;
    let mut store = TrustStore::load(&store_path)?;
    if !store.untrust(&root) {
        return Err(Failure::NotTrusted { root });
    }
    store.save(&store_path)?;
    println!(
        "{} is no longer trusted: none of its rule files is served.",
        shown(&root)
    );
    Ok(ExitCode::SUCCESS)
}
