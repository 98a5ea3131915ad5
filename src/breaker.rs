//! The circuit breaker that stops an agent stuck on the same errors: a pure state machine over
//! check runs ([`SessionBreaker`]), and [`Breaker`], which runs it against the state persisted by
//! `store::BreakerStore`. Reads and writes: the breaker tables, through the store.
//!
//! One check run (one `recordError` call) is a set of `(tool, code, file)` keys; a key given twice
//! in a run counts once. A key held by `sameErrorLimit` consecutive runs halts the session, and so
//! does a session total of `criticalLimit` errors; from `warningLimit` on it warns. A halt sticks
//! until [`Breaker::reset`].

use std::collections::{BTreeMap, HashSet};

use crate::config::BreakerLimits;
use crate::store::{BreakerRow, BreakerStore, StoreError, StreakRow};

/// What one error is, for the breaker: which checker said it, its rule, and the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorKey {
    pub tool: String,
    pub code: String,
    pub file: String,
}

/// The breaker's answer for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Continue,
    Warning,
    Halt,
}

impl BreakerState {
    /// The state as the wire and the metrics name it: `continue`, `warning` or `halt`.
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Continue => "continue",
            BreakerState::Warning => "warning",
            BreakerState::Halt => "halt",
        }
    }
}

/// The key that halted a session, with its streak at that moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trip {
    pub key: ErrorKey,
    pub streak: u32,
}

/// A sticky halt: why, and which key did it (none when the session total did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halt {
    pub reason: String,
    pub tripped_by: Option<Trip>,
}

/// Everything the breaker knows about one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionBreaker {
    pub total_errors: u64,
    pub runs: u64,
    pub halt: Option<Halt>,
    /// The keys of the latest run and how many consecutive runs (ending with it) held each.
    pub streaks: BTreeMap<ErrorKey, u32>,
}

/// The state of a session as callers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub state: BreakerState,
    pub total_errors: u64,
    pub reason: Option<String>,
    pub tripped_by: Option<Trip>,
}

impl SessionBreaker {
    /// Records one check run holding `errors` (duplicates count once). A run without a key
    /// ends that key's streak; an empty run (a clean check) ends them all.
    ///
    /// A halted session still counts its runs and errors, but its halt, reason and `trippedBy`
    /// stay those of the moment it tripped.
    pub fn record(
        &mut self,
        session_id: &str,
        errors: impl IntoIterator<Item = ErrorKey>,
        limits: &BreakerLimits,
    ) {
        let mut seen = HashSet::new();
        let run: Vec<ErrorKey> = errors
            .into_iter()
            .filter(|key| seen.insert(key.clone()))
            .collect();
        let previous = std::mem::take(&mut self.streaks);
        // Keys are kept in run order here, so that among equal streaks the one the checker
        // reported first is named.
        let mut ranked = Vec::with_capacity(run.len());
        for key in run {
            let streak = previous.get(&key).copied().unwrap_or(0).saturating_add(1);
            ranked.push((key.clone(), streak));
            self.streaks.insert(key, streak);
        }
        self.runs = self.runs.saturating_add(1);
        self.total_errors = self.total_errors.saturating_add(ranked.len() as u64);
        if self.halt.is_some() {
            return;
        }
        // The longest streak at or over the limit trips the breaker; the first one reported
        // wins a tie (`max_by_key` keeps the last maximum, hence the reversed iteration).
        let tripped = ranked
            .into_iter()
            .rev()
            .filter(|(_, streak)| *streak >= limits.same_error_limit)
            .max_by_key(|(_, streak)| *streak);
        if let Some((key, streak)) = tripped {
            self.halt = Some(Halt {
                reason: streak_reason(session_id, &key, streak),
                tripped_by: Some(Trip { key, streak }),
            });
        } else if self.total_errors >= limits.critical_limit {
            self.halt = Some(Halt {
                reason: total_reason(session_id, self.total_errors, limits.critical_limit),
                tripped_by: None,
            });
        }
    }

    /// The session's state under `limits`.
    pub fn verdict(&self, limits: &BreakerLimits) -> Verdict {
        if let Some(halt) = &self.halt {
            return Verdict {
                state: BreakerState::Halt,
                total_errors: self.total_errors,
                reason: Some(halt.reason.clone()),
                tripped_by: halt.tripped_by.clone(),
            };
        }
        let warning = self.total_errors >= limits.warning_limit;
        Verdict {
            state: if warning {
                BreakerState::Warning
            } else {
                BreakerState::Continue
            },
            total_errors: self.total_errors,
            reason: warning.then(|| warning_reason(self.total_errors, limits)),
            tripped_by: None,
        }
    }
}

