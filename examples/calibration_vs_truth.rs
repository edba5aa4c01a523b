//! The fitted belief against the correlated world's exact posterior B*: a probe, not a test
//! (docs/results/2026-12-01-feature-model.md).
//!
//!     cargo run --release --example calibration_vs_truth -- [SESSIONS] [TRAIN_EVERY] [SEEDS] [SIDE] [MODEL]
//!
//! Defaults 8000 4 1,2,3 few features: the split of `tests/sim/time_calibration.rs` (one
//! task in four trains, the rest are held out by task). SIDE `many` trains on all but one
//! task in TRAIN_EVERY. MODEL `naive` fits the naive-Bayes sum instead. For each seed and
//! each of ticks 100, 1,000 and 2,000 it prints one line: the held-out slope (and B*'s own
//! slope on the same sessions, 1 in expectation: its spread is the slope's noise); the fitted
//! belief's equal-mass ECE against labels beside the calibrated-null floor's 95 % interval;
//! the same for B* (calibrated by construction: how often would a perfect judge pass?);
//! and, with no label noise, the fitted belief's ECE against B*, its slope against B* and
//! its mean
//! |logit B − logit B*|. With TENTHS set, each tenth of the forecasts as mean B / mean B*.

use handoff::competence::calibrator::logit;
use handoff::competence::{BeliefModel, FitOptions, fit};
use handoff::competence::{CalibrationMap, MapKind, ScoreRow};
use handoff::sim::CorrelatedWorld;
use handoff::sim::time_calibration::{
    TruthCell, score_at_ticks, score_cells, split_by_task, truth_cells,
};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("argument {i}: cannot read {a:?}");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let total: usize = arg(1, 8000);
    let every: usize = arg(2, 4);
    let seeds: String = arg(3, "1,2,3".to_string());
    let many = match arg(4, "few".to_string()).as_str() {
        "few" => false,
        "many" => true,
        other => {
            eprintln!("argument 4: expected few or many, got {other:?}");
            std::process::exit(2)
        }
    };
    let model = match arg(5, "features".to_string()).as_str() {
        "features" => BeliefModel::Features,
        "naive" => BeliefModel::NaiveBayes,
        other => {
            eprintln!("argument 5: expected features or naive, got {other:?}");
            std::process::exit(2)
        }
    };
    let verbose = std::env::var_os("TENTHS").is_some();
    let fresh: usize = std::env::var("FRESH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let world = CorrelatedWorld::default();
    let ticks = [100, 1000, 2000];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for seed in seeds
        .split(',')
        .filter_map(|s| s.trim().parse::<u64>().ok())
    {
        let sessions = world.sessions(total, seed);
        let (few, rest) = split_by_task(&sessions, every);
        let (train, held) = if many { (rest, few) } else { (few, rest) };
        let data: Vec<_> = train.iter().map(|s| s.trajectory.clone()).collect();
        let options = FitOptions {
            model,
            ..FitOptions::default()
        };
        let cal = match fit(&data, &options) {
            Ok((c, _)) => c,
            Err(e) => {
                eprintln!("seed {seed}: fit failed: {e}");
                continue;
            }
        };
        println!("seed {seed}: {}", cal.source);
        let labels = score_at_ticks(&cal, &held, &ticks, 200);
        let held_cells = truth_cells(&cal, &world, &held, &ticks, threads);
        let truth = score_cells(&held_cells, &ticks, 200);
        for (l, t) in labels.iter().zip(&truth) {
            let interval = |f: Option<handoff::metrics::Interval>| {
                f.map_or("-".into(), |f| format!("[{:.4}, {:.4}]", f.lower, f.upper))
            };
            let inside = |e: Option<f64>, f: Option<handoff::metrics::Interval>| match (e, f) {
                (Some(e), Some(f)) if e <= f.upper => "in",
                (Some(_), Some(_)) => "OUT",
                _ => "-",
            };
            println!(
                "seed {seed} train {} held {} tick {:>4} n {:>4}: slope {:.3} (B* {:.3})  ECE {:.4} {} {:<3}  B* ECE {:.4} {} {:<3}  ECE vs B* {:.4}  slope vs B* {:.3}  |logit gap| {:.3}",
                train.len(),
                held.len(),
                l.tick,
                l.n,
                l.slope.unwrap_or(f64::NAN),
                t.exact_slope.unwrap_or(f64::NAN),
                l.ece_mass10.unwrap_or(f64::NAN),
                interval(l.ece_floor),
                inside(l.ece_mass10, l.ece_floor),
                t.exact_ece.unwrap_or(f64::NAN),
                interval(t.exact_floor),
                inside(t.exact_ece, t.exact_floor),
                t.ece_vs_truth.unwrap_or(f64::NAN),
                t.slope_vs_truth.unwrap_or(f64::NAN),
                t.mean_logit_gap,
            );
            if verbose {
                let cells: Vec<String> = t
                    .tenths
                    .iter()
                    .map(|(b, x)| format!("{b:.3}/{x:.3}"))
                    .collect();
                println!("    tenths, mean B / mean B*: {}", cells.join(" "));
            }
        }
        // Would a monotone map of the fitted belief, learned from labels on ample fresh
        // sessions at each tick, remove the error? (FRESH=n sessions.)
        if fresh > 0 {
            let sessions = world.sessions(fresh, seed + 100);
            let refs: Vec<_> = sessions.iter().collect();
            let fresh_cells = truth_cells(&cal, &world, &refs, &ticks, threads);
            let l = |p: f64| logit(p.clamp(1e-9, 1.0 - 1e-9));
            let mapped: Vec<Vec<TruthCell>> = fresh_cells
                .iter()
                .zip(&held_cells)
                .map(|(f, h)| {
                    let rows: Vec<ScoreRow> = f
                        .iter()
                        .map(|c| ScoreRow::new(l(c.fitted), c.label))
                        .collect();
                    match CalibrationMap::fit(MapKind::Isotonic, &rows) {
                        Ok(m) => h
                            .iter()
                            .map(|c| TruthCell {
                                fitted: m.apply(l(c.fitted)),
                                ..*c
                            })
                            .collect(),
                        Err(_) => h.clone(),
                    }
                })
                .collect();
            for t in score_cells(&mapped, &ticks, 200) {
                println!(
                    "    isotonic on {fresh} fresh, tick {:>4}: ECE vs B* {:.4}  |logit gap| {:.3}",
                    t.tick,
                    t.ece_vs_truth.unwrap_or(f64::NAN),
                    t.mean_logit_gap
                );
            }
        }
    }
}
