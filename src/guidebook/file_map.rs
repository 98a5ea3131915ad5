//! Every guideline file's state by path: the map a reload keeps (the last good version of each
//! file, or its error) and the parse cache saves and restores. Reads and writes nothing.

use std::collections::HashMap;
use std::path::PathBuf;

use super::guideline::Guideline;
use crate::watched::FileState;

/// A guideline file's path as a map key: hashed and compared as bytes. `Path`'s own `Hash` and
/// `Eq` parse components at every lookup (6 % of an idle check's CPU in perf); the paths of a
/// walk (and of the cache, saved from one) are already normal, so bytes say the same.
#[derive(Debug, Clone)]
pub(crate) struct PathKey(pub PathBuf);

impl PartialEq for PathKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_os_str() == other.0.as_os_str()
    }
}

impl Eq for PathKey {}

impl std::hash::Hash for PathKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::os::unix::ffi::OsStrExt::as_bytes(self.0.as_os_str()).hash(state);
    }
}

/// Every guideline file's state, by path.
pub(crate) type FileMap = HashMap<PathKey, FileState<Guideline>>;
