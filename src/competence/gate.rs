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
//!
//! **Shadow exploration.** A live hand-off censors the session: the junior's own outcome is
//! never seen, so a judge refitted on live logs only learns from sessions it trusted. With
//! an [`Exploration`] rate ε > 0, each live decision to hand off (a firing, or the stuck
//! rule, [`Gate::on_rule`]) is drawn: with probability ε the session is *explored* instead
//! ([`Verdict::Explored`]): nothing is handed off, and from then on the gate runs as in
//! shadow mode, so the junior's outcome is observed. The probability of the path taken is
//! logged with the decision ([`Gate::propensity`]): 1 − ε on a hand-off, ε on an explored
//! decision. A session that was explored is therefore uncensored with probability ε given
//! its evidence, one that never fired with probability 1, which is what `calibrate`'s
//! inverse-propensity weights undo. The draws come from a seeded generator, so a session
//! is reproducible given the seed.

/// What the session does after one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Continue,
    /// Hand control off now.
    Escalate,
    /// Shadow mode: log where a live session would have escalated; keep going.
    ShadowCrossing,
    /// A live decision to hand off, drawn to explore: log it as a shadow crossing with its
    /// propensity ([`Gate::propensity`]) and keep going; the rest of the session is shadow.
    Explored,
}

/// Randomised shadow exploration: the rate ε and the state of its generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exploration {
    rate: f64,
    state: u64,
}

impl Exploration {
    /// ε in [0, 1) and the seed of the draws (the caller mixes in what makes one session
    /// differ from another, e.g. its task). `None` when ε is 0 or not a probability.
    pub fn new(rate: f64, seed: u64) -> Option<Exploration> {
        (rate > 0.0 && rate < 1.0).then_some(Exploration { rate, state: seed })
    }

    /// [`Exploration::new`] with the seed mixed with what tells one session from another
    /// (FNV-1a over `key`, e.g. the task text).
    pub fn for_session(rate: f64, seed: u64, key: &str) -> Option<Exploration> {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
        for b in key.as_bytes() {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
        Exploration::new(rate, h)
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// A uniform draw in [0, 1) (SplitMix64: small, stateless beyond one word, and the
    /// same on every platform).
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The escalation state of one session: pure, no clock, no I/O.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    shadow: bool,
    armed: bool,
    /// Steps left during which nothing fires (after the junior got control back).
    cooldown: u32,
    cooldown_steps: u32,
    exploration: Option<Exploration>,
    /// A decision was drawn to explore: the gate runs as in shadow mode from then on.
    explored: bool,
    /// The probability of the path the last drawn decision took.
    propensity: Option<f64>,
}

impl Gate {
    /// A fresh gate; `cooldown_steps` is `policy.cooldown_steps`.
    pub fn new(shadow: bool, cooldown_steps: u32) -> Gate {
        Gate {
            shadow,
            armed: true,
            cooldown: 0,
            cooldown_steps,
            exploration: None,
            explored: false,
            propensity: None,
        }
    }

    /// The gate with shadow exploration (`None`: every live decision hands off).
    pub fn with_exploration(mut self, exploration: Option<Exploration>) -> Gate {
        self.exploration = exploration;
        self
    }

    /// Hand-offs are only logged: shadow mode, or an explored session.
    pub fn shadow(&self) -> bool {
        self.shadow || self.explored
    }

    /// A decision of this session was drawn to explore.
    pub fn explored(&self) -> bool {
        self.explored
    }

    /// The probability with which the last verdict that was drawn ([`Verdict::Escalate`] or
    /// [`Verdict::Explored`]) went the way it did; `None` when it was not drawn (no
    /// exploration configured, or the session was already explored or in shadow mode).
    pub fn propensity(&self) -> Option<f64> {
        self.propensity
    }

    /// The log says a decision of this session was drawn to explore (replay): from now on
    /// the gate runs as in shadow mode, as the live one did.
    pub fn mark_explored(&mut self) {
        if !self.explored {
            self.explored = true;
            self.armed = true;
        }
    }

    /// A loop rule (stuck, or a failed check under `escalate_on_failed_check`) wants to
    /// hand off: under exploration the decision is drawn like a firing; in shadow mode (or
    /// once explored) it is only logged.
    pub fn on_rule(&mut self) -> Verdict {
        if self.shadow() {
            return Verdict::ShadowCrossing;
        }
        self.draw()
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
            let before = self.shadow();
            self.shadow = on;
            if self.shadow() != before {
                self.armed = true;
            }
        }
    }

    fn decide(&mut self, below: bool) -> Verdict {
        if !below {
            if self.shadow() {
                self.armed = true;
            }
            return Verdict::Continue;
        }
        if !self.armed || self.cooldown > 0 {
            return Verdict::Continue;
        }
        self.armed = false;
        if self.shadow() {
            Verdict::ShadowCrossing
        } else {
            self.draw()
        }
    }

    /// A live hand-off, or (with probability ε) an exploration instead.
    fn draw(&mut self) -> Verdict {
        let Some(exploration) = self.exploration.as_mut() else {
            self.propensity = None;
            return Verdict::Escalate;
        };
        let rate = exploration.rate;
        if exploration.uniform() < rate {
            self.explored = true;
            self.propensity = Some(rate);
            Verdict::Explored
        } else {
            self.propensity = Some(1.0 - rate);
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
    fn exploration_draws_each_live_decision_and_logs_its_propensity() {
        let rate = 0.25;
        let (mut explored, mut escalated) = (0usize, 0usize);
        for seed in 0..4000u64 {
            let mut g = Gate::new(false, 0).with_exploration(Exploration::new(rate, seed));
            match g.on_token(true) {
                Verdict::Explored => {
                    explored += 1;
                    assert_eq!(g.propensity(), Some(rate));
                    assert!(g.shadow() && g.explored());
                    // The rest of the session is shadow: crossings are logged, not drawn.
                    assert_eq!(g.on_token(false), Verdict::Continue);
                    assert_eq!(g.on_token(true), Verdict::ShadowCrossing);
                    assert_eq!(g.on_rule(), Verdict::ShadowCrossing);
                    g.set_shadow(false);
                    assert!(g.shadow(), "an explored session stays shadow");
                }
                Verdict::Escalate => {
                    escalated += 1;
                    assert_eq!(g.propensity(), Some(1.0 - rate));
                }
                v => panic!("{v:?}"),
            }
        }
        let share = explored as f64 / (explored + escalated) as f64;
        assert!((share - rate).abs() < 0.03, "{share}");
        // Deterministic given the seed.
        let run = |seed| {
            let mut g = Gate::new(false, 0).with_exploration(Exploration::new(rate, seed));
            g.on_rule()
        };
        assert!((0..50).all(|s| run(s) == run(s)));
        // No exploration: every decision hands off and carries no propensity.
        let mut g = Gate::new(false, 0).with_exploration(Exploration::new(0.0, 1));
        assert_eq!(g.on_rule(), Verdict::Escalate);
        assert_eq!(g.propensity(), None);
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
