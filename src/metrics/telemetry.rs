//! The live counters and latency histograms the Prometheus endpoint serves, kept in atomics so
//! that counting never waits on a lock in a request's path, and their OpenMetrics text.

use crate::sync::Locked;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency buckets: 0.25 ms to 2.5 s.
const BOUNDS: [f64; 12] = [
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5,
];

/// A cumulative latency histogram.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS.len()],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = BOUNDS.iter().position(|&b| secs <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_nanos
            .fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (b, bound) in self.buckets.iter().zip(BOUNDS) {
            cumulative += b.load(Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let braces = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{{{s}}}")
            }
        };
        let _ = writeln!(out, "{name}_count{} {count}", braces(labels));
        let sum = self.sum_nanos.load(Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{} {sum}", braces(labels));
    }
}

/// The hook kinds counted: an edit hook asks `search`, a check hook `recordError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookKind {
    Edit,
    Check,
}

impl HookKind {
    fn index(self) -> usize {
        self as usize
    }
    const NAMES: [&'static str; 2] = ["edit", "check"];
}

/// The breaker's verdict names, in `BreakerState` order.
const VERDICTS: [&str; 3] = ["continue", "warning", "halt"];
/// The disclosure phases, in `Phase` order.
const PHASES: [&str; 3] = ["summary", "standard", "full"];

/// Everything counted since the sidecar started.
#[derive(Debug, Default)]
pub struct Telemetry {
    hooks: [AtomicU64; 2],
    hook_seconds: [Histogram; 2],
    search_seconds: Histogram,
    presented: AtomicU64,
    verdicts: [AtomicU64; 3],
    prompt_builds: [AtomicU64; 3],
    prompt_tokens: [AtomicU64; 3],
    /// (group, result) → count; the group is `none` for a task outside the A/B test.
    qc: Mutex<BTreeMap<(String, &'static str), u64>>,
    /// Guideline id → matches a `guidebook:allow` comment let through, in searched files.
    allowances: Mutex<BTreeMap<String, u64>>,
    /// Guideline id → edits `checkEdit` refused for it.
    blocked: Mutex<BTreeMap<String, u64>>,
    /// Per-guideline adherence, derived live (bounded sessions and label values).
    adherence: Mutex<super::adherence::Live>,
}

/// One more for `id` in `map`, up to [`ALLOWANCE_IDS`] distinct ids.
fn count_by_id(map: &Mutex<BTreeMap<String, u64>>, id: &str) {
    let mut map = map.locked();
    if let Some(n) = map.get_mut(id) {
        *n += 1;
    } else if map.len() < ALLOWANCE_IDS {
        map.insert(id.to_string(), 1);
    }
}

/// The most guidelines whose allowances (and refusals) are counted apart (ids are few in practice; a bound
/// keeps a stream of made-up ids from growing the map).
const ALLOWANCE_IDS: usize = 10_000;

impl Telemetry {
    /// One hook request served, and how long its handler took.
    pub fn hook(&self, kind: HookKind, took: Duration) {
        self.hooks[kind.index()].fetch_add(1, Relaxed);
        self.hook_seconds[kind.index()].observe(took);
    }

    /// One `search` and how long it took, with the number of guidelines it presented.
    pub fn search(&self, took: Duration, presented: usize) {
        self.search_seconds.observe(took);
        self.presented.fetch_add(presented as u64, Relaxed);
    }

    /// A guideline whose match in a searched file a `guidebook:allow` comment let through.
    pub fn allowed(&self, id: &str) {
        count_by_id(&self.allowances, id);
    }

    /// An edit `checkEdit` refused because of guideline `id`.
    pub fn edit_blocked(&self, id: &str) {
        count_by_id(&self.blocked, id);
    }

    /// One adherence event of `session` (a search's files, a refusal): the per-guideline
    /// counters follow the session's presentations to their outcomes.
    pub fn adherence(&self, session: &str, event: &super::adherence::Event) {
        self.adherence.locked().feed(session, event);
    }

    /// A breaker verdict by name (`continue`, `warning`, `halt`).
    pub fn verdict(&self, state: &str) {
        if let Some(i) = VERDICTS.iter().position(|v| *v == state) {
            self.verdicts[i].fetch_add(1, Relaxed);
        }
    }

