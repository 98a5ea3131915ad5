//! The pushed series, named once: each metric, the labels that tell its series apart, and the
//! field of a guideline's [`Totals`] it counts, so that the push (totals → increments) and
//! `report --team` (query results → totals) read one table. Also what a guideline id becomes
//! as a label: never a repository's name or a file's.

use std::collections::BTreeMap;

use crate::metrics::adherence::{Aggregate, Outcome, Totals};
use crate::store::Increment;

/// The `group` label's values.
pub const SHOWN: &str = "shown";
pub const HOLDOUT: &str = "holdout";
/// The guideline label every repository's rule is counted under: a repository rule's id holds
/// the repository's directory name and the rule file's path, which never leave the machine.
pub const REPOSITORY_RULES: &str = "repository";

/// One per-guideline count: a metric and the fixed values of its other labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub metric: &'static str,
    pub group: &'static str,
    pub outcome: &'static str,
    field: Field,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Fires,
    Written,
    Presentations(bool, Outcome),
    Blocks,
    Corrected,
    Allowances,
    Triggered(bool),
    Rematched(bool),
}

const fn count(
    metric: &'static str,
    group: &'static str,
    outcome: &'static str,
    field: Field,
) -> Count {
    Count {
        metric,
        group,
        outcome,
        field,
    }
}

pub const FIRES: &str = "guidebook_team_fires_total";
pub const FIRES_WRITTEN: &str = "guidebook_team_fires_written_total";
pub const PRESENTATIONS: &str = "guidebook_team_presentations_total";
pub const BLOCKS: &str = "guidebook_team_blocks_total";
pub const CORRECTED: &str = "guidebook_team_corrected_total";
pub const ALLOWANCES: &str = "guidebook_team_allowances_total";
pub const TRIGGERED: &str = "guidebook_team_triggered_sessions_total";
pub const REMATCHED: &str = "guidebook_team_rematched_sessions_total";
/// Settled sessions per group (no guideline label).
pub const SESSIONS: &str = "guidebook_team_sessions_total";

/// Every per-guideline count, in the order they are pushed.
pub const COUNTS: [Count; 15] = [
    count(FIRES, "", "", Field::Fires),
    count(FIRES_WRITTEN, "", "", Field::Written),
    count(
        PRESENTATIONS,
        SHOWN,
        "followed",
        Field::Presentations(false, Outcome::Followed),
    ),
    count(
        PRESENTATIONS,
        SHOWN,
        "repeated",
        Field::Presentations(false, Outcome::Repeated),
    ),
    count(
        PRESENTATIONS,
        SHOWN,
        "no_evidence",
        Field::Presentations(false, Outcome::NoEvidence),
    ),
    count(
        PRESENTATIONS,
        HOLDOUT,
        "followed",
        Field::Presentations(true, Outcome::Followed),
    ),
    count(
        PRESENTATIONS,
        HOLDOUT,
        "repeated",
        Field::Presentations(true, Outcome::Repeated),
    ),
    count(
        PRESENTATIONS,
        HOLDOUT,
        "no_evidence",
        Field::Presentations(true, Outcome::NoEvidence),
    ),
    count(BLOCKS, "", "", Field::Blocks),
    count(CORRECTED, "", "", Field::Corrected),
    count(ALLOWANCES, "", "", Field::Allowances),
    count(TRIGGERED, SHOWN, "", Field::Triggered(false)),
    count(TRIGGERED, HOLDOUT, "", Field::Triggered(true)),
    count(REMATCHED, SHOWN, "", Field::Rematched(false)),
    count(REMATCHED, HOLDOUT, "", Field::Rematched(true)),
];

/// The series the budget keeps room for whatever comes: one `other` per count and the two
/// session series.
pub const RESERVED_SERIES: usize = COUNTS.len() + 2;

/// Every metric name, once.
pub fn metrics() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = COUNTS.iter().map(|c| c.metric).collect();
    names.push(SESSIONS);
    names.dedup();
    names
}

impl Count {
    fn slot(self, t: &mut Totals) -> &mut u64 {
        match self.field {
            Field::Fires => &mut t.fires,
            Field::Written => &mut t.written,
            Field::Presentations(false, o) => t.shown.of_mut(o),
            Field::Presentations(true, o) => t.held_out.of_mut(o),
            Field::Blocks => &mut t.blocks,
            Field::Corrected => &mut t.corrected,
            Field::Allowances => &mut t.allowances,
            Field::Triggered(false) => &mut t.shown_sessions.0,
            Field::Triggered(true) => &mut t.held_sessions.0,
            Field::Rematched(false) => &mut t.shown_sessions.1,
            Field::Rematched(true) => &mut t.held_sessions.1,
        }
    }

    /// The count in `t`.
    pub fn of(self, t: &Totals) -> u64 {
        *self.slot(&mut t.clone())
    }

    /// Adds `n` to the count in `t`.
    pub fn add(self, t: &mut Totals, n: u64) {
        *self.slot(t) += n;
    }

    /// The count of `metric` with these `group` and `outcome` labels.
    pub fn find(metric: &str, group: &str, outcome: &str) -> Option<Count> {
        COUNTS
            .iter()
            .copied()
            .find(|c| c.metric == metric && c.group == group && c.outcome == outcome)
    }
}

/// The label a guideline id is pushed under.
pub fn guideline_label(id: &str) -> &str {
    if id.starts_with(crate::sources::repository::ID_PREFIX) {
        REPOSITORY_RULES
    } else {
        id
    }
}

/// What one settled session (or its continuation), as added to `agg`, adds to the counters.
pub fn increments(agg: &Aggregate) -> Vec<Increment> {
    let (totals, sessions, holdout_sessions) = agg.totals();
    // Repository rules summed under one label before the counts are taken.
    let mut by_label: BTreeMap<&str, Totals> = BTreeMap::new();
    for (id, t) in totals {
        let sum = by_label.entry(guideline_label(id)).or_default();
        for c in COUNTS {
            c.add(sum, c.of(t));
        }
    }
    let mut out = Vec::new();
    for (label, t) in &by_label {
        for c in COUNTS {
            let n = c.of(t);
            if n > 0 {
                out.push(Increment {
                    metric: c.metric,
                    guideline: (*label).to_string(),
                    group: c.group,
                    outcome: c.outcome,
                    n,
                });
            }
        }
    }
    for (group, n) in [
        (SHOWN, sessions - holdout_sessions),
        (HOLDOUT, holdout_sessions),
    ] {
        if n > 0 {
            out.push(Increment {
                metric: SESSIONS,
                guideline: String::new(),
                group,
                outcome: "",
                n,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_count_has_a_field_of_its_own() {
        let mut t = Totals::default();
        for (i, c) in COUNTS.iter().enumerate() {
            c.add(&mut t, 1 << i);
        }
        for (i, c) in COUNTS.iter().enumerate() {
            assert_eq!(c.of(&t), 1 << i, "{c:?}");
            assert_eq!(Count::find(c.metric, c.group, c.outcome), Some(*c));
        }
        assert_eq!(metrics().len(), 9);
    }

    #[test]
    fn a_repository_rule_is_pushed_under_one_label() {
        assert_eq!(
            guideline_label("repo:acme-api/AGENTS.md#3"),
            REPOSITORY_RULES
        );
        assert_eq!(guideline_label("kotlin/no-println"), "kotlin/no-println");
    }
}
