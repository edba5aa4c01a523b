//! The question writer's reply, as the session reads it: one that holds no decision is
//! logged (a `writer_reply_unreadable` warning with the reply's text) before the fallback
//! question goes out, so a log shows why the fallback was used.

use handoff::agent::session::Approvals;
use handoff::app::operator::PreparedAnswer;
use handoff::config::{RouteMode, ToolProtocol};
use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use handoff::protocol::Event;

use super::support::{FILES, config, finish, repo, run, servers, write_done};

fn unreadable_warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { kind, message } if kind == "writer_reply_unreadable" => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect()
}

fn asked(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OperatorAsked { question, .. } => Some(question.clone()),
            _ => None,
        })
        .collect()
}

/// One `ask_first` session whose writer (a code-writing senior) replies `writer_says`: the
/// events, and the note the writer was sent (its last message).
async fn ask_first_with_writer_reply(writer_says: &str) -> (Vec<Event>, String) {
    let junior = Script::new(vec![write_done(), finish()]);
    let senior = Script::new(vec![reply(confident(writer_says), None)]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&FILES);
    let mut cfg = config(&j, &s);
    cfg.policy.ask_first = true;
    cfg.policy.route = RouteMode::Operator;
    cfg.senior.tool_protocol = ToolProtocol::Code;
    let ran = run(
        cfg,
        dir.path(),
        "create done.txt",
        vec![PreparedAnswer {
            answer: "done.txt, one line".into(),
            needed: None,
        }],
        Approvals::Refused,
    )
    .await;
    let requests = s.requests();
    let note = requests
        .first()
        .and_then(|r| r.body["messages"].as_array())
        .and_then(|ms| ms.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    (ran.events, note)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_reply_without_a_decision_is_logged_and_the_fallback_asked() {
    let prose = "I would ask the user which file name they want and what goes in it.";
    let (events, _) = ask_first_with_writer_reply(prose).await;
    let warnings = unreadable_warnings(&events);
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert!(warnings[0].contains(prose), "{}", warnings[0]);
    let questions = asked(&events);
    assert_eq!(questions.len(), 1, "{events:?}");
    assert!(
        questions[0].contains("The junior is unsure how to proceed"),
        "the fallback question: {}",
        questions[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_readable_writer_reply_logs_no_warning_and_its_question_is_asked() {
    let json = r#"Here: {"route": "operator", "question": "Which file name do you want?", "topic": "file name"}"#;
    let (events, note) = ask_first_with_writer_reply(json).await;
    assert!(unreadable_warnings(&events).is_empty(), "{events:?}");
    assert_eq!(
        asked(&events),
        vec!["Which file name do you want?".to_string()]
    );
    // The writer sees the files but is not asked for code, and the note ends on the reply
    // it wants: a code-writing 1.5B told to "complete the code" wrote code, not a question.
    assert!(note.contains("notes.txt"), "{note}");
    assert!(!note.contains("Complete the code"), "{note}");
    assert!(!note.contains("Write the code the task needs"), "{note}");
    assert!(
        note.trim_end().ends_with(
            "Reply with the one JSON object your instructions describe, and nothing else."
        ),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_writer_object_still_asks_its_question() {
    // As the 0.5B wrote it: the options list never closed.
    let broken = r#"{"route": "operator", "topic": "file name", "question": "Which file name do you want?", "options": ["done.txt", "default_assumption": "done.txt"#;
    let (events, _) = ask_first_with_writer_reply(broken).await;
    assert!(unreadable_warnings(&events).is_empty(), "{events:?}");
    assert_eq!(
        asked(&events),
        vec!["Which file name do you want?".to_string()]
    );
}
