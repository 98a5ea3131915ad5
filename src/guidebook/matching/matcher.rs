//! The matching engine: which patterns match a file, found without trying most of them.
//!
//! Every pattern that requires some literal text (`\bOrderInvoiceImpl\(` cannot match where
//! `OrderInvoiceImpl(` does not occur) is indexed by that text, and a file is scanned once for
//! every such literal (`literals.rs`: hashed windows, an Aho-Corasick automaton for the short
//! ones). Near misses (`OrderInvoiceBuilder(`) stop there.
//!
//! A literal hit is confirmed in one of two ways, chosen per pattern when it is indexed:
//! - **at the hit** when the literals are the pattern's *prefixes* (every match starts with one
//!   of them): the patterns that share the same prefixes form a group, compiled into one small
//!   automaton on first need, and run anchored where the literal starts (look-behind such as
//!   `\b` still sees the bytes before it), so a confirmation costs the length of a match, not
//!   of the file. A group whose patterns are each one literal with at most a word boundary on
//!   either side (`\bOrderInvoiceImpl\(`, `server\.port`) needs no automaton: the bytes next
//!   to the hit decide it wherever they are ASCII;
//! - **over the file** when the most selective literal lies inside the pattern
//!   (`val\s+\w+\s*:\s*OrderInvoiceImpl\b`): the pattern's own regex, compiled on first need,
//!   once per file it is a candidate in.
//!
//! Compiled confirmations live in bounded caches; nothing is compiled when the snapshot is
//! built but the automaton and the patterns with no usable literal, which stay in sets scanned
//! once per set. Reads nothing; built with a snapshot.

use std::collections::HashMap;

use regex::bytes::Regex;
use regex_automata::meta;
use regex_automata::{Anchored, Input, PatternSet};

use super::confirm::{build_set, Bounded, GroupConfirm, Plain, SplitPattern, Use};
use super::hash::FastHash;
#[cfg(test)]
use super::index::index_of;
use super::index::Index;
use super::literals::LiteralScan;
use super::pattern::compile_pattern;

/// The most patterns in one set for the patterns without a usable literal. A set's lazy DFA
/// gives up past a few thousand patterns and the search falls off a cliff (measured: 20,000
/// patterns in one set took minutes per search; 2,048 kept 10 × 20 KB within milliseconds).
const PATTERNS_PER_SET: usize = 2048;

/// What a hit of one literal leads to.
#[derive(Debug, Default)]
struct Targets {
    /// Groups to confirm anchored at the hit.
    groups: Vec<u32>,
    /// Split patterns to confirm around the hit, each with the piece its literal starts.
    split: Vec<(u32, u32)>,
    /// Patterns to confirm over the file.
    inner: Vec<u32>,
}

/// The patterns of a snapshot, ready to be matched.
#[derive(Debug)]
pub struct PatternMatcher {
    /// Pattern `i` (numbered across guidelines) belongs to guideline `owners[i]`.
    owners: Vec<u32>,
    sources: Vec<String>,
    /// Every indexed literal, and what a hit of literal `k` leads to.
    scan: LiteralScan,
    targets: Vec<Targets>,
    /// Patterns that share the same prefix literals, confirmed together.
    groups: Vec<Vec<u32>>,
    /// The patterns without a usable literal: sets of at most [`PATTERNS_PER_SET`], each with
    /// the pattern numbers of its members; or, when a set would not build, those patterns one
    /// by one.
    sets: Vec<(meta::Regex, Vec<u32>)>,
    one_by_one: Vec<u32>,
    anchored: Bounded<GroupConfirm>,
    split: Bounded<SplitPattern>,
    whole: Bounded<Regex>,
}

/// Counts of how a matcher's patterns are indexed (for tests and logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexCounts {
    pub patterns: usize,
    pub prefixed: usize,
    pub split: usize,
    pub inner: usize,
    pub literals: usize,
    /// Sets holding the patterns without a usable literal.
    pub sets: usize,
}

