//! The haiku A/B test: which group a task is in (flag `ab_test_haiku`, its rollout bucket keyed
//! by the task id), and the report that judges it: the 2×2 table of re-reviewed QC passes
//! (group × false negative / true negative), Fisher's exact p-value, the sample needed and a
//! verdict in words.

use serde::{Deserialize, Serialize};

use super::stats::{fisher_exact_two_sided, sample_size_two_proportions};
use crate::store::ReviewedPass;

/// The flag whose rollout puts a task in the haiku group.
pub const FLAG: &str = "ab_test_haiku";
/// The treatment: QC by the cheaper model.
pub const TREATMENT: &str = "haiku";
/// The control: QC by the current model.
pub const CONTROL: &str = "sonnet";
/// The significance level.
pub const ALPHA: f64 = 0.05;
/// The power the sample is sized for.
pub const POWER: f64 = 0.80;
/// The design's false-negative rates to tell apart: today's 5 % from a haiku at 20 %.
pub const BASELINE_FN_RATE: f64 = 0.05;
pub const DETECT_FN_RATE: f64 = 0.20;
/// The design's minimum sample per group (its formula's 75.1, rounded down).
pub const DESIGN_MINIMUM_PER_GROUP: u64 = 75;

/// The group (and QC model) of a task in the rollout or not.
pub fn group_for(in_rollout: bool) -> (&'static str, &'static str) {
    if in_rollout {
        (TREATMENT, TREATMENT)
    } else {
        (CONTROL, CONTROL)
    }
}

/// One group's row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    pub re_reviewed_passes: u64,
    pub false_negatives: u64,
    pub true_negatives: u64,
    pub false_negative_rate: Option<f64>,
}

/// How big each group must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerAnalysis {
    pub power: f64,
    pub alpha: f64,
    pub baseline_false_negative_rate: f64,
    pub detect_false_negative_rate: f64,
    /// The formula's figure, unrounded.
    pub formula_per_group: f64,
    /// The formula's figure rounded up: what each group needs.
    pub required_per_group: u64,
    pub design_minimum_per_group: u64,
}

/// The A/B report for one week (cumulative since the test began).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbReport {
    pub week: u32,
    /// The first and the last day the report covers (UTC, inclusive).
    pub from: String,
    pub to: String,
    pub flag: String,
    pub haiku: GroupRow,
    pub sonnet: GroupRow,
    /// `[[haiku FN, haiku TN], [sonnet FN, sonnet TN]]`.
    pub table: [[u64; 2]; 2],
    pub fisher_exact_p_two_sided: f64,
    pub alpha: f64,
    pub significant: bool,
    pub power_analysis: PowerAnalysis,
    pub sample_sufficient: bool,
    pub verdict: String,
}

fn row(passes: &[&ReviewedPass]) -> GroupRow {
    let fneg = passes.iter().filter(|p| p.defect_found).count() as u64;
    let n = passes.len() as u64;
    GroupRow {
        re_reviewed_passes: n,
        false_negatives: fneg,
        true_negatives: n - fneg,
        false_negative_rate: (n > 0).then(|| fneg as f64 / n as f64),
    }
}

/// The power analysis of the design: 5 % → 20 %, α = 0.05, power 0.80.
pub fn power_analysis() -> PowerAnalysis {
    let n = sample_size_two_proportions(BASELINE_FN_RATE, DETECT_FN_RATE, ALPHA, POWER);
    PowerAnalysis {
        power: POWER,
        alpha: ALPHA,
        baseline_false_negative_rate: BASELINE_FN_RATE,
        detect_false_negative_rate: DETECT_FN_RATE,
        formula_per_group: (n * 100.0).round() / 100.0,
        required_per_group: n.ceil() as u64,
        design_minimum_per_group: DESIGN_MINIMUM_PER_GROUP,
    }
}

/// Judges the re-reviewed passes of week `week` (`from`..=`to`).
pub fn report(week: u32, from: String, to: String, passes: &[ReviewedPass]) -> AbReport {
    let of = |g: &str| -> Vec<&ReviewedPass> {
        passes
            .iter()
            .filter(|p| p.group.as_deref() == Some(g))
            .collect()
    };
    let (h, s) = (row(&of(TREATMENT)), row(&of(CONTROL)));
    let table = [
        [h.false_negatives, h.true_negatives],
        [s.false_negatives, s.true_negatives],
    ];
    let p = fisher_exact_two_sided(table[0][0], table[0][1], table[1][0], table[1][1]);
    let power = power_analysis();
    let sufficient = h.re_reviewed_passes >= power.required_per_group
        && s.re_reviewed_passes >= power.required_per_group;
    let significant = p < ALPHA;
    let pct = |r: Option<f64>| r.map_or("no data".to_string(), |r| format!("{:.1} %", r * 100.0));
    let rates = format!(
        "false negatives: haiku {} of {} ({}), sonnet {} of {} ({}); Fisher's exact p = {}",
        h.false_negatives,
        h.re_reviewed_passes,
        pct(h.false_negative_rate),
        s.false_negatives,
        s.re_reviewed_passes,
        pct(s.false_negative_rate),
        format_p(p)
    );
    let verdict = if !sufficient {
        format!(
            "Too early to decide: each group needs {} re-reviewed QC passes to tell {:.0} % from \
             {:.0} % with power {:.2}; {rates}. Keep collecting.",
            power.required_per_group,
            BASELINE_FN_RATE * 100.0,
            DETECT_FN_RATE * 100.0,
            POWER
        )
    } else if significant && h.false_negative_rate > s.false_negative_rate {
        format!("Haiku misses significantly more defects than sonnet ({rates} < {ALPHA}): keep sonnet for QC.")
    } else if significant {
        format!("Haiku misses significantly fewer defects than sonnet ({rates} < {ALPHA}): haiku can take over QC.")
    } else {
        format!(
            "No significant difference ({rates} ≥ {ALPHA}) with enough data: haiku is not shown \
             to miss more defects, so the cheaper model can take over QC."
        )
    };
    AbReport {
        week,
        from,
        to,
        flag: FLAG.into(),
        haiku: h,
        sonnet: s,
        table,
        fisher_exact_p_two_sided: p,
        alpha: ALPHA,
        significant,
        power_analysis: power,
        sample_sufficient: sufficient,
        verdict,
    }
}

/// A p-value for people: four significant digits, scientific below 0.0001.
pub fn format_p(p: f64) -> String {
    if p >= 1e-4 {
        format!("{p:.4}")
    } else {
        format!("{p:.3e}")
    }
}
