//! The study as SVG plots (plotters): the cost–accuracy frontier, accuracy and escalation
//! under contamination, and the sample complexity of a learned judge on log–log axes.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::SimError;
use super::report::Study;

const SIZE: (u32, u32) = (900, 600);
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn plot_error(path: &Path, e: impl std::fmt::Display) -> SimError {
    SimError::Invalid(format!("plotting {}: {e}", path.display()))
}

/// Writes `frontier.svg`, `contamination.svg` and `sample_complexity.svg` into `dir`
/// (created if missing); returns their paths.
pub fn write_all(study: &Study, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    std::fs::create_dir_all(dir).map_err(|source| SimError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let paths = [
        dir.join("frontier.svg"),
        dir.join("contamination.svg"),
        dir.join("sample_complexity.svg"),
    ];
    frontier(study, &paths[0]).map_err(|e| plot_error(&paths[0], e))?;
    contamination(study, &paths[1]).map_err(|e| plot_error(&paths[1], e))?;
    sample_complexity(study, &paths[2]).map_err(|e| plot_error(&paths[2], e))?;
    Ok(paths.to_vec())
}

type Drawn = Result<(), Box<dyn std::error::Error>>;
/// A named curve: its legend and how to read its value from a row.
type Curve<R> = (&'static str, fn(&R) -> f64);

/// (lo, hi) of the values, widened a little and never empty.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-3);
    (lo - pad, hi + pad)
}

/// The legend box every plot draws.
fn legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>, at: SeriesLabelPosition) -> Drawn
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn frontier(study: &Study, path: &Path) -> Drawn {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let all = || {
        study
            .frontiers
            .values()
            .flatten()
            .copied()
            .chain(study.policies.iter().map(|p| [p.cost, p.accuracy]))
    };
    let (x0, x1) = span(all().map(|p| p[0]));
    let (y0, y1) = span(all().map(|p| p[1]));
    let mut chart = ChartBuilder::on(&root)
        .caption("Cost–accuracy frontier", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc("mean cost per query")
        .y_desc("accuracy")
        .draw()?;
    for (k, (name, points)) in study.frontiers.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let mut sorted = points.clone();
        sorted.sort_by(|a, b| a[0].total_cmp(&b[0]));
        chart
            .draw_series(LineSeries::new(
                sorted.iter().map(|p| (p[0], p[1])),
                colour.stroke_width(2),
            ))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    for (k, p) in study
        .policies
        .iter()
        .filter(|p| ["never", "always", "oracle"].contains(&p.name.as_str()))
        .enumerate()
    {
        let colour = COLOURS[(study.frontiers.len() + k) % COLOURS.len()];
        chart
            .draw_series(std::iter::once(Circle::new(
                (p.cost, p.accuracy),
                6,
                colour.filled(),
            )))?
            .label(p.name.as_str())
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, colour.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present()?;
    Ok(())
}

fn contamination(study: &Study, path: &Path) -> Drawn {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let rows = &study.contamination;
    let (x0, x1) = span(rows.iter().map(|r| r.rho));
    let (y0, y1) = span(
        rows.iter()
            .flat_map(|r| [r.accuracy, r.escalation_rate])
            .chain([0.0]),
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Confidently wrong: failures drawn from the success law",
            ("sans-serif", 24),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1.max(1.0))?;
    chart
        .configure_mesh()
        .x_desc("contamination ρ")
        .y_desc("rate (optimal policy)")
        .draw()?;
    let series: [Curve<super::report::ContaminationRow>; 2] = [
        ("accuracy", |r| r.accuracy),
        ("escalation rate", |r| r.escalation_rate),
    ];
    for (k, (name, value)) in series.into_iter().enumerate() {
        let colour = COLOURS[k];
        chart
            .draw_series(LineSeries::new(
                rows.iter().map(|r| (r.rho, value(r))),
                colour.stroke_width(2),
            ))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        chart.draw_series(
            rows.iter()
                .map(|r| Circle::new((r.rho, value(r)), 5, colour.filled())),
        )?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

fn sample_complexity(study: &Study, path: &Path) -> Drawn {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let rows = &study.sample_complexity;
    let positive = |v: f64| (v > 0.0).then_some(v);
    let ns = || rows.iter().map(|r| r.n as f64);
    let (x0, x1) = (
        ns().fold(f64::INFINITY, f64::min).max(1.0) * 0.8,
        ns().fold(1.0, f64::max) * 1.25,
    );
    let ys: Vec<f64> = rows
        .iter()
        .flat_map(|r| [positive(r.belief_error), positive(r.regret)])
        .flatten()
        .collect();
    let y0 = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let y1 = ys.iter().copied().fold(0.0, f64::max);
    let (y0, y1) = if y0.is_finite() && y1 > y0 {
        (y0 * 0.7, y1 * 1.4)
    } else {
        (1e-4, 1.0)
    };
    let slope = |s: Option<f64>| s.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Learned judge vs truth (belief-error slope {}, regret exponent {}; regrets ≤ 0 not drawn)",
                slope(study.slope.belief_error),
                slope(study.slope.regret_power)
            ),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("labelled trajectories n")
        .y_desc("error (log scale)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.4}"))
        .draw()?;
    let series: [Curve<super::report::SampleRow>; 2] = [
        ("mean |B̂ − B|", |r| r.belief_error),
        ("regret vs true-likelihood DP", |r| r.regret),
    ];
    for (k, (name, value)) in series.into_iter().enumerate() {
        let colour = COLOURS[k];
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| positive(value(r)).map(|v| (r.n as f64, v)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 5, colour.filled())),
        )?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}
