//! Reads a changed file for matching without ever blocking: FIFOs, devices, sockets and
//! directories are skipped, and at most the configured cap is read. Reads: the file system.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a path was not matched. The `Display` text is what `explain` reports as `skipped`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error("not found")]
    NotFound,
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("cannot read: {0}")]
    Unreadable(String),
}

/// A file's content, capped at the configured number of bytes.
#[derive(Debug)]
pub struct FileContent {
    pub bytes: Vec<u8>,
    /// True when the file was longer than the cap and only its head was read.
    pub truncated: bool,
}

/// Reads up to `cap` bytes of `path`.
///
/// The file is opened with `O_NONBLOCK` and its type checked on the open descriptor (not on the
/// path), so a FIFO swapped in between a check and the open still cannot make the read wait for
/// a writer.
pub fn read_capped(path: &Path, cap: u64) -> Result<FileContent, Skip> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Skip::NotFound,
            _ => match std::fs::metadata(path) {
                Ok(m) if !m.is_file() => Skip::NotRegular(kind_name(&m.file_type())),
                _ => Skip::Unreadable(e.kind().to_string()),
            },
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Skip::Unreadable(e.kind().to_string()))?;
    if !meta.is_file() {
        return Err(Skip::NotRegular(kind_name(&meta.file_type())));
    }
    let want = meta.len().min(cap);
    let mut bytes = Vec::with_capacity(want as usize);
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(|e| Skip::Unreadable(e.kind().to_string()))?;
    Ok(FileContent {
        truncated: meta.len() > cap,
        bytes,
    })
}

fn kind_name(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read_capped(dir.path(), 10).unwrap_err(),
            Skip::NotRegular("directory")
        );
        assert_eq!(
            read_capped(&dir.path().join("missing"), 10).unwrap_err(),
            Skip::NotFound
        );
        assert_eq!(
            read_capped(Path::new("/dev/zero"), 10).unwrap_err(),
            Skip::NotRegular("character device")
        );
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            read_capped(&fifo, 10).unwrap_err(),
            Skip::NotRegular("fifo")
        );
    }

    #[test]
    fn caps_what_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.txt");
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        let c = read_capped(&p, 10).unwrap();
        assert_eq!(c.bytes.len(), 10);
        assert!(c.truncated);
        let c = read_capped(&p, 100).unwrap();
        assert_eq!(c.bytes.len(), 100);
        assert!(!c.truncated);
    }
}
