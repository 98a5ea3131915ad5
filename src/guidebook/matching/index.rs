//! How each pattern is indexed: the literals every match of it must contain (its prefixes, a
//! piece of it, or any part every match passes through), chosen for selectivity, and how a
//! hit of one is confirmed. Worked out from a pattern's parse when it is loaded. Reads and
//! writes nothing.

use regex_syntax::hir::literal::{Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};

use super::pattern::parse;

/// A literal shorter than this occurs almost everywhere and filters nothing.
const MIN_LITERAL_LEN: usize = 3;
/// More alternatives than this (a case-insensitive word, say) are not worth indexing.
const MAX_LITERALS_PER_PATTERN: usize = 64;
/// A prefix literal at least this long is selective enough to confirm at its hits even when a
/// longer literal lies further inside the pattern.
const GOOD_PREFIX_LEN: usize = 8;
/// How a pattern is found: by which literals, and how a hit of one is confirmed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Index {
    /// Every match starts with one of these: confirmed anchored at the hit.
    Prefixes(Vec<Vec<u8>>),
    /// The pattern is a concatenation whose piece `at` starts with one of these: confirmed
    /// where the literal starts, the pieces after it forward and the pieces before it backward.
    Split { at: usize, literals: Vec<Vec<u8>> },
    /// Every match contains one of these: confirmed by the pattern's regex over the file.
    Inner(Vec<Vec<u8>>),
    /// No usable literal: the pattern is in a set scanned over every file.
    Unindexed,
}

/// How `pattern` is indexed (see [`Index`]).
pub fn index_of(pattern: &str) -> Index {
    parse(pattern).map_or(Index::Unindexed, |hir| index_of_hir(&hir))
}

/// How the pattern parsed as `hir` is indexed.
pub(crate) fn index_of_hir(hir: &Hir) -> Index {
    let prefixes = usable(Extractor::new().extract(hir));
    let inner = required(hir);
    let len = |s: &Option<Seq>| s.as_ref().and_then(Seq::min_literal_len).unwrap_or(0);
    let literals = |seq: Seq| {
        let mut all: Vec<Vec<u8>> = seq
            .literals()
            .unwrap_or_default()
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        all.sort();
        all.dedup();
        all
    };
    let good = len(&inner).min(GOOD_PREFIX_LEN);
    match (prefixes, inner) {
        (Some(p), _) if p.min_literal_len() >= Some(good) => Index::Prefixes(literals(p)),
        (_, Some(inner)) => match split_point(hir) {
            Some((at, seq)) if seq.min_literal_len() >= Some(good) => Index::Split {
                at,
                literals: literals(seq),
            },
            _ => Index::Inner(literals(inner)),
        },
        (Some(p), None) => Index::Prefixes(literals(p)),
        (None, None) => Index::Unindexed,
    }
}

/// The piece of a top-level concatenation (after the first) whose prefixes are the most
/// selective usable literals, and those literals.
fn split_point(hir: &Hir) -> Option<(usize, Seq)> {
    let HirKind::Concat(parts) = hir.kind() else {
        return None;
    };
    let mut best: Option<(usize, Seq)> = None;
    for (at, part) in parts.iter().enumerate().skip(1) {
        let Some(seq) = usable(Extractor::new().extract(part)) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(_, b)| selectivity(&seq) > selectivity(b))
        {
            best = Some((at, seq));
        }
    }
    best
}

/// The best usable literal set that every match of `hir` contains one of: the prefixes of the
/// whole, or of any part every match must pass through (a concatenation's pieces, a group, a
/// repetition of at least one), or the union over the branches of an alternation.
fn required(hir: &Hir) -> Option<Seq> {
    let mut best = usable(Extractor::new().extract(hir));
    match hir.kind() {
        HirKind::Concat(parts) => {
            for part in parts {
                best = better(best, required(part));
            }
        }
        HirKind::Capture(group) => best = better(best, required(&group.sub)),
        HirKind::Repetition(rep) if rep.min >= 1 => best = better(best, required(&rep.sub)),
        HirKind::Alternation(branches) => {
            let mut union = Seq::empty();
            for branch in branches {
                let Some(mut seq) = required(branch) else {
                    return best;
                };
                union.union(&mut seq);
            }
            best = better(best, usable(union));
        }
        _ => {}
    }
    best
}

