//! The lines an edit wrote, per file: `search`'s `written`, and `contents` where Codex's hook
//! ran before the file reached disk. Reads: the edited files, through the caller's reader (at
//! most once each; [`read_capped`] reads at most [`MAX_FILE_BYTES`]). Writes: nothing.
//!
//! Each host says it differently:
//! - Claude Code and Gemini CLI: the tool's own report ([`EditReport`], read by `event`): the
//!   `+` lines of its diff, the whole file for a file created, or (with no diff) the
//!   replacement's new text found in the file after the edit.
//! - Codex `apply_patch` (also a patch fed to `apply_patch` through the shell): an added file is
//!   all written; for an updated one each chunk is located in the file on disk
//!   ([`edits::place::locate`]) and its `+` lines are the written ones; where a chunk fits
//!   several places its context allows, all of them (the same text, so the same matches). If
//!   the file on disk is still the patch's pre-image, the post-image is built as Codex builds
//!   it and sent as the file's `contents`, with the written lines in it. Where the patch cannot
//!   be placed at all, its `+` lines are sent as they stand (`contents`, every line written).
//!
//! Never the whole file for want of a placement: only a file the event says nothing of (an
//! unreadable one, a failed patch, a path touched twice) is left out, and the sidecar then takes
//! the lines that differ from the file's last commit.

use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;

use edits::lines::{line_count, line_of};
use edits::patch::{summary_targets, Chunk, ResolvedOp, Side};
use edits::paths::resolve;
use edits::place::{locate, update, Located};
use edits::LineRanges;

use crate::event::{EditReport, HookEvent, ToolInput};

/// The most of one file the shim reads (the sidecar reads no more either): a larger file is
/// left out.
pub const MAX_FILE_BYTES: u64 = 2 << 20;
/// The most post-edit content one `search` carries in `contents`, JSON-escaped (the sidecar
/// takes request bodies of 1 MiB by default); a file beyond it is left out altogether.
pub const MAX_CONTENTS_BYTES: usize = 512 << 10;
/// The most line ranges one `search` carries in `written`; files beyond it are left out.
pub const MAX_RANGES: usize = 20_000;

/// What one edit wrote, keyed by the paths of `search`'s `filepaths`, in their order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// The written lines of each file whose written lines are known, in the file as it is
    /// after the edit.
    pub lines: Vec<(String, LineRanges)>,
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
/// as it can be told; `ops` are the event's patches parsed ([`HookEvent::patch_ops`]), files
/// are read through `read`.
pub fn written(
    event: &HookEvent,
    ops: &[ResolvedOp],
    filepaths: &[String],
    read: &mut ReadFile,
) -> Written {
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
    let Some(tool) = &event.tool else {
        return Written::default();
    };
    let base = match &tool.input {
        ToolInput::EditFile(Some(file)) => {
            if let (Some(path), Some(report)) = (resolve(event.cwd.as_deref(), file), &tool.edit) {
                let lines = report_lines(report, &path, read);
                found.put(path, lines.map(FileLines::Lines));
            }
            return found.into_written(filepaths);
        }
        ToolInput::Patch(_) => event.cwd.clone(),
        ToolInput::Shell { .. } => event.command_dir(),
        ToolInput::Other | ToolInput::EditFile(None) => return Written::default(),
    };
    let applied = Applied::from_output(tool.output.as_deref(), base.as_deref());
    patch_lines(ops, &applied, read, &mut found);
    found.into_written(filepaths)
}

