//! The lines an edit wrote, per file: `search`'s `written`, and `contents` where Codex's hook
//! ran before the file reached disk. Reads: the edited files, through the caller's reader (at
//! most once each; [`read_capped`] reads at most [`MAX_FILE_BYTES`]). Writes: nothing.
//!
//! Each host says it differently:
//! - Claude Code and Gemini CLI: the tool's own report ([`EditReport`], read by `event`): the
//!   `+` lines of its diff, the whole file for a file created, or (with no diff) the
//!   replacement's new text found in the file after the edit.
//! - Codex `apply_patch` (also a patch fed to `apply_patch` through the shell): an added file is
//!   all written; for an updated one each chunk's new side (its context and `+` lines) is
//!   located in the file on disk, and its `+` lines are the written ones. The placement is
//!   accepted only when it is the one Codex's own algorithm gives (the chunks' old sides put
//!   back where they were found, then the patch applied again as Codex applies it, give the file
//!   on disk and the same places) and no other place would do. If the file on disk is still the
//!   patch's pre-image (the old sides apply, the new sides are nowhere), the post-image is built
//!   as Codex builds it and sent as the file's `contents`, with the written lines in it.
//!
//! A file whose lines cannot be told for sure is left out: the sidecar then takes the lines
//! that differ from the file's last commit. A `+` line that only restates a `-` line of the same
//! run of changes (a line removed and put back unchanged) is not written.

use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;

use crate::event::{EditReport, HookEvent, LineSet, ToolInput};
use crate::patch::{
    argv_patch, resolved_ops, shell_patches_in, summary_targets, Chunk, ResolvedOp, Side,
};
use crate::paths::resolve;

/// The most of one file the shim reads (the sidecar reads no more either): a larger file is
/// left out.
pub const MAX_FILE_BYTES: u64 = 2 << 20;
/// The most post-edit content one `search` carries in `contents`, JSON-escaped (the sidecar
/// takes request bodies of 1 MiB by default); a file beyond it is left out altogether.
pub const MAX_CONTENTS_BYTES: usize = 512 << 10;
/// The most line ranges one `search` carries in `written`; files beyond it are left out.
pub const MAX_RANGES: usize = 20_000;
/// How many places a chunk's new side may occur at before it counts as too common to place.
const MAX_CANDIDATES: usize = 16;

/// What one edit wrote, keyed by the paths of `search`'s `filepaths`, in their order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// `[first, last]` line ranges (1-based, inclusive, ascending) of each file whose written
    /// lines are known, in the file as it is after the edit.
    pub lines: Vec<(String, Vec<[u64; 2]>)>,
    /// The content after the edit of each file that is not on disk yet.
    pub contents: Vec<(String, String)>,
}

impl Written {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.contents.is_empty()
    }
}

/// Reads a file's text for the written lines: `None` when it cannot be read, is not a regular
/// file, is larger than [`MAX_FILE_BYTES`] or is not UTF-8.
pub type ReadFile<'a> = dyn FnMut(&str) -> Option<String> + 'a;

/// The files as [`written`] shares them, each read once.
type Texts<'a> = dyn FnMut(&str) -> Option<Rc<str>> + 'a;

/// The file at `path`, if it is a regular file of at most [`MAX_FILE_BYTES`] in UTF-8; read
/// once, capped, opened without waiting (a FIFO put in its place never blocks the hook).
pub fn read_capped(path: &str) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// A file as an edit is about to find it (for the check before the edit, `enforce`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// Nothing at the path: the edit would create the file.
    Missing,
    /// Its text, read as [`read_capped`] reads it.
    Text(String),
    /// Something is there that [`read_capped`] does not read (too large, not a regular file,
    /// not UTF-8, no permission).
    Unreadable,
}

/// The file at `path` as an edit is about to find it: [`read_capped`]'s text, or whether
/// nothing is there (a dangling link counts as something).
pub fn read_before(path: &str) -> Before {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Before::Missing,
        _ => read_capped(path).map_or(Before::Unreadable, Before::Text),
    }
}

/// `O_NONBLOCK` (no libc here): opening a FIFO for reading then returns at once.
#[cfg(any(target_os = "linux", target_os = "android"))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const O_NONBLOCK: i32 = 0x0004;

/// What `event`'s edit wrote in each of `filepaths` (the paths `plan` found, absolute), as far
/// as it can be told; files are read through `read`.
pub fn written(event: &HookEvent, filepaths: &[String], read: &mut ReadFile) -> Written {
    // Each file is read at most once, however many patches of the call name it, and shared,
    // not copied.
    let mut texts: HashMap<String, Option<Rc<str>>> = HashMap::new();
    let read = &mut |path: &str| -> Option<Rc<str>> {
        texts
            .entry(path.to_owned())
            .or_insert_with(|| read(path).map(Rc::from))
            .clone()
    };
    let mut found = Found::default();
    let cwd = event.cwd.as_deref();
    let Some(tool) = &event.tool else {
        return Written::default();
    };
    match (&tool.input, &tool.edit) {
        (ToolInput::EditFile(Some(file)), Some(report)) => {
            if let Some(path) = resolve(cwd, file) {
                let lines = report_lines(report, &path, read);
                found.put(path, lines.map(FileLines::Lines));
            }
        }
        (ToolInput::Patch(patches), _) => {
            let applied = Applied::from_output(tool.output.as_deref(), cwd);
            for patch in patches {
                patch_lines(patch, cwd, &applied, read, &mut found);
            }
        }
        (
            ToolInput::Shell {
                command: Some(command),
                ..
            },
            _,
        ) => {
            let base = event.command_dir();
            let applied = Applied::from_output(tool.output.as_deref(), base.as_deref());
            let argv_patch = match command {
                crate::event::Command::Argv(argv) => argv_patch(argv),
                crate::event::Command::Script(_) => None,
            };
            if let Some(patch) = argv_patch {
                patch_lines(patch, base.as_deref(), &applied, read, &mut found);
            } else {
                let scripts: Vec<&str> = match command {
                    crate::event::Command::Script(script) => vec![script],
                    crate::event::Command::Argv(argv) => argv.iter().map(String::as_str).collect(),
                };
                for script in scripts {
                    for (patch, dir) in shell_patches_in(script, base.as_deref()) {
                        patch_lines(patch, dir.as_deref(), &applied, read, &mut found);
                    }
                }
            }
        }
        _ => {}
    }
    found.into_written(filepaths)
}

