//! Why the feature belief's ECE stays above the noise floor on the correlated world: a
//! probe, not a test (README "Long, dependent sessions").
//!
//!     cargo run --release --example time_calibration_probe -- [SESSIONS] [TRAIN_EVERY] [SEEDS] [SIDE] [FRESH]
//!
//! (about 1.6 min for the defaults on one core: most of it scores the 20,000 fresh sessions)
//!
//! Defaults 8000 4 1,2,3 few 20000: the split of `tests/sim/time_calibration.rs` (one task
//! in four trains). SIDE `many` swaps the sides (all but one task in TRAIN_EVERY train), so
//! the training set can grow while the held-out set, and with it the noise floor, stays
//! put: `32000 4 1,2,3 many 0` trains on 24,000 sessions and holds out 8,000 (a learning
//! curve: how much of the ECE above the floor is the fit's estimation error). FRESH 0 skips
//! the isotonic map. For each seed it prints, at ticks 100, 1,000 and 2,000, the held-out slope, the
//! equal-mass ECE beside the calibrated-null floor's 95 % interval, and the ECE after an
//! isotonic map of the fitted belief learned on 20,000 fresh sessions at that tick (does a
//! monotone reshaping of the belief, given ample data, reach the floor?), then the
//! reliability of each tenth of the held-out forecasts (mean forecast / share succeeded).

use handoff::competence::calibrator::logit;
use handoff::competence::{
    BeliefModel, Calibration, CalibrationMap, FitOptions, MapKind, ScoreRow, fit,
};
use handoff::metrics::{Binning, Forecast, ece};
use handoff::sim::time_calibration::{score_at_ticks, split_by_task};
use handoff::sim::{CorrelatedSession, CorrelatedWorld};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        None => default,
        Some(a) => a.parse().unwrap_or_else(|_| {
            eprintln!("argument {i}: cannot read {a:?}");
            std::process::exit(2)
        }),
    }
}

/// (belief, label) of every labelled session still running at each tick, one list per
/// tick; each session is scored once.
fn at_ticks<'a>(
    cal: &Calibration,
    sessions: impl Iterator<Item = &'a CorrelatedSession>,
    ticks: &[usize],
) -> Vec<Vec<(f64, bool)>> {
    let mut out = vec![Vec::new(); ticks.len()];
    for s in sessions {
        let Some(label) = s.trajectory.label else {
            continue;
        };
        let path = cal.score(&s.trajectory);
        for (bucket, &t) in out.iter_mut().zip(ticks) {
            if let Some(&p) = path.get(t) {
                bucket.push((p, label));
            }
        }
    }
    out
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
    let n_fresh: usize = arg(5, 20_000);
    let world = CorrelatedWorld::default();
    for seed in seeds
        .split(',')
        .filter_map(|s| s.trim().parse::<u64>().ok())
    {
        let sessions = world.sessions(total, seed);
        let (few, rest) = split_by_task(&sessions, every);
        let (train, held) = if many { (rest, few) } else { (few, rest) };
        let data: Vec<_> = train.iter().map(|s| s.trajectory.clone()).collect();
        let options = FitOptions {
            model: BeliefModel::Features,
            ..FitOptions::default()
        };
        let cal = match fit(&data, &options) {
            Ok((c, _)) => c,
            Err(e) => {
                eprintln!("seed {seed}: fit failed: {e}");
                continue;
            }
        };
        let fresh = world.sessions(n_fresh, seed + 100);
        let ticks = [100, 1000, 2000];
        let scores = score_at_ticks(&cal, &held, &ticks, 200);
        let held_by_tick = at_ticks(&cal, held.iter().copied(), &ticks);
        let fresh_by_tick = at_ticks(&cal, fresh.iter(), &ticks);
        let fresh_refs: Vec<&CorrelatedSession> = fresh.iter().collect();
        let fresh_scores = score_at_ticks(&cal, &fresh_refs, &ticks, 200);
        // Held-out-sized draws of fresh sessions: is the held-out set's ECE typical of a
        // set of its size?
        for (c, chunk) in fresh_refs.chunks(held.len().max(1)).enumerate() {
            if chunk.len() < held.len() {
                continue;
            }
            let cells: Vec<String> = score_at_ticks(&cal, chunk, &ticks, 200)
                .iter()
                .map(|s| {
                    let f = s.ece_floor.map_or(f64::NAN, |f| f.upper);
                    format!(
                        "tick {} ECE {:.4} (upper {f:.4})",
                        s.tick,
                        s.ece_mass10.unwrap_or(f64::NAN)
                    )
                })
                .collect();
            println!(
                "seed {seed}  fresh draw {c} of {}: {}",
                chunk.len(),
                cells.join("  ")
            );
        }
        for ((((score, fresh_score), &tick), held_at), fresh_at) in scores
            .iter()
            .zip(&fresh_scores)
            .zip(&ticks)
            .zip(held_by_tick)
            .zip(fresh_by_tick)
        {
            let rows: Vec<ScoreRow> = fresh_at
                .iter()
                .map(|&(p, y)| ScoreRow::new(logit(p.clamp(1e-9, 1.0 - 1e-9)), y))
                .collect();
            let mapped = (!rows.is_empty())
                .then(|| CalibrationMap::fit(MapKind::Isotonic, &rows).ok())
                .flatten()
                .map(|m| {
                    let f: Vec<Forecast> = held_at
                        .iter()
                        .map(|&(p, y)| Forecast::new(m.apply(logit(p.clamp(1e-9, 1.0 - 1e-9))), y))
                        .collect();
                    ece(&f, Binning::MASS_10)
                });
            let floor = score.ece_floor;
            let mut sorted = held_at.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let bins: Vec<String> = (0..10)
                .filter_map(|b| {
                    let cell = &sorted[b * sorted.len() / 10..(b + 1) * sorted.len() / 10];
                    let n = cell.len() as f64;
                    (n > 0.0).then(|| {
                        let p = cell.iter().map(|x| x.0).sum::<f64>() / n;
                        let y = cell.iter().filter(|x| x.1).count() as f64 / n;
                        format!("{p:.2}/{y:.2}")
                    })
                })
                .collect();
            println!(
                "seed {seed}  train {}  held {}  tick {tick}: slope {:.3}  ECE {:.4}  floor {}  isotonic on 20,000 fresh: ECE {}",
                train.len(),
                held.len(),
                score.slope.unwrap_or(f64::NAN),
                score.ece_mass10.unwrap_or(f64::NAN),
                floor.map_or("-".into(), |f| format!("[{:.4}, {:.4}]", f.lower, f.upper)),
                mapped.flatten().map_or("-".into(), |e| format!("{e:.4}")),
            );
            if let (Some(e), Some(f)) = (fresh_score.ece_mass10, fresh_score.ece_floor) {
                println!(
                    "    the same belief on the {} fresh sessions at this tick: slope {:.3}  ECE {e:.4}  floor [{:.4}, {:.4}]",
                    fresh_score.n,
                    fresh_score.slope.unwrap_or(f64::NAN),
                    f.lower,
                    f.upper
                );
            }
            println!(
                "    tenths of the held-out forecasts, forecast/observed: {}",
                bins.join(" ")
            );
        }
    }
}
