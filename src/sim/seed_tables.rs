//! The across-seed results as aligned tables: per world, every policy at matched cost and
//! at the configured costs, and the sample-complexity rates.

use std::fmt::Write;

use super::across_seeds::{Falsification, Spread};
use super::rate::Rate;

/// `mean [lo, hi]` scaled by `scale` (100 for percentages), or the mean alone.
fn spread(s: &Spread, scale: f64, digits: usize) -> String {
    match s.ci95 {
        Some([lo, hi]) => format!(
            "{:.digits$} [{:.digits$}, {:.digits$}]",
            scale * s.mean,
            scale * lo,
            scale * hi
        ),
        None => format!("{:.digits$}", scale * s.mean),
    }
}

/// Per world: accuracy minus the optimal policy's at each matched cost level (points of
/// accuracy), and objective minus optimal at the configured costs.
pub fn falsification(f: &Falsification) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nfalsification: {} seed(s) from {}, {} scored + {} tuning queries per seed and world; {}",
        f.seeds.len(),
        f.seeds.first().copied().unwrap_or_default(),
        f.queries,
        f.tuning_queries,
        f.interval
    );
    let levels: Vec<String> = f
        .cost_levels
        .iter()
        .map(|c| format!("Δacc @ cost {c:.2} (pts)"))
        .collect();
    for w in &f.worlds {
        let _ = writeln!(out, "\n[{}]", w.name);
        let _ = write!(out, "{:<13} {:>4} {:>11}", "policy", "pts", "cost span");
        for l in &levels {
            let _ = write!(out, " {l:>26}");
        }
        let _ = writeln!(out, " {:>26} {:>8}", "Δobjective @ costs", "acc %");
        for p in w
            .policies
            .iter()
            .filter(|p| p.name != "never" && p.name != "always")
        {
            let span = p
                .cost_span
                .map_or_else(|| "-".to_string(), |[a, b]| format!("{a:.2}–{b:.2}"));
            let _ = write!(out, "{:<13} {:>4} {span:>11}", p.name, p.operating_points);
            for m in &p.matched {
                let _ = write!(out, " {:>26}", spread(&m.minus_optimal, 100.0, 2));
            }
            let _ = writeln!(
                out,
                " {:>26} {:>8.2}",
                spread(&p.objective_minus_optimal, 1.0, 4),
                100.0 * p.accuracy.mean
            );
        }
    }
    out
}

/// The sample-complexity rates over seeds.
pub fn rate(r: &Rate) -> String {
    let mut out = String::new();
    let seeds = r.belief_error_log_log_slope.seeds;
    let _ = writeln!(
        out,
        "\nsample complexity over {seeds} seed(s): mean per n [95% t interval]"
    );
    let _ = writeln!(out, "{:>6} {:>28} {:>28}", "n", "E|B̂ − B|", "regret");
    for row in &r.by_n {
        let _ = writeln!(
            out,
            "{:>6} {:>28} {:>28}",
            row.n,
            spread(&row.belief_error, 1.0, 4),
            spread(&row.regret, 1.0, 4)
        );
    }
    let _ = writeln!(
        out,
        "belief error: log–log slope {}, raw-scale exponent {}; regret: raw-scale exponent {} \
         ({} of the regrets ≤ 0, all in the fits)",
        spread(&r.belief_error_log_log_slope, 1.0, 3),
        spread(&r.belief_error_power_exponent, 1.0, 3),
        spread(&r.regret_power_exponent, 1.0, 3),
        r.non_positive_regrets
    );
    out
}