/// What is known of one file's written lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileLines {
    Lines(Vec<[u64; 2]>),
    /// The file is not on disk yet: its content after the edit, and the lines written in it.
    Content(String, Vec<[u64; 2]>),
}

/// Per path, what its edit wrote; `None` when it cannot be told (or the path was touched
/// twice in one call, which is not worth untangling).
#[derive(Default)]
struct Found(Vec<(String, Option<FileLines>)>);

impl Found {
    fn put(&mut self, path: String, lines: Option<FileLines>) {
        match self.0.iter_mut().find(|(p, _)| *p == path) {
            Some(entry) => entry.1 = None,
            None => self.0.push((path, lines)),
        }
    }

    fn into_written(self, filepaths: &[String]) -> Written {
        let mut written = Written::default();
        let (mut ranges, mut content_bytes) = (0, 0);
        for path in filepaths {
            let Some((_, Some(lines))) = self.0.iter().find(|(p, _)| p == path) else {
                continue;
            };
            let (lines, content) = match lines {
                FileLines::Lines(lines) => (lines, None),
                FileLines::Content(content, lines) => (lines, Some(content)),
            };
            if ranges + lines.len() > MAX_RANGES {
                continue;
            }
            if let Some(content) = content {
                // As sent: JSON escapes can make a text several times longer.
                let size = serde_json::Value::from(content.as_str()).to_string().len();
                if content_bytes + size > MAX_CONTENTS_BYTES {
                    continue;
                }
                content_bytes += size;
                written.contents.push((path.clone(), content.clone()));
            }
            ranges += lines.len();
            written.lines.push((path.clone(), lines.clone()));
        }
        written
    }
}

/// The written lines of a Claude Code or Gemini CLI edit of `path`, from its report.
fn report_lines(report: &EditReport, path: &str, read: &mut Texts) -> Option<Vec<[u64; 2]>> {
    match report {
        EditReport::Lines(lines) => Some(lines.clone()),
        EditReport::Nothing => Some(Vec::new()),
        EditReport::Unknown => None,
        EditReport::WholeFile { content } => {
            let count = match content {
                Some(content) => line_count(content),
                None => line_count(&read(path)?),
            };
            Some(if count == 0 {
                Vec::new()
            } else {
                vec![[1, count]]
            })
        }
        EditReport::Replace {
            old,
            new,
            all,
            original,
        } => replacement_lines(&read(path)?, old, new, *all, original.as_deref()),
    }
}

/// How many lines `text` has: its newlines, and one more for a last line without one.
fn line_count(text: &str) -> u64 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count() as u64;
    newlines + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The lines `new` wrote where it replaced `old` in `after` (the file after the edit): the
/// lines that hold what differs between the two strings (their common start and end left
/// out), or, where `new` only lost text, the line it was lost from unless whole lines went.
/// One replacement must leave exactly one `new` in the file; with `all`, `original` (the file
/// before) must hold none, so that every `new` in the file is the edit's. Otherwise `None`.
fn replacement_lines(
    after: &str,
    old: &str,
    new: &str,
    all: bool,
    original: Option<&str>,
) -> Option<Vec<[u64; 2]>> {
    if new.is_empty() {
        return None;
    }
    let places: Vec<usize> = after.match_indices(new).map(|(at, _)| at).collect();
    let sure = if all {
        !places.is_empty() && original.is_some_and(|o| !o.contains(new))
    } else {
        places.len() == 1
    };
    if !sure {
        return None;
    }
    let (old_b, new_b) = (old.as_bytes(), new.as_bytes());
    let prefix = old_b.iter().zip(new_b).take_while(|(a, b)| a == b).count();
    let suffix = old_b[prefix..]
        .iter()
        .rev()
        .zip(new_b[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let text = after.as_bytes();
    let line_of = |at: usize| 1 + text[..at].iter().filter(|&&b| b == b'\n').count() as u64;
    let mut lines = LineSet::default();
    for at in places {
        let (start, end) = (at + prefix, at + new_b.len() - suffix);
        if start < end {
            for line in line_of(start)..=line_of(end - 1) {
                lines.add(line);
            }
        } else {
            let lost = &old_b[prefix..old_b.len() - suffix];
            let at_line_start = start == 0 || text[start - 1] == b'\n';
            // Whole lines went, or a last line without a newline went entirely.
            let whole_lines = lost.ends_with(b"\n") && at_line_start;
            let last_line_gone = start == text.len() && at_line_start;
            if !lost.is_empty() && !whole_lines && !last_line_gone {
                lines.add(line_of(start));
            }
        }
    }
    Some(lines.ranges())
}

/// Which files Codex says its `apply_patch` changed (its `Success. Updated the following
/// files:` summary), resolved: only for these is a post-image built when the file on disk is
/// still the pre-image, so that a patch that failed is never taken for one not yet written.
struct Applied(Vec<String>);

impl Applied {
    fn from_output(output: Option<&str>, base: Option<&str>) -> Applied {
        Applied(
            output
                .map(summary_targets)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|path| resolve(base, path))
                .collect(),
        )
    }

    fn lists(&self, path: &str) -> bool {
        self.0.iter().any(|p| p == path)
    }
}

/// The written lines of every file in one patch whose paths are relative to `base`.
fn patch_lines(
    patch: &str,
    base: Option<&str>,
    applied: &Applied,
    read: &mut Texts,
    found: &mut Found,
) {
    for op in resolved_ops(patch, base) {
        match op {
            ResolvedOp::Add { path, lines } => {
                found.put(path, Some(FileLines::Lines(all_lines(lines.len()))));
            }
            ResolvedOp::Delete { path } => found.put(path, None),
            ResolvedOp::Update {
                source,
                target,
                chunks,
            } => {
                let lines = update_lines(&chunks, &target, &source, applied, read);
                if target != source {
                    found.put(source, None);
                }
                found.put(target, lines);
            }
        }
    }
}

/// `[[1, n]]`, or nothing for an empty file: every line of a file of `n` lines.
pub(crate) fn all_lines(n: usize) -> Vec<[u64; 2]> {
    if n == 0 {
        Vec::new()
    } else {
        vec![[1, n as u64]]
    }
}

/// The written lines of one `*** Update File` whose result is `target` (moved from `source`, or
/// the same file): located in the file on disk, or, when the disk still holds the pre-image of
/// a patch Codex says it applied, in the post-image built from it.
fn update_lines(
    chunks: &[Chunk],
    target: &str,
    source: &str,
    applied: &Applied,
    read: &mut Texts,
) -> Option<FileLines> {
    let on_disk = read(target);
    if let Some(text) = &on_disk {
        let post = codex_lines(text);
        match locate(&post, chunks) {
            Located::At(lines) => return Some(FileLines::Lines(lines)),
            Located::Unclear => return None,
            Located::Absent => {}
        }
    }
    if !applied.lists(target) {
        return None;
    }
    let before = if target == source {
        on_disk?
    } else {
        read(source)?
    };
    let applied = apply(&codex_lines(&before), chunks)?;
    let lines = applied.written();
    Some(FileLines::Content(applied.content(), lines))
}

/// The file an `*** Update File`'s chunks make of `before` as Codex 0.169 writes it, and the
/// lines they write in it; `None` where Codex would fail (or this does not model it). For the
/// check made before the patch is applied (`enforce`).
pub(crate) fn codex_update(before: &str, chunks: &[Chunk]) -> Option<(String, Vec<[u64; 2]>)> {
    let patched = apply(&codex_lines(before), chunks)?;
    Some((patched.content(), patched.written()))
}

/// A file's lines as Codex's `apply_patch` sees them on Unix: split at each `\n`, without the
/// empty piece after a final newline.
fn codex_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// How strictly two lines must agree, in the order Codex's `seek_sequence` tries.
#[derive(Clone, Copy)]
enum Strictness {
    Exact,
    TrimEnd,
    Trim,
    Normalised,
}

const STRICTNESS: [Strictness; 4] = [
    Strictness::Exact,
    Strictness::TrimEnd,
    Strictness::Trim,
    Strictness::Normalised,
];

fn agree(a: &str, b: &str, how: Strictness) -> bool {
    match how {
        Strictness::Exact => a == b,
        Strictness::TrimEnd => a.trim_end() == b.trim_end(),
        Strictness::Trim => a.trim() == b.trim(),
        // Normalising changes only characters beyond ASCII: two ASCII lines agree exactly when
        // they are equal once trimmed, most of a file's lines and most of a hook's time.
        Strictness::Normalised => agree_trimmed(a.trim(), b.trim()),
    }
}

/// [`Strictness::Normalised`] agreement of two lines already trimmed.
fn agree_trimmed(a: &str, b: &str) -> bool {
    a == b || !(a.is_ascii() && b.is_ascii()) && normalise(a).eq(normalise(b))
}

/// Codex's last resort: typographic dashes, quotes and spaces as their ASCII kin, trimmed.
fn normalise(s: &str) -> impl Iterator<Item = char> + '_ {
    s.trim().chars().map(|c| match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    })
}

