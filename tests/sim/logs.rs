//! Simulated sessions as session logs: ordinary logs, readable by the log reader, whose raw
//! term values are enough to fit a calibrated judge.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use handoff::competence::calibrator::{MapKind, sigmoid};
use handoff::competence::{FitOptions, Observation, Trajectory, fit};
use handoff::log::{LogReader, log_files};
use handoff::metrics::{Binning, Forecast, ece};
use handoff::protocol::{Event, Outcome};
use handoff::sim::{LogOptions, SessionPlan, World, write_logs};

use crate::agent::support::{json_of, succeeded};

fn write(dir: &Path, sessions: usize, seed: u64) -> Vec<PathBuf> {
    let options = LogOptions {
        sessions,
        seed,
        ..LogOptions::default()
    };
    let bar = indicatif::ProgressBar::hidden();
    let written = write_logs(&World::default(), dir, &options, &bar).expect("write");
    assert_eq!(written.sessions, sessions);
    let (files, errors) = log_files(&[dir.to_path_buf()]);
    assert!(errors.is_empty());
    assert_eq!(files.len(), sessions);
    files
}

/// One session read back the way a calibrator should: per tick, the terms of the last
/// `BeliefUpdated` at that tick are all the evidence of the tick (a step end repeats the
/// tick's token terms and adds the step facts, as a live session does).
struct ReadBack {
    trajectory: Trajectory,
    /// (tick, logged log-odds, logged belief, replayed log-odds) at each tick's last update.
    checks: Vec<(u64, f64, f64, f64)>,
    prior: f64,
}

fn read_file(path: &Path) -> ReadBack {
    let reader = LogReader::open(path).expect("open");
    read_back(reader.map(|line| line.expect("no damaged lines").event))
}

fn read_back(events: impl Iterator<Item = Event>) -> ReadBack {
    let mut prior = f64::NAN;
    let mut label = None;
    let mut ticks: Vec<(u64, f64, f64, Vec<Observation>, f64)> = Vec::new();
    for event in events {
        match event {
            Event::SessionStarted {
                shadow,
                prior: p,
                token_budget,
                ..
            } => {
                assert!(shadow);
                assert_eq!(token_budget, 40);
                prior = p;
            }
            Event::BeliefUpdated {
                tick,
                belief,
                log_odds,
                terms,
                ..
            } => {
                let obs: Vec<Observation> = terms
                    .iter()
                    .map(handoff::protocol::EvidenceTerm::observation)
                    .collect();
                let llr: f64 = terms.iter().map(|t| t.llr).sum();
                for t in &terms {
                    if t.signal.is_token_signal() {
                        assert!(t.value > 0.0 && t.value < 1.0, "{t:?}");
                    } else {
                        assert!(t.value == 0.0 || t.value == 1.0, "{t:?}");
                    }
                }
                // A second update at a tick is the step's own facts: add them to the tick.
                match ticks.last_mut() {
                    Some(last) if last.0 == tick => {
                        last.1 = log_odds;
                        last.2 = belief;
                        last.3.extend(obs);
                        last.4 += llr;
                    }
                    _ => ticks.push((tick, log_odds, belief, obs, llr)),
                }
            }
            Event::SessionEnded {
                outcome, censored, ..
            } => {
                assert!(!censored);
                label = match outcome {
                    Outcome::Success => Some(true),
                    Outcome::Failure => Some(false),
                    other => panic!("unexpected outcome {other:?}"),
                };
            }
            _ => {}
        }
    }
    let mut trajectory = Trajectory::new(label);
    let mut replayed = (prior / (1.0 - prior)).ln();
    let mut checks = Vec::new();
    for (i, (tick, log_odds, belief, obs, llr)) in ticks.into_iter().enumerate() {
        assert_eq!(tick, i as u64 + 1, "one tick after another");
        trajectory.push_tick(&obs);
        replayed += llr;
        checks.push((tick, log_odds, belief, replayed));
    }
    assert!(label.is_some(), "the session has no outcome");
    ReadBack {
        trajectory,
        checks,
        prior,
    }
}

#[test]
fn logged_beliefs_are_the_sum_of_the_logged_terms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write(dir.path(), 40, 3);
    let plan = SessionPlan::new(
        &World::default(),
        &LogOptions {
            seed: 3,
            ..LogOptions::default()
        },
    )
    .expect("plan");
    for (i, f) in files.iter().enumerate() {
        // The file holds exactly the session the plan makes in memory (compared as text:
        // serde_json's float parser may be one ulp off).
        let text = std::fs::read_to_string(f).expect("read");
        let lines: Vec<&str> = text.lines().skip(1).collect();
        let events = plan.session(i).expect("session").events;
        let want: Vec<String> = events
            .iter()
            .map(|e| serde_json::to_string(e).expect("encode"))
            .collect();
        assert_eq!(lines, want);
        let back = read_file(f);
        assert_eq!(back.prior, 0.6);
        assert_eq!(back.trajectory.ticks(), 40);
        for (tick, logged, belief, replayed) in back.checks {
            assert!((logged - replayed).abs() < 1e-9, "tick {tick}");
            assert!((belief - sigmoid(logged)).abs() < 1e-12);
        }
    }
}

