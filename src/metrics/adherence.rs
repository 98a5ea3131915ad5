//! Per-guideline adherence: presentations followed, repeated or corrected, and the hold-out test.
//!
//! Every search records, per file it evaluated, the guidelines that matched it and those it
//! presented (or, in a hold-out session, would have presented); every `checkEdit` refusal is
//! recorded too (`store::adherence`). The outcome of each presentation is derived here from the
//! session's sequence of such records, off the hook's path, by one state machine
//! ([`SessionTracker`]) that the report (`guidebook report`) and the live Prometheus counters
//! share. The rules are in docs/guide/adherence.md; in short:
//!
//! - a presentation is (session, guideline, the files of its search that it matched);
//! - *followed*: a later evaluation of one of its files in the session no longer matches it;
//! - *repeated*: a later evaluation of one of its files matches it again (this wins);
//! - *no evidence*: none of its files is evaluated again in the session;
//! - *corrected*: a `block` refusal of a file, followed by a search of that file (an edit that
//!   was let through) that does not match the guideline.
//!
//! The hold-out test (flag [`HOLDOUT_FLAG`], keyed by session) compares, per guideline, the
//! share of sessions whose later searches matched the guideline again after its first trigger,
//! shown group against hold-out group, with Fisher's exact test ([`super::stats`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::ab::format_p;
use super::stats::{fisher_exact_two_sided, sample_size_two_proportions};
use super::DAY;

/// The flag whose rollout (keyed by session id) puts a session in the hold-out group: its
/// searches are evaluated and recorded as usual but show nothing.
pub const HOLDOUT_FLAG: &str = "guideline_holdout";
/// The significance level of the hold-out test.
pub const ALPHA: f64 = 0.05;
/// The power the hold-out sample is sized for.
pub const POWER: f64 = 0.80;
/// The re-match rate assumed for the hold-out group before it has any data.
pub const DEFAULT_HOLDOUT_RATE: f64 = 0.5;

pub use crate::store::{AdherenceEvent as Event, FileRecord, IndexedFile, IndexedSearch};

impl crate::store::GuidelineIds for crate::guidebook::GuidelineSnapshot {
    fn id(&self, index: usize) -> &str {
        self.guidelines.get(index).map_or("", |g| g.id())
    }
}

/// What happened to a presentation, as far as the session shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    NoEvidence,
    Followed,
    Repeated,
}

/// A change the tracker reports as it goes: what the live counters count. Ids borrowed from the
/// event fed, but for the tracker's own (outcomes, corrections).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delta<'e> {
    /// The guideline matched a file (`written`: the edit brought the match).
    Fire {
        guideline: &'e str,
        written: bool,
    },
    /// The guideline was presented (or would have been, `holdout`).
    Presented {
        guideline: &'e str,
        holdout: bool,
    },
    /// A presentation's outcome became `outcome` (from no evidence, or followed → repeated).
    Became {
        guideline: String,
        holdout: bool,
        outcome: Outcome,
        day: i64,
    },
    /// A refusal of the guideline was followed by an accepted edit without its match.
    Corrected {
        guideline: String,
    },
    Blocked {
        guideline: &'e str,
    },
    Allowed {
        guideline: &'e str,
    },
}

struct Presentation {
    guideline: String,
    day: i64,
    holdout: bool,
    outcome: Outcome,
}

/// One guideline's first trigger in the session, for the hold-out test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    /// The search (its position in the session) where the guideline first matched.
    pub search: usize,
    /// A later search matched it again.
    pub rematched: bool,
}

/// One session's state: what each file matched last, the presentations waiting for evidence,
/// the refusals waiting for an accepted edit, each guideline's first trigger.
#[derive(Default)]
pub struct SessionTracker {
    /// The session's group, from its first search.
    pub holdout: Option<bool>,
    searches: usize,
    last: HashMap<String, Vec<String>>,
    presentations: Vec<Presentation>,
    /// Path → presentations (indices) of guidelines that matched it when presented.
    waiting: HashMap<String, Vec<usize>>,
    /// (path, guideline) refused and not yet followed by a search of the path.
    refused: HashSet<(String, String)>,
    pub triggers: BTreeMap<String, Trigger>,
}

