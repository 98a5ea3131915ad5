//! Parses and validates one `guideline.yaml`: its YAML (the fast parser first, serde_yaml for
//! the rest and for every error) into a [`Guideline`], with the checks that span values.
//! Reads: a guideline file's text. Errors carry the path, line and a message.

use std::path::Path;

use serde::Deserialize;

use super::guideline::{Example, Expect, Guideline};
use super::matching::{index_of, structural_prefilter, Condition, Index, StructuralSpec, Within};
use super::yaml::{Event, RawCondition, RawExample, RawExamples, RawGuideline, RawScope};
pub use crate::watched::LoadError;
use crate::watched::{find_key_line, yaml_error};

/// A guideline file larger than this is refused rather than parsed: it is surely not a
/// hand-written guideline, and parsing it would stall a reload.
pub(crate) const MAX_GUIDELINE_BYTES: u64 = 256 * 1024;

/// Parses and validates one guideline file's text.
pub fn parse_guideline(path: &Path, text: &str) -> Result<Guideline, LoadError> {
    parse_guideline_with(path, text, Yaml::FastPathFirst)
}

/// Which YAML parser reads a guideline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yaml {
    /// `fast_yaml` when the file is within its subset and deserialises; serde_yaml otherwise
    /// (so every error is serde_yaml's, with its line and column).
    FastPathFirst,
    /// serde_yaml only: the reference the differential tests compare with.
    #[cfg(test)]
    SerdeYaml,
}

pub(crate) fn parse_guideline_with(
    path: &Path,
    text: &str,
    yaml: Yaml,
) -> Result<Guideline, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError::new(path, None, "the file is empty"));
    }
    let fast = match yaml {
        Yaml::FastPathFirst => {
            super::fast_yaml::parse(text).and_then(|node| RawGuideline::deserialize(&node).ok())
        }
        #[cfg(test)]
        Yaml::SerdeYaml => None,
    };
    let raw = match fast {
        Some(raw) => raw,
        None => serde_yaml::from_str(text).map_err(|e| yaml_error(path, text, &e))?,
    };
    let id_line = find_key_line(text, "id");
    if raw.content.trim().is_empty() {
        return Err(LoadError::new(
            path,
            find_key_line(text, "content"),
            "`content` is empty",
        ));
    }
    if let Some(when) = &raw.when {
        if when.is_empty() {
            return Err(LoadError::new(
                path,
                find_key_line(text, "when"),
                "`when` is an empty list; leave it out to mean [file_changed]",
            ));
        }
        debug_assert!(when.iter().all(|e| *e == Event::FileChanged));
    }
    let scope = raw.scope.unwrap_or(RawScope {
        repositories: None,
        languages: None,
        paths: None,
    });
    let examples = raw.examples.map(|e| examples(text, e)).unwrap_or_default();
    let at_match = || find_key_line(text, "match");
    let languages: Option<Vec<&'static str>> = scope
        .languages
        .as_ref()
        .map(|l| l.iter().map(|l| l.0).collect());
    let mut leaves = Leaves {
        languages: languages.as_deref(),
        patterns: Vec::new(),
        indexes: Vec::new(),
        structural: 0,
        failing_ast: None,
    };
    let condition = match raw.matcher {
        Some(matcher) => {
            let within = matcher.within.unwrap_or_default();
            let raw_condition = matcher
                .condition()
                .map_err(|e| LoadError::new(path, at_match(), e))?;
            match leaves.condition(raw_condition, within, 1) {
                Ok(c) => c,
                Err(e) => {
                    // Its line is looked for only now, for the structural leaf that failed.
                    let line = leaves.failing_ast.and_then(|n| ast_line(text, n));
                    return Err(LoadError::new(path, line.or_else(at_match), e));
                }
            }
        }
        // No `match`: every change of a file in scope (an `AGENTS.md` of a directory, say).
        None => Condition::always(),
    };
    let (patterns, indexes) = (leaves.patterns, leaves.indexes);
    Ok(Guideline {
        paths: scope.paths.map(|p| p.0.into_iter().map(|g| g.0).collect()),
        condition,
        severity: raw.severity.unwrap_or_default(),
        examples,
        id: raw.id.0,
        repositories: scope
            .repositories
            .map(|r| r.into_iter().map(|g| g.0).collect()),
        languages: scope
            .languages
            .map(|l| l.into_iter().map(|l| l.0).collect()),
        patterns,
        indexes: indexes.into(),
        content: raw.content,
        source: path.to_path_buf(),
        origin: Default::default(),
        id_line,
    })
}