fn agrees_at(lines: &[&str], at: usize, pattern: &[&str], how: Strictness) -> bool {
    pattern
        .iter()
        .enumerate()
        .all(|(i, p)| agree(lines[at + i], p, how))
}

/// Codex's `seek_sequence`: the first place at or after `start` where `pattern` occurs, exactly,
/// else ignoring trailing whitespace, else ignoring surrounding whitespace, else normalised;
/// with `eof`, only the place that ends the file.
fn seek(lines: &[&str], pattern: &[&str], start: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let from = if eof { last } else { start };
    // Each level's agreement implies the loosest one's: the places whose first line agrees
    // normalised are the only candidates, found in one pass (mostly none) instead of four.
    let candidates: Vec<usize> = (from..=last)
        .filter(|&at| agree(lines[at], pattern[0], Strictness::Normalised))
        .collect();
    STRICTNESS.iter().find_map(|&how| {
        candidates
            .iter()
            .copied()
            .find(|&at| agrees_at(lines, at, pattern, how))
    })
}

/// One chunk applied: where its new lines start in the new file, and which of them it wrote.
struct Segment {
    start: usize,
    written: Vec<bool>,
}

/// The chunks applied to a file as Codex 0.169 applies them.
struct Patched<'a> {
    /// The new file's lines before Codex's final newline handling.
    lines: Vec<&'a str>,
    segments: Vec<Segment>,
}

impl Patched<'_> {
    /// The new file as Codex writes it: the lines joined by newlines, ending with one.
    fn content(&self) -> String {
        let mut lines = self.lines.clone();
        if lines.last() != Some(&"") {
            lines.push("");
        }
        lines.join("\n")
    }

    /// The new file's lines as they read back from disk.
    fn final_len(&self) -> usize {
        self.lines.len() - usize::from(self.lines.last() == Some(&""))
    }

    fn written(&self) -> Vec<[u64; 2]> {
        let len = self.final_len();
        let mut lines = LineSet::default();
        for segment in &self.segments {
            for (i, _) in segment.written.iter().enumerate().filter(|(_, w)| **w) {
                let line = segment.start + i;
                if line < len {
                    lines.add(line as u64 + 1);
                }
            }
        }
        lines.ranges()
    }
}

/// Where a chunk goes in the old file (its first line, how many old lines it replaces) and its
/// new lines, each with whether the chunk wrote it.
type Replacement<'a> = (usize, usize, Vec<(&'a str, bool)>);

