use handoff::agent::session::Approvals;
use handoff::app::operator::PreparedAnswer;
use handoff::config::{Approval, HandoffMode, RouteMode};
use handoff::demo::script::{confident, hesitant, join, reply};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{Tok, completion};
use handoff::protocol::{EscalationReason, Event, Outcome, Route};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{FILES, Ran, config, finish, lost, repo, run, servers, write_done};

#[tokio::test]
async fn a_confident_junior_finishes_alone_and_the_check_labels_success() {
    let junior = Script::new(vec![
        reply(
            confident("Reading notes."),
            Some(("c1", "read_file", json!({"path": "notes.txt"}))),
        ),
        write_done(),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some("test -f done.txt".into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    assert_eq!(ran.summary.escalations.len(), 0);
    assert_eq!(s.requests().len(), 0, "the senior was never called");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("done.txt")).expect("written"),
        "done\n"
    );
    assert_eq!(ran.count("session_started"), 1);
    assert_eq!(ran.count("step_ended"), 3);
    assert_eq!(ran.events.last().map(Event::kind), Some("session_ended"));
    // Every junior token was judged: one belief update per token at least.
    assert!(ran.count("belief_updated") >= ran.count("token"));
    // The request carried the tools and asked for logprobs.
    let body = &j.bodies()[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["logprobs"], true);
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(
        tools,
        vec![
            "list_files",
            "read_file",
            "search",
            "apply_patch",
            "write_file",
            "run",
            "ask_operator",
            "finish"
        ]
    );
}

/// The junior makes the confident call `first`, then loses confidence while proposing
/// `second` and is cut; the senior, routed to directly under `mode`, writes done.txt and
/// finishes; `check` labels the result. (the run, its repository, the senior's server)
async fn cut_and_taken_over(
    first: (&str, serde_json::Value),
    second: (&str, serde_json::Value),
    mode: HandoffMode,
    check: &str,
) -> (Ran, tempfile::TempDir, ScriptedServer) {
    let junior = Script::new(vec![
        reply(confident("First."), Some(("c1", first.0, first.1))),
        reply(
            join([confident("Now"), hesitant(&lost())]),
            Some(("c2", second.0, second.1)),
        ),
    ]);
    let senior = Script::new(vec![write_done(), finish()]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.route = RouteMode::Senior;
    cfg.policy.handoff = mode;
    cfg.agent.check = Some(check.into());
    let task = "create done.txt";
    let ran = run(cfg, dir.path(), task, vec![], Approvals::Refused).await;
    (ran, dir, s)
}

#[tokio::test]
async fn degrading_logprobs_cut_the_junior_and_the_senior_finishes() {
    let (ran, dir, s) = cut_and_taken_over(
        ("read_file", json!({"path": "notes.txt"})),
        ("write_file", json!({"path": "wrong.txt", "content": "x"})),
        HandoffMode::Rest,
        "test -f done.txt",
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    let esc = &ran.summary.escalations;
    assert_eq!(esc.len(), 1, "{esc:?}");
    assert_eq!(esc[0].route, Route::Senior);
    assert_eq!(esc[0].reason, EscalationReason::Threshold);
    assert!(esc[0].belief < esc[0].threshold);
    assert_eq!(esc[0].step, 2);
    // The cut was mid-stream: the junior's proposed write never touched the repository.
    assert!(!dir.path().join("wrong.txt").exists());
    // The senior got the distilled handoff note with the task and the reason.
    let note = s.bodies()[0]["messages"][1]["content"]
        .as_str()
        .expect("note")
        .to_string();
    assert!(
        note.contains("create done.txt") && note.contains("unlikely to finish"),
        "{note}"
    );
    // Distilled, never the junior's raw calls: the read of notes.txt is not in it.
    assert!(
        !note.contains("read_file") && !note.contains("\"path\""),
        "{note}"
    );
    assert!(note.contains("(no changes)"), "{note}");
    assert!(ran.count("senior_took_over") == 1);
    match ran.events.iter().find(|e| e.kind() == "session_ended") {
        Some(Event::SessionEnded { censored, .. }) => assert!(*censored),
        other => panic!("no session end: {other:?}"),
    }
}

#[tokio::test]
async fn triage_sends_one_question_to_the_operator_and_the_answer_reaches_the_junior() {
    let junior = Script::new(vec![
        reply(join([confident("Which"), hesitant(&lost())]), None),
        write_done(),
        finish(),
    ]);
    let verdict = json!({"route": "operator", "question": "Which file name?", "options": ["done.txt", "x.txt"],
        "default_assumption": "done.txt", "reason": "name unstated"});
    let senior = Script::new(vec![Reply::sse(
        completion(&[Tok::new(&verdict.to_string(), -0.01)], &[], 10),
        std::time::Duration::ZERO,
    )]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.route = RouteMode::Triage;
    cfg.agent.check = Some("test -f done.txt".into());
    let answers = vec![PreparedAnswer {
        answer: "done.txt".into(),
        needed: Some(true),
    }];
    let ran = run(
        cfg,
        dir.path(),
        "create the file",
        answers,
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    assert_eq!(ran.summary.escalations.len(), 1);
    assert_eq!(ran.summary.escalations[0].route, Route::Operator);
    assert_eq!(
        ran.summary.ask,
        handoff::protocol::AskCounts {
            tp: 1,
            fp: 0,
            fn_: 0
        }
    );
    let asked = ran.events.iter().find_map(|e| match e {
        Event::OperatorAsked {
            question, options, ..
        } => Some((question.clone(), options.clone())),
        _ => None,
    });
    assert_eq!(
        asked,
        Some((
            "Which file name?".to_string(),
            vec!["done.txt".to_string(), "x.txt".to_string()]
        ))
    );
    // The junior's next request carries the operator's answer.
    let second = j.bodies()[1].to_string();
    assert!(
        second.contains("The operator answered") && second.contains("done.txt"),
        "{second}"
    );
    // The triage request was the senior's only one: it did not take over.
    assert_eq!(s.requests().len(), 1);
    assert_eq!(ran.count("senior_took_over"), 0);
}

#[tokio::test]
async fn path_escapes_are_refused_and_the_model_is_told() {
    let junior = Script::new(vec![
        reply(
            confident("Peek."),
            Some(("c1", "read_file", json!({"path": "../outside.txt"}))),
        ),
        reply(
            confident("Write."),
            Some((
                "c2",
                "write_file",
                json!({"path": ".git/config", "content": "x"}),
            )),
        ),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let cfg = config(&j, &s);
    let ran = run(cfg, dir.path(), "look around", vec![], Approvals::Refused).await;
    let results: Vec<(bool, String)> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResulted {
                ok, output, name, ..
            } if name != "finish" => Some((*ok, output.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    for (ok, output) in &results {
        assert!(!ok, "{output}");
        assert!(output.contains("refused"), "{output}");
    }
    // The refusal reached the model as the tool result.
    let second = j.bodies()[1].to_string();
    assert!(second.contains("refused"), "{second}");
    assert_ne!(
        std::fs::read_to_string(dir.path().join(".git/config")).expect("git config"),
        "x"
    );
}

#[tokio::test]
async fn a_write_without_approval_is_refused_and_logged() {
    let junior = Script::new(vec![write_done(), finish()]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.agent.approval = Approval::OnWrite;
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert!(!dir.path().join("done.txt").exists());
    let decided = ran.events.iter().find_map(|e| match e {
        Event::ApprovalDecided { approved, by, .. } => Some((*approved, by.clone())),
        _ => None,
    });
    assert_eq!(decided, Some((false, "policy".to_string())));
}

#[tokio::test]
async fn a_stream_dropped_mid_way_is_retried_and_not_held_against_the_junior() {
    let first = completion(
        &confident("Reading the notes file now."),
        &[("c1", "read_file", r#"{"path":"notes.txt"}"#)],
        10,
    );
    let junior = Script::new(vec![
        Reply::dropped_after(first.clone(), 3),
        Reply::sse(first, std::time::Duration::ZERO),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let cfg = config(&j, &s);
    let ran = run(cfg, dir.path(), "read notes", vec![], Approvals::Refused).await;
    assert_eq!(ran.count("fault"), 1, "{:?}", ran.kinds());
    assert_eq!(ran.summary.escalations.len(), 0);
    assert_eq!(ran.summary.outcome, Outcome::Unlabelled);
    assert_eq!(j.requests().len(), 3);
    // No belief update mentions the fault: evidence terms are only signals.
    assert!(ran.events.iter().all(|e| match e {
        Event::BeliefUpdated { terms, .. } => !terms.is_empty(),
        _ => true,
    }));
}

#[tokio::test]
async fn shadow_mode_logs_the_decision_but_never_hands_off() {
    let junior = Script::new(vec![
        reply(
            join([confident("Now"), hesitant(&lost())]),
            Some((
                "c1",
                "write_file",
                json!({"path": "done.txt", "content": "x"}),
            )),
        ),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.shadow = true;
    cfg.agent.check = Some("test -f missing.txt".into());
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![],
        Approvals::Refused,
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Failure);
    assert_eq!(s.requests().len(), 0, "nothing was handed to the senior");
    let esc = &ran.summary.escalations;
    assert_eq!(esc.len(), 1, "one crossing, logged once: {esc:?}");
    assert!(esc[0].shadow);
    // The junior's write went through: shadow mode changes nothing.
    assert!(dir.path().join("done.txt").exists());
    // Needed, since the junior went on to fail: a true positive, and the session is
    // uncensored (usable for calibration).
    assert_eq!(
        ran.summary.ask,
        handoff::protocol::AskCounts {
            tp: 1,
            fp: 0,
            fn_: 0
        }
    );
    match ran.events.last() {
        Some(Event::SessionEnded { censored, .. }) => assert!(!censored),
        other => panic!("no session end: {other:?}"),
    }
}

#[tokio::test]
async fn replies_that_are_only_tool_calls_still_log_every_step_fact() {
    // No content tokens: the clock does not advance, so both steps end on one tick.
    let junior = Script::new(vec![
        reply(
            vec![],
            Some(("c1", "read_file", json!({"path": "notes.txt"}))),
        ),
        reply(
            vec![],
            Some(("c2", "read_file", json!({"path": "missing.txt"}))),
        ),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let ran = run(
        config(&j, &s),
        dir.path(),
        "look",
        vec![],
        Approvals::Refused,
    )
    .await;
    let steps: Vec<(u64, Vec<handoff::protocol::SignalKind>)> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::StepEnded { tick, terms, .. } => {
                Some((*tick, terms.iter().map(|t| t.signal).collect()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(steps[0].0, steps[1].0, "both steps end on one tick");
    for (_, signals) in &steps[..2] {
        assert_eq!(signals.len(), 7, "{signals:?}");
        assert!(signals.iter().all(|s| !s.is_token_signal()));
    }
}

/// A session that runs out of steps is labelled by the check on the tree it left when there
/// is a check (the junior that wrote done.txt succeeded, the one that did not failed), and
/// stays aborted without one: shadow and eval runs of a weak junior carry labels.
#[tokio::test]
async fn running_out_of_steps_is_labelled_by_the_check() {
    let read = |id: &str, path: &str| {
        reply(
            confident("Reading."),
            Some((id, "read_file", json!({"path": path}))),
        )
    };
    for (wrote, check, expected) in [
        (true, Some("test -f done.txt"), Outcome::Success),
        (false, Some("test -f done.txt"), Outcome::Failure),
        (true, None, Outcome::Aborted),
    ] {
        let first = if wrote {
            write_done()
        } else {
            read("c0", "README.md")
        };
        let junior = Script::new(vec![first, read("c1", "notes.txt")]);
        let (j, s) = servers(junior, Script::new(vec![])).await;
        let dir = repo(&FILES);
        let mut cfg = config(&j, &s);
        cfg.agent.max_steps = 2;
        cfg.agent.check = check.map(str::to_string);
        let ran = run(
            cfg,
            dir.path(),
            "create done.txt",
            vec![],
            Approvals::Refused,
        )
        .await;
        assert_eq!(
            ran.summary.outcome, expected,
            "wrote {wrote}, check {check:?}"
        );
        assert_eq!(ran.count("check_ran"), usize::from(check.is_some()));
        let kinds = ran.kinds();
        let warned = kinds.iter().position(|k| *k == "warning");
        assert!(
            warned.is_some(),
            "the max_steps warning comes first: {kinds:?}"
        );
    }
}

/// `handoff = "restart"`: the senior starts over from the session's start — the junior's
/// write is undone (and kept as the checkpoint `before-restart`), and the senior sees the
/// task alone under the junior's prompt, not the handoff note.
#[tokio::test]
async fn a_restart_takeover_undoes_the_juniors_work_and_shows_it_to_the_senior_as_a_diff() {
    let (ran, dir, s) = cut_and_taken_over(
        (
            "write_file",
            json!({"path": "junk.txt", "content": "junior\n"}),
        ),
        ("read_file", json!({"path": "notes.txt"})),
        HandoffMode::Restart,
        "test -f done.txt && test ! -e junk.txt",
    )
    .await;
    assert_eq!(ran.summary.outcome, Outcome::Success);
    assert!(!dir.path().join("junk.txt").exists());
    let took = ran.events.iter().find_map(|e| match e {
        Event::SeniorTookOver { mode, .. } => Some(mode.clone()),
        _ => None,
    });
    assert_eq!(took.as_deref(), Some("restart"));
    let first = &s.bodies()[0]["messages"];
    let system = first[0]["content"].as_str().expect("system");
    assert!(system.contains("careful software engineer"), "{system}");
    assert_eq!(first.as_array().map(Vec::len), Some(2));
    // A fresh conversation seeded with the distilled note: the task, what the junior tried
    // as a diff against the start (and that the tree no longer holds it), never its calls.
    let note = first[1]["content"].as_str().expect("note");
    assert!(note.contains("Task: create done.txt"), "{note}");
    assert!(note.contains("start over"), "{note}");
    assert!(note.contains("changed junk.txt."), "{note}");
    assert!(
        !note.contains("+junior"),
        "the attempt's code is not shown: {note}"
    );
    assert!(!note.contains("write_file"), "{note}");
    // The junior's tree is still there to restore.
    let refs = std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname)", "refs/handoff/"])
        .current_dir(dir.path())
        .output()
        .expect("git");
    let refs = String::from_utf8_lossy(&refs.stdout);
    let kept = refs
        .lines()
        .find(|r| r.ends_with("/before-restart"))
        .unwrap_or_else(|| panic!("no before-restart checkpoint in {refs}"));
    let show = std::process::Command::new("git")
        .args(["show", &format!("{kept}:junk.txt")])
        .current_dir(dir.path())
        .output()
        .expect("git");
    assert_eq!(String::from_utf8_lossy(&show.stdout), "junior\n");
    let restore_failed = ran
        .events
        .iter()
        .any(|e| matches!(e, Event::Warning { kind, .. } if kind == "restart_restore"));
    assert!(!restore_failed);
}
