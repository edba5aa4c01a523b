//! The optimal threshold schedule by backward induction over a belief grid.
//!
//! V_T(b) = min(L(1−b), E) and V_t(b) = min(E, κ + E[V_{t+1}(B_{t+1}) | B_t = b]) with
//! E = γ + L(1−p) the cost of escalating, the expectation taken over the next tick's
//! evidence under its predictive law b·f₁ + (1−b)·f₀ (DESIGN.md). τ*_t is the largest b at
//! which escalating is optimal. The solver is generic over a discrete per-tick law of the
//! log-likelihood ratio, so the simulator can hand it the true law of its generative
//! process and the agent one estimated from a [`Calibration`](super::Calibration).
//!
//! The transition from a grid point to the next belief does not depend on t, so it is
//! precomputed once as a sparse row of interpolation weights; each backward step is then one
//! sparse matrix–vector product. V is concave in b, so linear interpolation between grid
//! points is a good (and monotone) approximation.

use super::CompetenceError;
use super::calibrator::{logit, sigmoid};
use super::law::LlrLaw;
use super::threshold::{StopCosts, Threshold};

/// Largest grid the solver accepts (memory is O(grid · atoms)).
pub const MAX_GRID_POINTS: usize = 1_000_000;
/// Largest horizon the solver accepts (the schedule alone is 8 bytes per tick).
pub const MAX_HORIZON: u64 = 1 << 24;

/// The size of the problem: costs, horizon T (ticks), belief grid and decision stride.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSpec {
    pub costs: StopCosts,
    /// T: the token budget; V_T is the value of stopping there.
    pub horizon: u64,
    /// Points of the uniform belief grid on [0, 1] (at least 2; 1001 is the usual).
    pub grid_points: usize,
    /// Escalation is possible only every `stride` ticks (and τ is held between); 1 = every
    /// tick. Between decision ticks the junior must go on, and the DP plans for exactly that.
    pub stride: u64,
}

/// τ*_t for t = 0..=T, and the value of the problem at t = 0.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimalSchedule {
    /// τ*_t; escalate iff B_t < τ*_t (ties at the grid are resolved toward escalating).
    pub tau: Vec<f64>,
    /// V_0 on the grid: the minimal expected cost of the session from each starting belief.
    pub value_at_start: Vec<f64>,
}

impl OptimalSchedule {
    /// V_0(b) by linear interpolation on the grid.
    pub fn value_at(&self, belief: f64) -> f64 {
        let n = self.value_at_start.len();
        if n == 0 {
            return f64::NAN;
        }
        let x = belief.clamp(0.0, 1.0) * (n - 1) as f64;
        let j = (x as usize).min(n.saturating_sub(2));
        let w = x - j as f64;
        let v = &self.value_at_start;
        if n == 1 {
            v[0]
        } else {
            v[j] * (1.0 - w) + v[j + 1] * w
        }
    }

    /// The schedule as a threshold for a [`Judge`](super::Judge).
    pub fn into_threshold(self) -> Threshold {
        Threshold::Schedule(self.tau)
    }
}

/// The time-invariant transition: for each grid point, interpolation weights onto the grid
/// of the next belief, already multiplied by the predictive probability.
///
/// Each row is stored as runs of consecutive columns with their weights contiguous (small
/// gaps filled with zeros), so a backward step is a series of short dense dot products
/// that the compiler vectorises, reading 8 bytes per entry instead of 12.
struct Transition {
    /// Runs of row i are `row_runs[i]..row_runs[i + 1]`.
    row_runs: Vec<usize>,
    /// First column of each run; its weights start at `run_offset[r]`.
    run_col: Vec<u32>,
    run_offset: Vec<usize>,
    weights: Vec<f64>,
}

/// Gaps up to this many columns are filled with zero weights rather than opening a new run.
const MAX_GAP: usize = 3;

