//! Parses and validates one `guideline.yaml`, and finds every such file under a root.
//! Reads: guideline files. Errors carry the path, line and a message.

use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::guideline::{Example, Expect, Guideline};
use super::matching::{
    compile_repository_glob, index_of_hir, one_line_regex_error, parse_and_validate, Index,
    MAX_PATTERN_LEN,
};
use crate::language;
pub use crate::watched::LoadError;
use crate::watched::{find_key_line, yaml_error};

pub const GUIDELINE_FILE_NAME: &str = "guideline.yaml";

/// A guideline file larger than this is refused rather than parsed: it is surely not a
/// hand-written guideline, and parsing it would stall a reload.
pub(crate) const MAX_GUIDELINE_BYTES: u64 = 256 * 1024;

// The raw shapes below mirror guidebook/schema/guideline.schema.json. Validation that the
// schema expresses (unknown keys, enums, patterns) happens during deserialisation, so that
// serde_yaml attaches the line and column of the offending value to the error.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuideline {
    id: GuidelineId,
    #[serde(default)]
    scope: Option<RawScope>,
    #[serde(default)]
    when: Option<Vec<Event>>,
    #[serde(rename = "match")]
    matcher: RawMatch,
    content: String,
    #[serde(default)]
    examples: Option<RawExamples>,
}

/// Code that the guideline must match (`match`) and must not (`no_match`); `guidebook test`
/// and `guidebook check` run them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExamples {
    #[serde(default, rename = "match")]
    matches: Vec<RawExample>,
    #[serde(default)]
    no_match: Vec<RawExample>,
}

/// One example: its code, or its code and the path it stands for (its language scopes it).
#[derive(Deserialize)]
#[serde(untagged, expecting = "a code snippet, or {code, path}")]
enum RawExample {
    Code(String),
    WithPath(RawExampleWithPath),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExampleWithPath {
    code: String,
    #[serde(default)]
    path: Option<ExamplePath>,
}

/// A relative path with no `..`: it only stands for a file name and its language.
struct ExamplePath(String);

impl<'de> Deserialize<'de> for ExamplePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() || s.starts_with('/') || s.split('/').any(|part| part == "..") {
            return Err(de::Error::custom(format!(
                "example path `{s}` must be a relative path inside a repository, like src/Foo.kt"
            )));
        }
        Ok(ExamplePath(s))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    #[serde(default)]
    repositories: Option<Vec<RepositoryGlob>>,
    #[serde(default)]
    languages: Option<Vec<LanguageName>>,
}

/// The events a guideline can be shown on. Only file changes exist today; the list form leaves
/// room for more without changing the file format.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Event {
    FileChanged,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    any: Vec<RawCondition>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCondition {
    regex: RawRegex,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegex {
    pattern: Pattern,
}

struct GuidelineId(String);

impl<'de> Deserialize<'de> for GuidelineId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let ok = !s.is_empty()
            && s.len() <= 128
            && s.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(GuidelineId(s))
        } else {
            Err(de::Error::custom(format!(
                "invalid id `{s}`: use lowercase letters, digits and `-`, starting with a letter or digit (at most 128 characters)"
            )))
        }
    }
}

struct RepositoryGlob(String);

impl<'de> Deserialize<'de> for RepositoryGlob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        compile_repository_glob(&s)
            .map_err(|e| de::Error::custom(format!("invalid repository glob `{s}`: {e}")))?;
        Ok(RepositoryGlob(s))
    }
}

struct LanguageName(&'static str);

impl<'de> Deserialize<'de> for LanguageName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match language::known(&s) {
            Some(l) => Ok(LanguageName(l)),
            None => Err(de::Error::custom(format!(
                "unknown language `{s}`; known languages: {}",
                language::LANGUAGES.join(", ")
            ))),
        }
    }
}

