//! The parse cache: every guideline as the last run parsed and indexed it, by file and stamp,
//! so that a restart reads, parses and indexes only the files that changed since.
//!
//! Parsing the YAML and the patterns of a 10,000-guideline guidebook is most of a start. The
//! cache (`guidebook-cache.json` beside the database) is written by the daemon after a load
//! that parsed something (after its first load, by the first check for changes or on exit, so
//! that the first searches have the cores), and read by the next process's first load; a file
//! is taken from it only when its stamp (inode, device, size, modification and change times)
//! is the one it was parsed at and old enough to trust, and only by the very build that wrote
//! it. Anything else — another build, another root, a file that cannot be read or parsed — is
//! a cache miss: the files are parsed as if there were none, and a damaged cache is reported
//! once and replaced.
//! Reads and writes: that one file.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::file_map::{FileMap, PathKey};
use super::guideline::{Example, Guideline, Severity};
use super::matching::{Condition, Index};
use crate::language;
use crate::watched::{FileState, ReadError, Stamp};

/// The cache's file name, in the directory of the database.
pub const CACHE_FILE_NAME: &str = "guidebook-cache.json";

/// A bound on the cache read back: about 750 bytes a guideline, so a million guidelines.
const MAX_CACHE_BYTES: u64 = 1 << 30;

/// The cache file. Written borrowing the served guidelines (so that writing copies nothing
/// but the bytes it writes), read back owned.
#[derive(Serialize, Deserialize)]
struct CacheFile<'a> {
    /// The build that wrote it ([`build_id`]): a parse or an index of another build may differ.
    build: String,
    root: Cow<'a, Path>,
    files: Vec<CachedFile<'a>>,
}

#[derive(Serialize, Deserialize)]
struct CachedFile<'a> {
    path: Cow<'a, Path>,
    stamp: Stamp,
    hash: u64,
    id: Cow<'a, str>,
    repositories: Option<Cow<'a, [String]>>,
    languages: Option<Vec<Cow<'a, str>>>,
    paths: Option<Cow<'a, [String]>>,
    condition: Cow<'a, Condition>,
    severity: Severity,
    patterns: Cow<'a, [String]>,
    indexes: Cow<'a, [Index]>,
    content: Cow<'a, str>,
    id_line: Option<usize>,
    examples: Cow<'a, [Example]>,
}

/// This build, as precisely as can be told cheaply: the version, and the size and modification
/// time of the running executable (every rebuild changes them).
fn build_id() -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{modified}", m.len())
        })
        .unwrap_or_else(|_| "unknown".into());
    format!("{} {exe}", env!("CARGO_PKG_VERSION"))
}

/// The file states remembered for `root` in the cache at `path`: empty when there is no cache,
/// or one of another build or root. A cache that cannot be read or parsed is reported.
pub fn load(path: &Path, root: &Path) -> FileMap {
    // Read like any watched file: never blocking on a FIFO, never past a bound.
    let bytes = match crate::watched::read_capped(path, MAX_CACHE_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::Missing) => return FileMap::new(),
        Err(e) => {
            tracing::warn!(
                "cannot read the parse cache {}: {e}; parsing every guideline",
                path.display()
            );
            return FileMap::new();
        }
    };
    let cache: CacheFile = match serde_json::from_slice(&bytes) {
        Ok(cache) => cache,
        Err(e) => {
            tracing::warn!(
                "the parse cache {} is damaged ({e}); parsing every guideline",
                path.display()
            );
            return FileMap::new();
        }
    };
    if cache.build != build_id() || cache.root != root {
        return FileMap::new();
    }
    cache
        .files
        .into_iter()
        .filter_map(|f| {
            let languages = match f.languages {
                Some(names) => Some(
                    names
                        .iter()
                        .map(|n| language::known(n))
                        .collect::<Option<Vec<&'static str>>>()?,
                ),
                None => None,
            };
            let path = f.path.into_owned();
            let guideline = Guideline {
                id: f.id.into_owned(),
                repositories: f.repositories.map(Cow::into_owned),
                languages,
                paths: f.paths.map(Cow::into_owned),
                condition: f.condition.into_owned(),
                severity: f.severity,
                patterns: f.patterns.into_owned(),
                indexes: f.indexes.into_owned().into(),
                content: f.content.into_owned(),
                source: path.clone(),
                origin: Default::default(),
                id_line: f.id_line,
                examples: f.examples.into_owned(),
            };
            let state = FileState::remembered(f.stamp, Arc::new(guideline), f.hash);
            Some((PathKey(path), state))
        })
        .collect()
}

