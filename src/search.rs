//! A search: the guidelines that apply to and match changed files and that the session has not
//! been shown, within a token budget, recorded as shown. Reads: the snapshot, the files.
//! Writes: presentation (through the store); each file's matches for adherence (the recorder).
//!
//! `rpc/search.rs` validates the params and calls [`search`]; `guidebook search` calls it
//! in-process. The budget is counted on the very text the hook prints
//! (`guidebook_hook::context_text`), so what is recorded is what the agent is shown.

use std::collections::HashMap;
use std::time::Instant;

use crate::engine::{Edits, Engine};
use crate::metrics::adherence::HOLDOUT_FLAG;
use crate::store::{IndexedFile, IndexedSearch, Observed, StoreError};
use guidebook_hook::Shown;

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
    /// Where a guideline from outside the guidebook root came from (file and line).
    pub source: Option<String>,
    /// A repository's own rule, shown in the repository's block.
    pub repository: bool,
}

/// What a search can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("deadline exceeded")]
    DeadlineExceeded,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A candidate as the hook text shows it, worked out once per search.
struct Candidate<'s> {
    content: &'s str,
    source: Option<String>,
    repository: bool,
    index: usize,
}

impl<'s> Candidate<'s> {
    fn shown(&self, id: &'s str) -> Shown<'_> {
        Shown {
            id,
            content: self.content,
            source: self.source.as_deref(),
            repository: self.repository,
        }
    }
}

/// Runs one search: evaluates the files, then decides inside one transaction which matching
/// guidelines are new for the session (and, with a budget, how many of them fit), records them
/// and returns them in id order. A repository's own rules take at most
/// `repositoryRules.maxTokens` of the text (and a third of a `maxTokens` budget).
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
    engine.note_searched(request.filepaths);
    let paths: Vec<&str> = request.filepaths.iter().map(String::as_str).collect();
    let mut matched = vec![false; snapshot.guidelines.len()];
    let evaluated = engine
        .evaluate_until(&snapshot, &paths, request.edits, false, request.deadline)
        .ok_or(SearchError::DeadlineExceeded)?;
    // Adherence: each file's matches, kept for the recorder (docs/guide/adherence.md).
    let adherence = engine.keeps_adherence();
    let holdout = engine
        .flags
        .is_enabled(HOLDOUT_FLAG, Some(request.session_id));
    let mut records = Vec::new();
    for (path, file) in request.filepaths.iter().zip(evaluated) {
        if adherence {
            // Snapshot indices only: the ids are looked up off the hook's path.
            let written = request.edits.get(path).and_then(|e| e.written.as_ref());
            records.push(IndexedFile {
                path: path.clone(),
                matched: file.matches.iter().map(|m| m.guideline as u32).collect(),
                presented: Vec::new(),
                allowed: file.allowed.iter().map(|&g| g as u32).collect(),
                whole: matches!(written, Some(crate::guidebook::Written::All)),
            });
        }
        for m in file.matches {
            matched[m.guideline] = true;
        }
        for g in file.allowed {
            engine.telemetry.allowed(snapshot.guidelines[g].id());
        }
    }
    // Snapshot order is id order, so the candidates (and so the result) are sorted by id.
    let found = crate::guidebook::marked(&matched);
    let candidates: Vec<&str> = found.iter().map(|&i| snapshot.guidelines[i].id()).collect();
    let known: HashMap<&str, Candidate<'_>> = found
        .iter()
        .map(|&i| {
            let g = &snapshot.guidelines[i].guideline;
            let candidate = Candidate {
                content: &g.content,
                source: g.origin.label(&g.source, g.id_line),
                repository: g.origin.home().is_some(),
                index: i,
            };
            (g.id.as_str(), candidate)
        })
        .collect();
    let text_of = |ids: &[&str]| {
        guidebook_hook::context_text(ids.iter().filter_map(|id| Some(known.get(id)?.shown(id))))
    };
    let repository_cap = engine.settings.repository_rules.max_tokens as usize;
    let tokenizer = engine.tokenizer;
    let count = |text: &str| tokenizer.count(text);
    let (session, deadline) = (request.session_id, request.deadline);
    // Whether everything fits even at one token per byte (a token is at least one byte): then
    // nothing is counted, and the exact vocabulary (tens of MiB) is never built.
    let repository_bytes: usize = known
        .iter()
        .filter(|(_, c)| c.repository)
        .map(|(id, c)| guidebook_hook::guideline_block(&c.shown(id)).len())
        .sum();
    let repository_within = |cap: usize| {
        repository_bytes == 0
            || tokenizer.surely_within(
                guidebook_hook::REPOSITORY_HEADER.len() + 2 + repository_bytes,
                cap,
            )
    };
    let all_fit = repository_within(repository_cap)
        && match request.max_tokens {
            None => true,
            Some(budget) => {
                let bytes = text_of(&candidates).len();
                tokenizer.surely_within(bytes, budget as usize)
                    && repository_within(budget as usize / 3)
            }
        };
    let shown = match request.max_tokens {
        _ if all_fit => {
            // Every candidate fits even at one token per byte: nothing to count.
            engine
                .presentations
                .present_new(session, &candidates, deadline, |unseen| unseen)?
        }
        budget => {
            // Each candidate's block is counted before the write lock is taken (once per
            // snapshot: the count is kept with the guideline); inside it only the chosen prefix
            // is counted, once or twice.
            let blocks: HashMap<&str, usize> = known
                .iter()
                .map(|(id, c)| {
                    let g = &snapshot.guidelines[c.index];
                    (
                        *id,
                        g.block_tokens(|| count(&guidebook_hook::guideline_block(&c.shown(id)))),
                    )
                })
                .collect();
            let header = count(guidebook_hook::CONTEXT_HEADER);
            let is_repository = |id: &&str| known.get(id).is_some_and(|c| c.repository);
            engine
                .presentations
                .present_new(session, &candidates, deadline, |unseen| {
                    let (repository, team): (Vec<&str>, Vec<&str>) =
                        unseen.into_iter().partition(is_repository);
                    let mut chosen = match budget {
                        Some(budget) => {
                            within_budget(team, budget as usize, header, &blocks, |ids| {
                                count(&text_of(ids))
                            })
                        }
                        None => team,
                    };
                    // The repository's share: its cap, a third of the budget, and what the
                    // team's guidelines left of it.
                    let mut cap = repository_cap;
                    if let Some(budget) = budget {
                        let used = if chosen.is_empty() {
                            header
                        } else {
                            count(&text_of(&chosen))
                        };
                        cap = cap
                            .min(budget as usize / 3)
                            .min((budget as usize).saturating_sub(used));
                    }
                    let heading = count(guidebook_hook::REPOSITORY_HEADER);
                    let mut total = heading;
                    for id in repository {
                        let next = total + blocks.get(id).copied().unwrap_or(0);
                        if next > cap {
                            break;
                        }
                        total = next;
                        chosen.push(id);
                    }
                    chosen.sort_unstable();
                    chosen
                })?
        }
    };
    if adherence {
        for f in &mut records {
            f.presented = f
                .matched
                .iter()
                .copied()
                .filter(|&g| shown.contains(&snapshot.guidelines[g as usize].id()))
                .collect();
        }
        let search = IndexedSearch {
            at: crate::time::now_epoch(),
            holdout,
            ids: snapshot.clone(),
            files: records,
        };
        engine.count_adherence(request.session_id, || search.resolve());
        engine.recorder.record(Observed::AdherenceSearch {
            session_id: request.session_id.to_owned(),
            search,
        });
    }
    // A hold-out session is evaluated and recorded as usual, and shown nothing.
    if holdout {
        return Ok(Vec::new());
    }
    Ok(shown
        .into_iter()
        .filter_map(|id| {
            let c = known.get(id)?;
            Some(ShownGuideline {
                id: id.to_string(),
                content: c.content.to_string(),
                source: c.source.clone(),
                repository: c.repository,
            })
        })
        .collect())
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
