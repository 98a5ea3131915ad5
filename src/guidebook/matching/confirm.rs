//! How a literal hit is confirmed: at the hit, by the bytes next to it (a plain literal with
//! word boundaries), by a small automaton over the patterns that share the literal, or
//! backward and forward from it (a pattern split where its literal starts); and the bounded
//! caches that keep what was compiled. Reads and writes nothing.

use crate::sync::Locked;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{hybrid, meta};
use regex_automata::{Anchored, Input, MatchKind};
use regex_syntax::hir::{Hir, HirKind};
use regex_syntax::is_word_byte;

use super::pattern::{parse, REGEX_SIZE_LIMIT};

/// Compiled confirmations kept at once, of each kind; past it, half are dropped (and compiled
/// again when next needed).
pub(super) const CONFIRM_CACHE: usize = 4096;
/// A pattern split where its literal starts: the pieces before it, compiled backward, and the
/// pieces from it on. A match exists where the literal starts exactly when the pieces before
/// it match backward from there and the rest matches forward from there.
#[derive(Debug)]
pub(super) struct SplitPattern {
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
    pub(super) fn build(pattern: &str, at: usize) -> Option<SplitPattern> {
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
    pub(super) fn matches_at(&self, content: &[u8], at: usize) -> Option<bool> {
        if let Some(word_end) = &self.word_end {
            if word_end.matches_at(content, at) == Some(false) {
                return Some(false);
            }
        }
        let forward = Input::new(content).range(at..).anchored(Anchored::Yes);
        if !self.after.is_match(forward) {
            return Some(false);
        }
        let taken = self.caches.locked().pop();
        let mut cache = taken.unwrap_or_else(|| self.before.create_cache());
        let backward = Input::new(content).range(..at).anchored(Anchored::Yes);
        let found = self.before.try_search_rev(&mut cache, &backward);
        self.caches.locked().push(cache);
        found.ok().map(|m| m.is_some())
    }
}

/// How a set is searched, which decides what is worth building for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
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
pub(super) fn build_set(patterns: &[&str], use_: Use) -> Result<meta::Regex, String> {
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
pub(super) struct Plain {
    pub(super) literal: Vec<u8>,
    pub(super) boundary_before: bool,
    pub(super) boundary_after: bool,
}

impl Plain {
    /// `pattern` as a plain literal, if it is one.
    pub(super) fn of(pattern: &str) -> Option<Plain> {
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
    pub(super) fn matches_at(&self, content: &[u8], at: usize) -> Option<bool> {
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
pub(super) enum GroupConfirm {
    /// Every member is a plain literal (in the group's order).
    Plain(Vec<Plain>),
    /// One automaton over the members, run anchored at the hit.
    Set(meta::Regex),
}

/// Compiled things by key, at most [`CONFIRM_CACHE`] of them.
#[derive(Debug)]
pub(super) struct Bounded<T>(pub(super) Mutex<HashMap<u32, Arc<T>>>);

impl<T> Bounded<T> {
    pub(super) fn new() -> Self {
        Bounded(Mutex::new(HashMap::new()))
    }

    /// The value for `key`, made by `make` if it is not kept (outside the lock: another thread
    /// may make it too, which costs less than making every search wait behind one compile).
    pub(super) fn get(&self, key: u32, make: impl FnOnce() -> Option<T>) -> Option<Arc<T>> {
        let lock = || self.0.locked();
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
    pub(super) fn len(&self) -> usize {
        self.0.locked().len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::index::{index_of, Index};
    use super::*;

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
}
