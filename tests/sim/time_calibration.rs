//! The belief is calibrated at every t on long correlated sessions (task-grouped held-out):
//! the regression test for the naive-Bayes sum's loss of calibration over time.

use handoff::competence::BeliefModel;
use handoff::sim::CorrelatedWorld;
use handoff::sim::time_calibration::{
    TickScore, TruthScore, fit_model, score_against_truth, score_at_ticks, split_by_task,
};

const TICKS: [usize; 3] = [100, 1000, 2000];

/// Against labels and against the exact posterior B*.
fn scores(model: BeliefModel) -> (Vec<TickScore>, Vec<TruthScore>) {
    // 8,000 sessions in tasks of 4; one task in four trains (2,000 sessions), the other
    // 6,000 sessions are held out by task.
    let world = CorrelatedWorld::default();
    let sessions = world.sessions(8000, 1);
    let (train, held) = split_by_task(&sessions, 4);
    assert_eq!((train.len(), held.len()), (2000, 6000));
    let cal = fit_model(&train, model).expect("fit");
    (
        score_at_ticks(&cal, &held, &TICKS, 200),
        score_against_truth(&cal, &world, &held, &TICKS, 200, 2),
    )
}

/// The exact posterior, a judge calibrated by construction, is inside the calibrated-null
/// floor's interval on these held-out sessions: the label-based criterion is one a perfect
/// judge meets here (it does not always: seed 2 at tick 2,000 of the 18,000/6,000 split
/// is outside, `examples/calibration_vs_truth`).
fn assert_the_exact_posterior_passes(truth: &[TruthScore]) {
    for t in truth {
        let (e, f) = (t.exact_ece.expect("ece"), t.exact_floor.expect("floor"));
        assert!(e <= f.upper, "B* at tick {}: {e} vs {f:?}", t.tick);
    }
}

#[test]
fn the_feature_belief_is_calibrated_at_every_tick_and_naive_bayes_is_not() {
    let (naive, naive_truth) = scores(BeliefModel::NaiveBayes);
    let (features, features_truth) = scores(BeliefModel::Features);
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
    // The feature model: slope within [0.8, 1.25] at every tick bucket (seeds 1–3:
    // 0.81–1.20; seed 1 chooses ridge 1, seed 2 0.1, seed 3 10).
    for s in &features {
        assert!((0.8..=1.25).contains(&slope(s)), "{s:?}");
    }
    // ECE below naive Bayes's at every tick. (Whether it is inside the label floor is
    // noise-limited at this size: 5 of 9 cells over seeds 1–3, up to 0.010 above the
    // upper end; the measure without label noise follows.)
    for (n, f) in naive.iter().zip(&features) {
        let (en, ef) = (n.ece_mass10.expect("ece"), f.ece_mass10.expect("ece"));
        assert!(ef < en, "tick {}: {ef} vs naive {en}", f.tick);
    }
    // Without label noise, against the exact posterior: naive Bayes is off by 0.035–0.082
    // (seeds 1–3), the feature model by 0.009–0.028; it is closer at every tick, within
    // 0.03, its log-odds are nearer B*'s, and its slope against B* is in [0.8, 1.25]
    // (seeds 1–3: 0.89–1.16).
    assert_the_exact_posterior_passes(&features_truth);
    for (n, f) in naive_truth.iter().zip(&features_truth) {
        eprintln!("{n:?}\n{f:?}");
        let (en, ef) = (n.ece_vs_truth.expect("ece"), f.ece_vs_truth.expect("ece"));
        assert!(ef < en && ef <= 0.03, "tick {}: {ef} vs naive {en}", f.tick);
        assert!(f.mean_logit_gap < n.mean_logit_gap, "{f:?} vs {n:?}");
        let slope = f.slope_vs_truth.expect("slope");
        assert!((0.8..=1.25).contains(&slope), "{f:?}");
    }
}

/// With more training sessions the fit's own error shrinks: 24,000 sessions, three tasks in
/// four train (18,000), the fourth is held out (6,000). Measured with
/// `examples/calibration_vs_truth` (`24000 4 1,…,10 many`), seeds 1–10: the label ECE is
/// inside the calibrated-null floor's 95 % interval at tick 100 on 9, at ticks 1,000 and
/// 2,000 on all 10, where the exact posterior is inside on 10, 10 and 9 (before the link,
/// 8, 10 and 8); with 2,000 training sessions tick 1,000 is inside on none of seeds 1–3,
/// which this test then fails.
#[test]
fn with_ample_training_sessions_the_feature_belief_is_inside_the_noise_floor_at_every_tick() {
    let world = CorrelatedWorld::default();
    let sessions = world.sessions(24_000, 1);
    let (few, many) = split_by_task(&sessions, 4);
    let (train, held) = (many, few);
    assert_eq!((train.len(), held.len()), (18_000, 6_000));
    let cal = fit_model(&train, BeliefModel::Features).expect("fit");
    // Against the exact posterior the error left is 0.0077–0.0140 at tick 100,
    // 0.0054–0.0092 at 1,000 and 0.0032–0.0134 at 2,000 over seeds 1–10; the bounds are
    // those maxima and a tenth more. (With 2,000 training sessions seed 1 is at 0.017 /
    // 0.018 / 0.017.)
    let truth = score_against_truth(&cal, &world, &held, &TICKS, 200, 2);
    assert_the_exact_posterior_passes(&truth);
    for (t, bound) in truth.iter().zip([0.0154, 0.0101, 0.0147]) {
        eprintln!("{t:?}");
        let e = t.ece_vs_truth.expect("ece");
        assert!(e <= bound, "tick {}: {e} against B*", t.tick);
        let slope = t.slope_vs_truth.expect("slope");
        assert!((0.8..=1.25).contains(&slope), "{t:?}");
    }
    for s in score_at_ticks(&cal, &held, &TICKS, 200) {
        eprintln!("{s:?}");
        let ece = s.ece_mass10.expect("ece");
        let floor = s.ece_floor.expect("floor");
        assert!(ece <= floor.upper, "tick {}: {ece} vs {floor:?}", s.tick);
        let slope = s.slope.expect("slope");
        assert!((0.8..=1.25).contains(&slope), "{s:?}");
    }
}
