//! The statistics the rollout is judged by: means and percentiles, Fisher's exact test on a 2×2
//! table (two-sided, in log space), and the sample size for comparing two proportions.

/// The arithmetic mean, `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The `q`-quantile (0..=1) with linear interpolation between the closest ranks (numpy's and
/// Excel's `PERCENTILE.INC` definition); `None` for no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(v[lo] + (v[hi] - v[lo]) * (pos - lo as f64))
}

/// The two-sided p-value of Fisher's exact test on the 2×2 table `[[a, b], [c, d]]`: the sum of
/// the probabilities, under the hypergeometric distribution with the table's margins, of every
/// table no more probable than the observed one (with R's and SciPy's relative tolerance of
/// 1e-7 for ties).
///
/// Computed in log space from the ratios of neighbouring tables' probabilities,
/// `P(x+1)/P(x) = (r₁−x)(c₁−x) / ((x+1)(r₂−c₁+x+1))`, normalised by their own sum (the
/// probabilities of all tables sum to 1): no factorial is ever formed, so tables with hundreds
/// of thousands per cell neither overflow nor lose the precision a `ln(n!)` of millions would.
pub fn fisher_exact_two_sided(a: u64, b: u64, c: u64, d: u64) -> f64 {
    let (row1, row2, col1) = (a + b, c + d, a + c);
    let lo = col1.saturating_sub(row2);
    let hi = row1.min(col1);
    if lo == hi {
        return 1.0;
    }
    // ln P(x) − ln P(lo), for x = lo..=hi.
    let mut rel = Vec::with_capacity((hi - lo + 1) as usize);
    let mut acc = 0.0f64;
    rel.push(acc);
    for x in lo..hi {
        let (x, r1, r2, c1) = (x as f64, row1 as f64, row2 as f64, col1 as f64);
        acc += ((r1 - x) * (c1 - x)).ln() - ((x + 1.0) * (r2 - c1 + x + 1.0)).ln();
        rel.push(acc);
    }
    let observed = rel[(a - lo) as usize];
    let cutoff = observed + (1.0f64 + 1e-7).ln();
    let max = rel.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let all: f64 = rel.iter().map(|l| (l - max).exp()).sum();
    let included: f64 = rel
        .iter()
        .filter(|&&l| l <= cutoff)
        .map(|l| (l - max).exp())
        .sum();
    if included > 0.0 {
        (included.ln() - all.ln()).exp().min(1.0)
    } else {
        // Every included term underflowed next to the mode: sum them at their own scale.
        let top = rel
            .iter()
            .copied()
            .filter(|&l| l <= cutoff)
            .fold(f64::NEG_INFINITY, f64::max);
        let part: f64 = rel
            .iter()
            .filter(|&&l| l <= cutoff)
            .map(|l| (l - top).exp())
            .sum();
        (top - max + part.ln() - all.ln()).exp()
    }
}

/// The standard normal quantile function (Peter Acklam's rational approximation): relative
/// error below 1.15e-9 over (0, 1), far finer than any sample size needs.
pub fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "a probability strictly between 0 and 1");
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The sample per group needed to tell proportion `p1` from `p2` with a two-sided test at
/// `alpha` with the given `power` (the normal approximation without continuity correction, as
/// in Fleiss's formula): `(z₁₋α/₂·√(2p̄q̄) + z₁₋β·√(p₁q₁ + p₂q₂))² / (p₁ − p₂)²`, unrounded.
pub fn sample_size_two_proportions(p1: f64, p2: f64, alpha: f64, power: f64) -> f64 {
    let z_a = normal_quantile(1.0 - alpha / 2.0);
    let z_b = normal_quantile(power);
    let pbar = (p1 + p2) / 2.0;
    let num =
        z_a * (2.0 * pbar * (1.0 - pbar)).sqrt() + z_b * (p1 * (1.0 - p1) + p2 * (1.0 - p2)).sqrt();
    num * num / ((p1 - p2) * (p1 - p2))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative closeness: both p-values agree to `tol` of the larger.
    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * a.abs().max(b.abs())
    }

    /// SciPy 1.17.1's `scipy.stats.fisher_exact(table, alternative='two-sided').pvalue` on each
    /// table, computed on this machine (`pip install scipy`) and copied here.
    const SCIPY: [((u64, u64, u64, u64), f64); 18] = [
        ((0, 0, 0, 0), 1.0),
        ((1, 9, 11, 3), 0.0027594561852200836),
        ((8, 2, 1, 5), 0.034965034965034975),
        ((0, 5, 5, 0), 0.007936507936507938),
        ((0, 10, 0, 10), 1.0),
        ((3, 97, 15, 85), 0.00519222290141669),
        ((5, 95, 20, 80), 0.002197232551984906),
        ((250, 350, 300, 310), 0.009378378090832059),
        ((412, 588, 455, 545), 0.05804569872768766),
        ((0, 75, 6, 69), 0.02816808278506959),
        ((1, 74, 9, 66), 0.017525655345899876),
        ((12, 63, 4, 71), 0.06135868159465148),
        ((0, 0, 5, 5), 1.0),
        ((7, 0, 0, 7), 0.0005827505827505828),
        ((150000, 50000, 149000, 51000), 0.0002771034521883403),
        ((100, 0, 0, 100), 2.208760693199503e-59),
        ((300, 0, 0, 300), 1.4802978791996796e-179),
        ((2, 30, 0, 40), 0.19405320813771518),
    ];

    #[test]
    fn fisher_p_values_equal_scipys_on_fixed_tables() {
        for ((a, b, c, d), want) in SCIPY {
            let got = fisher_exact_two_sided(a, b, c, d);
            assert!(
                close(got, want, 1e-9),
                "{:?}: {got} vs SciPy {want}",
                (a, b, c, d)
            );
        }
    }

    #[test]
    fn fisher_is_symmetric_in_rows_and_columns() {
        for ((a, b, c, d), _) in SCIPY {
            let p = fisher_exact_two_sided(a, b, c, d);
            assert!(close(p, fisher_exact_two_sided(c, d, a, b), 1e-9));
            assert!(close(p, fisher_exact_two_sided(b, a, d, c), 1e-9));
            assert!(close(p, fisher_exact_two_sided(a, c, b, d), 1e-9));
        }
    }

    #[test]
    fn the_normal_quantile_and_the_sample_size_equal_scipys() {
        // scipy.stats.norm.ppf
        for (p, want) in [
            (1e-10, -6.361340902404056),
            (0.001, -3.090232306167813),
            (0.02, -2.053748910631823),
            (0.3, -0.5244005127080409),
            (0.9, 1.2815515655446004),
            (0.975, 1.959963984540054),
            (0.999, 3.090232306167813),
        ] {
            assert!(close(normal_quantile(p), want, 2e-9), "{p}");
        }
        assert_eq!(normal_quantile(0.5), 0.0);
        // The same formula evaluated with SciPy's quantiles: 75.11873016333453; the design's
        // minimum of 75 per group is this, rounded down.
        let n = sample_size_two_proportions(0.05, 0.20, 0.05, 0.80);
        assert!(close(n, 75.11873016333453, 1e-8), "{n}");
    }

    #[test]
    fn mean_and_percentiles_match_numpy() {
        let v = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        assert_eq!(mean(&v), Some(3.875));
        // numpy.percentile(v, 95)
        assert!(close(quantile(&v, 0.95).unwrap(), 7.949999999999998, 1e-12));
        assert_eq!(quantile(&v, 1.0), Some(9.0));
        assert_eq!(mean(&[]), None);
        assert_eq!(quantile(&[], 0.5), None);
    }
}