impl Transition {
    fn new(law: &LlrLaw, n: usize) -> Self {
        let last = (n - 1) as f64;
        let mut t = Transition {
            row_runs: Vec::with_capacity(n + 1),
            run_col: Vec::new(),
            run_offset: Vec::new(),
            weights: Vec::new(),
        };
        let mut dense = vec![0.0; n];
        let mut touched: Vec<usize> = Vec::new();
        for i in 0..n {
            t.row_runs.push(t.run_col.len());
            let b = i as f64 / last;
            let l = logit(b);
            for a in law.atoms() {
                let q = b * a.p1 + (1.0 - b) * a.p0;
                if q <= 0.0 {
                    continue;
                }
                let next = if b <= 0.0 || b >= 1.0 {
                    b
                } else {
                    sigmoid(l + a.llr)
                };
                let x = next * last;
                let j = (x as usize).min(n - 2);
                let w = (x - j as f64).clamp(0.0, 1.0);
                for (k, part) in [(j, q * (1.0 - w)), (j + 1, q * w)] {
                    if part > 0.0 {
                        if dense[k] == 0.0 {
                            touched.push(k);
                        }
                        dense[k] += part;
                    }
                }
            }
            touched.sort_unstable();
            let mut previous: Option<usize> = None;
            for &k in &touched {
                match previous {
                    Some(p) if k - p <= MAX_GAP + 1 => {
                        t.weights.extend(std::iter::repeat_n(0.0, k - p - 1));
                    }
                    _ => {
                        t.run_col.push(k as u32);
                        t.run_offset.push(t.weights.len());
                    }
                }
                t.weights.push(dense[k]);
                dense[k] = 0.0;
                previous = Some(k);
            }
            touched.clear();
        }
        t.row_runs.push(t.run_col.len());
        t.run_offset.push(t.weights.len());
        t
    }

    /// out[i] = Σ_j P(i → j) · v[j].
    fn expect(&self, v: &[f64], out: &mut [f64]) {
        for (i, o) in out.iter_mut().enumerate() {
            let mut acc = 0.0;
            for r in self.row_runs[i]..self.row_runs[i + 1] {
                let (start, end) = (self.run_offset[r], self.run_offset[r + 1]);
                let col = self.run_col[r] as usize;
                acc += dot(&self.weights[start..end], &v[col..col + (end - start)]);
            }
            *o = acc;
        }
    }
}

/// A dot product with four independent accumulators, so it vectorises.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

/// Largest b at which continuing costs at least as much as escalating (`gap` = C − E ≥ 0),
/// interpolated between the last such grid point and the next; 0 if there is none.
fn crossing(gap: &[f64]) -> f64 {
    let n = gap.len();
    let last = (n - 1) as f64;
    match gap.iter().rposition(|d| *d >= 0.0) {
        None => 0.0,
        Some(i) if i + 1 == n => 1.0,
        Some(i) => {
            let (d0, d1) = (gap[i], gap[i + 1]);
            (i as f64 + d0 / (d0 - d1)) / last
        }
    }
}

/// Solves the stopping problem; see [`solve_visiting`] to inspect every V_t.
pub fn solve(law: &LlrLaw, spec: &DpSpec) -> Result<OptimalSchedule, CompetenceError> {
    solve_visiting(law, spec, |_, _, _| {})
}

