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
