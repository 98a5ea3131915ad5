//! The check made before an edit is written: the `severity: block` guidelines it would break.
//!
//! Reads: a `PreToolUse` [`HookEvent`] and the edited files, through the caller's reader (at
//! most once each), and the sidecar's `checkEdit` answer. Writes: nothing.
//!
//! For a `PreToolUse` (Gemini CLI: `BeforeTool`) of an edit, the shim builds every file as the
//! edit would leave it (its post-image) and the lines the edit would write in it, and asks
//! `checkEdit` about them; a hit denies the edit with a reason the model can act on. Each host's
//! edit is rebuilt as the host itself applies it:
//!
//! - Codex `apply_patch` (also a patch fed to `apply_patch` through the shell): an `*** Add
//!   File` is its `+` lines, all written; an `*** Update File` is its chunks applied to the file
//!   on disk as Codex applies them (`edits::place::update`), its `+` lines written (moved: the
//!   source's text under the destination's path); an `*** Delete File` has nothing to check.
//! - Claude Code `Write` (`content`), `Edit` (`old_string` → `new_string` once, exactly one
//!   occurrence, or everywhere with `replace_all`), `MultiEdit` (its edits in order).
//! - Gemini CLI `write_file` (`content`), `replace` (exactly one occurrence, or every one with
//!   `allow_multiple`; the file's final newline kept as it was).
//!
//! A Claude Code or Gemini CLI edit's written lines are the `+` lines of a line diff of the file
//! before and after, as the hosts' own diffs report them after the edit. Whatever cannot be
//! rebuilt exactly (a replacement not found, or found more often than asked, a file that cannot
//! be read, a path the call touches twice) is left out, which lets that file's edit through.

use serde_json::Value;

use crate::breaker::{gate_calls, gate_verdict, BreakerAction, BreakerVerdict};
use crate::event::{EditRequest, EventName, HookEvent, Host, Replacement, ToolInput};
use crate::link::SidecarLink;
use edits::patch::ResolvedOp;
use edits::paths::resolve;
use edits::LineRanges;

use crate::protocol::{batch, CheckEdit};
use crate::written::{Before, MAX_CONTENTS_BYTES, MAX_RANGES};

/// The most hits one deny reason lists; the rest are counted.
const MAX_HITS_SHOWN: usize = 5;
/// The most of a guideline's content one deny reason quotes, in characters.
const MAX_CONTENT_CHARS: usize = 1_500;

/// Finds a file as the edit is about to find it ([`crate::written::read_before`] on disk).
pub type ReadBefore<'a> = dyn FnMut(&str) -> Before + 'a;

/// One `checkEdit` question: the files as the edit would leave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditCheck {
    pub session_id: String,
    /// The directory the paths of the deny reason are shown relative to.
    pub cwd: Option<String>,
    /// Per file (absolute, in the order the edit names them): its post-image and the lines the
    /// edit would write in it.
    pub files: Vec<PostImage>,
}

/// One file as an edit would leave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostImage {
    pub path: String,
    pub content: String,
    /// The lines the edit would write.
    pub written: LineRanges,
}

impl EditCheck {
    /// The `checkEdit` call, with the caller's remaining patience as `deadlineMs`.
    pub fn call(&self, deadline_ms: u64) -> crate::protocol::Call {
        CheckEdit {
            session_id: self.session_id.clone(),
            filepaths: self.files.iter().map(|f| f.path.clone()).collect(),
            deadline_ms: Some(deadline_ms),
            written: self
                .files
                .iter()
                .map(|f| (f.path.clone(), f.written.clone()))
                .collect(),
            contents: self
                .files
                .iter()
                .map(|f| (f.path.clone(), f.content.clone()))
                .collect(),
        }
        .call()
    }
}

