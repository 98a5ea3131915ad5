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
use std::sync::{Arc, Mutex};

use regex::bytes::Regex;
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{hybrid, meta};
use regex_automata::{Anchored, Input, MatchKind, PatternSet};
use regex_syntax::hir::literal::{Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};
use regex_syntax::is_word_byte;

use super::literals::LiteralScan;
use super::load::FastHash;
use super::load::{compile_pattern, REGEX_SIZE_LIMIT};

/// A literal shorter than this occurs almost everywhere and filters nothing.
const MIN_LITERAL_LEN: usize = 3;
/// More alternatives than this (a case-insensitive word, say) are not worth indexing.
const MAX_LITERALS_PER_PATTERN: usize = 64;
/// A prefix literal at least this long is selective enough to confirm at its hits even when a
/// longer literal lies further inside the pattern.
const GOOD_PREFIX_LEN: usize = 8;
/// Compiled confirmations kept at once, of each kind; past it, half are dropped (and compiled
/// again when next needed).
const CONFIRM_CACHE: usize = 4096;
/// The most patterns in one set for the patterns without a usable literal. A set's lazy DFA
/// gives up past a few thousand patterns and the search falls off a cliff (measured: 20,000
/// patterns in one set took minutes per search; 2,048 kept 10 × 20 KB within milliseconds).
const PATTERNS_PER_SET: usize = 2048;

fn parse(pattern: &str) -> Option<Hir> {
    regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()
}

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
pub(super) fn index_of_hir(hir: &Hir) -> Index {
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

/// A pattern split where its literal starts: the pieces before it, compiled backward, and the
/// pieces from it on. A match exists where the literal starts exactly when the pieces before
/// it match backward from there and the rest matches forward from there.
#[derive(Debug)]
struct SplitPattern {
    before: hybrid::dfa::DFA,
    caches: Mutex<Vec<hybrid::dfa::Cache>>,
    after: meta::Regex,
    /// The literal that starts the pieces from the split on, as a [`Plain`] literal with a
    /// boundary after it, when a word boundary (or word end) follows it and it ends with an
    /// ASCII word character: a hit the plain literal turns down (followed by another ASCII word
    /// character) cannot match, and is turned away without running either automaton. On code
    /// full of near misses (`OrderImplBuilder` against `OrderImpl\b`) that is most hits, and an
    /// automaton's first run after an idle pause touches several cold cache lines.
    word_end: Option<Plain>,
}

/// The literal `parts` start with, as a plain literal with a boundary after it, if a word
/// boundary or word end follows it and its last byte is an ASCII word character (where a word
/// end and a word boundary are the same test).
fn literal_before_word_end(parts: &[Hir]) -> Option<Plain> {
    use regex_syntax::hir::Look;
    let [first, second, ..] = parts else {
        return None;
    };
    let HirKind::Literal(literal) = first.kind() else {
        return None;
    };
    let HirKind::Look(look) = second.kind() else {
        return None;
    };
    let ends_word = matches!(
        look,
        Look::WordAscii
            | Look::WordUnicode
            | Look::WordEndAscii
            | Look::WordEndUnicode
            | Look::WordEndHalfAscii
            | Look::WordEndHalfUnicode
    );
    let last = *literal.0.last()?;
    (ends_word && is_word_byte(last)).then(|| Plain {
        literal: literal.0.to_vec(),
        boundary_before: false,
        boundary_after: true,
    })
}

impl SplitPattern {
    fn build(pattern: &str, at: usize) -> Option<SplitPattern> {
        let hir = parse(pattern)?;
        let HirKind::Concat(parts) = hir.kind() else {
            return None;
        };
        let before = Hir::concat(parts[..at].to_vec());
        let word_end = literal_before_word_end(&parts[at..]);
        let after = Hir::concat(parts[at..].to_vec());
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .reverse(true)
                    .utf8(false)
                    .which_captures(thompson::WhichCaptures::None)
                    .nfa_size_limit(Some(REGEX_SIZE_LIMIT)),
            )
            .build_from_hir(&before)
            .ok()?;
        let before = hybrid::dfa::DFA::builder()
            .configure(hybrid::dfa::Config::new().unicode_word_boundary(true))
            .build_from_nfa(nfa)
            .ok()?;
        let after = meta::Builder::new()
            .configure(set_config(Use::Anchored, 1))
            .build_from_hir(&after)
            .ok()?;
        Some(SplitPattern {
            before,
            caches: Mutex::new(Vec::new()),
            after,
            word_end,
        })
    }

    /// Whether a match starts its literal at `at`; `None` when the backward automaton gave up
    /// (a Unicode word boundary next to a non-ASCII byte, say) and only the whole regex knows.
    fn matches_at(&self, content: &[u8], at: usize) -> Option<bool> {
        if let Some(word_end) = &self.word_end {
            if word_end.matches_at(content, at) == Some(false) {
                return Some(false);
            }
        }
        let forward = Input::new(content).range(at..).anchored(Anchored::Yes);
        if !self.after.is_match(forward) {
            return Some(false);
        }
        let taken = self.caches.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut cache = taken.unwrap_or_else(|| self.before.create_cache());
        let backward = Input::new(content).range(..at).anchored(Anchored::Yes);
        let found = self.before.try_search_rev(&mut cache, &backward);
        self.caches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(cache);
        found.ok().map(|m| m.is_some())
    }
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

/// How a set is searched, which decides what is worth building for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Over whole files: everything the regex crate builds, prefilter included.
    Scan,
    /// Anchored where a literal starts: the NFA and its lazy DFA only. A prefilter is useless
    /// there, and extracting one from a few thousand case-insensitive patterns took 6.7 s
    /// (2,500 `(?i)todo[-_ ]order-N`), where the NFA alone takes 36 ms.
    Anchored,
}

