//! `guidebook import`: native rule files turned into guideline.yaml files.
//!
//! [`plan`] lists a repository's rule files of every native format (the root's `AGENTS.md` and
//! `CLAUDE.md` too; `.guidebook/` guidelines are guidelines already and left alone) with
//! [`crate::sources::discover::rule_files`], reads each with
//! [`crate::sources::read::read_text_beneath`] (no symlink followed, regular files only, at most
//! [`MAX_FILE_BYTES`]), maps it with [`crate::sources::native::parse`] and writes it as a
//! guideline: the id a kebab-case slug of the file's path, `scope.paths` from the mapping,
//! `match: {any: [regex, …]}` only for content regexes (no regex, no `match`: every change of
//! a file in scope), the rule's text as `content`. Each written file is checked by the
//! guideline loader first. [`write`] refuses, before writing anything, a guideline directory
//! that exists or an id the guidebook already has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::native::parse;
use super::{Mapping, RuleFormat};
use crate::config::RepositoryRules;
use crate::guidebook::{parse_guideline, GUIDELINE_FILE_NAME};

/// A rule file larger than this is not imported (it is reported).
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;

/// One rule file turned into a guideline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Imported {
    pub(crate) relative: PathBuf,
    pub(crate) format: RuleFormat,
    pub(crate) id: String,
    /// The guideline's directory, under the output directory.
    pub(crate) dir: PathBuf,
    pub(crate) yaml: String,
}

/// What one import would write, and every file it leaves out and why.
#[derive(Debug, Default)]
pub(crate) struct ImportPlan {
    pub(crate) imported: Vec<Imported>,
    /// Rules that cannot be applied at an edit: the file and why.
    pub(crate) not_mapped: Vec<(PathBuf, String)>,
    /// Files not read: symlinks, FIFOs, too large, not UTF-8, over the walk's caps.
    pub(crate) skipped: Vec<(PathBuf, String)>,
    /// Files that do not read as their format: `path:line:column: message`.
    pub(crate) errors: Vec<String>,
}

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImportError {
    #[error("{} rule file(s) do not read as their format, nothing was written:\n  {}", .0.len(), .0.join("\n  "))]
    Broken(Vec<String>),
    #[error("{} guideline(s) in the way, nothing was written:\n  {}", .0.len(), .0.join("\n  "))]
    InTheWay(Vec<String>),
    #[error("writing {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What importing `repo` (its root) into `out` would do; `limits` gives the walk's caps
/// (`maxFiles`), every format is read whatever `config.yaml` turns off.
pub(crate) fn plan(repo: &Path, out: &Path, limits: &RepositoryRules) -> ImportPlan {
    let every = RepositoryRules {
        guidebook: false,
        agents_md: true,
        claude_md: true,
        root_files: true,
        cursor: true,
        claude_rules: true,
        copilot: true,
        r#continue: true,
        ..limits.clone()
    };
    let discovery = super::discover::rule_files(repo, &every);
    let mut plan = ImportPlan {
        skipped: discovery.skipped,
        ..ImportPlan::default()
    };
    let mut used = BTreeSet::new();
    for file in discovery.files {
        let relative = file.relative;
        let text = match super::read::read_text_beneath(repo, &relative, MAX_FILE_BYTES) {
            Ok(text) => text,
            Err(why) => {
                plan.skipped.push((relative, why.to_string()));
                continue;
            }
        };
        let rule = match parse(file.format, &relative, &text) {
            Ok(Mapping::Rule(rule)) => rule,
            Ok(Mapping::NotMapped(why)) => {
                plan.not_mapped.push((relative, why));
                continue;
            }
            Err(e) => {
                plan.errors
                    .push(located(&relative, e.line, e.column, &e.message));
                continue;
            }
        };
        let id = unique(slug(&relative), &mut used);
        let yaml = guideline_yaml(&id, &relative, file.format, &rule);
        let dir = out.join(&id);
        // Held to the loader: what import writes always loads.
        if let Err(e) = parse_guideline(&dir.join(GUIDELINE_FILE_NAME), &yaml) {
            plan.errors.push(located(
                &relative,
                None,
                None,
                &format!("the guideline it maps to does not load: {}", e.message),
            ));
            continue;
        }
        plan.imported.push(Imported {
            relative,
            format: file.format,
            id,
            dir,
            yaml,
        });
    }
    plan
}

fn located(path: &Path, line: Option<usize>, column: Option<usize>, message: &str) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{}:{l}:{c}: {message}", path.display()),
        (Some(l), None) => format!("{}:{l}: {message}", path.display()),
        _ => format!("{}: {message}", path.display()),
    }
}

/// Writes the plan's guidelines: refuses (writing nothing) when any file is broken, a
/// directory exists, or an id is one the guidebook has (`taken`: id and where).
pub(crate) fn write(
    plan: &ImportPlan,
    taken: &[(String, PathBuf)],
) -> Result<Vec<PathBuf>, ImportError> {
    if !plan.errors.is_empty() {
        return Err(ImportError::Broken(plan.errors.clone()));
    }
    let mut in_the_way = Vec::new();
    for i in &plan.imported {
        if std::fs::symlink_metadata(&i.dir).is_ok() {
            in_the_way.push(format!(
                "{} (from {}) exists",
                i.dir.display(),
                i.relative.display()
            ));
        } else if let Some((_, at)) = taken.iter().find(|(id, _)| *id == i.id) {
            in_the_way.push(format!(
                "the id `{}` (from {}) is already used by {}",
                i.id,
                i.relative.display(),
                at.display()
            ));
        }
    }
    if !in_the_way.is_empty() {
        return Err(ImportError::InTheWay(in_the_way));
    }
    let mut written = Vec::new();
    for i in &plan.imported {
        let path = i.dir.join(GUIDELINE_FILE_NAME);
        let io = |source| ImportError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&i.dir).map_err(io)?;
        std::fs::write(&path, &i.yaml).map_err(io)?;
        written.push(path);
    }
    Ok(written)
}

