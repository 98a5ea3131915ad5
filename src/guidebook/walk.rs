//! Finds every `guideline.yaml` under a guidebook root, a level at a time on every core,
//! skipping hidden directories and not following symlinked ones. Reads: the directory tree
//! (listings and `stat`s), never a guideline's content. Writes nothing.

use std::path::{Path, PathBuf};

pub const GUIDELINE_FILE_NAME: &str = "guideline.yaml";

/// Every `guideline.yaml` under `root`, sorted, with its metadata. Symlinked directories are
/// not followed (a link cycle must not hang a reload); hidden directories are skipped.
///
/// The walk goes a level at a time, each level's directories listed on every core: a
/// guidebook of 10,000 guidelines is 10,000 directories, and listing them one after another
/// was a sixth of a cold start. A directory with no subdirectory (the usual guideline
/// directory) is not listed at all where its file system counts subdirectories in its link
/// count ([`Walk`]): its `guideline.yaml` is looked up by name, two `stat`s instead of an
/// open, two `getdents`, a close and a `stat`.
pub fn find_guideline_files(root: &Path) -> std::io::Result<Vec<(PathBuf, std::fs::Metadata)>> {
    Ok(walk_guidebook(root)?.0)
}

/// How a walk went: directories listed and directories whose file was looked up by name.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct WalkCounts {
    listed: usize,
    looked_up: usize,
}

/// [`find_guideline_files`], with how many directories it listed and how many it did not need
/// to.
fn walk_guidebook(root: &Path) -> std::io::Result<(Vec<(PathBuf, std::fs::Metadata)>, WalkCounts)> {
    walk_with(root, Walk::of(root))
}

fn walk_with(
    root: &Path,
    walk: Walk,
) -> std::io::Result<(Vec<(PathBuf, std::fs::Metadata)>, WalkCounts)> {
    // The root itself must be readable; a subdirectory that vanished mid-walk is not an error.
    let (mut out, mut level) = list_dir(std::fs::read_dir(root)?);
    let mut counts = WalkCounts {
        listed: 1,
        looked_up: 0,
    };
    while !level.is_empty() {
        let visited = crate::parallel::map(level, DIRS_PER_THREAD, |dir| walk.visit(&dir));
        level = Vec::new();
        for (files, dirs, listed) in visited {
            if listed {
                counts.listed += 1;
            } else {
                counts.looked_up += 1;
            }
            out.extend(files);
            level.extend(dirs);
        }
    }
    out.sort_unstable_by(|a, b| path_order(&a.0, &b.0));
    Ok((out, counts))
}

/// The order of [`Path`]'s own comparison, component by component, for the paths a walk
/// makes (one root joined with names, no `.` and no doubled separators): their bytes with the
/// separator below every other byte, compared without parsing components at every step.
fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let (a, b) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    // Paths of one walk share long prefixes: skip the common one a machine word at a time
    // (bytes mapped one by one made this sort a sixth of an idle check's CPU).
    let mut same = 0;
    while same + 8 <= a.len().min(b.len()) && a[same..same + 8] == b[same..same + 8] {
        same += 8;
    }
    let key = |&byte: &u8| if byte == b'/' { 0 } else { byte };
    a[same..].iter().map(key).cmp(b[same..].iter().map(key))
}

/// Below this many directories in a level, one thread lists them all.
const DIRS_PER_THREAD: usize = 256;

/// What one walk may assume of the root's file system.
///
/// On the file systems named in [`counts_subdirectories`] a directory's link count is two
/// plus its subdirectories (its own entry, its `.`, and each child's `..`), so a link count of
/// 2 says "no subdirectory" and the directory need not be listed: only its `guideline.yaml`
/// can be in it. The same assumption as `find`'s leaf optimisation, taken only where the kernel
/// says which file system it is (btrfs and overlayfs's merged directories report 1 and are
/// listed anyway; network and FUSE file systems, and every other OS, are always listed), and
/// only for directories on the root's own device (a mount point inside the root is listed).
#[derive(Debug, Clone, Copy)]
struct Walk {
    /// The root's device, when its file system counts subdirectories.
    leaf_device: Option<u64>,
}

