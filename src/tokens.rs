//! Token counting for prompt budgets: exact OpenAI BPE (`cl100k_base`, `o200k_base`, with the
//! vocabularies compiled into the binary) or the `estimate` fallback (words × 1.3), and the fit
//! of a text to a budget without re-counting it once per dropped token. Reads and writes nothing.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether an exact vocabulary has been built in this process (tens of MiB once it is).
static VOCABULARY_LOADED: AtomicBool = AtomicBool::new(false);

/// Whether this process has built an exact vocabulary yet. The sidecar builds one only when a
/// text might exceed its budget or a prompt is counted: `status` reports it.
pub fn vocabulary_loaded() -> bool {
    VOCABULARY_LOADED.load(Ordering::Relaxed)
}

/// How tokens are counted. Cheap to copy; the exact vocabularies are built once per process, on
/// first use, and shared by every copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tokenizer {
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5): the default.
    #[default]
    Cl100k,
    /// OpenAI's `o200k_base` (GPT-4o and later).
    O200k,
    /// No vocabulary: whitespace-separated words × 1.3, rounded up.
    Estimate,
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every name [`Tokenizer::from_name`] accepts, in the order the docs list them.
pub const TOKENIZER_NAMES: [&str; 3] = ["cl100k_base", "o200k_base", "estimate"];

impl Tokenizer {
    /// The name results and settings use: `cl100k_base`, `o200k_base` or `estimate`.
    pub fn name(&self) -> &'static str {
        match self {
            Tokenizer::Cl100k => "cl100k_base",
            Tokenizer::O200k => "o200k_base",
            Tokenizer::Estimate => "estimate",
        }
    }

    pub fn from_name(name: &str) -> Option<Tokenizer> {
        match name {
            "cl100k_base" => Some(Tokenizer::Cl100k),
            "o200k_base" => Some(Tokenizer::O200k),
            "estimate" => Some(Tokenizer::Estimate),
            _ => None,
        }
    }

    /// The exact BPE behind this tokenizer, built on first use (tens of milliseconds) and kept
    /// for the life of the process.
    fn bpe(&self) -> Option<&'static bpe_openai::Tokenizer> {
        let bpe = match self {
            Tokenizer::Cl100k => bpe_openai::cl100k_base(),
            Tokenizer::O200k => bpe_openai::o200k_base(),
            Tokenizer::Estimate => return None,
        };
        VOCABULARY_LOADED.store(true, Ordering::Relaxed);
        Some(bpe)
    }

    /// Whether `text` is certainly within `budget` tokens without counting it: every token of
    /// `cl100k_base` and `o200k_base` is at least one byte, and the estimate gives fewer tokens
    /// than bytes for any text of two bytes or more. So a text no longer in bytes than the budget
    /// never needs the vocabulary.
    pub fn surely_within(&self, text_bytes: usize, budget: usize) -> bool {
        text_bytes <= budget && (text_bytes >= 2 || *self != Tokenizer::Estimate)
    }

    /// The number of tokens in `text`. Text that looks like a special token (`<|endoftext|>`)
    /// counts as the plain text it is, as tiktoken's `encode_ordinary` counts it.
    pub fn count(&self, text: &str) -> usize {
        match self.bpe() {
            Some(bpe) => bpe.count(text),
            None => estimate(words(text).count()),
        }
    }

    /// The number of tokens in `text` if it is at most `limit`, else `None`. Stops soon after
    /// the limit is passed, so a huge text over a small limit costs about the limit, not the text.
    pub fn count_within(&self, text: &str, limit: usize) -> Option<usize> {
        match self.bpe() {
            Some(bpe) => {
                // cl100k_base and o200k_base do not normalise, so `normalize` only wraps.
                bpe.count_till_limit(&bpe.normalize(text), limit)
            }
            None => {
                let mut n = 0;
                for _ in words(text) {
                    n += 1;
                    if estimate(n) > limit {
                        return None;
                    }
                }
                Some(estimate(n))
            }
        }
    }

    /// The length in bytes of the longest prefix of `text` found to hold at most `budget` tokens,
    /// cut at a character boundary. The text is encoded once and cut after its `budget`-th token;
    /// the prefix is then counted once to confirm it (BPE of a prefix can differ from the prefix
    /// of the BPE at the cut), and only if it is over is the cut moved back by the excess and
    /// counted again. Only a window of the text's start is encoded (about 8 bytes per budgeted
    /// token, widened while it holds fewer tokens than the budget), so the cost is one encoding of
    /// about `budget` tokens plus a count or two of the prefix, whatever the text's length, and
    /// never a count per dropped token.
    pub fn fit(&self, text: &str, budget: usize) -> usize {
        match self.bpe() {
            Some(bpe) => fit_bpe(bpe, text, budget),
            None => fit_estimate(text, budget),
        }
    }
}

