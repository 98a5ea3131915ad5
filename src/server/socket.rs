//! Binds the sidecar's Unix socket safely: a 0700 directory, a 0600 socket, a lock next to it so
//! that two daemons never share one path, a stale socket left by a crash replaced, and a live
//! one never stolen; or adopts a socket a service manager bound. Also the one check that a
//! directory is fit to hold private state. Writes: the socket file and its `.lock` file.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Why the socket could not be bound; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another sidecar is already running on {0} (it holds {0}.lock)")]
    AlreadyRunning(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    #[error("refusing to start: {what} {dir} is writable by group or others (mode {mode:04o}), so another local user could replace the sidecar's files; run `chmod 700 {dir}`")]
    UnsafeDirectory {
        what: &'static str,
        dir: PathBuf,
        mode: u32,
    },
    #[error("refusing to start: {what} {dir} belongs to uid {owner}, not to this user (uid {me}); choose a directory of your own")]
    ForeignDirectory {
        what: &'static str,
        dir: PathBuf,
        owner: u32,
        me: u32,
    },
    #[error(
        "the inherited socket has no path (an abstract or unnamed socket); use ListenStream=PATH"
    )]
    NoPath,
    #[error("{doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn io_err<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> SocketError + 'a {
    move |source| SocketError::Io {
        doing,
        path: path.to_path_buf(),
        source,
    }
}

/// A bound listening socket and the file it lives at.
#[derive(Debug)]
pub struct BoundSocket {
    pub listener: UnixListener,
    pub file: SocketFile,
}

/// The socket's file and the lock that makes this daemon its owner. Dropping it removes the
/// file, if this process created it and it is still the same file.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    ino: u64,
    /// False for a socket a service manager bound and passed in: the manager keeps listening on
    /// it while the daemon is down (the next connection starts it again), so the file is its
    /// to remove.
    owned: bool,
    // Held for the life of the daemon: the flock is what keeps a second daemon out.
    _lock: File,
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file, so that new clients find no sidecar instead of a socket that is about
    /// to close. Idempotent; leaves an inherited socket alone.
    pub fn remove(&mut self) {
        if !self.owned {
            return;
        }
        self.owned = false;
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        self.remove();
    }
}

fn lock(path: &Path) -> Result<File, SocketError> {
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(io_err("opening lock file", &lock_path))?;
    // std's file lock is `flock(2)` on Linux and macOS, the same lock the shim's autostart and
    // every other daemon on this path take.
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(SocketError::AlreadyRunning(path.to_path_buf()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(io_err("locking", &lock_path)(e)),
    }
}

/// Adopts a listening socket a service manager bound (socket activation). Its directory gets
/// the same check as a socket this daemon binds, and the same `.lock` is taken, so a daemon
/// started by hand on the same path is still refused; the file is never removed by this
/// process. Returns the socket and its path.
pub fn adopt(listener: UnixListener, home: &Path) -> Result<BoundSocket, SocketError> {
    let path = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf))
        .ok_or(SocketError::NoPath)?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    prepare_directory(dir, home, "socket directory")?;
    let lock = lock(&path)?;
    listener
        .set_nonblocking(true)
        .map_err(io_err("configuring", &path))?;
    let ino = std::fs::symlink_metadata(&path)
        .map_err(io_err("inspecting", &path))?
        .ino();
    Ok(BoundSocket {
        listener,
        file: SocketFile {
            path,
            ino,
            owned: false,
            _lock: lock,
        },
    })
}

