//! The matching engine: which patterns match a file, found without trying most of them.
//!
//! Every pattern that requires some literal text (`\bOrderInvoiceImpl\(` cannot match where
//! `OrderInvoiceImpl(` does not occur) is indexed by that text in one Aho-Corasick automaton.
//! A file is scanned once with it; only the patterns whose literal occurs are then confirmed
//! with their own regex, compiled on first need and kept in a bounded cache. Patterns without a
//! usable literal stay in `RegexSet`s, scanned once per set. So code full of near misses
//! (`OrderInvoiceBuilder(`) costs one automaton pass, not a pass of every pattern. Reads
//! nothing; built with a snapshot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, MatchKind};
use regex::bytes::{Regex, RegexSet, RegexSetBuilder};
use regex_syntax::hir::literal::{Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};

use super::load::{compile_pattern, REGEX_SIZE_LIMIT};

/// A literal shorter than this occurs almost everywhere and filters nothing.
const MIN_LITERAL_LEN: usize = 3;
/// More alternatives than this (a case-insensitive word, say) are not worth indexing.
const MAX_LITERALS_PER_PATTERN: usize = 64;
/// Confirming regexes kept compiled at once; past it, half are dropped and recompiled on need.
const CONFIRM_CACHE: usize = 1024;
/// The most patterns in one `RegexSet` (see `PATTERNS_PER_SET` in the history of this file: a
/// set's lazy DFA gives up past a few thousand patterns and the search falls off a cliff).
const PATTERNS_PER_SET: usize = 2048;

/// The literals that every match of `pattern` must contain one of, if there is a usable set.
pub fn required_literals(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    let seq = required(&hir)?;
    let mut literals: Vec<Vec<u8>> = seq
        .literals()?
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
    literals.sort();
    literals.dedup();
    Some(literals)
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

/// The more selective of two literal sets: longer shortest literal, then fewer literals.
fn better(a: Option<Seq>, b: Option<Seq>) -> Option<Seq> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let key = |s: &Seq| {
                (
                    s.min_literal_len().unwrap_or(0),
                    usize::MAX - s.len().unwrap_or(0),
                )
            };
            Some(if key(&b) > key(&a) { b } else { a })
        }
        (a, b) => a.or(b),
    }
}

/// The patterns of a snapshot, ready to be matched.
#[derive(Debug)]
pub struct PatternMatcher {
    /// Pattern `i` (numbered across guidelines) belongs to guideline `owners[i]`.
    owners: Vec<u32>,
    sources: Vec<String>,
    /// Every indexed literal; `literal_patterns[k]` are the patterns literal `k` stands for.
    prefilter: Option<AhoCorasick>,
    literal_patterns: Vec<Vec<u32>>,
    /// The patterns without a usable literal: sets of at most [`PATTERNS_PER_SET`], each with
    /// the pattern numbers of its members; or, when a set would not build, those patterns one
    /// by one.
    sets: Vec<(RegexSet, Vec<u32>)>,
    one_by_one: Vec<u32>,
    confirm: Mutex<HashMap<u32, Arc<Regex>>>,
}

