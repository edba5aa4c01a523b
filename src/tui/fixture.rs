//! A realistic session as events, for snapshots and key tests: the junior reads, its
//! confidence decays, a patch is rejected, the judge asks the operator, later hands a step
//! to the senior, and the check passes.

use serde_json::json;

use crate::protocol::{
    Actor, AskCounts, EscalationReason, Event, EvidenceTerm, Outcome, Route, SignalKind, Stamped,
};

/// Builds events with a clock and a tick counter, the way the agent loop emits them.
pub struct Script {
    pub events: Vec<Stamped>,
    pub t_ms: u64,
    pub tick: u64,
    pub belief: f64,
    pub threshold: f64,
}

fn term(signal: SignalKind, value: f64, llr: f64) -> EvidenceTerm {
    EvidenceTerm { signal, value, llr }
}

impl Script {
    pub fn new() -> Self {
        Script {
            events: Vec::new(),
            t_ms: 0,
            tick: 0,
            belief: 0.75,
            threshold: 0.35,
        }
    }

    pub fn push(&mut self, dt_ms: u64, event: Event) {
        self.t_ms += dt_ms;
        self.events.push(Stamped {
            t_ms: self.t_ms,
            event,
        });
    }

    pub fn start(&mut self) {
        self.push(
            0,
            Event::SessionStarted {
                session_id: "7f3a".into(),
                task: "Make parse_date accept ISO 8601 dates; test parses_iso fails".into(),
                repo: "sample".into(),
                head: Some("abc123".into()),
                config_digest: "d1".into(),
                junior_model: "qwen2.5-coder-1.5b".into(),
                senior_model: "gpt-4.1".into(),
                policy: "optimal".into(),
                shadow: false,
                token_budget: 4096,
                prior: 0.75,
            },
        );
    }

    /// Junior tokens: each `(text, logprob)` is one token followed by a belief update whose
    /// evidence is the token's surprise.
    pub fn junior_says(&mut self, tokens: &[(&str, f64)]) {
        for &(text, lp) in tokens {
            self.tick += 1;
            self.push(
                40,
                Event::Token {
                    actor: Actor::Junior,
                    tick: self.tick,
                    text: text.into(),
                    logprob: Some(lp),
                    top: Vec::new(),
                },
            );
            let llr = 0.05 + 0.06 * lp;
            self.move_belief(llr, vec![term(SignalKind::Surprise, -lp, llr)]);
        }
    }

    pub fn move_belief(&mut self, llr: f64, terms: Vec<EvidenceTerm>) {
        let l = (self.belief / (1.0 - self.belief)).ln() + llr;
        self.belief = 1.0 / (1.0 + (-l).exp());
        // The optimal threshold rises as the token budget runs out.
        self.threshold = (0.35 + 0.01 * self.tick as f64).min(0.7);
        self.push(
            1,
            Event::BeliefUpdated {
                tick: self.tick,
                belief: self.belief,
                log_odds: l,
                threshold: self.threshold,
                policy: "optimal".into(),
                terms,
            },
        );
    }

    pub fn step_start(&mut self, step: u32, actor: Actor) {
        self.push(
            5,
            Event::StepStarted {
                step,
                actor,
                tick: self.tick,
            },
        );
    }

    pub fn tool(
        &mut self,
        step: u32,
        actor: Actor,
        name: &str,
        args: serde_json::Value,
        ok: bool,
        out: &str,
    ) {
        let call_id = format!("call_{step}");
        self.push(
            10,
            Event::ToolCalled {
                step,
                actor,
                call_id: call_id.clone(),
                name: name.into(),
                arguments: args,
            },
        );
        if matches!(name, "apply_patch" | "write_file" | "run") {
            self.push(
                5,
                Event::ApprovalRequested {
                    step,
                    call_id: call_id.clone(),
                    name: name.into(),
                    // Worded as the session words it (`describe_call`).
                    summary: match name {
                        "apply_patch" => "patch 1 file:\nmodify src/date.rs (+0 -0)".to_string(),
                        _ => format!("{name}: step {step} wants to change the work tree"),
                    },
                },
            );
            self.push(
                300,
                Event::ApprovalDecided {
                    step,
                    call_id: call_id.clone(),
                    approved: true,
                    by: "operator".into(),
                },
            );
        }
        self.push(
            120,
            Event::ToolResulted {
                step,
                call_id,
                name: name.into(),
                ok,
                output: out.into(),
            },
        );
    }

    pub fn step_end(
        &mut self,
        step: u32,
        actor: Actor,
        tool: &str,
        ok: bool,
        terms: Vec<EvidenceTerm>,
    ) {
        let llr: f64 = terms.iter().map(|t| t.llr).sum();
        if llr != 0.0 {
            let l = (self.belief / (1.0 - self.belief)).ln() + llr;
            self.belief = 1.0 / (1.0 + (-l).exp());
        }
        self.push(
            2,
            Event::StepEnded {
                step,
                actor,
                tick: self.tick,
                tool: Some(tool.into()),
                ok,
                belief: self.belief,
                terms,
                checkpoint: Some(format!("tree{step}")),
            },
        );
    }

