//! `trust.json`: the repositories the user trusted, with a hash of each rule file.
//!
//! `HOME_DIR/trust.json` holds, per repository, its canonical root (never an origin URL: anyone
//! can name a remote `acme/x`), when it was trusted, and the SHA-256 of each rule file's bytes as
//! `guidebook trust` showed them:
//!
//! ```json
//! {"version": 1, "repositories": [{"root": "/home/me/src/app", "trustedAt": "2026-12-06T04:50:00Z",
//!   "files": {".cursor/rules/api.mdc": "3f2a…"}}]}
//! ```
//!
//! A rule file is served only while its hash is the one recorded ([`Verdict::Trusted`]); a file
//! that changed or is new waits for `guidebook trust` again. [`repository_state`] says so for
//! every rule file of a repository, for `status`, `doctor`, `explain` and `trust --list`.
//! Writes are atomic (a temporary file created 0600 beside it, fsync, rename) under
//! `trust.json.lock` ([`lock`]), so two CLIs never lose each other's change. Reads:
//! `trust.json`, and through [`repository_state`] the repository's rule files.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::RepositoryRules;
use crate::sources::discover::{rule_files, RuleFile};
use crate::sources::read::read_text_beneath;

/// The one version of `trust.json` this build reads and writes.
pub const VERSION: u64 = 1;

/// Where the trust store lives: `HOME_DIR/trust.json`.
pub fn store_path(settings: &crate::config::Settings) -> PathBuf {
    settings.home.join("trust.json")
}

/// What `trust.json` could not be read or written as.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: version {found} is not one this guidebook reads ({VERSION})", path.display())]
    Version { path: PathBuf, found: u64 },
    #[error("{}: the repository root `{}` is not an absolute path", path.display(), root.display())]
    RelativeRoot { path: PathBuf, root: PathBuf },
    #[error("writing {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// One trusted repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustedRepository {
    /// The canonical root (`std::fs::canonicalize`).
    pub root: PathBuf,
    /// RFC 3339 UTC.
    pub trusted_at: String,
    /// Relative path → SHA-256 hex of the bytes trusted.
    pub files: BTreeMap<PathBuf, String>,
}

/// A rule file against the record of its repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The same bytes as trusted: served.
    Trusted,
    /// Trusted once, different now: waits for `guidebook trust`.
    Changed,
    /// Not in the record: waits for `guidebook trust`.
    New,
}