/// The check for `event`, if it is a `PreToolUse` of an edit with at least one file whose
/// post-image can be built; files are read through `read` (at most once each).
pub fn plan_check(event: &HookEvent, read: &mut ReadBefore) -> Option<EditCheck> {
    // Each file is read at most once, however many patches of the call name it.
    let mut seen: Vec<(String, Before)> = Vec::new();
    let read = &mut |path: &str| -> Before {
        if let Some((_, before)) = seen.iter().find(|(p, _)| p == path) {
            return before.clone();
        }
        let before = read(path);
        seen.push((path.to_owned(), before.clone()));
        before
    };
    if event.name != EventName::PreToolUse {
        return None;
    }
    let tool = event.tool.as_ref()?;
    let cwd = event.cwd.as_deref();
    let mut images = Images::default();
    match &tool.input {
        ToolInput::Patch(_) | ToolInput::Shell { .. } => {
            patch_images(&event.patch_ops(), read, &mut images);
        }
        ToolInput::EditFile(Some(file)) => {
            let (Some(path), Some(request)) = (resolve(cwd, file), tool.request.as_ref()) else {
                return None;
            };
            let image = match read(&path) {
                Before::Missing => edit_image(event.host, request, None),
                Before::Text(text) => edit_image(event.host, request, Some(&text)),
                // Something the shim cannot read: not rebuilt, let through.
                Before::Unreadable => None,
            };
            images.put(path, image);
        }
        _ => return None,
    }
    let files = images.into_files();
    (!files.is_empty()).then(|| EditCheck {
        session_id: event.session_id.clone(),
        cwd: event.cwd.clone(),
        files,
    })
}

/// The post-images found so far, by path; `None` for a path that cannot be checked (or is
/// touched twice in one call, which is not worth untangling).
#[derive(Default)]
struct Images(Vec<(String, Option<Image>)>);

/// A file's content after the edit and the lines the edit writes in it.
type Image = (String, LineRanges);

impl Images {
    fn put(&mut self, path: String, image: Option<Image>) {
        match self.0.iter_mut().find(|(p, _)| *p == path) {
            Some(entry) => entry.1 = None,
            None => self.0.push((path, image)),
        }
    }

    /// The files to send, within the request's budgets (contents JSON-escaped, line ranges):
    /// a file beyond them is left out, its edit let through.
    fn into_files(self) -> Vec<PostImage> {
        let (mut bytes, mut ranges) = (0, 0);
        let mut files = Vec::new();
        for (path, image) in self.0 {
            let Some((content, written)) = image else {
                continue;
            };
            let size = Value::from(content.as_str()).to_string().len();
            if bytes + size > MAX_CONTENTS_BYTES || ranges + written.len() > MAX_RANGES {
                continue;
            }
            bytes += size;
            ranges += written.len();
            files.push(PostImage {
                path,
                content,
                written,
            });
        }
        files
    }
}

/// The post-image of every file the patches' operations add or update.
fn patch_images(ops: &[ResolvedOp], read: &mut dyn FnMut(&str) -> Before, images: &mut Images) {
    for op in ops {
        match op {
            ResolvedOp::Add { path, lines } => {
                // Codex writes each `+` line followed by a newline.
                let content: String = lines.iter().map(|line| format!("{line}\n")).collect();
                images.put(path.clone(), Some((content, LineRanges::all(lines.len()))));
            }
            ResolvedOp::Delete { path } => images.put(path.clone(), None),
            ResolvedOp::Update {
                source,
                target,
                chunks,
            } => {
                let image = match read(source) {
                    Before::Text(before) => edits::place::update(&before, chunks),
                    Before::Missing | Before::Unreadable => None,
                };
                if target != source {
                    images.put(source.clone(), None);
                }
                images.put(target.clone(), image);
            }
        }
    }
}

/// A Claude Code or Gemini CLI edit's post-image and written lines, given the file before it
/// (`None`: no such file). `None` when the host would fail the edit or it cannot be rebuilt
/// exactly.
fn edit_image(host: Host, request: &EditRequest, before: Option<&str>) -> Option<Image> {
    let after = match request {
        EditRequest::Write(content) => content.clone(),
        EditRequest::Replace(replacements) => {
            let mut text: Option<String> = before.map(str::to_owned);
            for replacement in replacements {
                text = Some(match text {
                    Some(current) => replace(host, &current, replacement)?,
                    // Both hosts create a missing file from an empty `old_string`.
                    None if replacement.old.is_empty() => replacement.new.clone(),
                    None => return None,
                });
            }
            text?
        }
    };
    let written = edits::diff::written_lines(before.unwrap_or("").as_bytes(), after.as_bytes());
    Some((after, written))
}

