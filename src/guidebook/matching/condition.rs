//! A guideline's `match` condition: regex leaves combined with `any`, `all` and `not`, each
//! leaf looking at the whole file or only at the lines the latest edit wrote (`in`), and its
//! evaluation on one file's content. Reads and writes nothing.
//!
//! Under `in: changes` a leaf holds when one of its matches overlaps a written line; `not`
//! inverts its condition as it is (so `not` of a `changes` leaf holds when the edit wrote no
//! match), `all` needs every member, `any` one. A leaf's own `in` overrides the one of `match`.
//!
//! A structural leaf (`ast`) is an ast-grep pattern matched on the file's syntax tree
//! (`structural`); its position in `patterns` holds a regex of the text every match needs, so
//! that the literal index finds its candidates and a file without that text is never parsed.

use edits::LineRanges;
use std::cell::OnceCell;

use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use super::structural::{StructuralSpec, SyntaxTree};

/// Where a regex leaf looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Within {
    /// Anywhere in the file (the default).
    #[default]
    File,
    /// Only matches that overlap a line the latest edit wrote.
    Changes,
}

impl Within {
    pub fn as_str(self) -> &'static str {
        match self {
            Within::File => "file",
            Within::Changes => "changes",
        }
    }
}

/// A `match` condition, validated. Leaves name their pattern by its position in the
/// guideline's `patterns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    Any(Vec<Condition>),
    All(Vec<Condition>),
    Not(Box<Condition>),
    Regex {
        pattern: usize,
        within: Within,
    },
    /// A structural leaf: `patterns[pattern]` is the regex of the text each of its matches
    /// needs (`prefiltered`), or a placeholder never searched when the pattern has no fixed
    /// token (then every file of the guideline's languages is parsed).
    Ast {
        pattern: usize,
        within: Within,
        ast: Box<StructuralSpec>,
        prefiltered: bool,
    },
}

impl Condition {
    /// Any of `patterns` patterns over the whole file: the condition of a guideline that
    /// lists its regexes under `match.any`.
    pub fn any_in_file(patterns: usize) -> Condition {
        Condition::Any(
            (0..patterns)
                .map(|pattern| Condition::Regex {
                    pattern,
                    within: Within::File,
                })
                .collect(),
        )
    }

    /// The condition of a guideline without `match`: it holds in every file of its scope
    /// (`all` of nothing), which makes every such file a candidate.
    pub fn always() -> Condition {
        Condition::All(Vec::new())
    }

    /// Today's shape: any of some leaves, each over the whole file. Such a guideline matches
    /// exactly when one of its patterns does, which the literal index decides on its own.
    pub fn is_plain(&self) -> bool {
        match self {
            Condition::Any(members) => members.iter().all(|m| {
                matches!(
                    m,
                    Condition::Regex {
                        within: Within::File,
                        ..
                    }
                )
            }),
            Condition::Regex {
                within: Within::File,
                ..
            } => true,
            _ => false,
        }
    }

    /// The leaves that must hold somewhere for the condition to hold, when there are such
    /// (`None`: the condition can hold with no leaf matching, as `not` alone does). A file in
    /// which none of them matches cannot match, so only these are indexed.
    pub fn required_leaves(&self) -> Option<Vec<usize>> {
        match self {
            Condition::Regex { pattern, .. } => Some(vec![*pattern]),
            Condition::Ast {
                pattern,
                prefiltered,
                ..
            } => prefiltered.then(|| vec![*pattern]),
            Condition::Not(_) => None,
            Condition::Any(members) => {
                let mut all = Vec::new();
                for m in members {
                    all.extend(m.required_leaves()?);
                }
                Some(all)
            }
            // Every member must hold: the first one that needs a leaf is enough to index by.
            Condition::All(members) => members.iter().find_map(Condition::required_leaves),
        }
    }

