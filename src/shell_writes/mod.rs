//! Shell commands that write files: what an agent's shell command changed, and which lines of
//! each file it wrote, so that it gets the same guidelines as an edit. Reads: the files the
//! command names (before and after it), the repository's watcher log. Writes: the watcher's
//! barrier file in the sidecar's directory.
//!
//! `beginShellCommand` (the shell tool's `PreToolUse`) keeps, per (session, call), the moment
//! and the pre-image of every file the command names (size-capped), and arms the watcher of the
//! command's repository ([`watch`]) the first time it sees it. `endShellCommand` (its
//! `PostToolUse`) finds the files changed since: each named file whose content changed (its
//! written lines the diff against its pre-image, [`edits::diff`]; a new one is all written), and each
//! file the watcher saw written in the window (its written lines left to `search`'s fallback,
//! the diff against the last commit). Nothing walks the repository per command.

pub mod watch;

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use watch::RepoWatch;

/// The most repositories watched at once; the one used least recently goes first.
pub const MAX_REPOS: usize = 8;
/// The most commands kept between their begin and their end (the oldest go first).
pub const MAX_RECORDS: usize = 256;
/// The most pre-image bytes one command keeps (the files named first come first).
pub const MAX_CALL_BYTES: u64 = 8 << 20;
/// The most pre-image bytes kept in all.
pub const MAX_TOTAL_BYTES: u64 = 64 << 20;
/// A begin whose end never came is forgotten after this long.
pub const RECORD_TTL: Duration = Duration::from_secs(3600);

/// A file as it was before the command: its stamp, and its content when within the caps.
#[derive(Debug, Clone)]
struct Before {
    stamp: Stamp,
    content: Option<Vec<u8>>,
}

/// What tells a file's versions apart without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

#[derive(Debug)]
struct Named {
    path: PathBuf,
    /// `None`: the file did not exist (or was not a regular file).
    before: Option<Before>,
}

#[derive(Debug)]
struct Record {
    session_id: String,
    call_id: String,
    began: Instant,
    repo: Option<Arc<RepoWatch>>,
    named: Vec<Named>,
    bytes: u64,
}

/// A command about to run, as `beginShellCommand` gives it.
#[derive(Debug, Clone, Default)]
pub struct Begin<'a> {
    pub session_id: &'a str,
    pub call_id: &'a str,
    pub dir: Option<&'a str>,
    pub targets: &'a [String],
    pub mentioned: &'a [String],
}

/// What a begin kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Begun {
    /// Whether the command's repository is watched (its unnamed writes will be found).
    pub watching: bool,
    /// How many named files had a pre-image kept.
    pub kept: usize,
}

/// A command that has run, as `endShellCommand` gives it.
#[derive(Debug, Clone, Default)]
pub struct End<'a> {
    pub session_id: &'a str,
    pub call_id: &'a str,
    pub dir: Option<&'a str>,
    pub targets: &'a [String],
}

/// The files a command changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Absolute paths, the named ones first, each once.
    pub files: Vec<String>,
    /// The lines each file's change wrote, where known (1-based inclusive ranges in the file
    /// as it is now); a file left out has them found by `search` (the diff against the last
    /// commit).
    pub written: BTreeMap<String, edits::LineRanges>,
    /// Whether the command's begin was seen.
    pub begun: bool,
    /// Whether writes may have gone unseen (no watcher, a full log, a late barrier).
    pub incomplete: bool,
}

/// The shell-writes state of one daemon: the open commands and the repositories' watchers.
#[derive(Debug)]
pub struct ShellWrites {
    barrier_dir: PathBuf,
    max_file_bytes: u64,
    records: Mutex<Vec<Record>>,
    /// Least recently used first.
    repos: Mutex<Vec<Arc<RepoWatch>>>,
    /// Held while a repository is armed, so that two commands arm it once.
    arming: Mutex<()>,
}

impl ShellWrites {
    /// `barrier_dir`: a directory of the sidecar's own (created when first needed);
    /// `max_file_bytes`: the cap on one file's pre-image (and on what `search` reads).
    pub fn new(barrier_dir: PathBuf, max_file_bytes: u64) -> ShellWrites {
        ShellWrites {
            barrier_dir,
            max_file_bytes,
            records: Mutex::new(Vec::new()),
            repos: Mutex::new(Vec::new()),
            arming: Mutex::new(()),
        }
    }