struct Pattern(String, Index);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(de::Error::custom("empty regex pattern"));
        }
        if s.len() > MAX_PATTERN_LEN {
            return Err(de::Error::custom(format!(
                "regex pattern is {} bytes long; the limit is {MAX_PATTERN_LEN}",
                s.len()
            )));
        }
        let hir = parse_and_validate(&s).map_err(|e| {
            de::Error::custom(format!("invalid regex `{s}`: {}", one_line_regex_error(&e)))
        })?;
        let index = index_of_hir(&hir);
        Ok(Pattern(s, index))
    }
}

/// Parses and validates one guideline file's text.
pub fn parse_guideline(path: &Path, text: &str) -> Result<Guideline, LoadError> {
    parse_guideline_with(path, text, Yaml::FastPathFirst)
}

/// Which YAML parser reads a guideline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yaml {
    /// `fast_yaml` when the file is within its subset and deserialises; serde_yaml otherwise
    /// (so every error is serde_yaml's, with its line and column).
    FastPathFirst,
    /// serde_yaml only: the reference the differential tests compare with.
    #[cfg(test)]
    SerdeYaml,
}

pub(crate) fn parse_guideline_with(
    path: &Path,
    text: &str,
    yaml: Yaml,
) -> Result<Guideline, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError::new(path, None, "the file is empty"));
    }
    let fast = match yaml {
        Yaml::FastPathFirst => {
            super::fast_yaml::parse(text).and_then(|node| RawGuideline::deserialize(&node).ok())
        }
        #[cfg(test)]
        Yaml::SerdeYaml => None,
    };
    let raw = match fast {
        Some(raw) => raw,
        None => serde_yaml::from_str(text).map_err(|e| yaml_error(path, text, &e))?,
    };
    let id_line = find_key_line(text, "id");
    if raw.matcher.any.is_empty() {
        return Err(LoadError::new(
            path,
            find_key_line(text, "match"),
            "`match.any` must list at least one condition",
        ));
    }
    if raw.content.trim().is_empty() {
        return Err(LoadError::new(
            path,
            find_key_line(text, "content"),
            "`content` is empty",
        ));
    }
    if let Some(when) = &raw.when {
        if when.is_empty() {
            return Err(LoadError::new(
                path,
                find_key_line(text, "when"),
                "`when` is an empty list; leave it out to mean [file_changed]",
            ));
        }
        debug_assert!(when.iter().all(|e| *e == Event::FileChanged));
    }
    let scope = raw.scope.unwrap_or(RawScope {
        repositories: None,
        languages: None,
    });
    let examples = raw.examples.map(|e| examples(text, e)).unwrap_or_default();
    let (patterns, indexes): (Vec<String>, Vec<Index>) = raw
        .matcher
        .any
        .into_iter()
        .map(|c| (c.regex.pattern.0, c.regex.pattern.1))
        .unzip();
    Ok(Guideline {
        examples,
        id: raw.id.0,
        repositories: scope
            .repositories
            .map(|r| r.into_iter().map(|g| g.0).collect()),
        languages: scope
            .languages
            .map(|l| l.into_iter().map(|l| l.0).collect()),
        patterns,
        indexes: indexes.into(),
        content: raw.content,
        source: path.to_path_buf(),
        id_line,
    })
}

/// The examples of a guideline, each with the line of its list item in `text`.
fn examples(text: &str, raw: RawExamples) -> Vec<Example> {
    let lists = [
        (Expect::Match, raw.matches, "match"),
        (Expect::NoMatch, raw.no_match, "no_match"),
    ];
    let mut out = Vec::new();
    for (expect, items, key) in lists {
        let lines = item_lines(text, "examples", key);
        for (i, item) in items.into_iter().enumerate() {
            let (code, path) = match item {
                RawExample::Code(code) => (code, None),
                RawExample::WithPath(e) => (e.code, e.path.map(|p| p.0)),
            };
            out.push(Example {
                expect,
                index: i + 1,
                code,
                path,
                line: lines.get(i).copied(),
            });
        }
    }
    out
}

