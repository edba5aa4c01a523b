//! What watches each token of a turn: the judge over the junior's stream (it may cut the
//! stream), and a plain counter over the senior's.

use crate::agent::emitter::Emitter;
use crate::agent::inbox::Control;
use crate::agent::turn::{Flow, StreamedToken, TokenObserver};
use crate::competence::{Gate, Verdict};
use crate::judge::SessionJudge;
use crate::protocol::{Actor, EscalationReason, Event};

/// The judge watching the junior's stream: every token is evidence, and the gate may cut.
pub(super) struct JuniorJudging<'s> {
    pub(super) watch: &'s mut SessionJudge,
    pub(super) gate: &'s mut Gate,
    pub(super) emitter: &'s Emitter,
    pub(super) step: u32,
}

impl TokenObserver for JuniorJudging<'_> {
    async fn token(&mut self, t: StreamedToken, control: Control) -> Flow {
        let reading = self.watch.token(&t.text, t.logprob, &t.top);
        self.emitter
            .emit(Event::Token {
                actor: Actor::Junior,
                tick: reading.tick,
                text: t.text,
                logprob: t.logprob,
                top: t.top,
            })
            .await;
        self.emitter.emit(self.watch.belief_event(&reading)).await;
        self.gate.set_shadow(control.shadow);
        match self.gate.on_token(reading.below) {
            Verdict::Escalate => Flow::Cut(EscalationReason::Threshold),
            v @ (Verdict::ShadowCrossing | Verdict::Explored) => {
                let reason = EscalationReason::Threshold;
                let ev = super::shadow_escalation(self.watch, self.gate, self.step, reason, v);
                self.emitter.emit(ev).await;
                Flow::Continue
            }
            Verdict::Continue => Flow::Continue,
        }
    }

    fn no_logprobs(&mut self) {
        self.watch.note_no_logprobs();
    }
}

/// The senior's tokens are logged at the junior's clock, and judged by no one.
pub(super) struct SeniorTokens<'s> {
    pub(super) emitter: &'s Emitter,
    pub(super) tick: u64,
    /// The takeover's output tokens so far (`senior.token_budget`).
    pub(super) count: &'s mut u64,
}

impl TokenObserver for SeniorTokens<'_> {
    async fn token(&mut self, t: StreamedToken, _control: Control) -> Flow {
        *self.count += 1;
        self.emitter
            .emit(Event::Token {
                actor: Actor::Senior,
                tick: self.tick,
                text: t.text,
                logprob: t.logprob,
                top: t.top,
            })
            .await;
        Flow::Continue
    }
}

/// Tokens of a reply no one judges (the junior's extra candidates): only counted.
#[derive(Default)]
pub(super) struct Unwatched {
    pub(super) tokens: u64,
}

impl TokenObserver for Unwatched {
    async fn token(&mut self, _t: StreamedToken, _control: Control) -> Flow {
        self.tokens += 1;
        Flow::Continue
    }
}
