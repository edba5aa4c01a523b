//! One model turn: stream a reply, feed every junior token to the judge, stop the stream the
//! moment the judge (or the operator) says so, and retry infrastructure faults.
//!
//! Faults are not incompetence: a refused connection, a 5xx or a dropped stream is logged as
//! `Event::Fault` and retried; nothing about it reaches the judge. Tokens the junior really
//! produced before a drop stay counted: they are evidence about the junior, and the log shows
//! exactly what the judge saw, so replay reproduces every decision.

use futures::StreamExt;
use tokio::sync::mpsc;

use crate::event::{Actor, Command, EscalationReason, Event};
use crate::llm::types::{ChatRequest, Delta, ToolCall};
use crate::llm::usage::UsageTally;
use crate::llm::{Client, LlmError};

use super::emitter::Emitter;
use super::watch::Watch;

/// How a turn ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// The model finished its reply.
    Done {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The junior's stream was cut: the judge's belief fell below the threshold, or the
    /// operator forced it.
    Escalate(EscalationReason),
    /// The operator quit.
    Quit,
    /// The endpoint kept failing (retries exhausted or a non-retryable fault).
    Failed(LlmError),
}

/// What a turn needs from the session, borrowed for the turn's duration.
pub struct TurnContext<'a> {
    pub emitter: &'a Emitter,
    pub commands: &'a mut mpsc::Receiver<Command>,
    pub watch: &'a mut Watch,
    /// Live mode and not in cooldown: a crossing cuts the stream.
    pub may_escalate: bool,
    pub shadow: &'a mut bool,
    pub step: u32,
    pub paused: &'a mut bool,
    /// Money spent so far in the session; each request adds its cost.
    pub usd: &'a mut f64,
    /// Shadow-mode crossings are recorded here for Ask-F1.
    pub escalations: &'a mut Vec<super::session::EscalationRecord>,
}

/// Streams one reply from `client` as `actor`.
pub async fn stream_turn(
    ctx: &mut TurnContext<'_>,
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
) -> TurnEnd {
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        match attempt_turn(ctx, client, actor, req).await {
            Attempt::End(end) => return end,
            Attempt::Fault(err) => {
                ctx.emitter
                    .emit(Event::Fault {
                        actor,
                        kind: err.kind().to_string(),
                        message: err.to_string(),
                        retryable: err.retryable(),
                        attempt,
                    })
                    .await;
                let Some(delay) = client.retry_delay(&err, attempt) else {
                    return TurnEnd::Failed(err);
                };
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    cmd = ctx.commands.recv() => {
                        if matches!(cmd, Some(Command::Quit) | None) {
                            return TurnEnd::Quit;
                        }
                    }
                }
            }
        }
    }
}

enum Attempt {
    End(TurnEnd),
    Fault(LlmError),
}

async fn attempt_turn(
    ctx: &mut TurnContext<'_>,
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
) -> Attempt {
    let mut stream = match client.stream_once(req).await {
        Ok(s) => s,
        Err(e) => return Attempt::Fault(e),
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut tally = UsageTally::default();
    loop {
        tokio::select! {
            biased;
            cmd = ctx.commands.recv() => {
                match cmd {
                    Some(Command::Quit) | None => return Attempt::End(TurnEnd::Quit),
                    Some(Command::ForceEscalate) if actor == Actor::Junior => {
                        return Attempt::End(TurnEnd::Escalate(EscalationReason::Forced));
                    }
                    Some(Command::SetShadow { on }) => *ctx.shadow = on,
                    Some(Command::Pause) => *ctx.paused = true,
                    Some(Command::Resume) => *ctx.paused = false,
                    // Answers and approvals only mean something while one is pending.
                    Some(_) => {}
                }
            }
            delta = stream.next() => {
                let Some(delta) = delta else { break };
                if let Ok(d) = &delta {
                    tally.observe(d);
                }
                match delta {
                    Err(e) => return Attempt::Fault(e),
                    Ok(Delta::Token { text: t, logprob, top }) => {
                        text.push_str(&t);
                        if actor == Actor::Junior {
                            let reading = ctx.watch.token(&t, logprob, &top);
                            ctx.emitter.emit(Event::Token {
                                actor, tick: reading.tick, text: t, logprob, top,
                            }).await;
                            ctx.emitter.emit(reading.event(ctx.watch)).await;
                            if reading.below && ctx.may_escalate && !*ctx.shadow {
                                // Dropping the stream closes the request: the junior stops now.
                                drop(stream);
                                log_cost(ctx.emitter, ctx.usd, client, actor, req, &tally).await;
                                return Attempt::End(TurnEnd::Escalate(EscalationReason::Threshold));
                            }
                            if reading.crossed && *ctx.shadow {
                                ctx.escalations.push(super::session::EscalationRecord::shadow());
                                ctx.emitter.emit(ctx.watch.shadow_escalation(ctx.step)).await;
                            }
                        } else {
                            ctx.emitter.emit(Event::Token {
                                actor, tick: ctx.watch.tick(), text: t, logprob, top,
                            }).await;
                        }
                    }
                    Ok(Delta::ToolCall(call)) => tool_calls.push(call),
                    Ok(Delta::Finish(_)) => {}
                    Ok(Delta::Usage(_)) => {}
                    Ok(Delta::Warning { kind, message }) => {
                        if kind == "no_logprobs" && actor == Actor::Junior {
                            ctx.watch.note_no_logprobs();
                        }
                        ctx.emitter.emit(Event::Warning { kind, message }).await;
                    }
                }
            }
        }
    }
    log_cost(ctx.emitter, ctx.usd, client, actor, req, &tally).await;
    Attempt::End(TurnEnd::Done { text, tool_calls })
}

/// Logs the tokens and money of one request and adds them to the session's total; the
/// tally estimates (and marks as estimated) what a server did not report.
pub(crate) async fn log_cost(
    emitter: &Emitter,
    usd_total: &mut f64,
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
    tally: &UsageTally,
) {
    let (usage, estimated) = tally.usage(req);
    let usd = client.cost(usage);
    *usd_total += usd;
    emitter
        .emit(Event::CostIncurred {
            actor,
            model: client.model().to_string(),
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            usd,
            estimated,
        })
        .await;
}
