//! The calibration report as plain text for a terminal.

use super::CalibrationReport;
use crate::metrics::Interval;

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.4}"))
}

/// `[0.512, 0.733]`, or nothing when there is no interval.
fn span(ci: Option<Interval>) -> String {
    ci.map_or_else(String::new, |c| {
        format!(" [{:.3}, {:.3}]", c.lower, c.upper)
    })
}

impl CalibrationReport {
    /// The report as plain text for a terminal.
    pub fn to_text(&self) -> String {
        let c = &self.counts;
        let left_out = format!(
            "({} censored left out, {} unlabelled, {} incomplete)",
            c.censored_skipped, c.unlabelled, c.incomplete
        );
        let mut out = if self.assessed.is_some() {
            format!(
                "{} sessions from {} files: {} scored ({} tasks) {}\n",
                c.read, self.files, c.holdout, c.holdout_tasks, left_out
            )
        } else if c.folds >= 2 {
            format!(
                "{} sessions from {} files: {} labelled ({} tasks), {}-fold cross-validation by \
                 {}: each scored by a fit without its {}; the calibration is fitted on all {}\n",
                c.read, self.files, c.train, c.train_tasks, c.folds, c.split, c.split, left_out
            )
        } else {
            format!(
                "{} sessions from {} files: {} train ({} tasks), {} held out ({} tasks; split by \
                 {}) {}\n",
                c.read,
                self.files,
                c.train,
                c.train_tasks,
                c.holdout,
                c.holdout_tasks,
                c.split,
                left_out
            )
        };
        if self.fit.is_some() && (c.explored > 0 || !c.ipw) {
            out.push_str(&format!(
                "censoring: {} training sessions uncensored by exploration; {} (effective \
                 sample {:.0} of {})\n",
                c.explored,
                if c.ipw {
                    "weighted by inverse propensity"
                } else {
                    "unweighted (--no-ipw)"
                },
                c.effective_train,
                c.train
            ));
        }
        match (&self.fit, &self.assessed) {
            (Some(f), _) => out.push_str(&format!(
                "fit: π₀ {:.3}, tempering c {:.4}, log loss {:.4} → {:.4} (prior → fitted, inner hold-out){}\n",
                self.prior,
                self.tempering,
                f.log_loss_prior,
                f.log_loss_fitted,
                self.fitted
                    .as_deref()
                    .map_or(String::new(), |s| format!("\n  {s}"))
            )),
            (None, Some(source)) => out.push_str(&format!(
                "scored as given, no fit: {source} (π₀ {:.3}, tempering c {:.4}); every session held out\n",
                self.prior, self.tempering
            )),
            (None, None) => {}
        }
        match &self.holdout {
            None => out.push_str("held-out scores: no held-out sessions (use --holdout)\n"),
            Some(h) => {
                out.push_str(&format!(
                    "\nheld out: {} sessions, {} forecasts (beliefs at 10 %, 20 %, …, 100 % of each)\n",
                    h.sessions, h.forecasts
                ));
                out.push_str(&format!(
                    "  ECE (10 equal-mass) {}{} (a calibrated judge: {}{})   ECE (15 equal-width) {}   MCE {}\n",
                    num(h.ece_mass10),
                    span(h.ece_mass10_ci),
                    num(h.ece_mass10_noise.map(|n| n.estimate)),
                    span(h.ece_mass10_noise),
                    num(h.ece_width15),
                    num(h.mce_width15)
                ));
                out.push_str(&format!(
                    "  Brier {}{} (prior alone {})   AUROC {}{}   AURC {}\n",
                    num(h.brier),
                    span(h.brier_ci),
                    num(h.brier_prior),
                    num(h.auroc),
                    span(h.auroc_ci),
                    num(h.aurc)
                ));
                if let Some(b) = &self.builtin {
                    out.push_str(&format!(
                        "  built-in prior judge on the same sessions: ECE {}{}   Brier {}{}   AUROC {}{}\n",
                        num(b.ece_mass10),
                        span(b.ece_mass10_ci),
                        num(b.brier),
                        span(b.brier_ci),
                        num(b.auroc),
                        span(b.auroc_ci)
                    ));
                }
                out.push_str(
                    "\n  fraction  ECE mass-10  ECE width-15   Brier   AUROC [95% over tasks]\n",
                );
                for s in &h.by_fraction {
                    out.push_str(&format!(
                        "  {:>7.0}%  {:>11}  {:>12}  {:>6}  {}{}\n",
                        s.fraction * 100.0,
                        num(s.ece_mass10),
                        num(s.ece_width15),
                        num(s.brier),
                        num(s.auroc),
                        span(s.auroc_ci)
                    ));
                }
                if !h.by_tick.is_empty() {
                    out.push_str(
                        "\n  at a fixed tick, the sessions still running (what a live judge sees):\n      \
                         tick  sessions (succeeded)  ECE mass-10   Brier   AUROC [95% over tasks]\n",
                    );
                    for s in &h.by_tick {
                        out.push_str(&format!(
                            "  {:>8}  {:>8} ({:>9})  {:>11}  {:>6}  {}{}\n",
                            s.tick,
                            s.sessions,
                            s.successes,
                            num(s.ece_mass10),
                            num(s.brier),
                            num(s.auroc),
                            span(s.auroc_ci)
                        ));
                    }
                }
            }
        }
        if !self.schedule.is_empty() {
            out.push_str("\noptimal threshold τ*_t for the configured costs:\n  tick ");
            for p in &self.schedule {
                out.push_str(&format!("{:>7}", p.tick));
            }
            out.push_str("\n  τ*   ");
            for p in &self.schedule {
                out.push_str(&format!("{:>7.3}", p.tau));
            }
            out.push('\n');
        }
        if let Some(why) = &self.schedule_refused {
            out.push_str(&format!("\noptimal threshold τ*_t: not solved: {why}\n"));
        }
        out.push_str(&self.discrimination.to_text());
        if !self.warnings.is_empty() {
            out.push_str(&format!("\n{} warnings:\n", self.warnings.len()));
            for w in &self.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        out
    }
}
