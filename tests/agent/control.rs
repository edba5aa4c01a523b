//! The operator's commands and what the session does with them, in every wait: each
//! state-changing command is answered by a `control_changed` event, none is lost, and the
//! log replays what the screen showed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use handoff::agent::session::Approvals;
use handoff::analysis::replay::rescore;
use handoff::app::operator::PreparedAnswer;
use handoff::config::{Approval, NoOperator, RouteMode};
use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::{Reply, Script};
use handoff::judge::SessionJudge;
use handoff::metrics::ask_table;
use handoff::metrics::session::summarize;
use handoff::protocol::{AskCounts, Command, EscalationReason, Event};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{FILES, React, config, drive, finish, lost, repo, run, servers, write_done};

fn control(paused: bool) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::ControlChanged { paused: p, .. } if *p == paused)
}

fn step_started(n: u32) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::StepStarted { step, .. } if *step == n)
}

/// What the operator does once the pause is acknowledged: resume a while later.
fn resume_later() -> Vec<React> {
    vec![
        React::Wait(Duration::from_millis(400)),
        React::Send(Command::Resume),
    ]
}

/// The pause was acknowledged, then the resume, and only then did step 2 start.
fn held_step_two_until_resumed(driven: &super::support::Driven) {
    let paused = driven
        .position(control(true))
        .expect("the pause was acknowledged");
    let resumed = driven
        .position(control(false))
        .expect("the resume was acknowledged");
    let second = driven.position(step_started(2)).expect("a second step");
    assert!(paused < resumed && resumed < second, "{:?}", driven.events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_during_a_retry_backoff_is_kept_and_the_backoff_runs_its_course() {
    let junior = Script::new(vec![
        Reply::error(429, "slow down").with_header("retry-after", "1"),
        write_done(),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let cfg = config(&j, &s);
    let driven = drive(
        cfg,
        dir.path(),
        "create done.txt",
        Approvals::Refused,
        |e| match e {
            Event::Fault { .. } => vec![React::Send(Command::Pause)],
            Event::ControlChanged { paused: true, .. } => resume_later(),
            _ => vec![],
        },
    )
    .await;
    held_step_two_until_resumed(&driven);
    // The backoff ran its full second: the pause did not cut it short.
    let at: Vec<_> = j.requests().iter().map(|r| r.received).collect();
    assert!(
        at[1] - at[0] >= Duration::from_millis(900),
        "{:?}",
        at[1] - at[0]
    );
}

fn approval_config(
    j: &handoff::demo::server::ScriptedServer,
    s: &handoff::demo::server::ScriptedServer,
) -> handoff::config::Config {
    let mut cfg = config(j, s);
    cfg.agent.approval = Approval::OnWrite;
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_and_resume_during_an_approval_are_honoured() {
    let junior = Script::new(vec![write_done(), finish()]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let driven = drive(
        approval_config(&j, &s),
        dir.path(),
        "create done.txt",
        Approvals::Interactive,
        |e| match e {
            Event::ApprovalRequested { call_id, .. } => vec![
                React::Send(Command::Pause),
                React::Send(Command::Approve {
                    call_id: call_id.clone(),
                    approved: true,
                }),
            ],
            Event::ControlChanged { paused: true, .. } => resume_later(),
            _ => vec![],
        },
    )
    .await;
    held_step_two_until_resumed(&driven);
    assert!(
        dir.path().join("done.txt").exists(),
        "the approved call ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_escalation_during_an_approval_discards_the_call_and_hands_off() {
    let junior = Script::new(vec![write_done(), finish()]);
    let (j, s) = servers(junior, Script::new(vec![finish()])).await;
    let dir = repo(&FILES);
    let driven = drive(
        approval_config(&j, &s),
        dir.path(),
        "create done.txt",
        Approvals::Interactive,
        |e| match e {
            Event::ApprovalRequested { .. } => vec![React::Send(Command::ForceEscalate)],
            _ => vec![],
        },
    )
    .await;
    let reasons: Vec<EscalationReason> = driven
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Escalated { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![EscalationReason::Forced]);
    assert!(driven.events.iter().any(|e| matches!(
        e,
        Event::ApprovalDecided {
            approved: false,
            ..
        }
    )));
    assert_eq!(driven.count("senior_took_over"), 1);
    assert!(
        !dir.path().join("done.txt").exists(),
        "the discarded call never ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_toggle_is_logged_and_replay_reproduces_its_decisions() {
    let junior = Script::new(vec![
        reply(
            confident("Reading notes."),
            Some(("c1", "read_file", json!({"path": "notes.txt"}))),
        ),
        reply(
            join([confident("Now"), hesitant(&lost())]),
            Some((
                "c2",
                "write_file",
                json!({"path": "done.txt", "content": "x"}),
            )),
        ),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let cfg = config(&j, &s);
    let judge = SessionJudge::from_config(&cfg)
        .expect("judge")
        .judge()
        .clone();
    let cooldown = cfg.policy.cooldown_steps;
    let driven = drive(
        cfg,
        dir.path(),
        "create done.txt",
        Approvals::Refused,
        |e| match e {
            Event::StepEnded { step: 1, .. } => {
                vec![React::Send(Command::SetShadow { on: true })]
            }
            _ => vec![],
        },
    )
    .await;
    assert!(
        driven
            .events
            .iter()
            .any(|e| matches!(e, Event::ControlChanged { shadow: true, .. })),
        "the toggle is a logged fact"
    );
    assert_eq!(s.requests().len(), 0, "shadow mode handed nothing off");
    let logged: Vec<u64> = driven
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Escalated {
                tick, shadow: true, ..
            } => Some(*tick),
            _ => None,
        })
        .collect();
    assert_eq!(logged.len(), 1, "{:?}", driven.events);
    let rescored = rescore(driven.events.iter(), judge, cooldown);
    assert_eq!(rescored.escalations, logged);
}

#[tokio::test]
async fn a_deferred_self_ask_escalates_once_and_asks_no_second_question() {
    let junior = Script::new(vec![reply(
        confident("I need to ask."),
        Some((
            "c1",
            "ask_operator",
            json!({"question": "Which name?", "options": ["a.txt", "b.txt"]}),
        )),
    )]);
    let (j, s) = servers(junior, Script::new(vec![finish(), finish()])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.route = RouteMode::Operator;
    cfg.agent.no_operator = NoOperator::Senior;
    let ran = run(
        cfg,
        dir.path(),
        "create the file",
        Vec::<PreparedAnswer>::new(),
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.count("escalated"), 1, "{:?}", ran.kinds());
    assert_eq!(ran.count("operator_asked"), 1, "{:?}", ran.kinds());
    assert_eq!(ran.count("senior_took_over"), 1, "{:?}", ran.kinds());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_end_counts_ask_f1_by_the_rule_report_uses() {
    let junior = Script::new(vec![
        reply(
            confident("Reading notes."),
            Some(("c1", "read_file", json!({"path": "notes.txt"}))),
        ),
        write_done(),
        finish(),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![finish()])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.route = RouteMode::Operator;
    cfg.agent.check = Some("test -f done.txt".into());
    let forced = Arc::new(Mutex::new(false));
    let driven = drive(
        cfg,
        dir.path(),
        "create done.txt",
        Approvals::Refused,
        move |e| match e {
            Event::SessionStarted { .. } => vec![React::Send(Command::ForceEscalate)],
            Event::OperatorAsked { .. } => {
                *forced.lock().expect("lock") = true;
                vec![React::Send(Command::Answer {
                    answer: "done.txt".into(),
                    needed: Some(false),
                })]
            }
            _ => vec![],
        },
    )
    .await;
    let summaries = summarize(std::path::Path::new("log"), driven.events.clone());
    let pooled = ask_table(&[summaries[0].ask_session()]).pooled;
    let recount = AskCounts {
        tp: pooled.tp as u32,
        fp: pooled.fp as u32,
        fn_: pooled.fn_ as u32,
    };
    let ended = driven.events.iter().find_map(|e| match e {
        Event::SessionEnded { ask, usd, .. } => Some((*ask, *usd)),
        _ => None,
    });
    assert_eq!(
        ended,
        Some((
            recount,
            summaries[0].cost.junior_usd + summaries[0].cost.senior_usd
        ))
    );
    assert_eq!(driven.end.ask, recount);
    // A forced escalation is the operator's decision, not the system's: not scored.
    assert_eq!(recount, AskCounts::default());
    assert_eq!(driven.count("escalated"), 1);
}

/// A quit while `run` runs stops the command at once (its tree is killed) instead of
/// waiting for it; a pause meanwhile is still acknowledged. The session ends `aborted`
/// with the step recorded. The command runs 40 s; `drive` gives up after 30.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quit_while_a_command_runs_stops_it_at_once() {
    let (j, s) = servers(super::support::one_command("sleep 40"), Script::new(vec![])).await;
    let dir = repo(&FILES);
    let started = std::time::Instant::now();
    let driven = drive(
        config(&j, &s),
        dir.path(),
        "sleep",
        Approvals::Refused,
        |e| match e {
            Event::ToolCalled { .. } => vec![
                React::Wait(Duration::from_millis(300)),
                React::Send(Command::Pause),
            ],
            Event::ControlChanged { paused: true, .. } => vec![React::Send(Command::Quit)],
            _ => vec![],
        },
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(driven.end.outcome, handoff::protocol::Outcome::Aborted);
    let output = driven.events.iter().find_map(|e| match e {
        Event::ToolResulted {
            ok: false, output, ..
        } => Some(output.clone()),
        _ => None,
    });
    assert!(
        output
            .as_deref()
            .is_some_and(|o| o.contains("stopped while `run` ran")),
        "{output:?}"
    );
    assert!(driven.count("step_ended") == 1, "{:?}", driven.events);
    assert!(
        matches!(driven.events.last(), Some(Event::SessionEnded { .. })),
        "{:?}",
        driven.events.last()
    );
}