/// Solves the stopping problem and calls `visit(t, V_t, C_t)` for t = T down to 0, where
/// C_t is the cost of going on (κ + E[V_{t+1}], or L(1−b) at T) on the grid. Memory is
/// O(grid + T): only two value vectors are kept.
pub fn solve_visiting(
    law: &LlrLaw,
    spec: &DpSpec,
    mut visit: impl FnMut(u64, &[f64], &[f64]),
) -> Result<OptimalSchedule, CompetenceError> {
    spec.costs.validate()?;
    let n = spec.grid_points;
    if !(2..=MAX_GRID_POINTS).contains(&n) {
        return Err(CompetenceError::Invalid(format!(
            "belief grid needs 2 to {MAX_GRID_POINTS} points, got {n}"
        )));
    }
    if spec.stride == 0 {
        return Err(CompetenceError::Invalid(
            "schedule stride must be ≥ 1".into(),
        ));
    }
    if spec.horizon > MAX_HORIZON {
        return Err(CompetenceError::Invalid(format!(
            "horizon {} is beyond {MAX_HORIZON} ticks; solve on a coarser clock",
            spec.horizon
        )));
    }
    let horizon = spec.horizon as usize;
    let escalate = spec.costs.escalation_cost();
    let (kappa, loss) = (spec.costs.kappa, spec.costs.loss);
    let last = (n - 1) as f64;
    let transition = Transition::new(law, n);

    let mut tau = vec![0.0; horizon + 1];
    let mut decides = vec![false; horizon + 1];
    let mut cont: Vec<f64> = (0..n).map(|i| loss * (1.0 - i as f64 / last)).collect();
    let mut value: Vec<f64> = cont.iter().map(|c| c.min(escalate)).collect();
    let mut gap = vec![0.0; n];
    for (g, c) in gap.iter_mut().zip(&cont) {
        *g = c - escalate;
    }
    tau[horizon] = crossing(&gap);
    decides[horizon] = true;
    visit(spec.horizon, &value, &cont);

    for t in (0..horizon).rev() {
        transition.expect(&value, &mut cont);
        let can_stop = (t as u64).is_multiple_of(spec.stride);
        for i in 0..n {
            cont[i] += kappa;
            gap[i] = cont[i] - escalate;
            value[i] = if can_stop {
                cont[i].min(escalate)
            } else {
                cont[i]
            };
        }
        if can_stop {
            tau[t] = crossing(&gap);
            decides[t] = true;
        }
        visit(t as u64, &value, &cont);
    }
    // Hold each decision tick's τ until the next decision tick.
    let mut held = 0.0;
    for (t, d) in tau.iter_mut().zip(&decides) {
        if *d {
            held = *t;
        } else {
            *t = held;
        }
    }
    Ok(OptimalSchedule {
        tau,
        value_at_start: value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::competence::threshold::{RouteCost, myopic};

    fn costs(kappa: f64) -> StopCosts {
        StopCosts {
            kappa,
            loss: 1.0,
            route: RouteCost {
                gamma: 0.1,
                p_success: 0.9,
            },
        }
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-12, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn a_tiny_dp_by_hand() {
        // Grid {0, ½, 1}; E = 0.1 + 0.1 = 0.2; κ = 0.05; T = 1.
        // One fully revealing signal: from b = ½ the belief jumps to 1 (prob ½) or 0 (½).
        let law = LlrLaw::consistent(&[(1.0, 0.0), (0.0, 1.0)]).expect("law");
        let spec = DpSpec {
            costs: costs(0.05),
            horizon: 1,
            grid_points: 3,
            stride: 1,
        };
        let mut seen = Vec::new();
        let s = solve_visiting(&law, &spec, |t, v, c| {
            seen.push((t, v.to_vec(), c.to_vec()))
        })
        .expect("solve");
        // V_1 = min(L(1−b), 0.2) = [0.2, 0.2, 0]; τ_1 = crossing of (1−b) − 0.2 → 0.8.
        close(&seen[0].1, &[0.2, 0.2, 0.0]);
        assert!((s.tau[1] - 0.8).abs() < 1e-12);
        // C_0(½) = 0.05 + ½·V_1(1) + ½·V_1(0) = 0.05 + 0.1 = 0.15 < 0.2: go on and look.
        // C_0(0) = 0.05 + 0.2 = 0.25; C_0(1) = 0.05.
        let c0 = &seen[1].2;
        assert!((c0[0] - 0.25).abs() < 1e-12);
        assert!((c0[1] - 0.15).abs() < 1e-12);
        assert!((c0[2] - 0.05).abs() < 1e-12);
        close(&s.value_at_start, &[0.2, 0.15, 0.05]);
        // Gaps 0.05, −0.05 → τ_0 = (0 + 0.05/0.1)/2 = 0.25: the option to look lowers τ.
        assert!((s.tau[0] - 0.25).abs() < 1e-12);
        assert!((s.value_at(0.25) - 0.175).abs() < 1e-12);
    }

    #[test]
    fn without_evidence_the_optimum_is_the_myopic_rule() {
        // No information: continuing is worth κ(T−t) + L(1−b), exactly the myopic trade.
        let spec = DpSpec {
            costs: costs(0.002),
            horizon: 50,
            grid_points: 1001,
            stride: 1,
        };
        let s = solve(&LlrLaw::no_evidence(), &spec).expect("solve");
        for t in [0u64, 10, 25, 50] {
            let m = myopic(&spec.costs, 50, t);
            assert!((s.tau[t as usize] - m).abs() < 1e-9, "t={t}");
        }
    }

    #[test]
    fn strides_hold_tau_between_decisions() {
        let law = LlrLaw::consistent(&[(0.6, 0.4), (0.4, 0.6)]).expect("law");
        let spec = DpSpec {
            costs: costs(0.001),
            horizon: 20,
            grid_points: 101,
            stride: 8,
        };
        let s = solve(&law, &spec).expect("solve");
        assert_eq!(s.tau.len(), 21);
        assert_eq!(s.tau[1], s.tau[0]);
        assert_eq!(s.tau[15], s.tau[8]);
        assert_eq!(s.tau[19], s.tau[16]);
    }

    #[test]
    fn bad_specs_are_errors() {
        let law = LlrLaw::no_evidence();
        let mut spec = DpSpec {
            costs: costs(0.0),
            horizon: 5,
            grid_points: 1,
            stride: 1,
        };
        assert!(solve(&law, &spec).is_err());
        spec.grid_points = 11;
        spec.stride = 0;
        assert!(solve(&law, &spec).is_err());
        spec.stride = 1;
        spec.horizon = MAX_HORIZON + 1;
        assert!(solve(&law, &spec).is_err());
    }
}
