//! How the agent loop went for each model of a session: steps, steps whose reply gave a
//! tool call, steps whose reply gave none (a `no_tool_call` or `malformed_call` warning),
//! tokens in and out, and which of the loop's rules ended the session.
//!
//! The parse rate the real-model lane is judged by is `parsed / (parsed + unusable)`: a
//! step cut short by an escalation (neither) is not a reply the model finished.

use serde::{Deserialize, Serialize};

use crate::protocol::{Actor, Event};

/// Warning kinds of a reply without a usable call (the decoder's and the loop's).
const UNUSABLE: [&str; 2] = ["no_tool_call", "malformed_call"];
/// Warning kinds of the rules that end a session early.
const ENDING_RULES: [&str; 3] = ["max_steps", "token_budget", "stuck"];

/// One model's share of a session's steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSteps {
    /// The model name the session logged for this seat.
    pub model: String,
    pub steps: u32,
    /// Steps whose reply held a tool call.
    pub parsed: u32,
    /// Steps whose reply held no usable call.
    pub unusable: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl ModelSteps {
    /// Adds `other`'s counts (the model name is kept).
    pub fn add(&mut self, other: &ModelSteps) {
        self.steps += other.steps;
        self.parsed += other.parsed;
        self.unusable += other.unusable;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }

    /// `parsed / (parsed + unusable)`; `None` before any finished reply.
    pub fn parse_rate(&self) -> Option<f64> {
        let n = self.parsed + self.unusable;
        (n > 0).then(|| f64::from(self.parsed) / f64::from(n))
    }
}

/// The loop's account of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopTally {
    pub junior: ModelSteps,
    pub senior: ModelSteps,
    /// The rule that ended the session (`max_steps`, `token_budget`, `stuck`), if one did.
    pub ended_by: Option<String>,
    /// The step in progress: who acts, and whether it already counted a call or a problem.
    #[serde(skip)]
    current: Option<(Actor, bool)>,
}

impl LoopTally {
    fn seat(&mut self, actor: Actor) -> &mut ModelSteps {
        match actor {
            Actor::Junior => &mut self.junior,
            Actor::Senior => &mut self.senior,
        }
    }

    /// Takes one event in log order.
    pub fn push(&mut self, event: &Event) {
        match event {
            Event::SessionStarted {
                junior_model,
                senior_model,
                ..
            } => {
                self.junior.model.clone_from(junior_model);
                self.senior.model.clone_from(senior_model);
            }
            Event::StepStarted { actor, .. } => {
                self.seat(*actor).steps += 1;
                self.current = Some((*actor, false));
            }
            Event::ToolCalled { .. } => {
                if let Some((actor, false)) = self.current {
                    self.seat(actor).parsed += 1;
                    self.current = Some((actor, true));
                }
            }
            Event::Warning { kind, .. } if UNUSABLE.contains(&kind.as_str()) => {
                if let Some((actor, false)) = self.current {
                    self.seat(actor).unusable += 1;
                    self.current = Some((actor, true));
                }
            }
            Event::Warning { kind, .. } if ENDING_RULES.contains(&kind.as_str()) => {
                self.ended_by = Some(kind.clone());
            }
            Event::CostIncurred {
                actor,
                input_tokens,
                output_tokens,
                ..
            } => {
                let seat = self.seat(*actor);
                seat.input_tokens += input_tokens;
                seat.output_tokens += output_tokens;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(v: serde_json::Value) -> Event {
        serde_json::from_value(v).expect("event")
    }

    #[test]
    fn a_step_counts_once_and_a_cut_step_counts_neither_way() {
        let mut t = LoopTally::default();
        let step = |n: u32, actor: &str| {
            event(json!({"type": "step_started", "step": n, "actor": actor, "tick": 0}))
        };
        let call = |actor: &str| {
            event(
                json!({"type": "tool_called", "step": 1, "actor": actor, "call_id": "c",
                "name": "read_file", "arguments": {"path": "a"}}),
            )
        };
        let warn = |kind: &str| event(json!({"type": "warning", "kind": kind, "message": "m"}));
        for e in [
            step(1, "junior"),
            call("junior"),
            call("junior"),
            step(2, "junior"),
            warn("no_tool_call"),
            warn("malformed_call"),
            step(3, "junior"),
            step(4, "senior"),
            call("senior"),
            warn("stuck"),
        ] {
            t.push(&e);
        }
        assert_eq!(
            (t.junior.steps, t.junior.parsed, t.junior.unusable),
            (3, 1, 1)
        );
        assert_eq!(
            (t.senior.steps, t.senior.parsed, t.senior.unusable),
            (1, 1, 0)
        );
        assert_eq!(t.junior.parse_rate(), Some(0.5));
        assert_eq!(t.ended_by.as_deref(), Some("stuck"));
        assert_eq!(ModelSteps::default().parse_rate(), None);
    }
}
