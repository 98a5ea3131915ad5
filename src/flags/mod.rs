//! Feature flags from `feature_flags.json`: the live store that request handlers ask whether a
//! flag is on for a key. (Interface only for now; loading, rollout and writes come next.)

use std::path::PathBuf;

/// Gates progressive disclosure in `buildPrompt`; off means every phase is `full`.
pub const PROGRESSIVE_DISCLOSURE: &str = "progressive_disclosure";
/// Gates the circuit-breaker part of the hook shim.
pub const HOOKS_ENABLED: &str = "hooks_enabled";

/// The live feature flags.
#[derive(Debug)]
pub struct Flags {
    path: PathBuf,
}

impl Flags {
    /// The flags held in `path` (a missing file means every flag is off).
    pub fn open(path: PathBuf) -> Flags {
        Flags { path }
    }

    /// The file the flags come from.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Whether `flag` is on for `key` (a session id, say). A flag the file does not name is off.
    pub fn is_enabled(&self, _flag: &str, _key: Option<&str>) -> bool {
        false
    }
}