    /// Keeps the named files as they are now and the moment, for the command's end; arms the
    /// watcher of the command's repository the first time.
    pub fn begin(&self, begin: Begin<'_>) -> Begun {
        let began = Instant::now();
        let mut named = Vec::new();
        let mut bytes = 0u64;
        let mut kept = 0;
        let paths = begin.targets.iter().chain(begin.mentioned);
        for path in paths.take(2 * guidebook_hook::shell_writes::MAX_PATHS) {
            let path = PathBuf::from(path);
            if named.iter().any(|n: &Named| n.path == path) {
                continue;
            }
            let before = Stamp::of(&path).map(|stamp| {
                let room = MAX_CALL_BYTES.saturating_sub(bytes);
                let content = (stamp.size <= self.max_file_bytes.min(room))
                    .then(|| crate::files::read_capped(&path, self.max_file_bytes).ok())
                    .flatten()
                    .filter(|c| !c.truncated)
                    .map(|c| c.bytes);
                if let Some(c) = &content {
                    bytes += c.len() as u64;
                    kept += 1;
                }
                Before { stamp, content }
            });
            named.push(Named { path, before });
        }
        // Armed after the pre-images are read: arming a large repository takes a while, and a
        // host that stops waiting for this hook runs the command meanwhile.
        let repo = begin.dir.and_then(|dir| self.watch_of(Path::new(dir)));
        if let Some(repo) = &repo {
            repo.adopt_new_dirs();
        }
        let record = Record {
            session_id: begin.session_id.to_owned(),
            call_id: begin.call_id.to_owned(),
            began,
            repo: repo.clone(),
            named,
            bytes,
        };
        self.keep(record);
        Begun {
            watching: repo.is_some_and(|r| r.watching()),
            kept,
        }
    }

    /// The files the command changed since its begin (see [`Changes`]). Without a begin, the
    /// named targets that exist count as changed, their written lines unknown.
    pub fn end(&self, end: End<'_>) -> Changes {
        let record = {
            let mut records = self.records.locked();
            records
                .iter()
                .position(|r| r.session_id == end.session_id && r.call_id == end.call_id)
                .map(|at| records.remove(at))
        };
        let mut changes = Changes::default();
        let Some(record) = record else {
            for target in end.targets {
                if Stamp::of(Path::new(target)).is_some() && !changes.files.contains(target) {
                    changes.files.push(target.clone());
                }
            }
            changes.incomplete = true;
            return changes;
        };
        changes.begun = true;
        let settled = record.repo.as_ref().map(|repo| repo.settle());
        for named in &record.named {
            let Some(now) = Stamp::of(&named.path) else {
                continue;
            };
            let key = named.path.to_string_lossy().into_owned();
            match &named.before {
                None => {
                    // New: every line is written.
                    let written = crate::files::read_capped(&named.path, self.max_file_bytes)
                        .ok()
                        .map(|c| edits::LineRanges::all(edits::lines::line_count(&c.bytes)));
                    changes.files.push(key.clone());
                    if let Some(written) = written {
                        changes.written.insert(key, written);
                    }
                }
                Some(before) if before.stamp == now => {}
                Some(before) => {
                    let after = crate::files::read_capped(&named.path, self.max_file_bytes).ok();
                    match (&before.content, after) {
                        (Some(old), Some(new)) if !new.truncated => {
                            if *old == new.bytes {
                                continue;
                            }
                            changes.files.push(key.clone());
                            changes
                                .written
                                .insert(key, edits::diff::written_lines(old, &new.bytes));
                        }
                        _ => changes.files.push(key),
                    }
                }
            }
        }
        match &record.repo {
            Some(repo) if repo.watching() => {
                let seen = repo.since(record.began);
                changes.incomplete |=
                    seen.incomplete || settled != Some(true) || repo.armed_at > record.began;
                let unnamed: Vec<String> = seen
                    .paths
                    .into_iter()
                    .filter(|p| !record.named.iter().any(|n| n.path == *p))
                    .map(|p| p.to_string_lossy().into_owned())
                    .collect();
                for path in unnamed {
                    if changes.files.len() >= guidebook_hook::protocol::MAX_FILEPATHS {
                        changes.incomplete = true;
                        break;
                    }
                    if !changes.files.contains(&path) {
                        changes.files.push(path);
                    }
                }
                repo.adopt_new_dirs();
            }
            _ => changes.incomplete = true,
        }
        changes
    }

