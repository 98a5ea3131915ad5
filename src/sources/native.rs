//! The agents' rule formats read as guidelines: front matter, globs, bodies.
//!
//! [`parse`] reads one rule file's text (AGENTS.md, CLAUDE.md, Cursor, Claude Code rules,
//! Copilot instructions, Continue rules) into a [`Mapping`]: `scope.paths` globs and content
//! regexes for a rule that can be applied at the moment of an edit, or why it cannot. Every
//! glob and regex is held to the guideline loader's own rules, so a mapped rule always loads.
//! Reads nothing; docs/guide/rule-files.md is the mapping as a table.
//!
//! Globs: a native glob is relative to the repository root. One without a `/` matches at any
//! depth (`*.ts`), one with a `/` is anchored at the root (`src/**/*.ts`), exactly as a
//! `scope.paths` entry reads, so both pass through unchanged; a leading `./` becomes the
//! root anchor `/`; `!` excludes. Absolute globs (`/etc/*`, `~/x`, `C:\x`), `..` components
//! and globs the loader refuses are errors naming the glob and its line. A glob that matches
//! everything (`**`, `*`, `**/*`) with no exclusion means the whole repository (`paths: None`).

use std::path::Path;

use serde_yaml::Value;

use super::{MappedRule, Mapping, RuleError, RuleFormat};

/// The first line of a body that `guidebook export` wrote: `<!-- guidebook export: <id> -->`.
pub(crate) const MARKER_PREFIX: &str = "<!-- guidebook export: ";
pub(crate) const MARKER_SUFFIX: &str = " -->";

/// The marker line `guidebook export` writes into each file it owns.
pub(crate) fn marker(id: &str) -> String {
    format!("{MARKER_PREFIX}{id}{MARKER_SUFFIX}")
}

/// The id of a marker line, if `line` is one.
pub(crate) fn marker_id(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix(MARKER_PREFIX)?
        .strip_suffix(MARKER_SUFFIX)
        .map(str::trim)
}

/// Why an empty rule maps to nothing.
pub(crate) const EMPTY: &str = "empty";

/// Reads one rule file of `format` at `relative` (its path from the repository root, `/`
/// separated) with content `text`.
pub fn parse(format: RuleFormat, relative: &Path, text: &str) -> Result<Mapping, RuleError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n");
    match format {
        RuleFormat::Guidebook => Err(RuleError {
            line: None,
            column: None,
            message: "a .guidebook guideline.yaml is read by the guideline loader, not as a \
                      native rule file"
                .into(),
        }),
        RuleFormat::AgentsMd | RuleFormat::ClaudeMd => Ok(directory_file(format, relative, &text)),
        RuleFormat::Cursor => cursor(&text),
        RuleFormat::ClaudeRules => claude_rules(&text),
        RuleFormat::Copilot => copilot(&text),
        RuleFormat::Continue => continue_rule(&text),
    }
}

/// A nested `AGENTS.md`/`CLAUDE.md`: no front matter, scoped to its directory (a `CLAUDE.md`
/// in a `.claude/` directory to the directory above); at the root, the whole repository.
fn directory_file(format: RuleFormat, relative: &Path, text: &str) -> Mapping {
    let mut dir: Vec<&str> = relative
        .parent()
        .map(|p| p.iter().filter_map(|c| c.to_str()).collect())
        .unwrap_or_default();
    if format == RuleFormat::ClaudeMd && dir.last() == Some(&".claude") {
        dir.pop();
    }
    let paths = (!dir.is_empty()).then(|| vec![format!("/{}/", dir.join("/"))]);
    match body(text, 1) {
        Some((content, content_line)) => Mapping::Rule(MappedRule {
            paths,
            regexes: Vec::new(),
            content,
            content_line,
        }),
        None => Mapping::NotMapped(EMPTY.into()),
    }
}

