//! Atomic replacement of a small file: a temporary file in the same directory, fsync, rename,
//! directory fsync. A reader (or a crash) sees the old file or the new one, never a mix.
//! Writes: the target file and, briefly, a hidden temporary file beside it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Replaces `path` with `bytes` atomically, keeping the old file's permissions (0644 for a new
/// file). A symlink is followed, so a flags file kept in a dotfiles repository stays a link.
/// Missing parent directories are created 0700.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = resolve_symlink(path)?;
    let mode = fs::metadata(&target)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    write_atomically(&target, bytes, mode, true)
}

/// Writes `bytes` to a new temporary file beside `target` (mode `mode`, never through a link),
/// syncs it and renames it over `target`, so a reader sees the old file or the new one, whole.
/// Missing parent directories are created 0700; with `clean`, temporaries a killed writer left
/// are removed first (the caller holds the file's write lock).
pub(crate) fn write_atomically(
    target: &Path,
    bytes: &[u8],
    mode: u32,
    clean: bool,
) -> io::Result<()> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    if clean {
        remove_stale_temporaries(&dir, name);
    }
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, target)?;
        File::open(&dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn resolve_symlink(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(p) => Ok(p),
            // A dangling link: write where it points.
            Err(_) => {
                let link = fs::read_link(path)?;
                Ok(path.parent().unwrap_or(Path::new(".")).join(link))
            }
        },
        _ => Ok(path.to_path_buf()),
    }
}

/// Temporary files left by a writer that was killed between create and rename. Callers hold the
/// file's write lock, so no live writer owns one.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else {
            continue;
        };
        if n.starts_with(&prefix) && n.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// An exclusive advisory lock on `<path>.lock`, held until dropped, so that two writers (the
/// sidecar and a CLI, say) never interleave their read-modify-write.
pub struct WriteLock {
    _file: File,
}

/// How long a writer waits for another to release the lock. A writer holds it for one small
/// read-modify-write (milliseconds); a holder past this is stuck or hostile, and waiting on it
/// without end would hold a `setFlag` call, and the daemon thread answering it, forever.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// How often the lock is tried again while another holds it.
const LOCK_RETRY: Duration = Duration::from_millis(10);

/// Takes the write lock on `path`, waiting at most [`LOCK_WAIT`] for another holder; past that,
/// an error of kind `WouldBlock` that names the lock file.
pub fn lock(path: &Path) -> io::Result<WriteLock> {
    lock_within(path, LOCK_WAIT)
}

fn lock_within(path: &Path, wait: Duration) -> io::Result<WriteLock> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)?;
    let give_up = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(WriteLock { _file: file }),
            Err(fs::TryLockError::WouldBlock) if Instant::now() < give_up => {
                std::thread::sleep(LOCK_RETRY);
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "another process has held {} for {} s; try again once it lets go \
                         (`lsof` names the holder)",
                        lock_path.display(),
                        wait.as_secs_f64(),
                    ),
                ))
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_keeps_mode_follows_links_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // A temporary file left by a killed writer.
        fs::write(dir.path().join(".real.json.999.0.tmp"), "half").unwrap();

        replace(&link, b"new").unwrap();
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
    }

    #[test]
    fn a_lock_held_elsewhere_is_waited_on_for_a_bounded_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flags.json");
        let held = lock(&path).unwrap();
        // Another open file description, as another process would have.
        let err = lock_within(&path, Duration::from_millis(50)).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(err.to_string().contains("flags.json.lock"), "{err}");
        drop(held);
        drop(lock_within(&path, Duration::from_millis(50)).unwrap());
    }

    #[test]
    fn creates_missing_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/flags.json");
        replace(&path, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
    }
}
