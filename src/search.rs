//! A search: the guidelines that apply to and match changed files and that the session has not
//! been shown, within a token budget, recorded as shown. Reads: the snapshot, the files.
//! Writes: presentation (through the store).
//!
//! `rpc/search.rs` validates the params and calls [`search`]; `guidebook search` calls it
//! in-process. The budget is counted on the very text the hook prints
//! (`guidebook_hook::context_text`), so what is recorded is what the agent is shown.

use std::collections::HashMap;
use std::time::Instant;

use crate::engine::{Edits, Engine};
use crate::guidebook::GuidelineSnapshot;
use crate::store::StoreError;

/// One search, its params already validated (absolute paths, a session id).
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    pub session_id: &'a str,
    pub filepaths: &'a [String],
    /// What the caller said of each file's edit (written lines, content).
    pub edits: &'a Edits,
    /// Past it, nothing is recorded and the search fails.
    pub deadline: Option<Instant>,
    /// A token budget for the hook text the result forms (header and blocks).
    pub max_tokens: Option<u64>,
}

/// One guideline to show, `content` exactly as in its YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownGuideline {
    pub id: String,
    pub content: String,
}

/// What a search can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("deadline exceeded")]
    DeadlineExceeded,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs one search: evaluates the files, then decides inside one transaction which matching
/// guidelines are new for the session (and, with a budget, how many of them fit), records them
/// and returns them in id order.
pub fn search(
    engine: &Engine,
    request: SearchRequest<'_>,
) -> Result<Vec<ShownGuideline>, SearchError> {
    if request.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(SearchError::DeadlineExceeded);
    }
    if request.filepaths.is_empty() {
        return Ok(Vec::new());
    }
    // A daemon that has just started may still be compiling its guidebook.
    let snapshot = engine
        .guidebook
        .loaded_snapshot(request.deadline)
        .ok_or(SearchError::DeadlineExceeded)?;
    let paths: Vec<&str> = request.filepaths.iter().map(String::as_str).collect();
    let mut matched = vec![false; snapshot.guidelines.len()];
    let evaluated = engine
        .evaluate_until(&snapshot, &paths, request.edits, false, request.deadline)
        .ok_or(SearchError::DeadlineExceeded)?;
    for file in evaluated {
        for m in file.matches {
            matched[m.guideline] = true;
        }
        for g in file.allowed {
            engine.telemetry.allowed(snapshot.guidelines[g].id());
        }
    }
    // Snapshot order is id order, so the candidates (and so the result) are sorted by id.
    let candidates: Vec<&str> = crate::guidebook::marked(&matched)
        .into_iter()
        .map(|i| snapshot.guidelines[i].id())
        .collect();
    let (session, deadline) = (request.session_id, request.deadline);
    let shown = match request.max_tokens {
        None => engine
            .presentations
            .present_new(session, &candidates, deadline, |unseen| unseen)?,
        Some(budget)
            if engine
                .tokenizer
                .surely_within(hook_text_bytes(&snapshot, &candidates), budget as usize) =>
        {
            // Every candidate fits even at one token per byte: nothing to count.
            engine
                .presentations
                .present_new(session, &candidates, deadline, |unseen| unseen)?
        }
        Some(budget) => {
            let tokenizer = engine.tokenizer;
            let count = |text: &str| tokenizer.count(text);
            // Each candidate's block is counted before the write lock is taken (once per
            // snapshot: the count is kept with the guideline); inside it only the chosen prefix
            // is counted, once or twice.
            let blocks: HashMap<&str, usize> = candidates
                .iter()
                .filter_map(|id| {
                    let g = &snapshot.guidelines[snapshot.index_of(id)?];
                    Some((*id, g.block_tokens(|| count(&block_of(&snapshot, id)))))
                })
                .collect();
            let header = count(guidebook_hook::CONTEXT_HEADER);
            engine
                .presentations
                .present_new(session, &candidates, deadline, |unseen| {
                    within_budget(unseen, budget as usize, header, &blocks, |ids| {
                        count(&guidebook_hook::context_text(
                            ids.iter().map(|id| (*id, content_of(&snapshot, id))),
                        ))
                    })
                })?
        }
    };
    Ok(shown
        .into_iter()
        .filter_map(|id| snapshot.index_of(id))
        .map(|i| {
            let g = &snapshot.guidelines[i].guideline;
            ShownGuideline {
                id: g.id.clone(),
                content: g.content.clone(),
            }
        })
        .collect())
}

/// The length in bytes of the hook text that all of `ids` would make.
fn hook_text_bytes(snapshot: &GuidelineSnapshot, ids: &[&str]) -> usize {
    guidebook_hook::CONTEXT_HEADER.len()
        + ids
            .iter()
            .map(|id| guidebook_hook::guideline_block(id, content_of(snapshot, id)).len())
            .sum::<usize>()
}

fn content_of<'a>(snapshot: &'a GuidelineSnapshot, id: &str) -> &'a str {
    snapshot
        .index_of(id)
        .map(|i| snapshot.guidelines[i].guideline.content.as_str())
        .unwrap_or_default()
}

fn block_of(snapshot: &GuidelineSnapshot, id: &str) -> String {
    guidebook_hook::guideline_block(id, content_of(snapshot, id))
}

/// The longest prefix of `unseen` (in id order) whose hook text stays within `budget` tokens,
/// and never less than the first one. Blocks are first added up from their separate counts
/// (`header` + `blocks[id]`); the chosen text is then counted exactly, as BPE may merge across
/// a block boundary, and shortened from the tail while it is over.
pub fn within_budget<'a>(
    unseen: Vec<&'a str>,
    budget: usize,
    header: usize,
    blocks: &HashMap<&str, usize>,
    exact: impl Fn(&[&'a str]) -> usize,
) -> Vec<&'a str> {
    let mut total = header;
    let mut take = 0;
    for id in &unseen {
        let next = total + blocks.get(id).copied().unwrap_or(0);
        if take > 0 && next > budget {
            break;
        }
        total = next;
        take += 1;
    }
    let mut chosen: Vec<&'a str> = unseen.into_iter().take(take).collect();
    while chosen.len() > 1 && exact(&chosen) > budget {
        chosen.pop();
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_takes_a_prefix_and_always_the_first() {
        let blocks: HashMap<&str, usize> = [("a", 400), ("b", 400), ("c", 900), ("d", 10)]
            .into_iter()
            .collect();
        let sum = |ids: &[&str]| 10 + ids.iter().map(|i| blocks[i]).sum::<usize>();
        let unseen = || vec!["a", "b", "c", "d"];
        assert_eq!(
            within_budget(unseen(), 1715, 10, &blocks, sum),
            ["a", "b", "c"]
        );
        assert_eq!(
            within_budget(unseen(), 1720, 10, &blocks, sum),
            ["a", "b", "c", "d"]
        );
        // A prefix, not a knapsack: `d` would fit if `c` were skipped, but ids stay in order so
        // that what is left comes, in order, with the next change.
        assert_eq!(within_budget(unseen(), 1000, 10, &blocks, sum), ["a", "b"]);
        assert_eq!(within_budget(unseen(), 5, 10, &blocks, sum), ["a"]);
        assert_eq!(
            within_budget(vec![], 5, 10, &blocks, sum),
            Vec::<&str>::new()
        );
        // The exact count can exceed the sum of the parts: the tail is dropped until it fits.
        let merged_worse = |ids: &[&str]| sum(ids) + 5 * ids.len();
        assert_eq!(
            within_budget(unseen(), 812, 10, &blocks, merged_worse),
            ["a"]
        );
    }
}