const STOP_ADVICE: &str = "Stop and rethink the approach, or ask the user.";

fn reset_hint(session_id: &str) -> String {
    format!(
        "Only the user can reset it: guidebook breaker reset --session {}",
        shell_word(session_id)
    )
}

fn streak_reason(session_id: &str, key: &ErrorKey, streak: u32) -> String {
    format!(
        "Circuit breaker: {} {} in {} failed {streak} check runs in a row. {STOP_ADVICE} {}",
        key.tool,
        key.code,
        key.file,
        reset_hint(session_id)
    )
}

fn total_reason(session_id: &str, total: u64, limit: u64) -> String {
    format!(
        "Circuit breaker: {total} errors in this session (limit {limit}). {STOP_ADVICE} {}",
        reset_hint(session_id)
    )
}

fn warning_reason(total: u64, limits: &BreakerLimits) -> String {
    format!(
        "Circuit breaker warning: {total} errors in this session (warning at {}, halt at {}). \
         Fix the causes before changing more code.",
        limits.warning_limit, limits.critical_limit
    )
}

/// `word` as the shell would read it back: as is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The breaker over the persisted state, with the configured limits.
#[derive(Debug, Clone)]
pub struct Breaker {
    store: BreakerStore,
    limits: BreakerLimits,
}

impl Breaker {
    pub fn new(store: BreakerStore, limits: BreakerLimits) -> Self {
        Breaker { store, limits }
    }

    pub fn limits(&self) -> &BreakerLimits {
        &self.limits
    }

    /// Records one check run for the session, atomically, and returns the new state.
    pub fn record(&self, session_id: &str, errors: Vec<ErrorKey>) -> Result<Verdict, StoreError> {
        self.store.update(session_id, |row| {
            let mut session = from_row(row);
            session.record(session_id, errors, &self.limits);
            let verdict = session.verdict(&self.limits);
            (to_row(session), verdict)
        })
    }

    /// The session's state, changing nothing. A session that never recorded a run continues.
    pub fn status(&self, session_id: &str) -> Result<Verdict, StoreError> {
        let row = self.store.load(session_id)?.unwrap_or_default();
        Ok(from_row(row).verdict(&self.limits))
    }

    /// Forgets everything about the session (halt, streaks, totals); returns whether it had any
    /// recorded run.
    pub fn reset(&self, session_id: &str) -> Result<bool, StoreError> {
        self.store.reset(session_id)
    }
}

fn key_of(row: StreakRow) -> (ErrorKey, u32) {
    (
        ErrorKey {
            tool: row.tool,
            code: row.code,
            file: row.file,
        },
        row.streak,
    )
}

fn row_of(key: ErrorKey, streak: u32) -> StreakRow {
    StreakRow {
        tool: key.tool,
        code: key.code,
        file: key.file,
        streak,
    }
}

fn from_row(row: BreakerRow) -> SessionBreaker {
    SessionBreaker {
        total_errors: row.total_errors,
        runs: row.runs,
        halt: row.halt_reason.map(|reason| Halt {
            reason,
            tripped_by: row.tripped.map(|t| {
                let (key, streak) = key_of(t);
                Trip { key, streak }
            }),
        }),
        streaks: row.streaks.into_iter().map(key_of).collect(),
    }
}

