//! Feature flags from `feature_flags.json`: the file format ([`file`]), rollout by key
//! ([`rollout`]), atomic writes ([`write`]) and [`Flags`], the live store request handlers ask.
//!
//! The store holds an immutable [`FlagsSnapshot`] in an `ArcSwap`. Every request that consults
//! flags first `stat`s the file (about a microsecond) and reloads when it changed, so a change
//! is served on the very next request. A file that cannot be read, parsed or validated never
//! replaces the last good flags; its error is kept beside them. A missing file means every
//! flag is off.

pub mod file;
pub mod rollout;
pub mod write;

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;

use crate::watched::{read_capped, FileState, ReadError, Stamp};

pub use file::{FlagDef, FlagName, FlagsFile, Meta, OVERRIDE_PREFIX};

/// Gates progressive disclosure in `buildPrompt` (off: every phase is `full`), and the
/// circuit-breaker part of the hook shim: named once, in the protocol every client shares.
pub use guidebook_hook::protocol::{HOOKS_ENABLED, PROGRESSIVE_DISCLOSURE};

/// `_meta.updated_by` for a flag change: the user this process runs as.
pub fn updated_by() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid {}", unsafe { libc::geteuid() }));
    format!("{user} (guidebook setFlag)")
}

/// What `setFlag` can fail with.
#[derive(Debug, thiserror::Error)]
pub enum FlagsError {
    #[error("{0}")]
    InvalidName(String),
    #[error(
        "{path} is not valid ({message}); fix or remove it before setting a flag, so that no \
         edit of yours is overwritten"
    )]
    Invalid { path: PathBuf, message: String },
    #[error("{doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// One state of the flags: the last good file (or none), and the latest problem, if any.
#[derive(Debug)]
pub struct FlagsSnapshot {
    /// The flags being served; `None` when there is no file (every flag off).
    pub file: Option<Arc<FlagsFile>>,
    /// When the served flags were read.
    pub loaded_at: SystemTime,
    /// Why the file on disk is not what is served, if it is not.
    pub error: Option<String>,
    /// The file as last looked at (`None`: there was none); a different stamp means "reload".
    watched: Option<FileState<FlagsFile, String>>,
}

/// A flag as answered by `getFlags` and `setFlag`: the file's definition with the environment
/// override applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagView {
    pub enabled: bool,
    pub rollout_percent: u8,
    pub description: String,
    pub owner: String,
    /// `Some("env")` when `FF_OVERRIDE_<NAME>` decided `enabled`.
    pub overridden_by: Option<&'static str>,
}

/// What `getFlags` and `guidebook flags list` show: the served flags, where they came from,
/// when they were read, and the file's current problem, if any.
#[derive(Debug, Clone)]
pub struct FlagsReport {
    /// `_meta.version` of the served file, as written there.
    pub version: Option<serde_json::Value>,
    pub loaded_at: SystemTime,
    pub path: PathBuf,
    pub error: Option<String>,
    pub flags: BTreeMap<String, FlagView>,
}

/// The live feature flags.
#[derive(Debug)]
pub struct Flags {
    path: PathBuf,
    /// `FF_OVERRIDE_<NAME>` values by upper-cased flag name, read once at start.
    overrides: BTreeMap<String, bool>,
    current: ArcSwap<FlagsSnapshot>,
    /// Held while reloading, so a burst of requests after a change parses the file once.
    reloading: Mutex<()>,
    /// Held during `set`, so two writers in this process never interleave.
    writing: Mutex<()>,
}

impl Flags {
    /// The flags held in `path`, with overrides from the process environment.
    pub fn open(path: PathBuf) -> Flags {
        Flags::open_with_env(path, std::env::vars_os())
    }

