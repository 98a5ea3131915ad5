//! The files `hooks install|uninstall` reads and writes: where they really are, read without
//! following a link planted in a project, and replaced atomically after a fresh backup.
//!
//! Two scopes, two rules. In a project (`--project DIR`, a repository someone else may have
//! written), nothing below DIR may be a symbolic link: `.claude`, `.codex`, `.gemini`, the
//! settings files and `.mcp.json` are refused if they are links, so that a cloned repository
//! cannot point our write at `~/.bashrc`. In the user's own scope (`~/.claude/settings.json`),
//! links are the user's own (a dotfiles repository): the path is resolved once, the write goes
//! to the resolved file, and the installer says where that is.
//!
//! Every file this module creates is created new (`O_CREAT|O_EXCL|O_NOFOLLOW`): the temp file
//! renamed over the target, and the backup, `<name>.guidebook-<UTC time>[-N].bak`, of which
//! the [`KEEP_BACKUPS`] newest are kept (the one just written always among them; one stamped
//! in the future is not ours); older backups of ours are removed, nothing else is.
//! What remains possible is a race with a process of the same user changing the directories
//! between our check and our write: that process could write those files itself.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How many of our backups of one file are kept.
pub const KEEP_BACKUPS: usize = 5;

/// Settings files are kilobytes (Claude Code's `~/.claude.json`, megabytes); a bigger file is
/// not one of them.
const MAX_BYTES: u64 = 64 << 20;

/// Why a file cannot be read or written safely. Nothing is written when one of these is
/// returned before the writing starts.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A link inside a project: writing through it could land anywhere.
    #[error(
        "{} is a symbolic link (to {}): in a project, guidebook writes only the project's own \
         files, never through a link; replace the link with the file, or install in your user \
         settings instead",
        link.display(),
        target.display()
    )]
    Symlink { link: PathBuf, target: PathBuf },
    /// A FIFO, a device, a directory where a settings file should be.
    #[error("{} is not a regular file", path.display())]
    NotAFile { path: PathBuf },
    /// A file too big to be settings.
    #[error("{} is larger than {} MiB: not a settings file", path.display(), MAX_BYTES >> 20)]
    TooBig { path: PathBuf },
    /// Not UTF-8, so not JSON or TOML.
    #[error("{} is not UTF-8 text", path.display())]
    NotText { path: PathBuf },
    #[error("{doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl FileError {
    fn io(doing: &'static str, path: &Path, source: io::Error) -> FileError {
        FileError::Io {
            doing,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Whose file it is, which decides whether links are followed.
#[derive(Debug, Clone)]
pub enum Scope {
    /// The user's own settings: their links are followed (resolved once, and said).
    User,
    /// A project, by its canonical directory: no link below it is followed.
    Project(PathBuf),
}

/// A file to edit: the path as named (printed, and the one Codex keys trust records by) and
/// the path actually read and written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub named: PathBuf,
    pub real: PathBuf,
    project: Option<PathBuf>,
}

impl Located {
    /// The resolved path, when a link of the user's made it differ from the named one.
    pub fn resolved(&self) -> Option<&Path> {
        (self.real != self.named).then_some(self.real.as_path())
    }
}

/// A file's content when it was read: its text and mode, or `None` for a missing file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub text: String,
    pub mode: Option<u32>,
}

