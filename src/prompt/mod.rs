//! Prompt packs and `buildPrompt`'s progressive disclosure: the pack format and its validation
//! ([`pack`]), the live last-good store of a root's packs ([`store`]), the CRITICAL block
//! ([`critical`]) and the assembly of each phase fitted to its token budget ([`build`]).

mod build;
mod critical;
mod pack;
mod store;

pub use build::{build, summarize_task, BuiltPrompt, Phase, PromptRequest, Section};
pub use critical::{
    CRITICAL_BLOCK, CRITICAL_HEADER, CRITICAL_LABELS, CRITICAL_MAX_BYTES, CRITICAL_MAX_TOKENS,
};
pub use pack::{find_pack_files, parse_pack, valid_role, PROMPTS_DIR};
pub use store::{embedded_default, PackSet, PromptPacks, DEFAULT_ROLE};

use std::path::PathBuf;

/// One validated prompt pack: what a role's agent is told, in sections the phases pick from.
#[derive(Debug, Clone)]
pub struct PromptPack {
    /// The role, from the file name (`prompts/<role>.yaml`).
    pub role: String,
    pub description: Option<String>,
    /// The pack's own CRITICAL block (`critical:`), header included; `None`: the seed's
    /// [`CRITICAL_BLOCK`]. Either way every phase opens with it and no budget cuts it.
    pub critical: Option<String>,
    pub role_definition: String,
    /// Exactly three: the `summary` phase shows these and nothing else of the pack.
    pub core_constraints: Vec<String>,
    pub rules: Vec<String>,
    pub workflow: Vec<String>,
    pub report_rules: Vec<String>,
    /// At least one; `standard` shows the first, `full` all.
    pub examples: Vec<Example>,
    /// The file the pack came from (`<embedded>` for the built-in default).
    pub source: PathBuf,
}

#[derive(Debug, Clone)]
pub struct Example {
    pub title: String,
    pub body: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Tokenizer;

    /// The shipped pack, for a typical task (two sentences, a small context), meets every
    /// budget and ratio of the issue: summary ≤ 600 and 15–25 % of full, standard ≤ 1,800 and
    /// 40–60 % of full, full about 3,000 tokens; CRITICAL leads every phase.
    #[test]
    fn the_shipped_pack_meets_its_budgets_and_ratios() {
        let pack = embedded_default().expect("the embedded default pack is valid");
        let context = serde_json::json!({"ticket": "ORD-1287", "repository": "acme/backend-order"});
        for tokenizer in [Tokenizer::Cl100k, Tokenizer::O200k] {
            let tokens = |phase| {
                let b = build(
                    &pack,
                    PromptRequest {
                        task: "Fix the N+1 query in OrderRepository.findAllWithItems(). Keep the response shape unchanged.",
                        context: context.as_object(),
                        phase,
                    },
                    tokenizer,
                    true,
                );
                assert!(!b.truncated, "{tokenizer} {phase:?}");
                assert!(b.text.starts_with(CRITICAL_BLOCK));
                b.tokens
            };
            let (summary, standard, full) = (
                tokens(Phase::Summary),
                tokens(Phase::Standard),
                tokens(Phase::Full),
            );
            let ratio = |n: usize| n as f64 / full as f64;
            eprintln!("{tokenizer}: summary {summary}, standard {standard}, full {full}");
            assert!(
                summary <= 600 && standard <= 1_800,
                "{tokenizer}: {summary} {standard}"
            );
            assert!((2_600..=3_400).contains(&full), "{tokenizer}: full {full}");
            assert!(
                (0.15..=0.25).contains(&ratio(summary)),
                "{tokenizer}: summary/full {}",
                ratio(summary)
            );
            assert!(
                (0.40..=0.60).contains(&ratio(standard)),
                "{tokenizer}: standard/full {}",
                ratio(standard)
            );
        }
    }
}