/// Binds `path`. `home` is the sidecar's own directory, which may be tightened to 0700; any
/// other existing directory is only checked, never changed.
pub fn bind(path: &Path, home: &Path) -> Result<BoundSocket, SocketError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    prepare_directory(dir, home, "socket directory")?;
    let lock = lock(path)?;

    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path) {
            // Something answers: a daemon that does not use the lock. Never steal its socket.
            Ok(_) => return Err(SocketError::AlreadyRunning(path.to_path_buf())),
            Err(_) => {
                tracing::info!(socket = %path.display(), "replacing a stale socket");
                std::fs::remove_file(path).map_err(io_err("removing stale socket", path))?;
            }
        },
        Ok(_) => return Err(SocketError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("inspecting", path)(e)),
    }

    let listener = UnixListener::bind(path).map_err(io_err("binding", path))?;
    // The directory is private, so the moment between bind and chmod exposes nothing.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io_err("setting permissions on", path))?;
    listener
        .set_nonblocking(true)
        .map_err(io_err("configuring", path))?;
    let ino = std::fs::symlink_metadata(path)
        .map_err(io_err("inspecting", path))?
        .ino();
    Ok(BoundSocket {
        listener,
        file: SocketFile {
            path: path.to_path_buf(),
            ino,
            owned: true,
            _lock: lock,
        },
    })
}

/// Makes sure `dir` (`what` names it in errors) can hold the sidecar's private state: creates it
/// 0700 when missing, refuses it when group or others may write to it (they could replace the
/// socket, the database or the guidelines) or when another user owns it (root excepted). The
/// sidecar's own `home` is also made unreadable to others; any other directory is only checked,
/// never changed. Only `dir` itself is checked, not its parents: `/tmp` above a private
/// directory is fine.
pub fn prepare_directory(dir: &Path, home: &Path, what: &'static str) -> Result<(), SocketError> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err("creating directory", dir)),
        Err(e) => Err(io_err("inspecting directory", dir)(e)),
        Ok(meta) => {
            let mode = meta.mode() & 0o7777;
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if meta.uid() != me && meta.uid() != 0 {
                return Err(SocketError::ForeignDirectory {
                    what,
                    dir: dir.to_path_buf(),
                    owner: meta.uid(),
                    me,
                });
            }
            // A directory others may write to is refused even when it is ours to fix: its
            // contents may already have been replaced, so the user should look before trusting it.
            if mode & 0o022 != 0 {
                return Err(SocketError::UnsafeDirectory {
                    what,
                    dir: dir.to_path_buf(),
                    mode,
                });
            }
            if dir == home && meta.uid() == me && mode & 0o077 != 0 {
                tracing::warn!(dir = %dir.display(), "tightening permissions to 0700");
                return std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io_err("setting permissions on", dir));
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_0600_replaces_stale_and_never_steals_a_live_socket() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let path = home.join("s.sock");
        let bound = bind(&path, &home).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&home), 0o700);
        // A second daemon is refused while the first lives.
        assert!(matches!(
            bind(&path, &home),
            Err(SocketError::AlreadyRunning(_))
        ));
        // A crash leaves the socket file behind with nobody listening: it is replaced.
        std::mem::forget(bound.listener.try_clone().unwrap());
        let stale_ino = bound.file.ino;
        drop(bound);
        let stale = UnixListener::bind(&path).unwrap();
        drop(stale);
        assert!(path.exists());
        let again = bind(&path, &home).unwrap();
        assert_ne!(again.file.ino, stale_ino);
        drop(again);
        assert!(!path.exists(), "the socket is removed on drop");
    }

    #[test]
    fn refuses_a_world_writable_directory_and_non_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = bind(&open.join("s.sock"), dir.path()).unwrap_err();
        assert!(matches!(err, SocketError::UnsafeDirectory { .. }), "{err}");
        assert!(err.to_string().contains("chmod 700"));
        // The sidecar's own directory is refused too, not silently repaired: others may already
        // have written to it.
        let err = bind(&open.join("s.sock"), &open).unwrap_err();
        assert!(err.to_string().contains("mode 0777"), "{err}");
        // Readable by others only: the home is tightened, another directory is accepted as is.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        drop(bind(&open.join("s.sock"), &open).unwrap());
        assert_eq!(std::fs::metadata(&open).unwrap().mode() & 0o777, 0o700);

        let file = dir.path().join("regular");
        std::fs::write(&file, "x").unwrap();
        let err = bind(&file, dir.path()).unwrap_err();
        assert!(matches!(err, SocketError::NotASocket(_)), "{err}");
    }
}