/// The most regex leaves one `match` may hold, and how deep `any`/`all`/`not` may nest: a
/// guideline is read by people, and each leaf costs a search.
pub(crate) const MAX_LEAVES: usize = 64;
pub(crate) const MAX_DEPTH: usize = 8;

/// The patterns of a condition's leaves, numbered as they are met.
struct Leaves<'a> {
    /// `scope.languages`: a structural leaf is compiled for each.
    languages: Option<&'a [&'static str]>,
    patterns: Vec<String>,
    indexes: Vec<Index>,
    /// How many structural leaves were met so far.
    structural: usize,
    /// Which structural leaf (counted from 0) an error is about, while one is compiled.
    failing_ast: Option<usize>,
}

/// The 1-based line of the `n`th (0-based) `ast:` key at or after the line of `match:`.
fn ast_line(text: &str, n: usize) -> Option<usize> {
    let from = find_key_line(text, "match").unwrap_or(1);
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .filter(|(_, l)| {
            let l = l.trim_start();
            let l = l.strip_prefix('-').map_or(l, str::trim_start);
            l.strip_prefix("ast")
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .nth(n)
        .map(|(i, _)| i + 1)
}

impl Leaves<'_> {
    fn condition(
        &mut self,
        raw: RawCondition,
        within: Within,
        depth: usize,
    ) -> Result<Condition, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "`match` nests `any`/`all`/`not` more than {MAX_DEPTH} deep"
            ));
        }
        let list = |this: &mut Self, members: Vec<RawCondition>| {
            members
                .into_iter()
                .map(|m| this.condition(m, within, depth + 1))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match raw {
            RawCondition::Any(m) => Condition::Any(list(self, m)?),
            RawCondition::All(m) => Condition::All(list(self, m)?),
            RawCondition::Not(c) => {
                Condition::Not(Box::new(self.condition(*c, within, depth + 1)?))
            }
            RawCondition::Regex(r) => {
                if self.patterns.len() == MAX_LEAVES {
                    return Err(format!(
                        "`match` holds more than {MAX_LEAVES} regex conditions"
                    ));
                }
                self.patterns.push(r.pattern.0);
                self.indexes.push(r.pattern.1);
                Condition::Regex {
                    pattern: self.patterns.len() - 1,
                    within: r.within.unwrap_or(within),
                }
            }
            RawCondition::Ast(a) => {
                self.failing_ast = Some(self.structural);
                self.structural += 1;
                if self.patterns.len() == MAX_LEAVES {
                    return Err(format!(
                        "`match` holds more than {MAX_LEAVES} regex and ast conditions"
                    ));
                }
                let spec = StructuralSpec {
                    pattern: a.pattern,
                    inside: a.inside,
                    has: a.has,
                };
                let languages = self.languages.ok_or_else(|| {
                    "an `ast` condition needs `scope.languages`: a pattern is written in one language's syntax".to_string()
                })?;
                let prefilter = structural_prefilter(&spec, languages)?;
                let (regex, prefiltered) = match prefilter {
                    Some(regex) => (regex, true),
                    // Never searched: the leaf has no text to be found by.
                    None => ("(?:)".to_string(), false),
                };
                self.indexes.push(index_of(&regex));
                self.patterns.push(regex);
                self.failing_ast = None;
                Condition::Ast {
                    pattern: self.patterns.len() - 1,
                    within: a.within.unwrap_or(within),
                    ast: Box::new(spec),
                    prefiltered,
                }
            }
        })
    }
}

/// The examples of a guideline, each with the line of its list item in `text`.
fn examples(text: &str, raw: RawExamples) -> Vec<Example> {
    let lists = [
        (Expect::Match, raw.matches, "match"),
        (Expect::NoMatch, raw.no_match, "no_match"),
    ];
    let mut out = Vec::new();
    for (expect, items, key) in lists {
        let lines = item_lines(text, "examples", key);
        for (i, item) in items.into_iter().enumerate() {
            let (code, path, written) = match item {
                RawExample::Code(code) => (code, None, None),
                RawExample::WithPath(e) => (e.code, e.path.map(|p| p.0), e.written),
            };
            out.push(Example {
                expect,
                index: i + 1,
                code,
                path,
                written: written.map(|w| w.into_iter().map(|r| [r.0, r.1]).collect()),
                line: lines.get(i).copied(),
            });
        }
    }
    out
}

