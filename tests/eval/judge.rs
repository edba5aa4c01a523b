//! The LLM judge of the simulated operator, against a scripted model on loopback.

use std::sync::Arc;
use std::time::Duration;

use handoff::config::ModelConfig;
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{Tok, completion};
use handoff::eval::operator::{Judge, serve};
use handoff::eval::suite::Blocker;
use handoff::llm::Client;
use handoff::protocol::{Command, Event, Stamped};
use tokio::sync::mpsc;

fn blockers() -> Vec<Blocker> {
    vec![Blocker {
        id: "separator".into(),
        description: "which character joins the words of a slug".into(),
        answer: "underscore".into(),
        phrases: vec!["separator".into()],
    }]
}

fn says(text: &str) -> Reply {
    Reply::sse(
        completion(&[Tok::new(text, -0.01)], &[], 50),
        Duration::ZERO,
    )
}

/// Asks one question through a judge backed by a server that replies `reply`.
async fn judged(
    reply: Reply,
    question: &str,
) -> (Vec<Option<String>>, Option<Command>, Vec<String>) {
    let server = ScriptedServer::start(Script::new(vec![reply]))
        .await
        .expect("server");
    let cfg = ModelConfig {
        base_url: server.base_url(),
        model: "judge".into(),
        logprobs: false,
        max_retries: 0,
        ..ModelConfig::default()
    };
    let judge = Judge::Llm(Box::new(Client::new(&cfg).expect("client")));
    let (etx, erx) = mpsc::channel(4);
    let (ctx, mut crx) = mpsc::channel(4);
    let task = tokio::spawn(serve(Arc::new(judge), blockers(), erx, ctx));
    etx.send(Stamped {
        t_ms: 0,
        event: Event::OperatorAsked {
            step: 1,
            question: question.into(),
            options: vec![],
            default_assumption: None,
            self_initiated: true,
            topic: None,
        },
    })
    .await
    .expect("send");
    drop(etx);
    let command = crx.recv().await;
    let matched = task.await.expect("join").matched;
    let sent: Vec<String> = server
        .bodies()
        .iter()
        .filter_map(|b| b["messages"][1]["content"].as_str().map(str::to_string))
        .collect();
    (matched, command, sent)
}

#[tokio::test]
async fn the_model_names_the_blocker_even_without_a_phrase() {
    let (matched, command, sent) =
        judged(says("separator"), "Which of hyphen or underscore?").await;
    assert_eq!(matched, vec![Some("separator".to_string())]);
    assert_eq!(
        command,
        Some(Command::Answer {
            answer: "underscore".into(),
            needed: Some(true)
        })
    );
    // The judge saw the blocker's description and the question.
    assert!(
        sent[0].contains("which character joins the words")
            && sent[0].contains("Which of hyphen or underscore?")
    );
}

#[tokio::test]
async fn none_is_a_verdict_and_a_dead_endpoint_falls_back_to_phrases() {
    let (matched, _, _) = judged(says("NONE"), "Which separator? (it says separator)").await;
    assert_eq!(matched, vec![None], "the model's NONE overrides the phrase");
    let (matched, _, _) = judged(Reply::error(500, "down"), "Which separator?").await;
    assert_eq!(matched, vec![Some("separator".to_string())]);
}