    /// A prompt built in `phase` with `tokens` tokens.
    pub fn prompt(&self, phase: &str, tokens: usize) {
        if let Some(i) = PHASES.iter().position(|p| *p == phase) {
            self.prompt_builds[i].fetch_add(1, Relaxed);
            self.prompt_tokens[i].fetch_add(tokens as u64, Relaxed);
        }
    }

    /// A QC result reported for a task of `group` (None: not in the A/B test).
    pub fn qc(&self, group: Option<&str>, passed: bool) {
        let key = (
            group.unwrap_or("none").to_owned(),
            if passed { "pass" } else { "fail" },
        );
        let mut qc = self.qc.locked();
        *qc.entry(key).or_default() += 1;
    }

    /// The OpenMetrics text exposition of everything above, ending in `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let family = |out: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "# HELP {name} {help}");
        };
        family(
            &mut out,
            "guidebook_hooks_served",
            "counter",
            "Hook requests served: edit (search) and check (recordError).",
        );
        for (i, kind) in HookKind::NAMES.iter().enumerate() {
            let n = self.hooks[i].load(Relaxed);
            let _ = writeln!(out, "guidebook_hooks_served_total{{kind=\"{kind}\"}} {n}");
        }
        family(
            &mut out,
            "guidebook_hook_duration_seconds",
            "histogram",
            "Time the sidecar took to answer a hook request, by kind.",
        );
        for (i, kind) in HookKind::NAMES.iter().enumerate() {
            self.hook_seconds[i].render(
                &mut out,
                "guidebook_hook_duration_seconds",
                &format!("kind=\"{kind}\""),
            );
        }
        family(
            &mut out,
            "guidebook_search_duration_seconds",
            "histogram",
            "Time one search took: reading files, matching, recording presentations.",
        );
        self.search_seconds
            .render(&mut out, "guidebook_search_duration_seconds", "");
        family(
            &mut out,
            "guidebook_guidelines_presented",
            "counter",
            "Guidelines handed to agents (each once per session).",
        );
        let _ = writeln!(
            out,
            "guidebook_guidelines_presented_total {}",
            self.presented.load(Relaxed)
        );
        family(
            &mut out,
            "guidebook_allowances",
            "counter",
            "Matches a `guidebook:allow` comment let through in searched files, by guideline.",
        );
        for (id, n) in self.allowances.locked().iter() {
            let _ = writeln!(out, "guidebook_allowances_total{{guideline=\"{id}\"}} {n}");
        }
        family(
            &mut out,
            "guidebook_edits_blocked",
            "counter",
            "Edits checkEdit refused before they were written, by block guideline.",
        );
        for (id, n) in self.blocked.locked().iter() {
            let _ = writeln!(
                out,
                "guidebook_edits_blocked_total{{guideline=\"{id}\"}} {n}"
            );
        }
        self.render_adherence(&mut out, &family);
        family(
            &mut out,
            "guidebook_breaker_verdicts",
            "counter",
            "Circuit-breaker verdicts given by recordError.",
        );
        for (i, v) in VERDICTS.iter().enumerate() {
            let n = self.verdicts[i].load(Relaxed);
            let _ = writeln!(
                out,
                "guidebook_breaker_verdicts_total{{verdict=\"{v}\"}} {n}"
            );
        }
        family(
            &mut out,
            "guidebook_prompt_builds",
            "counter",
            "Prompts built by buildPrompt, by effective phase.",
        );
        for (i, p) in PHASES.iter().enumerate() {
            let n = self.prompt_builds[i].load(Relaxed);
            let _ = writeln!(out, "guidebook_prompt_builds_total{{phase=\"{p}\"}} {n}");
        }
        family(
            &mut out,
            "guidebook_prompt_tokens",
            "counter",
            "Tokens of the prompts built by buildPrompt, by effective phase.",
        );
        for (i, p) in PHASES.iter().enumerate() {
            let n = self.prompt_tokens[i].load(Relaxed);
            let _ = writeln!(out, "guidebook_prompt_tokens_total{{phase=\"{p}\"}} {n}");
        }
        family(
            &mut out,
            "guidebook_qc_results",
            "counter",
            "QC results reported, by A/B group (none: not in the test) and result.",
        );
        let qc = self.qc.locked();
        for ((group, result), n) in qc.iter() {
            let group = escape_label(group);
            let _ = writeln!(
                out,
                "guidebook_qc_results_total{{group=\"{group}\",result=\"{result}\"}} {n}"
            );
        }
        out.push_str("# EOF\n");
        out
    }
}

