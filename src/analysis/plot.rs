//! SVG pictures of a fitted judge: the reliability diagram (does B = 0.7 come true 70 % of
//! the time?), held-out belief traces (does the belief part successes from failures, and
//! how early?) and AUROC over the trajectory with its intervals. SVG because it needs no fonts or native libraries and opens anywhere.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::metrics::ReliabilityBin;

/// Most traces drawn; more only make ink.
const MAX_TRACES: usize = 60;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: {message}")]
    Draw { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn draw_error(path: &Path) -> impl Fn(String) -> PlotError + '_ {
    move |message| PlotError::Draw {
        path: path.to_path_buf(),
        message,
    }
}

type UnitChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A white canvas with a titled, labelled [0, 1] × [0, 1] chart on it: both plots are
/// probabilities against probabilities.
fn unit_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x: &str,
    y: &str,
) -> Result<UnitChart<'a, 'b>, String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(48)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x)
        .y_desc(y)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

/// The reliability diagram: one point per bin (mean belief, observed success rate), sized
/// by its count, against the diagonal of perfect calibration.
pub fn reliability(path: &Path, bins: &[ReliabilityBin], title: &str) -> Result<(), PlotError> {
    let err = draw_error(path);
    let root = SVGBackend::new(path, (640, 560)).into_drawing_area();
    let mut chart = unit_chart(
        &root,
        title,
        "mean belief B in bin",
        "observed success rate",
    )
    .map_err(&err)?;
    chart
        .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.4)))
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(LineSeries::new(
            bins.iter().map(|b| (b.confidence, b.accuracy)),
            BLUE.stroke_width(2),
        ))
        .map_err(|e| err(e.to_string()))?;
    let most = bins.iter().map(|b| b.count).max().unwrap_or(1).max(1) as f64;
    chart
        .draw_series(bins.iter().map(|b| {
            let r = 3.0 + 7.0 * (b.count as f64 / most).sqrt();
            Circle::new((b.confidence, b.accuracy), r as i32, BLUE.filled())
        }))
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Belief paths of held-out sessions against the fraction of each trajectory: successes in
/// green, failures in red (the first [`MAX_TRACES`] of each kind).
pub fn traces(path: &Path, traces: &[(Vec<f64>, bool)], title: &str) -> Result<(), PlotError> {
    let err = draw_error(path);
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let mut chart =
        unit_chart(&root, title, "fraction of the trajectory", "belief B_t").map_err(&err)?;
    for label in [true, false] {
        let color = if label { GREEN.mix(0.5) } else { RED.mix(0.5) };
        for (path_b, _) in traces
            .iter()
            .filter(|(_, l)| *l == label)
            .take(MAX_TRACES / 2)
        {
            let n = path_b.len().saturating_sub(1).max(1) as f64;
            chart
                .draw_series(LineSeries::new(
                    path_b.iter().enumerate().map(|(i, &b)| (i as f64 / n, b)),
                    color,
                ))
                .map_err(|e| err(e.to_string()))?;
        }
    }
    root.present().map_err(|e| err(e.to_string()))
}

/// One judge's held-out AUROC at each fraction of the trajectory, for [`auroc_over_trajectory`]:
/// `(fraction, AUROC, interval)`; points without an AUROC are left out.
pub type AurocSeries = (String, Vec<(f64, f64, Option<(f64, f64)>)>);

/// AUROC against the fraction of the trajectory seen, one line per judge with its 95 %
/// intervals as bars and 0.5 (no information) dashed: how early does a judge tell
/// successes from failures?
pub fn auroc_over_trajectory(
    path: &Path,
    series: &[AurocSeries],
    title: &str,
) -> Result<(), PlotError> {
    let err = draw_error(path);
    let root = SVGBackend::new(path, (720, 480)).into_drawing_area();
    let mut chart = unit_chart(
        &root,
        title,
        "fraction of the trajectory seen",
        "held-out AUROC",
    )
    .map_err(&err)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(0.0, 0.5), (1.0, 0.5)],
            6,
            4,
            BLACK.mix(0.4).into(),
        ))
        .map_err(|e| err(e.to_string()))?;
    let colors = [BLUE, RED, GREEN, MAGENTA];
    for (k, (name, points)) in series.iter().enumerate() {
        let color = colors[k % colors.len()];
        // Side by side: each judge's bars a little apart so the intervals stay readable.
        let dx = (k as f64 - (series.len() as f64 - 1.0) / 2.0) * 0.01;
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(f, a, _)| (f + dx, a)),
                color.stroke_width(2),
            ))
            .map_err(|e| err(e.to_string()))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart
            .draw_series(points.iter().filter_map(|&(f, _, ci)| {
                ci.map(|(lo, hi)| PathElement::new(vec![(f + dx, lo), (f + dx, hi)], color))
            }))
            .map_err(|e| err(e.to_string()))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Writes `reliability.svg`, `traces.svg` and (when a judge has an AUROC) `auroc.svg` into
/// `dir` (created if missing).
pub fn write_all(
    dir: &Path,
    bins: &[ReliabilityBin],
    belief_traces: &[(Vec<f64>, bool)],
    auroc_series: &[AurocSeries],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let rel = dir.join("reliability.svg");
    let tr = dir.join("traces.svg");
    reliability(
        &rel,
        bins,
        "Reliability on held-out sessions (10 equal-mass bins)",
    )?;
    traces(
        &tr,
        belief_traces,
        "Held-out belief traces (green: success, red: failure)",
    )?;
    let mut written = vec![rel, tr];
    if auroc_series.iter().any(|(_, p)| !p.is_empty()) {
        let au = dir.join("auroc.svg");
        auroc_over_trajectory(
            &au,
            auroc_series,
            "Held-out AUROC over the trajectory (bars: 95% over tasks)",
        )?;
        written.push(au);
    }
    Ok(written)
}

/// The cascade's frontiers: accuracy against compute (a multiple of the junior alone's;
/// `input_too` picks input + output over output tokens), one line per swept policy, the
/// single policies as labelled points.
pub fn cascade(
    path: &Path,
    points: &[super::cascade::Point],
    input_too: bool,
) -> Result<(), PlotError> {
    let err = draw_error(path);
    let x = |p: &super::cascade::Point| {
        if input_too {
            p.relative_all
        } else {
            p.relative_out
        }
    };
    let x_hi = points
        .iter()
        .map(x)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let tokens = if input_too {
        "input + output"
    } else {
        "output"
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("cascade frontiers ({tokens} tokens)"),
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(48)
        .build_cartesian_2d(0f64..x_hi, 0f64..1f64)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("compute, × the junior alone's (junior-token equivalents)")
        .y_desc("accuracy")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    let families = [
        ("streaming, constant τ", BLUE),
        ("streaming, optimal schedule", GREEN),
        ("post-hoc", RED),
    ];
    for (name, color) in families {
        let mut line: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.policy == name && x(p).is_finite())
            .map(|p| (x(p), p.accuracy.estimate))
            .collect();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
            .map_err(|e| err(e.to_string()))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart
            .draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| err(e.to_string()))?;
    }
    let singles: Vec<&super::cascade::Point> =
        points.iter().filter(|p| p.parameter.is_none()).collect();
    chart
        .draw_series(singles.iter().map(|p| {
            EmptyElement::at((x(p), p.accuracy.estimate))
                + Circle::new((0, 0), 5, BLACK.filled())
                + Text::new(p.policy.clone(), (6, -12), ("sans-serif", 12).into_font())
        }))
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}
