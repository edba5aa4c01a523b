use std::path::PathBuf;

use super::score::tick_at;
use super::*;

/// `n` sessions of distinct tasks whose entropy separates the labels, every third a success.
fn separable(n: usize) -> Corpus {
    let sessions = (0..n)
        .map(|i| {
            let success = i % 3 == 0;
            let mut trajectory = Trajectory::new(Some(success));
            for k in 0..40 {
                let wobble = 0.05 * ((i * 7 + k) % 5) as f64;
                trajectory.push_token(&crate::competence::TokenSignals {
                    entropy: Some(if success { 0.3 } else { 1.2 } + wobble),
                    margin: Some(0.4 + wobble),
                    surprise: Some(0.5 + wobble),
                });
            }
            LoggedSession {
                source: PathBuf::from(format!("logs/{i}.jsonl")),
                session_id: format!("s{i}"),
                task: format!("task {i}"),
                junior_model: "m".into(),
                top_logprobs: 5,
                trajectory,
                shadow: true,
                censored: false,
                ended: true,
                propensity: 1.0,
            }
        })
        .collect();
    Corpus {
        files: n,
        sessions,
        warnings: Vec::new(),
    }
}

#[test]
fn cross_validation_scores_every_session_out_of_fold_and_assess_scores_a_given_fit() {
    let corpus = separable(60);
    let config = Config::default();
    let options = CalibrateOptions {
        folds: 5,
        ..CalibrateOptions::default()
    };
    let (calibration, report) = calibrate(&corpus, &options, &config).expect("fit");
    assert_eq!((report.counts.folds, report.counts.holdout), (5, 60));
    let held = report.holdout.as_ref().expect("scores");
    assert_eq!(held.sessions, 60);
    assert!(held.auroc.is_some_and(|a| a > 0.9), "{:?}", held.auroc);
    assert!(report.to_text().contains("5-fold cross-validation by task"));
    assert_eq!(
        report.discrimination.sessions, 60,
        "each session counted once"
    );
    // One split scores only its held-out side.
    let (_, single) = calibrate(&corpus, &CalibrateOptions::default(), &config).expect("fit");
    assert!(single.holdout.as_ref().expect("scores").sessions < 30);
    // The fit scored as given on the same logs: every session, no fit report.
    let given = assess(&corpus, &calibration, "cal.json", false, &config).expect("assess");
    assert_eq!(given.holdout.as_ref().expect("scores").sessions, 60);
    assert!(given.fit.is_none());
    assert!(
        given
            .to_text()
            .contains("scored as given, no fit: cal.json")
    );
    assert!(matches!(
        calibrate(
            &corpus,
            &CalibrateOptions {
                folds: 1,
                ..CalibrateOptions::default()
            },
            &config
        ),
        Err(CalibrateError::Folds)
    ));
}

#[test]
fn a_fold_without_both_labels_is_named() {
    let mut corpus = separable(30);
    // One success in all: the fold holding it leaves the others without one.
    for (i, s) in corpus.sessions.iter_mut().enumerate() {
        s.trajectory.label = Some(i == 0);
    }
    let options = CalibrateOptions {
        folds: 3,
        ..CalibrateOptions::default()
    };
    let err = calibrate(&corpus, &options, &Config::default()).expect_err("no success");
    assert!(err.to_string().starts_with("fold "), "{err}");
}

#[test]
fn fractions_pick_ticks_up_to_the_last() {
    assert_eq!(tick_at(10, 37), 37);
    assert_eq!(tick_at(1, 37), 4);
    assert_eq!(tick_at(5, 0), 0);
}

#[test]
fn the_split_is_stable_and_near_the_asked_fraction() {
    let s = |i: usize| LoggedSession {
        source: PathBuf::from(format!("logs/{i}.jsonl")),
        session_id: format!("s{i}"),
        task: format!("task {}", i / 3),
        junior_model: "m".into(),
        top_logprobs: 5,
        trajectory: Trajectory::new(Some(true)),
        shadow: false,
        censored: false,
        ended: true,
        propensity: 1.0,
    };
    let held = (0..2000).filter(|&i| is_held_out(&s(i), 0.2, true)).count();
    assert!((340..460).contains(&held), "{held} of 2000");
    assert!((0..50).all(|i| is_held_out(&s(i), 0.2, true) == is_held_out(&s(i), 0.2, true)));
    assert_eq!(
        (0..100).filter(|&i| is_held_out(&s(i), 0.0, true)).count(),
        0
    );
    // The three sessions of a task fall on one side.
    for t in 0..300 {
        let sides: Vec<bool> = (3 * t..3 * t + 3)
            .map(|i| is_held_out(&s(i), 0.2, true))
            .collect();
        assert!(sides.iter().all(|&x| x == sides[0]), "task {t}: {sides:?}");
    }
}
