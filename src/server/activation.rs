//! Socket activation and readiness, the systemd way and without a systemd library: takes a
//! listening socket passed in by the service manager (`LISTEN_PID`/`LISTEN_FDS`, descriptor 3)
//! and sends `sd_notify` messages (`READY=1`, `STOPPING=1`) to `$NOTIFY_SOCKET`. Reads and
//! clears those environment variables, so that no child process (git) inherits them.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixListener};

/// The first descriptor a service manager passes (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: RawFd = 3;

/// Why an inherited socket cannot be used; each names the variable or what the descriptor is.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error("socket activation: {name}={value:?} is not a number")]
    BadVariable { name: &'static str, value: String },
    #[error("socket activation: LISTEN_FDS={0}, but the sidecar serves exactly one socket; give the socket unit a single ListenStream=")]
    NotOneSocket(u32),
    #[error("socket activation: descriptor 3 is not a listening Unix stream socket ({0}); use ListenStream=PATH in the socket unit")]
    NotAListeningSocket(String),
}

/// Takes the listening socket a service manager passed to this process, if any.
///
/// `LISTEN_PID` must name this process: the variables may have been meant for a parent that
/// exec'd us without clearing them. The variables are removed either way, as `sd_listen_fds(1)`
/// does, and the descriptor is marked close-on-exec. Call before any thread is started.
pub fn inherited_listener() -> Result<Option<UnixListener>, ActivationError> {
    let pid = std::env::var_os("LISTEN_PID");
    let fds = std::env::var_os("LISTEN_FDS");
    for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(name);
    }
    let (Some(pid), Some(fds)) = (pid, fds) else {
        return Ok(None);
    };
    let pid = number("LISTEN_PID", pid)?;
    if pid != std::process::id() {
        tracing::debug!(
            listen_pid = pid,
            "LISTEN_PID names another process; not socket-activated"
        );
        return Ok(None);
    }
    match number("LISTEN_FDS", fds)? {
        0 => return Ok(None),
        1 => {}
        n => return Err(ActivationError::NotOneSocket(n)),
    }
    // SAFETY: the service manager passed descriptor 3 open for this process (LISTEN_PID is us);
    // the borrow ends before ownership is taken below.
    let borrowed = unsafe { BorrowedFd::borrow_raw(LISTEN_FDS_START) };
    check_listening_stream(borrowed)?;
    // SAFETY: checked above to be an open socket; nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(LISTEN_FDS_START) };
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    let listener = UnixListener::from(owned);
    // getsockname: fails unless the socket is AF_UNIX.
    listener
        .local_addr()
        .map_err(|e| ActivationError::NotAListeningSocket(e.to_string()))?;
    Ok(Some(listener))
}

fn number(name: &'static str, value: OsString) -> Result<u32, ActivationError> {
    let text = value.to_string_lossy().into_owned();
    text.trim()
        .parse()
        .map_err(|_| ActivationError::BadVariable { name, value: text })
}

fn check_listening_stream(fd: BorrowedFd<'_>) -> Result<(), ActivationError> {
    let option = |name: libc::c_int| -> io::Result<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are valid for writes of the sizes given.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            Ok(value)
        } else {
            Err(io::Error::last_os_error())
        }
    };
    let not = |why: String| ActivationError::NotAListeningSocket(why);
    let kind = option(libc::SO_TYPE).map_err(|e| not(e.to_string()))?;
    if kind != libc::SOCK_STREAM {
        return Err(not(format!("socket type {kind}, not SOCK_STREAM")));
    }
    if option(libc::SO_ACCEPTCONN).map_err(|e| not(e.to_string()))? == 0 {
        return Err(not("the socket is not listening".into()));
    }
    Ok(())
}

/// Sends `sd_notify` state changes to the service manager, when there is one.
#[derive(Debug, Default)]
pub struct Notifier {
    socket: Option<OsString>,
}

impl Notifier {
    /// Takes `$NOTIFY_SOCKET` out of the environment. Call before any thread is started.
    pub fn from_env() -> Notifier {
        let socket = std::env::var_os("NOTIFY_SOCKET").filter(|s| !s.is_empty());
        std::env::remove_var("NOTIFY_SOCKET");
        Notifier { socket }
    }

    /// Sends `state` (`READY=1`, `STOPPING=1`, ...). A failure is logged, never fatal: the
    /// service manager's timeout is the one to report a daemon that never became ready.
    pub fn notify(&self, state: &str) {
        let Some(socket) = &self.socket else {
            return;
        };
        if let Err(e) = send(socket, state) {
            tracing::warn!(notify_socket = ?socket, "cannot notify the service manager: {e}");
        } else {
            tracing::debug!(state, "notified the service manager");
        }
    }
}

fn send(socket: &OsString, state: &str) -> io::Result<usize> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = socket.as_bytes();
    let sender = UnixDatagram::unbound()?;
    if let Some(name) = bytes.strip_prefix(b"@") {
        // An abstract socket (systemd's default for user managers on Linux).
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            #[cfg(target_os = "android")]
            use std::os::android::net::SocketAddrExt;
            #[cfg(target_os = "linux")]
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            return sender.send_to_addr(state.as_bytes(), &addr);
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = name;
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "abstract sockets exist only on Linux",
            ));
        }
    }
    sender.send_to(state.as_bytes(), std::path::Path::new(socket))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifies_path_and_abstract_sockets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let receiver = UnixDatagram::bind(&path).unwrap();
        Notifier {
            socket: Some(path.clone().into_os_string()),
        }
        .notify("READY=1");
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");

        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let name = format!("guidebook-test-{}", std::process::id());
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
            let receiver = UnixDatagram::bind_addr(&addr).unwrap();
            Notifier {
                socket: Some(format!("@{name}").into()),
            }
            .notify("STOPPING=1");
            let n = receiver.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"STOPPING=1");
        }
    }

    #[test]
    fn a_socket_that_is_not_listening_is_refused() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        // SAFETY: `a` outlives the borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(a.as_raw_fd()) };
        let err = check_listening_stream(fd).unwrap_err();
        assert!(err.to_string().contains("not listening"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("s")).unwrap();
        // SAFETY: `listener` outlives the borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(listener.as_raw_fd()) };
        check_listening_stream(fd).unwrap();
    }
}
