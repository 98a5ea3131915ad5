//! `guidebook export`: the guidebook written in each agent's native rule format.
//!
//! [`plan`] turns guidelines into the files of one format (Cursor `.mdc`, Claude Code rules,
//! Copilot instructions, Continue rules, one `AGENTS.md`) and a [`Report`] for everything the
//! format cannot express, so nothing is dropped silently; [`write`] writes them under a
//! directory, refusing (before writing anything) any file that is not ours: each file we write
//! carries the marker line `<!-- guidebook export: <id> -->`. Reads and writes only `out`.
//!
//! Scope: `scope.paths` globs become explicit root-relative globs (`*.kt` → `**/*.kt`,
//! `/build.gradle` → `build.gradle`, a directory `gen/` → `**/gen/**`), languages become
//! extension globs (`**/*.{kt,kts}`), joined to a directory glob when both are given
//! (`src/**` and kotlin → `src/**/*.{kt,kts}`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::native::{marker, marker_id};
use crate::guidebook::{Condition, Guideline, Severity, Within};

/// The formats `guidebook export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Cursor,
    Claude,
    Copilot,
    Continue,
    AgentsMd,
}

impl Format {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Cursor => "cursor",
            Format::Claude => "claude",
            Format::Copilot => "copilot",
            Format::Continue => "continue",
            Format::AgentsMd => "agents-md",
        }
    }

    /// Whether its globs take `!` exclusions (Continue's do).
    fn excludes(self) -> bool {
        self == Format::Continue
    }
}

/// One file to write, relative to the output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportFile {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

/// Something of a guideline the format cannot express.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Report {
    pub(crate) id: String,
    pub(crate) what: String,
}

/// Everything one export writes and reports.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) files: Vec<ExportFile>,
    pub(crate) reports: Vec<Report>,
}

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    /// Files in the way that `guidebook export` did not write.
    #[error("{} file(s) in the way that guidebook export did not write (no `<!-- guidebook export: ... -->` line), nothing was written:\n{}", .0.len(), .0.iter().map(|(p, why)| format!("  {}: {why}", p.display())).collect::<Vec<_>>().join("\n"))]
    Refused(Vec<(PathBuf, String)>),
    #[error("writing {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The files of `format` for `guidelines`, and what each cannot carry over.
pub(crate) fn plan(format: Format, guidelines: &[&Guideline]) -> Plan {
    let mut plan = Plan::default();
    let mut sections = Vec::new();
    for g in guidelines {
        let mut report = |what: String| {
            plan.reports.push(Report {
                id: g.id.clone(),
                what,
            })
        };
        let scope = Scope::of(g, format, &mut report);
        let regexes = condition(g, format, &mut report);
        if g.repositories.is_some() {
            report(format!(
                "scope.repositories {} dropped: the files live in one repository, where they apply",
                list(g.repositories.as_deref().unwrap_or_default())
            ));
        }
        if g.severity == Severity::Block {
            report(format!(
                "severity: block written as advice: {} cannot refuse an edit",
                format.name()
            ));
        }
        let content = g.content.trim();
        let mark = marker(&g.id);
        let (path, text) = match format {
            Format::Cursor => {
                let mut front = format!("description: {}\n", yaml_string(&describe(g)));
                if scope.globs.is_empty() {
                    front.push_str("alwaysApply: true\n");
                } else {
                    front.push_str(&format!(
                        "globs: {}\nalwaysApply: false\n",
                        bare(&scope.globs.join(","))
                    ));
                }
                (
                    format!(".cursor/rules/{}.mdc", stem(&g.id)),
                    format!("---\n{front}---\n{mark}\n\n{content}\n"),
                )
            }
            Format::Claude => {
                let text = if scope.globs.is_empty() {
                    format!("{mark}\n\n{content}\n")
                } else {
                    format!(
                        "---\npaths:\n{}---\n{mark}\n\n{content}\n",
                        yaml_items(&scope.globs)
                    )
                };
                (format!(".claude/rules/{}.md", stem(&g.id)), text)
            }
            Format::Copilot => {
                let apply = if scope.globs.is_empty() {
                    "**".to_string()
                } else {
                    scope.globs.join(",")
                };
                (
                    format!(".github/instructions/{}.instructions.md", stem(&g.id)),
                    format!(
                        "---\napplyTo: {}\n---\n{mark}\n\n{content}\n",
                        yaml_string(&apply)
                    ),
                )
            }
            Format::Continue => {
                let mut front = format!("name: {}\n", yaml_string(&g.id));
                if !scope.globs.is_empty() {
                    front.push_str(&format!("globs:\n{}", yaml_items(&scope.globs)));
                }
                if !regexes.is_empty() {
                    front.push_str(&format!("regex:\n{}", yaml_items(&regexes)));
                }
                if scope.globs.is_empty() && regexes.is_empty() {
                    front.push_str("alwaysApply: true\n");
                }
                (
                    format!(".continue/rules/{}.md", stem(&g.id)),
                    format!("---\n{front}---\n{mark}\n\n{content}\n"),
                )
            }
            Format::AgentsMd => {
                sections.push(section(g, content));
                continue;
            }
        };
        plan.files.push(ExportFile {
            path: PathBuf::from(path),
            text,
        });
    }
    if format == Format::AgentsMd {
        let mut text = format!(
            "{}\n# Guidelines\n\nEach section applies where its first lines say; the rest is the rule.\n",
            marker("agents-md")
        );
        for s in sections {
            text.push('\n');
            text.push_str(&s);
        }
        plan.files.push(ExportFile {
            path: PathBuf::from("AGENTS.md"),
            text,
        });
    }
    plan
}

