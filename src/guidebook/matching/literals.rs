//! The literal scan: every occurrence of every indexed literal in a file, in one pass.
//!
//! A literal of 11 bytes or more is found by the last four 8-byte windows it ends with (16-byte
//! windows from 19 bytes on): every 4th position of the text, the next 8 and 16 bytes are
//! hashed against a bitmap of those windows, and only a set bit leads to an exact lookup, a
//! comparison of the 8 bytes before the window and then of the whole literal. Of any four
//! consecutive window positions an occurrence covers, one is tried, so each is found once.
//! The cost per byte depends neither on how many literals there are nor on how much of the
//! text looks like them: an Aho-Corasick automaton over thousands of identifiers walks deep
//! into its trie at every near miss (`OrderInvoiceBuilder(` against `OrderInvoiceImpl(`) and
//! measured 3.5–7 ns a byte on such code. Shorter literals, and literals that would crowd one
//! window, go through an automaton. Reads nothing; built with a snapshot.

use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use super::hash::FastHash;

/// Bits per indexed window in a bitmap: a text position hashes onto a set bit by chance about
/// once in this many. Fewer bits keep the bitmap in a core's cache (80 KB at 10,000 literals
/// rather than 320 KB); the more frequent false hits cost less than the cache misses did
/// (measured: 4 % less scan time at 1,000 guidelines, about 5 % less search time at 10,000).
const BITS_PER_WINDOW: usize = 16;
/// The smallest and largest bitmap, as powers of two (512 bytes; 2 MiB).
const MIN_BITS: u32 = 12;
const MAX_BITS: u32 = 24;

/// The literals hashed by `W`-byte windows, tried every [`STRIDE`] bytes of the text.
///
/// A literal of `L ≥ W + STRIDE - 1` bytes is indexed by the `STRIDE` windows that end at its
/// last `STRIDE` bytes (`window_offsets`): of the window positions an occurrence covers,
/// exactly one in every `STRIDE` consecutive ones is tried, so each occurrence is found once.
///
/// A set bit sends the position to the table of windows, laid out so that a lookup touches few
/// cache lines, since after an idle pause each one is a miss: the slot (the window itself and
/// where its candidates are), the candidates side by side, and the literal's bytes in one
/// array. (A `HashMap<K, Vec<Candidate>>` and a `Vec` per literal took five lines, and those
/// lookups were as much of a sidecar's CPU as the loop over the text.)
#[derive(Debug)]
struct Windows<K> {
    /// `64 - log2(bitmap bits)`: a hash's top bits pick its bit.
    shift: u32,
    bitmap: Vec<u64>,
    /// Open addressing with linear probing, a power of two long, at most two-thirds full: a
    /// window's slot starts at its hash's bits from [`SLOT_SHIFT`] on.
    slots: Vec<Slot<K>>,
    /// Each window's candidates, contiguous.
    candidates: Vec<Candidate>,
    /// The bytes of every literal in the table, one after another.
    bytes: Vec<u8>,
}

/// A window of the table and its candidates, `candidates[first..first + count]`; a count of 0
/// is an empty slot.
#[derive(Debug, Clone, Copy)]
struct Slot<K> {
    window: K,
    first: u32,
    count: u32,
}

/// Where a window's slot search starts: bits of its hash below those the bitmap uses.
const SLOT_SHIFT: u32 = 16;

/// A literal that has a window at `offset`, and up to 8 of its bytes before the window (as a
/// little-endian number): one comparison turns away most of the literals that share a window
/// (the same words after another first word) before any is compared in full. Its bytes are
/// `bytes[at..at + len]` of its table.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    literal: u32,
    offset: u32,
    before: u64,
    at: u32,
    len: u32,
}

/// The bytes of `b` before `at`, at most 8 of them, as a little-endian number.
fn bytes_before(b: &[u8], at: usize) -> u64 {
    b[at.saturating_sub(8)..at]
        .iter()
        .rev()
        .fold(0, |n, &byte| (n << 8) | u64::from(byte))
}

