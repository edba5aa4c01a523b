//! `calibrate` against logs with a known generative process.

use std::process::Command;

use handoff::analysis::calibrate::{CalibrateOptions, calibrate, load, read_sessions};
use handoff::competence::Calibration;
use handoff::config::Config;
use handoff::sim::{LogOptions, World, write_logs};
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::synthetic::{Kind, corpus, corpus_dir, session};

#[test]
fn two_thousand_simulator_sessions_give_a_calibrated_judge() {
    let dir = corpus_dir();
    let options = LogOptions {
        sessions: 2000,
        seed: 11,
        ..LogOptions::default()
    };
    let world = World::default();
    let bar = indicatif::ProgressBar::hidden();
    let written = write_logs(&world, dir.path(), &options, &bar).expect("simulate");
    assert_eq!(written.sessions, 2000);
    let corpus = load(&[dir.path().to_path_buf()], false);
    assert_eq!((corpus.files, corpus.sessions.len()), (2000, 2000));
    assert!(corpus.warnings.is_empty(), "{:?}", corpus.warnings);
    // Half held out: with 400 held-out sessions the ECE's own sampling noise is about
    // the size of the bar; with 1,000 it is well below.
    let opts = CalibrateOptions {
        holdout: 0.5,
        ..CalibrateOptions::default()
    };
    let (cal, report) = calibrate(&corpus, &opts, &Config::default()).expect("fit");
    // Shown with `--nocapture`: what `handoff calibrate` prints for this corpus.
    eprintln!("{}", report.to_text());
    let c = report.counts;
    // Shadow sessions: never censored, all labelled, all used.
    assert_eq!((c.censored_skipped, c.unlabelled, c.incomplete), (0, 0, 0));
    assert_eq!(c.train + c.holdout, 2000);
    assert!((900..1100).contains(&c.holdout), "{c:?}");
    let h = report.holdout.as_ref().expect("held-out scores");
    assert_eq!(h.sessions, c.holdout);
    assert_eq!(h.forecasts, 10 * c.holdout);
    let ece_mass = h.ece_mass10.expect("ece");
    let ece_width = h.ece_width15.expect("ece");
    assert!(
        ece_mass <= 0.03,
        "equal-mass ECE {ece_mass}\n{}",
        report.to_text()
    );
    assert!(
        ece_width <= 0.03,
        "equal-width ECE {ece_width}\n{}",
        report.to_text()
    );
    // The evidence is worth something: better than the prior, and it ranks sessions.
    assert!(h.brier.expect("brier") < h.brier_prior.expect("brier") - 0.05);
    assert!(h.auroc.expect("auroc") > 0.8, "{:?}", h.auroc);
    // Beliefs sharpen over a trajectory: late forecasts score better than early ones.
    let first = h.by_fraction[0].brier.expect("brier");
    let last = h.by_fraction[9].brier.expect("brier");
    assert!(last < first, "Brier {first} at 10 % vs {last} at 100 %");
    // At fixed ticks among the sessions still running (the simulator's run 40 ticks):
    // 8, 16 and 32, every held-out session at each, and sharper later.
    let ticks: Vec<usize> = h.by_tick.iter().map(|t| t.tick).collect();
    assert_eq!(ticks, vec![8, 16, 32], "{:?}", h.by_tick);
    assert!(h.by_tick.iter().all(|t| t.sessions == c.holdout));
    let (early, late) = (&h.by_tick[0], &h.by_tick[2]);
    assert!(
        late.brier.expect("brier") < early.brier.expect("brier"),
        "{early:?} vs {late:?}"
    );
    assert!(
        report
            .to_text()
            .contains("at a fixed tick, the sessions still running")
    );
    // The simulator's ticks are independent given Y: tempering close to 1.
    assert!(
        (0.75..1.25).contains(&cal.tempering),
        "c = {}",
        cal.tempering
    );
    // The base rate is the world's.
    assert!((cal.prior - world.prior).abs() < 0.05, "π₀ {}", cal.prior);
    // The written document reads back.
    let back = Calibration::from_json(&cal.to_json()).expect("round trip");
    assert_eq!(back.signals.len(), cal.signals.len());
    // A schedule for the default costs over the default budget, τ within [0, 1].
    assert!(report.schedule.len() >= 2);
    assert!(report.schedule.iter().all(|p| (0.0..=1.0).contains(&p.tau)));
}

/// The censored sessions this test needs are ones the simulator does not write (it logs
/// shadow sessions only), so it uses the small generator of `synthetic.rs`.
#[test]
fn including_censored_sessions_is_a_choice_and_it_biases_the_fit() {
    let dir = corpus_dir();
    corpus(dir.path(), 300, 2, 2);
    let corpus = load(&[dir.path().to_path_buf()], false);
    let opts = CalibrateOptions::default();
    let (left_out, r1) = calibrate(&corpus, &opts, &Config::default()).expect("fit");
    let with = CalibrateOptions {
        include_censored: true,
        ..opts
    };
    let (taken, r2) = calibrate(&corpus, &with, &Config::default()).expect("fit");
    assert_eq!(r1.counts.censored_skipped, 150);
    assert_eq!(r2.counts.censored_skipped, 0);
    assert_eq!(r2.counts.train + r2.counts.holdout, 300);
    // Censored sessions all say "success": the base rate rises when they are let in.
    assert!(
        taken.prior > left_out.prior + 0.1,
        "{} vs {}",
        taken.prior,
        left_out.prior
    );
}