/// The 1-based lines of the list items under the top-level `section:`'s `key:`, in order. A
/// guideline is hand-written YAML in block style; flow-style lists give no lines.
fn item_lines(text: &str, section: &str, key: &str) -> Vec<usize> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = find_key_line(text, section) else {
        return Vec::new();
    };
    // The key inside the section: indented, before the section ends.
    let Some(key_line) = lines
        .iter()
        .enumerate()
        .skip(start)
        .take_while(|(_, l)| l.trim().is_empty() || indent(l) > 0)
        .find(|(_, l)| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|(n, _)| n)
    else {
        return Vec::new();
    };
    let key_indent = indent(lines[key_line]);
    let mut items = Vec::new();
    let mut item_indent = None;
    for (n, line) in lines.iter().enumerate().skip(key_line + 1) {
        if line.trim().is_empty() {
            continue;
        }
        let here = indent(line);
        if here < key_indent || (here == key_indent && !line.trim_start().starts_with("- ")) {
            break;
        }
        let is_item = line.trim_start().starts_with('-');
        match item_indent {
            None if is_item => {
                item_indent = Some(here);
                items.push(n + 1);
            }
            Some(i) if is_item && here == i => items.push(n + 1),
            _ => {}
        }
    }
    items
}

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
    use super::*;

    fn parse(text: &str) -> Result<Guideline, LoadError> {
        parse_guideline(Path::new("/g/x/guideline.yaml"), text)
    }

    const GOOD: &str = "id: no-println\nscope:\n  repositories: ['acme/*']\n  languages: [kotlin, java]\nwhen: [file_changed]\nmatch:\n  any:\n    - regex:\n        pattern: 'println\\('\ncontent: |\n  Use the logger.\n";

    #[test]
    fn parses_a_full_guideline() {
        let g = parse(GOOD).unwrap();
        assert_eq!(g.id, "no-println");
        assert_eq!(g.repositories, Some(vec!["acme/*".to_string()]));
        assert_eq!(g.languages, Some(vec!["kotlin", "java"]));
        assert_eq!(g.patterns, vec!["println\\(".to_string()]);
        assert_eq!(g.content, "Use the logger.\n");
        assert_eq!(g.id_line, Some(1));
        // Indexed from the parse that validated it, as the engine would index the text.
        let index = super::super::matching::index_of("println\\(");
        assert_eq!(g.indexes.get(), Some(&vec![index.clone()]));
        assert_eq!(index, super::Index::Prefixes(vec![b"println(".to_vec()]));
    }

    #[test]
    fn scope_and_when_are_optional() {
        let g = parse("id: a\nmatch:\n  any:\n    - regex: {pattern: x}\ncontent: c\n").unwrap();
        assert_eq!(g.repositories, None);
        assert_eq!(g.languages, None);
    }

    fn err(text: &str) -> LoadError {
        parse(text).unwrap_err()
    }

    #[test]
    fn rejects_with_line_numbers() {
        let e = err(&GOOD.replace("pattern: 'println\\('", "pattern: 'println('"));
        assert_eq!(e.line, Some(9), "{e}");
        assert!(
            e.message
                .contains("invalid regex `println(`: unclosed group"),
            "{e}"
        );
        assert!(!e.message.contains('\n'), "one line: {e}");

        let e = err(&GOOD.replace("[kotlin, java]", "[kotlin, kotln]"));
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("unknown language `kotln`"), "{e}");

        let e = err(&GOOD.replace("[file_changed]", "[file_deleted]"));
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("file_deleted"), "{e}");

        let e = err(&format!("{GOOD}colour: red\n"));
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        assert_eq!(e.line, Some(12), "{e}");

        let e = err(&GOOD.replace("  languages:", "  langs:"));
        assert!(e.message.contains("unknown field `langs`"), "{e}");

        let e = err(&GOOD.replace("id: no-println", "id: No Println"));
        assert!(e.message.contains("invalid id"), "{e}");

        let e = err("id: a\nmatch:\n  any: []\ncontent: c\n");
        assert!(e.message.contains("at least one"), "{e}");
        assert_eq!(e.line, Some(2));

        let e = err("id: a\nmatch:\n  any:\n    - regex: {pattern: x}\n");
        assert!(e.message.contains("content"), "{e}");

        let e = err("id: [unclosed\n");
        assert!(e.line.is_some(), "{e}");
    }

    /// A tab in the indentation, by either parser: the fast path leaves every file with a tab
    /// to serde_yaml, whose own words name no tab and whose line alone did not say where.
    #[test]
    fn a_tab_in_the_indentation_is_named_with_its_line_and_column() {
        let text = "id: a\nmatch:\n  any:\n  \t- regex: {pattern: x}\ncontent: c\n";
        for yaml in [Yaml::FastPathFirst, Yaml::SerdeYaml] {
            let e = parse_guideline_with(Path::new("/g/a/guideline.yaml"), text, yaml).unwrap_err();
            assert_eq!((e.line, e.column), (Some(4), Some(3)), "{yaml:?}: {e}");
            assert!(
                e.to_string()
                    .starts_with("/g/a/guideline.yaml:4:3: a tab in the indentation"),
                "{yaml:?}: {e}"
            );
            assert!(e.message.contains("YAML forbids tabs"), "{yaml:?}: {e}");
        }
        // The report of the issue: a tab as the whole indentation of line 3.
        let e = err("id: a\nmatch:\n\tany: []\n");
        assert_eq!((e.line, e.column), (Some(3), Some(1)), "{e}");
        assert!(e.message.starts_with("a tab"), "{e}");
        // A syntax error without a tab keeps serde_yaml's words, with its column.
        let e = err("id: [unclosed\n");
        assert!(e.column.is_some() && !e.message.contains("tab"), "{e}");
    }

    #[test]
    fn refuses_patterns_that_compile_too_large() {
        let e = err(&GOOD.replace("'println\\('", "'(\\w{100}){100}'"));
        assert!(e.message.contains("invalid regex"), "{e}");
        assert!(e.message.contains("exceeds size limit"), "{e}");
    }

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

    /// The JSON Schema that editors use and the validator the sidecar uses must agree: on the
    /// sample guidebook (all valid) and on a set of broken guidelines (all invalid).
    #[test]
    fn the_json_schema_and_the_validator_agree() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../guidebook/schema/guideline.schema.json"))
                .unwrap();
        let languages: Vec<&str> = schema["$defs"]["language"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(languages, language::LANGUAGES);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let as_json = |yaml: &str| -> serde_json::Value { serde_yaml::from_str(yaml).unwrap() };

        for (path, text) in crate::sample::SAMPLE_FILES {
            if path.ends_with(GUIDELINE_FILE_NAME) {
                assert!(parse(text).is_ok(), "{path}: {:?}", parse(text).err());
                assert!(validator.is_valid(&as_json(text)), "{path}");
            }
        }
        let broken = [
            GOOD.replace("no-println", "No-Println"),
            GOOD.replace("no-println", &"a".repeat(129)),
            GOOD.replace("[kotlin, java]", "[kotlin, cobol]"),
            GOOD.replace("[file_changed]", "[file_saved]"),
            format!("{GOOD}extra: 1\n"),
            GOOD.replace("  languages:", "  langs:"),
            "id: a\nmatch:\n  any: []\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x, flags: i}\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x}\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x}\ncontent: ''\n".to_string(),
            format!("{GOOD}examples:\n  matches: [x]\n"),
            format!("{GOOD}examples:\n  match:\n    - {{code: x, file: a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - {{code: x, path: /abs/a.kt}}\n"),
            format!("{GOOD}examples:\n  no_match:\n    - {{code: x, path: src/../../a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - {{path: a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - 3\n"),
        ];
        let with_examples = format!(
            "{GOOD}examples:\n  match:\n    - println(x)\n    - {{code: y, path: src/A.java}}\n  no_match: []\n"
        );
        assert!(
            parse(&with_examples).is_ok(),
            "{:?}",
            parse(&with_examples).err()
        );
        assert!(validator.is_valid(&as_json(&with_examples)));
        for text in &broken {
            assert!(parse(text).is_err(), "the validator accepted:\n{text}");
            assert!(
                !validator.is_valid(&as_json(text)),
                "the schema accepted:\n{text}"
            );
        }
    }
}