fn fit_bpe(bpe: &bpe_openai::Tokenizer, text: &str, budget: usize) -> usize {
    // Encode a window of the text's start, widening it until it holds more than `budget` tokens
    // (or is the whole text). Tokens near the window's end may differ from the whole text's, but
    // the cut lies before them, and it is confirmed by a count below anyway.
    let mut window = budget.saturating_add(1).saturating_mul(8);
    let tokens = loop {
        let end = floor_char_boundary(text, window);
        let tokens = bpe.encode(&text[..end]);
        if tokens.len() > budget || end == text.len() {
            break tokens;
        }
        window = window.saturating_mul(4);
    };
    if tokens.len() <= budget {
        return text.len();
    }
    // ends[i]: the byte offset where token i ends. BPE tokens are byte sequences, so a cut may
    // land inside a character; it is moved back to the character's start.
    let mut ends = Vec::with_capacity(budget);
    let mut offset = 0;
    for t in tokens.iter().take(budget) {
        offset += bpe.bpe.token_len(*t);
        ends.push(offset);
    }
    let mut take = budget;
    loop {
        let cut = if take == 0 {
            0
        } else {
            floor_char_boundary(text, ends[take - 1])
        };
        let n = bpe.count(&text[..cut]);
        if n <= budget || cut == 0 {
            return cut;
        }
        take = take.saturating_sub(n - budget);
    }
}

/// The end offset of every whitespace-separated word of `text`.
fn words(text: &str) -> impl Iterator<Item = usize> + '_ {
    let base = text.as_ptr() as usize;
    text.split_whitespace()
        .map(move |w| w.as_ptr() as usize - base + w.len())
}

/// `words × 1.3`, rounded up, in integers.
fn estimate(words: usize) -> usize {
    (words * 13).div_ceil(10)
}

fn fit_estimate(text: &str, budget: usize) -> usize {
    let mut cut = 0;
    for (n, end) in words(text).enumerate() {
        if estimate(n + 1) > budget {
            return cut;
        }
        cut = end;
    }
    text.len()
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Tokenizer; 3] = [Tokenizer::Cl100k, Tokenizer::O200k, Tokenizer::Estimate];

    /// Our counts equal OpenAI's tiktoken on every sample text (English, Korean, code, emoji,
    /// whitespace-heavy, special-token look-alikes). The expected counts were produced by
    /// tests/fixtures/tokens/generate.py with the real Python tiktoken.
    #[test]
    fn agrees_with_tiktoken() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokens");
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let mut checked = 0;
        for (file, counts) in expected.as_object().unwrap() {
            if file.starts_with('_') {
                continue;
            }
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            for (name, want) in counts.as_object().unwrap() {
                let tokenizer = Tokenizer::from_name(name).unwrap();
                assert_eq!(
                    tokenizer.count(&text) as u64,
                    want.as_u64().unwrap(),
                    "{file} with {name}"
                );
                checked += 1;
            }
        }
        assert!(checked >= 16, "only {checked} counts checked");
    }

    #[test]
    fn names_round_trip() {
        for t in ALL {
            assert_eq!(Tokenizer::from_name(t.name()), Some(t));
        }
        assert_eq!(
            TOKENIZER_NAMES.map(|n| Tokenizer::from_name(n).unwrap()),
            ALL
        );
        assert_eq!(Tokenizer::from_name("p50k_base"), None);
    }

    #[test]
    fn estimate_is_words_times_1_3_rounded_up() {
        let t = Tokenizer::Estimate;
        assert_eq!(t.count(""), 0);
        assert_eq!(t.count("  one  "), 2);
        assert_eq!(
            t.count("one two three\nfour\tfive six seven eight nine ten"),
            13
        );
        assert_eq!(t.count("a b c"), 4);
    }

    #[test]
    fn fit_finds_a_prefix_within_the_budget() {
        let korean = "주문 서비스는 트랜잭션이 커밋된 뒤에 이벤트를 발행합니다. ".repeat(40);
        let english = "The consumer must be idempotent; store the event id. ".repeat(40);
        let code = "fn main() { let x = vec![1, 2, 3]; println!(\"{x:?}\"); }\n".repeat(40);
        let emoji = "👨‍👩‍👧‍👦🇰🇷 ok ".repeat(60);
        for t in ALL {
            for text in [&korean, &english, &code, &emoji] {
                let total = t.count(text);
                for budget in [0, 1, 7, 100, total - 1, total, total + 5] {
                    let cut = t.fit(text, budget);
                    assert!(text.is_char_boundary(cut));
                    let n = t.count(&text[..cut]);
                    assert!(n <= budget, "{t}: {n} > {budget}");
                    if budget >= total {
                        assert_eq!(cut, text.len());
                    } else if budget >= 7 {
                        // Close to the budget, not just anything under it.
                        assert!(n + 6 >= budget, "{t}: {n} tokens for a budget of {budget}");
                    }
                }
            }
        }
    }

    #[test]
    fn count_within_stops_at_the_limit() {
        for t in ALL {
            let text = "The consumer must be idempotent; store the event id. ".repeat(50);
            let n = t.count(&text);
            assert_eq!(t.count_within(&text, n), Some(n), "{t}");
            assert_eq!(t.count_within(&text, n + 100), Some(n), "{t}");
            assert_eq!(t.count_within(&text, n - 1), None, "{t}");
            assert_eq!(t.count_within("", 0), Some(0), "{t}");
        }
    }

    /// One long word (a single pre-token) of a megabyte fits fast: one encoding, not a count per
    /// dropped token.
    #[test]
    fn fit_is_fast_on_huge_text() {
        let huge = "a".repeat(1 << 20) + &" lorem ipsum".repeat(50_000);
        for t in ALL {
            let started = std::time::Instant::now();
            let cut = t.fit(&huge, 500);
            assert!(t.count(&huge[..cut]) <= 500);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{t}: {:?}",
                started.elapsed()
            );
        }
    }
}