/// What is known of one file's written lines.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileLines {
    Lines(LineRanges),
    /// The text to match instead of the file on disk (the file after the edit, not on disk
    /// yet; or a patch's `+` lines as they stand), and the lines written in it.
    Content(String, LineRanges),
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
fn report_lines(report: &EditReport, path: &str, read: &mut Texts) -> Option<LineRanges> {
    match report {
        EditReport::Lines(lines) => Some(lines.clone()),
        EditReport::Nothing => Some(LineRanges::new()),
        EditReport::Unknown => None,
        EditReport::WholeFile { content } => Some(LineRanges::all(match content {
            Some(content) => line_count(content.as_bytes()),
            None => line_count(read(path)?.as_bytes()),
        })),
        EditReport::Replace {
            old,
            new,
            all,
            original,
        } => replacement_lines(&read(path)?, old, new, *all, original.as_deref()),
    }
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
) -> Option<LineRanges> {
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
    let line_of = |at: usize| line_of(text, at);
    let mut lines = Vec::new();
    for at in places {
        let (start, end) = (at + prefix, at + new_b.len() - suffix);
        if start < end {
            lines.extend(line_of(start)..=line_of(end - 1));
        } else {
            let lost = &old_b[prefix..old_b.len() - suffix];
            let at_line_start = start == 0 || text[start - 1] == b'\n';
            // Whole lines went, or a last line without a newline went entirely.
            let whole_lines = lost.ends_with(b"\n") && at_line_start;
            let last_line_gone = start == text.len() && at_line_start;
            if !lost.is_empty() && !whole_lines && !last_line_gone {
                lines.push(line_of(start));
            }
        }
    }
    Some(LineRanges::of_lines(lines))
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

/// The written lines of every file the patches' operations add or update.
fn patch_lines(ops: &[ResolvedOp], applied: &Applied, read: &mut Texts, found: &mut Found) {
    for op in ops {
        match op {
            ResolvedOp::Add { path, lines } => {
                found.put(
                    path.clone(),
                    Some(FileLines::Lines(LineRanges::all(lines.len()))),
                );
            }
            ResolvedOp::Delete { path } => found.put(path.clone(), None),
            ResolvedOp::Update {
                source,
                target,
                chunks,
            } => {
                let lines = update_lines(chunks, target, source, applied, read);
                if target != source {
                    found.put(source.clone(), None);
                }
                found.put(target.clone(), lines);
            }
        }
    }
}

/// The written lines of one `*** Update File` whose result is `target` (moved from `source`, or
/// the same file): located in the file on disk; or, when the disk still holds the pre-image of
/// a patch Codex says it applied, in the post-image built from it; or, where the patch cannot
/// be placed in either, its `+` lines as they stand. `None` for a patch that was not applied
/// (the pre-image still on disk) and for a file that cannot be read.
fn update_lines(
    chunks: &[Chunk],
    target: &str,
    source: &str,
    applied: &Applied,
    read: &mut Texts,
) -> Option<FileLines> {
    let on_disk = read(target);
    if let Some(text) = &on_disk {
        match locate(text, chunks) {
            Located::At(lines) | Located::Among(lines) => return Some(FileLines::Lines(lines)),
            Located::Unplaced => return Some(added_lines(chunks)),
            Located::Absent => {}
        }
    }
    if !applied.lists(target) {
        return None;
    }
    // A file the shim cannot read is left out: the sidecar cannot read it either.
    let before = if target == source {
        on_disk?
    } else {
        read(source)?
    };
    Some(match update(&before, chunks) {
        Some((content, lines)) => FileLines::Content(content, lines),
        None => added_lines(chunks),
    })
}

/// A patch's `+` lines as they stand, to be matched as a text of their own: every line written.
fn added_lines(chunks: &[Chunk]) -> FileLines {
    let added: Vec<&str> = chunks
        .iter()
        .flat_map(|chunk| chunk.lines.iter())
        .filter(|(side, _)| *side == Side::New)
        .map(|(_, text)| *text)
        .collect();
    let text: String = added.iter().map(|line| format!("{line}\n")).collect();
    FileLines::Content(text, LineRanges::all(added.len()))
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
        let ops = event.patch_ops();
        let written = written(&event, &ops, &filepaths, &mut |path: &str| {
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

    fn lines_of(written: &Written, path: &str) -> Option<Vec<[usize; 2]>> {
        written
            .lines
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, l)| l.clone().into())
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
            [("/w/src/Jobs.kt".to_string(), vec![[10, 11]].into())]
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
                [("/w/src/A.kt".to_string(), vec![[2, 2]].into())],
                "{after:?}"
            );
        }
    }

    /// The hunk's new side occurs twice and its context allows both: both are the written
    /// lines (the same text, so the same matches), never the whole file.
    #[test]
    fn a_codex_update_that_fits_two_places_writes_both() {
        let patch = "*** Begin Patch\n*** Update File: src/Jobs.kt\n@@\n a\n-Y\n+X\n*** End Patch";
        let written = written_on(
            codex_patch(patch, APPLIED),
            &[("/w/src/Jobs.kt", "a\nX\nb\na\nX\n")],
        );
        assert_eq!(
            lines_of(&written, "/w/src/Jobs.kt"),
            Some(vec![[2, 2], [5, 5]])
        );
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
        // Neither image: the `+` lines as they stand, every one written.
        let written = written_on(
            codex_patch(patch, APPLIED),
            &[("/w/src/Jobs.kt", "other\n")],
        );
        assert_eq!(
            written.contents,
            [(
                "/w/src/Jobs.kt".to_string(),
                "    Thread.sleep(5)\n".to_string()
            )]
        );
        assert_eq!(lines_of(&written, "/w/src/Jobs.kt"), Some(vec![[1, 1]]));
        // A file that cannot be read: left out.
        let written = written_on(codex_patch(patch, APPLIED), &[]);
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
                ("/w/new.kt".to_string(), vec![[1, 2]].into()),
                ("/w/empty.kt".to_string(), vec![].into()),
                ("/w/moved.kt".to_string(), vec![[3, 3]].into()),
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
        let many = LineRanges::of_lines((0..MAX_RANGES).map(|i| 2 * i + 1));
        found.put("/a".into(), Some(FileLines::Lines(many)));
        found.put(
            "/b".into(),
            Some(FileLines::Lines(LineRanges::of_lines([1]))),
        );
        found.put(
            "/c".into(),
            Some(FileLines::Content(
                "x".repeat(MAX_CONTENTS_BYTES + 1),
                LineRanges::new(),
            )),
        );
        found.put(
            "/d".into(),
            Some(FileLines::Lines(LineRanges::of_lines([1]))),
        );
        found.put(
            "/d".into(),
            Some(FileLines::Lines(LineRanges::of_lines([2]))),
        );
        let written = found.into_written(&["/a".into(), "/b".into(), "/c".into(), "/d".into()]);
        assert_eq!(written.lines.len(), 1, "only /a fits; /d was touched twice");
        assert!(written.contents.is_empty());
    }
}
