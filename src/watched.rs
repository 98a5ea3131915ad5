//! Watched files (guidelines, prompt packs, flags): stamps, capped reads, last-good states.
//!
//! One mechanism for every file the sidecar serves from: a [`Stamp`] that notices any change
//! (and does not trust one too recent to be sure of), one capped, non-blocking read, one
//! per-file [`FileState`] that keeps the last good parse when a new version breaks, and one
//! mapping of YAML errors to [`LoadError`]s with their line. Reads: the file system.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::files::{self, Skip};

/// The log target of "this file cannot be used" lines (guidelines, prompt packs, the root): the
/// daemon's only report of them, while `check`, `test` and `doctor` turn it off because they
/// print each error themselves.
pub const FILE_ERRORS: &str = "file_errors";

/// A watched file that could not be used: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub path: PathBuf,
    pub line: Option<usize>,
    /// 1-based, in characters; known for YAML syntax errors.
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(
                f,
                "{}:{line}:{column}: {}",
                self.path.display(),
                self.message
            ),
            (Some(line), None) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            (None, _) => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    pub fn new(path: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        LoadError {
            path: path.to_path_buf(),
            line,
            column: None,
            message: message.into(),
        }
    }
}

/// Enough of a `stat` to notice any change: a rename gives a new inode (or device), an
/// in-place write a new size or modification time, a `chmod` or `touch` a new change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    ino: u64,
    dev: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    is_file: bool,
}

/// Longer than any file system's timestamp granularity (Linux: one jiffy, up to 10 ms).
const RACY_WINDOW: Duration = Duration::from_millis(50);

impl Stamp {
    pub fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            ino: m.ino(),
            dev: m.dev(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            is_file: m.is_file(),
        }
    }

    /// The stamp of `path` now, or `None` when nothing is there.
    pub fn of_path(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Whether the file changed so recently that another change within the file system's
    /// timestamp granularity could leave this stamp unchanged ("racily clean", as git calls
    /// it). Such a stamp is not trusted: the file is read again next time.
    pub fn is_racy(&self, now: SystemTime) -> bool {
        let changed = SystemTime::UNIX_EPOCH
            + Duration::new(self.ctime.0.max(0) as u64, self.ctime.1.max(0) as u32);
        match now.duration_since(changed) {
            Ok(age) => age < RACY_WINDOW,
            Err(_) => true,
        }
    }

    /// Whether a file last seen as `then` must be read again, now that it is `now`.
    pub fn needs_reading(then: Option<Stamp>, now: Option<Stamp>) -> bool {
        match (then, now) {
            (None, None) => false,
            (Some(then), Some(now)) => then != now || then.is_racy(SystemTime::now()),
            _ => true,
        }
    }
}

/// Reads at most `cap` bytes of `path` without ever blocking (FIFOs, devices and directories
/// are refused on the open descriptor); a longer file is an error, not a silent cut.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let content = files::read_capped(path, cap).map_err(|skip| match skip {
        Skip::NotFound => ReadError::Missing,
        other => ReadError::Failed(other.to_string()),
    })?;
    if content.truncated {
        return Err(ReadError::Failed(format!(
            "the file is larger than {cap} bytes"
        )));
    }
    Ok(content.bytes)
}

/// Why a watched file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing is there (any more).
    Missing,
    Failed(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => f.write_str("not found"),
            ReadError::Failed(why) => f.write_str(why),
        }
    }
}

/// Reads a small UTF-8 file of at most `cap` bytes, errors naming `path`.
pub fn read_text(path: &Path, cap: u64) -> Result<String, LoadError> {
    let bytes = read_capped(path, cap).map_err(|e| LoadError::new(path, None, e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| LoadError::new(path, None, format!("not UTF-8: {e}")))
}

/// A serde_yaml error in `text`, the content of `path`, as a `LoadError` with its line and
/// column kept apart from the message. A tab in the indentation of the line is named as such:
/// YAML forbids tabs there, and the parser's own words ("found character that cannot start
/// any token") do not say which character.
pub fn yaml_error(path: &Path, text: &str, e: &serde_yaml::Error) -> LoadError {
    let location = e.location();
    // serde_yaml appends " at line L column C"; both are reported separately.
    let mut message = e.to_string();
    if let Some(pos) = message.find(" at line ") {
        message.truncate(pos);
    }
    let mut error = LoadError::new(path, location.as_ref().map(|l| l.line()), message);
    error.column = location.as_ref().map(|l| l.column());
    let line_text = error
        .line
        .and_then(|l| text.lines().nth(l.saturating_sub(1)));
    if let Some(line_text) = line_text {
        let indent = line_text.len() - line_text.trim_start_matches([' ', '\t']).len();
        if let Some(tab) = line_text[..indent].find('\t') {
            // Indentation is ASCII, so the byte offset is the character column.
            error.column = Some(tab + 1);
            error.message = format!(
                "a tab in the indentation: YAML forbids tabs there, indent with spaces ({})",
                error.message
            );
        }
    }
    error
}

/// The 1-based line of a top-level `key:`; used where the error is about a whole section.
pub fn find_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
}

