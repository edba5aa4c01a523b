//! A calibration records the junior it was fitted on; a session or `doctor` with another
//! junior says so (a warning in the log, a MISMATCH line), and one with the same junior
//! does not.

use handoff::agent::session::Approvals;
use handoff::competence::{Calibration, FittedOn};
use handoff::demo::server::Script;
use handoff::protocol::Event;

use super::support::{FILES, config, finish, repo, run, servers, write_config, write_done};

fn calibration_for(model: &str, top: usize, dir: &std::path::Path) -> std::path::PathBuf {
    let mut c = Calibration::prior();
    c.fitted_on = Some(FittedOn {
        model: model.into(),
        top_logprobs: top,
        sessions: 40,
        successes: 12,
    });
    let path = dir.join(format!("{model}.json"));
    std::fs::write(&path, c.to_json()).expect("write calibration");
    path
}

fn mismatches(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { kind, message } if kind == "calibration_mismatch" => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_calibration_fitted_on_another_junior_is_a_warning_and_doctor_says_mismatch() {
    let files = tempfile::tempdir().expect("tempdir");
    for (model, top, expected) in [
        ("other-model", 5, 1),
        ("junior-test", 3, 1),
        ("junior-test", 5, 0),
    ] {
        let (j, s) = servers(
            Script::new(vec![write_done(), finish()]),
            Script::new(vec![]),
        )
        .await;
        let dir = repo(&FILES);
        let mut cfg = config(&j, &s);
        cfg.junior.top_logprobs = 5;
        cfg.policy.calibration = Some(calibration_for(model, top, files.path()));
        let ran = run(
            cfg.clone(),
            dir.path(),
            "create done.txt",
            vec![],
            Approvals::Refused,
        )
        .await;
        let found = mismatches(&ran.events);
        assert_eq!(found.len(), expected, "{model} top {top}: {found:?}");
        if let Some(m) = found.first() {
            assert!(m.contains("handoff calibrate"), "{m}");
            if model == "other-model" {
                assert!(
                    m.contains("other-model") && m.contains("junior-test"),
                    "{m}"
                );
            } else {
                assert!(m.contains("top_logprobs 3"), "{m}");
            }
        }
        let path = write_config(files.path(), &cfg);
        let (text, line) = super::support::doctor_line(&path, "calibration:").await;
        assert_eq!(line.contains("MISMATCH"), expected == 1, "{text}");
    }
}

/// A feature-model calibration has no per-token law for `threshold = "optimal"` to plan on
/// (planned on the naive sum's law, τ* is about 0.002: it never hands off). The session is
/// refused before it starts, saying what to use instead; under `myopic` it runs.
#[tokio::test]
async fn a_feature_calibration_under_the_optimal_threshold_is_refused_with_the_way_out() {
    use handoff::competence::features::{FeatureModel, N_FEATURES};
    let files = tempfile::tempdir().expect("tempdir");
    let mut c = Calibration::prior();
    c.features = Some(FeatureModel {
        knots: vec![0.0, 1000.0],
        weights: vec![vec![0.0; N_FEATURES]; 2],
        half_life: 64.0,
        link: None,
    });
    let path = files.path().join("features.json");
    std::fs::write(&path, c.to_json()).expect("write calibration");
    let (j, s) = servers(
        Script::new(vec![write_done(), finish()]),
        Script::new(vec![]),
    )
    .await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.calibration = Some(path);
    cfg.policy.threshold = handoff::config::ThresholdKind::Optimal;
    let refused = handoff::app::wiring::prepare(
        cfg.clone(),
        dir.path(),
        "create done.txt",
        Approvals::Refused,
        None,
    );
    let message = match refused {
        Ok(_) => panic!("a feature calibration under threshold = optimal was accepted"),
        Err(e) => format!("{e:#}"),
    };
    for part in [
        "feature model",
        "handoff schedule",
        "threshold = \"steps\"",
        "myopic",
    ] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    // `doctor` says so before a session is tried.
    let path = write_config(files.path(), &cfg);
    let (text, line) = super::support::doctor_line(&path, "threshold:").await;
    assert!(
        line.contains("optimal, unusable") && line.contains("feature model"),
        "{text}"
    );
    cfg.policy.threshold = handoff::config::ThresholdKind::Myopic;
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert!(
        ran.events
            .iter()
            .any(|e| matches!(e, Event::SessionEnded { .. })),
        "the session under myopic ran to its end"
    );
}