/// A guideline's scope as the globs of one format.
struct Scope {
    globs: Vec<String>,
}

impl Scope {
    fn of(g: &Guideline, format: Format, report: &mut impl FnMut(String)) -> Scope {
        let (mut includes, mut excludes) = (Vec::new(), Vec::new());
        for entry in g.paths.iter().flatten() {
            match entry.strip_prefix('!') {
                Some(rest) => excludes.push(explicit(rest)),
                None => includes.push(explicit(entry)),
            }
        }
        let includes: Vec<String> = includes.into_iter().flatten().collect();
        let excludes: Vec<String> = excludes.into_iter().flatten().collect();
        let mut globs = includes.clone();
        if let Some(languages) = &g.languages {
            let by_language: Vec<String> =
                languages.iter().filter_map(|l| language_glob(l)).collect();
            if format == Format::AgentsMd {
                // Written as text (see `section`).
            } else if includes.is_empty() {
                globs = by_language;
            } else {
                globs = Vec::new();
                for glob in &includes {
                    match glob.strip_suffix("/**") {
                        Some(dir) => globs.extend(by_language.iter().map(|l| format!("{dir}/{l}"))),
                        None if implied_by_extension(glob, languages) => globs.push(glob.clone()),
                        None => {
                            report(format!(
                                "languages {} not applied to the glob `{glob}`: a format's globs are any-of, the file's language is not checked there",
                                list(languages)
                            ));
                            globs.push(glob.clone());
                        }
                    }
                }
            }
        }
        if !excludes.is_empty() {
            if format.excludes() {
                globs.extend(excludes.iter().map(|e| format!("!{e}")));
            } else if format != Format::AgentsMd {
                report(format!(
                    "exclusions {} dropped: {} globs cannot exclude, so the rule also applies there",
                    list(&excludes.iter().map(|e| format!("!{e}")).collect::<Vec<_>>()),
                    format.name()
                ));
            }
        }
        if format == Format::AgentsMd && (g.paths.is_some() || g.languages.is_some()) {
            report(
                "scope written as text: AGENTS.md is read whole, the host does not apply it".into(),
            );
        }
        if format == Format::AgentsMd {
            globs.clear();
        }
        Scope { globs }
    }
}

/// The regexes the format keeps (Continue: a plain any-of over the file), reporting what it
/// cannot keep.
fn condition(g: &Guideline, format: Format, report: &mut impl FnMut(String)) -> Vec<String> {
    if always(g) {
        return Vec::new();
    }
    let structural = g.condition.structural();
    if !structural.is_empty() {
        let asts: Vec<&str> = structural
            .iter()
            .map(|(_, spec, _)| spec.pattern.as_str())
            .collect();
        report(format!(
            "match condition dropped (structural `ast:` leaves {}): {} cannot match syntax trees; the rule applies to every change in scope",
            ticks(asts.iter().copied()),
            format.name()
        ));
        return Vec::new();
    }
    let patterns = list(&g.patterns);
    if format == Format::AgentsMd {
        report(format!(
            "match written as text ({patterns}): AGENTS.md is read whole, the host does not apply it"
        ));
        return Vec::new();
    }
    if format == Format::Continue {
        if g.condition.is_plain() {
            return g.patterns.clone();
        }
        let leaves = g.condition.leaves();
        let why = if leaves.iter().any(|(_, w, _)| *w == Within::Changes) {
            "`in: changes`"
        } else if leaves.iter().any(|(_, _, negated)| *negated) {
            "`not`"
        } else {
            "`all`"
        };
        report(format!(
            "match condition dropped ({patterns}): Continue's regex is any-of over the file and cannot say {why}; the rule applies to every change in scope"
        ));
        return Vec::new();
    }
    report(format!(
        "match condition dropped ({patterns}): {} has no content condition; the rule applies to every change in scope",
        format.name()
    ));
    Vec::new()
}

