//! Reads beneath a repository root only: no symlinks, regular files, capped.
//!
//! A repository is untrusted: a rule file may be a symlink to `~/.ssh/id_rsa` or
//! `/proc/self/environ`, a directory on its way may be a symlink out of the repository, and a
//! file may be a FIFO that would make a plain `open` wait forever. [`read_beneath`] opens the
//! file relative to a descriptor of the root, never following a symlink anywhere on the way:
//!
//! - on Linux with `openat2(2)` (5.6+): `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS`, so the kernel refuses any symlink, `..` escape or magic link in one
//!   call;
//! - elsewhere, or where `openat2` is missing or filtered (`ENOSYS`, a seccomp `EPERM`): one
//!   component at a time, each directory with `openat(O_NOFOLLOW | O_DIRECTORY)` relative to the
//!   one before, the file with `O_NOFOLLOW`.
//!
//! The file is opened `O_NONBLOCK | O_NOCTTY`, its type checked with `fstat` on the open
//! descriptor (a FIFO, device, socket or directory is refused without a byte read), its size
//! checked against the cap, and at most `cap + 1` bytes read (a file that grew past the cap
//! while being read is refused too). Text is UTF-8 or refused ([`read_text_beneath`]): what the
//! user reviews must be exactly what the agent would get.
//! Reads: the file system, beneath the root given.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why a file beneath a root was not read. The text says what the file is and why it was not
/// read, for `trust`, `status` and `doctor` to print after the file's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The relative path is empty, absolute or holds `..`.
    #[error("not a path inside the repository ({0})")]
    Outside(&'static str),
    #[error("not found")]
    NotFound,
    /// The file itself is a symlink.
    #[error("a symlink: not followed")]
    Symlink,
    /// A directory on the way to the file is a symlink.
    #[error("`{}` is a symlink: not followed", .0.display())]
    SymlinkedDirectory(PathBuf),
    /// A component on the way to the file is not a directory.
    #[error("`{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// A FIFO, device, socket or directory.
    #[error("{0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{size} bytes, over the cap of {cap} bytes")]
    TooLarge { size: u64, cap: u64 },
    /// Not UTF-8: it cannot be shown exactly as the agent would get it.
    #[error("not UTF-8 text (an invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    /// The kernel refused a resolution that would leave the root.
    #[error("leaves the repository: not followed")]
    Escapes,
    #[error("cannot read: {0}")]
    Io(String),
}

/// Reads `root/relative`, never leaving `root` and following no symlink (see the module
/// documentation); at most `max_bytes`. `root` itself is opened as given (the caller's
/// canonical repository root).
pub fn read_beneath(root: &Path, relative: &Path, max_bytes: u64) -> Result<Vec<u8>, Refused> {
    read_with(root, relative, max_bytes, Resolver::Best)
}

/// [`read_beneath`], and the bytes as UTF-8 text or [`Refused::NotUtf8`].
pub fn read_text_beneath(root: &Path, relative: &Path, max_bytes: u64) -> Result<String, Refused> {
    text(read_beneath(root, relative, max_bytes)?)
}

/// `bytes` as UTF-8 text, or [`Refused::NotUtf8`] naming the offset of the first invalid byte.
pub fn text(bytes: Vec<u8>) -> Result<String, Refused> {
    String::from_utf8(bytes).map_err(|e| Refused::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolver {
    /// `openat2` where the kernel has it, else component by component.
    Best,
    /// Component by component (`openat` with `O_NOFOLLOW`), as on macOS.
    #[cfg_attr(not(test), allow(dead_code))]
    PerComponent,
}

fn read_with(
    root: &Path,
    relative: &Path,
    max_bytes: u64,
    resolver: Resolver,
) -> Result<Vec<u8>, Refused> {
    let parts = components(relative)?;
    let root_fd = open_root(root)?;
    let fd = match resolver {
        Resolver::Best => open_best(&root_fd, relative, &parts)?,
        Resolver::PerComponent => open_per_component(&root_fd, &parts)?,
    };
    read_open(File::from(fd), max_bytes)
}

/// The normal components of `relative`; empty, absolute and `..` paths refused. `.` is dropped.
fn components(relative: &Path) -> Result<Vec<CString>, Refused> {
    let mut parts = Vec::new();
    for c in relative.components() {
        match c {
            Component::Normal(name) => parts
                .push(CString::new(name.as_bytes()).map_err(|_| Refused::Outside("a NUL byte"))?),
            Component::CurDir => {}
            Component::ParentDir => return Err(Refused::Outside("`..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(Refused::Outside("an absolute path"))
            }
        }
    }
    if parts.is_empty() {
        return Err(Refused::Outside("an empty path"));
    }
    Ok(parts)
}

fn open_root(root: &Path) -> Result<OwnedFd, Refused> {
    let c = CString::new(root.as_os_str().as_bytes())
        .map_err(|_| Refused::Io("the root holds a NUL byte".into()))?;
    // SAFETY: a valid C string; the descriptor returned is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Refused::Io(format!(
            "the repository root {}: {e}",
            root.display()
        )));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW;

#[cfg(target_os = "linux")]
fn open_best(root: &OwnedFd, relative: &Path, parts: &[CString]) -> Result<OwnedFd, Refused> {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Set once `openat2` turned out missing or filtered: later reads go straight to the walk.
    static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return open_per_component(root, parts);
    }
    let joined = join(parts);
    match openat2(root.as_raw_fd(), &joined) {
        Ok(fd) => Ok(fd),
        Err(libc::ENOSYS | libc::EPERM | libc::E2BIG) => {
            NO_OPENAT2.store(true, Ordering::Relaxed);
            open_per_component(root, parts)
        }
        Err(errno) => Err(classify_openat2(root, relative, parts, errno)),
    }
}

