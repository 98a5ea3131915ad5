//! The prompt packs as served: an immutable [`PackSet`] in `arc-swap`, reloaded from
//! `<root>/prompts/*.yaml` when files change, keeping the last good version of a pack that
//! broke. The embedded `default` pack is served when the root has none. Reads: the prompts
//! directory. Writes: nothing on disk.

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;

use super::pack::{find_pack_files, parse_pack, MAX_PACK_BYTES};
use super::PromptPack;
use crate::watched::{read_text, FileState, LoadError, Stamp};

/// The role served when a request names none.
pub const DEFAULT_ROLE: &str = "default";

/// Every pack of one moment, by role, with the errors of the files that did not load.
#[derive(Debug, Default)]
pub struct PackSet {
    pub packs: BTreeMap<String, Arc<PromptPack>>,
    pub errors: Vec<LoadError>,
}

impl PackSet {
    pub fn get(&self, role: &str) -> Option<&Arc<PromptPack>> {
        self.packs.get(role)
    }

    /// The roles served, sorted.
    pub fn roles(&self) -> Vec<&str> {
        self.packs.keys().map(String::as_str).collect()
    }
}

/// The live packs of a guidebook root.
#[derive(Debug)]
pub struct PromptPacks {
    root: PathBuf,
    current: ArcSwap<PackSet>,
    /// Held only by the reloader; request handlers never touch it. `None` before the first load.
    state: Mutex<Option<ReloadState>>,
}

#[derive(Debug, Default)]
struct ReloadState {
    files: BTreeMap<PathBuf, FileState<PromptPack>>,
    /// Problems that are not one pack's content: a bad file name, an unreadable directory.
    other_errors: Vec<LoadError>,
}

/// The `default` pack shipped in the binary (`guidebook/prompts/default.yaml`).
pub fn embedded_default() -> Option<Arc<PromptPack>> {
    static PACK: OnceLock<Option<Arc<PromptPack>>> = OnceLock::new();
    PACK.get_or_init(|| {
        let text = crate::sample::SAMPLE_FILES
            .iter()
            .find(|(p, _)| *p == "prompts/default.yaml")?
            .1;
        match parse_pack(
            Path::new("<embedded>/prompts/default.yaml"),
            DEFAULT_ROLE,
            text,
        ) {
            Ok(p) => Some(Arc::new(p)),
            Err(e) => {
                tracing::error!("the embedded default prompt pack is invalid: {e}");
                None
            }
        }
    })
    .clone()
}

impl PromptPacks {
    /// Loads the packs of `root` right away.
    pub fn load(root: PathBuf) -> Self {
        let packs = PromptPacks {
            root,
            current: ArcSwap::from_pointee(PackSet::default()),
            state: Mutex::new(None),
        };
        packs.reload();
        packs
    }

    /// The packs to serve one request from.
    pub fn snapshot(&self) -> Arc<PackSet> {
        self.current.load_full()
    }

    /// Looks for added, changed and removed pack files and swaps in a new set when anything
    /// changed. A pack that no longer parses keeps its last good version in service and its
    /// error is reported. Returns whether it swapped.
    pub fn reload(&self) -> bool {
        let mut guard = self.state.locked();
        let first = guard.is_none();
        let state = guard.get_or_insert_with(ReloadState::default);
        let mut other_errors = Vec::new();
        let mut changed = first;
        match find_pack_files(&self.root) {
            // Keep serving what was loaded: a directory that is unreadable for a moment must
            // not take every pack away.
            Err(e) => other_errors.push(LoadError::new(
                &self.root.join(super::PROMPTS_DIR),
                None,
                format!("cannot read the prompts directory: {e}"),
            )),
            Ok(listing) => {
                let mut next = BTreeMap::new();
                for file in listing {
                    let role = match file.role {
                        Ok(r) => r,
                        Err(e) => {
                            other_errors.push(e);
                            continue;
                        }
                    };
                    let (entry, refreshed) = FileState::refresh(
                        state.files.remove(&file.path),
                        Stamp::of(&file.meta),
                        || read_text(&file.path, MAX_PACK_BYTES),
                        |text| parse_pack(&file.path, &role, &text),
                    );
                    changed |= refreshed;
                    next.insert(file.path, entry);
                }
                // Whatever is left was deleted: its pack goes with it.
                changed |= !state.files.is_empty();
                state.files = next;
            }
        }
        if other_errors != state.other_errors {
            for e in &other_errors {
                tracing::warn!(target: crate::watched::FILE_ERRORS, "{e}");
            }
            changed = true;
            state.other_errors = other_errors;
        }
        if !changed {
            return false;
        }
        let mut errors = state.other_errors.clone();
        let mut packs = BTreeMap::new();
        for f in state.files.values() {
            errors.extend(f.error.clone());
            if let Some(p) = &f.good {
                packs.insert(p.role.clone(), p.clone());
            }
        }
        if !packs.contains_key(DEFAULT_ROLE) {
            if let Some(p) = embedded_default() {
                packs.insert(DEFAULT_ROLE.to_string(), p);
            }
        }
        errors.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
        tracing::info!(
            root = %self.root.display(),
            roles = ?packs.keys().collect::<Vec<_>>(),
            errors = errors.len(),
            "prompt packs loaded"
        );
        self.current.store(Arc::new(PackSet { packs, errors }));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACK: &str = "roleDefinition: R {n}\ncoreConstraints: [a, b, c]\nrules: [r]\nexamples:\n  - {title: t, body: b}\n";

    fn write(root: &Path, role: &str, n: &str) -> PathBuf {
        let dir = root.join("prompts");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{role}.yaml"));
        std::fs::write(&p, PACK.replace("{n}", n)).unwrap();
        p
    }

    #[test]
    fn the_embedded_default_is_valid_and_served_when_the_root_has_none() {
        assert!(embedded_default().is_some());
        let dir = tempfile::tempdir().unwrap();
        let packs = PromptPacks::load(dir.path().to_path_buf());
        let s = packs.snapshot();
        assert_eq!(s.roles(), ["default"]);
        assert!(s.errors.is_empty());
        assert!(!packs.reload(), "nothing changed");
    }

    #[test]
    fn a_broken_pack_keeps_its_last_good_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "reviewer", "1");
        write(dir.path(), "default", "own");
        let packs = PromptPacks::load(dir.path().to_path_buf());
        let s = packs.snapshot();
        assert_eq!(s.roles(), ["default", "reviewer"]);
        assert_eq!(
            s.get("default").unwrap().role_definition,
            "R own",
            "the root's own default wins"
        );

        std::fs::write(&p, "roleDefinition: R 2\ncoreConstraints: [a]\nrules: [r]\nexamples: [{title: t, body: b}]\n").unwrap();
        assert!(packs.reload());
        let s = packs.snapshot();
        assert_eq!(s.get("reviewer").unwrap().role_definition, "R 1");
        assert_eq!(s.errors.len(), 1);
        assert_eq!(s.errors[0].path, p);
        assert_eq!(s.errors[0].line, Some(2));

        write(dir.path(), "reviewer", "3");
        assert!(packs.reload());
        let s = packs.snapshot();
        assert_eq!(s.get("reviewer").unwrap().role_definition, "R 3");
        assert!(s.errors.is_empty());

        std::fs::remove_file(&p).unwrap();
        std::fs::write(dir.path().join("prompts/Bad.yaml"), PACK).unwrap();
        assert!(packs.reload());
        let s = packs.snapshot();
        assert_eq!(s.roles(), ["default"]);
        assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
        assert!(!packs.reload(), "a bad name alone is no change");
    }
}
