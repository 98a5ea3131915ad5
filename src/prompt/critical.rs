//! The CRITICAL block: the three non-negotiable rules that lead every prompt phase and that no
//! budget ever cuts. The seed's block is a constant, the default of every pack; a pack may give
//! the block's text in its own words (`critical:`, say in another language) but never drop it:
//! an empty one is an error, and the block always opens with [`CRITICAL_HEADER`].

/// The first line of every CRITICAL block, the seed's or a pack's: how a reader (or a test)
/// finds the block whatever language it is written in.
pub const CRITICAL_HEADER: &str = "[CRITICAL]";

/// The most bytes a pack's CRITICAL block may take, header included. A token is at least one
/// byte under every tokenizer (BPE tokens are byte sequences; `estimate` counts 1.3 per word of
/// at least one byte and a space), so the block, never cut, can take at most this many of the
/// `summary` phase's 600 tokens and never crowds it out.
pub const CRITICAL_MAX_BYTES: usize = 480;

/// The seed's block: leads every `buildPrompt` phase, byte for byte, unless the pack gives its
/// own. At most 80 tokens with every tokenizer (a unit test holds it to that), so it never
/// crowds out the phase it leads.
pub const CRITICAL_BLOCK: &str = "\
[CRITICAL]
- 금지행위: no unauthorised external API calls, no arbitrary file-system deletion, no logging of personal data.
- QC 의무: no completion report before pyright and ruff pass.
- 보고 형식: a `.done` file, JSON, with a timestamp.";

/// The labels the CRITICAL block must carry, in order.
pub const CRITICAL_LABELS: [&str; 3] = ["금지행위", "QC 의무", "보고 형식"];

/// The most tokens the block may take, under any tokenizer.
pub const CRITICAL_MAX_TOKENS: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Tokenizer;

    #[test]
    fn carries_its_labels_within_80_tokens() {
        assert!(CRITICAL_BLOCK.starts_with(&format!("{CRITICAL_HEADER}\n")));
        assert!(CRITICAL_BLOCK.len() <= CRITICAL_MAX_BYTES);
        for label in CRITICAL_LABELS {
            assert!(CRITICAL_BLOCK.contains(label), "{label}");
        }
        for t in [Tokenizer::Cl100k, Tokenizer::O200k, Tokenizer::Estimate] {
            let n = t.count(CRITICAL_BLOCK);
            assert!(n <= CRITICAL_MAX_TOKENS, "{t}: {n} tokens");
        }
        for item in [
            "external API",
            "deletion",
            "personal data",
            "pyright",
            "ruff",
            ".done",
            "JSON",
            "timestamp",
        ] {
            assert!(CRITICAL_BLOCK.contains(item), "{item}");
        }
    }
}
