//! One pattern on its own: its limits, how it is parsed and compiled (over bytes, `^`/`$` at
//! lines, within a size limit), and the validation that checks it would compile without
//! compiling it (a bound of its automaton's size). Reads and writes nothing.

use regex_syntax::hir::Hir;

use super::hash::FastHash;

/// Limits for one compiled pattern. A pattern that compiles to more than this (say `\w{1000}`
/// repeated) is refused with an error instead of slowing every search.
pub(crate) const REGEX_SIZE_LIMIT: usize = 1 << 20;
pub(crate) const MAX_PATTERN_LEN: usize = 4096;

/// `pattern` parsed as every pattern is compiled (`^`/`$` at lines, bytes not required to be
/// UTF-8), or `None` if it does not parse.
pub(super) fn parse(pattern: &str) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()
}

/// Whether no match of `pattern` can hold a newline, so every match lies on one line: no
/// literal `\n`, no class that takes it (`\s`, `[^x]`, `(?s).` do). `false` when unsure.
pub(crate) fn stays_on_one_line(pattern: &str) -> bool {
    fn walk(hir: &Hir) -> bool {
        use regex_syntax::hir::{Class, HirKind};
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => true,
            HirKind::Literal(l) => !l.0.contains(&b'\n'),
            HirKind::Class(Class::Unicode(c)) => !c
                .ranges()
                .iter()
                .any(|r| r.start() <= '\n' && '\n' <= r.end()),
            HirKind::Class(Class::Bytes(c)) => !c
                .ranges()
                .iter()
                .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
            HirKind::Repetition(r) => walk(&r.sub),
            HirKind::Capture(c) => walk(&c.sub),
            HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().all(walk),
        }
    }
    parse(pattern).is_some_and(|hir| walk(&hir))
}

/// The regex crate explains a syntax error over several lines (the pattern, a caret, then
/// `error: …`); a `file:line: message` report needs the one line that says what is wrong.
pub(crate) fn one_line_regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or(text.trim())
            .to_string(),
        other => other.to_string(),
    }
}

/// Compiles one pattern the way every pattern is compiled: over bytes (files need not be
/// UTF-8), with `^`/`$` at line boundaries, within the size limit.
pub(crate) fn compile_pattern(pattern: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// [`parse_and_validate`] for a test that needs only the verdict.
#[cfg(test)]
pub(crate) fn validate_pattern(pattern: &str) -> Result<(), regex::Error> {
    parse_and_validate(pattern).map(drop)
}

/// Checks that `pattern` would compile as [`compile_pattern`] compiles it, without building a
/// whole regex: its syntax (the parser the regex crate uses, configured alike) and its forward
/// Thompson NFA within [`REGEX_SIZE_LIMIT`] (the automaton the size limit bounds). The errors are
/// the regex crate's.
///
/// The NFA is built only when [`nfa_bound`] cannot show it is small: compiling Unicode classes
/// such as `\w` was most of a 10,000-guideline load, and the bound measures each distinct class
/// once per thread. The parse is returned: the matching engine indexes the pattern by it.
pub(crate) fn parse_and_validate(pattern: &str) -> Result<regex_syntax::hir::Hir, regex::Error> {
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(|e| regex::Error::Syntax(e.to_string()))?;
    if nfa_bound(&hir) <= REGEX_SIZE_LIMIT / 2 || nfa_check(&hir).is_some() {
        return Ok(hir);
    }
    Err(regex::Error::CompiledTooBig(REGEX_SIZE_LIMIT))
}

fn nfa_check(hir: &regex_syntax::hir::Hir) -> Option<regex_automata::nfa::thompson::NFA> {
    regex_automata::nfa::thompson::Compiler::new()
        .configure(
            regex_automata::nfa::thompson::Config::new()
                .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .shrink(false),
        )
        .build_from_hir(hir)
        .ok()
}

/// The measured size of each distinct class, found by a fingerprint (Unicode or bytes, how many
/// ranges, the first and the last) and then by all its ranges, compared in place: a class is
/// copied only the first time it is seen. (Unicode `\w` has over 700 ranges; collecting and
/// hashing them at every `\w` and `\b` of every pattern was 5 % of a 10,000-guideline load.)
type ClassSizes = std::collections::HashMap<ClassPrint, Vec<(Vec<(u32, u32)>, usize)>, FastHash>;

/// Unicode or bytes, the number of ranges, the first and the last range.
type ClassPrint = (bool, usize, (u32, u32), (u32, u32));

/// A class's fingerprint, read off its ends.
fn class_print(class: &regex_syntax::hir::Class) -> ClassPrint {
    use regex_syntax::hir::Class;
    let count = match class {
        Class::Unicode(c) => c.ranges().len(),
        Class::Bytes(c) => c.ranges().len(),
    };
    let mut ranges = class_ranges(class);
    let first = ranges.next().unwrap_or_default();
    let last = ranges.next_back().unwrap_or(first);
    (matches!(class, Class::Unicode(_)), count, first, last)
}

/// A class's ranges as numbers, whatever its kind.
fn class_ranges(
    class: &regex_syntax::hir::Class,
) -> Box<dyn DoubleEndedIterator<Item = (u32, u32)> + '_> {
    use regex_syntax::hir::Class;
    match class {
        Class::Unicode(c) => Box::new(
            c.ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32)),
        ),
        Class::Bytes(c) => Box::new(
            c.ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end()))),
        ),
    }
}

