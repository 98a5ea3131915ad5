//! Where guidelines come from besides the guidebook root: team guidebooks fetched from git, and
//! a trusted repository's own rules (its `.guidebook/` and the agents' rule files), read safely,
//! mapped onto guidelines, and served only while they are what the user trusted.
//!
//! - [`team`]: a team guidebook kept in git, fetched into `HOME_DIR/sources/<name>` and
//!   refreshed in the background with last-good semantics.
//! - [`discover`]: the rule files a repository holds, from a fixed list of names and places.
//! - [`read`]: reads beneath a repository's root only: no symlinks, regular files, capped.
//! - [`trust`]: `trust.json`, which repositories (canonical root) and file hashes the user
//!   trusted.
//! - [`visible`]: rule text with invisible and bidi characters made visible for review.
//! - [`native`]: the agents' rule formats (AGENTS.md, Cursor, Claude, Copilot, Continue)
//!   mapped onto `scope.paths` and `match`.
//! - [`export`], [`import`]: the guidebook written in those formats, and read back from them.
//! - [`watch`]: file-system notifications for every source, with a slow poll as fallback.
//! - [`repository`]: a trusted repository's rules as guidelines of their own namespace.

use std::path::Path;

pub(crate) mod discover;
pub(crate) mod export;
pub(crate) mod import;
pub(crate) mod native;
pub(crate) mod read;
pub(crate) mod repository;
pub(crate) mod team;
pub(crate) mod trust;
pub(crate) mod visible;
pub(crate) mod watch;

/// The guidebook as the sidecar serves it, loaded in this process: the root (without the parse
/// cache), each team guidebook's last fetched checkout, and every trusted repository's rules.
pub fn load_guidebook(settings: &crate::config::Settings) -> crate::guidebook::Guidebook {
    let guidebook = crate::guidebook::Guidebook::new(settings.guidebook_root.clone())
        .with_teams(team::checkouts(settings));
    guidebook.reload();
    repository::RepositorySources::of(settings).reload_all(&guidebook);
    guidebook
}

/// The kinds of rule file a repository may hold.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum RuleFormat {
    /// `.guidebook/**/guideline.yaml`: our own format.
    Guidebook,
    /// `AGENTS.md` (nested: scoped to its directory).
    AgentsMd,
    /// `CLAUDE.md` (nested: scoped to its directory).
    ClaudeMd,
    /// `.cursor/rules/**/*.mdc` (`globs`, `alwaysApply`, `description`).
    Cursor,
    /// `.claude/rules/**/*.md` (`paths:`).
    ClaudeRules,
    /// `.github/instructions/**/*.instructions.md` (`applyTo`).
    Copilot,
    /// `.continue/rules/**/*.md` (`globs`, `regex`, `alwaysApply`).
    Continue,
}

impl RuleFormat {
    /// Its key under `repositoryRules:` in `config.yaml`.
    pub fn config_key(self) -> &'static str {
        match self {
            RuleFormat::Guidebook => "guidebook",
            RuleFormat::AgentsMd => "agentsMd",
            RuleFormat::ClaudeMd => "claudeMd",
            RuleFormat::Cursor => "cursor",
            RuleFormat::ClaudeRules => "claudeRules",
            RuleFormat::Copilot => "copilot",
            RuleFormat::Continue => "continue",
        }
    }

    /// Whether `config.yaml` leaves this format on.
    pub fn enabled(self, rules: &crate::config::RepositoryRules) -> bool {
        match self {
            RuleFormat::Guidebook => rules.guidebook,
            RuleFormat::AgentsMd => rules.agents_md,
            RuleFormat::ClaudeMd => rules.claude_md,
            RuleFormat::Cursor => rules.cursor,
            RuleFormat::ClaudeRules => rules.claude_rules,
            RuleFormat::Copilot => rules.copilot,
            RuleFormat::Continue => rules.r#continue,
        }
    }

    /// The format of the file at `relative` (a path relative to the repository root, `/`
    /// separated, no `..`), if it is a rule file at all. Root `AGENTS.md`/`CLAUDE.md` count
    /// here; whether they are read is [`crate::config::RepositoryRules::root_files`]'s call.
    pub fn of(relative: &Path) -> Option<RuleFormat> {
        let parts: Vec<&str> = relative.iter().filter_map(|c| c.to_str()).collect();
        if parts.len() != relative.iter().count() || parts.is_empty() {
            return None;
        }
        let name = *parts.last()?;
        let under = |prefix: &[&str]| parts.len() > prefix.len() && parts.starts_with(prefix);
        if under(&[".guidebook"]) {
            return (name == "guideline.yaml").then_some(RuleFormat::Guidebook);
        }
        if under(&[".cursor", "rules"]) {
            return name.ends_with(".mdc").then_some(RuleFormat::Cursor);
        }
        if under(&[".claude", "rules"]) {
            return name.ends_with(".md").then_some(RuleFormat::ClaudeRules);
        }
        if under(&[".github", "instructions"]) {
            return name
                .ends_with(".instructions.md")
                .then_some(RuleFormat::Copilot);
        }
        if under(&[".continue", "rules"]) {
            return name.ends_with(".md").then_some(RuleFormat::Continue);
        }
        match name {
            "AGENTS.md" => Some(RuleFormat::AgentsMd),
            "CLAUDE.md" => Some(RuleFormat::ClaudeMd),
            _ => None,
        }
    }
}

/// A native rule file mapped onto guideline terms ([`native::parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedRule {
    /// `scope.paths` globs (gitignore style, relative to the repository root, `!` excludes);
    /// `None`: the whole repository.
    pub paths: Option<Vec<String>>,
    /// Regexes over the file's content (Continue's `regex`): the rule applies when any matches;
    /// empty: whenever a file in scope changes.
    pub regexes: Vec<String>,
    /// The text shown to the agent: the body, front matter removed, trimmed.
    pub content: String,
    /// The 1-based line of the file where `content` starts.
    pub content_line: usize,
}

/// What a native rule file comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    Rule(MappedRule),
    /// A rule that cannot be applied at the moment of an edit (say, a Cursor rule the model
    /// requests by its description): why, for `status`, `doctor` and `trust` to show.
    NotMapped(String),
}

/// A rule file that cannot be read as its format: where (1-based, when known) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_place_and_name() {
        let of = |p: &str| RuleFormat::of(Path::new(p));
        assert_eq!(
            of(".guidebook/a/guideline.yaml"),
            Some(RuleFormat::Guidebook)
        );
        assert_eq!(of(".guidebook/README.md"), None);
        assert_eq!(of(".cursor/rules/x.mdc"), Some(RuleFormat::Cursor));
        assert_eq!(of(".cursor/rules/sub/x.mdc"), Some(RuleFormat::Cursor));
        assert_eq!(of(".cursor/x.mdc"), None);
        assert_eq!(of(".claude/rules/api.md"), Some(RuleFormat::ClaudeRules));
        assert_eq!(
            of(".github/instructions/a.instructions.md"),
            Some(RuleFormat::Copilot)
        );
        assert_eq!(of(".github/instructions/a.md"), None);
        assert_eq!(of(".continue/rules/r.md"), Some(RuleFormat::Continue));
        assert_eq!(of("AGENTS.md"), Some(RuleFormat::AgentsMd));
        assert_eq!(of("src/api/AGENTS.md"), Some(RuleFormat::AgentsMd));
        assert_eq!(of("src/CLAUDE.md"), Some(RuleFormat::ClaudeMd));
        assert_eq!(of("src/agents.md"), None);
        assert_eq!(of("src/main.rs"), None);
    }
}
