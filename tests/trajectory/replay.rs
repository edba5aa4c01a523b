//! Replay of live session logs: re-scored with the live calibration and policy, the judge
//! must reproduce every logged belief and every escalation tick; under another policy it
//! must say where the decisions part.

use handoff::agent::session::Approvals;
use handoff::analysis::replay::{
    Rescoring, counterfactual_config, judge_for, load_events, rescore,
};
use handoff::config::{Config, HandoffMode, RouteMode};
use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::{Reply, Script};
use handoff::demo::sse::completion;
use handoff::protocol::{Event, Outcome};
use serde_json::json;

// The agent tests' session helpers: running a real session is exactly what this needs.
use crate::agent::support::{FILES, config, finish, lost, repo, run, servers, write_done};

fn read_notes() -> Reply {
    reply(
        confident("Reading the notes file now."),
        Some(("c1", "read_file", json!({"path": "notes.txt"}))),
    )
}

fn hesitant_write() -> Reply {
    reply(
        join([confident("Now"), hesitant(&lost())]),
        Some((
            "c3",
            "write_file",
            json!({"path": "done.txt", "content": "done\n"}),
        )),
    )
}

/// Re-scores a log under `cfg` and checks it against what the live judge logged.
pub fn assert_reproduced(events: &[Event], cfg: &Config) -> Rescoring {
    let judge = judge_for(cfg).expect("judge");
    let r = rescore(events, judge, cfg.policy.cooldown_steps);
    let updates = events
        .iter()
        .filter(|e| matches!(e, Event::BeliefUpdated { .. }))
        .count();
    let logged: Vec<_> = r
        .points
        .iter()
        .filter_map(|p| p.logged.map(|l| (p, l)))
        .collect();
    assert_eq!(logged.len(), updates, "every logged update is re-scored");
    for (p, l) in &logged {
        assert!(
            (p.belief - l.belief).abs() <= 1e-9 && (p.log_odds - l.log_odds).abs() <= 1e-9,
            "tick {}: re-scored {} / {}, logged {} / {}",
            p.tick,
            p.belief,
            p.log_odds,
            l.belief,
            l.log_odds
        );
        assert!(
            (p.threshold - l.threshold).abs() <= 1e-12,
            "tick {}",
            p.tick
        );
    }
    let logged_ticks: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::BeliefUpdated { tick, .. } => Some(*tick),
            _ => None,
        })
        .collect();
    let rescored_ticks: Vec<u64> = logged.iter().map(|(p, _)| p.tick).collect();
    assert_eq!(rescored_ticks, logged_ticks);
    assert_eq!(
        r.escalations,
        r.logged_threshold_ticks(),
        "escalation ticks"
    );
    assert!(r.differ.is_empty(), "{:?}", r.differ);
    r
}

#[tokio::test]
async fn a_live_session_with_a_fault_a_cut_and_a_senior_step_is_reproduced() {
    let first = completion(
        &confident("Reading the notes file now."),
        &[("c1", "read_file", r#"{"path":"notes.txt"}"#)],
        10,
    );
    let junior = Script::new(vec![
        // The first stream drops after a few tokens: they stay counted, and are retried.
        Reply::dropped_after(first, 3),
        read_notes(),
        hesitant_write(),
        finish(),
    ]);
    let senior = Script::new(vec![write_done()]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.route = RouteMode::Senior;
    cfg.policy.handoff = HandoffMode::Step;
    cfg.agent.check = Some("test -f done.txt".into());
    let ran = run(
        cfg.clone(),
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    assert_eq!(ran.count("fault"), 1, "{:?}", ran.kinds());
    assert_eq!(ran.count("senior_returned"), 1, "{:?}", ran.kinds());
    let r = assert_reproduced(&ran.events, &cfg);
    assert_eq!(r.escalations.len(), 1);

    // Read back through the log reader too (what `handoff replay` does).
    let (stamped, warnings) = load_events(&ran.log).expect("log");
    assert!(warnings.is_empty());
    let plain: Vec<Event> = stamped.iter().map(|s| s.event.clone()).collect();
    assert_eq!(plain, ran.events);

    // A lower constant threshold would not have escalated: the decisions differ there.
    let lower = counterfactual_config(&cfg, None, Some("constant=0.05")).expect("policy");
    let cf = rescore(
        &ran.events,
        judge_for(&lower).expect("judge"),
        lower.policy.cooldown_steps,
    );
    assert!(cf.escalations.is_empty(), "{:?}", cf.escalations);
    assert!(!cf.differ.is_empty());
    let (first_differ, _) = cf.differ[0];
    assert!(first_differ <= r.escalations[0]);
    let text = handoff::app::present::replay_text(&stamped, Some(("policy constant=0.05", &cf)));
    assert!(text.contains("differ at ticks"), "{text}");
    assert!(
        text.contains(&format!("log at ticks {}", r.escalations[0])),
        "{text}"
    );
    assert!(text.contains("counterfactual at ticks none"), "{text}");
}

#[tokio::test]
async fn a_shadow_session_logs_its_crossings_and_replay_finds_the_same() {
    let junior = Script::new(vec![read_notes(), hesitant_write(), finish()]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.shadow = true;
    cfg.agent.check = Some("test -f done.txt".into());
    let ran = run(
        cfg.clone(),
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    let shadow_escalations = ran
        .events
        .iter()
        .filter(|e| matches!(e, Event::Escalated { shadow: true, .. }))
        .count();
    assert!(shadow_escalations >= 1, "{:?}", ran.kinds());
    let r = assert_reproduced(&ran.events, &cfg);
    assert_eq!(r.escalations.len(), shadow_escalations);
}
