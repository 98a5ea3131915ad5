//! Our Gemini CLI policy file: deny rules for the `guidebook` control commands.
//!
//! Gemini CLI (0.61) runs the `!{…}` lines of a custom command (a repository's own
//! `.gemini/commands/*.toml` among them) through its policy engine and no hook, so the shim's
//! guard never sees them; a policy rule does, and it holds for the agent's own
//! `run_shell_command` too, before `BeforeTool` runs. `hooks install --gemini` writes it to
//! `~/.gemini/policies/` (a project's `.gemini/policies/` with `--project`) and the extension
//! ships the same text in `policies/`. Prefix rules, each part of a compound command judged
//! (Gemini CLI splits them): a tripwire, as the guard is.

use super::json_tree::EditError;
use super::marked::Marked;

/// The file's name in a `policies/` directory.
pub const FILE_NAME: &str = "adaptive-guidebook.toml";

/// The first line of the file we write; a file without it is not ours.
const MARKER: &str =
    "# adaptive-guidebook: written by `guidebook hooks install --gemini`; edits are replaced.";

/// How a rule names the commands it denies: Gemini CLI's `commandPrefix` (a whole word), or a
/// `commandRegex` matched from the start of the command.
enum Matches {
    Prefix(&'static str),
    Regex(&'static str),
}

/// Each control command the guard denies, and what it would do. Extensions may not contribute
/// allow rules (Gemini CLI ignores them with a warning), so the readers `guidebook trust
/// --list` and `--dry-run` are left out of the deny by its pattern instead.
const DENIED: &[(Matches, &str)] = &[
    (
        Matches::Prefix("guidebook breaker reset"),
        "reset the circuit breaker (`guidebook breaker reset`)",
    ),
    (
        Matches::Prefix("guidebook flags set"),
        "change a feature flag (`guidebook flags set`)",
    ),
    (
        Matches::Prefix("guidebook flags init"),
        "rewrite the feature flags file (`guidebook flags init`)",
    ),
    (
        Matches::Prefix("guidebook hooks install"),
        "change the agents' hooks (`guidebook hooks install`)",
    ),
    (
        Matches::Prefix("guidebook hooks uninstall"),
        "change the agents' hooks (`guidebook hooks uninstall`)",
    ),
    (
        Matches::Prefix("guidebook service install"),
        "change how the sidecar runs (`guidebook service install`)",
    ),
    (
        Matches::Prefix("guidebook service uninstall"),
        "change how the sidecar runs (`guidebook service uninstall`)",
    ),
    (
        Matches::Prefix("guidebook mcp --orchestrator"),
        "record orchestrator metrics (`guidebook mcp --orchestrator`)",
    ),
    // The command's end (`"` in the JSON it is matched in), or a space not before a reader's
    // option.
    (
        Matches::Regex(r#"guidebook trust(?:"|\\"|\s(?!--list|--dry-run))"#),
        "trust a repository's rule files (`guidebook trust`): only the user may",
    ),
    (
        Matches::Prefix("guidebook untrust"),
        "change which repositories are trusted (`guidebook untrust`)",
    ),
];

/// Our policy file, known by its first line.
const OURS: Marked = Marked {
    marker: MARKER,
    what: "policy file",
    flag: "--gemini",
};

/// The whole file.
pub fn text() -> String {
    let quoted = |s: &str| serde_json::Value::from(s).to_string();
    let mut out = format!(
        "{MARKER}\n# Adaptive Guidebook: the guidebook's control commands are the user's to run, never the\n\
         # agent's; these rules also hold for a custom command's !{{…}} lines, which no hook sees.\n"
    );
    for (matches, what) in DENIED {
        let matches = match matches {
            Matches::Prefix(prefix) => format!("commandPrefix = {}", quoted(prefix)),
            Matches::Regex(regex) => format!("commandRegex = {}", quoted(regex)),
        };
        out.push_str(&format!(
            "\n[[rule]]\ntoolName = \"run_shell_command\"\n{matches}\ndecision = \"deny\"\npriority = 999\ndenyMessage = {}\n",
            quoted(&guidebook_hook::guard::reason(what))
        ));
    }
    out
}

/// `text` (the file as it is, empty when there is none) with our policy written whole.
pub fn install(text: &str) -> Result<String, EditError> {
    OURS.refuse_unless_ours(text)?;
    Ok(self::text())
}

/// `text` without our policy: empty (the file is removed) when it is ours.
pub fn uninstall(text: &str) -> String {
    OURS.uninstall(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_ours_whole_and_never_someone_elses() {
        let ours = install("").unwrap();
        assert!(OURS.is_ours(&ours));
        assert_eq!(install(&ours).unwrap(), ours);
        assert_eq!(ours.matches("[[rule]]").count(), DENIED.len());
        assert!(
            !ours.contains("\"allow\""),
            "an extension may not contribute allow rules"
        );
        assert!(ours
            .contains("denyMessage = \"Adaptive Guidebook: this would reset the circuit breaker"));
        let theirs = "[[rule]]\ntoolName = \"x\"\ndecision = \"deny\"\npriority = 1\n";
        assert!(install(theirs).is_err());
        assert_eq!(uninstall(theirs), theirs);
        assert_eq!(uninstall(&ours), "");
    }
}