impl TrustedRepository {
    /// The verdict on the file at `relative` whose bytes hash to `hash` ([`hash`]).
    pub fn verdict(&self, relative: &Path, hash: &str) -> Verdict {
        match self.files.get(relative) {
            Some(h) if h == hash => Verdict::Trusted,
            Some(_) => Verdict::Changed,
            None => Verdict::New,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct TrustFile {
    version: u64,
    #[serde(default)]
    repositories: Vec<TrustedRepository>,
}

/// The contents of `trust.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    repositories: Vec<TrustedRepository>,
}

impl TrustStore {
    /// Reads `path`; a missing file is an empty store. Broken JSON is an error with its line and
    /// column, and so are another version and a root that is not absolute.
    pub fn load(path: &Path) -> Result<TrustStore, TrustError> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(TrustStore::default()),
            Err(source) => {
                return Err(TrustError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        let file: TrustFile = serde_json::from_str(&text).map_err(|e| {
            let message = e.to_string();
            let message = match message.rfind(" at line ") {
                Some(i) => message[..i].to_string(),
                None => message,
            };
            TrustError::Syntax {
                path: path.to_path_buf(),
                line: e.line(),
                column: e.column(),
                message,
            }
        })?;
        if file.version != VERSION {
            return Err(TrustError::Version {
                path: path.to_path_buf(),
                found: file.version,
            });
        }
        if let Some(r) = file.repositories.iter().find(|r| !r.root.is_absolute()) {
            return Err(TrustError::RelativeRoot {
                path: path.to_path_buf(),
                root: r.root.clone(),
            });
        }
        Ok(TrustStore {
            repositories: file.repositories,
        })
    }

    /// Every trusted repository, in the order trusted.
    pub fn repositories(&self) -> &[TrustedRepository] {
        &self.repositories
    }

    /// Every trusted root.
    pub fn roots(&self) -> impl Iterator<Item = &Path> {
        self.repositories.iter().map(|r| r.root.as_path())
    }

    /// The record of the repository whose canonical root is `root`.
    pub fn repository(&self, root: &Path) -> Option<&TrustedRepository> {
        self.repositories.iter().find(|r| r.root == root)
    }

    /// The trusted files (relative path → hash) of the repository at `root`.
    pub fn files_of(&self, root: &Path) -> Option<&BTreeMap<PathBuf, String>> {
        self.repository(root).map(|r| &r.files)
    }

    /// Records `root` (canonical) as trusted now with exactly `files` (relative path → hash),
    /// replacing any earlier record of it: a file trusted before and not given now is no longer
    /// trusted.
    pub fn trust(&mut self, root: &Path, files: BTreeMap<PathBuf, String>) {
        let record = TrustedRepository {
            root: root.to_path_buf(),
            trusted_at: crate::time::now_rfc3339(),
            files,
        };
        match self.repositories.iter_mut().find(|r| r.root == root) {
            Some(r) => *r = record,
            None => self.repositories.push(record),
        }
        self.repositories.retain({
            let mut seen = false;
            move |r| r.root != root || !std::mem::replace(&mut seen, true)
        });
    }

    /// Forgets `root`; false when it was not trusted.
    pub fn untrust(&mut self, root: &Path) -> bool {
        let before = self.repositories.len();
        self.repositories.retain(|r| r.root != root);
        self.repositories.len() != before
    }

    /// Writes the store to `path` atomically: a new temporary file beside it (mode 0600, never
    /// through a link), fsync, rename over `path` (a symlink at `path` is replaced, not
    /// followed), fsync of the directory. The directory is created 0700 if missing.
    pub fn save(&self, path: &Path) -> Result<(), TrustError> {
        let file = TrustFile {
            version: VERSION,
            repositories: self.repositories.clone(),
        };
        let write_err = |source| TrustError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut bytes = serde_json::to_vec_pretty(&file)
            .map_err(|e| write_err(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        bytes.push(b'\n');
        replace_private(path, &bytes).map_err(write_err)
    }
}

/// Takes the write lock of the trust store at `path` (`trust.json.lock`), for a
/// load-change-save that must not lose another process's change.
pub fn lock(path: &Path) -> Result<crate::flags::write::WriteLock, TrustError> {
    crate::flags::write::lock(path).map_err(|source| TrustError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn replace_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // A symlink at `trust.json` is replaced, never written through.
    crate::flags::write::write_atomically(path, bytes, 0o600, false)
}

/// The SHA-256 of `bytes`, lowercase hex: what `trust.json` records per file.
pub fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where one rule file of a repository stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Served: the bytes trusted.
    Trusted,
    /// Changed since it was trusted: waits for `guidebook trust`.
    Changed,
    /// Not trusted yet (or the repository is not trusted): waits for `guidebook trust`.
    New,
    /// Never read or never served, and why (a symlink, a FIFO, over a cap, not UTF-8, …).
    Refused(String),
}

impl FileState {
    /// One word for tables and JSON: `trusted`, `changed`, `new`, `refused`.
    pub fn word(&self) -> &'static str {
        match self {
            FileState::Trusted => "trusted",
            FileState::Changed => "changed",
            FileState::New => "new",
            FileState::Refused(_) => "refused",
        }
    }
}

/// Every rule file of one repository against the trust store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryState {
    /// The canonical root looked at.
    pub root: PathBuf,
    /// Whether the store has a record of the root.
    pub trusted: bool,
    /// Each rule file found, sorted by path, with its state. Discovery's skipped entries (a
    /// symlinked rule file, a symlink where rule files live, files over `maxFiles`) are here too,
    /// as [`FileState::Refused`], with the format of the place they are in.
    pub files: Vec<(RuleFile, FileState)>,
    /// Files of the record no longer found (deleted, renamed, now refused by discovery).
    pub gone: Vec<PathBuf>,
    /// The walk or the byte cap left files out (see [`crate::sources::discover::Discovery`]).
    pub truncated: bool,
}

impl RepositoryState {
    /// The files that wait for `guidebook trust`: changed or new.
    pub fn waiting(&self) -> impl Iterator<Item = &(RuleFile, FileState)> {
        self.files
            .iter()
            .filter(|(_, s)| matches!(s, FileState::Changed | FileState::New))
    }
}

/// Each rule file of the repository at `root` (canonicalised here) found, read beneath the root
/// ([`read_text_beneath`], `maxFileBytes`, `maxBytes` for the repository), hashed, and judged
/// against `store`: what would be served and what waits. Walks the repository: never on a hook's
/// path.
pub fn repository_state(
    root: &Path,
    rules: &RepositoryRules,
    store: &TrustStore,
) -> RepositoryState {
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let record = store.repository(&root);
    let discovery = rule_files(&root, rules);
    let mut truncated = discovery.truncated;
    let mut files: Vec<(RuleFile, FileState)> = Vec::new();
    let mut bytes = 0u64;
    for file in discovery.files {
        let state = match read_text_beneath(&root, &file.relative, rules.max_file_bytes) {
            Err(refused) => FileState::Refused(refused.to_string()),
            Ok(text) => {
                bytes += text.len() as u64;
                if bytes > rules.max_bytes {
                    truncated = true;
                    FileState::Refused(over_bytes(rules))
                } else {
                    match record.map(|r| r.verdict(&file.relative, &hash(text.as_bytes()))) {
                        Some(Verdict::Trusted) => FileState::Trusted,
                        Some(Verdict::Changed) => FileState::Changed,
                        Some(Verdict::New) | None => FileState::New,
                    }
                }
            }
        };
        files.push((file, state));
    }
    for (relative, reason) in discovery.skipped {
        if let Some(format) =
            crate::sources::RuleFormat::of(&relative).or_else(|| place_of(&relative))
        {
            files.push((RuleFile { relative, format }, FileState::Refused(reason)));
        }
    }
    files.sort_by(|a, b| a.0.relative.cmp(&b.0.relative));
    let gone = record
        .map(|r| {
            r.files
                .keys()
                .filter(|k| {
                    !files
                        .iter()
                        .any(|(f, s)| &f.relative == *k && !matches!(s, FileState::Refused(_)))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    RepositoryState {
        root,
        trusted: record.is_some(),
        files,
        gone,
        truncated,
    }
}

/// The reason a file past `maxBytes` is refused (the daemon's loader says the same).
pub fn over_bytes(rules: &RepositoryRules) -> String {
    format!(
        "over the repository's cap of {} bytes of rule files (repositoryRules.maxBytes)",
        rules.max_bytes
    )
}

/// The format of the place a skipped path lies in (`.cursor` → Cursor), for a symlinked
/// directory that is not itself a rule file.
fn place_of(relative: &Path) -> Option<crate::sources::RuleFormat> {
    use crate::sources::RuleFormat;
    let first = relative.iter().next()?.to_str()?;
    Some(match first {
        ".guidebook" => RuleFormat::Guidebook,
        ".cursor" => RuleFormat::Cursor,
        ".claude" => RuleFormat::ClaudeRules,
        ".github" => RuleFormat::Copilot,
        ".continue" => RuleFormat::Continue,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_missing_store_is_empty_and_a_saved_one_reads_back_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/trust.json");
        let mut store = TrustStore::load(&path).unwrap();
        assert!(store.repositories().is_empty());
        let files = BTreeMap::from([(PathBuf::from("src/AGENTS.md"), hash(b"x"))]);
        store.trust(Path::new("/r/one"), files.clone());
        store.trust(Path::new("/r/two"), BTreeMap::new());
        store.save(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let back = TrustStore::load(&path).unwrap();
        assert_eq!(back, store);
        assert_eq!(back.files_of(Path::new("/r/one")), Some(&files));
        let json: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["version"], 1);
        assert_eq!(json["repositories"][0]["root"], "/r/one");
        assert_eq!(
            json["repositories"][0]["files"]["src/AGENTS.md"],
            hash(b"x")
        );
        assert!(json["repositories"][0]["trustedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn trusting_again_replaces_the_record_and_untrust_forgets_it() {
        let mut store = TrustStore::default();
        let root = Path::new("/r/one");
        store.trust(root, BTreeMap::from([(PathBuf::from("a.md"), hash(b"1"))]));
        store.trust(root, BTreeMap::from([(PathBuf::from("b.md"), hash(b"2"))]));
        assert_eq!(store.repositories().len(), 1);
        let r = store.repository(root).unwrap();
        assert_eq!(r.verdict(Path::new("b.md"), &hash(b"2")), Verdict::Trusted);
        assert_eq!(r.verdict(Path::new("b.md"), &hash(b"3")), Verdict::Changed);
        assert_eq!(r.verdict(Path::new("a.md"), &hash(b"1")), Verdict::New);
        assert!(store.untrust(root));
        assert!(!store.untrust(root));
        assert!(store.repository(root).is_none());
    }

    #[test]
    fn save_replaces_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let path = dir.path().join("trust.json");
        symlink(&victim, &path).unwrap();
        TrustStore::default().save(&path).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert!(fs::symlink_metadata(&path).unwrap().is_file());
    }

    #[test]
    fn broken_json_wrong_version_and_relative_roots_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        fs::write(&path, "{\"version\": 1,\n \"repositories\": [}").unwrap();
        let e = TrustStore::load(&path).unwrap_err();
        assert!(matches!(e, TrustError::Syntax { line: 2, .. }), "{e:?}");
        assert!(
            e.to_string().starts_with(&format!("{}:2:", path.display())),
            "{e}"
        );
        assert!(!e.to_string().contains(" at line "), "{e}");
        fs::write(&path, r#"{"version": 2, "repositories": []}"#).unwrap();
        let e = TrustStore::load(&path).unwrap_err();
        assert!(e.to_string().contains("version 2"), "{e}");
        fs::write(
            &path,
            r#"{"version": 1, "repositories": [{"root": "rel", "trustedAt": "x", "files": {}}]}"#,
        )
        .unwrap();
        let e = TrustStore::load(&path).unwrap_err();
        assert!(
            e.to_string().contains("`rel` is not an absolute path"),
            "{e}"
        );
    }

    #[test]
    fn repository_state_judges_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write("a/AGENTS.md", "same");
        write("b/AGENTS.md", "before");
        write("gone/AGENTS.md", "x");
        write(".cursor/rules/big.mdc", &"x".repeat(100));
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        fs::create_dir(root.join("c")).unwrap();
        symlink(outside.path().join("secret"), root.join("c/AGENTS.md")).unwrap();
        let rules = RepositoryRules {
            max_file_bytes: 50,
            ..RepositoryRules::default()
        };
        let mut store = TrustStore::default();
        let untrusted = repository_state(&root, &rules, &store);
        assert!(!untrusted.trusted);
        assert_eq!(untrusted.waiting().count(), 3);

        store.trust(
            &root,
            BTreeMap::from([
                (PathBuf::from("a/AGENTS.md"), hash(b"same")),
                (PathBuf::from("b/AGENTS.md"), hash(b"before")),
                (PathBuf::from("gone/AGENTS.md"), hash(b"x")),
            ]),
        );
        write("b/AGENTS.md", "after");
        fs::remove_file(root.join("gone/AGENTS.md")).unwrap();
        write("d/AGENTS.md", "new");
        let state = repository_state(&root, &rules, &store);
        let got: Vec<(String, String)> = state
            .files
            .iter()
            .map(|(f, s)| {
                let why = match s {
                    FileState::Refused(r) => format!("refused: {r}"),
                    s => s.word().to_string(),
                };
                (f.relative.display().to_string(), why)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    ".cursor/rules/big.mdc".into(),
                    "refused: 100 bytes, over the cap of 50 bytes".into()
                ),
                ("a/AGENTS.md".into(), "trusted".into()),
                ("b/AGENTS.md".into(), "changed".into()),
                (
                    "c/AGENTS.md".into(),
                    "refused: a symlink: not followed".into()
                ),
                ("d/AGENTS.md".into(), "new".into()),
            ]
        );
        assert_eq!(state.gone, vec![PathBuf::from("gone/AGENTS.md")]);
        assert!(state.trusted);
    }

    #[test]
    fn the_repository_byte_cap_refuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c"] {
            fs::create_dir(dir.path().join(d)).unwrap();
            fs::write(dir.path().join(d).join("AGENTS.md"), "x".repeat(40)).unwrap();
        }
        let rules = RepositoryRules {
            max_bytes: 100,
            ..RepositoryRules::default()
        };
        let state = repository_state(dir.path(), &rules, &TrustStore::default());
        let states: Vec<&str> = state.files.iter().map(|(_, s)| s.word()).collect();
        assert_eq!(states, ["new", "new", "refused"]);
        assert!(state.truncated);
    }
}
