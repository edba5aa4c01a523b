//! Where a session's seconds go, read back from the `t_ms` stamps of its log: waiting for a
//! model's first token (the server reads the prompt: prefill), streaming the rest of the
//! reply (generation), running commands and the check, and the loop's own work. A token
//! cost is not a time cost: a hand-off makes the senior read a whole new prompt, and on a
//! CPU prefill is what a takeover pays for first.

use serde::Serialize;

use crate::protocol::{Event, Stamped};

/// Milliseconds of one session (or part of one) by what the machine was waiting for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Wall {
    /// From a request's start to its first token: prompt processing, and the queue.
    pub prefill_ms: u64,
    /// From the first token to the end of the reply.
    pub generation_ms: u64,
    /// Tools, commands and the check.
    pub commands_ms: u64,
    /// Everything else (applying edits, checkpoints, the judge).
    pub other_ms: u64,
}

impl Wall {
    pub fn total_ms(&self) -> u64 {
        self.prefill_ms + self.generation_ms + self.commands_ms + self.other_ms
    }

    pub fn plus(self, other: Wall) -> Wall {
        Wall {
            prefill_ms: self.prefill_ms + other.prefill_ms,
            generation_ms: self.generation_ms + other.generation_ms,
            commands_ms: self.commands_ms + other.commands_ms,
            other_ms: self.other_ms + other.other_ms,
        }
    }
}

/// A session's wall time: in all, and as it stood at each junior token (by tick), so a
/// policy that hands off at tick t is charged the junior's seconds up to t.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WallTrace {
    pub total: Wall,
    #[serde(skip)]
    at_tick: Vec<(u64, Wall)>,
}

impl WallTrace {
    /// Folds one session's stamped events (the first session of a log). Each gap between
    /// two events is charged to what ended it: a token after another token (or its belief
    /// update) is generation, a token after anything else is a request's first (prefill),
    /// the cost line closing a stream is generation, a tool result or a check is commands.
    pub fn of(events: &[Stamped]) -> WallTrace {
        let mut trace = WallTrace::default();
        let mut last: Option<(u64, bool)> = None;
        for (i, s) in events.iter().enumerate() {
            if i > 0 && matches!(s.event, Event::SessionStarted { .. }) {
                break;
            }
            // A belief update follows its token in the same stream; anything else ends it.
            let streaming = match s.event {
                Event::Token { .. } => true,
                Event::BeliefUpdated { .. } => last.is_some_and(|(_, in_stream)| in_stream),
                _ => false,
            };
            if let Some((t, in_stream)) = last {
                let gap = s.t_ms.saturating_sub(t);
                let w = &mut trace.total;
                match &s.event {
                    Event::Token { .. } if in_stream => w.generation_ms += gap,
                    Event::Token { .. } => w.prefill_ms += gap,
                    Event::CostIncurred { .. } if in_stream => w.generation_ms += gap,
                    Event::ToolResulted { .. } | Event::CheckRan { .. } => w.commands_ms += gap,
                    _ => w.other_ms += gap,
                }
            }
            if let Event::Token {
                actor: crate::protocol::Actor::Junior,
                tick,
                ..
            } = &s.event
            {
                trace.at_tick.push((*tick, trace.total));
            }
            last = Some((s.t_ms, streaming));
        }
        trace
    }

    /// The seconds spent by junior token `tick` (all of them when `None` or past the end).
    pub fn by(&self, tick: Option<u64>) -> Wall {
        let Some(tick) = tick else {
            return self.total;
        };
        match self.at_tick.partition_point(|(t, _)| *t <= tick) {
            0 => Wall::default(),
            n if n == self.at_tick.len() && self.at_tick[n - 1].0 < tick => self.total,
            n => self.at_tick[n - 1].1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Actor;

    fn at(t_ms: u64, event: Event) -> Stamped {
        Stamped { t_ms, event }
    }

    fn token(tick: u64) -> Event {
        Event::Token {
            actor: Actor::Junior,
            tick,
            text: "x".into(),
            logprob: Some(-0.1),
            top: Vec::new(),
        }
    }

    fn step(step: u32) -> Event {
        Event::StepStarted {
            step,
            actor: Actor::Junior,
            tick: 0,
        }
    }

    fn session() -> Vec<Stamped> {
        vec![
            at(0, step(1)),
            at(900, token(1)),
            at(1000, token(2)),
            at(1100, token(3)),
            at(
                1150,
                Event::CheckRan {
                    command: "true".into(),
                    exit_code: Some(0),
                    passed: true,
                    output_tail: String::new(),
                },
            ),
        ]
    }

    #[test]
    fn the_wait_for_a_first_token_is_prefill_the_stream_is_generation_the_check_commands() {
        let w = WallTrace::of(&session());
        assert_eq!(
            w.total,
            Wall {
                prefill_ms: 900,
                generation_ms: 200,
                commands_ms: 50,
                other_ms: 0
            }
        );
        assert_eq!(w.total.total_ms(), 1150);
    }

    #[test]
    fn a_hand_off_at_a_tick_is_charged_the_time_up_to_that_token() {
        let w = WallTrace::of(&session());
        assert_eq!(w.by(Some(2)).total_ms(), 1000);
        assert_eq!(w.by(Some(2)).generation_ms, 100);
        assert_eq!(w.by(Some(0)), Wall::default());
        assert_eq!(w.by(Some(99)), w.total);
        assert_eq!(w.by(None), w.total);
    }
}
