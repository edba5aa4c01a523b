//! How a step and a session end: the step's facts reach the judge and the gate, and the
//! session's end is logged with the fold's own accounting.

use super::{Session, SessionEnd, shadow_escalation};
use crate::competence::{StepFacts, Verdict};
use crate::protocol::{Actor, AskCounts, EscalationReason, Event, Outcome, SignalKind};

impl Session<'_> {
    /// Adds the step evidence (junior steps only), logs the step end, and asks the gate.
    pub(super) async fn end_step(
        &mut self,
        actor: Actor,
        tool: Option<String>,
        ok: bool,
        (facts, sparse): (&StepFacts, &[SignalKind]),
        checkpoint: Option<String>,
    ) -> Verdict {
        let step = self.step;
        if actor == Actor::Senior {
            self.emitter
                .emit(Event::StepEnded {
                    step,
                    actor,
                    tick: self.watch.tick(),
                    tool,
                    ok,
                    belief: self.watch.belief(),
                    terms: Vec::new(),
                    checkpoint,
                })
                .await;
            return Verdict::Continue;
        }
        let reading = self.watch.step(facts, sparse);
        let terms = self.watch.last_terms().to_vec();
        if !terms.is_empty() {
            self.emitter.emit(self.watch.belief_event(&reading)).await;
        }
        self.emitter
            .emit(Event::StepEnded {
                step,
                actor,
                tick: reading.tick,
                tool,
                ok,
                belief: reading.belief,
                terms,
                checkpoint,
            })
            .await;
        self.gate.set_shadow(self.inbox.control().shadow);
        let verdict = self.gate.on_step_end(reading.below);
        if matches!(verdict, Verdict::ShadowCrossing | Verdict::Explored) {
            let reason = EscalationReason::Threshold;
            let ev = shadow_escalation(&self.watch, &self.gate, step, reason, verdict);
            self.emitter.emit(ev).await;
        }
        verdict
    }

    /// Logs the session's end. Its Ask-F1 counts and money are what the log's own fold
    /// says (the fold `report` runs), so the session and the report cannot disagree.
    pub(super) async fn finish(self, outcome: Outcome) -> SessionEnd {
        let mut end = SessionEnd {
            outcome,
            steps: self.step,
            ticks: self.watch.tick(),
            usd: 0.0,
            ask: AskCounts::default(),
            censored: self.censored,
        };
        let event = |end: &SessionEnd| Event::SessionEnded {
            outcome: end.outcome,
            censored: end.censored,
            steps: end.steps,
            ticks: end.ticks,
            usd: end.usd,
            ask: end.ask,
        };
        let summary = self.emitter.summary_with(&event(&end));
        end.ask = summary.ask_counts();
        end.usd = summary.cost.junior_usd + summary.cost.senior_usd;
        self.emitter.emit(event(&end)).await;
        end
    }
}