/// A kebab-case id from a rule file's path: `.cursor/rules/api.mdc` → `cursor-rules-api`,
/// `src/AGENTS.md` → `src-agents`.
pub(crate) fn slug(relative: &Path) -> String {
    let text = relative.to_string_lossy();
    let text = [".instructions.md", ".mdc", ".md"]
        .iter()
        .find_map(|s| text.strip_suffix(s))
        .unwrap_or(&text)
        .to_ascii_lowercase();
    let mut slug = String::new();
    for c in text.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut slug: String = slug.trim_matches('-').chars().take(120).collect();
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        slug.push_str("rule");
    }
    slug
}

/// `slug`, or `slug-2`, `slug-3`, … when this import used it already.
fn unique(slug: String, used: &mut BTreeSet<String>) -> String {
    let mut id = slug.clone();
    let mut n = 2;
    while used.contains(&id) {
        id = format!("{slug}-{n}");
        n += 1;
    }
    used.insert(id.clone());
    id
}

#[derive(Serialize)]
struct Out<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<OutScope<'a>>,
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    matcher: Option<OutMatch<'a>>,
    content: &'a str,
}

#[derive(Serialize)]
struct OutScope<'a> {
    paths: &'a [String],
}

#[derive(Serialize)]
struct OutMatch<'a> {
    any: Vec<OutLeaf<'a>>,
}

#[derive(Serialize)]
struct OutLeaf<'a> {
    regex: OutRegex<'a>,
}

#[derive(Serialize)]
struct OutRegex<'a> {
    pattern: &'a str,
}

/// The guideline.yaml of one mapped rule, with a comment naming where it came from.
fn guideline_yaml(
    id: &str,
    relative: &Path,
    format: RuleFormat,
    rule: &super::MappedRule,
) -> String {
    let out = Out {
        id,
        scope: rule.paths.as_deref().map(|paths| OutScope { paths }),
        matcher: (!rule.regexes.is_empty()).then(|| OutMatch {
            any: rule
                .regexes
                .iter()
                .map(|pattern| OutLeaf {
                    regex: OutRegex { pattern },
                })
                .collect(),
        }),
        content: &rule.content,
    };
    let format_name = serde_json::to_value(format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!(
        "# Imported by `guidebook import` from {} ({format_name}, line {}).\n{}",
        relative.display().to_string().replace('\n', " "),
        rule.content_line,
        serde_yaml::to_string(&out).expect("a guideline serialises")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::MappedRule;

    #[test]
    fn slugs_are_kebab_case_ids_of_the_path() {
        assert_eq!(
            slug(Path::new(".cursor/rules/API_style.mdc")),
            "cursor-rules-api-style"
        );
        assert_eq!(
            slug(Path::new("src/billing/AGENTS.md")),
            "src-billing-agents"
        );
        assert_eq!(slug(Path::new("AGENTS.md")), "agents");
        assert_eq!(
            slug(Path::new(".github/instructions/ts.instructions.md")),
            "github-instructions-ts"
        );
        assert_eq!(slug(Path::new("...")), "rule");
        assert!(slug(Path::new(&"a/".repeat(200))).len() <= 120);
        let mut used = BTreeSet::new();
        assert_eq!(unique("a".into(), &mut used), "a");
        assert_eq!(unique("a".into(), &mut used), "a-2");
    }

    #[test]
    fn a_rule_without_regexes_has_no_match_and_one_with_them_any_of_them() {
        let rule = MappedRule {
            paths: Some(vec!["/web/".into(), "!**/*.test.ts".into()]),
            regexes: vec![],
            content: "Line: one\n  two\n# three".into(),
            content_line: 4,
        };
        let yaml = guideline_yaml(
            "web-agents",
            Path::new("web/AGENTS.md"),
            RuleFormat::AgentsMd,
            &rule,
        );
        assert!(!yaml.contains("match"), "{yaml}");
        let g = parse_guideline(Path::new("g.yaml"), &yaml).unwrap();
        assert_eq!(g.content, rule.content);
        assert_eq!(g.paths, rule.paths);
        let with = MappedRule {
            regexes: vec!["^import React".into(), "use[A-Z]\\w+'".into()],
            ..rule
        };
        let yaml = guideline_yaml(
            "x",
            Path::new(".continue/rules/x.md"),
            RuleFormat::Continue,
            &with,
        );
        let g = parse_guideline(Path::new("g.yaml"), &yaml).unwrap();
        assert_eq!(g.patterns, with.regexes);
        assert!(g.condition.is_plain());
        assert!(yaml.starts_with(
            "# Imported by `guidebook import` from .continue/rules/x.md (continue, line 4)."
        ));
    }
}