/// Where the file `named` is, under `scope`'s rule: a link below a project's directory is an
/// error naming it; the user's own path is resolved through their links.
pub fn locate(named: &Path, scope: &Scope) -> Result<Located, FileError> {
    match scope {
        Scope::Project(root) => {
            check_no_links_below(root, named)?;
            Ok(Located {
                named: named.to_path_buf(),
                real: named.to_path_buf(),
                project: Some(root.clone()),
            })
        }
        Scope::User => {
            let real = match std::fs::canonicalize(named) {
                Ok(real) => real,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if std::fs::symlink_metadata(named).is_ok() {
                        // A link to nothing: creating its target would write where the link
                        // points, unseen; say so instead.
                        return Err(FileError::io(
                            "resolving the link",
                            named,
                            io::Error::new(io::ErrorKind::NotFound, "it points to a missing file"),
                        ));
                    }
                    // A new file: its directory may be a link of the user's (~/.claude into a
                    // dotfiles repository); resolve what exists of it.
                    match (named.parent(), named.file_name()) {
                        (Some(dir), Some(name)) => match std::fs::canonicalize(dir) {
                            Ok(dir) => dir.join(name),
                            Err(_) => named.to_path_buf(),
                        },
                        _ => named.to_path_buf(),
                    }
                }
                Err(e) => return Err(FileError::io("resolving", named, e)),
            };
            Ok(Located {
                named: named.to_path_buf(),
                real,
                project: None,
            })
        }
    }
}

/// Refuses a symbolic link at any component of `path` below `root` (the ones that exist).
fn check_no_links_below(root: &Path, path: &Path) -> Result<(), FileError> {
    let Ok(below) = path.strip_prefix(root) else {
        // Every project path is built as root.join(…); anything else is a bug, refused.
        return Err(FileError::io(
            "locating",
            path,
            io::Error::other(format!("not inside {}", root.display())),
        ));
    };
    let mut at = root.to_path_buf();
    for component in below.components() {
        at.push(component);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&at).unwrap_or_default();
                return Err(FileError::Symlink { link: at, target });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(FileError::io("checking", &at, e)),
        }
    }
    Ok(())
}

/// The file's text and mode (a missing file is empty, with no mode), read without following a
/// link at its last component and without waiting on a FIFO.
pub fn read(located: &Located) -> Result<Snapshot, FileError> {
    let path = &located.real;
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Snapshot {
                text: String::new(),
                mode: None,
            })
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(FileError::Symlink {
                link: path.clone(),
                target,
            });
        }
        Err(e) => return Err(FileError::io("reading", path, e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| FileError::io("reading", path, e))?;
    if !meta.is_file() {
        return Err(FileError::NotAFile { path: path.clone() });
    }
    if meta.size() > MAX_BYTES {
        return Err(FileError::TooBig { path: path.clone() });
    }
    let mut bytes = Vec::with_capacity(meta.size() as usize);
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io("reading", path, e))?;
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotText { path: path.clone() })?;
    Ok(Snapshot {
        text,
        mode: Some(meta.permissions().mode() & 0o7777),
    })
}

/// Replaces the file with `text` so that a reader sees the old or the new file, never a half
/// of one: a backup of `before` (when the file existed), then a new temp file in the same
/// directory, synced and renamed over the file, then the directory synced. The file keeps its
/// mode. Returns the backup's path.
pub fn write(
    located: &Located,
    text: &str,
    before: &Snapshot,
) -> Result<Option<PathBuf>, FileError> {
    let path = &located.real;
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::create_dir_all(&dir).map_err(|e| FileError::io("creating", &dir, e))?;
    if let Some(root) = &located.project {
        // The directories just made (or found) are checked again: none may be a link.
        check_no_links_below(root, path)?;
    }
    let backup = match before.mode {
        Some(_) => Some(backup(&dir, &name, &before.text)?),
        None => None,
    };
    let mode = before.mode.unwrap_or(0o644);
    let temp = create_new_numbered(&dir, 0, |n| {
        format!(".{name}.guidebook-{}-{n}.tmp", std::process::id())
    })?;
    let (mut file, temp) = temp;
    let written = (|| {
        file.write_all(text.as_bytes())?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        File::open(&dir)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(FileError::io("writing", path, e));
    }
    prune_backups(
        &dir,
        &name,
        backup.as_deref(),
        &backup_stamp(std::time::SystemTime::now()),
    );
    Ok(backup)
}

/// Removes a file that is wholly ours (our OpenCode plugin, a Copilot CLI hooks file left with
/// no hooks), after a backup of `before` beside it; in a project, only when no link leads to it.
pub fn remove(located: &Located, before: &Snapshot) -> Result<Option<PathBuf>, FileError> {
    let path = &located.real;
    if let Some(root) = &located.project {
        check_no_links_below(root, path)?;
    }
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backup = match before.mode {
        Some(_) => Some(backup(&dir, &name, &before.text)?),
        None => return Ok(None),
    };
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(FileError::io("removing", path, e)),
    }
    prune_backups(
        &dir,
        &name,
        backup.as_deref(),
        &backup_stamp(std::time::SystemTime::now()),
    );
    Ok(backup)
}