/// A window width: how to read `W` bytes as a key and hash them.
trait Width: std::hash::Hash + Eq + Copy {
    const W: usize;
    fn load(b: &[u8]) -> Self;
    fn hash(self) -> u64;
}

impl Width for u64 {
    const W: usize = 8;
    #[inline(always)]
    fn load(b: &[u8]) -> u64 {
        u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        self.wrapping_mul(K8)
    }
}

impl Width for u128 {
    const W: usize = 16;
    #[inline(always)]
    fn load(b: &[u8]) -> u128 {
        u128::from_le_bytes(b[..16].try_into().expect("16 bytes"))
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        (self as u64).wrapping_mul(K8) ^ ((self >> 64) as u64).wrapping_mul(K16)
    }
}

const K8: u64 = 0x9E37_79B9_7F4A_7C15;
const K16: u64 = 0xC2B2_AE3D_27D4_EB4F;

/// How many bytes apart windows are tried. Longer strides index more windows per literal, the
/// earliest of which may miss its distinctive end (`OrderInvoiceImpl(` against the
/// `OrderInvoiceBuilder(` all around it) and hit the text more often.
const STRIDE: usize = 4;
/// The shortest literal hashed by 8-byte windows, and by 16-byte ones; shorter literals go
/// through the automaton.
const MIN_W8: usize = 8 + STRIDE - 1;
const MIN_W16: usize = 16 + STRIDE - 1;

/// Where a literal of `len` bytes has its indexed `w`-byte windows.
fn window_offsets(len: usize, w: usize) -> std::ops::RangeInclusive<usize> {
    len - w - (STRIDE - 1)..=len - w
}

impl<K: Width> Windows<K> {
    /// A table for `literals` (all at least `K::W + STRIDE - 1` bytes long), if any stay in
    /// it, and the literals left out because they would crowd a window past [`MAX_SHARING`].
    fn new(literals: &[(u32, &[u8])]) -> (Option<Self>, Vec<u32>) {
        let mut by_window: HashMap<K, Vec<Candidate>, FastHash> = HashMap::default();
        let mut bytes = Vec::new();
        for &(k, l) in literals {
            let at = bytes.len() as u32;
            bytes.extend_from_slice(l);
            for offset in window_offsets(l.len(), K::W) {
                by_window
                    .entry(K::load(&l[offset..]))
                    .or_default()
                    .push(Candidate {
                        literal: k,
                        offset: offset as u32,
                        before: bytes_before(l, offset),
                        at,
                        len: l.len() as u32,
                    });
            }
        }
        let crowded = crowded(&by_window);
        if !crowded.is_empty() {
            let out: std::collections::HashSet<u32> = crowded.iter().copied().collect();
            by_window.retain(|_, candidates| {
                candidates.retain(|c| !out.contains(&c.literal));
                !candidates.is_empty()
            });
        }
        if by_window.is_empty() {
            return (None, crowded);
        }
        let kept = literals.len() - crowded.len();
        let want = (kept * STRIDE * BITS_PER_WINDOW).next_power_of_two();
        let bits = want.trailing_zeros().clamp(MIN_BITS, MAX_BITS);
        let shift = 64 - bits;
        let mut bitmap = vec![0u64; (1usize << bits) / 64];
        for w in by_window.keys() {
            let h = (Width::hash(*w) >> shift) as usize;
            bitmap[h / 64] |= 1 << (h % 64);
        }
        // Always more slots than windows, so that every search meets an empty one.
        let len = (by_window.len() * 3 / 2 + 1).next_power_of_two();
        let empty = Slot {
            window: K::load(&[0; 16]),
            first: 0,
            count: 0,
        };
        let mut slots = vec![empty; len];
        let mut candidates = Vec::new();
        for (window, list) in by_window {
            let mut s = Self::slot_start(window, len);
            while slots[s].count != 0 {
                s = (s + 1) & (len - 1);
            }
            slots[s] = Slot {
                window,
                first: candidates.len() as u32,
                count: list.len() as u32,
            };
            candidates.extend(list);
        }
        let table = Windows {
            shift,
            bitmap,
            slots,
            candidates,
            bytes,
        };
        (Some(table), crowded)
    }

