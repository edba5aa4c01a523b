//! Ask-F1 of one route as `report` prints it: the counts, the scores, and the F1's
//! interval over sessions.

use serde::Serialize;

use crate::metrics::{AskSession, AskTable, AskTally, Interval, ask_table, bootstrap_picks};

/// Ask-F1 counts with the scores they give, as printed and serialised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AskScores {
    pub tp: u64,
    pub fp: u64,
    #[serde(rename = "fn")]
    pub fn_: u64,
    pub unmarked: u64,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub f1: Option<f64>,
    /// 95 % percentile-bootstrap interval of `f1`, sessions resampled
    /// ([`ASK_BOOTSTRAP_REPS`] draws, seed [`ASK_BOOTSTRAP_SEED`]).
    pub f1_interval: Option<Interval>,
}

/// Resamples of the per-route Ask-F1 intervals (fixed: the same logs print the same).
pub const ASK_BOOTSTRAP_REPS: usize = 2000;
/// Seed of the per-route Ask-F1 intervals.
pub const ASK_BOOTSTRAP_SEED: u64 = 31;

impl AskScores {
    /// The scores of one route's tally, with the interval of its F1 over the sessions.
    pub(super) fn of(sessions: &[AskSession], route: fn(&AskTable) -> &AskTally) -> AskScores {
        let table = ask_table(sessions);
        let t = route(&table);
        let f1 = |picks: &[usize]| {
            let sample: Vec<AskSession> = picks.iter().map(|&i| sessions[i].clone()).collect();
            route(&ask_table(&sample)).f1()
        };
        AskScores {
            tp: t.tp,
            fp: t.fp,
            fn_: t.fn_,
            unmarked: t.unmarked,
            precision: t.precision(),
            recall: t.recall(),
            f1: t.f1(),
            f1_interval: bootstrap_picks(
                sessions.len(),
                f1,
                ASK_BOOTSTRAP_REPS,
                ASK_BOOTSTRAP_SEED,
            ),
        }
    }
}