impl PatternMatcher {
    /// Indexes `patterns` (each with its guideline). Nothing is compiled for a pattern with a
    /// usable literal until a file contains that literal.
    #[cfg(test)]
    pub fn build(patterns: Vec<(u32, String)>) -> PatternMatcher {
        let indexes: Vec<Index> = patterns.iter().map(|(_, s)| index_of(s)).collect();
        let indexed = patterns
            .iter()
            .zip(&indexes)
            .map(|((o, s), index)| (*o, s.as_str(), index));
        Self::build_indexed(indexed.collect())
    }

    /// Indexes `patterns`, each with its guideline and how it is indexed (worked out when it
    /// was loaded). Nothing is compiled for a pattern with a usable literal until a file
    /// contains that literal.
    pub fn build_indexed<'a>(patterns: Vec<(u32, &'a str, &'a Index)>) -> PatternMatcher {
        let mut owners = Vec::with_capacity(patterns.len());
        let mut sources = Vec::with_capacity(patterns.len());
        // Literals and groups by their bytes, borrowed from the indexes: a copy of each key
        // was a tenth of building a 10,000-guideline snapshot.
        let mut literal_ids: HashMap<&'a [u8], usize, FastHash> = HashMap::default();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut targets: Vec<Targets> = Vec::new();
        let mut group_ids: HashMap<&'a [Vec<u8>], u32, FastHash> = HashMap::default();
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut unindexed: Vec<u32> = Vec::new();
        let mut slot = |l: &'a [u8], targets: &mut Vec<Targets>| -> usize {
            *literal_ids.entry(l).or_insert_with(|| {
                literals.push(l.to_vec());
                targets.push(Targets::default());
                literals.len() - 1
            })
        };
        for (i, (owner, source, index)) in patterns.into_iter().enumerate() {
            owners.push(owner);
            sources.push(source.to_owned());
            let p = i as u32;
            match index {
                Index::Prefixes(prefixes) => {
                    let next = groups.len() as u32;
                    let g = *group_ids.entry(prefixes.as_slice()).or_insert(next);
                    if g == next {
                        groups.push(Vec::new());
                        for l in prefixes {
                            let k = slot(l, &mut targets);
                            targets[k].groups.push(g);
                        }
                    }
                    groups[g as usize].push(p);
                }
                Index::Split { at, literals } => {
                    for l in literals {
                        let k = slot(l, &mut targets);
                        targets[k].split.push((p, *at as u32));
                    }
                }
                Index::Inner(inner) => {
                    for l in inner {
                        let k = slot(l, &mut targets);
                        targets[k].inner.push(p);
                    }
                }
                Index::Unindexed => unindexed.push(p),
            }
        }
        let scan = LiteralScan::new(literals);
        let mut sets = Vec::new();
        let mut one_by_one = Vec::new();
        for chunk in unindexed.chunks(PATTERNS_PER_SET) {
            let members: Vec<&str> = chunk
                .iter()
                .map(|&p| sources[p as usize].as_str())
                .collect();
            match build_set(&members, Use::Scan) {
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
            scan,
            targets,
            groups,
            sets,
            one_by_one,
            anchored: Bounded::new(),
            split: Bounded::new(),
            whole: Bounded::new(),
        }
    }

    /// How many patterns it holds, how many of those are confirmed at their prefix hits and how
    /// many over the file, and how many literals the automaton holds.
    pub fn counts(&self) -> IndexCounts {
        let prefixed = self.groups.iter().map(Vec::len).sum::<usize>();
        let unindexed =
            self.one_by_one.len() + self.sets.iter().map(|(_, m)| m.len()).sum::<usize>();
        let mut split: Vec<u32> = self
            .targets
            .iter()
            .flat_map(|t| t.split.iter().map(|(p, _)| *p))
            .collect();
        split.sort_unstable();
        split.dedup();
        IndexCounts {
            patterns: self.owners.len(),
            prefixed,
            split: split.len(),
            inner: self.owners.len() - prefixed - split.len() - unindexed,
            literals: self.targets.len(),
            sets: self.sets.len(),
        }
    }

    /// How many compiled confirmations are kept now (anchored groups, whole patterns).
    #[cfg(test)]
    fn compiled(&self) -> (usize, usize) {
        (self.anchored.len(), self.whole.len())
    }

    /// Marks `hit[g]` for every guideline `g` with `applicable[g]` that has a pattern matching
    /// `content`.
    pub fn mark_matches(&self, content: &[u8], applicable: &[bool], hit: &mut [bool]) {
        let wanted = |p: u32, hit: &[bool]| {
            let g = self.owners[p as usize] as usize;
            applicable[g] && !hit[g]
        };
        if self.scan.len() > 0 {
            // Per group hit in this file: whether anything in it is still wanted. Hits are few
            // where literals are many, so these grow with the hits, not the guidebook.
            let mut group_live: HashMap<u32, bool> = HashMap::new();
            let mut literal_seen: std::collections::HashSet<usize> = Default::default();
            let mut candidates = Vec::new();
            let mut found = PatternSet::new(1);
            let mut literal_hits = Vec::new();
            self.scan
                .for_each(content, |k, start| literal_hits.push((k, start)));
            for (k, start) in literal_hits {
                let targets = &self.targets[k];
                for &g in &targets.groups {
                    let members = &self.groups[g as usize];
                    let live = *group_live
                        .entry(g)
                        .or_insert_with(|| members.iter().any(|&p| wanted(p, hit)));
                    if !live {
                        continue;
                    }
                    let Some(confirm) = self.anchored.get(g, || {
                        let sources: Vec<&str> = members
                            .iter()
                            .map(|&p| self.sources[p as usize].as_str())
                            .collect();
                        match sources.iter().map(|s| Plain::of(s)).collect() {
                            Some(plain) => Some(GroupConfirm::Plain(plain)),
                            None => build_set(&sources, Use::Anchored)
                                .ok()
                                .map(GroupConfirm::Set),
                        }
                    }) else {
                        continue;
                    };
                    let set = match &*confirm {
                        GroupConfirm::Set(set) => set,
                        GroupConfirm::Plain(plain) => {
                            for (&p, plain) in members.iter().zip(plain) {
                                if !wanted(p, hit) {
                                    continue;
                                }
                                let matched = match plain.matches_at(content, start) {
                                    Some(matched) => matched,
                                    None => self.confirmed(p, content),
                                };
                                let g = self.owners[p as usize] as usize;
                                hit[g] |= matched && applicable[g];
                            }
                            continue;
                        }
                    };
                    if found.capacity() < members.len() {
                        found = PatternSet::new(members.len());
                    }
                    found.clear();
                    let input = Input::new(content).range(start..).anchored(Anchored::Yes);
                    set.which_overlapping_matches(&input, &mut found);
                    for pid in found.iter() {
                        let g = self.owners[members[pid.as_usize()] as usize] as usize;
                        hit[g] |= applicable[g];
                    }
                }
                for &(p, at) in &targets.split {
                    if !wanted(p, hit) {
                        continue;
                    }
                    let source = &self.sources[p as usize];
                    let confirmed = match self
                        .split
                        .get(p, || SplitPattern::build(source, at as usize))
                    {
                        Some(split) => split.matches_at(content, start),
                        None => None,
                    };
                    let confirmed = confirmed.unwrap_or_else(|| self.confirmed(p, content));
                    if confirmed {
                        hit[self.owners[p as usize] as usize] = true;
                    }
                }
                if !targets.inner.is_empty() && literal_seen.insert(k) {
                    candidates.extend(targets.inner.iter().copied());
                }
            }
            candidates.sort_unstable();
            candidates.dedup();
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
            let mut found = PatternSet::new(set.pattern_len());
            set.which_overlapping_matches(&Input::new(content), &mut found);
            for pid in found.iter() {
                let g = self.owners[members[pid.as_usize()] as usize] as usize;
                hit[g] |= applicable[g];
            }
        }
        for &p in &self.one_by_one {
            if wanted(p, hit) && self.confirmed(p, content) {
                hit[self.owners[p as usize] as usize] = true;
            }
        }
    }

    /// Whether pattern `p` matches anywhere in `content`, with its own regex.
    fn confirmed(&self, p: u32, content: &[u8]) -> bool {
        self.whole
            .get(p, || compile_pattern(&self.sources[p as usize]).ok())
            .is_some_and(|r| r.is_match(content))
    }
}