/// Patterns compiled into one automaton that reports every pattern matching (overlapping),
/// configured as `regex::bytes::RegexSetBuilder` configures its engine: no captures, bytes not
/// required to be UTF-8, `^`/`$` at lines.
fn build_set(patterns: &[&str], use_: Use) -> Result<meta::Regex, String> {
    meta::Builder::new()
        .configure(set_config(use_, patterns.len()))
        .syntax(syntax::Config::new().multi_line(true).utf8(false))
        .build_many(patterns)
        .map_err(|e| e.to_string())
}

/// The engine configuration of a set of `patterns` patterns searched as `use_` says.
fn set_config(use_: Use, patterns: usize) -> meta::Config {
    let light = use_ == Use::Anchored;
    meta::Config::new()
        .onepass(!light)
        .backtrack(!light)
        .dfa(!light)
        .auto_prefilter(!light)
        .match_kind(MatchKind::All)
        .utf8_empty(false)
        .which_captures(thompson::WhichCaptures::None)
        .nfa_size_limit(Some(
            REGEX_SIZE_LIMIT
                .saturating_mul(patterns.max(1))
                .min(1 << 30),
        ))
}

/// A pattern that is one literal with at most a word boundary (`\b`) on either side: a hit of
/// its literal is a match exactly when the boundaries hold, which the bytes next to the hit
/// decide when they are ASCII (`\bOrderImpl\(` at `XOrderImpl(` does not match). Common in
/// guidebooks (`server\.port`, `\bFooImpl\(`), and decided with no automaton, whose first
/// run after an idle pause touches several cold cache lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plain {
    literal: Vec<u8>,
    boundary_before: bool,
    boundary_after: bool,
}

impl Plain {
    /// `pattern` as a plain literal, if it is one.
    fn of(pattern: &str) -> Option<Plain> {
        use regex_syntax::hir::Look;
        let hir = parse(pattern)?;
        let parts = match hir.kind() {
            HirKind::Concat(parts) => parts.as_slice(),
            _ => std::slice::from_ref(&hir),
        };
        let word = |h: &Hir| matches!(h.kind(), HirKind::Look(Look::WordAscii | Look::WordUnicode));
        let (boundary_before, parts) = match parts {
            [first, rest @ ..] if word(first) => (true, rest),
            _ => (false, parts),
        };
        let (boundary_after, parts) = match parts {
            [rest @ .., last] if word(last) => (true, rest),
            _ => (false, parts),
        };
        let [only] = parts else {
            return None;
        };
        let HirKind::Literal(literal) = only.kind() else {
            return None;
        };
        Some(Plain {
            literal: literal.0.to_vec(),
            boundary_before,
            boundary_after,
        })
    }