impl SessionTracker {
    /// Feeds one event; `out` receives what changed.
    pub fn feed<'e>(&mut self, event: &'e Event, out: &mut Vec<Delta<'e>>) {
        match event {
            Event::Block {
                path, guideline, ..
            } => {
                out.push(Delta::Blocked { guideline });
                self.refused.insert((path.clone(), guideline.clone()));
            }
            Event::Search { at, holdout, files } => {
                let holdout = *self.holdout.get_or_insert(*holdout);
                let search = self.searches;
                self.searches += 1;
                let day = at.div_euclid(DAY) * DAY;
                let mut this_search = HashMap::new();
                for f in files {
                    self.file(f, search, day, holdout, &mut this_search, out);
                }
            }
        }
    }

    fn file<'e>(
        &mut self,
        f: &'e FileRecord,
        search: usize,
        day: i64,
        holdout: bool,
        this_search: &mut HashMap<String, usize>,
        out: &mut Vec<Delta<'e>>,
    ) {
        let matches = |g: &str| f.matched.iter().any(|m| m == g);
        // Evidence for earlier presentations of this file.
        if let Some(waiting) = self.waiting.get(&f.path) {
            for &i in waiting {
                let p = &mut self.presentations[i];
                let next = if matches(&p.guideline) {
                    Outcome::Repeated
                } else if p.outcome == Outcome::NoEvidence {
                    Outcome::Followed
                } else {
                    p.outcome
                };
                if next != p.outcome {
                    p.outcome = next;
                    out.push(Delta::Became {
                        guideline: p.guideline.clone(),
                        holdout: p.holdout,
                        outcome: next,
                        day: p.day,
                    });
                }
            }
        }
        // Refusals of this file: the edit let through now either no longer matches.
        if !self.refused.is_empty() {
            let done: Vec<(String, String)> = self
                .refused
                .iter()
                .filter(|(p, _)| *p == f.path)
                .cloned()
                .collect();
            for key in done {
                if !matches(&key.1) {
                    out.push(Delta::Corrected {
                        guideline: key.1.clone(),
                    });
                }
                self.refused.remove(&key);
            }
        }
        let before = self.last.get(&f.path);
        for g in &f.matched {
            let written = match before {
                Some(before) => !before.contains(g),
                None => f.whole,
            };
            out.push(Delta::Fire {
                guideline: g,
                written,
            });
            match self.triggers.get_mut(g) {
                Some(t) if t.search < search => t.rematched = true,
                Some(_) => {}
                None => {
                    self.triggers.insert(
                        g.clone(),
                        Trigger {
                            search,
                            rematched: false,
                        },
                    );
                }
            }
        }
        for g in &f.allowed {
            out.push(Delta::Allowed { guideline: g });
        }
        for g in &f.presented {
            // One presentation per (session, guideline): a search presenting a guideline for
            // several files makes one presentation, waiting on each of them.
            let i = match this_search.get(g) {
                Some(&i) => i,
                None => {
                    self.presentations.push(Presentation {
                        guideline: g.clone(),
                        day,
                        holdout,
                        outcome: Outcome::NoEvidence,
                    });
                    out.push(Delta::Presented {
                        guideline: g,
                        holdout,
                    });
                    let i = self.presentations.len() - 1;
                    this_search.insert(g.clone(), i);
                    i
                }
            };
            self.waiting.entry(f.path.clone()).or_default().push(i);
        }
        match self.last.get_mut(&f.path) {
            Some(last) => last.clone_from(&f.matched),
            None => {
                self.last.insert(f.path.clone(), f.matched.clone());
            }
        }
    }
}

impl SessionTracker {
    /// Each presentation so far: (guideline, day, hold-out, outcome).
    pub fn presentations(&self) -> impl Iterator<Item = (&str, i64, bool, Outcome)> {
        self.presentations
            .iter()
            .map(|p| (p.guideline.as_str(), p.day, p.holdout, p.outcome))
    }
}

/// A presentation's outcomes counted for one group of sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcomes {
    pub presentations: u64,
    pub followed: u64,
    pub repeated: u64,
    pub no_evidence: u64,
}

/// One group's sessions in the hold-out test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    /// Sessions in which the guideline triggered.
    pub sessions: u64,
    /// Of them, sessions whose later searches matched it again.
    pub rematched: u64,
    pub rate: Option<f64>,
}

/// The hold-out test of one guideline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldoutTest {
    pub shown: GroupRow,
    pub held_out: GroupRow,
    /// `[[shown rematched, shown not], [held out rematched, held out not]]`.
    pub table: [[u64; 2]; 2],
    pub fisher_exact_p_two_sided: f64,
    pub alpha: f64,
    pub significant: bool,
    /// Sessions each group needs to tell the hold-out's rate from half of it (α 0.05, power
    /// 0.80); the hold-out rate is taken as [`DEFAULT_HOLDOUT_RATE`] until it is known.
    pub required_per_group: u64,
    pub sample_sufficient: bool,
    pub verdict: String,
}

fn group(sessions: u64, rematched: u64) -> GroupRow {
    GroupRow {
        sessions,
        rematched,
        rate: (sessions > 0).then(|| rematched as f64 / sessions as f64),
    }
}