#[cfg(test)]
mod tests {
    use super::super::confirm::CONFIRM_CACHE;
    use super::*;
    use crate::sync::Locked;

    fn run(m: &PatternMatcher, text: &str, applicable: &[bool]) -> Vec<bool> {
        let mut hit = vec![false; applicable.len()];
        m.mark_matches(text.as_bytes(), applicable, &mut hit);
        hit
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
        assert_eq!(
            m.counts(),
            IndexCounts {
                patterns: 4,
                prefixed: 2,
                split: 1,
                inner: 0,
                // `OrderInvoiceImpl(`, 48 spellings of `todo` and its separator, `Config`.
                literals: 50,
                sets: 1,
            }
        );
        let all = [true; 3];
        assert_eq!(
            run(&m, "x = OrderInvoiceBuilder(1)", &all),
            [false, false, false]
        );
        assert_eq!(
            run(&m, "x = OrderInvoiceImpl(1)", &all),
            [true, false, false]
        );
        // The look-behind of `\b` sees the byte before the hit.
        assert_eq!(
            run(&m, "x = XOrderInvoiceImpl(1)", &all),
            [false, false, false]
        );
        assert_eq!(
            run(&m, "val a = 1\nval orderConfig = 2", &all),
            [false, true, false]
        );
        assert_eq!(run(&m, "id 123-abc", &all), [false, true, false]);
        assert_eq!(run(&m, "// TODO-ORDER later", &all), [false, false, true]);
        assert_eq!(
            run(&m, "OrderInvoiceImpl( TODO order", &[false, true, true]),
            [false, false, true]
        );
    }