    /// Where the slot search for `window` starts in a table of `len` slots.
    #[inline(always)]
    fn slot_start(window: K, len: usize) -> usize {
        (window.hash() >> SLOT_SHIFT) as usize & (len - 1)
    }

    /// The candidates of window `w`, if it is in the table.
    #[inline(always)]
    fn candidates_of(&self, w: K) -> &[Candidate] {
        let mask = self.slots.len() - 1;
        let mut s = Self::slot_start(w, self.slots.len());
        loop {
            let slot = &self.slots[s & mask];
            if slot.count == 0 {
                return &[];
            }
            if slot.window == w {
                let first = slot.first as usize;
                return &self.candidates[first..first + slot.count as usize];
            }
            s += 1;
        }
    }

    /// Whether window `w` may be indexed: its bit in the bitmap is set.
    #[inline(always)]
    fn may_hold(&self, w: K) -> bool {
        let h = (w.hash() >> self.shift) as usize;
        self.bitmap[h / 64] & (1 << (h % 64)) != 0
    }

    /// Calls `hit` for each literal indexed by window `w`, read at position `i` of `content`,
    /// that occurs there. Taken only when [`Windows::may_hold`] says so.
    #[inline(never)]
    fn probe(&self, w: K, i: usize, content: &[u8], hit: &mut impl FnMut(usize, usize)) {
        // The 8 bytes before the window, whose last `offset` a candidate's must equal.
        let before = match i.checked_sub(8) {
            Some(from) => u64::load(&content[from..]),
            None => bytes_before(content, i)
                .checked_shl(8 * (8 - i as u32))
                .unwrap_or(0),
        };
        for c in self.candidates_of(w) {
            let offset = c.offset as usize;
            let Some(start) = i.checked_sub(offset) else {
                continue;
            };
            if offset > 0 && before >> (8 * 8usize.saturating_sub(offset)) != c.before {
                continue;
            }
            let l = &self.bytes[c.at as usize..(c.at + c.len) as usize];
            if content.get(start..start + l.len()) == Some(l) {
                hit(c.literal as usize, start);
            }
        }
    }

    /// Calls `hit` for each occurrence of its literals in `content` whose window is tried at
    /// position `from` (a multiple of [`STRIDE`]) or later.
    fn scan_from(&self, from: usize, content: &[u8], hit: &mut impl FnMut(usize, usize)) {
        let mut i = from;
        while i + K::W <= content.len() {
            let w = K::load(&content[i..]);
            if self.may_hold(w) {
                self.probe(w, i, content, hit);
            }
            i += STRIDE;
        }
    }
}

/// Both tables in one pass over `content`, up to the last position a 16-byte window fits:
/// an 8-byte window is the low half of the 16-byte one at the same position, so each position
/// is loaded once and the loop runs once instead of twice. Returns the first position not
/// tried, from which [`Windows::scan_from`] finishes the 8-byte table.
fn scan_both(
    w8: &Windows<u64>,
    w16: &Windows<u128>,
    content: &[u8],
    hit: &mut impl FnMut(usize, usize),
) -> usize {
    let mut i = 0;
    while i + 16 <= content.len() {
        let wide = u128::load(&content[i..]);
        let narrow = wide as u64;
        let (in8, in16) = (w8.may_hold(narrow), w16.may_hold(wide));
        if in8 | in16 {
            if in8 {
                w8.probe(narrow, i, content, hit);
            }
            if in16 {
                w16.probe(wide, i, content, hit);
            }
        }
        i += STRIDE;
    }
    i
}