impl Walk {
    fn of(root: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let leaf_device = counts_subdirectories(root)
            .then(|| std::fs::metadata(root).ok().map(|m| m.dev()))
            .flatten();
        Walk { leaf_device }
    }

    /// One directory's guideline files and subdirectories, and whether it had to be listed.
    fn visit(&self, dir: &Path) -> (Vec<(PathBuf, std::fs::Metadata)>, Vec<PathBuf>, bool) {
        use std::os::unix::fs::MetadataExt;
        if let Some(device) = self.leaf_device {
            let leaf = std::fs::symlink_metadata(dir)
                .is_ok_and(|m| m.is_dir() && m.dev() == device && m.nlink() == 2);
            if leaf {
                let path = dir.join(GUIDELINE_FILE_NAME);
                match std::fs::symlink_metadata(&path) {
                    Ok(own) => {
                        let meta = follow(&path, own);
                        return (vec![(path, meta)], vec![], false);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return (vec![], vec![], false)
                    }
                    // Not searchable, say: listing it gives what it always gave.
                    Err(_) => {}
                }
            }
        }
        let (files, dirs) = std::fs::read_dir(dir).map(list_dir).unwrap_or_default();
        (files, dirs, true)
    }
}

/// Whether `root`'s file system is one whose directories' link counts count their
/// subdirectories (ext2/3/4, XFS, tmpfs).
#[cfg(target_os = "linux")]
fn counts_subdirectories(root: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const EXT: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    const TMPFS: i64 = 0x0102_1994;
    let Ok(path) = std::ffi::CString::new(root.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `fs` is written by the call before it is
    // read, only when the call succeeds.
    if unsafe { libc::statfs(path.as_ptr(), fs.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: initialised by the successful call above. `f_type`'s type differs by target
    // (i64 here, u32 or i32 elsewhere).
    #[allow(clippy::unnecessary_cast)]
    let kind = unsafe { fs.assume_init() }.f_type as i64;
    matches!(kind, EXT | XFS | TMPFS)
}

#[cfg(not(target_os = "linux"))]
fn counts_subdirectories(_root: &Path) -> bool {
    false
}

/// A guideline file's metadata: its own, or, for a symlink, what it names (a dangling one keeps
/// its own `stat` and is reported by the read that follows).
fn follow(path: &Path, own: std::fs::Metadata) -> std::fs::Metadata {
    if own.file_type().is_symlink() {
        std::fs::metadata(path).unwrap_or(own)
    } else {
        own
    }
}

/// One directory's guideline files (with their metadata) and the subdirectories to walk next.
fn list_dir(entries: std::fs::ReadDir) -> (Vec<(PathBuf, std::fs::Metadata)>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() && name != GUIDELINE_FILE_NAME {
            if !name.to_string_lossy().starts_with('.') {
                dirs.push(entry.path());
            }
        } else if name == GUIDELINE_FILE_NAME {
            // A directory in a guideline file's place is listed too: its read fails, so the
            // guideline's last good version stays served and the error is reported, as for
            // any other broken file. Skipping it would silently withdraw the guideline.
            // The entry's own `stat` is taken relative to the open directory; only a symlink
            // is followed, by its path, to what it names.
            let path = entry.path();
            if let Ok(own) = entry.metadata() {
                let meta = follow(&path, own);
                files.push((path, meta));
            }
        }
    }
    (files, dirs)
}

#[cfg(test)]
mod tests {
    use super::super::load::tests::GOOD;
    use super::*;

    #[test]
    fn finds_files_recursively_skipping_hidden_dirs() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["a", "b/c", ".git/x"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join(GUIDELINE_FILE_NAME), GOOD).unwrap();
        }
        std::fs::write(dir.path().join("a/other.yaml"), GOOD).unwrap();
        let found: Vec<PathBuf> = find_guideline_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|(p, _)| p.strip_prefix(dir.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            found,
            vec![
                PathBuf::from("a/guideline.yaml"),
                PathBuf::from("b/c/guideline.yaml")
            ]
        );
    }

    #[test]
    fn path_order_is_the_order_of_paths() {
        // Names that put a separator against every kind of byte around it.
        // Long names and roots too, so that prefixes of a word and more are skipped.
        let names = [
            "a",
            "a-b",
            "a.b",
            "ab",
            "a b",
            "b",
            "é",
            "A",
            "a0",
            "~",
            "abcdefgh",
            "abcdefg",
            "abcdefghi",
            "abcdefg-i",
            "abcdefgh/i",
        ];
        let mut paths = Vec::new();
        for root in ["/root", "/a/longer/root-01"] {
            paths.push(PathBuf::from(root));
            for x in names {
                paths.push(Path::new(root).join(x));
                for y in names {
                    paths.push(Path::new(root).join(x).join(y));
                    paths.push(Path::new(root).join(x).join(y).join(GUIDELINE_FILE_NAME));
                }
            }
        }
        for a in &paths {
            for b in &paths {
                assert_eq!(path_order(a, b), a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    #[test]
    fn a_wide_guidebook_is_walked_whole_level_by_level() {
        // Levels wide enough to be listed on several threads, guidelines at several depths,
        // hidden directories at every level, and a file that only looks like a guideline.
        let dir = tempfile::tempdir().unwrap();
        let mut expected = Vec::new();
        for i in 0..3 * DIRS_PER_THREAD {
            let sub = format!("team{}/g{i:04}", i % 3);
            let at = dir.path().join(&sub);
            std::fs::create_dir_all(at.join(".hidden")).unwrap();
            std::fs::write(at.join(".hidden").join(GUIDELINE_FILE_NAME), GOOD).unwrap();
            std::fs::write(at.join("guideline.yml"), GOOD).unwrap();
            let file = if i % 5 == 0 {
                std::fs::create_dir_all(at.join("deeper/still")).unwrap();
                format!("{sub}/deeper/still/{GUIDELINE_FILE_NAME}")
            } else {
                format!("{sub}/{GUIDELINE_FILE_NAME}")
            };
            std::fs::write(dir.path().join(&file), GOOD).unwrap();
            expected.push(PathBuf::from(file));
        }
        expected.sort();
        let found: Vec<PathBuf> = find_guideline_files(dir.path())
            .unwrap()
            .into_iter()
            .map(|(p, meta)| {
                assert!(meta.is_file());
                p.strip_prefix(dir.path()).unwrap().to_path_buf()
            })
            .collect();
        assert_eq!(found, expected);
        // A symlinked guideline file is listed with what it names (its size, its kind); a
        // dangling one is listed too, for the read that follows to report.
        let shared = dir.path().join("shared.yaml");
        std::fs::write(&shared, GOOD).unwrap();
        std::fs::create_dir_all(dir.path().join("linked")).unwrap();
        std::fs::create_dir_all(dir.path().join("dangling")).unwrap();
        let linked = dir.path().join("linked").join(GUIDELINE_FILE_NAME);
        let dangling = dir.path().join("dangling").join(GUIDELINE_FILE_NAME);
        std::os::unix::fs::symlink(&shared, &linked).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone.yaml"), &dangling).unwrap();
        let listing = find_guideline_files(dir.path()).unwrap();
        let meta = |p: &Path| &listing.iter().find(|(q, _)| q == p).unwrap().1;
        assert!(meta(&linked).is_file());
        assert_eq!(meta(&linked).len(), GOOD.len() as u64);
        assert!(meta(&dangling).file_type().is_symlink());
        assert_eq!(listing.len(), expected.len() + 2);
        // A root that cannot be read is an error, not an empty guidebook.
        assert!(find_guideline_files(&dir.path().join("missing")).is_err());
    }

    /// A tree with every kind of directory the leaf shortcut must get right: guideline
    /// directories with no subdirectory (a file, a symlink, a dangling symlink, no file, a
    /// decoy name), with hidden and with visible subdirectories, and a `guideline.yaml` that is
    /// a directory.
    fn mixed_tree(root: &Path) {
        let put = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, GOOD).unwrap();
        };
        for i in 0..40 {
            put(&format!("leaves/g{i:02}/{GUIDELINE_FILE_NAME}"));
        }
        put("leaves/decoy/guideline.yml");
        std::fs::create_dir_all(root.join("leaves/empty")).unwrap();
        put("hidden/a/.drafts/guideline.yaml");
        put(&format!("hidden/a/{GUIDELINE_FILE_NAME}"));
        put(&format!("nested/a/{GUIDELINE_FILE_NAME}"));
        put(&format!("nested/a/b/{GUIDELINE_FILE_NAME}"));
        put(&format!("nested/a/b/c/{GUIDELINE_FILE_NAME}"));
        std::fs::create_dir_all(root.join("odd/guideline.yaml")).unwrap();
        put("shared.yaml");
        std::fs::create_dir_all(root.join("linked")).unwrap();
        std::os::unix::fs::symlink(root.join("shared.yaml"), root.join("linked/guideline.yaml"))
            .unwrap();
        std::fs::create_dir_all(root.join("dangling")).unwrap();
        std::os::unix::fs::symlink(root.join("gone"), root.join("dangling/guideline.yaml"))
            .unwrap();
    }

    /// What a listing says of each file: path, kind, size, inode.
    fn summary(listing: &[(PathBuf, std::fs::Metadata)]) -> Vec<(PathBuf, String, u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        listing
            .iter()
            .map(|(p, m)| (p.clone(), format!("{:?}", m.file_type()), m.len(), m.ino()))
            .collect()
    }

    #[test]
    fn looking_up_leaf_directories_finds_what_listing_every_directory_finds() {
        let dir = tempfile::tempdir().unwrap();
        mixed_tree(dir.path());
        let (listed, all) = walk_with(dir.path(), Walk { leaf_device: None }).unwrap();
        let (walked, counts) = walk_guidebook(dir.path()).unwrap();
        assert_eq!(summary(&walked), summary(&listed));
        // The reference lists every directory; the walk visits the same ones.
        assert_eq!(all.looked_up, 0);
        assert_eq!(counts.listed + counts.looked_up, all.listed);
        assert_eq!(walked.len(), 40 + 1 + 3 + 1 + 2, "{walked:#?}");
        // A guideline that gains a subdirectory is listed again, and what is in it is found.
        let (_, before) = walk_guidebook(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("leaves/g07/more")).unwrap();
        std::fs::write(
            dir.path().join("leaves/g07/more").join(GUIDELINE_FILE_NAME),
            GOOD,
        )
        .unwrap();
        let (again, after) = walk_guidebook(dir.path()).unwrap();
        assert_eq!(again.len(), walked.len() + 1);
        assert!(again
            .iter()
            .any(|(p, _)| p.ends_with("leaves/g07/more/guideline.yaml")));
        if counts_subdirectories(dir.path()) {
            assert_eq!(after.listed, before.listed + 1);
        }
    }

    /// Where the file system counts subdirectories in link counts (ext4 here; tmpfs and XFS
    /// too), a directory without subdirectories is not listed: its file is looked up by name.
    #[test]
    fn a_guideline_directory_without_subdirectories_is_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        mixed_tree(dir.path());
        let (_, counts) = walk_guidebook(dir.path()).unwrap();
        if !counts_subdirectories(dir.path()) {
            // Every other file system is listed whole; nothing to look up.
            assert_eq!(counts.looked_up, 0);
            return;
        }
        // Looked up: leaves/g00..g39, decoy, empty; hidden/a/.drafts is skipped (hidden);
        // nested/a/b/c; linked, dangling. Listed: the root, leaves, hidden, hidden/a (it has a
        // subdirectory), nested, nested/a, nested/a/b, odd (its `guideline.yaml` is one).
        assert_eq!(
            counts,
            WalkCounts {
                listed: 8,
                looked_up: 40 + 2 + 1 + 2
            }
        );
    }
}
