//! The belief is calibrated at every t on long correlated sessions (task-grouped held-out):
//! the regression test for the naive-Bayes sum's loss of calibration over time.

use handoff::competence::BeliefModel;
use handoff::sim::CorrelatedWorld;
use handoff::sim::time_calibration::{TickScore, fit_model, score_at_ticks, split_by_task};

const TICKS: [usize; 3] = [100, 1000, 2000];

fn scores(model: BeliefModel) -> Vec<TickScore> {
    // 8,000 sessions in tasks of 4; one task in four trains (2,000 sessions), the other
    // 6,000 sessions are held out by task.
    let sessions = CorrelatedWorld::default().sessions(8000, 1);
    let (train, held) = split_by_task(&sessions, 4);
    assert_eq!((train.len(), held.len()), (2000, 6000));
    let cal = fit_model(&train, model).expect("fit");
    score_at_ticks(&cal, &held, &TICKS, 200)
}

#[test]
fn the_feature_belief_is_calibrated_at_every_tick_and_naive_bayes_is_not() {
    let naive = scores(BeliefModel::NaiveBayes);
    let features = scores(BeliefModel::Features);
    for (n, f) in naive.iter().zip(&features) {
        eprintln!(
            "tick {:>5} (n {:>5}): naive slope {:.3} ECE {:.4} | features slope {:.3} ECE {:.4} | floor {:?}",
            n.tick,
            n.n,
            n.slope.unwrap_or(f64::NAN),
            n.ece_mass10.unwrap_or(f64::NAN),
            f.slope.unwrap_or(f64::NAN),
            f.ece_mass10.unwrap_or(f64::NAN),
            f.ece_floor
        );
    }
    // Today's judge: under-confident early, over-confident late (the audit's 4.6 → 0.55).
    let slope = |s: &TickScore| s.slope.expect("slope");
    assert!(slope(&naive[0]) > 2.0, "{:?}", naive[0]);
    assert!(slope(&naive[2]) < 0.8, "{:?}", naive[2]);
    // The feature model: slope within [0.8, 1.25] at every tick bucket.
    for s in &features {
        assert!((0.8..=1.25).contains(&slope(s)), "{s:?}");
    }
    // ECE: below naive Bayes's at every tick, and within 0.005 of the calibrated-null
    // floor's upper end (seed 1: inside it at ticks 100 and 2,000, 0.004 above at 1,000;
    // before the squared share-against input joined, 0.007 above at 1,000, which fails).
    for (n, f) in naive.iter().zip(&features) {
        let (en, ef) = (n.ece_mass10.expect("ece"), f.ece_mass10.expect("ece"));
        let floor = f.ece_floor.expect("floor");
        assert!(ef < en, "tick {}: {ef} vs naive {en}", f.tick);
        assert!(
            ef <= floor.upper + 0.005,
            "tick {}: {ef} vs {floor:?}",
            f.tick
        );
    }
}
