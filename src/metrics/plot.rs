//! `guidebook metrics report`'s picture: the weekly trend against the baseline (QC pass rate,
//! prompt tokens per phase, false-negative rate per A/B group) drawn as one SVG with plotters.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::ab::AbReport;
use super::MetricsFile;

/// One point per weekly file, labelled by its date.
pub struct Trend<'a> {
    pub baseline: &'a MetricsFile,
    pub weeks: &'a [MetricsFile],
    pub ab: &'a [AbReport],
}

/// The mean over every `<team>_lv<level>` of one phase's mean tokens.
fn phase_tokens(file: &MetricsFile, phase: &str) -> Option<f64> {
    let v: Vec<f64> = file
        .data
        .build_prompt_tokens
        .values()
        .filter_map(|p| p.get(phase).copied().flatten())
        .collect();
    super::stats::mean(&v)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One labelled series: a line through `points` with a dot at each.
fn line_with_points<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    points: &[(f64, f64)],
    color: RGBColor,
    label: &str,
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(points.to_vec(), color.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label(label)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The chart's legend box.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> Result<(), String> {
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| e.to_string())
}

const PHASES: [(&str, RGBColor); 3] = [
    ("summary", RGBColor(31, 119, 180)),
    ("standard", RGBColor(255, 127, 14)),
    ("full", RGBColor(44, 160, 44)),
];

/// Draws the trend into `out` (an SVG file).
pub fn draw(trend: &Trend, out: &Path) -> Result<(), String> {
    let root = SVGBackend::new(out, (900, 960)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(
            &format!(
                "Adaptive Guidebook rollout: weekly figures against the baseline of {}",
                trend.baseline.measurement_date
            ),
            ("sans-serif", 20),
        )
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((3, 1));
    let n = trend.weeks.len().max(1) as f64;
    let labels: Vec<String> = trend
        .weeks
        .iter()
        .map(|w| w.measurement_date.clone())
        .collect();
    let x_label = |x: &f64| {
        let i = x.round() as usize;
        if (x - x.round()).abs() < 1e-9 && i >= 1 && i <= labels.len() {
            labels[i - 1].clone()
        } else {
            String::new()
        }
    };
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();

    // QC pass rate, percent.
    let mut chart = ChartBuilder::on(&panels[0])
        .caption("QC pass rate (%)", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.5..n + 0.5, 0.0..100.0)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(trend.weeks.len().clamp(1, 12))
        .x_label_formatter(&x_label)
        .draw()
        .map_err(e)?;
    if let Some(b) = trend.baseline.data.qc_pass_rate.last_30d {
        chart
            .draw_series(LineSeries::new(
                [(0.5, b * 100.0), (n + 0.5, b * 100.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(e)?
            .label("baseline")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    }
    let rate: Vec<(f64, f64)> = trend
        .weeks
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let week = w
                .data
                .qc_pass_rate
                .rest
                .get("last_7d")
                .and_then(|v| v.as_f64());
            week.or(w.data.qc_pass_rate.last_30d)
                .map(|r| (i as f64 + 1.0, r * 100.0))
        })
        .collect();
    line_with_points(&mut chart, &rate, RED, "week")?;
    legend(&mut chart)?;

    // Prompt tokens per phase.
    let max_tokens = std::iter::once(trend.baseline)
        .chain(trend.weeks.iter())
        .filter_map(|f| phase_tokens(f, "full"))
        .fold(100.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&panels[1])
        .caption(
            "buildPrompt tokens per phase (dashed: baseline)",
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.5..n + 0.5, 0.0..max_tokens)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(trend.weeks.len().clamp(1, 12))
        .x_label_formatter(&x_label)
        .draw()
        .map_err(e)?;
    for (phase, color) in PHASES {
        if let Some(b) = phase_tokens(trend.baseline, phase) {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.5, b), (n + 0.5, b)],
                    6,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(e)?;
        }
        let points: Vec<(f64, f64)> = trend
            .weeks
            .iter()
            .enumerate()
            .filter_map(|(i, w)| phase_tokens(w, phase).map(|t| (i as f64 + 1.0, t)))
            .collect();
        line_with_points(&mut chart, &points, color, phase)?;
    }
    legend(&mut chart)?;

    // False-negative rate per A/B group, by test week.
    let weeks = trend.ab.iter().map(|r| r.week).max().unwrap_or(1) as f64;
    let mut chart = ChartBuilder::on(&panels[2])
        .caption(
            "QC false-negative rate per A/B group (%), by test week",
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.5..weeks + 0.5, 0.0..50.0)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(trend.ab.len().clamp(1, 12))
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-9 && *x >= 1.0 {
                format!("week {}", x.round())
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(e)?;
    for (name, color, pick) in [
        (
            "haiku",
            RGBColor(148, 103, 189),
            (|r: &AbReport| r.haiku.false_negative_rate) as fn(&AbReport) -> Option<f64>,
        ),
        ("sonnet", RGBColor(140, 86, 75), |r: &AbReport| {
            r.sonnet.false_negative_rate
        }),
    ] {
        let points: Vec<(f64, f64)> = trend
            .ab
            .iter()
            .filter_map(|r| pick(r).map(|v| (r.week as f64, v * 100.0)))
            .collect();
        line_with_points(&mut chart, &points, color, name)?;
    }
    legend(&mut chart)?;
    root.present().map_err(|e| e.to_string())
}