    /// Whether a match starts at `at`; `None` when a boundary has a non-ASCII byte on either
    /// side (a Unicode word character, perhaps), which only the regex decides.
    fn matches_at(&self, content: &[u8], at: usize) -> Option<bool> {
        let end = at + self.literal.len();
        if content.get(at..end) != Some(self.literal.as_slice()) {
            return Some(false);
        }
        // A word boundary between two bytes (`None` at either end of the content).
        let boundary = |before: Option<u8>, after: Option<u8>| -> Option<bool> {
            let word = |b: Option<u8>| match b {
                None => Some(false),
                Some(b) if b.is_ascii() => Some(is_word_byte(b)),
                Some(_) => None,
            };
            Some(word(before)? != word(after)?)
        };
        let at_start = || boundary(at.checked_sub(1).map(|i| content[i]), Some(content[at]));
        let at_end = || boundary(Some(content[end - 1]), content.get(end).copied());
        if self.boundary_before && !at_start()? || self.boundary_after && !at_end()? {
            return Some(false);
        }
        Some(true)
    }
}

/// How a group of patterns sharing their prefixes is confirmed at a hit.
#[derive(Debug)]
enum GroupConfirm {
    /// Every member is a plain literal (in the group's order).
    Plain(Vec<Plain>),
    /// One automaton over the members, run anchored at the hit.
    Set(meta::Regex),
}

/// Compiled things by key, at most [`CONFIRM_CACHE`] of them.
#[derive(Debug)]
struct Bounded<T>(Mutex<HashMap<u32, Arc<T>>>);

impl<T> Bounded<T> {
    fn new() -> Self {
        Bounded(Mutex::new(HashMap::new()))
    }

    /// The value for `key`, made by `make` if it is not kept (outside the lock: another thread
    /// may make it too, which costs less than making every search wait behind one compile).
    fn get(&self, key: u32, make: impl FnOnce() -> Option<T>) -> Option<Arc<T>> {
        let lock = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = lock().get(&key) {
            return Some(v.clone());
        }
        let made = Arc::new(make()?);
        let mut kept = lock();
        if kept.len() >= CONFIRM_CACHE {
            let drop: Vec<u32> = kept.keys().copied().step_by(2).collect();
            for k in drop {
                kept.remove(&k);
            }
        }
        kept.insert(key, made.clone());
        Some(made)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

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

    /// A literal followed by `\b` is turned away at once where an ASCII word character follows
    /// it, and only there: every other hit still goes to the automata.
    #[test]
    fn a_split_literal_followed_by_a_word_character_is_turned_away_without_an_automaton() {
        let build = |pattern: &str| {
            let Index::Split { at, .. } = index_of(pattern) else {
                panic!("{pattern} is split");
            };
            SplitPattern::build(pattern, at).expect("it builds")
        };
        for pattern in [
            r"val\s+\w+\s*:\s*OrderImpl\b",
            r"(?-u)val\s+\w+\s*:\s*OrderImpl\b",
            r"val\s+\w+\s*:\s*OrderImpl\b{end}",
        ] {
            let split = build(pattern);
            let word_end = split.word_end.as_ref().expect("a word end");
            assert_eq!(word_end.literal, b"OrderImpl", "{pattern}");
            let regex = regex::bytes::Regex::new(pattern).unwrap();
            for text in [
                "val x: OrderImplBuilder(x)",
                "val x: OrderImpl_",
                "val x: OrderImpl9",
                "val x: OrderImpl",
                "val x: OrderImpl(",
                "val x: OrderImpl\u{e9}",
                "val x: OrderImpl\u{2070}",
            ] {
                let at = text.find("OrderImpl").unwrap();
                let turned_away = word_end.matches_at(text.as_bytes(), at) == Some(false);
                let next = text.as_bytes().get(at + 9).copied();
                assert_eq!(turned_away, next.is_some_and(is_word_byte), "{text:?}");
                let found = split.matches_at(text.as_bytes(), at);
                assert!(
                    found.is_none_or(|f| f == regex.is_match(text.as_bytes())),
                    "{pattern} in {text:?}: {found:?}"
                );
            }
        }
        // No word end after the literal, or a literal ending in punctuation: no shortcut.
        assert_eq!(build(r"val\s+\w+\s*:\s*OrderImpl").word_end, None);
        assert_eq!(build(r"val\s+\w+\s*:\s*OrderImpl\B").word_end, None);
        assert_eq!(build(r"val\s+\w+\s*=\s*OrderImpl\(\b").word_end, None);
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
        let kept = m.anchored.0.lock().unwrap();
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