#[test]
fn logs_are_deterministic_per_seed_and_never_overwritten() {
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    let fa = write(a.path(), 5, 9);
    let fb = write(b.path(), 5, 9);
    for (x, y) in fa.iter().zip(&fb) {
        let read = |p: &Path| std::fs::read_to_string(p).expect("read");
        assert_eq!(read(x), read(y));
    }
    let options = LogOptions {
        sessions: 5,
        seed: 9,
        ..LogOptions::default()
    };
    let again = write_logs(
        &World::default(),
        a.path(),
        &options,
        &indicatif::ProgressBar::hidden(),
    );
    assert!(again.is_err(), "existing logs must not be overwritten");
}

#[test]
fn a_judge_fitted_on_the_logged_values_is_calibrated() {
    // In memory: the same events the files hold (checked above), without 2,000 files to
    // delete afterwards (removing synced files is slow on some disks).
    let plan = SessionPlan::new(&World::default(), &LogOptions::default()).expect("plan");
    let sessions: Vec<ReadBack> = (0..2000)
        .map(|i| {
            let s = plan.session(i).expect("session");
            read_back(s.events.into_iter().map(|e| e.event))
        })
        .collect();
    let (train, test): (Vec<_>, Vec<_>) =
        sessions.iter().enumerate().partition(|(i, _)| i % 5 != 0);
    let train: Vec<Trajectory> = train.iter().map(|(_, s)| s.trajectory.clone()).collect();
    let options = FitOptions {
        map: MapKind::Platt,
        ..FitOptions::default()
    };
    let (calibration, report) = fit(&train, &options).expect("fit");
    assert!(report.log_loss_fitted < report.log_loss_prior);
    let mut forecasts = Vec::new();
    let mut gap = 0.0;
    for (_, s) in &test {
        let path = calibration.score(&s.trajectory);
        let success = s.trajectory.label == Some(true);
        for t in [10usize, 20, 30, 40] {
            forecasts.push(Forecast::new(path[t], success));
            gap += (path[t] - sigmoid(s.checks[t - 1].3)).abs();
        }
    }
    let e = ece(&forecasts, Binning::EqualWidth(15)).expect("ece");
    let gap = gap / forecasts.len() as f64;
    assert!(e <= 0.03, "ECE {e}");
    assert!(gap < 0.05, "mean |B̂ − B| {gap}");
}

/// `handoff ARGS…`, its output whatever it was.
fn handoff(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(args)
        .output()
        .expect("run handoff")
}

#[test]
fn the_command_writes_logs_that_report_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let sim = ["simulate", "--sessions", "30", "--seed", "4", "--logs"].map(OsStr::new);
    succeeded(handoff(&[&sim[..], &[logs.as_os_str()]].concat()));
    assert_eq!(log_files(std::slice::from_ref(&logs)).0.len(), 30);
    let v = json_of(handoff(&[
        OsStr::new("report"),
        OsStr::new("--json"),
        logs.as_os_str(),
    ]));
    assert_eq!(v["sessions"], 30);
    assert_eq!(v["shadow_sessions"], 30);
    assert_eq!(v["censored"], 0);
    let (ok, failed) = (&v["outcomes"]["success"], &v["outcomes"]["failure"]);
    assert_eq!(ok.as_u64().expect("n") + failed.as_u64().expect("n"), 30);
}

#[test]
fn explore_writes_censored_logs_that_calibrate_weights_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let sim = [
        "simulate",
        "--sessions",
        "200",
        "--seed",
        "3",
        "--explore",
        "0.3",
        "--logs",
    ]
    .map(OsStr::new);
    succeeded(handoff(&[&sim[..], &[logs.as_os_str()]].concat()));
    let v = json_of(handoff(&[
        OsStr::new("report"),
        OsStr::new("--json"),
        logs.as_os_str(),
    ]));
    assert_eq!(v["sessions"], 200);
    // Live sessions: some handed off (censored), some explored (shadow from then on).
    let censored = v["censored"].as_u64().expect("censored");
    let shadow = v["shadow_sessions"].as_u64().expect("shadow");
    assert!(censored > 0, "{v}");
    assert!(shadow < 200, "{v}");
    let weighted = succeeded(handoff(&[OsStr::new("calibrate"), logs.as_os_str()]));
    let text = String::from_utf8_lossy(&weighted);
    assert!(
        text.contains("uncensored by exploration; weighted by inverse propensity"),
        "{text}"
    );

    for bad in ["1", "-0.1", "nan"] {
        let flag = format!("--explore={bad}");
        let out_dir = dir.path().join(format!("bad-{bad}"));
        let sim = ["simulate", "--sessions", "2", &flag, "--logs"].map(OsStr::new);
        let out = handoff(&[&sim[..], &[out_dir.as_os_str()]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{bad}: {err}");
        assert!(err.contains("--explore"), "{bad}: {err}");
    }
}