/// A new file in `dir` named by `name(n)` for the first n = 0, 1, … that is free, created with
/// `O_CREAT|O_EXCL|O_NOFOLLOW` and mode 0600: never an existing file, never through a link.
fn create_new_numbered(
    dir: &Path,
    first: u32,
    name: impl Fn(u32) -> String,
) -> Result<(File, PathBuf), FileError> {
    for n in first..first.saturating_add(1000) {
        let path = dir.join(name(n));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(FileError::io("creating", &path, e)),
        }
    }
    Err(FileError::io(
        "creating a new file in",
        dir,
        io::Error::other("a thousand names taken"),
    ))
}

/// Writes `text` to a new backup `<name>.guidebook-<UTC>[-N].bak` in `dir`.
fn backup(dir: &Path, name: &str, text: &str) -> Result<PathBuf, FileError> {
    backup_at(dir, name, text, &backup_stamp(std::time::SystemTime::now()))
}

/// [`backup`] stamped `stamp`. Its counter is one past the highest of this stamp's backups, not
/// the first free one: within one second a pruned `…Z.bak` must not be reused by a later
/// backup, which would then sort as the oldest and be pruned next.
fn backup_at(dir: &Path, name: &str, text: &str, stamp: &str) -> Result<PathBuf, FileError> {
    let first = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| backup_order(name, &entry.file_name().into_string().ok()?))
        .filter(|(s, _)| s == stamp)
        .map(|(_, n)| n + 1)
        .max()
        .unwrap_or(0);
    let (mut file, path) = create_new_numbered(dir, first, |n| match n {
        0 => format!("{name}.guidebook-{stamp}.bak"),
        n => format!("{name}.guidebook-{stamp}-{n}.bak"),
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| FileError::io("writing", &path, e))?;
    Ok(path)
}

/// `20261205T233501Z`: the UTC second, sortable, without characters a shell or Windows minds.
fn backup_stamp(t: std::time::SystemTime) -> String {
    crate::time::rfc3339(t).replace(['-', ':'], "")
}