#[test]
fn trajectories_hold_exactly_the_logged_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = StdRng::seed_from_u64(5);
    let (events, y) = session(&mut rng, "one", Kind::Plain);
    let ticks = events
        .iter()
        .filter_map(|e| match e {
            handoff::protocol::Event::SessionEnded { ticks, .. } => Some(*ticks),
            _ => None,
        })
        .next()
        .expect("end");
    let steps = events
        .iter()
        .filter(|e| matches!(e, handoff::protocol::Event::StepEnded { .. }))
        .count();
    let path = dir.path().join("one.jsonl");
    let mut w = handoff::log::LogWriter::new(&path, "d");
    for (i, event) in events.into_iter().enumerate() {
        w.append(&handoff::protocol::Stamped {
            t_ms: i as u64,
            event,
        })
        .expect("append");
    }
    w.close().expect("close");
    let (sessions, warnings) = read_sessions(&path).expect("read");
    assert!(warnings.is_empty());
    let s = &sessions[0];
    assert_eq!(s.trajectory.label, Some(y));
    assert_eq!(s.trajectory.ticks() as u64, ticks);
    // One entropy per token, every always-logged fact per step: the repeated token terms of
    // a step's update are not counted twice.
    let facts = handoff::competence::StepFacts::default()
        .observations()
        .len();
    assert_eq!(facts, 7);
    assert_eq!(
        s.trajectory.observations().len(),
        ticks as usize + facts * steps
    );
    // Re-scoring under the prior reproduces the beliefs the log shows at the end.
    let path_b = Calibration::prior().score(&s.trajectory);
    assert!(path_b.len() as u64 == ticks + 1);
}

#[test]
fn the_command_writes_the_calibration_the_json_report_and_the_plots() {
    let dir = corpus_dir();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    corpus(&logs, 200, 0, 3);
    std::fs::write(logs.join("broken.jsonl"), "not a log\n").expect("write");
    let out = dir.path().join("cal.json");
    let plots = dir.path().join("plots");
    let run = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("calibrate")
        .arg(&logs)
        .arg("-o")
        .arg(&out)
        .arg("--plot")
        .arg(&plots)
        .arg("--json")
        .arg("--holdout")
        .arg("0.3")
        .env_remove("HANDOFF_CONFIG")
        .env("XDG_CONFIG_HOME", dir.path())
        .output()
        .expect("run handoff");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).expect("json report");
    assert_eq!(report["files"], 201);
    assert_eq!(report["counts"]["read"], 200);
    let warnings = report["warnings"].as_array().expect("warnings");
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains("broken.jsonl"))),
        "{warnings:?}"
    );
    let ece = report["holdout"]["ece_mass10"].as_f64().expect("ece");
    assert!((0.0..0.2).contains(&ece), "{ece}");
    let text = std::fs::read_to_string(&out).expect("calibration written");
    let written = Calibration::from_json(&text).expect("a valid calibration");
    // The fit records the junior it saw, so a session with another junior can say so.
    let fitted = written.fitted_on.expect("fitted_on");
    assert_eq!(fitted.model, "j");
    assert_eq!(
        fitted.sessions,
        report["counts"]["train"].as_u64().expect("train") as usize
    );
    // The report splits by session here: every synthetic session logs the same task.
    assert_eq!(report["counts"]["split"], "session");
    for name in ["reliability.svg", "traces.svg"] {
        let svg = std::fs::read_to_string(plots.join(name)).expect("plot written");
        assert!(
            svg.starts_with("<svg") && svg.contains("<polyline"),
            "{name}"
        );
    }
}

#[test]
fn the_feature_model_says_which_ridge_it_chose_and_why() {
    let dir = corpus_dir();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    corpus(&logs, 200, 0, 3);
    let out = dir.path().join("cal.json");
    let run = |json: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_handoff"));
        cmd.args(["calibrate", "--model", "features"])
            .arg(&logs)
            .arg("-o")
            .arg(&out)
            .env_remove("HANDOFF_CONFIG")
            .env("XDG_CONFIG_HOME", dir.path());
        if json {
            cmd.arg("--json");
        }
        let output = cmd.output().expect("run handoff");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let text = run(false);
    let line = text
        .lines()
        .find(|l| l.contains("chosen by held-out log loss"))
        .unwrap_or_else(|| panic!("no ridge line in:\n{text}"));
    // Every candidate is named with its loss.
    for candidate in ["0.1: ", "1: ", "10: "] {
        assert!(line.contains(candidate), "{line}");
    }
    // No token-clock τ* for a feature model: the text says why and where to plan it.
    assert!(
        text.contains("τ*_t: not solved") && text.contains("handoff schedule"),
        "{text}"
    );
    let report: serde_json::Value = serde_json::from_str(&run(true)).expect("json report");
    assert_eq!(report["schedule"], serde_json::json!([]));
    assert!(
        report["schedule_refused"]
            .as_str()
            .is_some_and(|r| r.contains("feature model")),
        "{report}"
    );
    let fitted = report["fitted"].as_str().expect("fitted");
    assert!(fitted.starts_with("feature model fit on"), "{fitted}");
    let written = Calibration::from_json(&std::fs::read_to_string(&out).expect("written"))
        .expect("a valid calibration");
    assert!(written.features.is_some());
    assert_eq!(written.source, fitted);
}