fn to_row(session: SessionBreaker) -> BreakerRow {
    let (halt_reason, tripped) = match session.halt {
        Some(halt) => (
            Some(halt.reason),
            halt.tripped_by.map(|t| row_of(t.key, t.streak)),
        ),
        None => (None, None),
    };
    BreakerRow {
        total_errors: session.total_errors,
        runs: session.runs,
        halt_reason,
        tripped,
        streaks: session
            .streaks
            .into_iter()
            .map(|(key, streak)| row_of(key, streak))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: BreakerLimits = BreakerLimits {
        same_error_limit: 3,
        warning_limit: 15,
        critical_limit: 30,
    };

    fn key(tool: &str, code: &str, file: &str) -> ErrorKey {
        ErrorKey {
            tool: tool.into(),
            code: code.into(),
            file: file.into(),
        }
    }

    fn attr() -> ErrorKey {
        key("pyright", "reportAttributeAccessIssue", "/src/dispatch.py")
    }

    /// Records each run in order and returns the verdict after each.
    fn runs(session: &mut SessionBreaker, runs: &[Vec<ErrorKey>]) -> Vec<Verdict> {
        runs.iter()
            .map(|run| {
                session.record("sess-1", run.clone(), &LIMITS);
                session.verdict(&LIMITS)
            })
            .collect()
    }

    fn states(verdicts: &[Verdict]) -> Vec<BreakerState> {
        verdicts.iter().map(|v| v.state).collect()
    }

    use BreakerState::{Continue, Halt as Halted, Warning};

    #[test]
    fn the_same_key_in_three_consecutive_runs_halts() {
        let mut s = SessionBreaker::default();
        let v = runs(&mut s, &[vec![attr()], vec![attr()], vec![attr()]]);
        assert_eq!(states(&v), [Continue, Continue, Halted]);
        let last = &v[2];
        assert_eq!(last.total_errors, 3);
        assert_eq!(
            last.tripped_by,
            Some(Trip {
                key: attr(),
                streak: 3
            })
        );
        assert_eq!(
            last.reason.as_deref(),
            Some(
                "Circuit breaker: pyright reportAttributeAccessIssue in /src/dispatch.py failed \
                 3 check runs in a row. Stop and rethink the approach, or ask the user. \
                 Only the user can reset it: guidebook breaker reset --session sess-1"
            )
        );
    }

    #[test]
    fn another_key_in_between_resets_the_streak() {
        let mut s = SessionBreaker::default();
        let e501 = key("ruff", "E501", "/src/dispatch.py");
        let v = runs(
            &mut s,
            &[vec![attr()], vec![e501], vec![attr()], vec![attr()]],
        );
        assert_eq!(states(&v), [Continue; 4]);
        assert_eq!(s.streaks.get(&attr()), Some(&2));
    }

    #[test]
    fn the_same_code_in_different_files_is_not_the_same_key() {
        let mut s = SessionBreaker::default();
        let in_file = |f: &str| vec![key("pyright", "reportAttributeAccessIssue", f)];
        let v = runs(
            &mut s,
            &[in_file("/a.py"), in_file("/b.py"), in_file("/c.py")],
        );
        assert_eq!(states(&v), [Continue; 3]);
        // ...and the tool is part of the key too.
        let mut s = SessionBreaker::default();
        let v = runs(
            &mut s,
            &[
                vec![key("ruff", "X1", "/a.py")],
                vec![key("pyright", "X1", "/a.py")],
                vec![key("ruff", "X1", "/a.py")],
            ],
        );
        assert_eq!(states(&v), [Continue; 3]);
    }

    #[test]
    fn a_clean_run_resets_every_streak() {
        let mut s = SessionBreaker::default();
        let v = runs(&mut s, &[vec![attr()], vec![attr()], vec![], vec![attr()]]);
        assert_eq!(states(&v), [Continue; 4]);
        assert_eq!(s.runs, 4);
        assert_eq!(s.total_errors, 3);
    }

    #[test]
    fn batch_runs_keep_a_streak_per_key_and_duplicates_count_once() {
        let mut s = SessionBreaker::default();
        let a = key("ruff", "F401", "/p/a.py");
        let b = key("ruff", "E501", "/p/a.py");
        let c = key("ruff", "F401", "/p/b.py");
        let v = runs(
            &mut s,
            &[
                vec![a.clone(), b.clone(), a.clone(), a.clone()],
                vec![b.clone(), c.clone(), a.clone()],
                vec![c.clone(), b.clone(), b.clone()],
            ],
        );
        assert_eq!(
            v.iter().map(|v| v.total_errors).collect::<Vec<_>>(),
            [2, 5, 7]
        );
        assert_eq!(states(&v), [Continue, Continue, Halted]);
        assert_eq!(
            v[2].tripped_by,
            Some(Trip {
                key: b.clone(),
                streak: 3
            })
        );
        assert_eq!(s.streaks.get(&c), Some(&2));
        assert_eq!(s.streaks.get(&a), None, "a left the latest run");
    }

    #[test]
    fn the_longest_streak_is_named_and_ties_go_to_the_first_reported() {
        let limits = BreakerLimits {
            same_error_limit: 2,
            ..LIMITS
        };
        let (a, b, c) = (
            key("t", "A", "/f"),
            key("t", "B", "/f"),
            key("t", "C", "/f"),
        );
        let mut s = SessionBreaker::default();
        s.record("s", [a.clone()], &limits);
        s.record("s", [c.clone(), b.clone(), a.clone()], &limits);
        assert_eq!(s.verdict(&limits).tripped_by.unwrap().key, a, "longest");
        let mut s = SessionBreaker::default();
        s.record("s", [b.clone(), c.clone()], &limits);
        s.record("s", [c.clone(), b.clone()], &limits);
        assert_eq!(s.verdict(&limits).tripped_by.unwrap().key, c, "first");
    }

    #[test]
    fn totals_warn_at_15_and_halt_at_30() {
        let mut s = SessionBreaker::default();
        // Seven errors per run, every run in new files: no streak ever forms.
        let run = |n: usize| -> Vec<ErrorKey> {
            (0..7)
                .map(|i| key("ruff", "F401", &format!("/r{n}/f{i}.py")))
                .collect()
        };
        let v = runs(&mut s, &[run(0), run(1), run(2), run(3), run(4)]);
        assert_eq!(
            v.iter().map(|v| v.total_errors).collect::<Vec<_>>(),
            [7, 14, 21, 28, 35]
        );
        assert_eq!(states(&v), [Continue, Continue, Warning, Warning, Halted]);
        assert_eq!(
            v[2].reason.as_deref(),
            Some(
                "Circuit breaker warning: 21 errors in this session (warning at 15, halt at \
                 30). Fix the causes before changing more code."
            )
        );
        assert_eq!(v[2].tripped_by, None);
        assert_eq!(v[4].tripped_by, None);
        assert!(v[4]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("Circuit breaker: 35 errors in this session (limit 30). Stop"));
        // Exactly at the limits counts.
        let mut s = SessionBreaker::default();
        let fifteen: Vec<ErrorKey> = (0..15).map(|i| key("t", "C", &format!("/{i}"))).collect();
        s.record("s", fifteen.clone(), &LIMITS);
        assert_eq!(s.verdict(&LIMITS).state, Warning);
        let other: Vec<ErrorKey> = (0..15).map(|i| key("t", "D", &format!("/{i}"))).collect();
        s.record("s", other, &LIMITS);
        assert_eq!(s.verdict(&LIMITS).state, Halted);
    }

    #[test]
    fn a_halt_sticks_and_keeps_its_reason_and_trip() {
        let mut s = SessionBreaker::default();
        runs(&mut s, &[vec![attr()], vec![attr()], vec![attr()]]);
        let halted = s.verdict(&LIMITS);
        let v = runs(&mut s, &[vec![], vec![key("ruff", "E1", "/x")], vec![]]);
        assert_eq!(states(&v), [Halted; 3]);
        assert_eq!(v[2].reason, halted.reason);
        assert_eq!(v[2].tripped_by, halted.tripped_by);
        assert_eq!(v[2].total_errors, 4, "runs still count while halted");
    }

    #[test]
    fn with_one_error_per_run_it_halts_exactly_when_the_last_three_keys_are_equal() {
        // Every sequence of length 6 over three keys, checked against the contract's wording.
        let keys = [
            attr(),
            key("ruff", "E501", "/src/dispatch.py"),
            key("ruff", "F401", "/b"),
        ];
        for n in 0..3usize.pow(6) {
            let seq: Vec<usize> = (0..6).map(|i| n / 3usize.pow(i) % 3).collect();
            let mut s = SessionBreaker::default();
            let mut expect_halt = false;
            for (i, &k) in seq.iter().enumerate() {
                s.record("s", [keys[k].clone()], &LIMITS);
                expect_halt |= i >= 2 && seq[i - 2] == k && seq[i - 1] == k;
                assert_eq!(
                    s.verdict(&LIMITS).state == Halted,
                    expect_halt,
                    "{seq:?} at {i}"
                );
            }
        }
    }

    #[test]
    fn odd_session_ids_are_quoted_in_the_reset_hint() {
        assert_eq!(shell_word("019a3c2e-5b7d"), "019a3c2e-5b7d");
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn rows_round_trip() {
        let mut s = SessionBreaker::default();
        runs(
            &mut s,
            &[
                vec![attr(), key("ruff", "E501", "/x")],
                vec![attr()],
                vec![attr()],
            ],
        );
        assert_eq!(from_row(to_row(s.clone())), s);
    }
}