fn usable(mut seq: Seq) -> Option<Seq> {
    // Too many alternatives (a case-insensitive word): their common starts are still required,
    // so shorten them until few enough remain.
    let mut keep = seq.max_literal_len()?;
    while seq.len().is_some_and(|n| n > MAX_LITERALS_PER_PATTERN) && keep > MIN_LITERAL_LEN {
        keep -= 1;
        seq.keep_first_bytes(keep);
        seq.dedup();
    }
    let ok = seq.is_finite()
        && seq
            .len()
            .is_some_and(|n| n > 0 && n <= MAX_LITERALS_PER_PATTERN)
        && seq.min_literal_len().is_some_and(|n| n >= MIN_LITERAL_LEN);
    ok.then_some(seq)
}

/// How selective a literal set is: longer shortest literal first, then fewer literals.
fn selectivity(s: &Seq) -> (usize, usize) {
    (
        s.min_literal_len().unwrap_or(0),
        usize::MAX - s.len().unwrap_or(0),
    )
}

/// The more selective of two literal sets: longer shortest literal, then fewer literals.
fn better(a: Option<Seq>, b: Option<Seq>) -> Option<Seq> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if selectivity(&b) > selectivity(&a) {
            b
        } else {
            a
        }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(pattern: &str) -> (char, Vec<String>) {
        let text = |l: Vec<Vec<u8>>| {
            l.into_iter()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect()
        };
        match index_of(pattern) {
            Index::Prefixes(l) => ('P', text(l)),
            Index::Split { at, literals } => (char::from(b'0' + at as u8), text(literals)),
            Index::Inner(l) => ('I', text(l)),
            Index::Unindexed => ('-', Vec::new()),
        }
    }

    #[test]
    fn picks_the_most_selective_required_literal_and_how_to_confirm_it() {
        let one = |kind, l: &str| (kind, vec![l.to_string()]);
        assert_eq!(lits(r"\bOrderInvoiceImpl\("), one('P', "OrderInvoiceImpl("));
        assert_eq!(
            lits(r"Thread\.sleep\(\s*42\d{2,}\s*\)"),
            one('P', "Thread.sleep(")
        );
        // The prefix `val` is too common when a name lies inside: split at piece 3.
        assert_eq!(lits(r"val\s+\w+OrderConfig5\s*="), one('3', "OrderConfig5"));
        assert_eq!(
            lits(r"\borderClient7\s*\.\s*(get|post|put)\s*\("),
            one('P', "orderClient7")
        );
        assert_eq!(
            lits(r"@Data\b[^{;]{0,400}?@Entity\b|@Entity\b[^{;]{0,400}?@Data\b"),
            one('I', "@Entity")
        );
        // Nothing every match must contain, or nothing long enough to be worth it.
        assert_eq!(lits(r"\w+\s*="), ('-', vec![]));
        assert_eq!(
            lits(r"(?m)^\s*[\w.-]*(password|secret)\s*[:=]"),
            ('3', vec!["password".into(), "secret".into()])
        );
        assert_eq!(lits(r"ab|cd"), ('-', vec![]));
        let (kind, todo) = lits(r"(?i)todo[-_ ]order");
        assert_eq!(kind, 'P');
        assert!(todo.len() <= MAX_LITERALS_PER_PATTERN, "{todo:?}");
        assert!(
            todo.iter()
                .all(|l| l.len() >= 4 && l[..4].eq_ignore_ascii_case("todo")),
            "{todo:?}"
        );
        assert_eq!(
            lits(r"(foo)?bar"),
            ('P', vec!["bar".into(), "foobar".into()])
        );
        assert_eq!(lits(r"(abc)*x"), ('-', vec![]));
        assert_eq!(lits(r"(?m)^import\s+x"), one('P', "import"));
    }
}