/// Every literal of a matcher, ready to be found.
#[derive(Debug)]
pub struct LiteralScan {
    /// How many literals it holds (each table keeps its own literals' bytes).
    count: usize,
    /// The literals shorter than [`MIN_W8`] bytes or crowding a window, and their numbers.
    short: Option<(AhoCorasick, Vec<u32>)>,
    /// Literals of [`MIN_W8`] bytes or more by 8-byte windows, of [`MIN_W16`] or more by
    /// 16-byte windows.
    w8: Option<Windows<u64>>,
    w16: Option<Windows<u128>>,
}

/// The most literals a window hit may have to compare in full: those that share the window at
/// the same offset and the 8 bytes before it. A text that repeats such a shared tail would
/// otherwise compare every one of them at every repetition (the automaton's time is linear).
/// Literals that differ only in a number at their end (`ShipmentConfig5`, `…Config53`,
/// `…Config534`) share windows this way: with a bound of 16, 468 of the default bench
/// corpus's 1,855 literals at 1,000 guidelines went to the automaton, which then took half of
/// the scan; with 64 the scan took 0.43 instead of 1.12 ms (near-miss corpus unchanged).
const MAX_SHARING: usize = 64;

/// The literals that would crowd a window past [`MAX_SHARING`]: more of them share the window
/// at the same offset and the same bytes before it (as many as the offset has, up to 8) than
/// a hit may compare in full. Only a window with more candidates than that can be crowded.
fn crowded<K>(by_window: &HashMap<K, Vec<Candidate>, FastHash>) -> Vec<u32> {
    let mut crowded = Vec::new();
    for candidates in by_window.values().filter(|c| c.len() > MAX_SHARING) {
        let mut sharing: HashMap<(u32, u64), usize, FastHash> = HashMap::default();
        for c in candidates {
            *sharing.entry((c.offset.min(8), c.before)).or_default() += 1;
        }
        crowded.extend(
            candidates
                .iter()
                .filter(|c| sharing[&(c.offset.min(8), c.before)] > MAX_SHARING)
                .map(|c| c.literal),
        );
    }
    crowded.sort_unstable();
    crowded.dedup();
    crowded
}

impl LiteralScan {
    /// Indexes `literals` (none empty); a hit reports a literal by its position here.
    pub fn new(literals: Vec<Vec<u8>>) -> LiteralScan {
        let mut short = Vec::new();
        let mut w8 = Vec::new();
        let mut w16 = Vec::new();
        for (k, l) in literals.iter().enumerate() {
            let k = k as u32;
            match l.len() {
                n if n >= MIN_W16 => w16.push((k, l.as_slice())),
                n if n >= MIN_W8 => w8.push((k, l.as_slice())),
                _ => short.push(k),
            }
        }
        // Literals that would crowd one window go through the automaton instead.
        let (w8, crowded8) = Windows::<u64>::new(&w8);
        let (w16, crowded16) = Windows::<u128>::new(&w16);
        short.extend(crowded8.into_iter().chain(crowded16));
        short.sort_unstable();
        let short = (!short.is_empty()).then(|| {
            let automaton = AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .build(short.iter().map(|&k| &literals[k as usize]))
                .expect("literals of bounded size build an automaton");
            (automaton, short)
        });
        LiteralScan {
            count: literals.len(),
            short,
            w8,
            w16,
        }
    }