/// `.cursor/rules/*.mdc`: `alwaysApply: true` applies everywhere (globs ignored, as Cursor
/// does); `globs` scope it; a description alone is for the model to request; nothing is manual.
fn cursor(text: &str) -> Result<Mapping, RuleError> {
    let doc = Document::read(text)?;
    let always = doc.bool("alwaysApply")?;
    let description = doc.string("description")?;
    let globs = doc.globs("globs", Split::Commas)?;
    let paths = if always == Some(true) {
        None
    } else if !globs.is_empty() {
        Some(globs)
    } else if description.is_some_and(|d| !d.trim().is_empty()) {
        return Ok(Mapping::NotMapped(
            "the model requests it by its description (Cursor's \"Apply Intelligently\"); \
             no globs say which files it is for"
                .into(),
        ));
    } else {
        return Ok(Mapping::NotMapped(
            "manual: Cursor applies it only when a user @-mentions it (no alwaysApply, globs \
             or description)"
                .into(),
        ));
    };
    doc.rule(scope(paths), Vec::new())
}

/// `.claude/rules/**/*.md`: `paths` (a string, comma-separated, or a list) scope it; none
/// means always. `globs`, which Claude Code also honours, is read when `paths` is absent.
fn claude_rules(text: &str) -> Result<Mapping, RuleError> {
    let doc = Document::read(text)?;
    let mut globs = doc.globs("paths", Split::Commas)?;
    if globs.is_empty() && doc.get("paths").is_none() {
        globs = doc.globs("globs", Split::Commas)?;
    }
    doc.rule(scope(Some(globs)), Vec::new())
}

/// `.github/instructions/**/*.instructions.md`: `applyTo` (comma-separated globs) scopes it;
/// without it Copilot applies the file only when attached by hand. `excludeAgent:
/// coding-agent` keeps it from the coding agent: not mapped.
fn copilot(text: &str) -> Result<Mapping, RuleError> {
    let doc = Document::read(text)?;
    let exclude = doc.string_or_list("excludeAgent")?;
    if exclude.iter().any(|a| a.trim() == "coding-agent") {
        return Ok(Mapping::NotMapped(
            "excludeAgent: coding-agent: the file is not for coding agents".into(),
        ));
    }
    if doc.get("applyTo").is_none() {
        return Ok(Mapping::NotMapped(
            "no applyTo: Copilot applies it only when it is attached by hand".into(),
        ));
    }
    let globs = doc.globs("applyTo", Split::Commas)?;
    if globs.is_empty() {
        return Ok(Mapping::NotMapped(
            "applyTo is empty: it names no files".into(),
        ));
    }
    doc.rule(scope(Some(globs)), Vec::new())
}

/// `.continue/rules/*.md`: `alwaysApply: true` always; otherwise `globs` (string or list, `!`
/// excludes) and `regex` (string or list, any of them over the file's content) both have to
/// hold; neither: always unless `alwaysApply: false`, which leaves it to the model (by its
/// `description`) or to the user.
fn continue_rule(text: &str) -> Result<Mapping, RuleError> {
    let doc = Document::read(text)?;
    let always = doc.bool("alwaysApply")?;
    doc.string("name")?;
    let description = doc.string("description")?;
    let globs = doc.globs("globs", Split::No)?;
    let regexes = doc.regexes("regex")?;
    if always == Some(true) {
        return doc.rule(None, Vec::new());
    }
    if globs.is_empty() && regexes.is_empty() && always == Some(false) {
        return Ok(Mapping::NotMapped(
            if description.is_some_and(|d| !d.trim().is_empty()) {
                "the model requests it by its description (alwaysApply: false, no globs or regex)"
            } else {
                "manual: alwaysApply: false with no globs, regex or description"
            }
            .into(),
        ));
    }
    doc.rule(scope(Some(globs)), regexes)
}

/// `paths` for a list of mapped globs: `None` when there is none, or when one includes every
/// file and none excludes.
fn scope(globs: Option<Vec<String>>) -> Option<Vec<String>> {
    let globs = globs.filter(|g| !g.is_empty())?;
    let everything = |g: &String| matches!(g.as_str(), "**" | "*" | "**/*" | "/**" | "/**/*");
    let excludes = globs.iter().any(|g| g.starts_with('!'));
    if !excludes && globs.iter().any(everything) {
        return None;
    }
    Some(globs)
}

