//! Settling: a session with no event for `settleSeconds` is read whole, its counts (from the
//! events since it last settled) computed by the report's own aggregate, and added to the
//! cumulative counters in the transaction that marks it settled.

use crate::metrics::adherence::Aggregate;
use crate::store::{StoreError, TeamStore};

use super::series::{increments, RESERVED_SERIES};

/// Sessions settled per transaction: a backlog (the push turned on over a long history) is
/// worked off in short write turns, never one long one that hooks would queue behind.
const BATCH: usize = 200;

/// Settles every session whose last event is older than `settle_seconds` before `now`;
/// returns how many settled.
pub fn settle(
    store: &TeamStore,
    now: i64,
    settle_seconds: u64,
    max_series: usize,
) -> Result<usize, StoreError> {
    store.scan()?;
    let before = now.saturating_sub(settle_seconds as i64);
    let mut settled = 0;
    loop {
        let due = store.due(before, BATCH)?;
        if due.is_empty() {
            return Ok(settled);
        }
        let mut progressed = 0;
        for session in &due {
            let events = store.session_events(&session.session_id, session.last_id)?;
            let first_new = events
                .iter()
                .position(|(id, _)| *id > session.settled_id)
                .unwrap_or(events.len());
            let mut agg = Aggregate::default();
            agg.session_from(events.iter().map(|(_, e)| e), first_new);
            let incs = increments(&agg);
            progressed +=
                usize::from(store.settle(session, now, &incs, max_series, RESERVED_SERIES)?);
        }
        settled += progressed;
        // Sessions another process settled meanwhile are read afresh at the next round.
        if progressed == 0 || due.len() < BATCH {
            return Ok(settled);
        }
    }
}
