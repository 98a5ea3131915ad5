//! Runs every guideline's examples through the snapshot's own matching. Reads: a snapshot.
//!
//! An example is checked the way a real search would see it: the file's language decides
//! whether the guideline applies (the example's `path`, else the guideline's first language),
//! and the snapshot's matching, not a separate regex, decides whether it matches. Repository
//! scope is not an example's concern: it is checked as if in a repository the guideline covers.
//! An example's `path` is also checked against `scope.paths` (one without a path is not); its
//! `written` lines are what `in: changes` leaves see (every line when it has none).

use std::fmt;
use std::path::{Path, PathBuf};

use super::guideline::Expect;
use super::matching::{Edit, Text, Written};
use super::snapshot::{FilePlace, GuidelineSnapshot};
use crate::language::language_of;

/// One example that did not come out as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExampleFailure {
    /// The guideline's file and the line of the example's list item.
    pub path: PathBuf,
    pub line: Option<usize>,
    pub id: String,
    pub expect: Expect,
    /// 1-based position in its list.
    pub index: usize,
    /// What happened instead.
    pub why: String,
}

impl fmt::Display for ExampleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: ", self.path.display())?,
            None => write!(f, "{}: ", self.path.display())?,
        }
        write!(
            f,
            "{}: example {} of {} {}",
            self.id,
            self.index,
            self.expect.key(),
            self.why
        )
    }
}

/// What running the examples found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExampleReport {
    /// Guidelines that carry examples, and how many examples they carry.
    pub guidelines: usize,
    pub examples: usize,
    pub failures: Vec<ExampleFailure>,
}

/// Checks every example of every guideline in `snapshot`.
pub fn run_examples(snapshot: &GuidelineSnapshot) -> ExampleReport {
    let mut report = ExampleReport::default();
    for (index, compiled) in snapshot.guidelines.iter().enumerate() {
        let g = &compiled.guideline;
        if g.examples.is_empty() {
            continue;
        }
        report.guidelines += 1;
        for example in &g.examples {
            report.examples += 1;
            let language = match &example.path {
                Some(path) => language_of(Path::new(path)),
                None => g.languages.as_ref().and_then(|l| l.first().copied()),
            };
            let applicable = snapshot.applicability_in_any_repository(language);
            let text = Text::new(example.code.as_bytes()).in_language(language);
            let place = match &example.path {
                Some(path) => FilePlace::InRepository(Path::new(path)),
                None => FilePlace::Unchecked,
            };
            let edit = Edit::known(match &example.written {
                Some(lines) => Written::lines(lines.clone()),
                None => Written::All,
            });
            let matched = snapshot
                .matching_in(&text, &applicable, place, &edit)
                .contains(&index);
            let why = match (example.expect, matched) {
                (Expect::Match, true) | (Expect::NoMatch, false) => continue,
                (Expect::Match, false) if !applicable[index] => format!(
                    "did not match: the guideline does not apply to {} files",
                    language.unwrap_or("unrecognised")
                ),
                (Expect::Match, false) => match &example.path {
                    Some(path) if !snapshot.in_path_scope(index, Path::new(path)) => {
                        format!("did not match: `{path}` is outside the guideline's scope.paths")
                    }
                    _ => "did not match".to_string(),
                },
                (Expect::NoMatch, true) => match snapshot.first_match_in(index, &text, &edit) {
                    Some((line, pattern)) => {
                        format!("matched (line {line} of the example, pattern `{pattern}`)")
                    }
                    None => "matched".to_string(),
                },
            };
            report.failures.push(ExampleFailure {
                path: g.source.clone(),
                line: example.line,
                id: g.id.clone(),
                expect: example.expect,
                index: example.index,
                why,
            });
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guidebook::parse_guideline;
    use std::sync::Arc;

    const GUIDELINE: &str = "\
id: no-globalscope
scope:
  languages: [kotlin]
match:
  any:
    - regex:
        pattern: 'GlobalScope\\.launch'
content: Do not.
examples:
  match:
    - |
      GlobalScope.launch { }
    - code: GlobalScope.launch { }
      path: build.gradle.kts
    - scope.launch { }
    - code: GlobalScope.launch { }
      path: src/Main.java
  no_match:
    - viewModelScope.launch { }
    - |
      // fine
      GlobalScope.launch { }
";

    #[test]
    fn failures_name_the_file_line_guideline_and_example() {
        let path = Path::new("/g/no-globalscope/guideline.yaml");
        let g = parse_guideline(path, GUIDELINE).unwrap();
        let lines: Vec<Option<usize>> = g.examples.iter().map(|e| e.line).collect();
        assert_eq!(
            lines,
            [Some(11), Some(13), Some(15), Some(16), Some(19), Some(20)]
        );
        let snapshot = GuidelineSnapshot::build("/g".into(), vec![Arc::new(g)], Vec::new());
        let report = run_examples(&snapshot);
        assert_eq!((report.guidelines, report.examples), (1, 6));
        let failures: Vec<String> = report.failures.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            failures,
            [
                "/g/no-globalscope/guideline.yaml:15: no-globalscope: example 3 of match did not match",
                "/g/no-globalscope/guideline.yaml:16: no-globalscope: example 4 of match did not match: the guideline does not apply to java files",
                "/g/no-globalscope/guideline.yaml:20: no-globalscope: example 2 of no_match matched (line 2 of the example, pattern `GlobalScope\\.launch`)",
            ]
        );
    }

    /// Examples hold a composed, path-scoped, `in: changes` guideline to its meaning: the
    /// sample's examples pass, and each flipped expectation fails for the reason it should.
    #[test]
    fn examples_check_paths_composition_and_written_lines() {
        let path = Path::new("/g/sleep/guideline.yaml");
        let report = |yaml: &str| {
            let g = parse_guideline(path, yaml).unwrap();
            let snapshot = GuidelineSnapshot::build("/g".into(), vec![Arc::new(g)], Vec::new());
            run_examples(&snapshot)
                .failures
                .iter()
                .map(|f| f.why.clone())
                .collect::<Vec<_>>()
        };
        let composed = crate::guidebook::load::tests::COMPOSED;
        assert_eq!(report(composed), Vec::<String>::new());
        // The match example's written line moved off the sleep: no longer a match.
        let off = composed.replacen("written: [[2, 2]]", "written: [[1, 1]]", 1);
        assert_eq!(report(&off), ["did not match"]);
        // The file-wide `not`: an @Test anywhere in the file silences it.
        let tested = composed.replacen("val a = 1\\nThread", "@Test\\nThread", 1);
        assert_eq!(report(&tested), ["did not match"]);
        // Out of `scope.paths`, the reason says so.
        let outside = composed.replacen("path: src/main/A.kt", "path: lib/A.kt", 1);
        assert_eq!(
            report(&outside),
            ["did not match: `lib/A.kt` is outside the guideline's scope.paths"]
        );
        // `in: file`: the no_match example whose sleep is on an unwritten line now matches.
        let file = composed.replacen("in: changes", "in: file", 1);
        assert_eq!(
            report(&file),
            ["matched (line 1 of the example, pattern `Thread\\.sleep\\(`)"]
        );
    }
}