/// One replacement applied as the host applies it, or `None` where the host would fail: the
/// text not found, found more than once without `all`, or an empty `old` in an existing file.
fn replace(host: Host, current: &str, replacement: &Replacement) -> Option<String> {
    let Replacement { old, new, all } = replacement;
    if old.is_empty() {
        return None;
    }
    let mut old = old.clone();
    // Claude Code: deleting text that ends a line takes the line's newline with it.
    if host == Host::ClaudeCode
        && new.is_empty()
        && !old.ends_with('\n')
        && current.contains(&format!("{old}\n"))
    {
        old.push('\n');
    }
    let count = current.matches(old.as_str()).count();
    if count == 0 || (count > 1 && !all) {
        return None;
    }
    let replaced = current.replace(old.as_str(), new);
    Some(if host == Host::GeminiCli {
        // Gemini CLI keeps the file's final newline as it was.
        match (current.ends_with('\n'), replaced.ends_with('\n')) {
            (true, false) => replaced + "\n",
            (false, true) => replaced[..replaced.len() - 1].to_owned(),
            _ => replaced,
        }
    } else {
        replaced
    })
}

/// Asks the sidecar, in one round trip, the breaker's gate (when planned) and `checkEdit`, and
/// returns the verdict: the breaker's deny when the session is halted (it stops every edit, and
/// its reason says how the session goes on), else a deny naming the `block` guidelines the edit
/// would break, else nothing. Every failure (no sidecar, a timeout, an error answer) is nothing:
/// the edit goes through; an error answer is reported through `link`.
pub fn ask(
    check: &EditCheck,
    gate: Option<&BreakerAction>,
    link: &mut dyn SidecarLink,
) -> BreakerVerdict {
    let gate_session = match gate {
        Some(BreakerAction::Gate { session_id }) => Some(session_id.as_str()),
        _ => None,
    };
    let check_id = if gate_session.is_some() { 3 } else { 1 };
    let body = |deadline_ms: u64| {
        let mut calls: Vec<crate::protocol::Call> =
            gate_session.map(gate_calls).into_iter().flatten().collect();
        calls.push(check.call(deadline_ms));
        batch(&calls)
    };
    // The check may start a sidecar that is not running: a block guideline holds from the
    // session's first edit.
    let Ok(response) = link.exchange(&body, true) else {
        return BreakerVerdict::Nothing;
    };
    let Ok(Value::Array(members)) = serde_json::from_slice::<Value>(&response) else {
        link.report("checkEdit: the sidecar's answer is not a JSON-RPC batch");
        return BreakerVerdict::Nothing;
    };
    let mut results = Vec::new();
    let mut check_result = None;
    for member in members {
        let Some(id) = member.get("id").and_then(Value::as_u64) else {
            continue;
        };
        if let Some(error) = member.get("error") {
            if id == check_id {
                link.report(&format!("checkEdit: sidecar error {error}"));
            }
            continue;
        }
        let Some(result) = member.get("result").cloned() else {
            continue;
        };
        if id == check_id {
            check_result = Some(result);
        } else {
            results.push((id, result));
        }
    }
    if gate_session.is_some() {
        let verdict = gate_verdict(&results);
        if verdict != BreakerVerdict::Nothing {
            return verdict;
        }
    }
    match check_result
        .as_ref()
        .and_then(|r| deny_reason(r, check.cwd.as_deref()))
    {
        Some(reason) => BreakerVerdict::Deny(reason),
        None => BreakerVerdict::Nothing,
    }
}