/// The body from 1-based line `first` of `text` on: trimmed, our export marker left out, and
/// the line it starts on; `None` when nothing is left.
fn body(text: &str, first: usize) -> Option<(String, usize)> {
    let mut line = first;
    let mut rest = text;
    loop {
        let (head, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        if head.trim().is_empty() || marker_id(head).is_some() {
            if tail.is_empty() {
                return None;
            }
            rest = tail;
            line += 1;
            continue;
        }
        break;
    }
    let content = rest.trim();
    (!content.is_empty()).then(|| (content.to_string(), line))
}

fn error(line: Option<usize>, column: Option<usize>, message: impl Into<String>) -> RuleError {
    RuleError {
        line,
        column,
        message: message.into(),
    }
}

/// Whether a string of globs is split at commas (outside braces): Cursor's `globs`, Claude's
/// `paths` and Copilot's `applyTo` are; Continue's are not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    Commas,
    No,
}

/// A rule file split into its front matter (parsed) and body.
struct Document<'a> {
    /// The front matter's lines, the first of them at file line 2 (`None`: there is none).
    front: Option<Vec<&'a str>>,
    map: serde_yaml::Mapping,
    /// The 1-based file line the body starts on.
    body_line: usize,
    body: &'a str,
}

/// The keys whose unquoted values Cursor and Claude users write as bare globs (`**/*.ts`),
/// which YAML would read as an alias.
const GLOB_KEYS: [&str; 3] = ["globs", "paths", "applyTo"];

impl<'a> Document<'a> {
    fn read(text: &'a str) -> Result<Document<'a>, RuleError> {
        let mut lines = text.split('\n');
        let no_front = |text| Document {
            front: None,
            map: serde_yaml::Mapping::new(),
            body_line: 1,
            body: text,
        };
        if lines.next().map(str::trim_end) != Some("---") {
            return Ok(no_front(text));
        }
        let all: Vec<&str> = text.split('\n').collect();
        let Some(close) = all.iter().skip(1).position(|l| l.trim_end() == "---") else {
            return Err(error(
                Some(1),
                None,
                "the front matter opened on line 1 is never closed by a `---` line",
            ));
        };
        let front: Vec<&str> = all[1..=close].to_vec();
        let body_start: usize = all[..=close + 1].iter().map(|l| l.len() + 1).sum();
        let body = text.get(body_start.min(text.len())..).unwrap_or("");
        let yaml = quote_bare_globs(&front);
        let value: Value = serde_yaml::from_str(&yaml).map_err(|e| {
            let mut message = e.to_string();
            if let Some(pos) = message.find(" at line ") {
                message.truncate(pos);
            }
            let location = e.location();
            error(
                location.as_ref().map(|l| l.line() + 1),
                location.as_ref().map(|l| l.column()),
                format!("front matter is not valid YAML: {message}"),
            )
        })?;
        let map = match value {
            Value::Null => serde_yaml::Mapping::new(),
            Value::Mapping(m) => m,
            _ => {
                return Err(error(
                    Some(2),
                    None,
                    "the front matter must be a mapping of keys (`key: value` lines)",
                ))
            }
        };
        Ok(Document {
            front: Some(front),
            map,
            body_line: close + 3,
            body,
        })
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The 1-based file line of the top-level `key:` of the front matter.
    fn line_of(&self, key: &str) -> Option<usize> {
        let front = self.front.as_ref()?;
        front
            .iter()
            .position(|l| {
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
            })
            .map(|i| i + 2)
    }

    /// The line of `needle` at or below `key`'s line (a list item), or `key`'s line.
    fn line_within(&self, key: &str, needle: &str) -> Option<usize> {
        let at = self.line_of(key)?;
        let front = self.front.as_ref()?;
        front
            .iter()
            .enumerate()
            .skip(at - 2)
            .find(|(_, l)| l.contains(needle))
            .map(|(i, _)| i + 2)
            .or(Some(at))
    }

    fn wrong_type(&self, key: &str, want: &str, got: &Value) -> RuleError {
        error(
            self.line_of(key),
            None,
            format!("`{key}` must be {want}, not {}", kind(got)),
        )
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, RuleError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong_type(key, "true or false", other)),
        }
    }