/// A family of per-guideline counters: its name, help, and (live counter, group label).
type Family = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

impl Telemetry {
    /// The per-guideline adherence families: at most `LABELED_GUIDELINES` ids and `other`.
    fn render_adherence(&self, out: &mut String, family: &dyn Fn(&mut String, &str, &str, &str)) {
        let counts: Vec<(String, &str, u64)> = self
            .adherence
            .locked()
            .counts()
            .into_iter()
            .map(|(l, c, n)| (l.to_owned(), c, n))
            .collect();
        let families: [Family; 5] = [
            (
                "guidebook_guideline_fires",
                "Files a guideline matched in searches, by guideline (the first 50 ids seen; \
                 the rest as other).",
                &[("fires", "")],
            ),
            (
                "guidebook_guideline_fires_on_written_lines",
                "Matches an edit brought (not there at the file's previous search), by guideline.",
                &[("fires_written", "")],
            ),
            (
                "guidebook_guideline_presentations",
                "Guidelines presented (group shown) or withheld in hold-out sessions (holdout).",
                &[
                    ("presented_shown", "shown"),
                    ("presented_holdout", "holdout"),
                ],
            ),
            (
                "guidebook_guideline_outcomes",
                "Presentations whose file's next searches dropped the match (followed) or matched \
                 it again (repeated).",
                &[
                    ("followed_shown", "shown\",outcome=\"followed"),
                    ("followed_holdout", "holdout\",outcome=\"followed"),
                    ("repeated_shown", "shown\",outcome=\"repeated"),
                    ("repeated_holdout", "holdout\",outcome=\"repeated"),
                ],
            ),
            (
                "guidebook_guideline_corrected",
                "Refusals by checkEdit followed by an accepted edit of the file without the match.",
                &[("corrected", "")],
            ),
        ];
        for (name, help, counters) in families {
            family(out, name, "counter", help);
            for (label, counter, n) in &counts {
                let Some((_, group)) = counters.iter().find(|(c, _)| c == counter) else {
                    continue;
                };
                let label = escape_label(label);
                if group.is_empty() {
                    let _ = writeln!(out, "{name}_total{{guideline=\"{label}\"}} {n}");
                } else {
                    let _ = writeln!(
                        out,
                        "{name}_total{{guideline=\"{label}\",group=\"{group}\"}} {n}"
                    );
                }
            }
        }
    }
}

/// A label value as OpenMetrics writes it: backslash, quote and newline escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_and_end_in_inf() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(100));
        h.observe(Duration::from_micros(700));
        h.observe(Duration::from_secs(10));
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "");
        assert!(
            out.contains("x_seconds_bucket{le=\"0.00025\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("x_seconds_bucket{le=\"0.001\"} 2\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"2.5\"} 2\n"), "{out}");
        assert!(out.contains("x_seconds_bucket{le=\"+Inf\"} 3\n"), "{out}");
        assert!(out.contains("x_seconds_count 3\n"), "{out}");
        assert!(out.contains("x_seconds_sum 10.0008\n"), "{out}");
    }

    #[test]
    fn counters_render_with_labels_and_the_text_ends_in_eof() {
        let t = Telemetry::default();
        t.hook(HookKind::Edit, Duration::from_millis(1));
        t.verdict("halt");
        t.prompt("summary", 500);
        t.prompt("summary", 100);
        t.qc(Some("hai\"ku"), true);
        t.qc(None, false);
        let text = t.render();
        assert!(text.contains("guidebook_hooks_served_total{kind=\"edit\"} 1\n"));
        assert!(text.contains("guidebook_hooks_served_total{kind=\"check\"} 0\n"));
        assert!(text.contains("guidebook_breaker_verdicts_total{verdict=\"halt\"} 1\n"));
        assert!(text.contains("guidebook_prompt_tokens_total{phase=\"summary\"} 600\n"));
        assert!(text.contains("guidebook_prompt_builds_total{phase=\"summary\"} 2\n"));
        assert!(
            text.contains("guidebook_qc_results_total{group=\"hai\\\"ku\",result=\"pass\"} 1\n")
        );
        assert!(text.contains("guidebook_qc_results_total{group=\"none\",result=\"fail\"} 1\n"));
        assert!(text.ends_with("# EOF\n"));
    }
}