/// The 1-based lines of the list items under the top-level `section:`'s `key:`, in order. A
/// guideline is hand-written YAML in block style; flow-style lists give no lines.
fn item_lines(text: &str, section: &str, key: &str) -> Vec<usize> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = find_key_line(text, section) else {
        return Vec::new();
    };
    // The key inside the section: indented, before the section ends.
    let Some(key_line) = lines
        .iter()
        .enumerate()
        .skip(start)
        .take_while(|(_, l)| l.trim().is_empty() || indent(l) > 0)
        .find(|(_, l)| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|(n, _)| n)
    else {
        return Vec::new();
    };
    let key_indent = indent(lines[key_line]);
    let mut items = Vec::new();
    let mut item_indent = None;
    for (n, line) in lines.iter().enumerate().skip(key_line + 1) {
        if line.trim().is_empty() {
            continue;
        }
        let here = indent(line);
        if here < key_indent || (here == key_indent && !line.trim_start().starts_with("- ")) {
            break;
        }
        let is_item = line.trim_start().starts_with('-');
        match item_indent {
            None if is_item => {
                item_indent = Some(here);
                items.push(n + 1);
            }
            Some(i) if is_item && here == i => items.push(n + 1),
            _ => {}
        }
    }
    items
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::walk::GUIDELINE_FILE_NAME;
    use super::*;
    use crate::language;

    fn parse(text: &str) -> Result<Guideline, LoadError> {
        parse_guideline(Path::new("/g/x/guideline.yaml"), text)
    }

    pub(crate) const GOOD: &str = "id: no-println\nscope:\n  repositories: ['acme/*']\n  languages: [kotlin, java]\nwhen: [file_changed]\nmatch:\n  any:\n    - regex:\n        pattern: 'println\\('\ncontent: |\n  Use the logger.\n";

    #[test]
    fn parses_a_full_guideline() {
        let g = parse(GOOD).unwrap();
        assert_eq!(g.id, "no-println");
        assert_eq!(g.repositories, Some(vec!["acme/*".to_string()]));
        assert_eq!(g.languages, Some(vec!["kotlin", "java"]));
        assert_eq!(g.patterns, vec!["println\\(".to_string()]);
        assert_eq!(g.content, "Use the logger.\n");
        assert_eq!(g.id_line, Some(1));
        // Indexed from the parse that validated it, as the engine would index the text.
        let index = super::super::matching::index_of("println\\(");
        assert_eq!(g.indexes.get(), Some(&vec![index.clone()]));
        assert_eq!(index, super::Index::Prefixes(vec![b"println(".to_vec()]));
    }

    #[test]
    fn scope_and_when_are_optional() {
        let g = parse("id: a\nmatch:\n  any:\n    - regex: {pattern: x}\ncontent: c\n").unwrap();
        assert_eq!(g.repositories, None);
        assert_eq!(g.languages, None);
    }

    /// Without `match`, a guideline holds for every change of a file in its scope, and only
    /// there.
    #[test]
    fn a_guideline_without_match_holds_in_every_file_of_its_scope() {
        use crate::guidebook::{Edit, FilePlace, GuidelineSnapshot, Text, Written};
        let g = parse("id: a\nscope:\n  paths: ['/billing/']\ncontent: c\n").unwrap();
        assert_eq!(g.condition, Condition::always());
        assert!(g.patterns.is_empty());
        let s = GuidelineSnapshot::build("/g".into(), vec![std::sync::Arc::new(g)], vec![]);
        let all = s.applicability(None, None);
        let edit = Edit::known(Written::All);
        let hits = |rel: &str, text: &[u8]| {
            s.matching_in(
                &Text::new(text),
                &all,
                FilePlace::InRepository(Path::new(rel)),
                &edit,
            )
        };
        assert_eq!(hits("billing/a.kt", b"anything"), vec![0]);
        assert_eq!(hits("billing/sub/b.py", b""), vec![0]);
        assert!(hits("web/a.kt", b"anything").is_empty());
    }

    fn err(text: &str) -> LoadError {
        parse(text).unwrap_err()
    }

    pub(crate) const COMPOSED: &str = "\
id: sleep-outside-tests
scope:
  languages: [kotlin]
  paths: ['src/**', '!**/test/**']