    /// The flags held in `path`, with overrides from `env` (name, value pairs). Overrides that
    /// are neither `true` nor `false` are ignored with a warning.
    pub fn open_with_env(
        path: PathBuf,
        env: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Flags {
        let mut overrides = BTreeMap::new();
        for (k, v) in env {
            let Some(name) = k.to_str().and_then(|k| k.strip_prefix(OVERRIDE_PREFIX)) else {
                continue;
            };
            match v.to_str().map(|v| v.trim().to_ascii_lowercase()).as_deref() {
                Some("true") => {
                    overrides.insert(name.to_ascii_uppercase(), true);
                }
                Some("false") => {
                    overrides.insert(name.to_ascii_uppercase(), false);
                }
                _ => tracing::warn!(
                    "ignoring {OVERRIDE_PREFIX}{name}={}: the value must be `true` or `false`",
                    v.to_string_lossy()
                ),
            }
        }
        let flags = Flags {
            current: ArcSwap::from_pointee(FlagsSnapshot {
                file: None,
                loaded_at: SystemTime::now(),
                error: None,
                watched: None,
            }),
            path,
            overrides,
            reloading: Mutex::new(()),
            writing: Mutex::new(()),
        };
        flags.refresh();
        flags
    }

    /// The file the flags come from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current flags, reloaded first if the file changed since it was last looked at.
    pub fn snapshot(&self) -> Arc<FlagsSnapshot> {
        self.refresh();
        self.current.load_full()
    }

    /// Whether `flag` is on for `key` (a session id, say). A flag the file does not name is off;
    /// `FF_OVERRIDE_<NAME>` wins over the file.
    pub fn is_enabled(&self, flag: &str, key: Option<&str>) -> bool {
        if let Some(&v) = self.overrides.get(&flag.to_ascii_uppercase()) {
            return v;
        }
        let snapshot = self.snapshot();
        let Some(def) = snapshot
            .file
            .as_ref()
            .and_then(|f| f.flags.iter().find(|(n, _)| n.as_str() == flag))
            .map(|(_, d)| d)
        else {
            return false;
        };
        def.enabled && rollout::rolled_out(flag, def.rollout_percent, key)
    }

    /// The flags as served now, for `getFlags` and for the CLI when no sidecar runs.
    pub fn report(&self) -> FlagsReport {
        let snapshot = self.snapshot();
        FlagsReport {
            version: snapshot
                .file
                .as_ref()
                .and_then(|f| f.meta.as_ref())
                .and_then(|m| m.version.clone()),
            loaded_at: snapshot.loaded_at,
            path: self.path().to_path_buf(),
            error: snapshot.error.clone(),
            flags: self.views(&snapshot),
        }
    }

    /// Every flag the file names or the environment overrides, as served.
    pub fn views(&self, snapshot: &FlagsSnapshot) -> BTreeMap<String, FlagView> {
        let mut out = BTreeMap::new();
        if let Some(file) = &snapshot.file {
            for (name, def) in &file.flags {
                out.insert(
                    name.as_str().to_string(),
                    self.view(name.as_str(), Some(def)),
                );
            }
        }
        for upper in self.overrides.keys() {
            let covered = out.keys().any(|n| n.to_ascii_uppercase() == *upper);
            if !covered {
                let name = upper.to_ascii_lowercase();
                out.insert(name.clone(), self.view(&name, None));
            }
        }
        out
    }

    fn view(&self, name: &str, def: Option<&FlagDef>) -> FlagView {
        let def = def.cloned().unwrap_or_else(FlagDef::new_off);
        match self.overrides.get(&name.to_ascii_uppercase()) {
            Some(&v) => FlagView {
                enabled: v,
                rollout_percent: def.rollout_percent,
                description: def.description,
                owner: def.owner,
                overridden_by: Some("env"),
            },
            None => FlagView {
                enabled: def.enabled,
                rollout_percent: def.rollout_percent,
                description: def.description,
                owner: def.owner,
                overridden_by: None,
            },
        }
    }

    /// Sets `enabled` and/or `rollout_percent` of `flag` (creating it, off, if the file does not
    /// name it) and rewrites the file atomically. The snapshot is replaced only after the write
    /// succeeded. A file that is currently invalid is not overwritten: the user may be editing it.
    pub fn set(
        &self,
        flag: &str,
        enabled: Option<bool>,
        rollout_percent: Option<u8>,
        updated_by: &str,
    ) -> Result<FlagView, FlagsError> {
        let name = FlagName::parse(flag).map_err(FlagsError::InvalidName)?;
        let _in_process = self.writing.locked();
        let _across_processes = write::lock(&self.path).map_err(|source| FlagsError::Io {
            doing: "locking",
            path: self.path.clone(),
            source,
        })?;
        let mut file = match read_capped(&self.path, file::MAX_FLAGS_FILE_BYTES as u64) {
            Err(ReadError::Missing) => FlagsFile::default(),
            Ok(bytes) => file::parse(&bytes).map_err(|message| FlagsError::Invalid {
                path: self.path.clone(),
                message,
            })?,
            Err(ReadError::Failed(message)) => {
                return Err(FlagsError::Invalid {
                    path: self.path.clone(),
                    message,
                })
            }
        };
        let def = file
            .flags
            .entry(name.clone())
            .or_insert_with(FlagDef::new_off);
        if let Some(e) = enabled {
            def.enabled = e;
        }
        if let Some(p) = rollout_percent {
            def.rollout_percent = p;
        }
        let def = def.clone();
        let meta = file.meta.get_or_insert_with(Meta::default);
        meta.updated_at = Some(crate::time::now_rfc3339());
        meta.updated_by = Some(updated_by.to_string());
        let bytes = file::serialize(&file);
        write::replace(&self.path, &bytes).map_err(|source| FlagsError::Io {
            doing: "writing",
            path: self.path.clone(),
            source,
        })?;
        let file = Arc::new(file);
        let watched =
            Stamp::of_path(&self.path).map(|stamp| FileState::written(stamp, file.clone(), &bytes));
        self.current.store(Arc::new(FlagsSnapshot {
            file: Some(file),
            loaded_at: SystemTime::now(),
            error: None,
            watched,
        }));
        Ok(self.view(name.as_str(), Some(&def)))
    }

    /// Reloads the file if its stamp differs from the one last seen (or that one was racy).
    fn refresh(&self) {
        let seen = |s: &FlagsSnapshot| s.watched.as_ref().map(|w| w.stamp);
        if !Stamp::needs_reading(seen(&self.current.load()), Stamp::of_path(&self.path)) {
            return;
        }
        let _guard = self.reloading.locked();
        // Another request may have reloaded while this one waited for the lock.
        let current = self.current.load_full();
        let now = Stamp::of_path(&self.path);
        if !Stamp::needs_reading(seen(&current), now) {
            return;
        }
        let next = match now {
            None => {
                if current.watched.is_none() && current.file.is_none() && current.error.is_none() {
                    // Missing then and missing now: nothing to say.
                    return;
                }
                let had_file = current.file.is_some() || current.watched.is_some();
                FlagsSnapshot {
                    file: None,
                    loaded_at: SystemTime::now(),
                    error: had_file.then(|| {
                        format!(
                            "{}: the file was deleted; every flag is off until it is written again",
                            self.path.display()
                        )
                    }),
                    watched: None,
                }
            }
            Some(stamp) => {
                let path = self.path.display();
                let (watched, _) = FileState::refresh(
                    current.watched.clone(),
                    stamp,
                    || {
                        read_capped(&self.path, file::MAX_FLAGS_FILE_BYTES as u64)
                            .map_err(|e| format!("{path}: {e}"))
                    },
                    |bytes| file::parse(&bytes).map_err(|message| format!("{path}:{message}")),
                );
                let same_flags = match (&watched.good, &current.file) {
                    (Some(new), Some(old)) => Arc::ptr_eq(new, old),
                    (None, None) => true,
                    _ => false,
                };
                FlagsSnapshot {
                    file: watched.good.clone(),
                    loaded_at: if same_flags {
                        current.loaded_at
                    } else {
                        SystemTime::now()
                    },
                    error: watched.error.clone(),
                    watched: Some(watched),
                }
            }
        };
        self.current.store(Arc::new(next));
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::fs;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    const ON: &str = r#"{"flags": {"progressive_disclosure": {"enabled": true},
        "half": {"enabled": true, "rollout_percent": 50}, "off": {"enabled": false}}}"#;