    /// The watched repositories: (root, directories watched, what arming took).
    pub fn watched(&self) -> Vec<(PathBuf, usize, Duration)> {
        self.repos
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.root.clone(), r.dirs, r.arm_took))
            .collect()
    }

    fn keep(&self, record: Record) {
        let mut records = self.records.locked();
        let now = Instant::now();
        records.retain(|r| now.duration_since(r.began) < RECORD_TTL);
        // The same command begun again before its end: the newer begin stands.
        records.retain(|r| !(r.session_id == record.session_id && r.call_id == record.call_id));
        records.push(record);
        let mut total: u64 = records.iter().map(|r| r.bytes).sum();
        while records.len() > MAX_RECORDS || (total > MAX_TOTAL_BYTES && records.len() > 1) {
            let gone = records.remove(0);
            total -= gone.bytes;
        }
    }

    /// The watcher of the repository holding `dir`, armed now if it is new; `None` outside
    /// a repository.
    fn watch_of(&self, dir: &Path) -> Option<Arc<RepoWatch>> {
        let root = crate::repo::find_repository(&dir.join("-")).map(|r| r.root)?;
        if let Some(found) = self.touch(&root) {
            return Some(found);
        }
        let _arming = self.arming.locked();
        if let Some(found) = self.touch(&root) {
            return Some(found);
        }
        if let Err(e) = create_private_dir(&self.barrier_dir) {
            tracing::warn!(dir = %self.barrier_dir.display(), error = %e, "cannot create the watcher's barrier directory");
        }
        let number = {
            use std::sync::atomic::{AtomicU64, Ordering};
            static ARMED: AtomicU64 = AtomicU64::new(0);
            ARMED.fetch_add(1, Ordering::Relaxed)
        };
        let name = format!("b{}-{number}", std::process::id());
        let repo = Arc::new(RepoWatch::arm(&root, &self.barrier_dir, &name));
        tracing::info!(
            root = %root.display(),
            dirs = repo.dirs,
            complete = repo.complete,
            took_ms = repo.arm_took.as_secs_f64() * 1000.0,
            "watching a repository for shell commands' writes"
        );
        let mut repos = self.repos.locked();
        repos.push(repo.clone());
        if repos.len() > MAX_REPOS {
            repos.remove(0);
        }
        Some(repo)
    }

    fn touch(&self, root: &Path) -> Option<Arc<RepoWatch>> {
        let mut repos = self.repos.locked();
        let at = repos.iter().position(|r| r.root == root)?;
        let repo = repos.remove(at);
        repos.push(repo.clone());
        Some(repo)
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(dir: &Path) -> PathBuf {
        let work = dir.join("work");
        std::fs::create_dir_all(work.join(".git")).unwrap();
        std::fs::write(work.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(work.join("src/deep")).unwrap();
        std::fs::create_dir_all(work.join("build")).unwrap();
        std::fs::write(work.join(".gitignore"), "build/\n*.log\n").unwrap();
        std::fs::write(work.join("src/A.kt"), "a\nb\nc\n").unwrap();
        std::fs::write(work.join("src/deep/B.kt"), "x\n").unwrap();
        work
    }

    fn s(path: &Path) -> String {
        path.display().to_string()
    }

    #[test]
    fn named_files_are_diffed_and_unnamed_writes_come_from_the_watcher() {
        let dir = tempfile::tempdir().unwrap();
        let work = repo(dir.path());
        let shell = ShellWrites::new(dir.path().join("barrier"), 1 << 20);
        let (a, b, new) = (
            work.join("src/A.kt"),
            work.join("src/deep/B.kt"),
            work.join("src/New.kt"),
        );
        // The first command in a repository arms its watcher after its window opened: what it
        // wrote meanwhile may be missed, and its end says so. The next one's window is whole.
        let warm = shell.begin(Begin {
            session_id: "s",
            call_id: "warm",
            dir: Some(&s(&work)),
            targets: &[],
            mentioned: &[],
        });
        assert!(warm.watching);
        let first = shell.end(End {
            session_id: "s",
            call_id: "warm",
            dir: Some(&s(&work)),
            targets: &[],
        });
        assert!(first.begun && first.incomplete, "{first:?}");
        let targets = [s(&a), s(&new)];
        let begun = shell.begin(Begin {
            session_id: "s",
            call_id: "c1",
            dir: Some(&s(&work)),
            targets: &targets,
            mentioned: &[s(&work.join("src/missing.kt"))],
        });
        assert_eq!(
            begun,
            Begun {
                watching: true,
                kept: 1
            }
        );
        // The command: rewrites A (as sed -i does, a new inode), creates New, writes B
        // unnamed, a new directory with a file, and files git ignores.
        let tmp = work.join("src/.sedtmp");
        std::fs::write(&tmp, "a\nB\nc\n").unwrap();
        std::fs::rename(&tmp, &a).unwrap();
        std::fs::write(&new, "n1\nn2\n").unwrap();
        std::fs::write(&b, "x\ny\n").unwrap();
        std::fs::create_dir_all(work.join("gen/sub")).unwrap();
        std::fs::write(work.join("gen/sub/G.kt"), "g\n").unwrap();
        std::fs::write(work.join("build/out.kt"), "o\n").unwrap();
        std::fs::write(work.join("src/run.log"), "l\n").unwrap();
        let changes = shell.end(End {
            session_id: "s",
            call_id: "c1",
            dir: Some(&s(&work)),
            targets: &targets,
        });
        assert!(changes.begun);
        assert!(!changes.incomplete, "{changes:?}");
        assert_eq!(
            changes.files,
            [s(&a), s(&new), s(&b), s(&work.join("gen/sub/G.kt"))]
        );
        assert_eq!(changes.written[&s(&a)], [[2, 2]]);
        assert_eq!(changes.written[&s(&new)], [[1, 2]]);
        assert_eq!(
            changes.written.get(&s(&b)),
            None,
            "left to search's fallback"
        );

        // The next command sees writes in the directory created by the last one, and a
        // command that changes nothing changes nothing.
        shell.begin(Begin {
            session_id: "s",
            call_id: "c2",
            dir: Some(&s(&work)),
            targets: &[s(&a)],
            ..Begin::default()
        });
        std::fs::write(work.join("gen/sub/H.kt"), "h\n").unwrap();
        std::fs::write(&a, "a\nB\nc\n").unwrap();
        let changes = shell.end(End {
            session_id: "s",
            call_id: "c2",
            dir: Some(&s(&work)),
            targets: &[],
        });
        assert_eq!(
            changes.files,
            [s(&work.join("gen/sub/H.kt"))],
            "{changes:?}"
        );
        assert_eq!(shell.watched().len(), 1, "armed once");

        // An end without its begin: the named targets that exist, lines unknown.
        let changes = shell.end(End {
            session_id: "s",
            call_id: "never-begun",
            dir: Some(&s(&work)),
            targets: &[s(&a), s(&work.join("nope"))],
        });
        assert!(!changes.begun && changes.incomplete);
        assert_eq!(changes.files, [s(&a)]);
        assert!(changes.written.is_empty());
    }

    #[test]
    fn outside_a_repository_only_named_files_count() {
        let dir = tempfile::tempdir().unwrap();
        let loose = dir.path().join("loose.txt");
        std::fs::write(&loose, "1\n").unwrap();
        let shell = ShellWrites::new(dir.path().join("barrier"), 1 << 20);
        let begun = shell.begin(Begin {
            session_id: "s",
            call_id: "c",
            dir: Some(&s(dir.path())),
            targets: &[s(&loose)],
            ..Begin::default()
        });
        assert!(!begun.watching);
        std::fs::write(&loose, "1\n2\n").unwrap();
        let changes = shell.end(End {
            session_id: "s",
            call_id: "c",
            ..End::default()
        });
        assert_eq!(changes.files, [s(&loose)]);
        assert_eq!(changes.written[&s(&loose)], [[2, 2]]);
        assert!(changes.incomplete, "no watcher");
    }
}
