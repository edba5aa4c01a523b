//! The pieces of handing control off: triage (asking the senior what kind of blocker this
//! is), the operator's question, and the senior's takeover.
//!
//! Each piece takes values and returns values; the loop decides when to call them and keeps
//! the session's state (who is in charge, the cooldown, the censoring) itself.

use futures::StreamExt;

use crate::config::{Config, HandoffMode};
use crate::llm::types::{ChatRequest, Delta, Message};
use crate::llm::usage::UsageTally;
use crate::llm::{Client, LlmError};
use crate::protocol::{Actor, Event};
use crate::router::Question;

use super::emitter::Emitter;
use super::inbox::{Inbox, Intent, Waiting};
use super::retry::{AfterFault, Retry, cost_event};

/// What the operator made of a question.
pub(crate) enum OperatorReply {
    Answer(String),
    /// "Let the senior decide".
    Defer,
    Quit,
}

/// Puts one question to the operator and waits for the answer.
pub(crate) async fn ask(
    emitter: &Emitter,
    inbox: &mut Inbox,
    step: u32,
    q: &Question,
    self_initiated: bool,
) -> OperatorReply {
    emitter
        .emit(Event::OperatorAsked {
            step,
            question: q.text.clone(),
            options: q.options.clone(),
            default_assumption: q.default_assumption.clone(),
            self_initiated,
            topic: q.topic.clone(),
        })
        .await;
    let reply = match inbox.wait(Waiting::Answer).await {
        Intent::Answered { answer, needed } => {
            emitter
                .emit(Event::OperatorAnswered {
                    step,
                    answer: answer.clone(),
                    needed,
                    deferred_to_senior: false,
                })
                .await;
            return OperatorReply::Answer(answer);
        }
        Intent::Quit => return OperatorReply::Quit,
        _ => OperatorReply::Defer,
    };
    emitter
        .emit(Event::OperatorAnswered {
            step,
            answer: String::new(),
            needed: None,
            deferred_to_senior: true,
        })
        .await;
    reply
}

/// The senior's conversation when it takes over (its system prompt and its first message,
/// chosen by the loop), announced by `SeniorTookOver`.
pub(crate) async fn take_over(
    emitter: &Emitter,
    config: &Config,
    step: u32,
    tick: u64,
    system: String,
    note: String,
) -> Vec<Message> {
    let mode = match config.policy.handoff {
        HandoffMode::Step => "step",
        HandoffMode::Rest => "rest",
        HandoffMode::Restart => "restart",
    };
    emitter
        .emit(Event::SeniorTookOver {
            step,
            tick,
            mode: mode.into(),
            context_chars: note.chars().count() as u64,
        })
        .await;
    vec![Message::system(system), Message::user(note)]
}

/// What the junior is told after a one-step takeover.
pub(crate) fn senior_did(did: &str) -> Message {
    Message::user(format!(
        "A senior engineer took over for one step and did: {did}. Continue the task from here."
    ))
}

/// What the junior is told after the operator answered a question.
pub(crate) fn operator_answered(question: &str, answer: &str) -> Message {
    Message::user(format!(
        "The operator answered your open question \"{question}\": {answer}"
    ))
}

/// What triage came to.
pub(crate) enum Triage {
    /// The senior's reply; `None` when it could not be reached.
    Reply(Option<String>),
    /// The operator quit while the request was retried.
    Quit,
}

/// Asks the senior what kind of blocker this is.
/// One call to the question writer (`policy.question_writer`, on `actor`'s endpoint,
/// billed to it): the triage reply, or the question of `policy.ask_first`.
pub(crate) async fn triage(
    emitter: &Emitter,
    inbox: &mut Inbox,
    (writer, actor): (&Client, Actor),
    prompt: &str,
    note: &str,
) -> Triage {
    let req = ChatRequest {
        messages: vec![Message::system(prompt), Message::user(note)],
        tools: Vec::new(),
    };
    let mut retry = Retry::new(actor);
    loop {
        let err = match complete(writer, actor, &req).await {
            Ok((text, tally)) => {
                let cost = cost_event(writer, actor, &req, &tally);
                emitter.emit(cost).await;
                return Triage::Reply(Some(text));
            }
            Err(err) => err,
        };
        match retry.fault(emitter, inbox, writer, err).await {
            AfterFault::Again => {}
            AfterFault::Quit => return Triage::Quit,
            AfterFault::GiveUp | AfterFault::Escalate => return Triage::Reply(None),
        }
    }
}

/// A whole reply as text (no judging: triage is not the junior's work), cut at the
/// writer's `max_tokens` like every turn.
async fn complete(
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
) -> Result<(String, UsageTally), LlmError> {
    let limit = super::turn::TokenLimit::of(client, actor, None);
    let mut stream = client.stream_once(req).await?;
    let mut text = String::new();
    let mut tally = UsageTally::default();
    let mut tokens = 0u64;
    while let Some(delta) = stream.next().await {
        let delta = delta?;
        tally.observe(&delta);
        if let Delta::Token { text: t, .. } = delta {
            text.push_str(&t);
            tokens += 1;
            if tokens >= limit.tokens {
                break;
            }
        }
    }
    Ok((text, tally))
}
