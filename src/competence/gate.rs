//! The escalation rule: when a reading of the judge hands control off.
//!
//! The judge ([`super::Judge`]) says where B_t stands against τ_t; the gate decides what the
//! session does about it. It is the one home of the rule, used by the live loop and by
//! replay's re-scoring alike, so a log re-scored under its own calibration and policy
//! reproduces every decision.
//!
//! **The rule.** A reading *fires* when it is below τ, outside the cooldown, and the gate is
//! *armed*. Firing disarms the gate. In live mode firing is a hand-off ([`Verdict::Escalate`]),
//! and the gate stays disarmed until the junior gets control back ([`Gate::on_reset`]). In
//! shadow mode nothing is handed off ([`Verdict::ShadowCrossing`] is logged instead), and the
//! gate re-arms as soon as a reading is back above τ. So a shadow session logs exactly the
//! moments a live one would have escalated had it never handed off: the first reading below
//! τ outside the cooldown, once per excursion below τ. Tokens and step ends follow the same
//! rule. A hand-off that was not the gate's decision (forced, the junior's own question, a
//! fault) disarms it too ([`Gate::on_handoff`]), and switching shadow mode on or off
//! re-arms it, so the next reading below τ is decided under the new mode.

/// What the session does after one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Continue,
    /// Hand control off now.
    Escalate,
    /// Shadow mode: log where a live session would have escalated; keep going.
    ShadowCrossing,
}

/// The escalation state of one session: pure, no clock, no I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    shadow: bool,
    armed: bool,
    /// Steps left during which nothing fires (after the junior got control back).
    cooldown: u32,
    cooldown_steps: u32,
}

impl Gate {
    /// A fresh gate; `cooldown_steps` is `policy.cooldown_steps`.
    pub fn new(shadow: bool, cooldown_steps: u32) -> Gate {
        Gate {
            shadow,
            armed: true,
            cooldown: 0,
            cooldown_steps,
        }
    }

    pub fn shadow(&self) -> bool {
        self.shadow
    }

    /// Steps of cooldown still to run.
    pub fn cooldown(&self) -> u32 {
        self.cooldown
    }

    /// The verdict on a junior token's reading (`below`: B_t < τ_t).
    pub fn on_token(&mut self, below: bool) -> Verdict {
        self.decide(below)
    }

    /// The verdict on the reading at the end of a junior step.
    pub fn on_step_end(&mut self, below: bool) -> Verdict {
        self.decide(below)
    }

    /// A step (junior or senior) is over: the cooldown counts down.
    pub fn on_step_done(&mut self) {
        self.cooldown = self.cooldown.saturating_sub(1);
    }

    /// The junior has control again with new information (an answer, the senior's step):
    /// the belief restarts from the prior, so the gate re-arms behind a cooldown.
    pub fn on_reset(&mut self) {
        self.armed = true;
        self.cooldown = self.cooldown_steps;
    }

    /// Control left the junior for a reason that was not this gate's (forced, self-asked,
    /// fault).
    pub fn on_handoff(&mut self) {
        self.armed = false;
    }

    /// Shadow mode switched on or off: from the next reading on, the new mode decides.
    pub fn set_shadow(&mut self, on: bool) {
        if on != self.shadow {
            self.shadow = on;
            self.armed = true;
        }
    }

    fn decide(&mut self, below: bool) -> Verdict {
        if !below {
            if self.shadow {
                self.armed = true;
            }
            return Verdict::Continue;
        }
        if !self.armed || self.cooldown > 0 {
            return Verdict::Continue;
        }
        self.armed = false;
        if self.shadow {
            Verdict::ShadowCrossing
        } else {
            Verdict::Escalate
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Input {
        Reading(bool),
        StepDone,
        Reset,
    }

    fn inputs() -> impl Strategy<Value = Vec<Input>> {
        prop::collection::vec(
            prop_oneof![
                6 => any::<bool>().prop_map(Input::Reading),
                2 => Just(Input::StepDone),
                1 => Just(Input::Reset),
            ],
            0..80,
        )
    }

    fn feed(gate: &mut Gate, input: Input) -> Option<Verdict> {
        match input {
            Input::Reading(below) => Some(gate.on_token(below)),
            Input::StepDone => {
                gate.on_step_done();
                None
            }
            Input::Reset => {
                gate.on_reset();
                None
            }
        }
    }

    proptest! {
        /// Shadow mode logs exactly where live mode would first escalate: until the first
        /// firing after each reset, the two gates agree reading by reading.
        #[test]
        fn shadow_fires_where_live_would_escalate(cooldown in 0u32..4, seq in inputs()) {
            let mut live = Gate::new(false, cooldown);
            let mut shadow = Gate::new(true, cooldown);
            let mut live_fired = false;
            for input in seq {
                if matches!(input, Input::Reset) {
                    live_fired = false;
                }
                let l = feed(&mut live, input);
                let s = feed(&mut shadow, input);
                if let (Some(l), Some(s)) = (l, s) {
                    if !live_fired {
                        prop_assert_eq!(l == Verdict::Escalate, s == Verdict::ShadowCrossing);
                    }
                    prop_assert_ne!(l, Verdict::ShadowCrossing);
                    prop_assert_ne!(s, Verdict::Escalate);
                    live_fired |= l == Verdict::Escalate;
                }
            }
        }

        /// Nothing fires above τ or in the cooldown; live fires at most once per reset;
        /// shadow fires at most once per excursion below τ.
        #[test]
        fn firing_needs_below_open_and_armed(shadow in any::<bool>(), cooldown in 0u32..4, seq in inputs()) {
            let mut gate = Gate::new(shadow, cooldown);
            let mut fired_since_rearm = false;
            for input in seq {
                let in_cooldown = gate.cooldown() > 0;
                match input {
                    Input::Reset => fired_since_rearm = false,
                    Input::Reading(false) if shadow => fired_since_rearm = false,
                    _ => {}
                }
                if let Some(v) = feed(&mut gate, input) {
                    let below = matches!(input, Input::Reading(true));
                    if v != Verdict::Continue {
                        prop_assert!(below && !in_cooldown && !fired_since_rearm);
                        fired_since_rearm = true;
                    }
                }
            }
        }
    }

    #[test]
    fn a_crossing_in_the_cooldown_fires_when_it_ends_if_still_below() {
        for shadow in [false, true] {
            let mut g = Gate::new(shadow, 1);
            g.on_reset();
            assert_eq!(g.on_token(true), Verdict::Continue, "cooldown");
            g.on_step_done();
            let fired = g.on_step_end(true);
            assert_ne!(fired, Verdict::Continue, "shadow={shadow}");
            assert_eq!(g.on_token(true), Verdict::Continue, "once");
        }
    }

    #[test]
    fn toggling_shadow_re_arms_and_switches_the_verdict() {
        let mut g = Gate::new(false, 0);
        g.set_shadow(true);
        assert_eq!(g.on_token(true), Verdict::ShadowCrossing);
        assert_eq!(g.on_token(true), Verdict::Continue);
        g.set_shadow(false);
        assert_eq!(g.on_token(true), Verdict::Escalate);
        g.on_handoff();
        g.set_shadow(false);
        assert_eq!(g.on_token(true), Verdict::Continue, "same mode: no re-arm");
    }
}
