//! The one retry rule for model requests (junior and senior turns, triage): a fault is
//! logged as `Event::Fault` and retried after the client's backoff; the backoff is a wait
//! of the [`Inbox`], so `Quit` ends it and every other command is handled as anywhere else.

use crate::llm::types::ChatRequest;
use crate::llm::usage::UsageTally;
use crate::llm::{Client, LlmError};
use crate::protocol::{Actor, Event};

use super::emitter::Emitter;
use super::inbox::{Inbox, Intent, Waiting};

/// What to do after a failed attempt.
#[derive(Debug)]
pub(crate) enum AfterFault {
    /// The backoff is over: try again.
    Again,
    /// Retries exhausted or a fault that is not retryable (the fault is logged).
    GiveUp,
    Quit,
    /// A forced escalation cut the backoff of a junior request.
    Escalate,
}

/// The retry state of one request: callers loop `attempt → Retry::fault` until an attempt
/// succeeds or this says otherwise.
pub(crate) struct Retry {
    actor: Actor,
    attempt: u32,
}

impl Retry {
    pub fn new(actor: Actor) -> Retry {
        Retry { actor, attempt: 0 }
    }

    /// Logs the fault of the attempt just made and waits out the client's backoff.
    pub async fn fault(
        &mut self,
        emitter: &Emitter,
        inbox: &mut Inbox,
        client: &Client,
        err: LlmError,
    ) -> AfterFault {
        self.attempt += 1;
        emitter
            .emit(Event::Fault {
                actor: self.actor,
                kind: err.kind().to_string(),
                message: err.to_string(),
                retryable: err.retryable(),
                attempt: self.attempt,
            })
            .await;
        let Some(delay) = client.retry_delay(&err, self.attempt) else {
            return AfterFault::GiveUp;
        };
        let waiting = Waiting::Backoff {
            delay,
            junior: self.actor == Actor::Junior,
        };
        match inbox.wait(waiting).await {
            Intent::Quit => AfterFault::Quit,
            Intent::Escalate => AfterFault::Escalate,
            _ => AfterFault::Again,
        }
    }
}

/// The tokens and money of one request as an event (the tally estimates, and marks as
/// estimated, what a server did not report); the session's total is the sum of these.
pub(crate) fn cost_event(
    client: &Client,
    actor: Actor,
    req: &ChatRequest,
    tally: &UsageTally,
) -> Event {
    let (usage, estimated) = tally.usage(req);
    Event::CostIncurred {
        actor,
        model: client.model().to_string(),
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        usd: client.cost(usage),
        estimated,
    }
}