    #[test]
    fn a_missing_file_is_every_flag_off_without_error() {
        let dir = tempfile::tempdir().unwrap();
        let flags = Flags::open_with_env(dir.path().join("none.json"), env(&[]));
        assert!(!flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        assert!(flags.snapshot().error.is_none());
    }

    #[test]
    fn rollout_and_unknown_flags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        fs::write(&path, ON).unwrap();
        let flags = Flags::open_with_env(path, env(&[]));
        assert!(flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        assert!(!flags.is_enabled("off", Some("k")));
        assert!(!flags.is_enabled("nobody_named_me", Some("k")));
        assert!(
            !flags.is_enabled("half", None),
            "below 100 without a key is off"
        );
        let key_on = (0..100)
            .map(|i| format!("s{i}"))
            .find(|k| rollout::bucket("half", k) <= 50)
            .unwrap();
        let key_off = (0..100)
            .map(|i| format!("s{i}"))
            .find(|k| rollout::bucket("half", k) > 50)
            .unwrap();
        assert!(flags.is_enabled("half", Some(&key_on)));
        assert!(!flags.is_enabled("half", Some(&key_off)));
    }

    #[test]
    fn env_overrides_win_and_bad_values_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        fs::write(&path, ON).unwrap();
        let flags = Flags::open_with_env(
            path,
            env(&[
                ("FF_OVERRIDE_PROGRESSIVE_DISCLOSURE", "false"),
                ("FF_OVERRIDE_OFF", "TRUE"),
                ("FF_OVERRIDE_HALF", "maybe"),
                ("FF_OVERRIDE_NEW_ONE", "true"),
            ]),
        );
        assert!(!flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        assert!(flags.is_enabled("off", None));
        assert!(!flags.is_enabled("half", None), "`maybe` is ignored");
        let views = flags.views(&flags.snapshot());
        assert_eq!(views["progressive_disclosure"].overridden_by, Some("env"));
        assert!(!views["progressive_disclosure"].enabled);
        assert_eq!(views["half"].overridden_by, None);
        assert!(views["new_one"].enabled);
        assert_eq!(views["new_one"].overridden_by, Some("env"));
    }

    #[test]
    fn a_broken_file_keeps_the_last_good_flags_until_it_is_fixed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        fs::write(&path, ON).unwrap();
        let flags = Flags::open_with_env(path.clone(), env(&[]));
        assert!(flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        let loaded = flags.snapshot().loaded_at;

        for broken in [&ON[..ON.len() / 2], "garbage", ""] {
            fs::write(&path, broken).unwrap();
            assert!(flags.is_enabled(PROGRESSIVE_DISCLOSURE, None), "{broken:?}");
            let s = flags.snapshot();
            let error = s.error.as_deref().unwrap();
            let after = error.strip_prefix(&format!("{}:", path.display())).unwrap();
            assert!(after.starts_with(|c: char| c.is_ascii_digit()), "{error}");
            assert_eq!(s.loaded_at, loaded);
        }
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        assert!(flags
            .snapshot()
            .error
            .as_deref()
            .unwrap()
            .contains("not a regular file"));
        fs::remove_dir(&path).unwrap();

        fs::write(
            &path,
            r#"{"flags": {"progressive_disclosure": {"enabled": false}}}"#,
        )
        .unwrap();
        assert!(!flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        assert!(flags.snapshot().error.is_none());

        fs::remove_file(&path).unwrap();
        assert!(!flags.is_enabled(PROGRESSIVE_DISCLOSURE, None));
        let s = flags.snapshot();
        assert!(s.file.is_none());
        assert!(
            s.error.as_deref().unwrap().contains("deleted"),
            "{:?}",
            s.error
        );
    }

    #[test]
    fn set_writes_the_file_and_swaps_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/f.json");
        let flags = Flags::open_with_env(path.clone(), env(&[]));
        let v = flags
            .set("hooks_enabled", Some(true), None, "tester")
            .unwrap();
        assert!(v.enabled && v.rollout_percent == 100);
        assert!(flags.is_enabled(HOOKS_ENABLED, None));
        let written = file::parse(&fs::read(&path).unwrap()).unwrap();
        let meta = written.meta.unwrap();
        assert_eq!(meta.updated_by.as_deref(), Some("tester"));
        assert_eq!(meta.updated_at.unwrap().len(), "2026-12-02T14:00:00Z".len());

        let v = flags
            .set("hooks_enabled", None, Some(30), "tester")
            .unwrap();
        assert!(v.enabled && v.rollout_percent == 30);

        assert!(matches!(
            flags.set("bad-name", Some(true), None, "t"),
            Err(FlagsError::InvalidName(_))
        ));
        // An invalid file is never overwritten.
        fs::write(&path, "{ half").unwrap();
        let before = fs::read(&path).unwrap();
        let e = flags
            .set("hooks_enabled", Some(false), None, "t")
            .unwrap_err();
        assert!(matches!(e, FlagsError::Invalid { .. }), "{e}");
        assert_eq!(fs::read(&path).unwrap(), before);
    }
}