/// One watched file as last seen: its stamp, its last good parse, its current error, and the
/// hash of the content last read (a rewrite with the same content changes nothing).
#[derive(Debug)]
pub struct FileState<T, E = LoadError> {
    pub stamp: Stamp,
    pub good: Option<Arc<T>>,
    pub error: Option<E>,
    hash: Option<u64>,
}

impl<T, E: Clone> Clone for FileState<T, E> {
    fn clone(&self) -> Self {
        FileState {
            stamp: self.stamp,
            good: self.good.clone(),
            error: self.error.clone(),
            hash: self.hash,
        }
    }
}

impl<T, E: Clone + PartialEq + fmt::Display> FileState<T, E> {
    /// A state for a value parsed by an earlier run from the file as `stamp` saw it, whose
    /// content hashed to `hash` (see [`FileState::content_hash`]).
    pub fn remembered(stamp: Stamp, value: Arc<T>, hash: u64) -> Self {
        FileState {
            stamp,
            good: Some(value),
            error: None,
            hash: Some(hash),
        }
    }

    /// The hash of the content last read, if any was.
    pub fn content_hash(&self) -> Option<u64> {
        self.hash
    }

    /// A state for content just written by this process.
    pub fn written(stamp: Stamp, value: Arc<T>, bytes: &[u8]) -> Self {
        Self::remembered(stamp, value, hash(bytes))
    }

    /// The file's state now, given how it was last seen (`prev`) and its `stamp` now: unchanged
    /// without a read when the stamp is the same and old enough to trust; otherwise `read()`
    /// again, and `parse` it unless the content is what was last parsed. A read or parse that
    /// fails keeps the last good version. The flag says whether what is served (the good
    /// version or the error) changed.
    pub fn refresh<B: AsRef<[u8]>>(
        prev: Option<Self>,
        stamp: Stamp,
        read: impl FnOnce() -> Result<B, E>,
        parse: impl FnOnce(B) -> Result<T, E>,
    ) -> (Self, bool) {
        Self::refresh_at(prev, stamp, SystemTime::now(), read, parse)
    }

    /// [`FileState::refresh`] with the time it is `now`, which decides whether an unchanged
    /// stamp is old enough to trust (the tests give it; everyone else takes the clock's).
    fn refresh_at<B: AsRef<[u8]>>(
        prev: Option<Self>,
        stamp: Stamp,
        now: SystemTime,
        read: impl FnOnce() -> Result<B, E>,
        parse: impl FnOnce(B) -> Result<T, E>,
    ) -> (Self, bool) {
        if let Some(prev) = &prev {
            if prev.stamp == stamp && !stamp.is_racy(now) {
                return (prev.clone(), false);
            }
        }
        let (good, prev_error, prev_hash) = match prev {
            Some(p) => (p.good, p.error, p.hash),
            None => (None, None, None),
        };
        let first = good.is_none() && prev_error.is_none() && prev_hash.is_none();
        let failed = |error: E, hash: Option<u64>, good: Option<Arc<T>>| {
            let changed = first || prev_error.as_ref() != Some(&error);
            if changed {
                tracing::warn!(target: FILE_ERRORS, "{error}");
            }
            let state = FileState {
                stamp,
                good,
                error: Some(error),
                hash,
            };
            (state, changed)
        };
        let bytes = match read() {
            Ok(bytes) => bytes,
            Err(e) => return failed(e, None, good),
        };
        let h = hash(bytes.as_ref());
        if prev_hash == Some(h) && prev_error.is_none() && good.is_some() {
            // The same content (a touch, a racy stamp checked again): nothing to parse.
            let state = FileState {
                stamp,
                good,
                error: None,
                hash: Some(h),
            };
            return (state, false);
        }
        match parse(bytes) {
            Ok(value) => {
                let state = FileState {
                    stamp,
                    good: Some(Arc::new(value)),
                    error: None,
                    hash: Some(h),
                };
                (state, true)
            }
            Err(e) => failed(e, Some(h), good),
        }
    }
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_number(text: String) -> Result<u32, String> {
        text.trim().parse().map_err(|e| format!("{e}"))
    }

