//! `guidebook report`'s page: the adherence report as one self-contained HTML file (inline CSS
//! and SVG drawn with plotters; no script, no font, nothing fetched).

use std::fmt::Write as _;

use plotters::prelude::*;

use super::ab::format_p;
use super::adherence::{AdherenceReport, DayRow};

/// Text as HTML: `&`, `<`, `>`, `"` and `'` escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn pct(share: Option<f64>) -> String {
    share.map_or("–".into(), |s| format!("{:.0} %", s * 100.0))
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#57606a;margin-top:0}
table{border-collapse:collapse;font-size:.9rem;width:100%}
th,td{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:right;vertical-align:top}
th{background:#f6f8fa;position:sticky;top:0}
td.id,th.id{text-align:left;font-family:ui-monospace,monospace;white-space:nowrap}
td.verdict,th.verdict{text-align:left;max-width:32rem}
td.verdict{color:#57606a;font-size:.8rem}
tr.ignored td.id{color:#cf222e}
.cards{display:flex;gap:1rem;flex-wrap:wrap}
.card{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem;min-width:9rem}
.card b{display:block;font-size:1.4rem}
svg{max-width:100%;height:auto}
";

/// The whole page.
pub fn page(report: &AdherenceReport) -> String {
    let mut h = String::with_capacity(16_384 + report.guidelines.len() * 600);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>Adaptive Guidebook: does the guidebook work?</title><style>{STYLE}</style>\
         </head><body>\n<h1>Does the guidebook work?</h1>\n<p class=\"meta\">{} · generated {} \
         · outcomes as defined in docs/guide/adherence.md</p>\n",
        match (&report.since, report.instances) {
            (Some(s), Some(n)) => format!("the team: {n} sidecars, since {}", escape(s)),
            (None, Some(n)) => format!("the team: {n} sidecars, everything pushed"),
            (Some(s), None) => format!("since {}", escape(s)),
            (None, None) => "everything recorded".into(),
        },
        escape(&report.generated_at)
    );
    let total = |f: &dyn Fn(&super::adherence::GuidelineRow) -> u64| -> u64 {
        report.guidelines.iter().map(f).sum()
    };
    let cards = [
        ("sessions", report.sessions),
        ("hold-out sessions", report.holdout_sessions),
        ("fires", total(&|g| g.fires)),
        ("presentations", total(&|g| g.shown.presentations)),
        ("followed", total(&|g| g.shown.followed)),
        ("repeated", total(&|g| g.shown.repeated)),
        ("corrected", total(&|g| g.corrected)),
    ];
    h.push_str("<div class=\"cards\" id=\"totals\">");
    for (name, n) in cards {
        let _ = write!(h, "<div class=\"card\"><b>{n}</b>{name}</div>");
    }
    h.push_str("</div>\n");
    h.push_str("<h2>Guidelines, noisiest first</h2>\n");
    if report.guidelines.is_empty() {
        h.push_str("<p id=\"empty\">Nothing recorded yet: no search matched a guideline.</p>\n");
    }
    h.push_str(
        "<table id=\"guidelines\"><thead><tr><th class=\"id\">guideline</th><th>fires</th>\
         <th>on written lines</th><th>presentations</th><th>followed</th><th>repeated</th>\
         <th>no evidence</th><th>ignored</th><th>blocks</th><th>corrected</th>\
         <th>allowances</th><th>hold-out p</th><th class=\"verdict\">hold-out verdict</th>\
         </tr></thead><tbody>\n",
    );
    for g in &report.guidelines {
        let ignored = report.most_ignored.contains(&g.id);
        let _ = writeln!(
            h,
            "<tr{}><td class=\"id\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"verdict\">{}</td></tr>",
            if ignored { " class=\"ignored\"" } else { "" },
            escape(&g.id),
            g.fires,
            pct(g.written_share),
            g.shown.presentations,
            g.shown.followed,
            g.shown.repeated,
            g.shown.no_evidence,
            pct(g.ignored_share),
            g.blocks,
            g.corrected,
            g.allowances,
            format_p(g.holdout.fisher_exact_p_two_sided),
            escape(&g.holdout.verdict),
        );
    }
    h.push_str("</tbody></table>\n<h2>Most ignored</h2>\n");
    if report.most_ignored.is_empty() {
        h.push_str("<p>No presentation was repeated.</p>\n");
    } else {
        h.push_str("<ol id=\"most-ignored\">");
        for id in &report.most_ignored {
            let _ = write!(h, "<li><code>{}</code></li>", escape(id));
        }
        h.push_str("</ol>\n");
    }
    h.push_str("<h2>Trend</h2>\n");
    match trend_svg(&report.days) {
        Ok(svg) => h.push_str(&svg),
        Err(e) => {
            let _ = write!(h, "<p>No trend: {}</p>", escape(&e));
        }
    }
    h.push_str("\n</body></html>\n");
    h
}

/// A line of the trend: its name, colour and figure of a day.
type Series = (&'static str, RGBColor, fn(&DayRow) -> u64);

/// The daily trend (presentations and their outcomes, fires) as an inline SVG.
pub fn trend_svg(days: &[DayRow]) -> Result<String, String> {
    if days.is_empty() {
        return Err("nothing recorded yet".into());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (top, bottom) = root.split_vertically(300);
        let n = days.len();
        let x_max = (n.max(2) - 1) as f64;
        let label = |x: &f64| {
            let i = x.round() as usize;
            if (x - x.round()).abs() < 1e-6 && i < n {
                days[i].date.clone()
            } else {
                String::new()
            }
        };
        let series: [Series; 4] = [
            ("presentations", RGBColor(31, 119, 180), |d| d.presentations),
            ("followed", RGBColor(44, 160, 44), |d| d.followed),
            ("repeated", RGBColor(214, 39, 40), |d| d.repeated),
            ("corrected", RGBColor(148, 103, 189), |d| d.corrected),
        ];
        let y_max = days
            .iter()
            .flat_map(|d| series.iter().map(move |(_, _, f)| f(d)))
            .max()
            .unwrap_or(0)
            .max(1) as f64;
        let mut chart = ChartBuilder::on(&top)
            .caption(
                "Presentations per day and what came of them",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max * 1.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_labels(n.min(8))
            .x_label_formatter(&label)
            .draw()
            .map_err(|e| e.to_string())?;
        for (name, color, f) in series {
            let points: Vec<(f64, f64)> = days
                .iter()
                .enumerate()
                .map(|(i, d)| (i as f64, f(d) as f64))
                .collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| e.to_string())?;
        let fires_max = days.iter().map(|d| d.fires).max().unwrap_or(0).max(1) as f64;
        let mut chart = ChartBuilder::on(&bottom)
            .caption(
                "Fires per day (files a guideline matched)",
                ("sans-serif", 18),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0f64..x_max, 0f64..fires_max * 1.1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_labels(n.min(8))
            .x_label_formatter(&label)
            .draw()
            .map_err(|e| e.to_string())?;
        let points: Vec<(f64, f64)> = days
            .iter()
            .enumerate()
            .map(|(i, d)| (i as f64, d.fires as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(
                points,
                RGBColor(255, 127, 14).stroke_width(2),
            ))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::adherence::{Aggregate, Event, FileRecord};

    #[test]
    fn the_page_is_self_contained_and_escapes_what_it_shows() {
        let mut agg = Aggregate::default();
        let f = |m: &[&str], p: &[&str]| FileRecord {
            path: "/a.kt".into(),
            matched: m.iter().map(|s| s.to_string()).collect(),
            presented: p.iter().map(|s| s.to_string()).collect(),
            allowed: vec![],
            whole: false,
        };
        let id = "repo:<b>x</b>";
        agg.session(&[
            Event::Search {
                at: 1_780_000_000,
                holdout: false,
                files: vec![f(&[id], &[id])],
            },
            Event::Search {
                at: 1_780_090_000,
                holdout: false,
                files: vec![f(&[id], &[])],
            },
        ]);
        let page = page(&agg.report(Some("2026-01-01".into()), "now".into()));
        assert!(page.contains("<table id=\"guidelines\">"));
        assert!(page.contains("repo:&lt;b&gt;x&lt;/b&gt;"), "{page}");
        assert!(!page.contains("<b>x</b>"));
        assert!(page.contains("<svg"), "the trend is inline");
        for outside in [
            "<script",
            "<link",
            "src=\"http",
            "href=\"http",
            "@import",
            "url(",
        ] {
            assert!(!page.contains(outside), "{outside}");
        }
    }
}