    pub fn cost(&mut self, actor: Actor, model: &str, input: u64, output: u64, usd: f64) {
        self.push(
            1,
            Event::CostIncurred {
                actor,
                model: model.into(),
                input_tokens: input,
                output_tokens: output,
                usd,
                estimated: false,
            },
        );
    }

    pub fn escalate(&mut self, step: u32, route: Route, why: Vec<EvidenceTerm>) {
        self.push(
            3,
            Event::Escalated {
                step,
                tick: self.tick,
                route,
                reason: EscalationReason::Threshold,
                belief: self.belief,
                threshold: self.threshold,
                why,
                shadow: false,
                propensity: None,
            },
        );
    }
}

/// Up to the moment the operator is asked (the modal is open).
pub fn until_question() -> Script {
    let mut s = Script::new();
    s.start();
    s.step_start(1, Actor::Junior);
    s.junior_says(&[
        ("I'll", -0.05),
        (" read", -0.1),
        (" the", -0.02),
        (" failing", -0.3),
        (" test", -0.05),
        (" first.", -0.2),
    ]);
    s.tool(
        1,
        Actor::Junior,
        "read_file",
        json!({"path": "tests/date.rs"}),
        true,
        "#[test]\nfn parses_iso() {\n    assert_eq!(parse_date(\"2024-03-01\"), Some(d(2024, 3, 1)));\n}",
    );
    s.cost(Actor::Junior, "qwen2.5-coder-1.5b", 820, 14, 0.0);
    s.step_end(1, Actor::Junior, "read_file", true, vec![]);
    s.step_start(2, Actor::Junior);
    s.junior_says(&[
        ("The", -0.1),
        (" parser", -0.4),
        (" splits", -1.2),
        (" on", -0.3),
        (" '/'", -2.1),
        (".", -0.2),
        ("\nMaybe", -2.6),
        (" both", -3.4),
        (" formats", -1.9),
        ("?", -3.8),
    ]);
    s.tool(
        2,
        Actor::Junior,
        "apply_patch",
        json!({"patch": "--- a/src/date.rs\n+++ b/src/date.rs\n@@ -12 +12 @@"}),
        false,
        "patch rejected: hunk 1 does not apply at src/date.rs:12",
    );
    s.cost(Actor::Junior, "qwen2.5-coder-1.5b", 1130, 31, 0.0);
    s.step_end(
        2,
        Actor::Junior,
        "apply_patch",
        false,
        vec![term(SignalKind::PatchRejected, 1.0, -0.9)],
    );
    s.escalate(
        2,
        Route::Operator,
        vec![
            term(SignalKind::PatchRejected, 1.0, -0.9),
            term(SignalKind::Surprise, 3.8, -0.46),
        ],
    );
    s.cost(Actor::Senior, "gpt-4.1", 1400, 60, 0.0033);
    s.push(
        400,
        Event::OperatorAsked {
            step: 2,
            question: "Should parse_date keep accepting US dates (MM/DD/YYYY) besides ISO 8601?"
                .into(),
            options: vec!["Yes, both formats".into(), "No, ISO only".into()],
            default_assumption: Some("Yes, both formats".into()),
            self_initiated: false,
            topic: Some("the date formats parse_date accepts".into()),
        },
    );
    s
}

/// The whole session, to its successful end.
pub fn full() -> Script {
    let mut s = until_question();
    s.push(
        5200,
        Event::OperatorAnswered {
            step: 2,
            answer: "Yes, both formats".into(),
            needed: Some(true),
            deferred_to_senior: false,
        },
    );
    s.step_start(3, Actor::Junior);
    s.junior_says(&[
        ("Keep", -0.6),
        (" US", -1.1),
        (" and", -0.4),
        (" add", -1.7),
        (" ISO", -2.2),
        (" branch", -2.9),
    ]);
    s.escalate(
        3,
        Route::Senior,
        vec![
            term(SignalKind::Surprise, 2.9, -0.52),
            term(SignalKind::Entropy, 1.7, -0.21),
        ],
    );
    s.push(
        10,
        Event::SeniorTookOver {
            step: 3,
            tick: s.tick,
            mode: "step".into(),
            context_chars: 1830,
        },
    );
    s.push(
        300,
        Event::Token {
            actor: Actor::Senior,
            tick: s.tick,
            text: "Try ISO first, then fall back to the US format.".into(),
            logprob: None,
            top: Vec::new(),
        },
    );
    s.tool(
        3,
        Actor::Senior,
        "write_file",
        json!({"path": "src/date.rs", "content": "..."}),
        true,
        "wrote src/date.rs (41 lines)",
    );
    s.cost(Actor::Senior, "gpt-4.1", 2100, 240, 0.0061);
    s.step_end(3, Actor::Senior, "write_file", true, vec![]);
    s.push(
        2,
        Event::SeniorReturned {
            step: 3,
            tick: s.tick,
        },
    );
    s.push(
        900,
        Event::CheckRan {
            command: "cargo test".into(),
            exit_code: Some(0),
            passed: true,
            output_tail: "test result: ok. 3 passed".into(),
        },
    );
    s.push(
        5,
        Event::SessionEnded {
            outcome: Outcome::Success,
            censored: true,
            steps: 3,
            ticks: s.tick,
            usd: 0.0094,
            ask: AskCounts {
                tp: 1,
                fp: 0,
                fn_: 0,
            },
        },
    );
    s
}
