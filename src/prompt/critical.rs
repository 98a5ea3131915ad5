//! The CRITICAL block: the three non-negotiable rules that lead every prompt phase and that no
//! budget ever cuts. A constant, not pack content, so that no prompt pack can drop or weaken it.

/// Leads every `buildPrompt` phase, byte for byte. At most 80 tokens with every tokenizer
/// (a unit test holds it to that), so it never crowds out the phase it leads.
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