    /// Evaluates the condition, asking `leaf` whether a leaf holds (short-circuiting).
    pub fn holds(&self, leaf: &mut impl FnMut(usize, Within) -> bool) -> bool {
        match self {
            Condition::Regex { pattern, within }
            | Condition::Ast {
                pattern, within, ..
            } => leaf(*pattern, *within),
            Condition::Not(c) => !c.holds(leaf),
            Condition::Any(m) => m.iter().any(|c| c.holds(leaf)),
            Condition::All(m) => m.iter().all(|c| c.holds(leaf)),
        }
    }

    /// Every leaf, in the order written: `(pattern, within, negated)`, `negated` when it sits
    /// under an odd number of `not`s.
    pub fn leaves(&self) -> Vec<(usize, Within, bool)> {
        fn walk(c: &Condition, negated: bool, out: &mut Vec<(usize, Within, bool)>) {
            match c {
                Condition::Regex { pattern, within }
                | Condition::Ast {
                    pattern, within, ..
                } => out.push((*pattern, *within, negated)),
                Condition::Not(c) => walk(c, !negated, out),
                Condition::Any(m) | Condition::All(m) => {
                    m.iter().for_each(|c| walk(c, negated, out))
                }
            }
        }
        let mut out = Vec::new();
        walk(self, false, &mut out);
        out
    }

    /// Every structural leaf: its position in `patterns`, what it says, and whether that
    /// position holds the regex of the text its matches need.
    pub fn structural(&self) -> Vec<(usize, &StructuralSpec, bool)> {
        fn walk<'a>(c: &'a Condition, out: &mut Vec<(usize, &'a StructuralSpec, bool)>) {
            match c {
                Condition::Regex { .. } => {}
                Condition::Ast {
                    pattern,
                    ast,
                    prefiltered,
                    ..
                } => out.push((*pattern, ast, *prefiltered)),
                Condition::Not(c) => walk(c, out),
                Condition::Any(m) | Condition::All(m) => m.iter().for_each(|c| walk(c, out)),
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

/// The lines the latest edit wrote in a file, as the search was told them or worked them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Every line (a new file, an untracked one, or nothing better known).
    All,
    /// These lines.
    Lines(LineRanges),
}

impl Written {
    /// These lines.
    pub fn lines(lines: impl Into<LineRanges>) -> Written {
        Written::Lines(lines.into())
    }

    /// Whether any of the lines `first..=last` was written.
    pub fn overlaps(&self, first: usize, last: usize) -> bool {
        match self {
            Written::All => true,
            Written::Lines(lines) => lines.overlaps(first, last),
        }
    }

    /// Whether no line was written.
    pub fn is_empty(&self) -> bool {
        matches!(self, Written::Lines(r) if r.is_empty())
    }
}

/// The start offset of every line of a text, to turn byte offsets into 1-based lines.
#[derive(Debug)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    pub fn of(content: &[u8]) -> LineStarts {
        let mut starts = vec![0];
        starts.extend(
            content
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineStarts(starts)
    }

    /// The byte offset line `line` (1-based) starts at, if the text has that line.
    pub fn start_of(&self, line: usize) -> Option<usize> {
        line.checked_sub(1).and_then(|i| self.0.get(i)).copied()
    }

    /// The 1-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.0.partition_point(|s| *s <= offset)
    }

    /// The lines a match `start..end` spans (an empty match: its line).
    pub fn span(&self, start: usize, end: usize) -> (usize, usize) {
        let first = self.line_of(start);
        (first, self.line_of(end.saturating_sub(1).max(start)))
    }
}

/// What one file's evaluation knows of the edit: the written lines, given or worked out on
/// first need (working them out may run `git`, which most files never need).
pub struct Edit<'a> {
    written: OnceCell<Written>,
    find: Box<dyn Fn() -> Written + 'a>,
}