/// The deny reason for a `checkEdit` result (`{ "blocked": [ {path, id, content, line, text} ] }`),
/// or `None` when nothing is blocked. Paths under `cwd` are shown relative to it.
///
/// ```text
/// Adaptive Guidebook blocked this edit (nothing was written): `src/Db.kt` line 12 breaks [no-plaintext-password]: CONTENT
///   > val password = "hunter2"
/// Change the edit so the line no longer matches, or add `guidebook:allow no-plaintext-password` with a reason on or above the line.
/// ```
pub fn deny_reason(result: &Value, cwd: Option<&str>) -> Option<String> {
    let blocked = result.get("blocked")?.as_array()?;
    let hits: Vec<Hit> = blocked.iter().filter_map(Hit::read).collect();
    if hits.is_empty() {
        return None;
    }
    let mut text = String::from("Adaptive Guidebook blocked this edit (nothing was written):");
    let mut ids: Vec<&str> = Vec::new();
    for (n, hit) in hits.iter().take(MAX_HITS_SHOWN).enumerate() {
        if n > 0 {
            text.push('\n');
        }
        text.push(' ');
        text.push_str(&format!("`{}`", shown_path(&hit.path, cwd)));
        if let Some(line) = hit.line {
            text.push_str(&format!(" line {line}"));
        }
        text.push_str(&format!(" breaks [{}]", hit.id));
        if ids.contains(&hit.id.as_str()) {
            text.push_str(" (above)");
        } else {
            text.push_str(": ");
            text.push_str(&quoted_content(&hit.content));
            ids.push(&hit.id);
        }
        if let Some(line_text) = &hit.text {
            text.push_str("\n  > ");
            text.push_str(line_text);
        }
    }
    if hits.len() > MAX_HITS_SHOWN {
        text.push_str(&format!(
            "\n …and {} more such lines.",
            hits.len() - MAX_HITS_SHOWN
        ));
    }
    let listed: Vec<&str> = hits
        .iter()
        .take(MAX_HITS_SHOWN)
        .map(|h| h.id.as_str())
        .fold(Vec::new(), |mut ids, id| {
            if !ids.contains(&id) {
                ids.push(id);
            }
            ids
        });
    let (line_word, allow) = if hits.len() == 1 {
        ("the line no longer matches", "on or above the line")
    } else {
        ("no line matches any more", "on or above each such line")
    };
    text.push_str(&format!(
        "\nChange the edit so {line_word}, or add `guidebook:allow {}` with a reason {allow}.",
        listed.join(",")
    ));
    Some(text)
}

/// One entry of `checkEdit`'s `blocked`.
struct Hit {
    path: String,
    id: String,
    content: String,
    line: Option<u64>,
    text: Option<String>,
}

impl Hit {
    fn read(entry: &Value) -> Option<Hit> {
        let str_of = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
        Some(Hit {
            path: str_of("path")?,
            id: str_of("id")?,
            content: str_of("content").unwrap_or_default(),
            line: entry.get("line").and_then(Value::as_u64),
            text: str_of("text"),
        })
    }
}

