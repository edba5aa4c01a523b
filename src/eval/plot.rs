//! SVG plots of an evaluation: the cost–accuracy plane with its frontier, and the
//! performance-gap-recovered curve whose area is APGR.

use std::path::Path;

use plotters::prelude::*;

use super::report::GapReport;
use crate::metrics::CostAccuracyCurve;

#[derive(Debug, thiserror::Error)]
#[error("cannot draw {path}: {message}")]
pub struct PlotError {
    pub path: String,
    pub message: String,
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

fn wrap(path: &Path, r: Drawn) -> Result<(), PlotError> {
    r.map_err(|e| PlotError {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Every policy as a point, the frontier as a line, each point labelled.
pub fn frontier_svg(curve: &CostAccuracyCurve, path: &Path) -> Result<(), PlotError> {
    wrap(path, draw_frontier(curve, path))
}

fn draw_frontier(curve: &CostAccuracyCurve, path: &Path) -> Drawn {
    let root = SVGBackend::new(path, (760, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_cost = curve.points.iter().map(|p| p.cost).fold(0.0, f64::max);
    let x_hi = if max_cost > 0.0 { max_cost * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption("cost and accuracy per policy", ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..x_hi, 0.0..1.05)?;
    chart
        .configure_mesh()
        .x_desc("mean cost per task (USD)")
        .y_desc("accuracy")
        .draw()?;
    chart.draw_series(LineSeries::new(
        curve.frontier.iter().map(|p| (p.cost, p.accuracy)),
        RED.stroke_width(2),
    ))?;
    chart.draw_series(
        curve
            .points
            .iter()
            .map(|p| Circle::new((p.cost, p.accuracy), 4, BLUE.filled())),
    )?;
    chart.draw_series(curve.points.iter().map(|p| {
        Text::new(
            p.label.clone(),
            (p.cost, p.accuracy),
            ("sans-serif", 11).into_font(),
        )
    }))?;
    root.present()?;
    Ok(())
}

/// PGR against normalised cost, with the diagonal of random mixing for reference.
pub fn gap_svg(gap: &GapReport, path: &Path) -> Result<(), PlotError> {
    wrap(path, draw_gap(gap, path))
}

fn draw_gap(gap: &GapReport, path: &Path) -> Drawn {
    let root = SVGBackend::new(path, (640, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let lo = gap.knots.iter().map(|k| k.1).fold(0.0, f64::min).min(0.0);
    let hi = gap.knots.iter().map(|k| k.1).fold(1.0, f64::max);
    let caption = format!("performance gap recovered (APGR {:.3})", gap.apgr);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..1.0, (lo - 0.05)..(hi + 0.05))?;
    chart
        .configure_mesh()
        .x_desc("cost (0 = junior only, 1 = senior only)")
        .y_desc("PGR")
        .draw()?;
    chart.draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.3)))?;
    chart.draw_series(LineSeries::new(
        gap.knots.iter().copied(),
        RED.stroke_width(2),
    ))?;
    chart.draw_series(gap.knots.iter().map(|&k| Circle::new(k, 3, RED.filled())))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CostAccuracyPoint, cost_accuracy_curve};

    #[test]
    fn the_frontier_plot_labels_every_policy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.svg");
        let curve = cost_accuracy_curve(vec![
            CostAccuracyPoint::new("junior-only", 0.01, 0.4),
            CostAccuracyPoint::new("tau-0.50", 0.03, 0.8),
            CostAccuracyPoint::new("senior-only", 0.2, 0.9),
        ]);
        frontier_svg(&curve, &path).expect("drawn");
        let svg = std::fs::read_to_string(&path).expect("read");
        for label in ["junior-only", "tau-0.50", "senior-only", "accuracy"] {
            assert!(svg.contains(label), "{label} missing");
        }
        assert_eq!(svg.matches("<circle").count(), 3);
    }
}