impl<'a> Edit<'a> {
    /// Written lines known already.
    pub fn known(written: Written) -> Edit<'a> {
        let cell = OnceCell::new();
        let _ = cell.set(written);
        Edit {
            written: cell,
            find: Box::new(|| Written::All),
        }
    }

    /// Written lines that `find` works out if a leaf asks.
    pub fn lazy(find: impl Fn() -> Written + 'a) -> Edit<'a> {
        Edit {
            written: OnceCell::new(),
            find: Box::new(find),
        }
    }

    pub fn written(&self) -> &Written {
        self.written.get_or_init(|| (self.find)())
    }
}

/// One file's content with its line starts and its `guidebook:allow` comments, each worked out
/// on first need.
pub struct Text<'a> {
    pub bytes: &'a [u8],
    /// The file's language, which structural leaves parse it in (`None`: they never hold).
    pub language: Option<&'static str>,
    lines: OnceCell<LineStarts>,
    allows: OnceCell<Allows>,
    /// The file parsed in its language, on the first structural leaf's need: at most once per
    /// evaluation however many leaves ask.
    tree: OnceCell<Option<SyntaxTree>>,
}

impl<'a> Text<'a> {
    pub fn new(bytes: &'a [u8]) -> Text<'a> {
        Text {
            bytes,
            language: None,
            lines: OnceCell::new(),
            allows: OnceCell::new(),
            tree: OnceCell::new(),
        }
    }

    /// The same text, of a file in `language` (what structural leaves parse it as).
    pub fn in_language(mut self, language: Option<&'static str>) -> Text<'a> {
        self.language = language;
        self
    }

    /// The file's syntax tree, parsed on first need; `None` without a language whose grammar
    /// is built in, or for content that is not UTF-8.
    pub(crate) fn tree(&self) -> Option<&SyntaxTree> {
        self.tree
            .get_or_init(|| SyntaxTree::parse(self.language?, self.bytes))
            .as_ref()
    }

    pub fn lines(&self) -> &LineStarts {
        self.lines.get_or_init(|| LineStarts::of(self.bytes))
    }

    /// The file's `guidebook:allow` comments.
    pub fn allows(&self) -> &Allows {
        self.allows.get_or_init(|| Allows::of(self))
    }
}

/// The `guidebook:allow` comments of a file: per line, the guideline ids it allows. A match of
/// an allowed guideline on that line or the line after does not count.
#[derive(Debug, Default)]
pub struct Allows {
    /// `(line, id)`, sorted.
    entries: Vec<(usize, String)>,
}

impl Allows {
    fn of(text: &Text<'_>) -> Allows {
        // The marker, blanks, then ids separated by commas (a guidebook's, or a repository's
        // own `repo:…`); the list ends at anything else.
        static ALLOW: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
            Regex::new(
                r"guidebook:allow[ \t]+((?:repo:[A-Za-z0-9._/-]+|[a-z0-9][a-z0-9-]*)(?:[ \t]*,[ \t]*(?:repo:[A-Za-z0-9._/-]+|[a-z0-9][a-z0-9-]*))*)",
            )
            .expect("a valid regex")
        });
        let mut entries = Vec::new();
        // The regex's literal prefilter skips a file without the marker at memchr speed.
        for c in ALLOW.captures_iter(text.bytes) {
            let (Some(all), Some(list)) = (c.get(0), c.get(1)) else {
                continue;
            };
            let line = text.lines().line_of(all.start());
            for id in String::from_utf8_lossy(list.as_bytes()).split(',') {
                entries.push((line, id.trim().to_string()));
            }
        }
        entries.sort();
        entries.dedup();
        Allows { entries }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether any comment of the file allows guideline `id`.
    pub fn names(&self, id: &str) -> bool {
        self.entries.iter().any(|(_, i)| i == id)
    }

    /// Whether a match of guideline `id` on `line` is allowed (by that line or the one before).
    pub fn allows(&self, id: &str, line: usize) -> bool {
        self.entries
            .iter()
            .any(|(l, i)| i == id && (*l == line || *l + 1 == line))
    }
}

/// Whether a regex leaf holds in `text`, and if so where its first match that counts starts
/// (under `changes`, the first that overlaps a written line; with `allowed_for`, the first not
/// allowed for that guideline by a `guidebook:allow` comment): its byte offset and 1-based line.
#[cfg(test)]
pub fn leaf_line(
    regex: &Regex,
    within: Within,
    text: &Text<'_>,
    edit: &Edit<'_>,
    allowed_for: Option<&str>,
) -> Option<(usize, usize)> {
    leaf_line_in(regex, false, within, text, edit, allowed_for)
}

/// [`leaf_line`] for a regex whose matches, when `one_line`, never hold a newline: under
/// `changes` only the written lines are searched (a match that overlaps one starts on it), not
/// the whole file.
pub fn leaf_line_in(
    regex: &Regex,
    one_line: bool,
    within: Within,
    text: &Text<'_>,
    edit: &Edit<'_>,
    allowed_for: Option<&str>,
) -> Option<(usize, usize)> {
    let written = match within {
        Within::File => None,
        Within::Changes => match edit.written() {
            Written::All => None,
            w if w.is_empty() => return None,
            w => Some(w),
        },
    };
    let allowed = |line: usize| allowed_for.is_some_and(|id| text.allows().allows(id, line));
    match written {
        None if allowed_for.is_none() => regex
            .find(text.bytes)
            .map(|m| (m.start(), text.lines().line_of(m.start()))),
        None => regex.find_iter(text.bytes).find_map(|m| {
            let line = text.lines().line_of(m.start());
            (!allowed(line)).then_some((m.start(), line))
        }),
        Some(Written::Lines(ranges)) if one_line => {
            let lines = text.lines();
            ranges.as_slice().iter().find_map(|&[first, last]| {
                // The written lines' bytes, their final newline included, so that `$` and
                // `\b` at the end see what follows as in the whole file.
                let start = lines.start_of(first)?;
                let end = lines.start_of(last + 1).unwrap_or(text.bytes.len());
                let span = &text.bytes[..end];
                let mut at = start;
                while at <= end {
                    let m = regex.find_at(span, at)?;
                    let line = lines.line_of(m.start());
                    if line > last {
                        return None;
                    }
                    if !allowed(line) {
                        return Some((m.start(), line));
                    }
                    at = if m.end() > m.start() {
                        m.end()
                    } else {
                        m.end() + 1
                    };
                }
                None
            })
        }
        Some(written) => regex.find_iter(text.bytes).find_map(|m| {
            let (first, last) = text.lines().span(m.start(), m.end());
            (written.overlaps(first, last) && !allowed(first)).then_some((m.start(), first))
        }),
    }
}

/// The first of a structural leaf's matches (byte ranges, by start) that counts: under
/// `changes` the first whose lines overlap a written line, with `allowed_for` the first whose
/// first line no `guidebook:allow` comment allows for that guideline. Its range and first line.
pub fn leaf_node_in(
    matches: &[(usize, usize)],
    within: Within,
    text: &Text<'_>,
    edit: &Edit<'_>,
    allowed_for: Option<&str>,
) -> Option<(usize, usize, usize)> {
    let written = match within {
        Within::File => None,
        Within::Changes => match edit.written() {
            Written::All => None,
            w if w.is_empty() => return None,
            w => Some(w),
        },
    };
    matches.iter().find_map(|&(start, end)| {
        let (first, last) = text.lines().span(start, end);
        let counts = written.is_none_or(|w| w.overlaps(first, last))
            && !allowed_for.is_some_and(|id| text.allows().allows(id, first));
        counts.then_some((start, end, first))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(p: usize, within: Within) -> Condition {
        Condition::Regex { pattern: p, within }
    }

    #[test]
    fn written_ranges_merge_and_overlap() {
        let w = Written::lines(vec![[10, 12], [3, 3], [4, 5], [20, 19], [11, 14]]);
        assert_eq!(w, Written::lines(vec![[3, 5], [10, 14]]));
        let hits: Vec<usize> = (1..=16).filter(|&l| w.overlaps(l, l)).collect();
        assert_eq!(hits, [3, 4, 5, 10, 11, 12, 13, 14]);
        assert!(w.overlaps(1, 3) && w.overlaps(6, 10) && !w.overlaps(6, 9));
        assert!(Written::lines(vec![]).is_empty() && !Written::lines(vec![]).overlaps(1, 99));
        assert!(Written::All.overlaps(7, 7));
    }

    #[test]
    fn lines_of_offsets_and_spans() {
        let text = b"ab\ncd\n\nef";
        let lines = LineStarts::of(text);
        let at: Vec<usize> = (0..text.len()).map(|o| lines.line_of(o)).collect();
        assert_eq!(at, [1, 1, 1, 2, 2, 2, 3, 4, 4]);
        assert_eq!(lines.span(1, 4), (1, 2), "b\\nc spans two lines");
        assert_eq!(
            lines.span(0, 3),
            (1, 1),
            "a match ending at the newline stays on its line"
        );
        assert_eq!(lines.span(7, 7), (4, 4), "an empty match sits on its line");
    }

    #[test]
    fn required_leaves_and_plainness() {
        let (a, b, c) = (
            leaf(0, Within::File),
            leaf(1, Within::Changes),
            leaf(2, Within::File),
        );
        assert!(Condition::Any(vec![a.clone(), c.clone()]).is_plain());
        assert!(!Condition::Any(vec![a.clone(), b.clone()]).is_plain());
        assert!(!Condition::All(vec![a.clone()]).is_plain());
        let x_not_y = Condition::All(vec![
            Condition::Not(Box::new(c.clone())),
            Condition::Any(vec![a.clone(), b.clone()]),
        ]);
        assert_eq!(x_not_y.required_leaves(), Some(vec![0, 1]));
        assert_eq!(Condition::Not(Box::new(a.clone())).required_leaves(), None);
        assert_eq!(
            Condition::Any(vec![a.clone(), Condition::Not(Box::new(c.clone()))]).required_leaves(),
            None,
            "`any` with a `not` member can hold with no leaf matching"
        );
        assert_eq!(
            x_not_y.leaves(),
            [
                (2, Within::File, true),
                (0, Within::File, false),
                (1, Within::Changes, false)
            ]
        );
        let held = [true, false, true];
        assert!(
            !x_not_y.holds(&mut |p, _| held[p]),
            "Y (leaf 2) holds, so not Y fails"
        );
        let held = [true, false, false];
        assert!(x_not_y.holds(&mut |p, _| held[p]));
    }
}

#[cfg(test)]
mod leaf_tests {
    use super::*;

    #[test]
    fn a_changes_leaf_holds_only_on_written_lines() {
        let text = Text::new(b"a Thread.sleep(1)\nb\nc Thread.sleep(2)\nd\n");
        let re = Regex::new(r"Thread\.sleep\(").unwrap();
        let on = |w: Written| {
            leaf_line(&re, Within::Changes, &text, &Edit::known(w), None).map(|(_, line)| line)
        };
        assert_eq!(on(Written::lines(vec![[2, 2]])), None);
        assert_eq!(on(Written::lines(vec![[2, 3]])), Some(3));
        assert_eq!(on(Written::lines(vec![])), None);
        assert_eq!(on(Written::All), Some(1));
        let file = leaf_line(
            &re,
            Within::File,
            &text,
            &Edit::known(Written::lines(vec![])),
            None,
        );
        assert_eq!(file, Some((2, 1)), "`in: file` ignores what was written");
        let multi = Regex::new(r"(?s)sleep\(1\).b").unwrap();
        assert_eq!(
            leaf_line(
                &multi,
                Within::Changes,
                &text,
                &Edit::known(Written::lines(vec![[2, 2]])),
                None
            ),
            Some((9, 1)),
            "a match spanning into a written line counts, reported at its first line"
        );
    }

    #[test]
    fn lazy_written_lines_are_worked_out_once_and_only_when_asked() {
        let calls = std::cell::Cell::new(0);
        let edit = Edit::lazy(|| {
            calls.set(calls.get() + 1);
            Written::lines(vec![[1, 1]])
        });
        let text = Text::new(b"x\n");
        let re = Regex::new("x").unwrap();
        assert_eq!(
            leaf_line(&re, Within::File, &text, &edit, None),
            Some((0, 1))
        );
        assert_eq!(calls.get(), 0);
        assert_eq!(
            leaf_line(&re, Within::Changes, &text, &edit, None),
            Some((0, 1))
        );
        assert_eq!(
            leaf_line(&re, Within::Changes, &text, &edit, None),
            Some((0, 1))
        );
        assert_eq!(calls.get(), 1);
    }
}

#[cfg(test)]
mod span_tests {
    use super::*;

    /// A one-line pattern under `changes` is looked for in the written lines only, and finds
    /// what the whole-file search finds there: at line ends, next to word boundaries, on the
    /// last line without a newline, with empty matches, past the file's end.
    #[test]
    fn written_spans_find_what_the_whole_file_finds() {
        let text = Text::new(b"sleep(1)\nx sleep(2)\n\nend sleep(3)");
        for (pattern, ranges) in [
            (r"sleep\(\d\)$", vec![[2, 2]]),
            (r"\bsleep\(", vec![[1, 1], [3, 4]]),
            (r"^", vec![[3, 3]]),
            (r"\)$", vec![[4, 4]]),
            (r"sleep", vec![[9, 12]]),
            (r"x ", vec![[1, 1], [3, 4]]),
        ] {
            let re = Regex::new(&format!("(?m){pattern}")).unwrap();
            let edit = Edit::known(Written::lines(ranges.clone()));
            assert_eq!(
                leaf_line_in(&re, true, Within::Changes, &text, &edit, None),
                leaf_line_in(&re, false, Within::Changes, &text, &edit, None),
                "{pattern} on {ranges:?}"
            );
        }
    }
}

#[cfg(test)]
mod allow_tests {
    use super::*;

    #[test]
    fn allow_comments_in_any_syntax_name_their_guidelines() {
        let text = Text::new(
            b"a // guidebook:allow no-sleep, no-print\nb\n# guidebook:allow  other-rule trailing words\nc\n/* guidebook:allowx */ d\n<!-- guidebook:allow\tlast -->\n",
        );
        let allows = text.allows();
        assert!(allows.allows("no-sleep", 1) && allows.allows("no-sleep", 2));
        assert!(!allows.allows("no-sleep", 3), "only its line and the next");
        assert!(allows.allows("no-print", 2));
        assert!(allows.allows("other-rule", 4) && !allows.allows("trailing", 4));
        assert!(
            !allows.names("x") && !allows.names("d"),
            "`allowx` is no marker"
        );
        assert!(allows.allows("last", 6));
        assert!(Text::new(b"nothing here").allows().is_empty());
    }

    #[test]
    fn an_allowed_match_does_not_count_but_the_next_one_does() {
        let text = Text::new(b"sleep() // guidebook:allow s\nok\nsleep()\n");
        let re = Regex::new(r"sleep\(").unwrap();
        let all = Edit::known(Written::All);
        assert_eq!(
            leaf_line(&re, Within::File, &text, &all, Some("s")),
            Some((32, 3))
        );
        assert_eq!(
            leaf_line(&re, Within::File, &text, &all, Some("other")),
            Some((0, 1))
        );
        let first_only = Edit::known(Written::lines(vec![[1, 1]]));
        assert_eq!(
            leaf_line(&re, Within::Changes, &text, &first_only, Some("s")),
            None
        );
    }
}