    fn refresh(
        prev: Option<FileState<u32, String>>,
        path: &Path,
    ) -> (FileState<u32, String>, bool) {
        let stamp = Stamp::of_path(path).unwrap();
        FileState::refresh(
            prev,
            stamp,
            || std::fs::read_to_string(path).map_err(|e| e.to_string()),
            parse_number,
        )
    }

    #[test]
    fn a_broken_version_keeps_the_last_good_one_and_the_same_content_is_not_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n");
        std::fs::write(&path, "1").unwrap();
        let (state, changed) = refresh(None, &path);
        assert!(changed);
        assert_eq!(state.good.as_deref(), Some(&1));

        std::fs::write(&path, "x").unwrap();
        let (state, changed) = refresh(Some(state), &path);
        assert!(changed);
        assert_eq!(
            state.good.as_deref(),
            Some(&1),
            "the last good version stays"
        );
        assert!(state.error.is_some());

        std::fs::write(&path, "2").unwrap();
        let (state, changed) = refresh(Some(state), &path);
        assert!(changed);
        assert_eq!(
            (state.good.as_deref(), state.error.as_ref()),
            (Some(&2), None)
        );

        // Rewritten with the same bytes: a new stamp, but nothing served changes.
        std::fs::write(&path, "2").unwrap();
        let (_, changed) = refresh(Some(state), &path);
        assert!(!changed);
    }

    /// Regression: guideline and pack reloads used a stamp without ctime and without the racy
    /// guard, so a rewrite with the same size within one timestamp tick could go unseen.
    ///
    /// The time is given, not read from the clock: "just written" is the file's own change time,
    /// so no pause of a busy machine between the write and the check can age the stamp.
    #[test]
    fn a_racily_clean_stamp_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n");
        std::fs::write(&path, "1").unwrap();
        let (state, _) = refresh(None, &path);
        let stamp = state.stamp;
        let changed_at =
            SystemTime::UNIX_EPOCH + Duration::new(stamp.ctime.0 as u64, stamp.ctime.1 as u32);
        let just_after = changed_at + Duration::from_millis(1);
        let long_after = changed_at + RACY_WINDOW;
        assert!(stamp.is_racy(just_after), "just written");
        assert!(!stamp.is_racy(long_after), "old enough to trust");
        let reread = |state: &FileState<u32, String>, now: SystemTime| {
            FileState::refresh_at(
                Some(state.clone()),
                stamp,
                now,
                || std::fs::read_to_string(&path).map_err(|e| e.to_string()),
                parse_number,
            )
        };
        // Same stamp (the bytes change below without a new stamp, as a rewrite within one
        // timestamp tick can), but too young to trust: the content is read again and the change
        // seen.
        std::fs::write(&path, "3").unwrap();
        let (fresh, changed) = reread(&state, just_after);
        assert!(changed);
        assert_eq!(fresh.good.as_deref(), Some(&3));
        // The same stamp once old enough is trusted without a read.
        let (kept, changed) = reread(&state, long_after);
        assert!(!changed);
        assert_eq!(kept.good.as_deref(), Some(&1));
    }

    #[test]
    fn capped_reads_refuse_what_is_not_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 100]).unwrap();
        assert_eq!(
            read_capped(&big, 10),
            Err(ReadError::Failed("the file is larger than 10 bytes".into()))
        );
        assert_eq!(read_capped(&big, 100).unwrap().len(), 100);
        assert_eq!(
            read_capped(&dir.path().join("gone"), 10),
            Err(ReadError::Missing)
        );
        assert!(matches!(
            read_capped(dir.path(), 10),
            Err(ReadError::Failed(why)) if why.contains("not a regular file")
        ));
        let e = read_text(Path::new("/dev/null/x"), 10).unwrap_err();
        assert_eq!(e.path, Path::new("/dev/null/x"));
    }
}