/// Whether `class` has exactly the ranges `ranges` (a memo entry): compared range by range in
/// a plain loop (through [`class_ranges`]' boxed iterator, comparing `\w`'s hundreds of ranges
/// at every `\w` was 1–2 % of a large guidebook's load).
fn same_ranges(ranges: &[(u32, u32)], class: &regex_syntax::hir::Class) -> bool {
    use regex_syntax::hir::Class;
    match class {
        Class::Unicode(c) => {
            ranges.len() == c.ranges().len()
                && ranges
                    .iter()
                    .zip(c.ranges())
                    .all(|(&(a, b), r)| a == r.start() as u32 && b == r.end() as u32)
        }
        Class::Bytes(c) => {
            ranges.len() == c.ranges().len()
                && ranges
                    .iter()
                    .zip(c.ranges())
                    .all(|(&(a, b), r)| a == u32::from(r.start()) && b == u32::from(r.end()))
        }
    }
}

/// Bytes charged per NFA state that a piece of a pattern adds around its parts: more than a
/// state of the builder takes with its transitions (at most a few dozen bytes).
const STATE_BOUND: usize = 128;

/// An upper bound of the memory of `hir`'s Thompson NFA, the figure its size limit is checked
/// against. A class is charged what it takes compiled alone (measured once per distinct class
/// on this thread, NFA overhead included), every other piece [`STATE_BOUND`] per state it adds,
/// and a repetition as many copies of its part as the compiler makes. The result is checked
/// against half the limit, so a bound a little short still errs on the side of compiling.
fn nfa_bound(hir: &regex_syntax::hir::Hir) -> usize {
    // What every NFA holds whatever its pattern (its start states, the unanchored prefix).
    static BASE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(|| {
        nfa_check(&regex_syntax::hir::Hir::empty()).map_or(usize::MAX / 4, |n| n.memory_usage())
    });
    base.saturating_add(piece_bound(hir))
}

