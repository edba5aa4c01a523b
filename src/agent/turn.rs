//! One model turn: stream a reply, hand every token to an observer (the judge, for the
//! junior), stop the stream the moment the observer or the operator says so, and retry
//! infrastructure faults.
//!
//! Faults are not incompetence: a refused connection, a 5xx or a dropped stream is logged as
//! `Event::Fault` and retried; nothing about it reaches the judge. Tokens the junior really
//! produced before a drop stay counted: they are evidence about the junior, and the log shows
//! exactly what the judge saw, so replay reproduces every decision.
//!
//! The turn knows nothing of the session's state: what a token means is the observer's
//! business ([`TokenObserver`]), what a finished reply means is the caller's.

use futures::StreamExt;

use crate::llm::types::{ChatRequest, Delta, ToolCall};
use crate::llm::usage::UsageTally;
use crate::llm::{Client, LlmError};
use crate::protocol::{Actor, Alternative, EscalationReason, Event};

use super::emitter::Emitter;
use super::inbox::{Control, Inbox, Intent, Waiting};
use super::reply::CallProblem;
use super::retry::{AfterFault, Retry, cost_event};

/// How a turn ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// The model finished its reply.
    Done {
        text: String,
        tool_calls: Vec<ToolCall>,
        /// Why the reply held no usable call, as the decoder said it.
        problem: Option<CallProblem>,
        /// The prompt tokens the server reported reading (not an estimate).
        prompt_tokens: Option<u64>,
    },
    /// The junior's stream was cut: the judge's belief fell below the threshold, or the
    /// operator forced it.
    Escalate(EscalationReason),
    /// The operator quit.
    Quit,
    /// The endpoint kept failing (retries exhausted or a non-retryable fault); each fault is
    /// already in the log as a `fault` event.
    Failed,
}

/// Whether the stream goes on after a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    /// Cut the stream now: the proposed action is discarded before it runs.
    Cut(EscalationReason),
}

/// One streamed token.
pub(crate) struct StreamedToken {
    pub text: String,
    pub logprob: Option<f64>,
    pub top: Vec<Alternative>,
}

/// What the caller does with each token of a turn.
pub(crate) trait TokenObserver {
    /// One token, with the control state the operator has set right now.
    async fn token(&mut self, token: StreamedToken, control: Control) -> Flow;
    /// The server sends no logprobs.
    fn no_logprobs(&mut self) {}
}

/// The most tokens one reply may stream, and the setting that says so.
///
/// A server that ignores `max_tokens`, or never finishes, is cut here, mid-stream: the
/// reply so far is the turn's reply (as if the server had stopped with `length`), a
/// warning names the limit, and the connection is closed. Memory and the log stay bounded
/// by the limit, whatever the server sends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenLimit {
    pub tokens: u64,
    /// The config key that set the limit, for the warning.
    pub setting: &'static str,
}

impl TokenLimit {
    /// The smaller of the model's `max_tokens` and what is left of `budget` (junior only).
    pub fn of(client: &Client, actor: Actor, left: Option<u64>) -> TokenLimit {
        let max = client.config().max_tokens.map(u64::from);
        let key = match actor {
            Actor::Junior => "junior.max_tokens",
            _ => "senior.max_tokens",
        };
        match (max, left) {
            (Some(m), Some(l)) if l < m => TokenLimit {
                tokens: l,
                setting: "agent.token_budget",
            },
            (Some(m), _) => TokenLimit {
                tokens: m,
                setting: key,
            },
            (None, Some(l)) => TokenLimit {
                tokens: l,
                setting: "agent.token_budget",
            },
            (None, None) => TokenLimit {
                tokens: DEFAULT_REPLY_TOKENS,
                setting: key,
            },
        }
    }
}

/// The cut for a model with no `max_tokens`: no sane reply is longer.
const DEFAULT_REPLY_TOKENS: u64 = 32 * 1024;