/// `path` relative to `cwd` when it lies below it, else as given.
fn shown_path<'a>(path: &'a str, cwd: Option<&str>) -> &'a str {
    cwd.map(|cwd| cwd.trim_end_matches('/'))
        .filter(|cwd| !cwd.is_empty())
        .and_then(|cwd| path.strip_prefix(cwd)?.strip_prefix('/'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(path)
}

/// A guideline's content for the reason: trailing whitespace removed, at most
/// [`MAX_CONTENT_CHARS`] characters (then `…`).
fn quoted_content(content: &str) -> String {
    crate::ellipsize(content.trim_end(), MAX_CONTENT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::scripted::Scripted;
    use serde_json::json;

    /// The check of `event` with `files` as the disk, by path; each file read at most once.
    fn check_on(event: Value, files: &[(&str, &str)]) -> Option<EditCheck> {
        let event = HookEvent::read(&event).expect("an event");
        let mut reads: Vec<String> = Vec::new();
        let check = plan_check(&event, &mut |path: &str| {
            reads.push(path.to_owned());
            match files.iter().find(|(p, _)| *p == path) {
                Some((_, UNREADABLE)) => Before::Unreadable,
                Some((_, text)) => Before::Text(text.to_string()),
                None => Before::Missing,
            }
        });
        let mut once = reads.clone();
        once.sort();
        once.dedup();
        assert_eq!(once.len(), reads.len(), "each file is read once: {reads:?}");
        check
    }

    /// A file the tests' disk holds but the shim cannot read.
    const UNREADABLE: &str = "\u{0}unreadable";

    fn image(path: &str, content: &str, written: &[[usize; 2]]) -> PostImage {
        PostImage {
            path: path.into(),
            content: content.into(),
            written: written.to_vec().into(),
        }
    }

    fn files(check: Option<EditCheck>) -> Vec<PostImage> {
        check.map(|c| c.files).unwrap_or_default()
    }

    fn codex(patch: &str) -> Value {
        json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch", "tool_input": {"command": patch}})
    }

    const DB: &str = "package db\n\nval user = \"app\"\nval timeout = 5\n";

    #[test]
    fn codex_adds_and_updates_are_built_as_codex_writes_them_and_deletes_are_not_checked() {
        let patch = "*** Begin Patch\n*** Add File: src/New.kt\n+val a = 1\n+val password = \"x\"\n\
                     *** Update File: src/Db.kt\n@@\n val user = \"app\"\n-val timeout = 5\n+val password = \"hunter2\"\n+val timeout = 5\n\
                     *** Delete File: src/Old.kt\n*** End Patch\n";
        let check = check_on(
            codex(patch),
            &[("/w/src/Db.kt", DB), ("/w/src/Old.kt", "x\n")],
        );
        assert_eq!(
            files(check),
            [
                image("/w/src/New.kt", "val a = 1\nval password = \"x\"\n", &[[1, 2]]),
                image(
                    "/w/src/Db.kt",
                    "package db\n\nval user = \"app\"\nval password = \"hunter2\"\nval timeout = 5\n",
                    &[[4, 4]]
                ),
            ]
        );
    }

    #[test]
    fn a_codex_move_is_the_source_patched_under_the_destination() {
        let patch = "*** Begin Patch\n*** Update File: a.kt\n*** Move to: b.kt\n@@\n x\n-y\n+z\n*** End Patch";
        let check = check_on(codex(patch), &[("/w/a.kt", "x\ny\n")]);
        assert_eq!(files(check), [image("/w/b.kt", "x\nz\n", &[[2, 2]])]);
    }

    #[test]
    fn a_codex_update_that_does_not_apply_or_a_file_touched_twice_is_let_through() {
        let patch =
            "*** Begin Patch\n*** Update File: src/Db.kt\n@@\n-val nowhere = 0\n+val b = 1\n*** End Patch";
        assert_eq!(check_on(codex(patch), &[("/w/src/Db.kt", DB)]), None);
        // Not on disk: nothing to patch.
        let patch = "*** Begin Patch\n*** Update File: src/Db.kt\n@@\n-val timeout = 5\n+val b = 1\n*** End Patch";
        assert_eq!(check_on(codex(patch), &[]), None);
        let twice = "*** Begin Patch\n*** Add File: x.kt\n+a\n*** Update File: x.kt\n@@\n-a\n+b\n*** End Patch";
        assert_eq!(check_on(codex(twice), &[]), None);
        // Only a `PreToolUse` is checked.
        let mut post = codex("*** Begin Patch\n*** Add File: x.kt\n+a\n*** End Patch");
        post["hook_event_name"] = json!("PostToolUse");
        assert_eq!(check_on(post, &[]), None);
    }

    #[test]
    fn a_shell_heredoc_or_argv_patch_is_checked_against_its_directory() {
        let script = "cd src && apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: Db.kt\n@@\n-val timeout = 5\n+val timeout = 6\n*** End Patch\nEOF\n";
        let event = json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PreToolUse",
            "tool_name": "exec_command", "tool_input": {"cmd": script}});
        let check = check_on(event, &[("/w/src/Db.kt", DB)]);
        assert_eq!(
            files(check),
            [image("/w/src/Db.kt", &DB.replace("= 5", "= 6"), &[[4, 4]])]
        );
        let argv = json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PreToolUse",
            "tool_name": "shell", "tool_input": {"command": ["apply_patch", "*** Begin Patch\n*** Add File: n.kt\n+x\n*** End Patch"], "workdir": "sub"}});
        assert_eq!(
            files(check_on(argv, &[])),
            [image("/w/sub/n.kt", "x\n", &[[1, 1]])]
        );
        let plain = json!({"session_id": "s", "turn_id": "t", "cwd": "/w", "hook_event_name": "PreToolUse",
            "tool_name": "exec_command", "tool_input": {"cmd": "ls"}});
        assert_eq!(check_on(plain, &[]), None);
    }

    fn claude(tool: &str, input: Value) -> Value {
        json!({"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": input})
    }

    #[test]
    fn claude_write_is_its_content_with_the_lines_that_differ_written() {
        let write = claude(
            "Write",
            json!({"file_path": "/w/Db.kt", "content": "package db\n\nval password = \"x\"\nval timeout = 5\n"}),
        );
        // Over the old file: the lines a diff adds.
        assert_eq!(
            files(check_on(write.clone(), &[("/w/Db.kt", DB)])),
            [image(
                "/w/Db.kt",
                "package db\n\nval password = \"x\"\nval timeout = 5\n",
                &[[3, 3]]
            )]
        );
        // A new file: all written.
        assert_eq!(files(check_on(write, &[]))[0].written, [[1, 4]]);
        // Over a file the shim cannot read (too large, not UTF-8): let through.
        let write = claude("Write", json!({"file_path": "/w/Db.kt", "content": "x\n"}));
        assert_eq!(check_on(write, &[("/w/Db.kt", UNREADABLE)]), None);
        // The same text: nothing written.
        let same = claude("Write", json!({"file_path": "Db.kt", "content": DB}));
        assert_eq!(
            files(check_on(same, &[("/w/Db.kt", DB)])),
            [image("/w/Db.kt", DB, &[])]
        );
    }

    #[test]
    fn claude_edit_replaces_once_or_everywhere_and_lets_an_ambiguous_edit_through() {
        let edit = |old: &str, new: &str, all: bool| {
            claude(
                "Edit",
                json!({"file_path": "/w/Db.kt", "old_string": old, "new_string": new, "replace_all": all}),
            )
        };
        assert_eq!(
            files(check_on(
                edit(
                    "val user = \"app\"",
                    "val user = \"app\"\nval password = \"p\"",
                    false
                ),
                &[("/w/Db.kt", DB)]
            )),
            [image(
                "/w/Db.kt",
                "package db\n\nval user = \"app\"\nval password = \"p\"\nval timeout = 5\n",
                &[[4, 4]]
            )]
        );
        // `val` three times: once is ambiguous (Claude Code fails it), everywhere is not.
        assert_eq!(
            check_on(edit("val ", "var ", false), &[("/w/Db.kt", DB)]),
            None
        );
        assert_eq!(
            files(check_on(edit("val ", "var ", true), &[("/w/Db.kt", DB)]))[0].written,
            [[3, 4]]
        );
        assert_eq!(
            check_on(edit("nowhere", "x", false), &[("/w/Db.kt", DB)]),
            None
        );
        // A missing file is created from an empty `old_string`, and only then.
        assert_eq!(
            files(check_on(edit("", "a\nb\n", false), &[])),
            [image("/w/Db.kt", "a\nb\n", &[[1, 2]])]
        );
        assert_eq!(check_on(edit("", "a", false), &[("/w/Db.kt", DB)]), None);
        assert_eq!(check_on(edit("x", "a", false), &[]), None);
        // Deleting a line's text takes its newline along.
        assert_eq!(
            files(check_on(
                edit("val timeout = 5", "", false),
                &[("/w/Db.kt", DB)]
            ))[0]
                .content,
            "package db\n\nval user = \"app\"\n"
        );
    }

    #[test]
    fn claude_multiedit_applies_its_edits_in_order() {
        let multi = claude(
            "MultiEdit",
            json!({"file_path": "/w/Db.kt", "edits": [
                {"old_string": "val timeout = 5", "new_string": "val timeout = 6"},
                {"old_string": "val timeout = 6", "new_string": "val timeout = 7\nval password = \"p\""}
            ]}),
        );
        assert_eq!(
            files(check_on(multi, &[("/w/Db.kt", DB)])),
            [image(
                "/w/Db.kt",
                "package db\n\nval user = \"app\"\nval timeout = 7\nval password = \"p\"\n",
                &[[4, 5]]
            )]
        );
        let failing = claude(
            "MultiEdit",
            json!({"file_path": "/w/Db.kt", "edits": [
                {"old_string": "val timeout = 5", "new_string": "x"},
                {"old_string": "val timeout = 5", "new_string": "y"}
            ]}),
        );
        assert_eq!(check_on(failing, &[("/w/Db.kt", DB)]), None);
    }

    fn gemini(tool: &str, input: Value) -> Value {
        json!({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeTool",
            "tool_name": tool, "tool_input": input})
    }

    #[test]
    fn gemini_write_file_and_replace() {
        let write = gemini(
            "write_file",
            json!({"file_path": "/w/Db.kt", "content": "val password = \"p\"\n"}),
        );
        assert_eq!(
            files(check_on(write, &[])),
            [image("/w/Db.kt", "val password = \"p\"\n", &[[1, 1]])]
        );
        let replace = |old: &str, new: &str, multiple: bool| {
            gemini(
                "replace",
                json!({"file_path": "/w/Db.kt", "instruction": "i", "old_string": old,
                    "new_string": new, "allow_multiple": multiple}),
            )
        };
        assert_eq!(
            files(check_on(
                replace("val timeout = 5\n", "val password = \"p\"", false),
                &[("/w/Db.kt", DB)]
            )),
            // The final newline is kept as it was.
            [image(
                "/w/Db.kt",
                "package db\n\nval user = \"app\"\nval password = \"p\"\n",
                &[[4, 4]]
            )]
        );
        assert_eq!(
            check_on(replace("val ", "var ", false), &[("/w/Db.kt", DB)]),
            None
        );
        assert_eq!(
            files(check_on(replace("val ", "var ", true), &[("/w/Db.kt", DB)]))[0].written,
            [[3, 4]]
        );
        // The fixture captured from Gemini CLI 0.61.
        let event: Value = serde_json::from_str(include_str!(
            "../tests/fixtures/hooks/gemini_before_tool_write_file.json"
        ))
        .unwrap();
        let jobs = "/home/dev/proj/src/main/kotlin/com/acme/Jobs.kt";
        assert_eq!(
            files(check_on(event, &[])),
            [image(jobs, "package com.acme\n", &[[1, 1]])]
        );
    }

    #[test]
    fn files_beyond_the_request_budget_are_let_through() {
        let big = "\"".repeat(MAX_CONTENTS_BYTES / 2);
        let write = claude("Write", json!({"file_path": "/w/Big.kt", "content": big}));
        assert_eq!(check_on(write, &[]), None);
    }

    #[test]
    fn the_check_sends_contents_and_written_for_each_file() {
        let check = EditCheck {
            session_id: "s".into(),
            cwd: None,
            files: vec![image("/w/a.kt", "x\n", &[[1, 1]])],
        };
        assert_eq!(
            check.call(900).envelope(3),
            r#"{"jsonrpc":"2.0","id":3,"method":"checkEdit","params":{"sessionId":"s","filepaths":["/w/a.kt"],"deadlineMs":900,"written":{"/w/a.kt":[[1,1]]},"contents":{"/w/a.kt":"x\n"}}}"#
        );
    }

    #[test]
    fn the_deny_reason_names_the_guideline_its_content_and_the_line() {
        let result = json!({"blocked": [{"path": "/w/src/Db.kt", "id": "no-plaintext-password",
            "content": "Never store a password in plain text.\n", "line": 12,
            "text": "val password = \"hunter2\""}]});
        assert_eq!(
            deny_reason(&result, Some("/w")).unwrap(),
            "Adaptive Guidebook blocked this edit (nothing was written): `src/Db.kt` line 12 breaks [no-plaintext-password]: Never store a password in plain text.\n  > val password = \"hunter2\"\nChange the edit so the line no longer matches, or add `guidebook:allow no-plaintext-password` with a reason on or above the line."
        );
        let two = json!({"blocked": [
            {"path": "/x/A.kt", "id": "a", "content": "A.", "line": 1, "text": "a1"},
            {"path": "/x/A.kt", "id": "a", "content": "A.", "line": 4, "text": "a4"},
            {"path": "/x/B.kt", "id": "b", "content": "B.", "line": null, "text": null}]});
        assert_eq!(
            deny_reason(&two, Some("/w")).unwrap(),
            "Adaptive Guidebook blocked this edit (nothing was written): `/x/A.kt` line 1 breaks [a]: A.\n  > a1\n `/x/A.kt` line 4 breaks [a] (above)\n  > a4\n `/x/B.kt` breaks [b]: B.\nChange the edit so no line matches any more, or add `guidebook:allow a,b` with a reason on or above each such line."
        );
        assert_eq!(deny_reason(&json!({"blocked": []}), None), None);
        assert_eq!(deny_reason(&json!([]), None), None);
    }

    fn link(answer: Result<&str, ()>) -> Scripted {
        Scripted::always(answer, 700)
    }

    const BLOCKED: &str =
        r#"{"blocked":[{"path":"/w/a.kt","id":"g","content":"G.","line":1,"text":"x"}]}"#;

    #[test]
    fn one_round_trip_asks_the_gate_and_the_check_and_a_halt_wins() {
        let check = EditCheck {
            session_id: "s".into(),
            cwd: Some("/w".into()),
            files: vec![image("/w/a.kt", "x\n", &[[1, 1]])],
        };
        let gate = BreakerAction::Gate {
            session_id: "s".into(),
        };
        let halted = format!(
            r#"[{{"jsonrpc":"2.0","id":1,"result":true}},{{"jsonrpc":"2.0","id":2,"result":{{"state":"halt","reason":"Stop."}}}},{{"jsonrpc":"2.0","id":3,"result":{BLOCKED}}}]"#
        );
        let mut sidecar = link(Ok(&halted));
        assert_eq!(
            ask(&check, Some(&gate), &mut sidecar),
            BreakerVerdict::Deny("Stop.".into())
        );
        let [(body, may_start)] = &sidecar.asked[..] else {
            panic!("one exchange: {:?}", sidecar.asked);
        };
        assert!(may_start, "the check may start the sidecar");
        let calls: Value = serde_json::from_str(body).unwrap();
        let methods: Vec<&str> = calls
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["method"].as_str().unwrap())
            .collect();
        assert_eq!(methods, ["isEnabled", "breakerStatus", "checkEdit"]);
        assert_eq!(calls[2]["params"]["deadlineMs"], 700);

        let flag_off = format!(
            r#"[{{"jsonrpc":"2.0","id":1,"result":false}},{{"jsonrpc":"2.0","id":2,"result":{{"state":"halt"}}}},{{"jsonrpc":"2.0","id":3,"result":{BLOCKED}}}]"#
        );
        let BreakerVerdict::Deny(reason) = ask(&check, Some(&gate), &mut link(Ok(&flag_off)))
        else {
            panic!("not denied");
        };
        assert!(reason.contains("`a.kt` line 1 breaks [g]: G."), "{reason}");
        // Alone, the check is the batch's only call.
        let alone = format!(r#"[{{"jsonrpc":"2.0","id":1,"result":{BLOCKED}}}]"#);
        assert!(matches!(
            ask(&check, None, &mut link(Ok(&alone))),
            BreakerVerdict::Deny(_)
        ));
    }

    #[test]
    fn every_failure_of_the_check_lets_the_edit_through() {
        let check = EditCheck {
            session_id: "s".into(),
            cwd: None,
            files: vec![image("/w/a.kt", "x\n", &[[1, 1]])],
        };
        assert_eq!(
            ask(&check, None, &mut link(Err(()))),
            BreakerVerdict::Nothing
        );
        let mut refusing = link(Ok(
            r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"deadline exceeded"}}]"#,
        ));
        assert_eq!(ask(&check, None, &mut refusing), BreakerVerdict::Nothing);
        assert_eq!(refusing.reports.len(), 1, "{:?}", refusing.reports);
        assert_eq!(
            ask(&check, None, &mut link(Ok("<html>"))),
            BreakerVerdict::Nothing
        );
        let clean = r#"[{"jsonrpc":"2.0","id":1,"result":{"blocked":[]}}]"#;
        assert_eq!(
            ask(&check, None, &mut link(Ok(clean))),
            BreakerVerdict::Nothing
        );
    }
}
