//! The sample guidebook compiled into the binary: guidelines, prompt packs, flags, schemas.
//!
//! Also its installation into the default root on the first `serve`. Writes: the guidebook
//! root, once, only when it does not exist.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/sample_guidebook.rs"));

/// Writes the embedded sample to `root` if `root` does not exist. The files are written into a
/// sibling temporary directory that is renamed into place, so a crash half-way never leaves a
/// partial guidebook that would then be mistaken for the user's own. Returns whether it wrote.
pub fn install_sample(root: &Path) -> std::io::Result<bool> {
    if std::fs::symlink_metadata(root).is_ok() {
        return Ok(false);
    }
    let parent = root.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(parent)?;
    let staging = parent.join(format!(
        ".{}.installing-{}",
        root.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("guidebook"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::DirBuilder::new().mode(0o700).create(&staging)?;
    for (rel, content) in SAMPLE_FILES {
        let path = staging.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        std::fs::write(&path, content)?;
    }
    match std::fs::rename(&staging, root) {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            // Another process installed it first: that is as good as having done it.
            if root.exists() {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_and_the_sample_is_valid() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("home/guidebook");
        assert!(install_sample(&root).unwrap());
        assert!(!install_sample(&root).unwrap());
        let gb = crate::guidebook::Guidebook::load(root);
        let s = gb.snapshot();
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let ids: Vec<&str> = s.guidelines.iter().map(|g| g.id()).collect();
        assert!(ids.contains(&"service-depends-on-port"), "{ids:?}");
        assert!(ids.contains(&"preserve-required-config"), "{ids:?}");
        assert!(ids.len() >= 8, "{ids:?}");
    }
}