/// Whether the guideline has no `match`: every change of a file in scope.
fn always(g: &Guideline) -> bool {
    matches!(&g.condition, Condition::All(members) if members.is_empty())
}

/// One AGENTS.md section: the id as a heading, the scope and condition as text, the content.
fn section(g: &Guideline, content: &str) -> String {
    let mut applies = Vec::new();
    if let Some(paths) = &g.paths {
        let (ex, inc): (Vec<&String>, Vec<&String>) =
            paths.iter().partition(|p| p.starts_with('!'));
        if !inc.is_empty() {
            applies.push(format!(
                "files matching {}",
                ticks(inc.iter().map(|s| s.as_str()))
            ));
        } else {
            applies.push("every file".into());
        }
        if !ex.is_empty() {
            applies.push(format!(
                "except those matching {}",
                ticks(ex.iter().map(|s| s.trim_start_matches('!')))
            ));
        }
    }
    if let Some(languages) = &g.languages {
        if applies.is_empty() {
            applies.push("files".into());
        }
        applies.push(format!("written in {}", languages.join(", ")));
    }
    if let Some(repositories) = &g.repositories {
        if applies.is_empty() {
            applies.push("files".into());
        }
        applies.push(format!(
            "in the repositories {}",
            ticks(repositories.iter().map(|s| s.as_str()))
        ));
    }
    let mut text = format!("## {}\n\n", g.id);
    if !applies.is_empty() {
        text.push_str(&format!("Applies to {}.\n", applies.join(" ")));
    }
    if !always(g) {
        text.push_str(&format!(
            "When the file matches {} ({}).\n",
            ticks(g.patterns.iter().map(|s| s.as_str())),
            if g.condition.is_plain() {
                "any of them"
            } else {
                "as the guideline's `match` combines them"
            }
        ));
    }
    if g.severity == Severity::Block {
        text.push_str("A rule that must not be broken.\n");
    }
    if !text.ends_with("\n\n") {
        text.push('\n');
    }
    text.push_str(marker(&g.id).as_str());
    text.push_str("\n\n");
    text.push_str(content);
    text.push('\n');
    text
}

/// A `scope.paths` glob (gitignore style) as an explicit root-relative glob, in the forms a
/// file may take: one without a `/` at any depth; a plain name also as the directory it may be.
fn explicit(glob: &str) -> Vec<String> {
    let directory = glob.ends_with('/');
    let body = glob.trim_end_matches('/');
    let anchored = body.starts_with('/') || body.contains('/');
    let body = body.trim_start_matches('/');
    let base = if anchored {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    let last = body.rsplit('/').next().unwrap_or(body);
    if directory {
        vec![format!("{base}/**")]
    } else if base.ends_with("**") || last.contains(['*', '?', '[', '{', '.']) {
        vec![base]
    } else {
        // `src/legacy` holds for everything below it; `Makefile` for the file.
        vec![base.clone(), format!("{base}/**")]
    }
}

/// Whether `glob`'s file name ends in an extension of one of `languages` (`**/*Test.kt` and
/// kotlin): the glob alone says the language.
fn implied_by_extension(glob: &str, languages: &[&str]) -> bool {
    let name = glob.rsplit('/').next().unwrap_or(glob);
    !name.contains(['{', '['])
        && crate::language::language_of(Path::new(name)).is_some_and(|l| languages.contains(&l))
}

/// The glob of a language's files (`**/*.{kt,kts}`), as `language_of` tells them.
pub(crate) fn language_glob(language: &str) -> Option<String> {
    let exts: Vec<&str> = crate::language::EXTENSIONS
        .iter()
        .filter(|(_, l)| *l == language)
        .map(|&(e, _)| e)
        .collect();
    let by_ext = match exts.len() {
        0 => None,
        1 => Some(format!("*.{}", exts[0])),
        _ => Some(format!("*.{{{}}}", exts.join(","))),
    };
    if language == "dockerfile" {
        return Some("**/{Dockerfile,Dockerfile.*,*.dockerfile}".into());
    }
    by_ext.map(|e| format!("**/{e}"))
}

/// A guideline id as a file name: a guidebook id is kebab-case already; anything else (an id
/// of another source, `repo:x/y`) cannot make a path leave its directory.
fn stem(id: &str) -> String {
    let stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if stem.is_empty() {
        "guideline".into()
    } else {
        stem
    }
}

/// A description for Cursor: the content's first line, heading marks left out.
fn describe(g: &Guideline) -> String {
    let first = g
        .content
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or(&g.id);
    let mut d: String = first.chars().take(160).collect();
    if d.len() < first.len() {
        d.push('…');
    }
    d
}

/// A YAML double-quoted string (JSON's quoting is valid YAML).
fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// Cursor's `globs` as Cursor writes it, unquoted, when it reads the same either way.
fn bare(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '.' | '_' | '/'))
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':');
    if plain {
        s.to_string()
    } else {
        yaml_string(s)
    }
}