/// Codex's `compute_replacements` and `apply_replacements`: each chunk's `@@` context and old
/// side sought from where the previous chunk ended (an old side that ends with an empty line
/// sought again without it), a chunk with no old side added at the end; `None` where Codex
/// fails, or where its replacements would overlap (which this does not model).
fn apply<'a>(original: &[&'a str], chunks: &[Chunk<'a>]) -> Option<Patched<'a>> {
    let mut replacements: Vec<Replacement<'a>> = Vec::new();
    let mut at = 0;
    for chunk in chunks {
        if let Some(context) = chunk.context {
            at = seek(original, &[context], at, false)? + 1;
        }
        let mut old = chunk.old_side();
        let mut new = new_side_written(chunk);
        if old.is_empty() {
            let end = original.len() - usize::from(original.last() == Some(&""));
            replacements.push((end, 0, new));
            continue;
        }
        let mut found = seek(original, &old, at, chunk.end_of_file);
        if found.is_none() && old.last() == Some(&"") {
            old.pop();
            if new.last().is_some_and(|(text, _)| text.is_empty()) {
                new.pop();
            }
            found = seek(original, &old, at, chunk.end_of_file);
        }
        let start = found?;
        at = start + old.len();
        replacements.push((start, old.len(), new));
    }
    replacements.sort_by_key(|(start, _, _)| *start);
    let mut lines = Vec::with_capacity(original.len());
    let mut segments = Vec::new();
    let mut copied = 0;
    for (start, old_len, new) in replacements {
        if start < copied {
            return None;
        }
        lines.extend_from_slice(&original[copied..start]);
        segments.push(Segment {
            start: lines.len(),
            written: new.iter().map(|(_, w)| *w).collect(),
        });
        lines.extend(new.iter().map(|(text, _)| *text));
        copied = start + old_len;
    }
    lines.extend_from_slice(&original[copied.min(original.len())..]);
    Some(Patched { lines, segments })
}

/// A chunk's new side, each line with whether the chunk wrote it: its `+` lines, except those
/// that only restate a `-` line of the same run of changes (matched in order, as a longest
/// common subsequence of the run's `-` and `+` lines).
fn new_side_written<'a>(chunk: &Chunk<'a>) -> Vec<(&'a str, bool)> {
    fn close_run<'a>(side: &mut [(&'a str, bool)], old: &mut Vec<&'a str>, new: &mut Vec<usize>) {
        if !old.is_empty() && !new.is_empty() {
            let texts: Vec<&str> = new.iter().map(|&i| side[i].0).collect();
            for k in unchanged(old, &texts) {
                side[new[k]].1 = false;
            }
        }
        old.clear();
        new.clear();
    }
    let mut side: Vec<(&'a str, bool)> = Vec::new();
    let mut run_old: Vec<&'a str> = Vec::new();
    let mut run_new: Vec<usize> = Vec::new();
    for &(kind, text) in &chunk.lines {
        match kind {
            Side::Both => {
                close_run(&mut side, &mut run_old, &mut run_new);
                side.push((text, false));
            }
            Side::Old => run_old.push(text),
            Side::New => {
                run_new.push(side.len());
                side.push((text, true));
            }
        }
    }
    close_run(&mut side, &mut run_old, &mut run_new);
    side
}

