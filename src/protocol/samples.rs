//! One example of every [`Event`] variant, for the round-trip tests of every consumer (log
//! writer and reader, UI, replay). Test data, so it is compiled only for tests and the
//! `testkit` feature the integration tests turn on, never into the product.

use super::*;

impl Event {
    /// One example of every variant, for round-trip tests of every consumer (log writer and
    /// reader, UI). The match below fails to compile when a variant is added without one.
    pub fn samples() -> Vec<Event> {
        let term = || EvidenceTerm {
            signal: SignalKind::Entropy,
            value: 1.25,
            llr: -0.125,
        };
        let all = vec![
            Event::SessionStarted {
                session_id: "s1".into(),
                task: "fix the test".into(),
                repo: "/tmp/r".into(),
                head: Some("abc".into()),
                config_digest: "d".into(),
                junior_model: "j".into(),
                senior_model: "s".into(),
                policy: "optimal".into(),
                shadow: false,
                token_budget: 4096,
                prior: 0.75,
            },
            Event::StepStarted {
                step: 1,
                actor: Actor::Junior,
                tick: 0,
            },
            Event::Token {
                actor: Actor::Junior,
                tick: 1,
                text: "fn".into(),
                logprob: Some(-0.5),
                top: vec![Alternative {
                    token: "fn".into(),
                    logprob: -0.5,
                }],
            },
            Event::Token {
                actor: Actor::Senior,
                tick: 1,
                text: "x".into(),
                logprob: None,
                top: vec![],
            },
            Event::BeliefUpdated {
                tick: 1,
                belief: 0.7,
                log_odds: 0.85,
                threshold: 0.4,
                policy: "optimal".into(),
                terms: vec![term()],
            },
            Event::ToolCalled {
                step: 1,
                actor: Actor::Junior,
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "src/lib.rs"}),
            },
            Event::ApprovalRequested {
                step: 1,
                call_id: "c1".into(),
                name: "write_file".into(),
                summary: "write src/lib.rs (12 lines)".into(),
            },
            Event::ApprovalDecided {
                step: 1,
                call_id: "c1".into(),
                approved: false,
                by: "policy".into(),
            },
            Event::ToolResulted {
                step: 1,
                call_id: "c1".into(),
                name: "read_file".into(),
                ok: true,
                output: "fn main() {}".into(),
            },
            Event::StepEnded {
                step: 1,
                actor: Actor::Junior,
                tick: 12,
                tool: Some("read_file".into()),
                ok: true,
                belief: 0.6,
                terms: vec![term()],
                checkpoint: Some("tree".into()),
            },
            Event::Escalated {
                step: 2,
                tick: 40,
                route: Route::Operator,
                reason: EscalationReason::Threshold,
                belief: 0.3,
                threshold: 0.4,
                why: vec![term()],
                shadow: true,
                propensity: Some(0.1),
            },
            Event::OperatorAsked {
                step: 2,
                question: "Which date format?".into(),
                options: vec!["ISO".into(), "US".into()],
                default_assumption: Some("ISO".into()),
                self_initiated: false,
                topic: Some("the date format".into()),
            },
            Event::OperatorAnswered {
                step: 2,
                answer: "ISO".into(),
                needed: Some(true),
                deferred_to_senior: false,
            },
            Event::SeniorTookOver {
                step: 3,
                tick: 50,
                mode: "step".into(),
                context_chars: 1200,
            },
            Event::SeniorReturned { step: 3, tick: 50 },
            Event::CostIncurred {
                actor: Actor::Senior,
                model: "s".into(),
                input_tokens: 100,
                output_tokens: 20,
                usd: 0.001,
                estimated: false,
            },
            Event::CheckRan {
                command: "cargo test".into(),
                exit_code: Some(0),
                passed: true,
                output_tail: "ok".into(),
            },
            Event::ExamplesRan {
                step: 2,
                actor: Actor::Junior,
                files: vec!["solution.py".into()],
                passed: 1,
                failed: 1,
                unread: 0,
                results: vec![
                    ExampleCheck {
                        call: "f(1)".into(),
                        expected: "2".into(),
                        passed: true,
                        got: Some("2".into()),
                        error: None,
                    },
                    ExampleCheck {
                        call: "f(2)".into(),
                        expected: "4".into(),
                        passed: false,
                        got: None,
                        error: Some("ZeroDivisionError: division by zero".into()),
                    },
                ],
                note: None,
            },
            Event::CandidatesRan {
                step: 1,
                file: "solution.py".into(),
                probes: vec!["f(1)".into(), "f(2)".into()],
                candidates: vec![
                    CandidateRun {
                        temperature: 0.0,
                        tokens: 30,
                        group: Some(0),
                        examples_passed: 1,
                        examples_failed: 0,
                        note: None,
                    },
                    CandidateRun {
                        temperature: 0.8,
                        tokens: 12,
                        group: None,
                        examples_passed: 0,
                        examples_failed: 0,
                        note: Some("wrote no code that could be placed".into()),
                    },
                ],
                groups: vec![1],
                chosen: 0,
                note: None,
            },
            Event::Fault {
                actor: Actor::Junior,
                kind: "server".into(),
                message: "503".into(),
                retryable: true,
                attempt: 1,
            },
            Event::ControlChanged {
                paused: true,
                shadow: false,
            },
            Event::ProtectedTouched {
                step: 2,
                refused: vec!["tests/test_x.py".into()],
                restored: vec!["test_y.py".into()],
                unrestored: vec![],
                git: vec!["src/.git was planted and has been removed".into()],
            },
            Event::Warning {
                kind: "no_logprobs".into(),
                message: "judge uses step evidence only".into(),
            },
            Event::SessionEnded {
                outcome: Outcome::Success,
                censored: true,
                steps: 3,
                ticks: 50,
                usd: 0.002,
                ask: AskCounts {
                    tp: 1,
                    fp: 0,
                    fn_: 0,
                },
            },
        ];
        for e in &all {
            match e {
                Event::SessionStarted { .. }
                | Event::StepStarted { .. }
                | Event::Token { .. }
                | Event::BeliefUpdated { .. }
                | Event::ToolCalled { .. }
                | Event::ApprovalRequested { .. }
                | Event::ApprovalDecided { .. }
                | Event::ToolResulted { .. }
                | Event::StepEnded { .. }
                | Event::Escalated { .. }
                | Event::OperatorAsked { .. }
                | Event::OperatorAnswered { .. }
                | Event::SeniorTookOver { .. }
                | Event::SeniorReturned { .. }
                | Event::CostIncurred { .. }
                | Event::CheckRan { .. }
                | Event::ExamplesRan { .. }
                | Event::CandidatesRan { .. }
                | Event::Fault { .. }
                | Event::ControlChanged { .. }
                | Event::ProtectedTouched { .. }
                | Event::Warning { .. }
                | Event::SessionEnded { .. } => {}
            }
        }
        all
    }
}