    /// Literals that overlap in the text (`OrderInvoice` inside `XOrderInvoiceImpl`) are all
    /// reported, and a prefix group is confirmed at every hit, not only the first.
    #[test]
    fn overlapping_literals_and_later_hits_are_all_confirmed() {
        let m = PatternMatcher::build(vec![
            (0, r"OrderInvoice\b".to_string()),
            (1, r"InvoiceImpl\(".to_string()),
            (2, r"\bThread\.sleep\(\s*5\d{2}\)".to_string()),
            (3, r"\bThread\.sleep\(\s*7\d{2}\)".to_string()),
        ]);
        assert_eq!(m.counts().prefixed, 4);
        let all = [true; 4];
        assert_eq!(
            run(&m, "OrderInvoiceImpl(x) OrderInvoice", &all),
            [true, true, false, false]
        );
        assert_eq!(
            run(
                &m,
                "Thread.sleep(1)\nThread.sleep(9)\nThread.sleep( 700)\n",
                &all
            ),
            [false, false, false, true]
        );
        // One automaton for each of the first two, one for the two `Thread.sleep(` patterns.
        assert_eq!(m.compiled().0, 3);
    }

    #[test]
    fn split_patterns_are_confirmed_backward_and_forward_from_the_literal() {
        let m = PatternMatcher::build(vec![
            (0, r"val\s+\w+\s*:\s*OrderImpl\b".to_string()),
            (1, r"\bval\s+\w+\s*:\s*PayImpl\b".to_string()),
        ]);
        assert_eq!(m.counts().split, 2);
        let all = [true; 2];
        for (text, expected) in [
            ("val x: OrderImpl", [true, false]),
            ("// see OrderImplTest, val x: OrderImplX", [false, false]),
            ("val x: XOrderImpl\nval y:OrderImpl", [true, false]),
            ("val x:\n  OrderImpl", [true, false]),
            ("val : OrderImpl", [false, false]),
            // Non-ASCII next to `\b` makes the backward automaton give up: the whole regex
            // decides, as the regex crate would.
            ("\u{e9}val x: PayImpl", [false, false]),
            ("\u{e9} val x: PayImpl", [false, true]),
        ] {
            assert_eq!(run(&m, text, &all), expected, "{text:?}");
        }
    }