fn yaml_items(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("  - {}\n", yaml_string(i)))
        .collect()
}

fn ticks<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list<S: AsRef<str>>(items: &[S]) -> String {
    ticks(items.iter().map(|s| s.as_ref()))
}

/// Writes the plan's files under `out`: first checks every one (an existing file must be a
/// regular file holding our marker line, and no directory on the way a symlink), then writes.
pub(crate) fn write(out: &Path, plan: &Plan) -> Result<Vec<PathBuf>, ExportError> {
    let mut refused = Vec::new();
    for file in &plan.files {
        if let Some(why) = in_the_way(out, &file.path) {
            refused.push((out.join(&file.path), why));
        }
    }
    if !refused.is_empty() {
        return Err(ExportError::Refused(refused));
    }
    let mut written = Vec::new();
    for file in &plan.files {
        let path = out.join(&file.path);
        let io = |source| ExportError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, &file.text).map_err(io)?;
        written.push(file.path.clone());
    }
    Ok(written)
}

/// Why the file at `out/relative` may not be written, if it may not.
fn in_the_way(out: &Path, relative: &Path) -> Option<String> {
    let mut at = out.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(format!("cannot be checked: {e}")),
        };
        if meta.file_type().is_symlink() {
            return Some("is a symbolic link".into());
        }
        let last = i + 1 == parts.len();
        if !last && !meta.is_dir() {
            return Some(format!("{} is not a directory", at.display()));
        }
        if last {
            if !meta.is_file() {
                return Some("is not a regular file".into());
            }
            return match std::fs::read_to_string(&at) {
                Ok(text) if text.lines().any(|l| marker_id(l).is_some()) => None,
                Ok(_) => Some("exists and was not written by guidebook export".into()),
                Err(e) => Some(format!("cannot be read: {e}")),
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guidebook::parse_guideline;

    fn g(yaml: &str) -> Guideline {
        parse_guideline(Path::new("g.yaml"), yaml).unwrap()
    }

    #[test]
    fn every_language_has_a_glob_that_its_files_match() {
        for language in crate::language::LANGUAGES {
            let glob = language_glob(language).unwrap_or_else(|| panic!("{language}"));
            let set = globset::Glob::new(&glob).unwrap().compile_matcher();
            let sample = match *language {
                "dockerfile" => "a/Dockerfile".to_string(),
                _ => {
                    let (ext, _) = crate::language::EXTENSIONS
                        .iter()
                        .find(|(_, l)| l == language)
                        .unwrap();
                    format!("a/b.{ext}")
                }
            };
            assert!(set.is_match(&sample), "{language}: {glob} vs {sample}");
        }
        assert_eq!(language_glob("kotlin").unwrap(), "**/*.{kt,kts}");
    }

    #[test]
    fn file_names_never_leave_their_directory() {
        assert_eq!(stem("kt-no-println"), "kt-no-println");
        assert_eq!(stem("repo:../x/y"), "repo----x-y");
        assert_eq!(stem(""), "guideline");
    }

    #[test]
    fn path_globs_become_explicit() {
        assert_eq!(explicit("*.kt"), ["**/*.kt"]);
        assert_eq!(explicit("/build.gradle.kts"), ["build.gradle.kts"]);
        assert_eq!(explicit("src/**/*.kt"), ["src/**/*.kt"]);
        assert_eq!(explicit("generated/"), ["**/generated/**"]);
        assert_eq!(explicit("/a/b/"), ["a/b/**"]);
        assert_eq!(explicit("src/legacy"), ["src/legacy", "src/legacy/**"]);
    }

    #[test]
    fn languages_join_directory_globs_and_the_rest_is_reported() {
        let gl = g("id: a\nscope:\n  languages: [kotlin]\n  paths: ['/src/', 'build.gradle', '*Test.kt', '!**/test/**']\nmatch:\n  regex:\n    pattern: x\ncontent: c\n");
        let plan = plan(Format::Cursor, &[&gl]);
        let text = &plan.files[0].text;
        assert!(
            text.contains("globs: src/**/*.{kt,kts},**/build.gradle,**/*Test.kt\n"),
            "{text}"
        );
        let what: Vec<&str> = plan.reports.iter().map(|r| r.what.as_str()).collect();
        assert!(
            what.iter()
                .any(|w| w.contains("not applied to the glob `**/build.gradle`")),
            "{what:?}"
        );
        assert!(
            !what.iter().any(|w| w.contains("*Test.kt")),
            "a glob whose extension says the language: {what:?}"
        );
        assert!(
            what.iter()
                .any(|w| w.contains("exclusions `!**/test/**` dropped")),
            "{what:?}"
        );
        assert!(
            what.iter()
                .any(|w| w.contains("match condition dropped (`x`)")),
            "{what:?}"
        );
        let cont = plan_continue(&gl);
        assert!(
            cont.files[0].text.contains("  - \"!**/test/**\"\n"),
            "{}",
            cont.files[0].text
        );
        assert!(cont.files[0].text.contains("regex:\n  - \"x\"\n"));
        assert!(!cont.reports.iter().any(|r| r.what.contains("exclusions")));
    }

    fn plan_continue(gl: &Guideline) -> Plan {
        plan(Format::Continue, &[gl])
    }

    #[test]
    fn continue_reports_conditions_it_cannot_say() {
        for (m, why) in [
            ("match:\n  in: changes\n  regex:\n    pattern: x\n", "`in: changes`"),
            ("match:\n  not:\n    regex:\n      pattern: x\n", "`not`"),
            ("match:\n  all:\n    - regex:\n        pattern: x\n    - regex:\n        pattern: y\n", "`all`"),
        ] {
            let gl = g(&format!("id: a\n{m}content: c\n"));
            let p = plan(Format::Continue, &[&gl]);
            assert!(p.reports.iter().any(|r| r.what.contains(why)), "{m}: {:?}", p.reports);
            assert!(!p.files[0].text.contains("regex:"), "{}", p.files[0].text);
            assert!(p.files[0].text.contains("alwaysApply: true"));
        }
    }

    /// A structural leaf is reported by its pattern in every format, never exported as the
    /// prefilter regex that stands in its place.
    #[cfg(feature = "ast-kotlin")]
    #[test]
    fn structural_leaves_are_reported_not_exported() {
        let gl = g("id: a\nscope:\n  languages: [kotlin]\nmatch:\n  ast:\n    pattern: runBlocking { $$$ }\ncontent: c\n");
        for format in [Format::Continue, Format::Cursor, Format::AgentsMd] {
            let p = plan(format, &[&gl]);
            assert!(
                p.reports.iter().any(|r| r
                    .what
                    .contains("structural `ast:` leaves `runBlocking { $$$ }`")),
                "{:?}",
                p.reports
            );
            assert!(!p.files[0].text.contains("regex:"), "{}", p.files[0].text);
        }
    }

    #[test]
    fn repositories_and_block_are_reported() {
        let gl = g("id: a\nseverity: block\nscope:\n  repositories: ['acme/*']\nmatch:\n  regex:\n    pattern: x\ncontent: c\n");
        for format in [
            Format::Cursor,
            Format::Claude,
            Format::Copilot,
            Format::Continue,
            Format::AgentsMd,
        ] {
            let p = plan(format, &[&gl]);
            assert!(
                p.reports
                    .iter()
                    .any(|r| r.what.contains("repositories `acme/*`")),
                "{format:?}"
            );
            assert!(
                p.reports.iter().any(|r| r.what.contains("block")),
                "{format:?}"
            );
        }
    }
}
