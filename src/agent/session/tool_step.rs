//! One step under a tool-calling protocol, in three parts: the reply is read for one call
//! ([`reply::read`]), the call is resolved (run, asked, checked or refused) and recorded,
//! and the loop decides what comes next from the [`StepOutcome`] alone.
//!
//! The middle part never decides where control goes; the last part never looks at the
//! call. A forced escalation that withdraws a call waiting for approval is the one early
//! way out: the call never ran, so, like a cut stream, it leaves no step end.

use crate::competence::repeats::{Move, Repeat};
use crate::competence::{CommandRun, StepFacts, Verdict};
use crate::config::HandoffMode;
use crate::llm::types::{Message, ToolCall};
use crate::protocol::{Actor, EscalationReason, Outcome, SignalKind};

use super::super::handoff::OperatorReply;
use super::super::reply::{self, CallProblem, Read};
use super::super::step::{self, Acted, StepReport};
use super::super::tools;
use super::{After, Next, Session};

/// What one read-and-acted step left, before the loop decides what comes next.
struct StepOutcome {
    report: StepReport,
    /// The tool that ran; `None` when the reply held no usable call.
    tool: Option<String>,
    ok: bool,
    after: After,
    repeat: Repeat,
    /// The reply was unusable and no repair note is left.
    repairs_spent: bool,
}

/// What a call resolved to, before it is recorded.
struct Resolved {
    ok: bool,
    output: String,
    facts: StepFacts,
    wrote: Option<String>,
    refused: Vec<String>,
    after: After,
}

impl Resolved {
    /// A call the loop handled itself: no facts, nothing written, nothing refused.
    fn handled(ok: bool, output: impl Into<String>, after: After) -> Resolved {
        Resolved {
            ok,
            output: output.into(),
            facts: StepFacts::default(),
            wrote: None,
            refused: Vec::new(),
            after,
        }
    }
}