#[cfg(not(target_os = "linux"))]
fn open_best(root: &OwnedFd, _relative: &Path, parts: &[CString]) -> Result<OwnedFd, Refused> {
    open_per_component(root, parts)
}

#[cfg(target_os = "linux")]
fn join(parts: &[CString]) -> CString {
    let mut bytes = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(p.as_bytes());
    }
    CString::new(bytes).expect("components hold no NUL byte")
}

/// `struct open_how` of `linux/openat2.h` (libc's is `non_exhaustive`).
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

#[cfg(target_os = "linux")]
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
#[cfg(target_os = "linux")]
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
#[cfg(target_os = "linux")]
const RESOLVE_BENEATH: u64 = 0x08;

/// `openat2(root, path, FILE_FLAGS, BENEATH | NO_SYMLINKS | NO_MAGICLINKS)`; the errno on
/// failure.
#[cfg(target_os = "linux")]
fn openat2(root: RawFd, path: &CString) -> Result<OwnedFd, i32> {
    let how = OpenHow {
        flags: FILE_FLAGS as u64,
        mode: 0,
        resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a valid C string and a `struct open_how` of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if rc < 0 {
        return Err(errno());
    }
    // SAFETY: the kernel returned a new descriptor that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as RawFd) })
}

/// Why `openat2` refused: the kernel says `ELOOP` for any symlink on the way; which one is
/// found by looking at each component without following it (for the message only: the open
/// itself already refused).
#[cfg(target_os = "linux")]
fn classify_openat2(root: &OwnedFd, relative: &Path, parts: &[CString], errno: i32) -> Refused {
    match errno {
        libc::ENOENT => Refused::NotFound,
        libc::EXDEV => Refused::Escapes,
        libc::ELOOP | libc::ENOTDIR | libc::ENXIO | libc::EOPNOTSUPP => {
            // Walk the prefixes: the first symlink or non-directory names the cause.
            let mut prefix = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                prefix.push(part.clone());
                let last = i + 1 == parts.len();
                let shown: PathBuf = prefix
                    .iter()
                    .map(|p| std::ffi::OsStr::from_bytes(p.as_bytes()))
                    .collect();
                match lstat_at(root.as_raw_fd(), &join(&prefix)) {
                    Ok(st) if is_type(&st, libc::S_IFLNK) => {
                        return if last {
                            Refused::Symlink
                        } else {
                            Refused::SymlinkedDirectory(shown)
                        };
                    }
                    Ok(st) if last => {
                        return match kind(&st) {
                            Some(k) => Refused::NotRegular(k),
                            None => {
                                Refused::Io(std::io::Error::from_raw_os_error(errno).to_string())
                            }
                        }
                    }
                    Ok(st) if !is_type(&st, libc::S_IFDIR) => return Refused::NotADirectory(shown),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            match errno {
                libc::ELOOP => Refused::SymlinkedDirectory(relative.to_path_buf()),
                e => Refused::Io(std::io::Error::from_raw_os_error(e).to_string()),
            }
        }
        e => Refused::Io(std::io::Error::from_raw_os_error(e).to_string()),
    }
}

/// Opens each directory with `O_NOFOLLOW | O_DIRECTORY` relative to the one before, then the file
/// with `O_NOFOLLOW | O_NONBLOCK`. A component that is a symlink is refused whichever error the
/// system gives for it (`ELOOP`, or `ENOTDIR` with `O_DIRECTORY`).
fn open_per_component(root: &OwnedFd, parts: &[CString]) -> Result<OwnedFd, Refused> {
    let mut dir: Option<OwnedFd> = None;
    let mut shown = PathBuf::new();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        shown.push(std::ffi::OsStr::from_bytes(part.as_bytes()));
        let at = dir.as_ref().unwrap_or(root).as_raw_fd();
        let flags = if last {
            FILE_FLAGS
        } else {
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        // SAFETY: a valid descriptor and C string; the result is owned below.
        let fd = unsafe { libc::openat(at, part.as_ptr(), flags) };
        if fd < 0 {
            let e = errno();
            if e == libc::ENOENT {
                return Err(Refused::NotFound);
            }
            return Err(match lstat_at(at, part) {
                Ok(st) if is_type(&st, libc::S_IFLNK) && last => Refused::Symlink,
                Ok(st) if is_type(&st, libc::S_IFLNK) => Refused::SymlinkedDirectory(shown),
                Ok(st) if !last && !is_type(&st, libc::S_IFDIR) => Refused::NotADirectory(shown),
                Ok(st) if last && kind(&st).is_some() => {
                    Refused::NotRegular(kind(&st).expect("checked"))
                }
                _ => Refused::Io(std::io::Error::from_raw_os_error(e).to_string()),
            });
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        dir = Some(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    Ok(dir.expect("at least one component"))
}

/// Checks the open file's type and size, then reads at most `max_bytes + 1` bytes.
fn read_open(file: File, max_bytes: u64) -> Result<Vec<u8>, Refused> {
    // SAFETY: `st` is written by fstat on a descriptor we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
        return Err(Refused::Io(std::io::Error::last_os_error().to_string()));
    }
    if !is_type(&st, libc::S_IFREG) {
        return Err(Refused::NotRegular(kind(&st).unwrap_or("a special file")));
    }
    let size = st.st_size as u64;
    if size > max_bytes {
        return Err(Refused::TooLarge {
            size,
            cap: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Refused::Io(e.to_string()))?;
    if bytes.len() as u64 > max_bytes {
        // It grew past the cap between fstat and read.
        return Err(Refused::TooLarge {
            size: bytes.len() as u64,
            cap: max_bytes,
        });
    }
    Ok(bytes)
}

fn lstat_at(dir: RawFd, name: &CString) -> Result<libc::stat, i32> {
    // SAFETY: `st` is written by fstatat; the name is a valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if rc != 0 {
        return Err(errno());
    }
    Ok(st)
}

fn is_type(st: &libc::stat, t: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == t
}

/// What a file that is not regular is, for the message ("a FIFO, not a regular file").
fn kind(st: &libc::stat) -> Option<&'static str> {
    Some(match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symlink",
        _ => return None,
    })
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const BOTH: [Resolver; 2] = [Resolver::Best, Resolver::PerComponent];

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("src/api")).unwrap();
        std::fs::write(root.join("src/api/AGENTS.md"), "use the api client\n").unwrap();
        std::fs::write(dir.path().join("secret"), "TOKEN=hunter2\n").unwrap();
        (dir, root)
    }

    fn read(root: &Path, rel: &str, r: Resolver) -> Result<Vec<u8>, Refused> {
        read_with(root, Path::new(rel), 1024, r)
    }

    #[test]
    fn reads_a_regular_file_beneath_the_root() {
        let (_d, root) = repo();
        for r in BOTH {
            assert_eq!(
                read(&root, "src/api/AGENTS.md", r).unwrap(),
                b"use the api client\n",
                "{r:?}"
            );
            assert_eq!(
                read(&root, "./src/api/AGENTS.md", r).unwrap(),
                b"use the api client\n"
            );
            assert_eq!(read(&root, "src/x.md", r), Err(Refused::NotFound), "{r:?}");
        }
    }

    #[test]
    fn refuses_traversal_absolute_and_empty_paths() {
        let (_d, root) = repo();
        for r in BOTH {
            assert_eq!(
                read(&root, "../secret", r),
                Err(Refused::Outside("`..`")),
                "{r:?}"
            );
            assert_eq!(
                read(&root, "src/../../secret", r),
                Err(Refused::Outside("`..`"))
            );
            let abs = root.parent().unwrap().join("secret");
            assert_eq!(
                read(&root, abs.to_str().unwrap(), r),
                Err(Refused::Outside("an absolute path"))
            );
            assert_eq!(read(&root, "", r), Err(Refused::Outside("an empty path")));
            assert_eq!(read(&root, ".", r), Err(Refused::Outside("an empty path")));
        }
        assert_eq!(
            Refused::Outside("`..`").to_string(),
            "not a path inside the repository (`..`)"
        );
    }

    #[test]
    fn refuses_a_symlinked_file_inside_or_out() {
        let (d, root) = repo();
        symlink(d.path().join("secret"), root.join("src/AGENTS.md")).unwrap();
        symlink("api/AGENTS.md", root.join("src/CLAUDE.md")).unwrap();
        symlink("/proc/self/environ", root.join("environ.md")).unwrap();
        for r in BOTH {
            for rel in ["src/AGENTS.md", "src/CLAUDE.md", "environ.md"] {
                let got = read(&root, rel, r);
                assert_eq!(got, Err(Refused::Symlink), "{rel} {r:?}");
            }
        }
        assert_eq!(Refused::Symlink.to_string(), "a symlink: not followed");
    }

    #[test]
    fn refuses_a_symlinked_directory_on_the_way() {
        let (d, root) = repo();
        let outside = d.path().join("elsewhere/rules");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.mdc"), "secret rule").unwrap();
        symlink(d.path().join("elsewhere"), root.join(".cursor")).unwrap();
        for r in BOTH {
            assert_eq!(
                read(&root, ".cursor/rules/x.mdc", r),
                Err(Refused::SymlinkedDirectory(PathBuf::from(".cursor"))),
                "{r:?}"
            );
        }
        assert_eq!(
            Refused::SymlinkedDirectory(".cursor".into()).to_string(),
            "`.cursor` is a symlink: not followed"
        );
    }

    #[test]
    fn refuses_what_is_not_a_regular_file_without_blocking() {
        let (_d, root) = repo();
        let fifo = CString::new(root.join("AGENTS.md").as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let sock = std::os::unix::net::UnixListener::bind(root.join("sock.md")).unwrap();
        for r in BOTH {
            assert_eq!(
                read(&root, "AGENTS.md", r),
                Err(Refused::NotRegular("a FIFO")),
                "{r:?}"
            );
            assert_eq!(
                read(&root, "src", r),
                Err(Refused::NotRegular("a directory"))
            );
            assert_eq!(
                read(&root, "sock.md", r),
                Err(Refused::NotRegular("a socket")),
                "{r:?}"
            );
            assert_eq!(
                read(&root, "src/api/AGENTS.md/x", r),
                Err(Refused::NotADirectory("src/api/AGENTS.md".into())),
                "{r:?}"
            );
        }
        drop(sock);
        assert_eq!(
            Refused::NotRegular("a FIFO").to_string(),
            "a FIFO, not a regular file"
        );
    }

    #[test]
    fn refuses_a_file_over_the_cap_and_says_both_sizes() {
        let (_d, root) = repo();
        std::fs::write(root.join("big.md"), vec![b'x'; 2000]).unwrap();
        std::fs::write(root.join("edge.md"), vec![b'x'; 1024]).unwrap();
        for r in BOTH {
            let e = read(&root, "big.md", r).unwrap_err();
            assert_eq!(
                e,
                Refused::TooLarge {
                    size: 2000,
                    cap: 1024
                }
            );
            assert_eq!(e.to_string(), "2000 bytes, over the cap of 1024 bytes");
            assert_eq!(read(&root, "edge.md", r).unwrap().len(), 1024);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn openat2_itself_refuses_symlinks_where_the_kernel_has_it() {
        let (d, root) = repo();
        symlink(d.path().join("secret"), root.join("AGENTS.md")).unwrap();
        let root_fd = open_root(&root).unwrap();
        match openat2(root_fd.as_raw_fd(), &CString::new("AGENTS.md").unwrap()) {
            Err(libc::ENOSYS | libc::EPERM | libc::E2BIG) => {
                eprintln!("openat2 is not available here: the per-component walk is used")
            }
            Err(e) => assert_eq!(e, libc::ELOOP),
            Ok(_) => panic!("openat2 followed a symlink"),
        }
        match openat2(
            root_fd.as_raw_fd(),
            &CString::new("src/api/AGENTS.md").unwrap(),
        ) {
            Err(libc::ENOSYS | libc::EPERM | libc::E2BIG) => {}
            other => assert!(other.is_ok(), "{other:?}"),
        }
    }

    #[test]
    fn text_must_be_utf8() {
        let (_d, root) = repo();
        std::fs::write(root.join("bad.md"), b"ok \xff no").unwrap();
        assert_eq!(
            read_text_beneath(&root, Path::new("bad.md"), 100),
            Err(Refused::NotUtf8 { offset: 3 })
        );
        assert_eq!(
            read_text_beneath(&root, Path::new("src/api/AGENTS.md"), 100).unwrap(),
            "use the api client\n"
        );
    }
}