    /// How many literals it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Calls `hit(k, start)` for every occurrence of every literal `k` in `content`, overlapping
    /// ones included, in no particular order.
    pub fn for_each(&self, content: &[u8], mut hit: impl FnMut(usize, usize)) {
        if let Some((automaton, numbers)) = &self.short {
            for m in automaton.find_overlapping_iter(content) {
                hit(numbers[m.pattern().as_usize()] as usize, m.start());
            }
        }
        match (&self.w8, &self.w16) {
            (Some(w8), Some(w16)) => {
                let rest = scan_both(w8, w16, content, &mut hit);
                w8.scan_from(rest, content, &mut hit);
            }
            (Some(w8), None) => w8.scan_from(0, content, &mut hit),
            (None, Some(w16)) => w16.scan_from(0, content, &mut hit),
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every occurrence, found naively: each position against each length a literal has.
    fn naive(literals: &[&str], text: &str) -> Vec<(usize, usize)> {
        let by_text: HashMap<&[u8], usize> = literals
            .iter()
            .enumerate()
            .map(|(k, l)| (l.as_bytes(), k))
            .collect();
        let mut lengths: Vec<usize> = literals.iter().map(|l| l.len()).collect();
        lengths.sort_unstable();
        lengths.dedup();
        let text = text.as_bytes();
        let mut hits = Vec::new();
        for start in 0..text.len() {
            for &n in &lengths {
                if let Some(&k) = text.get(start..start + n).and_then(|t| by_text.get(t)) {
                    hits.push((k, start));
                }
            }
        }
        hits.sort_unstable();
        hits
    }

    #[test]
    fn finds_every_occurrence_of_every_width_overlapping_ones_included() {
        let literals = [
            "abc",
            "unwrap(",
            "OrderInv",
            "OrderInvoiceImpl(",
            "InvoiceImpl(",
            "oiceImpl(",
            "aaaaaaaa",
            "aaaaaaaaaaaaaaaaa",
            "é€ü",
            "OrderInvoiceImplFactory(",
        ];
        // The text ends with an 8-byte-window literal where no 16-byte window fits any more.
        let text = "OrderInvoiceImpl(aaaaaaaaaaaaaaaaa OrderInvoiceImpl(x) OrderInvoiceImpl OrderInv x.unwrap() \
                    aaaaaaaaaaaaaaaaaaaa é€ü OrderInvoiceImplFactory(y) abcOrderInvoiceImpl(OrderInvoiceImpl(";
        let scan = LiteralScan::new(literals.iter().map(|l| l.as_bytes().to_vec()).collect());
        assert!(
            scan.w8.is_some() && scan.w16.is_some(),
            "both window widths are in use"
        );
        let mut got = Vec::new();
        scan.for_each(text.as_bytes(), |k, start| got.push((k, start)));
        got.sort_unstable();
        assert_eq!(got, naive(&literals, text));
        assert!(
            got.iter().any(|&(k, _)| k == 7),
            "the 17-byte literal overlaps itself"
        );
        // Literals that share their last bytes, and text shorter than a window.
        let mut short = Vec::new();
        scan.for_each(b"abcOrder", |k, s| short.push((k, s)));
        assert_eq!(short, vec![(0, 0)]);
    }

    #[test]
    fn literals_sharing_a_long_tail_go_through_the_automaton() {
        // More literals than a hit may compare, differing only in their first bytes: they share
        // every window and the 8 bytes before it; a text repeating that tail must not compare
        // them all at each repetition. As many as a hit may compare stay in the table.
        let tail = "_handler.unwrap_or_else(|e| panic!(";
        for (crowd, crowded) in [(MAX_SHARING + 24, true), (MAX_SHARING, false)] {
            let literals: Vec<String> = (0..crowd).map(|i| format!("x{i:03}{tail}")).collect();
            let mut others: Vec<String> = (0..5).map(|i| format!("OrderInvoice{i}Impl(")).collect();
            others.extend(literals.iter().cloned());
            let scan = LiteralScan::new(others.iter().map(|l| l.as_bytes().to_vec()).collect());
            let short = scan.short.as_ref().map_or(&[][..], |(_, s)| s.as_slice());
            if crowded {
                assert_eq!(short.len(), crowd, "the crowded literals, and only those");
                assert!(short.iter().all(|&k| k >= 5));
            } else {
                assert!(short.is_empty(), "{} in the automaton", short.len());
            }
            let text = format!("{}x007{tail} OrderInvoice3Impl(", tail.repeat(50));
            let refs: Vec<&str> = others.iter().map(String::as_str).collect();
            let mut got = Vec::new();
            scan.for_each(text.as_bytes(), |k, start| got.push((k, start)));
            got.sort_unstable();
            assert_eq!(got, naive(&refs, &text));
            assert_eq!(got.len(), 2);
        }
    }

    /// A literal whose windows are all the same makes a table of one window: a window that
    /// only shares its bit must still find an empty slot and nothing in it.
    #[test]
    fn a_table_of_one_window_answers_a_window_that_only_shares_its_bit() {
        let scan = LiteralScan::new(vec![b"aaaaaaaaaaa".to_vec()]);
        let table = scan.w8.as_ref().expect("an 8-byte table");
        assert_eq!(table.slots.iter().filter(|s| s.count > 0).count(), 1);
        assert!(table.slots.len() > 1);
        let collision = (0u64..)
            .map(|n| n.wrapping_mul(0x2545_f491_4f6c_dd1d))
            .find(|&w| w != u64::load(b"aaaaaaaa") && table.may_hold(w))
            .expect("some window shares the bit");
        assert!(table.candidates_of(collision).is_empty());
        let text = [&collision.to_le_bytes()[..], b" aaaaaaaaaaa"].concat();
        let mut got = Vec::new();
        scan.for_each(&text, |k, start| got.push((k, start)));
        assert_eq!(got, vec![(0, 9)]);
    }

    #[test]
    fn many_literals_still_find_only_what_occurs() {
        // More literals than a small bitmap has bits per literal, so unrelated windows collide.
        let literals: Vec<String> = (0..20_000)
            .map(|i| format!("Word{i}Suffix{}(", i % 7))
            .collect();
        let text: String = (0..2_000)
            .map(|i| format!("Word{i}Suffix{}( Word{i}Suffix{}.x ", i % 7, (i + 1) % 7))
            .collect();
        let refs: Vec<&str> = literals.iter().map(String::as_str).collect();
        let scan = LiteralScan::new(literals.iter().map(|l| l.as_bytes().to_vec()).collect());
        let mut got = Vec::new();
        scan.for_each(text.as_bytes(), |k, start| got.push((k, start)));
        got.sort_unstable();
        assert_eq!(got.len(), 2_000);
        assert_eq!(got, naive(&refs, &text));
    }

    #[test]
    fn agrees_with_the_naive_search_on_random_literals_over_a_small_alphabet() {
        // A tiny alphabet makes literals share windows, overlap and sit at the text's edges.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..200 {
            let mut word = |len: u64| -> String {
                (0..len)
                    .map(|_| ["a", "b", "("][next(3) as usize])
                    .collect()
            };
            let mut literals: Vec<String> = Vec::new();
            for _ in 0..1 + round % 12 {
                let len = 3 + (round as u64 * 7 + literals.len() as u64 * 5) % 28;
                literals.push(word(len));
            }
            literals.sort();
            literals.dedup();
            // Text made of the literals themselves, cut and joined at random.
            let mut text = String::new();
            for _ in 0..40 {
                let l = &literals[(text.len() + round) % literals.len()];
                let cut = (text.len() * 31 + round) % (l.len() + 1);
                text.push_str(&l[cut..]);
                text.push_str(&word((round % 3) as u64));
            }
            let refs: Vec<&str> = literals.iter().map(String::as_str).collect();
            let scan = LiteralScan::new(literals.iter().map(|l| l.as_bytes().to_vec()).collect());
            let mut got = Vec::new();
            scan.for_each(text.as_bytes(), |k, start| got.push((k, start)));
            got.sort_unstable();
            assert_eq!(
                got,
                naive(&refs, &text),
                "round {round}: {literals:?} in {text:?}"
            );
        }
    }
}
