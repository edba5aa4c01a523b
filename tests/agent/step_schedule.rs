//! A step schedule (`threshold = "steps"`, the file `handoff schedule --write` writes)
//! executed by the live loop: no decision between step ends, τ_k right after junior step k.

use handoff::agent::session::Approvals;
use handoff::config::{Config, ThresholdKind};
use handoff::demo::script::{confident, reply};
use handoff::demo::server::{Reply, Script};
use handoff::protocol::{Actor, EscalationReason, Event};
use serde_json::json;

use super::support::{FILES, Ran, config, finish, repo, run, servers};

fn search(pattern: &str) -> Reply {
    reply(
        confident("Looking around the repository."),
        Some(("c1", "search", json!({ "pattern": pattern }))),
    )
}

/// A junior that searches four times (four different moves, so no loop rule fires), then
/// finishes.
fn searching_junior() -> Script {
    Script::new(vec![
        search("alpha"),
        search("beta"),
        search("gamma"),
        search("delta"),
        finish(),
    ])
}

fn with_steps(mut c: Config, taus: &[f64], dir: &std::path::Path) -> Config {
    let path = dir.join("schedule.json");
    let text = json!({ "clock": "junior step ends", "tau": taus }).to_string();
    std::fs::write(&path, text).expect("write schedule");
    c.policy.threshold = ThresholdKind::Steps;
    c.policy.step_schedule = Some(path);
    c
}

/// (index in the log, step, threshold, reason) of each real hand-off.
fn handoffs(ran: &Ran) -> Vec<(usize, u32, f64, EscalationReason)> {
    ran.events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Escalated {
                step,
                threshold,
                reason,
                shadow: false,
                ..
            } => Some((i, *step, *threshold, *reason)),
            _ => None,
        })
        .collect()
}

/// Log indices of the junior's step ends.
fn junior_step_ends(ran: &Ran) -> Vec<usize> {
    ran.events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::StepEnded {
                actor: Actor::Junior,
                ..
            } => Some(i),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_loop_hands_off_at_the_step_end_the_schedule_names() {
    // τ 0 at the first two step ends, 1 at the third: whatever the belief, the hand-off is
    // right after step 3.
    let (j, s) = servers(searching_junior(), Script::new(vec![finish()])).await;
    let dir = repo(&FILES);
    let files = tempfile::tempdir().expect("tempdir");
    let c = with_steps(config(&j, &s), &[0.0, 0.0, 1.0], files.path());
    let ran = run(c, dir.path(), "look around", vec![], Approvals::Refused).await;
    let h = handoffs(&ran);
    assert_eq!(h.len(), 1, "{:?}", ran.kinds());
    let (at, _, tau, reason) = h[0];
    assert_eq!(reason, EscalationReason::Threshold);
    assert_eq!(tau, 1.0, "τ_3");
    let ends = junior_step_ends(&ran);
    let before = ends.iter().filter(|&&i| i < at).count();
    assert_eq!(
        before,
        3,
        "handed off after the third junior step: {:?}",
        ran.kinds()
    );
}

#[tokio::test]
async fn a_step_schedule_does_not_decide_mid_step_where_a_constant_does() {
    // τ = 1 everywhere: a constant fires on the first token, before any step has ended; the
    // step schedule with τ_1 = 1 waits for the end of step 1.
    for steps in [false, true] {
        let (j, s) = servers(searching_junior(), Script::new(vec![finish()])).await;
        let dir = repo(&FILES);
        let files = tempfile::tempdir().expect("tempdir");
        let mut c = config(&j, &s);
        c.policy.constant = 1.0;
        if steps {
            c = with_steps(c, &[1.0], files.path());
        }
        let ran = run(c, dir.path(), "look around", vec![], Approvals::Refused).await;
        let h = handoffs(&ran);
        assert!(!h.is_empty(), "steps {steps}: {:?}", ran.kinds());
        let first_end = junior_step_ends(&ran).first().copied();
        let fired_before_any_step_end = first_end.is_none_or(|e| h[0].0 < e);
        assert_eq!(
            fired_before_any_step_end,
            !steps,
            "steps {steps}: hand-off at {}, first junior step end {first_end:?}: {:?}",
            h[0].0,
            ran.kinds()
        );
    }
}

#[test]
fn a_missing_or_bad_schedule_file_is_a_clear_error() {
    let files = tempfile::tempdir().expect("tempdir");
    let mut c = Config::default();
    c.policy.threshold = ThresholdKind::Steps;
    let e = handoff::judge::SessionJudge::from_config(&c).expect_err("no file named");
    assert!(e.to_string().contains("policy.step_schedule"), "{e}");
    let path = files.path().join("bad.json");
    std::fs::write(&path, "{\"tau\": [0.2, 1.5]}").expect("write");
    c.policy.step_schedule = Some(path);
    let e = handoff::judge::SessionJudge::from_config(&c).expect_err("τ out of range");
    assert!(e.to_string().contains("tau[1]"), "{e}");
}

#[tokio::test]
async fn doctor_says_whether_the_step_schedule_is_usable() {
    let (j, s) = servers(searching_junior(), Script::new(vec![finish()])).await;
    let files = tempfile::tempdir().expect("tempdir");
    for (taus, expect) in [
        (Some(&[0.2, 0.4][..]), "steps: 2 thresholds"),
        (None, "unusable"),
    ] {
        let mut c = config(&j, &s);
        if let Some(t) = taus {
            c = with_steps(c, t, files.path());
        } else {
            c.policy.threshold = ThresholdKind::Steps;
            c.policy.step_schedule = Some(files.path().join("absent.json"));
        }
        let path = super::support::write_config(files.path(), &c);
        let (text, line) = super::support::doctor_line(&path, "threshold:").await;
        assert!(line.contains(expect), "{text}");
    }
}