/// Writes the good guidelines of `files` to the cache at `path`, replacing it whole (a new file
/// renamed over the old). A file with an error, or a stamp too recent to trust, is left out:
/// the next run reads it. A failure is reported and costs only the next start's time.
pub fn save(path: &Path, root: &Path, files: &FileMap) {
    save_at(path, root, files, SystemTime::now());
}

/// [`save`] at the time `now`, which decides which stamps are too recent to trust (the tests
/// give it; [`save`] takes the clock's).
fn save_at(path: &Path, root: &Path, files: &FileMap, now: SystemTime) {
    let mut kept: Vec<CachedFile<'_>> = files
        .iter()
        .filter(|(_, f)| f.error.is_none() && !f.stamp.is_racy(now))
        .filter_map(|(p, f)| {
            let g = f.good.as_ref()?;
            Some(CachedFile {
                path: Cow::Borrowed(&p.0),
                stamp: f.stamp,
                hash: f.content_hash()?,
                id: Cow::Borrowed(&g.id),
                repositories: g.repositories.as_deref().map(Cow::Borrowed),
                languages: g
                    .languages
                    .as_ref()
                    .map(|l| l.iter().map(|n| Cow::Borrowed(*n)).collect()),
                paths: g.paths.as_deref().map(Cow::Borrowed),
                condition: Cow::Borrowed(&g.condition),
                severity: g.severity,
                patterns: Cow::Borrowed(&g.patterns),
                indexes: Cow::Borrowed(g.indexes.get()?),
                content: Cow::Borrowed(&g.content),
                id_line: g.id_line,
                examples: Cow::Borrowed(&g.examples),
            })
        })
        .collect();
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    let cache = CacheFile {
        build: build_id(),
        root: Cow::Borrowed(root),
        files: kept,
    };
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp)
        .and_then(|file| {
            use std::io::Write;
            let mut out = std::io::BufWriter::new(file);
            serde_json::to_writer(&mut out, &cache).map_err(std::io::Error::other)?;
            out.flush()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!("cannot write the parse cache {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guidebook::Guidebook;
    use std::path::PathBuf;

    fn write(root: &Path, dir: &str, id: &str, content: &str) -> PathBuf {
        crate::guidebook::write_test_guideline(
            root,
            dir,
            &format!("id: {id}\nscope:\n  languages: [kotlin]\n  paths: ['src/**', '!**/test/**']\nmatch:\n  in: changes\n  all:\n    - regex:\n        pattern: '\\bOrderInvoiceImpl\\('\n    - not: {{regex: {{pattern: '@Test', in: file}}}}\ncontent: {content}\n"),
        )
    }

    /// Files just written have stamps too recent to trust (and to cache): let them age.
    fn settle() {
        std::thread::sleep(std::time::Duration::from_millis(120));
    }

    fn contents(gb: &Guidebook) -> Vec<(String, String)> {
        gb.snapshot()
            .guidelines
            .iter()
            .map(|g| (g.guideline.id.clone(), g.guideline.content.clone()))
            .collect()
    }

    /// Rewrites one cached guideline's content, so that a later load shows whether it came
    /// from the cache or from its file.
    fn tamper(cache: &Path, id: &str, content: &str) {
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cache).unwrap()).unwrap();
        for f in json["files"].as_array_mut().unwrap() {
            if f["id"] == id {
                f["content"] = content.into();
            }
        }
        std::fs::write(cache, serde_json::to_vec(&json).unwrap()).unwrap();
    }

    #[test]
    fn a_restart_takes_unchanged_files_from_the_cache_and_parses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        write(&root, "a", "alpha", "from the file");
        let b = write(&root, "b", "beta", "from the file");
        let c = write(&root, "c", "gamma", "from the file");
        settle();
        let first = Guidebook::with_cache(root.clone(), cache.clone(), true);
        first.reload();
        assert!(cache.exists(), "the first load writes the cache");
        let g = &first.snapshot().guidelines[0].guideline;
        assert_eq!(g.languages, Some(vec!["kotlin"]));

        tamper(&cache, "alpha", "from the cache");
        tamper(&cache, "beta", "from the cache");
        write(&root, "b", "beta", "edited");
        std::fs::remove_file(&c).unwrap();
        write(&root, "d", "delta", "new");
        settle();
        let second = Guidebook::with_cache(root.clone(), cache.clone(), true);
        second.reload();
        assert_eq!(
            contents(&second),
            [
                ("alpha".into(), "from the cache".into()),
                ("beta".into(), "edited".into()),
                ("delta".into(), "new".into()),
            ],
            "an unchanged file is not read again; an edited, a deleted and a new one are"
        );
        // What the cache gives is what a parse gives, index included.
        let cached = &second.snapshot().guidelines[0].guideline;
        let parsed =
            crate::guidebook::parse_guideline(&b, &std::fs::read_to_string(&b).unwrap()).unwrap();
        assert_eq!(cached.patterns, parsed.patterns);
        assert_eq!(cached.indexes.get(), parsed.indexes.get());
        assert_eq!(cached.languages, parsed.languages);
        assert_eq!(cached.paths, parsed.paths);
        assert_eq!(cached.condition, parsed.condition);
        assert!(parsed.paths.is_some() && !parsed.condition.is_plain());
        assert_eq!(cached.id_line, parsed.id_line);
        // The second load parsed something, so it rewrote the cache: a third start has it all.
        let third = Guidebook::with_cache(root.clone(), cache.clone(), true);
        third.reload();
        assert_eq!(contents(&third), contents(&second));
    }

    /// A structural (`ast`) leaf comes back from the cache as parsed, and matches.
    #[test]
    fn a_structural_leaf_round_trips_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        let file = crate::guidebook::write_test_guideline(
            &root,
            "s",
            "id: structural\nscope:\n  languages: [kotlin]\nmatch:\n  all:\n    - ast:\n        pattern: runBlocking { $$$ }\n        inside: 'fun $F() = $B'\n        in: changes\n    - not: {ast: {pattern: '$A + $B'}}\ncontent: from the file\n",
        );
        settle();
        let first = Guidebook::with_cache(root.clone(), cache.clone(), true);
        first.reload();
        assert!(cache.exists());
        tamper(&cache, "structural", "from the cache");
        let second = Guidebook::with_cache(root.clone(), cache.clone(), true);
        second.reload();
        assert_eq!(
            contents(&second),
            [("structural".into(), "from the cache".into())]
        );
        let snapshot = second.snapshot();
        let cached = &snapshot.guidelines[0].guideline;
        let parsed =
            crate::guidebook::parse_guideline(&file, &std::fs::read_to_string(&file).unwrap())
                .unwrap();
        assert_eq!(cached.condition, parsed.condition);
        assert_eq!(cached.patterns, parsed.patterns);
        assert_eq!(cached.indexes.get(), parsed.indexes.get());
        let all = snapshot.applicability(None, Some("kotlin"));
        let text = crate::guidebook::Text::new(b"fun f() = runBlocking { g() }\n")
            .in_language(Some("kotlin"));
        let edit = crate::guidebook::Edit::known(crate::guidebook::Written::All);
        let place = crate::guidebook::FilePlace::Unchecked;
        assert_eq!(snapshot.matching_in(&text, &all, place, &edit), [0]);
    }

    /// A daemon's first load puts the write off: nothing is written until the next reload
    /// (the first check for changes, which has nothing new to load) or `write_cache`.
    #[test]
    fn a_write_put_off_is_made_by_the_next_reload_or_on_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        write(&root, "a", "alpha", "from the file");
        settle();
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload_with(crate::guidebook::CacheWrite::Later);
        assert_eq!(contents(&gb), [("alpha".into(), "from the file".into())]);
        assert!(!cache.exists(), "the first load leaves the write for later");
        assert_eq!(gb.reload(), crate::guidebook::ReloadOutcome::Unchanged);
        assert!(cache.exists(), "the next check writes what is owed");

        std::fs::remove_file(&cache).unwrap();
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload_with(crate::guidebook::CacheWrite::Later);
        gb.write_cache();
        assert!(
            cache.exists(),
            "a daemon on its way out writes what is owed"
        );
        std::fs::remove_file(&cache).unwrap();
        gb.write_cache();
        assert!(!cache.exists(), "and only once");
    }

    #[test]
    fn a_damaged_or_foreign_cache_is_a_miss_and_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        write(&root, "a", "alpha", "from the file");
        settle();
        Guidebook::with_cache(root.clone(), cache.clone(), true).reload();

        // Written by another build: not trusted (and rewritten by this one).
        tamper(&cache, "alpha", "from the cache");
        let mut json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        json["build"] = "another build".into();
        std::fs::write(&cache, serde_json::to_vec(&json).unwrap()).unwrap();
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload();
        assert_eq!(contents(&gb), [("alpha".into(), "from the file".into())]);

        // A root that cannot be read serves nothing, whatever its cache holds.
        let hidden = dir.path().join("hidden");
        std::fs::rename(&root, &hidden).unwrap();
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload();
        assert_eq!(contents(&gb), []);
        assert_eq!(gb.snapshot().errors.len(), 1);
        std::fs::rename(&hidden, &root).unwrap();

        // For another root: not trusted either.
        let other = Guidebook::with_cache(dir.path().to_path_buf(), cache.clone(), true);
        other.reload();
        assert_eq!(contents(&other), [("alpha".into(), "from the file".into())]);

        // A FIFO in its place blocks nothing: a miss, reported, and replaced.
        std::fs::remove_file(&cache).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(&cache)
            .status()
            .unwrap();
        assert!(status.success());
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload();
        assert_eq!(contents(&gb), [("alpha".into(), "from the file".into())]);
        assert!(std::fs::metadata(&cache).unwrap().is_file());

        // Damaged: the guidebook loads from its files, and the cache is written anew.
        std::fs::write(&cache, b"{\"build\": tru").unwrap();
        let gb = Guidebook::with_cache(root.clone(), cache.clone(), true);
        gb.reload();
        assert_eq!(contents(&gb), [("alpha".into(), "from the file".into())]);
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
        assert_eq!(json["files"][0]["id"], "alpha");
    }

    #[test]
    fn a_reader_uses_the_cache_and_never_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        write(&root, "a", "alpha", "from the file");
        settle();
        // Without a cache, a reader parses everything and leaves no cache behind.
        let reader = Guidebook::with_cache(root.clone(), cache.clone(), false);
        reader.reload();
        assert_eq!(
            contents(&reader),
            [("alpha".into(), "from the file".into())]
        );
        assert!(!cache.exists());
        // With one, it takes what the cache holds and leaves the cache as it was.
        Guidebook::with_cache(root.clone(), cache.clone(), true).reload();
        tamper(&cache, "alpha", "from the cache");
        write(&root, "b", "beta", "new");
        settle();
        let before = std::fs::read(&cache).unwrap();
        let reader = Guidebook::with_cache(root.clone(), cache.clone(), false);
        reader.reload();
        assert_eq!(
            contents(&reader),
            [
                ("alpha".into(), "from the cache".into()),
                ("beta".into(), "new".into())
            ]
        );
        assert_eq!(std::fs::read(&cache).unwrap(), before);
    }

    /// The time of the save is given, not read from the clock: "just written" is the file's
    /// own change time, so no pause of a busy machine between the write and the save can age
    /// the stamp into trust.
    #[test]
    fn a_file_too_recent_to_trust_is_not_cached() {
        use crate::guidebook::load::{parse_guideline, MAX_GUIDELINE_BYTES};
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        let cache = dir.path().join(CACHE_FILE_NAME);
        let old = write(&root, "a", "alpha", "old enough");
        settle();
        let new = write(&root, "b", "beta", "just written");
        let mut files = FileMap::new();
        for path in [&old, &new] {
            let (state, _) = FileState::refresh(
                None,
                Stamp::of(&std::fs::metadata(path).unwrap()),
                || crate::watched::read_text(path, MAX_GUIDELINE_BYTES),
                |text| parse_guideline(path, &text),
            );
            files.insert(PathKey(path.clone()), state);
        }
        let meta = std::fs::metadata(&new).unwrap();
        let written = SystemTime::UNIX_EPOCH
            + std::time::Duration::new(meta.ctime() as u64, meta.ctime_nsec() as u32);
        let cached_ids = |now: SystemTime| {
            save_at(&cache, &root, &files, now);
            let json: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&cache).unwrap()).unwrap();
            json["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let just_after = written + std::time::Duration::from_millis(1);
        assert_eq!(cached_ids(just_after), ["alpha"]);
        // The same files saved once the new one is old enough: both are cached.
        let later = written + std::time::Duration::from_secs(1);
        assert_eq!(cached_ids(later), ["alpha", "beta"]);
    }
}