    #[test]
    fn plain_literal_patterns_are_decided_at_the_hit_as_the_regex_crate_decides() {
        assert_eq!(
            Plain::of(r"\bOrderImpl\("),
            Some(Plain {
                literal: b"OrderImpl(".to_vec(),
                boundary_before: true,
                boundary_after: false,
            })
        );
        assert_eq!(
            Plain::of(r"server\.port").map(|p| p.literal),
            Some(b"server.port".to_vec())
        );
        assert!(Plain::of(r"\bFoo\b").is_some_and(|p| p.boundary_before && p.boundary_after));
        for not_plain in [
            r"\bAKIA[0-9A-Z]{16}\b",
            r"(?i)server\.port",
            r"\bFoo\.\w+\(",
            r"\BFoo",
            r"^Foo",
            r"\(\bxyz",
            r"\b",
        ] {
            assert_eq!(Plain::of(not_plain), None, "{not_plain}");
        }
        let patterns = [
            r"\bOrderImpl\(",
            r"server\.port",
            r"\bFooBar\b",
            r"(?-u)\bBarBaz\b",
            r"\bzz_top\b",
        ];
        let m = PatternMatcher::build(
            patterns
                .iter()
                .enumerate()
                .map(|(i, p)| (i as u32, p.to_string()))
                .collect(),
        );
        let regexes: Vec<regex::bytes::Regex> = patterns
            .iter()
            .map(|p| regex::bytes::Regex::new(p).unwrap())
            .collect();
        let all = [true; 5];
        for text in [
            "XOrderImpl(x)",
            "OrderImpl(",
            "  val a = OrderImpl(x)",
            "\u{e9}OrderImpl(x)",
            "\u{20ac}OrderImpl(x)",
            "FooBar",
            "FooBarBaz FooBar_",
            "a FooBar.",
            "FooBar\u{e9}",
            "FooBar\u{20ac} ",
            "_FooBar",
            "9FooBar",
            "server.port=1",
            "xserver.porty",
            "BarBaz\u{e9}",
            "\u{e9}BarBaz",
            "BarBaz1 BarBaz",
            "zz_top",
            "zz_topper zz_top\n",
        ] {
            let expected: Vec<bool> = regexes
                .iter()
                .map(|r| r.is_match(text.as_bytes()))
                .collect();
            assert_eq!(run(&m, text, &all), expected, "{text:?}");
        }
        // Every group was confirmed without an automaton.
        let kept = m.anchored.0.locked();
        assert_eq!(kept.len(), 5);
        assert!(kept.values().all(|c| matches!(**c, GroupConfirm::Plain(_))));
    }

    /// A company-wide guidebook repeats patterns across guidelines: every guideline of a
    /// shared prefix group or a shared split literal is marked, not only the first.
    #[test]
    fn identical_patterns_in_several_guidelines_all_match() {
        let m = PatternMatcher::build(vec![
            (0, r"\bFooBar\(".to_string()),
            (1, r"\bFooBar\(".to_string()),
            (2, r"\bFooBar\.\w+\(".to_string()),
            (3, r"val\s+\w+\s*:\s*FooBar\b".to_string()),
            (4, r"val\s+\w+\s*:\s*FooBar\b".to_string()),
        ]);
        assert_eq!(
            run(&m, "  val hit3 = FooBar(x)\n val a: FooBar\n", &[true; 5]),
            [true, true, false, true, true]
        );
    }

    #[test]
    fn the_confirmation_caches_stay_bounded() {
        let patterns: Vec<(u32, String)> = (0..CONFIRM_CACHE as u32 + 300)
            .map(|i| (i, format!(r"\bname{i:05}x\(")))
            .collect();
        let n = patterns.len();
        let m = PatternMatcher::build(patterns);
        let text: String = (0..n).map(|i| format!("name{i:05}x(\n")).collect();
        let all = vec![true; n];
        assert!(run(&m, &text, &all).iter().all(|h| *h));
        assert!(m.compiled().0 <= CONFIRM_CACHE, "{:?}", m.compiled());
        assert!(run(&m, &text, &all).iter().all(|h| *h), "dropped, rebuilt");
    }
}