/// The indices in `new` of a longest common subsequence of `old` and `new`; empty when the
/// run is too large to compare (its `+` lines then all count as written).
pub(crate) fn unchanged(old: &[&str], new: &[&str]) -> Vec<usize> {
    if old.len().saturating_mul(new.len()) > 1_000_000 {
        return Vec::new();
    }
    let (n, m) = (old.len(), new.len());
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let cell = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[cell(i, j)] = if old[i] == new[j] {
                table[cell(i + 1, j + 1)] + 1
            } else {
                table[cell(i + 1, j)].max(table[cell(i, j + 1)])
            };
        }
    }
    let (mut i, mut j, mut same) = (0, 0, Vec::new());
    while i < n && j < m {
        if old[i] == new[j] {
            same.push(j);
            i += 1;
            j += 1;
        } else if table[cell(i + 1, j)] >= table[cell(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    same
}

/// Where a patch's chunks are in a file that may be its post-image.
#[derive(Debug, PartialEq, Eq)]
enum Located {
    /// Placed for sure: the written lines.
    At(Vec<[u64; 2]>),
    /// Some chunk's new side is nowhere in the file: it is not the post-image.
    Absent,
    /// The new sides are there, but not placed for sure.
    Unclear,
}

/// Places each chunk's new side in `post` (the file after the patch, as Codex's lines), then
/// checks the placement: the old sides put back where the new ones were give a pre-image which
/// Codex's algorithm ([`apply`]) turns back into `post`, with every chunk where it was placed.
/// A chunk whose new side fits more than one place that way is [`Located::Unclear`].
fn locate(post: &[&str], chunks: &[Chunk]) -> Located {
    let trimmed_post: Vec<&str> = post.iter().map(|l| l.trim()).collect();
    let mut placed: Vec<(usize, usize, usize)> = Vec::new(); // (chunk, start, new len)
    let mut appended: Vec<usize> = Vec::new();
    let mut at = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        if let Some(context) = chunk.context {
            match seek(post, &[context], at, false) {
                Some(found) => at = found + 1,
                None => return Located::Absent,
            }
        }
        let old = chunk.old_side();
        let new: Vec<&str> = chunk.new_side().into_iter().map(|(text, _)| text).collect();
        if old.is_empty() {
            appended.push(index);
            continue;
        }
        if new.is_empty() || new.len() > post.len() {
            return if new.is_empty() {
                Located::Unclear
            } else {
                Located::Absent
            };
        }
        let last = post.len() - new.len();
        let from = if chunk.end_of_file { last } else { at };
        // One pass over the file, its lines trimmed once: where the new side's first line
        // agrees (loosely), then whether the whole new side does.
        let first = new[0].trim();
        let mut before_from = false;
        let mut candidates: Vec<usize> = Vec::new();
        for (q, line) in trimmed_post.iter().enumerate().take(last + 1) {
            if !agree_trimmed(line, first) || !agrees_at(post, q, &new, Strictness::Normalised) {
                continue;
            }
            if q < from {
                before_from = true;
            } else {
                candidates.push(q);
                if candidates.len() > MAX_CANDIDATES {
                    break;
                }
            }
        }
        if candidates.is_empty() {
            return if before_from {
                Located::Unclear
            } else {
                Located::Absent
            };
        }
        if candidates.len() > MAX_CANDIDATES {
            return Located::Unclear;
        }
        // Where Codex would have found the old side, had it been at `q` before the patch.
        let fits = |q: usize| {
            let mut before: Vec<&str> = Vec::with_capacity(post.len() + old.len());
            before.extend_from_slice(&post[..q]);
            before.extend_from_slice(&old);
            before.extend_from_slice(&post[q + new.len()..]);
            seek(&before, &old, at, chunk.end_of_file) == Some(q)
        };
        let fitting: Vec<usize> = candidates
            .into_iter()
            .filter(|&q| fits(q))
            .take(2)
            .collect();
        let [q] = fitting[..] else {
            return Located::Unclear;
        };
        placed.push((index, q, new.len()));
        at = q + new.len();
    }
    // Chunks without an old side were added at the end, in order.
    let block: Vec<&str> = appended
        .iter()
        .flat_map(|&i| chunks[i].new_side().into_iter().map(|(text, _)| text))
        .collect();
    let mut ends = Vec::new();
    for blank_after in [false, true] {
        if blank_after && (block.is_empty() || post.last() != Some(&"")) {
            continue;
        }
        let end = post.len() - usize::from(blank_after);
        if block.len() <= end && post[end - block.len()..end] == block[..] {
            ends.push(end - block.len());
        }
    }
    if ends.is_empty() {
        return Located::Absent;
    }
    let mut verified = Vec::new();
    for block_start in ends {
        if let Some(lines) = verify(post, chunks, &placed, &appended, block_start) {
            verified.push(lines);
        }
    }
    match verified.len() {
        1 => Located::At(verified.remove(0)),
        _ => Located::Unclear,
    }
}

/// The written lines if the placement holds: the pre-image it implies, patched as Codex
/// patches it, gives `post` back with every chunk where it was placed.
fn verify(
    post: &[&str],
    chunks: &[Chunk],
    placed: &[(usize, usize, usize)],
    appended: &[usize],
    block_start: usize,
) -> Option<Vec<[u64; 2]>> {
    let block_len: usize = appended.iter().map(|&i| chunks[i].new_side().len()).sum();
    let mut before: Vec<&str> = Vec::with_capacity(post.len());
    let mut copied = 0;
    for &(index, start, len) in placed {
        if start < copied {
            return None;
        }
        before.extend_from_slice(&post[copied..start]);
        before.extend(chunks[index].old_side());
        copied = start + len;
    }
    if copied > block_start && block_len > 0 {
        return None;
    }
    if block_len > 0 {
        before.extend_from_slice(&post[copied..block_start]);
        before.extend_from_slice(&post[block_start + block_len..]);
    } else {
        before.extend_from_slice(&post[copied..]);
    }
    let patched = apply(&before, chunks)?;
    // Codex drops a file's final blank line (it pops one empty line before patching and adds
    // none back); a file that still ends in blank lines was written by something else after
    // it (or replayed from git), which moves no line the patch wrote.
    fn trimmed<'l, 's>(lines: &'l [&'s str]) -> &'l [&'s str] {
        let keep = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        &lines[..keep]
    }
    if trimmed(&patched.lines[..patched.final_len()]) != trimmed(post) {
        return None;
    }
    let mut expected: Vec<usize> = placed.iter().map(|&(_, start, _)| start).collect();
    let mut block_at = block_start;
    for &i in appended {
        expected.push(block_at);
        block_at += chunks[i].new_side().len();
    }
    expected.sort_unstable();
    let mut starts: Vec<usize> = patched.segments.iter().map(|s| s.start).collect();
    starts.sort_unstable();
    (starts == expected).then(|| patched.written())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The written lines and contents of `event` with `files` as the disk, by path.
    fn written_on(event: Value, files: &[(&str, &str)]) -> Written {
        let event = HookEvent::read(&event).expect("an event");
        let filepaths = crate::plan::changed_files_of(&event);
        let mut reads = Vec::new();
        let written = written(&event, &filepaths, &mut |path: &str| {
            reads.push(path.to_owned());
            files
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, text)| text.to_string())
        });
        let mut once = reads.clone();
        once.sort();
        once.dedup();
        assert_eq!(once.len(), reads.len(), "each file is read once: {reads:?}");
        written
    }

    fn lines_of(written: &Written, path: &str) -> Option<Vec<[u64; 2]>> {
        written
            .lines
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, l)| l.clone())
    }

    fn codex_patch(patch: &str, output: &str) -> Value {
        json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_response": output})
    }

    const APPLIED: &str = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM src/Jobs.kt\n";

    /// Twelve lines, `Thread.sleep(` on line 3.
    fn jobs() -> String {
        let mut lines: Vec<String> = (1..=12).map(|i| format!("val x{i} = {i}")).collect();
        lines[2] = "    Thread.sleep(100)".into();
        lines.join("\n") + "\n"
    }

    #[test]
    fn a_codex_update_writes_the_plus_lines_of_each_chunk_where_they_are_on_disk() {
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n val x8 = 8\n val x9 = 9\n-val x10 = 10\n+val x10 = delay(10)\n+val x10b = 0\n val x11 = 11\n*** End Patch\n";
        let after = jobs().replace("val x10 = 10\n", "val x10 = delay(10)\nval x10b = 0\n");
        let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/Jobs.kt", &after)]);
        assert_eq!(
            written.lines,
            [("/w/src/Jobs.kt".to_string(), vec![[10, 11]])]
        );
        assert!(written.contents.is_empty(), "the file is on disk");
    }

    #[test]
    fn a_codex_update_honours_the_context_header_and_several_chunks() {
        // `val x = 0` twice: the `@@ fun b()` header says which one the second chunk means.
        let before = "fun a() {\n    val x = 0\n}\nfun b() {\n    val x = 0\n}\n";
        let after = "fun a() {\n    val x = 1\n}\nfun b() {\n    val x = 2\n}\n";
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@ fun a() {\n-    val x = 0\n+    val x = 1\n@@ fun b() {\n-    val x = 0\n+    val x = 2\n*** End Patch";
        let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/Jobs.kt", after)]);
        assert_eq!(
            lines_of(&written, "/w/src/Jobs.kt"),
            Some(vec![[2, 2], [5, 5]])
        );
        // The same patch against the pre-image: built as Codex builds it.
        let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/Jobs.kt", before)]);
        assert_eq!(
            written.contents,
            [("/w/src/Jobs.kt".to_string(), after.to_string())]
        );
        assert_eq!(
            lines_of(&written, "/w/src/Jobs.kt"),
            Some(vec![[2, 2], [5, 5]])
        );
    }

    #[test]
    fn a_line_removed_and_put_back_unchanged_is_not_written() {
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n-val x1 = 1\n-val x2 = 2\n-    Thread.sleep(100)\n+val x1 = 1\n+val two = 2\n+    Thread.sleep(100)\n val x4 = 4\n*** End Patch";
        let after = jobs().replace("val x2 = 2", "val two = 2");
        let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/Jobs.kt", &after)]);
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), Some(vec![[2, 2]]));
    }

    /// A file ending in a blank line (Codex itself would have dropped it; a formatter or a
    /// replay from git keeps it) still gets its written lines (the relevance bench found 81
    /// such edits left out).
    #[test]
    fn a_file_ending_in_a_blank_line_still_gets_its_written_lines() {
        let patch = "*** Begin Patch\n*** Update File: src/A.kt\n@@\n val a = 1\n-val b = 2\n+val c = 3\n val z = 0\n*** End Patch\n";
        for after in [
            "val a = 1\nval c = 3\nval z = 0\n\n",
            "val a = 1\nval c = 3\nval z = 0\n\n\n",
        ] {
            let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/A.kt", after)]);
            assert_eq!(
                written.lines,
                [("/w/src/A.kt".to_string(), vec![[2, 2]])],
                "{after:?}"
            );
        }
    }

    #[test]
    fn a_codex_update_that_fits_two_places_is_left_out() {
        // `a`/`X` twice after the patch: either `Y` could have become `X`.
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n a\n-Y\n+X\n*** End Patch";
        let written = written_on(
            codex_patch(patch, APPLIED),
            &[("/w/src/Jobs.kt", "a\nX\na\nX\n")],
        );
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), None);
        assert!(written.contents.is_empty());
    }

    #[test]
    fn a_pre_image_is_patched_only_when_codex_says_it_applied_the_patch() {
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n val x9 = 9\n-val x10 = 10\n+    Thread.sleep(5)\n val x11 = 11\n*** End Patch\n";
        let before = jobs();
        let after = before.replace("val x10 = 10", "    Thread.sleep(5)");
        let written = written_on(codex_patch(patch, APPLIED), &[("/w/src/Jobs.kt", &before)]);
        assert_eq!(written.contents, [("/w/src/Jobs.kt".to_string(), after)]);
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), Some(vec![[10, 10]]));
        // A failed patch leaves the pre-image on disk: nothing is built, nothing guessed.
        let failed = "Exit code: 1\nWall time: 0 seconds\nOutput:\napply_patch verification failed: Failed to find expected lines\n";
        let written = written_on(codex_patch(patch, failed), &[("/w/src/Jobs.kt", &before)]);
        assert_eq!(written, Written::default());
        // Neither image: left out.
        let written = written_on(
            codex_patch(patch, APPLIED),
            &[("/w/src/Jobs.kt", "other\n")],
        );
        assert_eq!(written, Written::default());
    }

    #[test]
    fn codex_adds_moves_deletes_and_end_of_file_chunks() {
        let patch = "*** Begin Patch\n*** Add File: new.kt\n+a\n+b\n*** Add File: empty.kt\n\
                     *** Update File: old.kt\n*** Move to: moved.kt\n@@\n x\n-y\n+z\n*** End of File\n\
                     *** Delete File: gone.kt\n*** End Patch";
        let output =
            "Success. Updated the following files:\nA new.kt\nA empty.kt\nM moved.kt\nD gone.kt\n";
        let written = written_on(codex_patch(patch, output), &[("/w/moved.kt", "w\nx\nz\n")]);
        assert_eq!(
            written.lines,
            [
                ("/w/new.kt".to_string(), vec![[1, 2]]),
                ("/w/empty.kt".to_string(), vec![]),
                ("/w/moved.kt".to_string(), vec![[3, 3]]),
            ]
        );
        // Not moved yet: the source holds the pre-image.
        let written = written_on(codex_patch(patch, output), &[("/w/old.kt", "w\nx\ny\n")]);
        assert_eq!(
            written.contents,
            [("/w/moved.kt".to_string(), "w\nx\nz\n".to_string())]
        );
        assert_eq!(lines_of(&written, "/w/moved.kt"), Some(vec![[3, 3]]));
    }

    #[test]
    fn a_codex_chunk_without_old_lines_is_found_at_the_end() {
        let patch =
            "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n+fun end() = Unit\n*** End Patch";
        let written = written_on(
            codex_patch(patch, APPLIED),
            &[(
                "/w/src/Jobs.kt",
                "fun end() = Unit\nval a = 1\nfun end() = Unit\n",
            )],
        );
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), Some(vec![[3, 3]]));
    }

    #[test]
    fn a_patch_fed_to_apply_patch_through_the_shell_is_read_too() {
        let script = "cd src && apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: Jobs.kt\n@@\n val x9 = 9\n-val x10 = 10\n+val ten = 10\n*** End Patch\nEOF\n";
        let after = jobs().replace("val x10 = 10", "val ten = 10");
        let event = json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PostToolUse",
            "tool_name": "exec_command", "tool_input": {"cmd": script}, "tool_response": "Exit code: 0\n"});
        let written = written_on(event, &[("/w/src/Jobs.kt", &after)]);
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), Some(vec![[10, 10]]));
    }

    /// Claude Code 2.1.328's `PostToolUse` of an `Edit`, as captured from the real agent.
    fn claude_edit(response: Value) -> Value {
        json!({"session_id": "s", "cwd": "/w", "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": "/w/Jobs.kt", "old_string": "line 6\n", "new_string": "line six\nline 6b\n", "replace_all": false},
            "tool_response": response})
    }

    #[test]
    fn claude_code_edits_and_writes_take_their_structured_patch() {
        let edit = claude_edit(json!({"filePath": "/w/Jobs.kt", "oldString": "line 6\n",
            "newString": "line six\nline 6b\n", "originalFile": "…", "userModified": false, "replaceAll": false,
            "structuredPatch": [{"oldStart": 3, "oldLines": 7, "newStart": 3, "newLines": 8,
                "lines": [" line 3", " line 4", " line 5", "-line 6", "+line six", "+line 6b", " line 7", " line 8", " line 9"]}]}));
        assert_eq!(
            lines_of(&written_on(edit, &[]), "/w/Jobs.kt"),
            Some(vec![[6, 7]])
        );
        let deletion = claude_edit(
            json!({"structuredPatch": [{"oldStart": 1, "oldLines": 6, "newStart": 1, "newLines": 5,
            "lines": [" line 1", " line 2", "-line 3", " line 4", " line 5", " line 6"]}]}),
        );
        assert_eq!(
            lines_of(&written_on(deletion, &[]), "/w/Jobs.kt"),
            Some(vec![])
        );
        // A hunk that does not add up is not guessed at.
        let odd = claude_edit(
            json!({"structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 3,
            "lines": ["+a"]}]}),
        );
        assert_eq!(lines_of(&written_on(odd, &[]), "/w/Jobs.kt"), None);
        let write = |response: Value| {
            json!({"session_id": "s", "cwd": "/w", "hook_event_name": "PostToolUse", "tool_name": "Write",
                "tool_input": {"file_path": "/w/Jobs.kt", "content": "a\nb\nc"}, "tool_response": response})
        };
        let created = write(
            json!({"type": "create", "filePath": "/w/Jobs.kt", "content": "a\nb\nc",
            "structuredPatch": [], "originalFile": null}),
        );
        assert_eq!(
            lines_of(&written_on(created, &[]), "/w/Jobs.kt"),
            Some(vec![[1, 3]])
        );
        let updated = write(
            json!({"type": "update", "content": "a\nb\nc", "originalFile": "a\nB\nc",
            "structuredPatch": [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                "lines": [" a", "-B", "+b", " c"]}]}),
        );
        assert_eq!(
            lines_of(&written_on(updated, &[]), "/w/Jobs.kt"),
            Some(vec![[2, 2]])
        );
        let unchanged = write(
            json!({"type": "update", "content": "a\nb\nc", "originalFile": "a\nb\nc", "structuredPatch": []}),
        );
        assert_eq!(
            lines_of(&written_on(unchanged, &[]), "/w/Jobs.kt"),
            Some(vec![])
        );
        let too_large = write(
            json!({"type": "update", "content": "", "originalFile": null, "structuredPatch": []}),
        );
        assert_eq!(
            lines_of(&written_on(too_large, &[]), "/w/Jobs.kt"),
            Some(vec![[1, 3]])
        );
        let staged = write(
            json!({"type": "update", "staged": true, "structuredPatch": [{"oldStart": 1, "oldLines": 1,
            "newStart": 1, "newLines": 1, "lines": ["-x", "+y"]}]}),
        );
        assert_eq!(
            lines_of(&written_on(staged, &[]), "/w/Jobs.kt"),
            Some(vec![])
        );
        let mut failed = claude_edit(Value::Null);
        failed["hook_event_name"] = json!("PostToolUseFailure");
        failed["error"] = json!("String to replace not found in file.");
        assert_eq!(
            lines_of(&written_on(failed, &[]), "/w/Jobs.kt"),
            Some(vec![])
        );
    }

    #[test]
    fn without_a_diff_the_new_string_is_found_in_the_file() {
        let after = "line 1\nline six\nline 6b\nline 7\n";
        let edit = claude_edit(json!({"structuredPatch": []}));
        assert_eq!(
            lines_of(
                &written_on(edit.clone(), &[("/w/Jobs.kt", after)]),
                "/w/Jobs.kt"
            ),
            Some(vec![[2, 3]])
        );
        // Twice in the file: which one is the edit's cannot be told.
        let twice = "line six\nline 6b\nline six\nline 6b\n";
        assert_eq!(
            lines_of(&written_on(edit, &[("/w/Jobs.kt", twice)]), "/w/Jobs.kt"),
            None
        );
        // Only what differs counts: `fun a(x)` → `fun a(x, y)` writes its own line, not the
        // context the agent repeated around it.
        let replace = |old: &str, new: &str, all: bool, original: Value| {
            json!({"session_id": "s", "cwd": "/w", "hook_event_name": "PostToolUse", "tool_name": "Edit",
                "tool_input": {"file_path": "/w/Jobs.kt", "old_string": old, "new_string": new, "replace_all": all},
                "tool_response": {"structuredPatch": [], "originalFile": original}})
        };
        let file = "class A {\n    fun a(x, y) = x\n}\n";
        let partial = replace(
            "class A {\n    fun a(x) = x\n}",
            "class A {\n    fun a(x, y) = x\n}",
            false,
            Value::Null,
        );
        assert_eq!(
            lines_of(&written_on(partial, &[("/w/Jobs.kt", file)]), "/w/Jobs.kt"),
            Some(vec![[2, 2]])
        );
        // Text lost from inside a line writes that line; whole lines lost write nothing.
        let lost = replace(
            "class A {\n    fun a(x, y, z) = x",
            "class A {\n    fun a(x, y",
            false,
            Value::Null,
        );
        assert_eq!(
            lines_of(&written_on(lost, &[("/w/Jobs.kt", file)]), "/w/Jobs.kt"),
            Some(vec![[2, 2]])
        );
        let whole = replace(
            "class A {\n    val gone = 1\n",
            "class A {\n",
            false,
            Value::Null,
        );
        assert_eq!(
            lines_of(&written_on(whole, &[("/w/Jobs.kt", file)]), "/w/Jobs.kt"),
            Some(vec![])
        );
        // Everywhere: every `y` is the edit's only if the file before held none.
        let all = |original: &str| replace("x", "y", true, json!(original));
        let both = "y = 1\nz = 2\ny = 3\n";
        assert_eq!(
            lines_of(
                &written_on(all("x = 1\nz = 2\nx = 3\n"), &[("/w/Jobs.kt", both)]),
                "/w/Jobs.kt"
            ),
            Some(vec![[1, 1], [3, 3]])
        );
        assert_eq!(
            lines_of(
                &written_on(all("x = 1\nz = 2\ny = 3\n"), &[("/w/Jobs.kt", both)]),
                "/w/Jobs.kt"
            ),
            None
        );
    }

    /// Gemini CLI 0.61's `AfterTool` of a `replace`: `returnDisplay.fileDiff` is jsdiff's
    /// `createPatch` of the file before and after.
    #[test]
    fn gemini_cli_replacements_and_writes_take_their_file_diff() {
        let diff = "Index: Jobs.kt\n===================================================================\n--- Jobs.kt\tCurrent\n+++ Jobs.kt\tProposed\n@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n+line 10b\n line 11\n line 12\n line 13\n@@ -20,3 +21,3 @@\n line 20\n-line 21\n+line twenty-one\n line 22\n\\ No newline at end of file\n";
        let replace = json!({"session_id": "s", "cwd": "/w", "hook_event_name": "AfterTool", "tool_name": "replace",
            "tool_input": {"file_path": "/w/Jobs.kt", "old_string": "line 10\n", "new_string": "line ten\nline 10b\n"},
            "tool_response": {"llmContent": "Successfully modified file", "returnDisplay": {"fileDiff": diff,
                "fileName": "Jobs.kt", "originalContent": "…", "newContent": "…", "isNewFile": false}}});
        assert_eq!(
            lines_of(&written_on(replace.clone(), &[]), "/w/Jobs.kt"),
            Some(vec![[10, 11], [22, 22]])
        );
        let mut same = replace.clone();
        same["tool_response"]["returnDisplay"] = json!({"fileDiff": "Index: Jobs.kt\n===\n--- Jobs.kt\tOriginal\n+++ Jobs.kt\tWritten\n",
            "originalContent": "a\n", "newContent": "a\n", "isNewFile": false});
        assert_eq!(lines_of(&written_on(same, &[]), "/w/Jobs.kt"), Some(vec![]));
        let mut failed = replace.clone();
        failed["tool_response"] = json!({"llmContent": "Error", "returnDisplay": "Error: no match", "error": {"message": "no match", "type": "edit_no_occurrence_found"}});
        assert_eq!(
            lines_of(&written_on(failed, &[]), "/w/Jobs.kt"),
            Some(vec![])
        );
        // A `replace` that created the file answers with text only: its new text is the file.
        let mut created = replace;
        created["tool_input"] =
            json!({"file_path": "/w/Jobs.kt", "old_string": "", "new_string": "a\nb\n"});
        created["tool_response"] =
            json!({"llmContent": "Created new file", "returnDisplay": "Created Jobs.kt"});
        assert_eq!(
            lines_of(
                &written_on(created, &[("/w/Jobs.kt", "a\nb\n")]),
                "/w/Jobs.kt"
            ),
            Some(vec![[1, 2]])
        );
    }

    /// Codex's algorithm run forward on random files and patches of one or two chunks (some
    /// with an `@@` context line): wherever the placement on the post-image answers, it answers
    /// what the patch wrote.
    #[test]
    fn located_lines_are_always_the_ones_codex_wrote() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let words = ["a", "b", "c", "  a", "}", ""];
        let (mut answered, mut cases) = (0, 0);
        while cases < 4000 {
            let len = 2 + next(14) as usize;
            let file: Vec<&str> = (0..len)
                .map(|_| words[next(words.len() as u64) as usize])
                .collect();
            let mut chunks = Vec::new();
            let mut from = 0;
            for _ in 0..1 + next(2) {
                if from >= len {
                    break;
                }
                let at = from + next((len - from) as u64) as usize;
                let end = (at + 1 + next(3) as usize).min(len);
                let context = (at > from && next(3) == 0).then(|| file[at - 1]);
                let mut lines = Vec::new();
                for (i, line) in file[at..end].iter().enumerate() {
                    let side = if i == 0 || next(2) == 0 {
                        Side::Both
                    } else {
                        Side::Old
                    };
                    lines.push((side, *line));
                }
                for _ in 0..1 + next(2) {
                    let spot = next(lines.len() as u64 + 1) as usize;
                    lines.insert(spot, (Side::New, ["x", "b", "y"][next(3) as usize]));
                }
                chunks.push(Chunk {
                    context,
                    lines,
                    end_of_file: false,
                });
                from = end;
            }
            let Some(patched) = apply(&file, &chunks) else {
                continue;
            };
            cases += 1;
            let content = patched.content();
            let post = codex_lines(&content);
            if let Located::At(lines) = locate(&post, &chunks) {
                answered += 1;
                assert_eq!(lines, patched.written(), "{file:?} {chunks:?} → {post:?}");
            }
        }
        assert!(answered > cases / 2, "placed {answered} of {cases}");
    }

    #[test]
    fn large_files_and_large_answers_are_left_out() {
        let dir = std::env::temp_dir().join(format!("guidebook-written-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.kt");
        std::fs::write(&big, vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert_eq!(read_capped(big.to_str().unwrap()), None);
        let small = dir.join("small.kt");
        std::fs::write(&small, "x\n").unwrap();
        assert_eq!(read_capped(small.to_str().unwrap()).as_deref(), Some("x\n"));
        // As the check before an edit finds them: there, missing, or there but not read.
        assert_eq!(
            read_before(small.to_str().unwrap()),
            Before::Text("x\n".into())
        );
        let missing = dir.join("missing.kt");
        assert_eq!(read_before(missing.to_str().unwrap()), Before::Missing);
        assert_eq!(read_before(big.to_str().unwrap()), Before::Unreadable);
        assert_eq!(read_before(dir.to_str().unwrap()), Before::Unreadable);
        assert_eq!(
            read_capped(dir.to_str().unwrap()),
            None,
            "not a regular file"
        );
        let fifo = dir.join("fifo.kt");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let fifo = fifo.to_str().unwrap();
            assert_eq!(
                read_capped(fifo),
                None,
                "a FIFO, without waiting for a writer"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();

        let mut found = Found::default();
        let many: Vec<[u64; 2]> = (0..MAX_RANGES as u64)
            .map(|i| [2 * i + 1, 2 * i + 1])
            .collect();
        found.put("/a".into(), Some(FileLines::Lines(many)));
        found.put("/b".into(), Some(FileLines::Lines(vec![[1, 1]])));
        found.put(
            "/c".into(),
            Some(FileLines::Content(
                "x".repeat(MAX_CONTENTS_BYTES + 1),
                vec![],
            )),
        );
        found.put("/d".into(), Some(FileLines::Lines(vec![[1, 1]])));
        found.put("/d".into(), Some(FileLines::Lines(vec![[2, 2]])));
        let written = found.into_written(&["/a".into(), "/b".into(), "/c".into(), "/d".into()]);
        assert_eq!(written.lines.len(), 1, "only /a fits; /d was touched twice");
        assert!(written.contents.is_empty());
    }
}
