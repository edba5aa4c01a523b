//! Handing control off: triage, the operator's question, the senior's takeover and return.

use futures::StreamExt;

use crate::config::{Config, HandoffMode};
use crate::event::{Actor, Command, EscalationReason, Event, Route};
use crate::llm::Client;
use crate::llm::types::{ChatRequest, Delta, Message};
use crate::llm::usage::UsageTally;
use crate::router::{self, Question};

use super::context::{HandoffFacts, handoff_note};
use super::prompts::Prompts;
use super::session::{EscalationRecord, State};
use super::step::StepEnv;

/// Where control is after an escalation.
pub(crate) enum Handoff {
    /// The senior takes over with this conversation.
    Senior(Vec<Message>),
    /// The junior goes on (the operator answered).
    Resume,
    /// The session ends.
    Stop,
}

pub(crate) enum OperatorReply {
    Answer(String),
    Defer,
    Quit,
}

/// Decides the route, tells the log, and hands off.
pub(crate) async fn escalate(
    st: &mut State,
    env: &StepEnv<'_>,
    task: &str,
    prompts: &Prompts,
    senior: &Client,
    reason: EscalationReason,
) -> Handoff {
    let why = st.watch.why();
    let diff = match (env.repo, &st.start_checkpoint, &st.last_checkpoint) {
        (Some(repo), Some(a), Some(b)) => repo
            .lock()
            .ok()
            .and_then(|r| r.diff(a, b).ok())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let note = handoff_note(
        &prompts.handoff,
        &HandoffFacts {
            task,
            belief: st.watch.belief(),
            threshold: st.watch.threshold(),
            step: st.step,
            tick: st.watch.tick(),
            why: &why,
            plan: &st.plan,
            files: &st.files_touched,
            diff: &diff,
            tool_outputs: &st.tool_outputs,
        },
    );
    let mode = env.config.policy.route;
    let decision = if reason == EscalationReason::Fault {
        router::decide(crate::config::RouteMode::Senior, None, task)
    } else {
        let reply = if router::needs_triage_call(mode) {
            triage(st, senior, &prompts.triage, &note).await
        } else {
            None
        };
        router::decide(mode, reply.as_deref(), task)
    };
    st.emitter
        .emit(Event::Escalated {
            step: st.step,
            tick: st.watch.tick(),
            route: decision.route,
            reason,
            belief: st.watch.belief(),
            threshold: st.watch.threshold(),
            why,
            shadow: false,
        })
        .await;
    st.censored = true;
    st.escalations.push(EscalationRecord {
        shadow: false,
        needed: None,
    });
    if let (Route::Operator, Some(q)) = (decision.route, decision.question) {
        match ask(st, &q, false).await {
            OperatorReply::Answer(answer) => {
                st.junior_history.push(Message::user(format!(
                    "The operator answered your open question \"{}\": {answer}",
                    q.text
                )));
                resume_junior(st, env.config);
                return Handoff::Resume;
            }
            OperatorReply::Quit => return Handoff::Stop,
            OperatorReply::Defer => {}
        }
    }
    take_over(st, env.config, prompts, note).await
}

async fn take_over(st: &mut State, config: &Config, prompts: &Prompts, note: String) -> Handoff {
    let mode = match config.policy.handoff {
        HandoffMode::Step => "step",
        HandoffMode::Rest => "rest",
    };
    st.emitter
        .emit(Event::SeniorTookOver {
            step: st.step,
            tick: st.watch.tick(),
            mode: mode.into(),
            context_chars: note.chars().count() as u64,
        })
        .await;
    Handoff::Senior(vec![
        Message::system(prompts.senior.clone()),
        Message::user(note),
    ])
}

/// After a one-step takeover: the junior continues, told what the senior did.
pub(crate) async fn senior_returned(st: &mut State, config: &Config, did: &str) {
    st.emitter
        .emit(Event::SeniorReturned {
            step: st.step,
            tick: st.watch.tick(),
        })
        .await;
    st.junior_history.push(Message::user(format!(
        "A senior engineer took over for one step and did: {did}. Continue the task from here."
    )));
    resume_junior(st, config);
}

/// New information or help: the belief restarts from the prior, with a cooldown.
fn resume_junior(st: &mut State, config: &Config) {
    st.watch.reset();
    st.cooldown = config.policy.cooldown_steps;
}

/// The junior called `ask_operator` itself.
pub(crate) async fn self_ask(
    st: &mut State,
    config: &Config,
    question: &str,
    options: Vec<String>,
) -> OperatorReply {
    st.emitter
        .emit(Event::Escalated {
            step: st.step,
            tick: st.watch.tick(),
            route: Route::Operator,
            reason: EscalationReason::SelfAsk,
            belief: st.watch.belief(),
            threshold: st.watch.threshold(),
            why: Vec::new(),
            shadow: false,
        })
        .await;
    st.escalations.push(EscalationRecord {
        shadow: false,
        needed: None,
    });
    st.censored = true;
    let q = Question {
        text: question.to_string(),
        options,
        default_assumption: None,
    };
    let reply = ask(st, &q, true).await;
    if matches!(reply, OperatorReply::Answer(_)) {
        resume_junior(st, config);
    }
    reply
}

/// Puts one question to the operator and waits for the answer.
async fn ask(st: &mut State, q: &Question, self_initiated: bool) -> OperatorReply {
    st.emitter
        .emit(Event::OperatorAsked {
            step: st.step,
            question: q.text.clone(),
            options: q.options.clone(),
            default_assumption: q.default_assumption.clone(),
            self_initiated,
        })
        .await;
    loop {
        match st.commands.recv().await {
            Some(Command::Answer { answer, needed }) => {
                if let Some(last) = st.escalations.last_mut() {
                    last.needed = needed;
                }
                st.emitter
                    .emit(Event::OperatorAnswered {
                        step: st.step,
                        answer: answer.clone(),
                        needed,
                        deferred_to_senior: false,
                    })
                    .await;
                return OperatorReply::Answer(answer);
            }
            Some(Command::DeferToSenior) => {
                st.emitter
                    .emit(Event::OperatorAnswered {
                        step: st.step,
                        answer: String::new(),
                        needed: None,
                        deferred_to_senior: true,
                    })
                    .await;
                return OperatorReply::Defer;
            }
            Some(Command::Quit) | None => return OperatorReply::Quit,
            Some(Command::SetShadow { on }) => st.shadow = on,
            Some(_) => {}
        }
    }
}

/// Asks the senior what kind of blocker this is; `None` when it cannot be reached.
async fn triage(st: &mut State, senior: &Client, prompt: &str, note: &str) -> Option<String> {
    let req = ChatRequest {
        messages: vec![Message::system(prompt), Message::user(note)],
        tools: Vec::new(),
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        match complete(senior, &req).await {
            Ok((text, tally)) => {
                super::turn::log_cost(
                    &st.emitter,
                    &mut st.usd_seen,
                    senior,
                    Actor::Senior,
                    &req,
                    &tally,
                )
                .await;
                return Some(text);
            }
            Err(err) => {
                st.emitter
                    .emit(Event::Fault {
                        actor: Actor::Senior,
                        kind: err.kind().to_string(),
                        message: err.to_string(),
                        retryable: err.retryable(),
                        attempt,
                    })
                    .await;
                match senior.retry_delay(&err, attempt) {
                    Some(d) => tokio::time::sleep(d).await,
                    None => return None,
                }
            }
        }
    }
}

/// A whole reply as text (no judging: triage is not the junior's work).
async fn complete(
    client: &Client,
    req: &ChatRequest,
) -> Result<(String, UsageTally), crate::llm::LlmError> {
    let mut stream = client.stream_once(req).await?;
    let mut text = String::new();
    let mut tally = UsageTally::default();
    while let Some(delta) = stream.next().await {
        let delta = delta?;
        tally.observe(&delta);
        if let Delta::Token { text: t, .. } = delta {
            text.push_str(&t);
        }
    }
    Ok((text, tally))
}