fn piece_bound(hir: &regex_syntax::hir::Hir) -> usize {
    use regex_syntax::hir::HirKind;
    thread_local! {
        static CLASSES: std::cell::RefCell<ClassSizes> = Default::default();
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => STATE_BOUND,
        HirKind::Literal(lit) => (lit.0.len() + 1) * STATE_BOUND,
        HirKind::Class(class) => CLASSES.with(|memo| {
            let print = class_print(class);
            if let Some(known) = memo.borrow().get(&print) {
                if let Some((_, size)) = known.iter().find(|(ranges, _)| same_ranges(ranges, class))
                {
                    return *size;
                }
            }
            let size =
                nfa_check(hir).map_or(usize::MAX / 4, |nfa| nfa.memory_usage() + 4 * STATE_BOUND);
            memo.borrow_mut()
                .entry(print)
                .or_default()
                .push((class_ranges(class).collect(), size));
            size
        }),
        HirKind::Capture(cap) => piece_bound(&cap.sub).saturating_add(2 * STATE_BOUND),
        HirKind::Concat(parts) => parts
            .iter()
            .fold(STATE_BOUND, |sum, p| sum.saturating_add(piece_bound(p))),
        HirKind::Alternation(parts) => parts
            .iter()
            .fold((parts.len() + 2) * STATE_BOUND, |sum, p| {
                sum.saturating_add(piece_bound(p))
            }),
        HirKind::Repetition(rep) => {
            let copies = match rep.max {
                Some(max) => max.max(1) as usize,
                None => rep.min as usize + 1,
            };
            piece_bound(&rep.sub)
                .saturating_add(2 * STATE_BOUND)
                .saturating_mul(copies)
                .saturating_add(2 * STATE_BOUND)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_that_stay_on_one_line_are_told_apart() {
        for one in [
            r"Thread\.sleep\(",
            r"!!",
            r"catch \(e: Exception\)",
            r"^import x",
            r"(?i)todo",
        ] {
            assert!(stays_on_one_line(one), "{one}");
        }
        for many in [
            r"catch\s*\(",
            r"@Test[\s\S]*?sleep",
            r"a\nb",
            r"(?s)a.b",
            r"[^;]+;",
            r"^import\s+x",
            "x{",
        ] {
            assert!(!stays_on_one_line(many), "{many}");
        }
    }

    #[test]
    fn the_cheap_validation_agrees_with_compiling() {
        for pattern in [
            r"println\(",
            r"(?i)todo[-_ ]x",
            r"\bOrder\.\w+\(",
            r"^\s*import\s+.*$",
            r"(\w{100}){100}",
            r"\w{1000}",
            r"(a{1000}){1000}",
            r"[[:alpha:]]+",
            r"(?-u)\xff",
            r"\p{Greek}+",
            "(",
            "a{2,1}",
            r"\p{NoSuchClass}",
            "[z-a]",
            r"\",
            "(?P<n>a)(?P<n>b)",
        ] {
            let cheap = validate_pattern(pattern).map_err(|e| e.to_string());
            let full = compile_pattern(pattern)
                .map(drop)
                .map_err(|e| e.to_string());
            assert_eq!(cheap, full, "{pattern}");
            // The bound never claims less than the compiler counts.
            if let Ok(hir) = regex_syntax::ParserBuilder::new()
                .multi_line(true)
                .utf8(false)
                .build()
                .parse(pattern)
            {
                if let Some(nfa) = nfa_check(&hir) {
                    assert!(
                        nfa_bound(&hir) >= nfa.memory_usage(),
                        "{pattern}: bound {} < {}",
                        nfa_bound(&hir),
                        nfa.memory_usage()
                    );
                }
            }
        }
    }

    #[test]
    fn a_class_memo_entry_matches_exactly_its_own_class() {
        use regex_syntax::hir::HirKind;
        let classes: Vec<regex_syntax::hir::Class> = [
            r"\w",
            r"\s",
            r"\d",
            "[a-z]",
            "[a-y]",
            "[b-z]",
            "[^a]",
            r"(?-u:\w)",
            "(?-u:[a-z])",
            r"[\w\-]",
            "(?i)k",
        ]
        .iter()
        .map(|p| match regex_syntax::parse(p).unwrap().into_kind() {
            HirKind::Class(c) => c,
            other => panic!("{p}: {other:?}"),
        })
        .collect();
        let unicode =
            |c: &regex_syntax::hir::Class| matches!(c, regex_syntax::hir::Class::Unicode(_));
        for a in &classes {
            let ranges: Vec<(u32, u32)> = class_ranges(a).collect();
            // The memo's key (`class_print`) keeps Unicode and byte classes apart.
            for b in classes.iter().filter(|b| unicode(b) == unicode(a)) {
                assert_eq!(same_ranges(&ranges, b), a == b, "{a:?} against {b:?}");
            }
        }
    }
}