match:
  in: changes
  all:
    - any:
        - regex: {pattern: 'Thread\\.sleep\\('}
        - regex: {pattern: 'TimeUnit\\.\\w+\\.sleep\\('}
    - not:
        regex: {pattern: '@Test', in: file}
content: Use delay().
examples:
  match:
    - code: \"val a = 1\\nThread.sleep(5)\\n\"
      path: src/main/A.kt
      written: [[2, 2]]
  no_match:
    - code: \"Thread.sleep(5)\\nval a = 1\\n\"
      path: src/main/A.kt
      written: [[2, 2]]
    - code: Thread.sleep(5)
      path: src/test/A.kt
";

    #[test]
    fn parses_paths_and_a_composed_condition() {
        use super::super::matching::Condition::{All, Any, Not, Regex};
        let g = parse(COMPOSED).unwrap();
        assert_eq!(
            g.paths,
            Some(vec!["src/**".to_string(), "!**/test/**".to_string()])
        );
        assert_eq!(g.patterns.len(), 3);
        assert_eq!(
            g.condition,
            All(vec![
                Any(vec![
                    Regex {
                        pattern: 0,
                        within: Within::Changes
                    },
                    Regex {
                        pattern: 1,
                        within: Within::Changes
                    },
                ]),
                Not(Box::new(Regex {
                    pattern: 2,
                    within: Within::File
                })),
            ])
        );
        assert_eq!(g.examples[0].written, Some(vec![[2, 2]]));
        assert_eq!(
            g.severity,
            super::super::guideline::Severity::Info,
            "the default"
        );
        let block =
            parse(&COMPOSED.replace("content: Use", "severity: block\ncontent: Use")).unwrap();
        assert_eq!(block.severity, super::super::guideline::Severity::Block);
        let e = err(&COMPOSED.replace("content: Use", "severity: fatal\ncontent: Use"));
        assert!(e.message.contains("`info`, `warn`"), "{e}");
        assert_eq!(e.line, Some(13), "{e}");
        assert_eq!(g.indexes.get().map(Vec::len), Some(3));
        // Today's shape is still read as it was: any of its leaves over the whole file.
        let old = parse(GOOD).unwrap();
        assert_eq!(
            old.condition,
            super::super::matching::Condition::any_in_file(1)
        );
        assert!(old.condition.is_plain());
        // `match` may also be a single leaf.
        let leaf = parse("id: a\nmatch:\n  regex: {pattern: x}\ncontent: c\n").unwrap();
        assert_eq!(
            leaf.condition,
            Regex {
                pattern: 0,
                within: Within::File
            }
        );
    }

    /// Mistakes in the new language are refused with the line they are on and what to do.
    #[test]
    fn composed_conditions_and_path_globs_are_checked() {
        let e = err(&COMPOSED.replace("'!**/test/**'", "'src/{a'"));
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("invalid path glob `src/{a`"), "{e}");
        let e = err(&COMPOSED.replace("in: changes", "in: diff"));
        assert_eq!(e.line, Some(6), "{e}");
        assert!(
            e.message.contains("`file`") && e.message.contains("`changes`"),
            "{e}"
        );
        let e = err(&COMPOSED.replace("    - not:\n", "    - nope:\n"));
        assert!(e.message.contains("unknown field `nope`"), "{e}");
        assert_eq!(e.line, Some(11), "{e}");
        let e = err("id: a\nmatch:\n  in: changes\ncontent: c\n");
        assert!(
            e.message
                .contains("needs one of `any`, `all`, `not`, `regex` or `ast`"),
            "{e}"
        );
        let e = err("id: a\nmatch:\n  any: []\ncontent: c\n");
        assert!(e.message.contains("`any` must list at least one"), "{e}");
        let e = err("id: a\nmatch:\n  all:\n    - regex: {pattern: x}\n      not: {regex: {pattern: y}}\ncontent: c\n");
        assert!(e.message.contains("exactly one of"), "{e}");
        assert_eq!(e.line, Some(4), "{e}");
        let e = err("id: a\nscope:\n  paths: []\nmatch:\n  regex: {pattern: x}\ncontent: c\n");
        assert_eq!(e.line, Some(3), "{e}");
        let deep = format!(
            "id: a\nmatch:\n{}content: c\n",
            (0..=MAX_DEPTH)
                .fold("regex: {pattern: x}".to_string(), |inner, _| format!(
                    "not: {{{inner}}}"
                ))
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        );
        assert!(
            err(&deep).message.contains("more than 8 deep"),
            "{}",
            err(&deep)
        );
        let many = format!(
            "id: a\nmatch:\n  any:\n{}content: c\n",
            (0..=MAX_LEAVES)
                .map(|i| format!("    - regex: {{pattern: x{i}}}\n"))
                .collect::<String>()
        );
        assert!(
            err(&many).message.contains("more than 64 regex"),
            "{}",
            err(&many)
        );
        let e = err(&COMPOSED.replace("[[2, 2]]", "[[3, 2]]"));
        assert!(e.message.contains("first <= last"), "{e}");
    }

    #[test]
    fn rejects_with_line_numbers() {
        let e = err(&GOOD.replace("pattern: 'println\\('", "pattern: 'println('"));
        assert_eq!(e.line, Some(9), "{e}");
        assert!(
            e.message
                .contains("invalid regex `println(`: unclosed group"),
            "{e}"
        );
        assert!(!e.message.contains('\n'), "one line: {e}");

        let e = err(&GOOD.replace("[kotlin, java]", "[kotlin, kotln]"));
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("unknown language `kotln`"), "{e}");

        let e = err(&GOOD.replace("[file_changed]", "[file_deleted]"));
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.message.contains("file_deleted"), "{e}");

        let e = err(&format!("{GOOD}colour: red\n"));
        assert!(e.message.contains("unknown field `colour`"), "{e}");
        assert_eq!(e.line, Some(12), "{e}");

        let e = err(&GOOD.replace("  languages:", "  langs:"));
        assert!(e.message.contains("unknown field `langs`"), "{e}");

        let e = err(&GOOD.replace("id: no-println", "id: No Println"));
        assert!(e.message.contains("invalid id"), "{e}");

        let e = err("id: a\nmatch:\n  any: []\ncontent: c\n");
        assert!(e.message.contains("at least one"), "{e}");
        assert_eq!(e.line, Some(2));

        let e = err("id: a\nmatch:\n  any:\n    - regex: {pattern: x}\n");
        assert!(e.message.contains("content"), "{e}");

        let e = err("id: [unclosed\n");
        assert!(e.line.is_some(), "{e}");
    }

    /// A tab in the indentation, by either parser: the fast path leaves every file with a tab
    /// to serde_yaml, whose own words name no tab and whose line alone did not say where.
    #[test]
    fn a_tab_in_the_indentation_is_named_with_its_line_and_column() {
        let text = "id: a\nmatch:\n  any:\n  \t- regex: {pattern: x}\ncontent: c\n";
        for yaml in [Yaml::FastPathFirst, Yaml::SerdeYaml] {
            let e = parse_guideline_with(Path::new("/g/a/guideline.yaml"), text, yaml).unwrap_err();
            assert_eq!((e.line, e.column), (Some(4), Some(3)), "{yaml:?}: {e}");
            assert!(
                e.to_string()
                    .starts_with("/g/a/guideline.yaml:4:3: a tab in the indentation"),
                "{yaml:?}: {e}"
            );
            assert!(e.message.contains("YAML forbids tabs"), "{yaml:?}: {e}");
        }
        // The report of the issue: a tab as the whole indentation of line 3.
        let e = err("id: a\nmatch:\n\tany: []\n");
        assert_eq!((e.line, e.column), (Some(3), Some(1)), "{e}");
        assert!(e.message.starts_with("a tab"), "{e}");
        // A syntax error without a tab keeps serde_yaml's words, with its column.
        let e = err("id: [unclosed\n");
        assert!(e.column.is_some() && !e.message.contains("tab"), "{e}");
    }

    #[test]
    fn refuses_patterns_that_compile_too_large() {
        let e = err(&GOOD.replace("'println\\('", "'(\\w{100}){100}'"));
        assert!(e.message.contains("invalid regex"), "{e}");
        assert!(e.message.contains("exceeds size limit"), "{e}");
    }

    /// The JSON Schema that editors use and the validator the sidecar uses must agree: on the
    /// sample guidebook (all valid) and on a set of broken guidelines (all invalid).
    #[test]
    fn the_json_schema_and_the_validator_agree() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../guidebook/schema/guideline.schema.json"))
                .unwrap();
        let languages: Vec<&str> = schema["$defs"]["language"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(languages, language::LANGUAGES);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let as_json = |yaml: &str| -> serde_json::Value { serde_yaml::from_str(yaml).unwrap() };

        for (path, text) in crate::sample::SAMPLE_FILES {
            if path.ends_with(GUIDELINE_FILE_NAME) {
                assert!(parse(text).is_ok(), "{path}: {:?}", parse(text).err());
                assert!(validator.is_valid(&as_json(text)), "{path}");
            }
        }
        let broken = [
            GOOD.replace("no-println", "No-Println"),
            GOOD.replace("no-println", &"a".repeat(129)),
            GOOD.replace("[kotlin, java]", "[kotlin, cobol]"),
            GOOD.replace("[file_changed]", "[file_saved]"),
            format!("{GOOD}extra: 1\n"),
            GOOD.replace("  languages:", "  langs:"),
            "id: a\nmatch:\n  any: []\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x, flags: i}\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x}\n".to_string(),
            "id: a\nmatch:\n  any:\n    - regex: {pattern: x}\ncontent: ''\n".to_string(),
            format!("{GOOD}examples:\n  matches: [x]\n"),
            format!("{GOOD}examples:\n  match:\n    - {{code: x, file: a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - {{code: x, path: /abs/a.kt}}\n"),
            format!("{GOOD}examples:\n  no_match:\n    - {{code: x, path: src/../../a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - {{path: a.kt}}\n"),
            format!("{GOOD}examples:\n  match:\n    - 3\n"),
        ];
        let broken = [
            broken.to_vec(),
            vec![
                COMPOSED.replace("in: changes", "in: diff"),
                COMPOSED.replace("paths: ['src/**', '!**/test/**']", "paths: []"),
                COMPOSED.replace("paths: ['src/**', '!**/test/**']", "paths: ['!']"),
                COMPOSED.replace("regex: {pattern: '@Test', in: file}", "regex: {pattern: '@Test', in: nowhere}"),
                "id: a\nmatch:\n  in: changes\ncontent: c\n".to_string(),
                "id: a\nmatch:\n  all: []\ncontent: c\n".to_string(),
                "id: a\nmatch:\n  not: {}\ncontent: c\n".to_string(),
                "id: a\nmatch:\n  regex: {pattern: x}\n  any:\n    - regex: {pattern: y}\ncontent: c\n".to_string(),
                "id: a\nmatch:\n  all:\n    - in: changes\n      regex: {pattern: y}\ncontent: c\n".to_string(),
                COMPOSED.replace("[[2, 2]]", "[[0, 2]]"),
                COMPOSED.replace("content: Use", "severity: fatal\ncontent: Use"),
            ],
            [
                "ast: {pattern: 'foo()', kind: call}",
                "ast: {pattern: ''}",
                "ast: {inside: 'class $C'}",
                "ast: {pattern: 'foo()', in: diff}",
                "ast: {pattern: 'foo()'}\n  regex: {pattern: x}",
            ]
            .map(|leaf| format!("id: a\nscope:\n  languages: [kotlin]\nmatch:\n  {leaf}\ncontent: c\n"))
            .to_vec(),
        ]
        .concat();
        for good in [
            COMPOSED.to_string(),
            "id: a\nmatch:\n  not:\n    not:\n      regex: {pattern: x}\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  regex: {pattern: x, in: changes}\ncontent: c\n".to_string(),
            "id: a\nmatch:\n  regex: {pattern: x}\nseverity: warn\ncontent: c\n".to_string(),
            "id: a\nscope:\n  languages: [kotlin, java]\nmatch:\n  all:\n    - ast: {pattern: 'runBlocking($$$)', inside: 'outer($$$)', in: changes}\n    - not:\n        ast: {pattern: 'foo($A)', has: 'bar'}\ncontent: c\n".to_string(),
        ] {
            assert!(parse(&good).is_ok(), "{:?}", parse(&good).err());
            assert!(
                validator.is_valid(&as_json(&good)),
                "the schema refused:\n{good}"
            );
        }
        let with_examples = format!(
            "{GOOD}examples:\n  match:\n    - println(x)\n    - {{code: y, path: src/A.java}}\n  no_match: []\n"
        );
        assert!(
            parse(&with_examples).is_ok(),
            "{:?}",
            parse(&with_examples).err()
        );
        assert!(validator.is_valid(&as_json(&with_examples)));
        for text in &broken {
            assert!(parse(text).is_err(), "the validator accepted:\n{text}");
            assert!(
                !validator.is_valid(&as_json(text)),
                "the schema accepted:\n{text}"
            );
        }
    }
}