    fn string(&self, key: &str) -> Result<Option<&str>, RuleError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    fn string_or_list(&self, key: &str) -> Result<Vec<String>, RuleError> {
        let want = "a string or a list of strings";
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Sequence(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(error(
                        self.line_of(key),
                        None,
                        format!("`{key}` must be {want}; one item is {}", kind(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.wrong_type(key, want, other)),
        }
    }

    /// `key`'s globs mapped onto `scope.paths` entries (see the module's doc).
    fn globs(&self, key: &str, split: Split) -> Result<Vec<String>, RuleError> {
        let single = matches!(self.get(key), Some(Value::String(_)));
        let mut out = Vec::new();
        for value in self.string_or_list(key)? {
            let parts = if single && split == Split::Commas {
                split_commas(&value)
            } else {
                vec![value.trim().to_string()]
            };
            for glob in parts.into_iter().filter(|g| !g.is_empty()) {
                let mapped = map_glob(&glob)
                    .map_err(|why| error(self.line_within(key, &glob), None, why))?;
                out.push(mapped);
            }
        }
        Ok(out)
    }

    /// `key`'s regexes, each held to the loader's rules for a pattern.
    fn regexes(&self, key: &str) -> Result<Vec<String>, RuleError> {
        let mut out = Vec::new();
        for pattern in self.string_or_list(key)? {
            if pattern.is_empty() {
                return Err(error(self.line_of(key), None, format!("`{key}` is empty")));
            }
            loader_check(None, Some(&pattern))
                .map_err(|why| error(self.line_within(key, &pattern), None, why))?;
            out.push(pattern);
        }
        Ok(out)
    }

    /// The rule with this scope and these regexes, and the body as its content.
    fn rule(&self, paths: Option<Vec<String>>, regexes: Vec<String>) -> Result<Mapping, RuleError> {
        Ok(match body(self.body, self.body_line) {
            Some((content, content_line)) => Mapping::Rule(MappedRule {
                paths,
                regexes,
                content,
                content_line,
            }),
            None => Mapping::NotMapped(EMPTY.into()),
        })
    }
}

/// The YAML type of a value, for an error.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The front matter as YAML, with bare glob values (`globs: **/*.ts`, `- *.md`) of the glob
/// keys single-quoted: YAML reads a leading `*` as an alias, but Cursor and Claude Code read
/// these lines as globs. A ` #` comment after such a value is left out. Lines keep their
/// numbers.
fn quote_bare_globs(front: &[&str]) -> String {
    let quote = |v: &str| {
        let v = match v.find(" #") {
            Some(i) => &v[..i],
            None => v,
        };
        format!("'{}'", v.trim_end().replace('\'', "''"))
    };
    let mut out = String::new();
    let mut in_glob_key = false;
    for line in front {
        let mut written = None;
        if !line.starts_with([' ', '\t', '-']) {
            in_glob_key = false;
            if let Some((key, value)) = line.split_once(':') {
                let value = value.trim_start();
                if GLOB_KEYS.contains(&key.trim_end()) {
                    in_glob_key = value.is_empty();
                    if value.starts_with('*') {
                        written = Some(format!("{}: {}", key.trim_end(), quote(value)));
                    }
                }
            }
        } else if in_glob_key {
            let trimmed = line.trim_start();
            if let Some(item) = trimmed.strip_prefix("- ") {
                let item = item.trim_start();
                if item.starts_with('*') {
                    let indent = &line[..line.len() - trimmed.len()];
                    written = Some(format!("{indent}- {}", quote(item)));
                }
            }
        }
        out.push_str(written.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `a, b/{c,d}` split at the commas outside braces, each trimmed.
fn split_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim().to_string());
    out
}

/// A native glob as a `scope.paths` entry, or why it is refused.
pub(crate) fn map_glob(glob: &str) -> Result<String, String> {
    let (bang, pattern) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest.trim_start()),
        None => ("", glob),
    };
    let drive = pattern.len() >= 3
        && pattern.as_bytes()[0].is_ascii_alphabetic()
        && pattern.as_bytes()[1] == b':'
        && matches!(pattern.as_bytes()[2], b'/' | b'\\');
    if pattern.starts_with(['/', '~', '\\']) || drive {
        return Err(format!(
            "glob `{glob}` is absolute: rule globs are relative to the repository root"
        ));
    }
    if pattern.split(['/', '\\']).any(|part| part == "..") {
        return Err(format!(
            "glob `{glob}` has a `..` component: rule globs stay inside the repository"
        ));
    }
    let mapped = match pattern.strip_prefix("./") {
        Some(rest) => format!("{bang}/{}", rest.trim_start_matches("./")),
        None => format!("{bang}{pattern}"),
    };
    loader_check(Some(&mapped), None)?;
    Ok(mapped)
}

/// Whether the guideline loader accepts `path` as a `scope.paths` entry and `pattern` as a
/// regex: a one-guideline text through [`crate::guidebook::parse_guideline`], so a mapped
/// rule is held to exactly the loader's rules (glob syntax and limits, regex syntax, length
/// and compiled size). The error is the loader's message.
pub(crate) fn loader_check(path: Option<&str>, pattern: Option<&str>) -> Result<(), String> {
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let mut yaml = String::from("id: native-rule-check\n");
    if let Some(path) = path {
        yaml.push_str(&format!("scope:\n  paths: [{}]\n", quoted(path)));
    }
    yaml.push_str(&format!(
        "match:\n  regex:\n    pattern: {}\ncontent: x\n",
        quoted(pattern.unwrap_or("x"))
    ));
    crate::guidebook::parse_guideline(Path::new("rule"), &yaml)
        .map(drop)
        .map_err(|e| {
            // serde's path to the value (`match.regex: `) names our check text, not the rule.
            let m = e.message;
            match m.split_once(": ") {
                Some((at, rest)) if at.starts_with("match.") || at.starts_with("scope.") => {
                    rest.to_string()
                }
                _ => m,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(format: RuleFormat, rel: &str, text: &str) -> Result<Mapping, RuleError> {
        parse(format, Path::new(rel), text)
    }

    fn rule(m: Result<Mapping, RuleError>) -> MappedRule {
        match m {
            Ok(Mapping::Rule(r)) => r,
            other => panic!("not a rule: {other:?}"),
        }
    }

    fn not_mapped(m: Result<Mapping, RuleError>) -> String {
        match m {
            Ok(Mapping::NotMapped(why)) => why,
            other => panic!("mapped: {other:?}"),
        }
    }

    fn err(m: Result<Mapping, RuleError>) -> RuleError {
        match m {
            Err(e) => e,
            other => panic!("no error: {other:?}"),
        }
    }

    fn paths(v: &[&str]) -> Option<Vec<String>> {
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn agents_md_is_scoped_to_its_directory_and_the_root_one_to_everything() {
        let r = rule(p(
            RuleFormat::AgentsMd,
            "services/billing/AGENTS.md",
            "\n\n# Billing\nUse cents.\n\n",
        ));
        assert_eq!(r.paths, paths(&["/services/billing/"]));
        assert_eq!(r.content, "# Billing\nUse cents.");
        assert_eq!(r.content_line, 3);
        assert!(r.regexes.is_empty());
        let root = rule(p(RuleFormat::AgentsMd, "AGENTS.md", "Be brief."));
        assert_eq!(root.paths, None);
        let claude = rule(p(RuleFormat::ClaudeMd, "web/CLAUDE.md", "x"));
        assert_eq!(claude.paths, paths(&["/web/"]));
        let dotclaude = rule(p(RuleFormat::ClaudeMd, "web/.claude/CLAUDE.md", "x"));
        assert_eq!(
            dotclaude.paths,
            paths(&["/web/"]),
            "a .claude/ dir: the one above"
        );
        assert_eq!(
            rule(p(RuleFormat::ClaudeMd, ".claude/CLAUDE.md", "x")).paths,
            None
        );
    }

    #[test]
    fn agents_md_keeps_a_leading_rule_line_as_text_and_at_file_references_as_text() {
        let r = rule(p(
            RuleFormat::AgentsMd,
            "a/AGENTS.md",
            "---\nnot: front matter\n---\nSee @docs/style.md\n",
        ));
        assert_eq!(r.content, "---\nnot: front matter\n---\nSee @docs/style.md");
        assert_eq!(r.content_line, 1);
    }

    #[test]
    fn empty_files_and_bodies_are_not_mapped() {
        assert_eq!(
            not_mapped(p(RuleFormat::AgentsMd, "a/AGENTS.md", " \n\n")),
            EMPTY
        );
        assert_eq!(
            not_mapped(p(
                RuleFormat::Cursor,
                ".cursor/rules/x.mdc",
                "---\nalwaysApply: true\n---\n\n"
            )),
            EMPTY
        );
    }

    #[test]
    fn bom_and_crlf_are_tolerated() {
        let r = rule(p(
            RuleFormat::Cursor,
            ".cursor/rules/x.mdc",
            "\u{feff}---\r\nglobs: src/**/*.ts\r\nalwaysApply: false\r\n---\r\n\r\nLine one.\r\nLine two.\r\n",
        ));
        assert_eq!(r.paths, paths(&["src/**/*.ts"]));
        assert_eq!(r.content, "Line one.\nLine two.");
        assert_eq!(r.content_line, 6);
        let a = rule(p(
            RuleFormat::AgentsMd,
            "x/AGENTS.md",
            "\u{feff}Hi\r\nthere\r\n",
        ));
        assert_eq!(a.content, "Hi\nthere");
    }

    #[test]
    fn cursor_reads_every_key() {
        let c = ".cursor/rules/x.mdc";
        // globs as a comma-separated string, braces kept together; bare leading `*`.
        let r = rule(p(
            RuleFormat::Cursor,
            c,
            "---\ndescription: TS\nglobs: *.{ts,tsx}, src/api/** # the API\nalwaysApply: false\n---\nBody\n",
        ));
        assert_eq!(r.paths, paths(&["*.{ts,tsx}", "src/api/**"]));
        assert_eq!(r.content_line, 6);
        // globs as a list, one bare.
        let r = rule(p(
            RuleFormat::Cursor,
            c,
            "---\nglobs:\n  - \"app/**/*.rb\"\n  - *.erb\n---\nBody\n",
        ));
        assert_eq!(r.paths, paths(&["app/**/*.rb", "*.erb"]));
        // alwaysApply wins over globs.
        let r = rule(p(
            RuleFormat::Cursor,
            c,
            "---\nglobs: src/**\nalwaysApply: true\n---\nBody\n",
        ));
        assert_eq!(r.paths, None);
        // ./ anchors at the root; ** means everything.
        let r = rule(p(RuleFormat::Cursor, c, "---\nglobs: ./Makefile\n---\nB\n"));
        assert_eq!(r.paths, paths(&["/Makefile"]));
        assert_eq!(
            rule(p(RuleFormat::Cursor, c, "---\nglobs: \"**\"\n---\nB\n")).paths,
            None
        );
        // description only, and nothing at all.
        assert!(not_mapped(p(
            RuleFormat::Cursor,
            c,
            "---\ndescription: When writing migrations\nglobs:\nalwaysApply: false\n---\nB\n"
        ))
        .contains("description"));
        assert!(not_mapped(p(
            RuleFormat::Cursor,
            c,
            "---\nalwaysApply: false\n---\nB\n"
        ))
        .contains("manual"));
        assert!(
            not_mapped(p(RuleFormat::Cursor, c, "No front matter at all.\n")).contains("manual")
        );
    }

    #[test]
    fn wrong_types_name_the_key_and_line() {
        let e = err(p(
            RuleFormat::Cursor,
            ".cursor/rules/x.mdc",
            "---\ndescription: x\nglobs: 3\n---\nB\n",
        ));
        assert_eq!(e.line, Some(3));
        assert!(
            e.message.contains("`globs`") && e.message.contains("a number"),
            "{e:?}"
        );
        let e = err(p(
            RuleFormat::Cursor,
            ".cursor/rules/x.mdc",
            "---\nalwaysApply: \"true\"\n---\nB\n",
        ));
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("`alwaysApply`"), "{e:?}");
        let e = err(p(
            RuleFormat::Continue,
            ".continue/rules/x.md",
            "---\nname: x\nregex:\n  - [a]\n---\nB\n",
        ));
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("`regex`"), "{e:?}");
        let e = err(p(
            RuleFormat::Continue,
            ".continue/rules/x.md",
            "---\nname: [x]\n---\nB\n",
        ));
        assert!(e.message.contains("`name`"), "{e:?}");
    }

    #[test]
    fn broken_yaml_is_reported_at_its_line_and_column_in_the_file() {
        let e = err(p(
            RuleFormat::ClaudeRules,
            ".claude/rules/x.md",
            "---\npaths:\n  - \"src/**\"\n  bad: [\n---\nBody\n",
        ));
        assert!(e.line.is_some_and(|l| (4..=5).contains(&l)), "{e:?}");
        assert!(e.column.is_some(), "{e:?}");
        assert!(e.message.contains("not valid YAML"), "{e:?}");
        let e = err(p(
            RuleFormat::Cursor,
            ".cursor/rules/x.mdc",
            "---\ndescription: a\ndescription: b\n---\nB\n",
        ));
        assert!(e.line.is_some() && e.message.contains("duplicate"), "{e:?}");
        let e = err(p(
            RuleFormat::Copilot,
            ".github/instructions/x.instructions.md",
            "---\napplyTo: '**'\n",
        ));
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("never closed"));
        let e = err(p(
            RuleFormat::Copilot,
            ".github/instructions/x.instructions.md",
            "---\n- a\n---\nB\n",
        ));
        assert!(e.message.contains("mapping"));
    }

    #[test]
    fn refused_globs_name_the_glob_and_line() {
        for (glob, why) in [
            ("../x/*.ts", "`..`"),
            ("src/../../x", "`..`"),
            ("/etc/*", "absolute"),
            ("~/.ssh/*", "absolute"),
            ("C:/x/*", "absolute"),
            ("src/{a,b", "unclosed"),
        ] {
            let text = format!("---\ndescription: d\nglobs:\n  - ok/**\n  - \"{glob}\"\n---\nB\n");
            let e = err(p(RuleFormat::Continue, ".continue/rules/x.md", &text));
            assert_eq!(e.line, Some(5), "{glob}: {e:?}");
            assert!(e.message.contains(why), "{glob}: {e:?}");
        }
        let e = err(p(
            RuleFormat::Copilot,
            ".github/instructions/x.instructions.md",
            "---\napplyTo: \"src/**, ../secrets/*\"\n---\nB\n",
        ));
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("../secrets/*"), "{e:?}");
        let e = err(p(
            RuleFormat::ClaudeRules,
            ".claude/rules/x.md",
            "---\npaths: /etc/*\n---\nB\n",
        ));
        assert!(e.message.contains("/etc/*") && e.message.contains("absolute"));
    }

    #[test]
    fn claude_rules_read_paths_as_string_or_list_and_none_as_always() {
        let c = ".claude/rules/x.md";
        let r = rule(p(
            RuleFormat::ClaudeRules,
            c,
            "---\npaths:\n  - \"src/api/**/*.ts\"\n  - **/*.sql\n---\nAPI\n",
        ));
        assert_eq!(r.paths, paths(&["src/api/**/*.ts", "**/*.sql"]));
        let r = rule(p(
            RuleFormat::ClaudeRules,
            c,
            "---\npaths: src/**/*.{ts,tsx}, lib/**\n---\nx\n",
        ));
        assert_eq!(r.paths, paths(&["src/**/*.{ts,tsx}", "lib/**"]));
        let r = rule(p(RuleFormat::ClaudeRules, c, "Always.\n"));
        assert_eq!(
            (r.paths, r.content.as_str(), r.content_line),
            (None, "Always.", 1)
        );
        let r = rule(p(
            RuleFormat::ClaudeRules,
            c,
            "---\nglobs: **/*.cs\n---\nx\n",
        ));
        assert_eq!(
            r.paths,
            paths(&["**/*.cs"]),
            "globs, which Claude Code also reads"
        );
        let r = rule(p(RuleFormat::ClaudeRules, c, "---\ntitle: x\n---\nx\n"));
        assert_eq!(r.paths, None, "unknown keys are ignored");
    }

    #[test]
    fn copilot_reads_apply_to_and_exclude_agent() {
        let c = ".github/instructions/x.instructions.md";
        let r = rule(p(
            RuleFormat::Copilot,
            c,
            "---\napplyTo: \"**/*.ts,**/*.tsx\"\n---\nTS\n",
        ));
        assert_eq!(r.paths, paths(&["**/*.ts", "**/*.tsx"]));
        assert_eq!(
            rule(p(
                RuleFormat::Copilot,
                c,
                "---\napplyTo: \"**\"\n---\nAll\n"
            ))
            .paths,
            None
        );
        assert_eq!(
            rule(p(
                RuleFormat::Copilot,
                c,
                "---\napplyTo: '**'\nexcludeAgent: \"code-review\"\n---\nx\n"
            ))
            .paths,
            None
        );
        assert!(not_mapped(p(
            RuleFormat::Copilot,
            c,
            "---\napplyTo: '**'\nexcludeAgent: \"coding-agent\"\n---\nx\n"
        ))
        .contains("coding-agent"));
        assert!(not_mapped(p(RuleFormat::Copilot, c, "Just text.\n")).contains("applyTo"));
        assert!(
            not_mapped(p(RuleFormat::Copilot, c, "---\napplyTo: ''\n---\nx\n")).contains("empty")
        );
    }

    #[test]
    fn continue_reads_globs_regex_and_always_apply() {
        let c = ".continue/rules/x.md";
        let r = rule(p(
            RuleFormat::Continue,
            c,
            "---\nname: React\nglobs: \"**/*.{tsx,jsx}\"\nregex: \"^import React\"\ndescription: d\n---\nHooks.\n",
        ));
        assert_eq!(r.paths, paths(&["**/*.{tsx,jsx}"]));
        assert_eq!(r.regexes, vec!["^import React".to_string()]);
        let r = rule(p(
            RuleFormat::Continue,
            c,
            "---\nname: x\nglobs: [\"src/**/*.ts\", \"!**/*.test.ts\"]\nregex:\n  - useEffect\n  - useState\n---\nx\n",
        ));
        assert_eq!(r.paths, paths(&["src/**/*.ts", "!**/*.test.ts"]));
        assert_eq!(
            r.regexes,
            vec!["useEffect".to_string(), "useState".to_string()]
        );
        let r = rule(p(
            RuleFormat::Continue,
            c,
            "---\nname: x\nregex: TODO\n---\nx\n",
        ));
        assert_eq!(
            (r.paths, r.regexes.len()),
            (None, 1),
            "regex alone: any file"
        );
        let r = rule(p(
            RuleFormat::Continue,
            c,
            "---\nname: x\nglobs: src/**\nregex: y\nalwaysApply: true\n---\nx\n",
        ));
        assert_eq!(
            (r.paths, r.regexes.len()),
            (None, 0),
            "alwaysApply: true wins"
        );
        assert_eq!(
            rule(p(RuleFormat::Continue, c, "---\nname: x\n---\nx\n")).paths,
            None
        );
        assert!(not_mapped(p(
            RuleFormat::Continue,
            c,
            "---\nname: x\nalwaysApply: false\ndescription: d\n---\nx\n"
        ))
        .contains("description"));
        assert!(not_mapped(p(
            RuleFormat::Continue,
            c,
            "---\nname: x\nalwaysApply: false\n---\nx\n"
        ))
        .contains("manual"));
    }

    #[test]
    fn an_invalid_continue_regex_is_an_error_at_its_line() {
        let e = err(p(
            RuleFormat::Continue,
            ".continue/rules/x.md",
            "---\nname: x\nregex:\n  - ok\n  - \"(unclosed\"\n---\nx\n",
        ));
        assert_eq!(e.line, Some(5), "{e:?}");
        assert!(e.message.contains("(unclosed"), "{e:?}");
        let e = err(p(
            RuleFormat::Continue,
            ".continue/rules/x.md",
            "---\nname: x\nregex: \"(?<=a)b\"\n---\nx\n",
        ));
        assert_eq!(
            e.line,
            Some(3),
            "a look-behind the regex crate lacks: {e:?}"
        );
        let big = format!("---\nregex: '{}'\n---\nx\n", "a".repeat(5000));
        assert!(err(p(RuleFormat::Continue, ".continue/rules/x.md", &big))
            .message
            .contains("limit"));
    }

    #[test]
    fn our_export_marker_is_not_content() {
        let r = rule(p(
            RuleFormat::Cursor,
            ".cursor/rules/x.mdc",
            "---\nalwaysApply: true\n---\n<!-- guidebook export: x -->\n\nBody\n",
        ));
        assert_eq!((r.content.as_str(), r.content_line), ("Body", 6));
        assert_eq!(marker_id(&marker("a-b")), Some("a-b"));
    }

    #[test]
    fn guidebook_files_are_not_native() {
        assert!(p(
            RuleFormat::Guidebook,
            ".guidebook/a/guideline.yaml",
            "id: a"
        )
        .is_err());
    }

    #[test]
    fn commas_split_outside_braces() {
        assert_eq!(split_commas("a, b/{c,d} ,e"), vec!["a", "b/{c,d}", "e"]);
    }
}