impl PatternMatcher {
    /// Indexes `patterns` (each with its guideline). Nothing is compiled for a pattern with a
    /// usable literal until a file contains that literal.
    pub fn build(patterns: Vec<(u32, String)>) -> PatternMatcher {
        let mut literal_ids: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut literal_patterns: Vec<Vec<u32>> = Vec::new();
        let mut unindexed: Vec<u32> = Vec::new();
        let (owners, sources): (Vec<u32>, Vec<String>) = patterns.into_iter().unzip();
        for (i, source) in sources.iter().enumerate() {
            match required_literals(source) {
                Some(required) => {
                    for literal in required {
                        let k = *literal_ids.entry(literal.clone()).or_insert_with(|| {
                            literals.push(literal);
                            literal_patterns.push(Vec::new());
                            literals.len() - 1
                        });
                        literal_patterns[k].push(i as u32);
                    }
                }
                None => unindexed.push(i as u32),
            }
        }
        let prefilter = (!literals.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&literals)
                .expect("literals of bounded size build an automaton")
        });
        let mut sets = Vec::new();
        let mut one_by_one = Vec::new();
        for chunk in unindexed.chunks(PATTERNS_PER_SET) {
            let members: Vec<&str> = chunk
                .iter()
                .map(|&p| sources[p as usize].as_str())
                .collect();
            let built = RegexSetBuilder::new(&members)
                .multi_line(true)
                .size_limit(
                    REGEX_SIZE_LIMIT
                        .saturating_mul(members.len().max(1))
                        .min(1 << 30),
                )
                .dfa_size_limit(64 << 20)
                .build();
            match built {
                Ok(set) => sets.push((set, chunk.to_vec())),
                Err(e) => {
                    tracing::warn!(
                        "patterns too large for one automaton ({e}); matching them one by one"
                    );
                    one_by_one.extend_from_slice(chunk);
                }
            }
        }
        PatternMatcher {
            owners,
            sources,
            prefilter,
            literal_patterns,
            sets,
            one_by_one,
            confirm: Mutex::new(HashMap::new()),
        }
    }

    /// How many patterns it holds, and how many of those are indexed by a literal.
    pub fn counts(&self) -> (usize, usize) {
        let indexed = self.owners.len()
            - self.one_by_one.len()
            - self.sets.iter().map(|(_, m)| m.len()).sum::<usize>();
        (self.owners.len(), indexed)
    }

    /// Marks `hit[g]` for every guideline `g` with `applicable[g]` that has a pattern matching
    /// `content`.
    pub fn mark_matches(&self, content: &[u8], applicable: &[bool], hit: &mut [bool]) {
        let wanted = |p: u32, hit: &[bool]| {
            let g = self.owners[p as usize] as usize;
            applicable[g] && !hit[g]
        };
        if let Some(prefilter) = &self.prefilter {
            let mut seen = vec![false; self.owners.len()];
            let mut candidates = Vec::new();
            for m in prefilter.find_overlapping_iter(content) {
                for &p in &self.literal_patterns[m.pattern().as_usize()] {
                    if !seen[p as usize] && wanted(p, hit) {
                        seen[p as usize] = true;
                        candidates.push(p);
                    }
                }
            }
            candidates.sort_unstable();
            for p in candidates {
                if wanted(p, hit) && self.confirmed(p, content) {
                    hit[self.owners[p as usize] as usize] = true;
                }
            }
        }
        for (set, members) in &self.sets {
            if !members.iter().any(|&p| wanted(p, hit)) {
                continue;
            }
            for i in set.matches(content).iter() {
                let g = self.owners[members[i] as usize] as usize;
                hit[g] |= applicable[g];
            }
        }
        for &p in &self.one_by_one {
            if wanted(p, hit) && self.confirmed(p, content) {
                hit[self.owners[p as usize] as usize] = true;
            }
        }
    }

    /// Whether pattern `p` matches `content`, with its regex from the cache (compiled now if
    /// it is not there).
    fn confirmed(&self, p: u32, content: &[u8]) -> bool {
        let cached = self
            .confirm
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&p)
            .cloned();
        let regex = match cached {
            Some(regex) => regex,
            None => {
                // Compiled outside the lock: another thread may compile it too, which costs
                // less than making every search wait behind one compile.
                let Ok(regex) = compile_pattern(&self.sources[p as usize]) else {
                    return false;
                };
                let regex = Arc::new(regex);
                let mut cache = self.confirm.lock().unwrap_or_else(|e| e.into_inner());
                if cache.len() >= CONFIRM_CACHE {
                    let drop: Vec<u32> = cache.keys().copied().step_by(2).collect();
                    for k in drop {
                        cache.remove(&k);
                    }
                }
                cache.insert(p, regex.clone());
                regex
            }
        };
        regex.is_match(content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(pattern: &str) -> Option<Vec<String>> {
        required_literals(pattern).map(|l| {
            l.into_iter()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect()
        })
    }

    #[test]
    fn picks_the_most_selective_required_literal() {
        assert_eq!(
            lits(r"\bOrderInvoiceImpl\("),
            Some(vec!["OrderInvoiceImpl(".into()])
        );
        assert_eq!(
            lits(r"val\s+\w+OrderConfig5\s*="),
            Some(vec!["OrderConfig5".into()])
        );
        assert_eq!(
            lits(r"\borderClient7\s*\.\s*(get|post|put)\s*\("),
            Some(vec!["orderClient7".into()])
        );
        assert_eq!(
            lits(r"@Data\b[^{;]{0,400}?@Entity\b|@Entity\b[^{;]{0,400}?@Data\b"),
            Some(vec!["@Entity".into()])
        );
        // Nothing every match must contain, or nothing long enough to be worth it.
        assert_eq!(lits(r"\w+\s*="), None);
        assert_eq!(
            lits(r"(?m)^\s*[\w.-]*(password|secret)\s*[:=]"),
            Some(vec!["password".into(), "secret".into()])
        );
        assert_eq!(lits(r"ab|cd"), None);
        let todo = lits(r"(?i)todo[-_ ]order").unwrap();
        assert!(todo.len() <= MAX_LITERALS_PER_PATTERN, "{todo:?}");
        assert!(
            todo.iter()
                .all(|l| l.len() >= 4 && l[..4].eq_ignore_ascii_case("todo")),
            "{todo:?}"
        );
        assert_eq!(lits(r"(foo)?bar"), Some(vec!["bar".into()]));
        assert_eq!(lits(r"(abc)*x"), None);
    }

    #[test]
    fn matches_like_a_regex_per_pattern() {
        let patterns = [
            (0, r"\bOrderInvoiceImpl\(".to_string()),
            (1, r"val\s+\w+Config\s*=".to_string()),
            (1, r"\d{3}-\w+".to_string()),
            (2, r"(?i)todo[-_ ]order".to_string()),
        ];
        let m = PatternMatcher::build(patterns.to_vec());
        assert_eq!(m.counts(), (4, 3));
        let all = [true; 3];
        let run = |text: &str, applicable: &[bool]| {
            let mut hit = vec![false; 3];
            m.mark_matches(text.as_bytes(), applicable, &mut hit);
            hit
        };
        assert_eq!(
            run("x = OrderInvoiceBuilder(1)", &all),
            [false, false, false]
        );
        assert_eq!(run("x = OrderInvoiceImpl(1)", &all), [true, false, false]);
        assert_eq!(
            run("val a = 1\nval orderConfig = 2", &all),
            [false, true, false]
        );
        assert_eq!(run("id 123-abc", &all), [false, true, false]);
        assert_eq!(run("// TODO-ORDER later", &all), [false, false, true]);
        assert_eq!(
            run("OrderInvoiceImpl( TODO order", &[false, true, true]),
            [false, false, true]
        );
    }
}