/// The time and counter of one of our backups of `name`, or `None` if `file` is not one.
fn backup_order(name: &str, file: &str) -> Option<(String, u32)> {
    let rest = file
        .strip_prefix(name)?
        .strip_prefix(".guidebook-")?
        .strip_suffix(".bak")?;
    let (stamp, n) = match rest.split_once('-') {
        Some((stamp, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            (stamp, n.parse().ok()?)
        }
        Some(_) => return None,
        None => (rest, 0),
    };
    let shape = stamp.len() == 16
        && stamp.bytes().enumerate().all(|(i, b)| match i {
            8 => b == b'T',
            15 => b == b'Z',
            _ => b.is_ascii_digit(),
        });
    shape.then(|| (stamp.to_string(), n))
}

/// Removes all but the [`KEEP_BACKUPS`] newest of our backups of `name` in `dir`: regular
/// files named as ours only. `written`, the backup this run just made, is never removed and
/// counts as the newest; a backup stamped later than `now` is nobody's of ours (a planted
/// `…-20990101T000000Z.bak` would otherwise outrank every real one), so it is neither counted
/// nor removed. A failure leaves a backup too many, which is no harm.
fn prune_backups(dir: &Path, name: &str, written: Option<&Path>, now: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut older: Vec<((String, u32), PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let order = backup_order(name, &file)?;
            if order.0.as_str() > now || written.is_some_and(|w| w == entry.path()) {
                return None;
            }
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            meta.file_type().is_file().then(|| (order, entry.path()))
        })
        .collect();
    older.sort_by(|a, b| b.0.cmp(&a.0));
    let keep = KEEP_BACKUPS.saturating_sub(usize::from(written.is_some()));
    for (_, old) in older.into_iter().skip(keep) {
        let _ = std::fs::remove_file(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Within one second, a backup after a pruned `…Z.bak` is `…Z-2.bak`, newer than `…Z-1`,
    /// never the freed `…Z.bak`, which would sort as the oldest.
    #[test]
    fn a_backup_counts_past_the_highest_of_its_second() {
        let dir = tempfile::tempdir().unwrap();
        let stamp = "20261206T012345Z";
        let first = backup_at(dir.path(), "s.json", "a", stamp).unwrap();
        let second = backup_at(dir.path(), "s.json", "b", stamp).unwrap();
        assert!(second.ends_with(format!("s.json.guidebook-{stamp}-1.bak")));
        std::fs::remove_file(&first).unwrap();
        let third = backup_at(dir.path(), "s.json", "c", stamp).unwrap();
        assert!(
            third.ends_with(format!("s.json.guidebook-{stamp}-2.bak")),
            "{third:?}"
        );
    }

    fn user(path: &Path) -> Located {
        locate(path, &Scope::User).unwrap()
    }

    #[test]
    fn user_scope_follows_the_users_link_keeps_the_mode_and_backs_up() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{}\n").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("settings.json");
        symlink(&real, &link).unwrap();

        let located = user(&link);
        assert_eq!(
            located.resolved(),
            Some(real.canonicalize().unwrap().as_path())
        );
        let before = read(&located).unwrap();
        let backup = write(&located, "{\"a\": 1}\n", &before).unwrap().unwrap();
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
        assert_eq!(
            std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let fresh = dir.path().join("new/.codex/hooks.json");
        let located = user(&fresh);
        assert_eq!(
            write(&located, "{}\n", &read(&located).unwrap()).unwrap(),
            None
        );
        assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "{}\n");
        let leftovers = std::fs::read_dir(fresh.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");
    }

    #[test]
    fn a_project_refuses_links_below_its_directory_and_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        symlink(&elsewhere, root.join(".claude")).unwrap();
        let scope = Scope::Project(root.clone());
        let err = locate(&root.join(".claude/settings.json"), &scope).unwrap_err();
        match &err {
            FileError::Symlink { link, target } => {
                assert_eq!(link, &root.join(".claude"));
                assert_eq!(target, &elsewhere);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("is a symbolic link"), "{err}");

        std::fs::create_dir_all(root.join(".codex")).unwrap();
        symlink(elsewhere.join("x.json"), root.join(".codex/hooks.json")).unwrap();
        assert!(matches!(
            locate(&root.join(".codex/hooks.json"), &scope),
            Err(FileError::Symlink { .. })
        ));
        // A missing file in a real directory is fine.
        assert!(locate(&root.join(".gemini/settings.json"), &scope).is_ok());
    }

    #[test]
    fn a_backup_is_never_written_through_an_existing_path() {
        let dir = tempfile::tempdir().unwrap();
        let bashrc = dir.path().join("bashrc");
        std::fs::write(&bashrc, "echo mine\n").unwrap();
        let settings = dir.path().join("settings.json");
        std::fs::write(&settings, "{}\n").unwrap();
        let stamp = backup_stamp(std::time::SystemTime::now());
        // Every name a backup made this second or the next could take, pre-planted as links.
        for s in [
            stamp.clone(),
            backup_stamp(std::time::SystemTime::now() + std::time::Duration::from_secs(1)),
        ] {
            symlink(
                &bashrc,
                dir.path().join(format!("settings.json.guidebook-{s}.bak")),
            )
            .unwrap();
        }
        symlink(&bashrc, dir.path().join("settings.json.bak")).unwrap();
        let located = user(&settings);
        let backup = write(&located, "{\"a\": 1}\n", &read(&located).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "echo mine\n");
        assert!(
            backup.to_string_lossy().ends_with("-1.bak"),
            "{}",
            backup.display()
        );
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), "{}\n");
    }

    #[test]
    fn only_the_newest_backups_of_ours_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        std::fs::write(&settings, "0").unwrap();
        let old: Vec<PathBuf> = (0..7)
            .map(|i| {
                dir.path()
                    .join(format!("settings.json.guidebook-2020010{i}T000000Z.bak"))
            })
            .collect();
        for path in &old {
            std::fs::write(path, "old").unwrap();
        }
        let theirs = [
            "settings.json.bak",
            "settings.json.guidebook-x.bak",
            "other.json.guidebook-20200101T000000Z.bak",
        ];
        for name in theirs {
            std::fs::write(dir.path().join(name), "theirs").unwrap();
        }
        let located = user(&settings);
        write(&located, "1", &read(&located).unwrap()).unwrap();
        let kept: Vec<bool> = old.iter().map(|p| p.exists()).collect();
        // Ours: the new one and the 4 newest old ones.
        assert_eq!(kept, [false, false, false, true, true, true, true]);
        for name in theirs {
            assert!(dir.path().join(name).exists(), "{name}");
        }
        assert_eq!(
            backup_order("s", "s.guidebook-20261205T233501Z-12.bak"),
            Some(("20261205T233501Z".into(), 12))
        );
        assert_eq!(backup_order("s", "s.guidebook-20261205T233501Z-.bak"), None);
    }

    #[test]
    fn the_backup_just_written_is_kept_and_future_ones_are_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        std::fs::write(&settings, "0").unwrap();
        let future: Vec<PathBuf> = (1..=5)
            .map(|i| {
                let path = dir
                    .path()
                    .join(format!("settings.json.guidebook-2099010{i}T000000Z.bak"));
                std::fs::write(&path, "planted").unwrap();
                path
            })
            .collect();
        let located = user(&settings);
        let backup = write(&located, "1", &read(&located).unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), "0");
        assert!(future.iter().all(|p| p.exists()), "never removed");

        // Not counted either: the two just written and the three newest older ones stay.
        for i in 1..=5 {
            std::fs::write(
                dir.path()
                    .join(format!("settings.json.guidebook-2020010{i}T000000Z.bak")),
                "old",
            )
            .unwrap();
        }
        let newer = write(&located, "2", &read(&located).unwrap())
            .unwrap()
            .unwrap();
        assert!(newer.exists() && backup.exists());
        let old_kept = (1..=5)
            .map(|i| {
                dir.path()
                    .join(format!("settings.json.guidebook-2020010{i}T000000Z.bak"))
                    .exists()
            })
            .collect::<Vec<_>>();
        assert_eq!(old_kept, [false, false, true, true, true]);
        assert!(future.iter().all(|p| p.exists()));
    }

    #[test]
    fn reading_refuses_a_fifo_and_a_link_in_a_project() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("settings.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read(&user(&fifo)),
            Err(FileError::NotAFile { .. })
        ));

        // A link that appears after the check (a race) is still not read or written through.
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        let settings = root.join(".claude/settings.json");
        let located = locate(&settings, &Scope::Project(root.clone())).unwrap();
        std::fs::write(dir.path().join("secret"), "{}").unwrap();
        symlink(dir.path().join("secret"), &settings).unwrap();
        assert!(matches!(read(&located), Err(FileError::Symlink { .. })));
        let before = Snapshot {
            text: String::new(),
            mode: None,
        };
        assert!(matches!(
            write(&located, "{\"a\": 1}", &before),
            Err(FileError::Symlink { .. })
        ));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).unwrap(),
            "{}"
        );
    }
}