/// Judges one guideline: `shown` and `held_out` are (sessions triggered, sessions rematched).
pub fn holdout_test(id: &str, shown: (u64, u64), held_out: (u64, u64)) -> HoldoutTest {
    let (s, h) = (group(shown.0, shown.1), group(held_out.0, held_out.1));
    let table = [
        [s.rematched, s.sessions - s.rematched],
        [h.rematched, h.sessions - h.rematched],
    ];
    let p = fisher_exact_two_sided(table[0][0], table[0][1], table[1][0], table[1][1]);
    let base = h
        .rate
        .filter(|r| *r > 0.0 && *r < 1.0)
        .unwrap_or(DEFAULT_HOLDOUT_RATE);
    let required = sample_size_two_proportions(base, base / 2.0, ALPHA, POWER).ceil() as u64;
    let sufficient = s.sessions >= required && h.sessions >= required;
    let significant = p < ALPHA;
    let pct = |r: Option<f64>| r.map_or("no data".to_string(), |r| format!("{:.1} %", r * 100.0));
    let rates = format!(
        "written again after the first trigger: shown {} of {} sessions ({}), hold-out {} of {} \
         ({}); Fisher's exact p = {}",
        s.rematched,
        s.sessions,
        pct(s.rate),
        h.rematched,
        h.sessions,
        pct(h.rate),
        format_p(p)
    );
    let verdict = if h.sessions == 0 {
        format!(
            "No hold-out sessions: turn on `{HOLDOUT_FLAG}` (a small rollout_percent) to test \
             {id}; {rates}."
        )
    } else if !sufficient {
        format!(
            "Too early to decide: each group needs {required} sessions in which {id} triggered; \
             {rates}. Keep collecting."
        )
    } else if significant && s.rate < h.rate {
        format!("Showing {id} works: agents write it again significantly less often ({rates} < {ALPHA}).")
    } else if significant {
        format!(
            "Showing {id} backfires: agents write it again significantly more often ({rates} < \
             {ALPHA}); reword it."
        )
    } else {
        format!(
            "No significant difference ({rates} ≥ {ALPHA}) with enough data: showing {id} does \
             not measurably change what agents write; reword it or retire it."
        )
    };
    HoldoutTest {
        shown: s,
        held_out: h,
        table,
        fisher_exact_p_two_sided: p,
        alpha: ALPHA,
        significant,
        required_per_group: required,
        sample_sufficient: sufficient,
        verdict,
    }
}

/// One guideline's row of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuidelineRow {
    pub id: String,
    /// Files it matched, over every search (each search's file once).
    pub fires: u64,
    /// Of them, matches the edit brought (see the guide).
    pub fires_on_written_lines: u64,
    pub written_share: Option<f64>,
    /// Presentations in the shown group, and what came of them.
    #[serde(flatten)]
    pub shown: Outcomes,
    /// Repeated presentations out of those with evidence (followed + repeated).
    pub ignored_share: Option<f64>,
    /// What would have been shown in hold-out sessions, and what came of it.
    pub held_out: Outcomes,
    pub blocks: u64,
    pub corrected: u64,
    pub allowances: u64,
    pub holdout: HoldoutTest,
}

/// One day's totals (the day a presentation was made; fires on the day they fired).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DayRow {
    pub date: String,
    pub fires: u64,
    pub presentations: u64,
    pub followed: u64,
    pub repeated: u64,
    pub corrected: u64,
}

/// Everything `guidebook report` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdherenceReport {
    /// The first day counted (`--since`), if any.
    pub since: Option<String>,
    /// The sidecars whose pushed counters the report sums (`report --team` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u64>,
    pub generated_at: String,
    pub sessions: u64,
    pub holdout_sessions: u64,
    pub holdout_flag: String,
    /// Noisiest first (fires, then repeated presentations, then id).
    pub guidelines: Vec<GuidelineRow>,
    /// The ids with the most repeated presentations (ignored share, then count), at most 10.
    pub most_ignored: Vec<String>,
    pub days: Vec<DayRow>,
}

/// One guideline's counts over the sessions added: what a report row is computed from, and
/// what the team push adds up (`metrics::team`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub fires: u64,
    pub written: u64,
    pub shown: OutcomeCounts,
    pub held_out: OutcomeCounts,
    pub blocks: u64,
    pub corrected: u64,
    pub allowances: u64,
    /// (sessions triggered, sessions rematched) per group.
    pub shown_sessions: (u64, u64),
    pub held_sessions: (u64, u64),
}

/// Presentations by outcome (their sum is the presentations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    pub followed: u64,
    pub repeated: u64,
    pub no_evidence: u64,
}

impl OutcomeCounts {
    fn add(&mut self, outcome: Outcome) {
        *self.of_mut(outcome) += 1;
    }

    pub fn of_mut(&mut self, outcome: Outcome) -> &mut u64 {
        match outcome {
            Outcome::NoEvidence => &mut self.no_evidence,
            Outcome::Followed => &mut self.followed,
            Outcome::Repeated => &mut self.repeated,
        }
    }

    fn outcomes(self) -> Outcomes {
        Outcomes {
            presentations: self.followed + self.repeated + self.no_evidence,
            followed: self.followed,
            repeated: self.repeated,
            no_evidence: self.no_evidence,
        }
    }
}

/// The totals of guideline `g`, created empty the first time (no allocation after that).
fn totals_of<'t>(totals: &'t mut BTreeMap<String, Totals>, g: &str) -> &'t mut Totals {
    if !totals.contains_key(g) {
        totals.insert(g.to_owned(), Totals::default());
    }
    totals.get_mut(g).expect("just inserted")
}

/// Builds the report from sessions fed one at a time ([`Aggregate::session`]).
#[derive(Default)]
pub struct Aggregate {
    totals: BTreeMap<String, Totals>,
    days: BTreeMap<i64, DayRow>,
    sessions: u64,
    holdout_sessions: u64,
}

