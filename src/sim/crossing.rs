//! Threshold rules on a statistic: "escalate at the first tick t ≥ start where s_t < θ".
//!
//! Every swept baseline is of this form (a belief below τ, an llr sum below Wald's lower
//! boundary, a raw sum of trouble above θ written as its negative below −θ). Storing the
//! running minimum of each query's statistic makes the first crossing for any θ a binary
//! search, so a sweep costs O(log T) per query and threshold. The thresholds of a sweep
//! are quantiles of the per-query minimum on *tuning* draws: then the sweep's escalation
//! rates spread evenly from never to always, so every policy's frontier gets many distinct
//! operating points, and no threshold is chosen on the draws it is scored on.

/// Running minima of one statistic, per query, for ticks `start..=horizon`.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    start: usize,
    width: usize,
    minima: Vec<f64>,
}

impl Crossing {
    /// `stat(query, t)` for every query `0..queries` and tick `start..=horizon`.
    pub fn new(
        queries: usize,
        start: usize,
        horizon: usize,
        stat: impl Fn(usize, usize) -> f64,
    ) -> Self {
        let start = start.min(horizon);
        let width = horizon + 1 - start;
        let mut minima = Vec::with_capacity(queries * width);
        for q in 0..queries {
            let mut low = f64::INFINITY;
            for t in start..=horizon {
                low = low.min(stat(q, t));
                minima.push(low);
            }
        }
        Crossing {
            start,
            width,
            minima,
        }
    }

    pub fn queries(&self) -> usize {
        self.minima.len() / self.width.max(1)
    }

    fn row(&self, query: usize) -> &[f64] {
        &self.minima[query * self.width..(query + 1) * self.width]
    }

    /// The first tick at which the statistic is below `theta`, or `None`.
    pub fn tick(&self, query: usize, theta: f64) -> Option<usize> {
        let row = self.row(query);
        let i = row.partition_point(|m| *m >= theta);
        (i < row.len()).then_some(self.start + i)
    }

    /// `points + 1` thresholds at the quantiles 0, 1/points, …, 1 of the per-query minimum,
    /// nudged up by a hair so the quantile query itself crosses (escalation rates from
    /// about 1/n to 1), plus −∞ (never).
    pub fn grid(&self, points: usize) -> Vec<f64> {
        let mut lows: Vec<f64> = (0..self.queries())
            .map(|q| self.row(q)[self.width - 1])
            .filter(|v| v.is_finite())
            .collect();
        lows.sort_by(f64::total_cmp);
        let mut grid = vec![f64::NEG_INFINITY];
        if lows.is_empty() {
            return grid;
        }
        let points = points.max(1);
        for j in 0..=points {
            let v = lows[(j * (lows.len() - 1)) / points];
            grid.push(v + 1e-9 * v.abs().max(1.0));
        }
        grid.dedup();
        grid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_crossings_and_an_even_grid() {
        // Query 0: 3, 1, 2, 0 from tick 0; query 1: 5, 6, 7, 8.
        let s = [[3.0, 1.0, 2.0, 0.0], [5.0, 6.0, 7.0, 8.0]];
        let c = Crossing::new(2, 0, 3, |q, t| s[q][t]);
        assert_eq!(c.tick(0, 4.0), Some(0));
        assert_eq!(c.tick(0, 2.0), Some(1));
        assert_eq!(c.tick(0, 0.5), Some(3));
        assert_eq!(c.tick(0, 0.0), None);
        assert_eq!(c.tick(1, 5.5), Some(0));
        assert_eq!(c.tick(1, 5.0), None);
        let late = Crossing::new(2, 2, 3, |q, t| s[q][t]);
        assert_eq!(late.tick(0, 2.5), Some(2));
        assert_eq!(late.tick(1, 5.5), None);
        let g = c.grid(1);
        assert_eq!(g[0], f64::NEG_INFINITY);
        assert_eq!(g.len(), 3);
        // The grid's top threshold makes both queries cross, its lowest one.
        assert!(c.tick(1, g[2]).is_some() && c.tick(0, g[1]).is_some());
        assert!(c.tick(1, g[1]).is_none());
    }
}