impl Session<'_> {
    /// One step of `actor`'s reply (`text` and its `calls`) under a tool-calling protocol.
    pub(super) async fn step_with(
        &mut self,
        actor: Actor,
        text: String,
        calls: Vec<ToolCall>,
        problem: Option<CallProblem>,
    ) -> Next {
        let specs = tools::specs();
        let outcome = match reply::read(&calls, problem.as_ref(), &specs) {
            Read::Unusable {
                why,
                message,
                logged,
            } => {
                if !logged {
                    self.warn(reply::kind(why), message.clone()).await;
                }
                let repairs_spent = !self.repairs.another();
                let tree = self.last_checkpoint.clone();
                let repeat = self
                    .progress_of(actor)
                    .made(Move::said(&text), tree.as_deref());
                let mut report = step::unusable(self.last_checkpoint.as_deref(), why, message);
                report.facts.repeats = repeat.of_move;
                StepOutcome {
                    report,
                    tool: None,
                    ok: false,
                    after: After::Continue,
                    repeat,
                    repairs_spent,
                }
            }
            Read::Call { call, extra } => match self.call_step(actor, call, extra).await {
                Some(outcome) => outcome,
                None => return self.escalate(EscalationReason::Forced).await,
            },
        };
        self.conclude(actor, text, calls, outcome).await
    }

    /// Runs (or asks, checks, refuses) one usable call and records it; `None` when a
    /// forced escalation withdrew it before it ran.
    async fn call_step(
        &mut self,
        actor: Actor,
        call: &ToolCall,
        extra: &[ToolCall],
    ) -> Option<StepOutcome> {
        self.repairs.usable();
        if !extra.is_empty() {
            let message = format!(
                "the reply holds {} tool calls; only the first ({}) is run",
                extra.len() + 1,
                call.function.name
            );
            self.warn(reply::SEVERAL_TOOL_CALLS, message).await;
        }
        let name = call.function.name.clone();
        let tree = self.last_checkpoint.clone();
        let repeat = self
            .progress_of(actor)
            .made(Move::call(&name, &call.function.arguments), tree.as_deref());
        if repeat.of_move > 0 && name != tools::spec::FINISH {
            self.barred = Some(name.clone());
        }
        let step = self.step;
        let acted = step::act(&self.env, &self.emitter, &mut self.inbox, step, actor, call).await;
        let mut resolved = self.resolve(acted, &name).await?;
        resolved.facts.repeats = repeat.of_move;
        let tests_fixed = self.judge_test_run(call, &mut resolved);
        self.ledger.tool(
            &name,
            resolved.ok,
            &resolved.output,
            resolved.wrote.as_deref(),
        );
        let ran = step::Ran {
            ok: resolved.ok,
            output: resolved.output,
            facts: resolved.facts,
            refused: resolved.refused,
        };
        let last = self.last_checkpoint.as_deref();
        let mut report =
            step::record(&self.env, &self.emitter, step, (call, extra), ran, last).await;
        if tests_fixed {
            report.sparse.push(SignalKind::TestsFixed);
        }
        Some(StepOutcome {
            report,
            tool: Some(name),
            ok: resolved.ok,
            after: resolved.after,
            repeat,
            repairs_spent: false,
        })
    }

    /// A `run` of tests (the check, or a known test runner): a failing run is
    /// `check_failed` (the check) or nothing (other tests), not a tool error, unless it
    /// could not run at all; true when it fixed tests a run before it failed
    /// (`tests_fixed`), the rule the code protocol's check follows too.
    fn judge_test_run(&mut self, call: &ToolCall, resolved: &mut Resolved) -> bool {
        if call.function.name != tools::spec::RUN || !matches!(resolved.after, After::Continue) {
            return false;
        }
        let arguments = step::arguments(call);
        let Some(command) = arguments.get("command").and_then(|c| c.as_str()) else {
            return false;
        };
        let (exit_code, timed_out) = crate::agent::tools::run::exit_status_of(&resolved.output);
        let check = self.config().agent.check.clone();
        let run = CommandRun {
            command,
            exit_code,
            timed_out,
            output: &resolved.output,
            check: check.as_deref(),
        };
        let Some(t) = self.tests.judge(&run) else {
            return false;
        };
        resolved.facts.tool_error = t.could_not_run;
        resolved.facts.check_failed = t.check_failed;
        t.tests_fixed
    }

    /// What the call `name` came to; `None` for a forced escalation (the call never ran).
    async fn resolve(&mut self, acted: Acted, name: &str) -> Option<Resolved> {
        let stopped = "the session was stopped";
        Some(match acted {
            Acted::Ran {
                ok,
                output,
                facts,
                wrote,
                refused,
            } => Resolved {
                ok,
                output,
                facts,
                wrote,
                refused,
                after: After::Continue,
            },
            Acted::Finish => {
                let inbox = &mut self.inbox;
                let label =
                    crate::agent::check_run::run_check(&self.env, &self.emitter, inbox, self.step)
                        .await;
                Resolved::handled(true, "finished", After::End(label))
            }
            Acted::Ask { question, options } => match self.self_ask(question, options).await {
                OperatorReply::Answer(a) => Resolved::handled(true, a, After::Continue),
                OperatorReply::Defer => Resolved::handled(
                    true,
                    "The operator asked a senior engineer to decide.",
                    After::Senior,
                ),
                OperatorReply::Quit => {
                    Resolved::handled(false, stopped, After::End(Outcome::Aborted))
                }
            },
            Acted::Escalate => return None,
            Acted::Quit => Resolved::handled(false, stopped, After::End(Outcome::Aborted)),
            Acted::Stopped => Resolved::handled(
                false,
                format!(
                    "the session was stopped while `{name}` ran; it was cut short \
                     (a command and everything it started were killed)"
                ),
                After::End(Outcome::Aborted),
            ),
        })
    }

    /// Ends the step for the judge, hands the turn and its results to whoever acted, and
    /// decides what comes next: the end, a hand-off, the stuck rule, a senior's return.
    async fn conclude(
        &mut self,
        actor: Actor,
        text: String,
        calls: Vec<ToolCall>,
        outcome: StepOutcome,
    ) -> Next {
        let StepOutcome {
            report,
            tool,
            ok,
            after,
            repeat,
            repairs_spent,
        } = outcome;
        self.last_checkpoint.clone_from(&report.checkpoint);
        let acted = tool.is_some();
        let facts = (&report.facts, report.sparse.as_slice());
        let verdict = self
            .end_step(actor, tool, ok, facts, report.checkpoint.clone())
            .await;
        // The conversation of whoever acted gets the turn and its tool results.
        let history = match &mut self.senior_history {
            Some(h) => h,
            None => &mut self.junior_history,
        };
        if acted {
            history.push(Message::assistant(text, calls));
            let mut replies = report.replies;
            if repeat.of_move > 0 {
                reply::note_repeat(&mut replies);
            }
            history.extend(replies);
        } else {
            reply::ask_again(history, report.replies);
        }
        if let Some(next) = self.settle(after).await {
            return next;
        }
        if verdict == Verdict::Escalate && actor == Actor::Junior {
            return self.escalate(EscalationReason::Threshold).await;
        }
        if let Some(why) = self.stuck_why(repairs_spent, repeat.on_tree, "a usable tool call") {
            return self.stuck(actor, why).await;
        }
        if actor == Actor::Senior {
            if self.inbox.take_force() {
                self.force_ignored().await;
            }
            if self.config().policy.handoff == HandoffMode::Step {
                self.senior_returned(&report.summary).await;
            }
        }
        Next::Continue
    }
}