impl Aggregate {
    /// Adds one session, its events in the order recorded.
    pub fn session<'e>(&mut self, events: impl IntoIterator<Item = &'e Event>) {
        self.session_from(events, 0);
    }

    /// Adds what one session's events from the `first_new`-th on contribute, the earlier ones
    /// fed only for the state they leave: a session settled once and continued later (the team
    /// push) adds its new events' counts, its new presentations and first triggers as they
    /// stand now, and is not counted as a session again. Each presentation's outcome and each
    /// trigger's re-match is thus decided once, when its part of the session settles.
    pub fn session_from<'e>(
        &mut self,
        events: impl IntoIterator<Item = &'e Event>,
        first_new: usize,
    ) {
        let mut tracker = SessionTracker::default();
        let mut deltas = Vec::new();
        let (mut old_presentations, mut old_searches) = (0, 0);
        let mut fed = 0;
        for (i, e) in events.into_iter().enumerate() {
            fed = i + 1;
            if i == first_new {
                old_presentations = tracker.presentations.len();
                old_searches = tracker.searches;
            }
            deltas.clear();
            tracker.feed(e, &mut deltas);
            if i < first_new {
                continue;
            }
            let day = match e {
                Event::Search { at, .. } | Event::Block { at, .. } => at.div_euclid(DAY) * DAY,
            };
            for d in &deltas {
                match d {
                    Delta::Fire { guideline, written } => {
                        let t = totals_of(&mut self.totals, guideline);
                        t.fires += 1;
                        t.written += u64::from(*written);
                        self.days.entry(day).or_default().fires += 1;
                    }
                    Delta::Blocked { guideline } => {
                        totals_of(&mut self.totals, guideline).blocks += 1
                    }
                    Delta::Corrected { guideline } => {
                        totals_of(&mut self.totals, guideline).corrected += 1;
                        self.days.entry(day).or_default().corrected += 1;
                    }
                    Delta::Allowed { guideline } => {
                        totals_of(&mut self.totals, guideline).allowances += 1
                    }
                    Delta::Presented { .. } | Delta::Became { .. } => {}
                }
            }
        }
        if fed <= first_new {
            // No event from `first_new` on: nothing new.
            (old_presentations, old_searches) = (tracker.presentations.len(), tracker.searches);
        }
        let Some(holdout) = tracker.holdout else {
            if !tracker.refused.is_empty() && first_new == 0 {
                self.sessions += 1;
            }
            return;
        };
        if first_new == 0 {
            self.sessions += 1;
            self.holdout_sessions += u64::from(holdout);
        }
        for (g, day, held, outcome) in tracker.presentations().skip(old_presentations) {
            let t = self.totals.entry(g.to_string()).or_default();
            if held {
                t.held_out.add(outcome);
            } else {
                t.shown.add(outcome);
                let d = self.days.entry(day).or_default();
                d.presentations += 1;
                d.followed += u64::from(outcome == Outcome::Followed);
                d.repeated += u64::from(outcome == Outcome::Repeated);
            }
        }
        for (g, trigger) in &tracker.triggers {
            if trigger.search < old_searches {
                continue;
            }
            let t = self.totals.entry(g.clone()).or_default();
            let group = if holdout {
                &mut t.held_sessions
            } else {
                &mut t.shown_sessions
            };
            group.0 += 1;
            group.1 += u64::from(trigger.rematched);
        }
    }

    /// The aggregate of counts added up elsewhere (the team's, from Prometheus): no days.
    pub fn of_totals(
        totals: BTreeMap<String, Totals>,
        sessions: u64,
        holdout_sessions: u64,
    ) -> Self {
        Aggregate {
            totals,
            days: BTreeMap::new(),
            sessions,
            holdout_sessions,
        }
    }

    /// Each guideline's counts so far, and the sessions and hold-out sessions added.
    pub fn totals(&self) -> (&BTreeMap<String, Totals>, u64, u64) {
        (&self.totals, self.sessions, self.holdout_sessions)
    }

    /// The report, `since` and `generated_at` as given.
    pub fn report(self, since: Option<String>, generated_at: String) -> AdherenceReport {
        let share = |n: u64, of: u64| (of > 0).then(|| n as f64 / of as f64);
        let mut guidelines: Vec<GuidelineRow> = self
            .totals
            .into_iter()
            .map(|(id, t)| GuidelineRow {
                holdout: holdout_test(&id, t.shown_sessions, t.held_sessions),
                written_share: share(t.written, t.fires),
                ignored_share: share(t.shown.repeated, t.shown.repeated + t.shown.followed),
                id,
                fires: t.fires,
                fires_on_written_lines: t.written,
                shown: t.shown.outcomes(),
                held_out: t.held_out.outcomes(),
                blocks: t.blocks,
                corrected: t.corrected,
                allowances: t.allowances,
            })
            .collect();
        guidelines.sort_by(|a, b| {
            b.fires
                .cmp(&a.fires)
                .then(b.shown.repeated.cmp(&a.shown.repeated))
                .then(a.id.cmp(&b.id))
        });
        let mut ignored: Vec<&GuidelineRow> =
            guidelines.iter().filter(|g| g.shown.repeated > 0).collect();
        ignored.sort_by(|a, b| {
            b.ignored_share
                .unwrap_or(0.0)
                .total_cmp(&a.ignored_share.unwrap_or(0.0))
                .then(b.shown.repeated.cmp(&a.shown.repeated))
                .then(a.id.cmp(&b.id))
        });
        let most_ignored = ignored.iter().take(10).map(|g| g.id.clone()).collect();
        let days = self
            .days
            .into_iter()
            .map(|(day, mut d)| {
                d.date = crate::time::date_of(day);
                d
            })
            .collect();
        AdherenceReport {
            since,
            instances: None,
            generated_at,
            sessions: self.sessions,
            holdout_sessions: self.holdout_sessions,
            holdout_flag: HOLDOUT_FLAG.into(),
            guidelines,
            most_ignored,
            days,
        }
    }
}

