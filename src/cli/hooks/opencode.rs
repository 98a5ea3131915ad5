//! Our OpenCode plugin: a small JavaScript module, wholly ours, that runs the hook command.
//! Pure: text in, text out.
//!
//! OpenCode (1.18.x) has no command hooks; it loads every `*.js` in `plugin/` of its config
//! directories (`~/.config/opencode/plugin/`, a project's `.opencode/plugin/`) as a plugin.
//! Ours hooks `tool.execute.before` and `tool.execute.after` of `write`, `edit`, `apply_patch`
//! and `bash`, and the `session.compacted` event; for each it runs the hook command with one
//! event on stdin (the shape the shim's OpenCode reader takes) and acts on its answer: a
//! `decision: deny` is thrown from `tool.execute.before` (OpenCode gives the model the error's
//! message as the tool's result, and the call does not run), an `additionalContext` (or a
//! halt's `stopReason`) is appended to the tool's output, which is what the model reads next.
//! A command that fails, is slow or prints nothing changes nothing.
//!
//! The file is ours when it starts with [`MARKER`]: install writes it whole (again: replaces
//! it), uninstall removes it; a file of that name without the marker is someone else's and is
//! never touched.

use super::json_tree::EditError;
use super::marked::Marked;

/// The first line of our plugin: what makes the file ours.
pub const MARKER: &str =
    "// adaptive-guidebook: written by `guidebook hooks install --opencode`; edits are replaced.";

/// The plugin's file name, in OpenCode's `plugin/` directory.
pub const FILE_NAME: &str = "adaptive-guidebook.js";

/// Our plugin, known by its first line.
pub const OURS: Marked = Marked {
    marker: MARKER,
    what: "plugin",
    flag: "--opencode",
};

/// Whether `text` is our plugin.
pub fn is_ours(text: &str) -> bool {
    OURS.is_ours(text)
}

/// The command the plugin in `text` runs, when it is ours.
pub fn command_of(text: &str) -> Option<String> {
    if !is_ours(text) {
        return None;
    }
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("const COMMAND = "))?;
    serde_json::from_str(line.strip_suffix(';')?).ok()
}

/// The plugin that runs `command` (through `/bin/sh -c`, as the other hosts run theirs) and
/// gives it `timeout_ms` to answer; refused if `text`, the file as it is, is not ours.
pub fn install(text: &str, command: &str, timeout_ms: u32) -> Result<String, EditError> {
    OURS.refuse_unless_ours(text)?;
    let command = serde_json::Value::from(command);
    Ok(format!(
        "{MARKER}
// Adaptive Guidebook for OpenCode: every write, edit, apply_patch and bash call goes to the
// hook command below as one JSON event on stdin; guidelines it answers are appended to the
// tool's output (the model reads them next), and a deny is thrown before the call runs.
// `guidebook hooks uninstall --opencode` removes this file.
import {{ spawn }} from \"node:child_process\";

const COMMAND = {command};
const TIMEOUT_MS = {timeout_ms};
const TOOLS = new Set([\"write\", \"edit\", \"apply_patch\", \"bash\"]);

function ask(event) {{
  return new Promise((resolve) => {{
    let out = \"\";
    let child;
    try {{
      child = spawn(\"/bin/sh\", [\"-c\", COMMAND], {{ stdio: [\"pipe\", \"pipe\", \"ignore\"] }});
    }} catch {{
      resolve(null);
      return;
    }}
    const timer = setTimeout(() => child.kill(\"SIGKILL\"), TIMEOUT_MS);
    child.stdout.setEncoding(\"utf8\");
    child.stdout.on(\"data\", (chunk) => {{
      out += chunk;
    }});
    child.on(\"error\", () => {{
      clearTimeout(timer);
      resolve(null);
    }});
    child.on(\"close\", () => {{
      clearTimeout(timer);
      try {{
        resolve(out.trim() ? JSON.parse(out) : null);
      }} catch {{
        resolve(null);
      }}
    }});
    child.stdin.on(\"error\", () => {{}});
    child.stdin.end(JSON.stringify(event));
  }});
}}

export const AdaptiveGuidebook = async ({{ directory }}) => ({{
  \"tool.execute.before\": async (input, output) => {{
    if (!TOOLS.has(input.tool)) return;
    const answer = await ask({{
      hook_event_name: \"tool.execute.before\",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: output.args,
    }});
    if (answer && answer.decision === \"deny\") throw new Error(String(answer.reason));
  }},
  \"tool.execute.after\": async (input, output) => {{
    if (!TOOLS.has(input.tool)) return;
    const answer = await ask({{
      hook_event_name: \"tool.execute.after\",
      session_id: input.sessionID,
      cwd: directory,
      tool_name: input.tool,
      tool_input: input.args,
      tool_response: {{ output: output.output, metadata: output.metadata }},
    }});
    const text = answer && (answer.additionalContext ?? (answer.continue === false ? answer.stopReason : undefined));
    if (typeof text === \"string\" && text) output.output = `${{output.output ?? \"\"}}\\n\\n${{text}}`;
  }},
  event: async ({{ event }}) => {{
    const session = event && event.properties && event.properties.sessionID;
    if (event.type === \"session.compacted\" && session) {{
      await ask({{ hook_event_name: \"session.compacted\", session_id: session, cwd: directory }});
    }}
  }},
}});
"
    ))
}

/// The file with our plugin removed: empty when it was ours, as it is otherwise.
pub fn uninstall(text: &str) -> String {
    OURS.uninstall(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_ours_by_its_first_line_and_carries_the_command() {
        let command = "'/opt/a b/guidebook-hook' --socket \"/s\"";
        let plugin = install("", command, 5000).unwrap();
        assert!(is_ours(&plugin));
        assert_eq!(command_of(&plugin).as_deref(), Some(command));
        assert!(plugin.contains("const TIMEOUT_MS = 5000;"));
        // Again: replaced whole, the same text.
        assert_eq!(install(&plugin, command, 5000).unwrap(), plugin);
        assert_eq!(uninstall(&plugin), "");
    }

    #[test]
    fn a_file_of_someone_elses_is_refused_and_kept() {
        let theirs = "export const Mine = async () => ({});\n";
        let err = install(theirs, "guidebook-hook", 5000).unwrap_err();
        assert!(err.to_string().contains("leaves it alone"), "{err}");
        assert_eq!(uninstall(theirs), theirs);
        assert_eq!(command_of(theirs), None);
    }
}