/// Streams one reply from `client` as `actor`, with retries.
pub(crate) async fn stream_turn(
    emitter: &Emitter,
    inbox: &mut Inbox,
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
    observer: &mut impl TokenObserver,
    limit: TokenLimit,
) -> TurnEnd {
    let mut retry = Retry::new(actor);
    loop {
        let attempt = attempt_turn(emitter, inbox, client, actor, req, observer, limit);
        let err = match attempt.await {
            Ok(end) => return end,
            Err(err) => err,
        };
        match retry.fault(emitter, inbox, client, err).await {
            AfterFault::Again => {}
            AfterFault::GiveUp => return TurnEnd::Failed,
            AfterFault::Quit => return TurnEnd::Quit,
            AfterFault::Escalate => return TurnEnd::Escalate(EscalationReason::Forced),
        }
    }
}

fn actor_name(actor: Actor) -> &'static str {
    match actor {
        Actor::Junior => "junior's",
        _ => "senior's",
    }
}

async fn attempt_turn(
    emitter: &Emitter,
    inbox: &mut Inbox,
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
    observer: &mut impl TokenObserver,
    limit: TokenLimit,
) -> Result<TurnEnd, LlmError> {
    let waiting = Waiting::Stream {
        junior: actor == Actor::Junior,
    };
    // The inbox is read while the request is opened too: a server that accepts the
    // connection and never answers must not hold a `Quit` (or a forced escalation) until
    // the idle timeout.
    let mut stream = {
        let open = client.stream_once(req);
        tokio::pin!(open);
        loop {
            tokio::select! {
                biased;
                cmd = inbox.recv() => match inbox.handle(cmd, waiting).await {
                    Some(Intent::Quit) => return Ok(TurnEnd::Quit),
                    Some(Intent::Escalate) => return Ok(TurnEnd::Escalate(EscalationReason::Forced)),
                    _ => {}
                },
                opened = &mut open => break opened?,
            }
        }
    };
    let mut text = String::new();
    let mut tokens = 0u64;
    let mut tool_calls = Vec::new();
    let mut problem = None;
    let mut prompt_tokens = None;
    let mut tally = UsageTally::default();
    let cut = loop {
        tokio::select! {
            biased;
            cmd = inbox.recv() => match inbox.handle(cmd, waiting).await {
                Some(Intent::Quit) => return Ok(TurnEnd::Quit),
                Some(Intent::Escalate) => break Some(EscalationReason::Forced),
                _ => {}
            },
            delta = stream.next() => {
                let Some(delta) = delta else { break None };
                let delta = delta?;
                tally.observe(&delta);
                match delta {
                    Delta::Token { text: t, logprob, top } => {
                        text.push_str(&t);
                        tokens += 1;
                        let token = StreamedToken { text: t, logprob, top };
                        if let Flow::Cut(reason) = observer.token(token, inbox.control()).await {
                            break Some(reason);
                        }
                        if tokens >= limit.tokens {
                            let message = format!(
                                "the {} reply was cut at {tokens} tokens ({})",
                                actor_name(actor),
                                limit.setting
                            );
                            let kind = "reply_cut".to_string();
                            emitter.emit(Event::Warning { kind, message }).await;
                            break None;
                        }
                    }
                    Delta::ToolCall(call) => tool_calls.push(call),
                    Delta::Usage(u) => prompt_tokens = Some(u.prompt_tokens),
                    Delta::Finish(_) => {}
                    Delta::Warning { kind, message } => {
                        if kind == "no_logprobs" {
                            observer.no_logprobs();
                        }
                        problem = problem.or_else(|| CallProblem::from_warning(&kind, &message));
                        emitter.emit(Event::Warning { kind, message }).await;
                    }
                }
            }
        }
    };
    // Dropping the stream closes the request: a cut junior stops now.
    drop(stream);
    emitter.emit(cost_event(client, actor, req, &tally)).await;
    Ok(match cut {
        Some(reason) => TurnEnd::Escalate(reason),
        None => TurnEnd::Done {
            text,
            tool_calls,
            problem,
            prompt_tokens,
        },
    })
}