/// Whether searches record adherence: on unless `ADAPTIVE_GUIDEBOOK_RECORD_ADHERENCE=0` (the
/// hook bench's "without" run; read once per process).
pub fn recording() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("ADAPTIVE_GUIDEBOOK_RECORD_ADHERENCE").map_or(true, |v| v.trim() != "0")
    })
}

/// The most guidelines the Prometheus counters name; every further id is counted as `other`.
pub const LABELED_GUIDELINES: usize = 50;
/// The most sessions the live counters follow at once (the least recently seen is dropped).
pub const LIVE_SESSIONS: usize = 512;

/// The live per-guideline counters: each session's events fed to its own tracker as they come,
/// the changes counted under a bounded set of label values.
#[derive(Default)]
pub struct Live {
    sessions: HashMap<String, (u64, SessionTracker)>,
    tick: u64,
    /// The ids with a label value of their own: the first [`LABELED_GUIDELINES`] seen.
    labels: HashSet<String>,
    /// Label value → one count per [`LIVE_COUNTERS`] entry.
    counts: HashMap<String, [u64; LIVE_COUNTERS.len()]>,
}

/// The live counters' names, as rendered after `guidebook_guideline_`.
pub const LIVE_COUNTERS: [&str; 9] = [
    "fires",
    "fires_written",
    "presented_shown",
    "presented_holdout",
    "followed_shown",
    "followed_holdout",
    "repeated_shown",
    "repeated_holdout",
    "corrected",
];

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("sessions", &self.sessions.len())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// The label value of `id`: itself while fewer than [`LABELED_GUIDELINES`] ids have one,
    /// `other` after.
    fn label<'i>(&mut self, id: &'i str) -> &'i str {
        if self.labels.contains(id) {
            id
        } else if self.labels.len() < LABELED_GUIDELINES {
            self.labels.insert(id.to_owned());
            id
        } else {
            "other"
        }
    }

    fn count(&mut self, id: &str, counter: &'static str) {
        let Some(i) = LIVE_COUNTERS.iter().position(|c| *c == counter) else {
            return;
        };
        let label = self.label(id);
        match self.counts.get_mut(label) {
            Some(c) => c[i] += 1,
            None => {
                let mut c = [0; LIVE_COUNTERS.len()];
                c[i] = 1;
                self.counts.insert(label.to_owned(), c);
            }
        }
    }

    /// Every non-zero count: (label, counter, count), by label and then counter.
    pub fn counts(&self) -> Vec<(&str, &'static str, u64)> {
        let mut out: Vec<(&str, &'static str, u64)> = self
            .counts
            .iter()
            .flat_map(|(label, c)| {
                LIVE_COUNTERS
                    .iter()
                    .zip(c)
                    .filter(|(_, n)| **n > 0)
                    .map(move |(name, n)| (label.as_str(), *name, *n))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Feeds one event of `session`.
    pub fn feed(&mut self, session: &str, event: &Event) {
        self.tick += 1;
        let tick = self.tick;
        if !self.sessions.contains_key(session) && self.sessions.len() >= LIVE_SESSIONS {
            let oldest = self
                .sessions
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.sessions.remove(&k);
            }
        }
        if !self.sessions.contains_key(session) {
            self.sessions
                .insert(session.to_owned(), (tick, SessionTracker::default()));
        }
        let entry = self.sessions.get_mut(session).expect("just inserted");
        entry.0 = tick;
        let mut deltas = Vec::new();
        entry.1.feed(event, &mut deltas);
        for d in &deltas {
            match d {
                Delta::Fire { guideline, written } => {
                    self.count(guideline, "fires");
                    if *written {
                        self.count(guideline, "fires_written");
                    }
                }
                Delta::Presented { guideline, holdout } => self.count(
                    guideline,
                    pick(*holdout, "presented_holdout", "presented_shown"),
                ),
                Delta::Became {
                    guideline,
                    holdout,
                    outcome,
                    ..
                } => match outcome {
                    Outcome::Followed => self.count(
                        guideline,
                        pick(*holdout, "followed_holdout", "followed_shown"),
                    ),
                    Outcome::Repeated => self.count(
                        guideline,
                        pick(*holdout, "repeated_holdout", "repeated_shown"),
                    ),
                    Outcome::NoEvidence => {}
                },
                Delta::Corrected { guideline } => self.count(guideline, "corrected"),
                Delta::Blocked { .. } | Delta::Allowed { .. } => {}
            }
        }
    }
}

fn pick(holdout: bool, yes: &'static str, no: &'static str) -> &'static str {
    if holdout {
        yes
    } else {
        no
    }
}

/// The adherence report of everything recorded on or after `since` (epoch seconds of a day's
/// start; `since_text` as the user gave it).
pub fn report(
    store: &crate::store::MetricsStore,
    since: Option<(i64, String)>,
    now: i64,
) -> Result<AdherenceReport, crate::store::StoreError> {
    let mut agg = Aggregate::default();
    let from = since.as_ref().map_or(i64::MIN, |(at, _)| *at);
    store.adherence_sessions(from, |_, events| agg.session(events))?;
    Ok(agg.report(
        since.map(|(_, t)| t),
        crate::time::rfc3339(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(now.max(0) as u64),
        ),
    ))
}

/// Writes `sessions` made-up sessions into the database at `db` through the store, in batches
/// as the recorder writes them: the `guidebook report` benchmark's data (benches/adherence.sh).
/// Deterministic; 40 guidelines, 2–9 searches a session over 3 files, a tenth held out, some
/// refusals, over the 30 days before `now`.
pub fn generate(db: &std::path::Path, sessions: usize, now: i64) -> Result<(), String> {
    use crate::store::{Database, MetricsStore, Observed};
    let store = MetricsStore::new(
        Database::open(db, std::time::Duration::from_secs(30)).map_err(|e| e.to_string())?,
    );
    // A small xorshift: the same data on every run.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let ids: Vec<String> = (0..40).map(|i| format!("guideline-{i:02}")).collect();
    // How often a match stays in a file at its next search, in percent: by guideline, higher
    // in hold-out sessions (nobody told the agent).
    let stays = |g: usize, holdout: bool| (g % 5) as u64 * 15 + if holdout { 30 } else { 0 };
    let mut batch = Vec::with_capacity(4096);
    for s in 0..sessions {
        let session = format!("session-{s:06}");
        let holdout = next(10) == 0;
        let start = now - 30 * DAY + (s as i64 * 30 * DAY) / sessions.max(1) as i64;
        let mut presented: HashSet<usize> = HashSet::new();
        let mut in_file: [Vec<usize>; 3] = Default::default();
        for k in 0..(2 + next(8)) {
            let f = next(3) as usize;
            let path = format!("/work/repo/src/file{f}.kt");
            // Low ids fire most often.
            let mut matched: Vec<usize> = (0..next(3))
                .map(|_| (next(40) * next(40) / 40) as usize)
                .collect();
            matched.extend(
                in_file[f]
                    .iter()
                    .copied()
                    .filter(|&g| next(100) < stays(g, holdout)),
            );
            matched.sort_unstable();
            matched.dedup();
            in_file[f] = matched.clone();
            let at = start + k as i64 * 30;
            if next(8) == 0 {
                if let Some(&g) = matched.first() {
                    in_file[f].retain(|&m| m != g);
                    batch.push(Observed::Adherence {
                        session_id: session.clone(),
                        event: Event::Block {
                            at,
                            path: path.clone(),
                            guideline: ids[g].clone(),
                        },
                    });
                    continue;
                }
            }
            let new: Vec<String> = matched
                .iter()
                .filter(|g| presented.insert(**g))
                .map(|&g| ids[g].clone())
                .collect();
            batch.push(Observed::Adherence {
                session_id: session.clone(),
                event: Event::Search {
                    at,
                    holdout,
                    files: vec![FileRecord {
                        path,
                        matched: matched.iter().map(|&g| ids[g].clone()).collect(),
                        presented: new,
                        allowed: Vec::new(),
                        whole: k == 0,
                    }],
                },
            });
        }
        if batch.len() >= 4096 {
            store.write_observed(&batch).map_err(|e| e.to_string())?;
            batch.clear();
        }
    }
    store.write_observed(&batch).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_780_000_000;

    fn file(path: &str, matched: &[&str], presented: &[&str]) -> FileRecord {
        let v = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect();
        FileRecord {
            path: path.into(),
            matched: v(matched),
            presented: v(presented),
            allowed: Vec::new(),
            whole: false,
        }
    }

    fn search(at: i64, files: Vec<FileRecord>) -> Event {
        Event::Search {
            at,
            holdout: false,
            files,
        }
    }

    fn block(path: &str, g: &str) -> Event {
        Event::Block {
            at: T0,
            path: path.into(),
            guideline: g.into(),
        }
    }

    fn outcomes(events: &[Event]) -> Vec<(String, Outcome)> {
        let mut t = SessionTracker::default();
        let mut out = Vec::new();
        for e in events {
            t.feed(e, &mut out);
        }
        t.presentations()
            .map(|(g, _, _, o)| (g.to_string(), o))
            .collect()
    }

    fn report(sessions: &[Vec<Event>]) -> AdherenceReport {
        let mut agg = Aggregate::default();
        for s in sessions {
            agg.session(s);
        }
        agg.report(None, "now".into())
    }

    fn row<'r>(r: &'r AdherenceReport, id: &str) -> &'r GuidelineRow {
        r.guidelines.iter().find(|g| g.id == id).unwrap()
    }

    #[test]
    fn a_match_gone_at_the_next_search_of_the_file_is_followed() {
        let events = [
            search(T0, vec![file("/a.kt", &["g"], &["g"])]),
            search(T0 + 5, vec![file("/a.kt", &[], &[])]),
        ];
        assert_eq!(outcomes(&events), [("g".into(), Outcome::Followed)]);
    }

    #[test]
    fn a_match_written_again_later_is_repeated_even_after_it_was_gone() {
        let events = [
            search(T0, vec![file("/a.kt", &["g"], &["g"])]),
            search(T0 + 5, vec![file("/a.kt", &[], &[])]),
            search(T0 + 9, vec![file("/a.kt", &["g"], &[])]),
        ];
        assert_eq!(outcomes(&events), [("g".into(), Outcome::Repeated)]);
        let again = [
            search(T0, vec![file("/a.kt", &["g"], &["g"])]),
            search(T0 + 5, vec![file("/a.kt", &["g"], &[])]),
        ];
        assert_eq!(outcomes(&again), [("g".into(), Outcome::Repeated)]);
    }

    #[test]
    fn no_later_search_of_the_file_is_no_evidence() {
        // Another file's searches say nothing of this presentation.
        let events = [
            search(T0, vec![file("/a.kt", &["g"], &["g"])]),
            search(T0 + 5, vec![file("/b.kt", &[], &[])]),
            search(T0 + 6, vec![file("/b.kt", &["g"], &[])]),
        ];
        assert_eq!(outcomes(&events), [("g".into(), Outcome::NoEvidence)]);
    }

    #[test]
    fn one_presentation_for_several_files_is_judged_on_each() {
        let events = [
            search(
                T0,
                vec![file("/a.kt", &["g"], &["g"]), file("/b.kt", &["g"], &["g"])],
            ),
            search(T0 + 5, vec![file("/a.kt", &[], &[])]),
        ];
        assert_eq!(outcomes(&events), [("g".into(), Outcome::Followed)]);
        let r = report(&[events.to_vec()]);
        assert_eq!(row(&r, "g").shown.presentations, 1);
        let events = [
            search(
                T0,
                vec![file("/a.kt", &["g"], &["g"]), file("/b.kt", &["g"], &["g"])],
            ),
            search(T0 + 5, vec![file("/a.kt", &[], &[])]),
            search(T0 + 6, vec![file("/b.kt", &["g"], &[])]),
        ];
        assert_eq!(outcomes(&events), [("g".into(), Outcome::Repeated)]);
    }

    #[test]
    fn a_refusal_then_an_accepted_edit_without_the_match_is_corrected() {
        let r = report(&[
            vec![
                block("/db.kt", "b"),
                search(T0 + 1, vec![file("/db.kt", &[], &[])]),
            ],
            // Refused, then let through with the match (allowed, say): not corrected.
            vec![
                block("/db.kt", "b"),
                search(T0 + 1, vec![file("/db.kt", &["b"], &["b"])]),
            ],
            // Refused and never edited again: not corrected.
            vec![block("/db.kt", "b")],
        ]);
        let b = row(&r, "b");
        assert_eq!((b.blocks, b.corrected), (3, 1));
        assert_eq!(r.sessions, 3);
    }

    #[test]
    fn fires_on_written_lines_are_matches_the_edit_brought() {
        let mut new_file = file("/n.kt", &["g"], &["g"]);
        new_file.whole = true;
        let r = report(&[vec![
            // Already there at the first search of an existing file: not written.
            search(T0, vec![file("/a.kt", &["g"], &["g"])]),
            search(T0 + 1, vec![file("/a.kt", &[], &[])]),
            // Brought back by an edit: written.
            search(T0 + 2, vec![file("/a.kt", &["g"], &[])]),
            // Still there: not written by this edit.
            search(T0 + 3, vec![file("/a.kt", &["g"], &[])]),
            // A new file the edit wrote whole: written.
            search(T0 + 4, vec![new_file]),
        ]]);
        let g = row(&r, "g");
        assert_eq!((g.fires, g.fires_on_written_lines), (4, 2));
        assert_eq!(g.written_share, Some(0.5));
    }

    #[test]
    fn the_report_orders_noisiest_first_and_names_the_most_ignored() {
        let ignored = vec![
            search(T0, vec![file("/a.kt", &["quiet"], &["quiet"])]),
            search(T0 + 1, vec![file("/a.kt", &["quiet"], &[])]),
        ];
        let noisy = vec![
            search(T0, vec![file("/b.kt", &["noisy"], &["noisy"])]),
            search(T0 + 1, vec![file("/b.kt", &[], &[])]),
            search(T0 + 2, vec![file("/c.kt", &["noisy"], &[])]),
            search(T0 + 3, vec![file("/d.kt", &["noisy"], &[])]),
        ];
        let r = report(&[ignored, noisy]);
        let ids: Vec<&str> = r.guidelines.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["noisy", "quiet"]);
        assert_eq!(r.most_ignored, ["quiet"]);
        assert_eq!(row(&r, "quiet").ignored_share, Some(1.0));
        assert_eq!(row(&r, "noisy").shown.followed, 1);
        assert_eq!(r.days.len(), 1);
        assert_eq!(r.days[0].presentations, 2);
    }

    /// The hold-out test's table, p-value (SciPy's `fisher_exact`, as in `stats`' tests), sample
    /// size and verdicts.
    #[test]
    fn the_holdout_test_compares_rematch_rates_with_fishers_exact_test() {
        // Sessions rematched / triggered: shown 3 of 100, hold-out 15 of 100.
        let t = holdout_test("g", (100, 3), (100, 15));
        assert_eq!(t.table, [[3, 97], [15, 85]]);
        assert!((t.fisher_exact_p_two_sided - 0.00519222290141669).abs() < 1e-12);
        // Hold-out rate 0.15 → telling it from 0.075 needs this many per group.
        let need = sample_size_two_proportions(0.15, 0.075, 0.05, 0.8).ceil() as u64;
        assert_eq!(t.required_per_group, need);
        assert!(t.required_per_group > 100, "{}", t.required_per_group);
        assert!(t.verdict.starts_with("Too early"), "{}", t.verdict);
        // With enough sessions: 12 of 300 against 48 of 300.
        let t = holdout_test("g", (300, 12), (300, 48));
        assert!(t.sample_sufficient && t.significant, "{t:?}");
        assert!(t.verdict.starts_with("Showing g works"), "{}", t.verdict);
        let t = holdout_test("g", (300, 100), (300, 48));
        assert!(
            t.verdict.starts_with("Showing g backfires"),
            "{}",
            t.verdict
        );
        // SciPy: fisher_exact([[12, 63], [4, 71]]) = 0.06135868159465148.
        let t = holdout_test("g", (75, 12), (75, 4));
        assert!((t.fisher_exact_p_two_sided - 0.06135868159465148).abs() < 1e-12);
        assert!(!t.significant);
        let t = holdout_test("g", (400, 100), (400, 104));
        assert!(
            t.verdict.starts_with("No significant difference"),
            "{}",
            t.verdict
        );
        let t = holdout_test("g", (10, 1), (0, 0));
        assert!(
            t.verdict.starts_with("No hold-out sessions"),
            "{}",
            t.verdict
        );
        // No data yet: the default rate 0.5 against 0.25: Fleiss's formula gives 57.7.
        assert_eq!(holdout_test("g", (0, 0), (0, 0)).required_per_group, 58);
    }

    #[test]
    fn sessions_rematched_after_the_first_trigger_make_the_holdout_table() {
        let session = |holdout: bool, again: bool| {
            let mut events = vec![
                Event::Search {
                    at: T0,
                    holdout,
                    files: vec![file("/a.kt", &["g"], &["g"])],
                },
                Event::Search {
                    at: T0 + 1,
                    holdout,
                    files: vec![file("/b.kt", &[], &[])],
                },
            ];
            if again {
                events.push(Event::Search {
                    at: T0 + 2,
                    holdout,
                    files: vec![file("/c.kt", &["g"], &[])],
                });
            }
            events
        };
        let r = report(&[
            session(false, false),
            session(false, true),
            session(false, false),
            session(true, true),
            session(true, true),
        ]);
        let g = row(&r, "g");
        assert_eq!(g.holdout.table, [[1, 2], [2, 0]]);
        assert_eq!((r.sessions, r.holdout_sessions), (5, 2));
        // What hold-out sessions would have been shown is counted apart.
        assert_eq!(g.shown.presentations, 3);
        assert_eq!(g.held_out.presentations, 2);
    }

    #[test]
    fn live_counters_name_a_bounded_set_of_guidelines() {
        let mut live = Live::default();
        for i in 0..(LABELED_GUIDELINES + 20) {
            let id = format!("g{i:03}");
            live.feed(
                &format!("s{i}"),
                &search(T0, vec![file("/a.kt", &[&id], &[&id])]),
            );
            live.feed(&format!("s{i}"), &search(T0, vec![file("/a.kt", &[], &[])]));
        }
        let counts = live.counts();
        let labels: HashSet<&str> = counts.iter().map(|(l, _, _)| *l).collect();
        assert_eq!(labels.len(), LABELED_GUIDELINES + 1);
        assert!(counts.contains(&("other", "fires", 20)), "{counts:?}");
        assert!(
            counts.contains(&("g000", "followed_shown", 1)),
            "{counts:?}"
        );
        for i in 0..(2 * LIVE_SESSIONS) {
            live.feed(&format!("t{i}"), &search(T0, vec![file("/a.kt", &[], &[])]));
        }
        assert_eq!(live.sessions.len(), LIVE_SESSIONS);
    }
}
