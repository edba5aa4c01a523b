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

/// With more training sessions the fit's own error shrinks and what is left is the held-out
/// set's sampling noise: 24,000 sessions, three tasks in four train (18,000), the fourth
/// is held out (6,000). Measured with `examples/time_calibration_probe` (`24000 4 1,…,10
/// many`), seeds 1–10: inside the calibrated-null floor's 95 % interval at tick 100 on 9,
/// at tick 1,000 on all 10 and at tick 2,000 on 7 (the other three by 0.004–0.008; the
/// same beliefs of two of them on held-out-sized draws of fresh sessions are inside at tick
/// 2,000 on 8 of 8); with 2,000 training sessions tick 1,000 is inside on none of seeds
/// 1–3, which this test then fails.
#[test]
fn with_ample_training_sessions_the_feature_belief_is_inside_the_noise_floor_at_every_tick() {
    let sessions = CorrelatedWorld::default().sessions(24_000, 1);
    let (few, many) = split_by_task(&sessions, 4);
    let (train, held) = (many, few);
    assert_eq!((train.len(), held.len()), (18_000, 6_000));
    let cal = fit_model(&train, BeliefModel::Features).expect("fit");
    for s in score_at_ticks(&cal, &held, &TICKS, 200) {
        eprintln!("{s:?}");
        let ece = s.ece_mass10.expect("ece");
        let floor = s.ece_floor.expect("floor");
        assert!(ece <= floor.upper, "tick {}: {ece} vs {floor:?}", s.tick);
        let slope = s.slope.expect("slope");
        assert!((0.8..=1.25).contains(&slope), "{s:?}");
    }
}
