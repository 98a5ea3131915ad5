//! Hook events the tests send: fixtures with their session and cwd replaced, `apply_patch`
//! patches and Codex's answers to them.

use super::*;

/// A hook fixture with `session_id` and `cwd` replaced, keeping everything else as the host
/// sends it.
pub fn hook_event(fixture_name: &str, session: &str, cwd: &Path) -> Value {
    let mut event = fixture(&format!("hooks/{fixture_name}"));
    event["session_id"] = json!(session);
    event["cwd"] = json!(cwd.display().to_string());
    event
}

/// An `apply_patch` patch that adds each `(relative path, content)` file.
pub fn add_file_patch(files: &[(&str, &str)]) -> String {
    let mut patch = String::from("*** Begin Patch\n");
    for (path, content) in files {
        patch.push_str(&format!("*** Add File: {path}\n"));
        for line in content.lines() {
            patch.push_str(&format!("+{line}\n"));
        }
    }
    patch.push_str("*** End Patch\n");
    patch
}

/// Codex's `tool_response` for a successful `apply_patch`, in today's `Exit code:` form.
pub fn apply_patch_response(summary: &[&str]) -> String {
    let mut out = String::from(
        "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n",
    );
    for line in summary {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Codex's `PostToolUse` of an `apply_patch` whose `patch` updates files in `cwd`, answered
/// with Codex's success summary naming `modified` (`M path`).
pub fn codex_patch_event(session: &str, cwd: &Path, patch: &str, modified: &[&str]) -> Value {
    let summary: Vec<String> = modified.iter().map(|rel| format!("M {rel}")).collect();
    let summary: Vec<&str> = summary.iter().map(String::as_str).collect();
    json!({"session_id": session, "turn_id": "t-1", "cwd": cwd.display().to_string(),
        "hook_event_name": "PostToolUse", "tool_name": "apply_patch",
        "tool_input": {"command": patch}, "tool_response": apply_patch_response(&summary)})
}

/// Claude Code 2.1's `PostToolUse` of an `Edit` of `file` that replaced line `line` (1-based)
/// of `before` with `new_line`, with the `structuredPatch` hunk Claude Code reports (the line
/// and up to three of context on each side).
pub fn claude_edit_event(
    session: &str,
    file: &Path,
    before: &str,
    line: usize,
    new_line: &str,
) -> Value {
    let lines: Vec<&str> = before.lines().collect();
    let (from, to) = (line.saturating_sub(4), (line + 3).min(lines.len()));
    let mut hunk: Vec<String> = Vec::new();
    for (i, text) in lines.iter().enumerate().take(to).skip(from) {
        if i + 1 == line {
            hunk.push(format!("-{text}"));
            hunk.push(format!("+{new_line}"));
        } else {
            hunk.push(format!(" {text}"));
        }
    }
    let old_line = lines[line - 1];
    json!({"session_id": session, "cwd": file.parent().unwrap().display().to_string(),
        "hook_event_name": "PostToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": file.display().to_string(), "old_string": old_line,
            "new_string": new_line, "replace_all": false},
        "tool_response": {"filePath": file.display().to_string(), "oldString": old_line,
            "newString": new_line, "originalFile": before, "userModified": false, "replaceAll": false,
            "structuredPatch": [{"oldStart": from + 1, "oldLines": to - from,
                "newStart": from + 1, "newLines": to - from, "lines": hunk}]}})
}

/// Gemini CLI 0.61's `AfterTool` of a `replace` in `file` with `returnDisplay.fileDiff` (a
/// unified diff as its jsdiff `createPatch` writes it) replacing line `line` with `new_line`.
pub fn gemini_replace_event(
    session: &str,
    file: &Path,
    before: &str,
    line: usize,
    new_line: &str,
) -> Value {
    let lines: Vec<&str> = before.lines().collect();
    let (from, to) = (line.saturating_sub(4), (line + 3).min(lines.len()));
    let name = file.file_name().unwrap().to_string_lossy();
    let mut diff = format!(
        "Index: {name}\n===================================================================\n--- {name}\tCurrent\n+++ {name}\tProposed\n@@ -{},{} +{},{} @@\n",
        from + 1,
        to - from,
        from + 1,
        to - from
    );
    for (i, text) in lines.iter().enumerate().take(to).skip(from) {
        if i + 1 == line {
            diff.push_str(&format!("-{text}\n+{new_line}\n"));
        } else {
            diff.push_str(&format!(" {text}\n"));
        }
    }
    json!({"session_id": session, "cwd": file.parent().unwrap().display().to_string(),
        "hook_event_name": "AfterTool", "tool_name": "replace",
        "tool_input": {"file_path": file.display().to_string(), "old_string": lines[line - 1],
            "new_string": new_line, "instruction": "edit"},
        "tool_response": {"llmContent": "Successfully modified file", "returnDisplay":
            {"fileDiff": diff, "fileName": name, "filePath": file.display().to_string(),
             "originalContent": before, "isNewFile": false}}})
}

/// The `in: changes` guideline the written-lines tests serve: `Thread.sleep(` in Kotlin, only
/// where an edit wrote it.
pub const SLEEP_IN_CHANGES: &str = "id: no-thread-sleep\nscope: {languages: [kotlin]}\n\
    match:\n  in: changes\n  any:\n    - regex: {pattern: 'Thread\\.sleep\\('}\n\
    content: Use delay() in coroutines, not Thread.sleep().\n";

/// Twelve lines of Kotlin (`val xN = N`) with `Thread.sleep(` on line 3 only.
pub fn sleepy_jobs() -> String {
    let mut lines: Vec<String> = (1..=12).map(|i| format!("val x{i} = {i}")).collect();
    lines[2] = "fun wait() = Thread.sleep(100)".into();
    lines.join("\n") + "\n"
}

/// A sidecar serving [`SLEEP_IN_CHANGES`], a repository (`acme/jobs`, one commit) whose
/// `src/Jobs.kt` is [`sleepy_jobs`] and not committed (so that with no written lines sent the
/// sidecar counts every line of it as written, and `Thread.sleep(` on line 3 would match), and
/// an empty home for an agent's user. Keep `dir` bound: dropping it deletes them all.
pub struct SleepyScene {
    pub dir: TempDir,
    pub sidecar: Sidecar,
    pub repo: PathBuf,
    pub jobs: PathBuf,
    pub home: PathBuf,
}

impl SleepyScene {
    pub fn new() -> SleepyScene {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("guidebook");
        write_guideline(&root, "no-thread-sleep", SLEEP_IN_CHANGES);
        let sidecar = Sidecar::start(&root);
        let repo = dir.path().join("jobs");
        git_repo(&repo, Some("git@github.com:acme/jobs.git"));
        write_file(&repo, "README.md", "jobs\n");
        git_commit_all(&repo, "init");
        let jobs = write_file(&repo, "src/Jobs.kt", &sleepy_jobs());
        let home = dir.path().join("user");
        std::fs::create_dir_all(&home).unwrap();
        SleepyScene {
            dir,
            sidecar,
            repo,
            jobs,
            home,
        }
    }
}
