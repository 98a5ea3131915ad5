//! Binds the sidecar's Unix socket safely: a 0700 directory, a 0600 socket, a lock next to it so
//! that two daemons never share one path, a stale socket left by a crash replaced, and a live
//! one never stolen. Writes: the socket file and its `.lock` file.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
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
    #[error("directory {dir} is writable by group or others (mode {mode:o}); run `chmod 700 {dir}` or choose another --socket")]
    UnsafeDirectory { dir: PathBuf, mode: u32 },
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

/// A bound listening socket. Dropping it removes the socket file, if the file is still the one
/// this process created.
#[derive(Debug)]
pub struct BoundSocket {
    pub listener: UnixListener,
    path: PathBuf,
    ino: u64,
    // Held for the life of the daemon: the flock is what keeps a second daemon out.
    _lock: File,
}

impl Drop for BoundSocket {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Binds `path`. `home` is the sidecar's own directory, which may be tightened to 0700; any
/// other existing directory is only checked, never changed.
pub fn bind(path: &Path, home: &Path) -> Result<BoundSocket, SocketError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    prepare_directory(dir, home)?;

    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(io_err("opening lock file", &lock_path))?;
    // SAFETY: flock on a descriptor this function owns; no memory is shared with the kernel.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(SocketError::AlreadyRunning(path.to_path_buf()));
    }

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
        path: path.to_path_buf(),
        ino,
        _lock: lock,
    })
}

fn prepare_directory(dir: &Path, home: &Path) -> Result<(), SocketError> {
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
            let mine = meta.uid() == unsafe { libc::geteuid() };
            if dir == home && mine && mode & 0o077 != 0 {
                tracing::warn!(dir = %dir.display(), "tightening permissions to 0700");
                return std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io_err("setting permissions on", dir));
            }
            if mode & 0o022 != 0 {
                return Err(SocketError::UnsafeDirectory {
                    dir: dir.to_path_buf(),
                    mode,
                });
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
        let stale_ino = bound.ino;
        drop(bound);
        let stale = UnixListener::bind(&path).unwrap();
        drop(stale);
        assert!(path.exists());
        let again = bind(&path, &home).unwrap();
        assert_ne!(again.ino, stale_ino);
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

        let file = dir.path().join("regular");
        std::fs::write(&file, "x").unwrap();
        let err = bind(&file, dir.path()).unwrap_err();
        assert!(matches!(err, SocketError::NotASocket(_)), "{err}");
    }
}
