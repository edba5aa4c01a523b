//! A junior step under the `code` protocol: the reply is read for code, the code is placed
//! and written, and the harness (not the model) runs the check and decides the end.
//!
//! The reply's own move, in order of precedence: code blocks (placed by
//! [`crate::code::place`] and written as one `edit`), else `RUN:` (a `run` call), else
//! `ASK:` (the operator), else `GIVE UP:` (stuck: the gate decides, as for the stuck rule).
//! A reply with none of these is the model's "done" when no check is configured; with a
//! check, it is told to send code (only the check says the task is done).
//!
//! After any step that leaves the tree different from the last one checked, the check runs
//! (sandboxed, its hidden files laid and lifted again). A pass ends the junior's work as
//! `success`; after a failure the junior answers its first message again at
//! `agent.retry_temperature` (`retry = "resample"`, the default), or is shown the command,
//! the exit status and the output's tail as the next message (`"feedback"`). The judge
//! gets `check_failed` on a failing check and `tests_fixed` when a check passes, or fails
//! fewer tests, after a failing one; code that does not parse or cannot be placed is never
//! written and counts as a malformed move (`syntax_rejected` and `edit_unplaced` warnings
//! name which), an edit that changes nothing is `no_diff`, and the same reply on the same
//! tree is a repeat.
//!
//! The step reads as its phases: the reply becomes one [`CodeMove`] and the move is carried
//! out ([`super::code_moves`], where [`CodeOutcome`] is too), the check judges the tree ([`Session::check_code`]), and
//! [`Session::conclude_code`] decides what comes next from the [`CodeOutcome`] alone.

use super::check_message::failure_message;
use super::code_moves::{CodeMove, CodeOutcome};
use super::{After, Next, Session};
use crate::agent::check_run::CheckResult;
use crate::agent::{reply, tools};
use crate::competence::Verdict;
use crate::competence::facts::parse_test_counts;
use crate::competence::repeats::{Move, Repeat};
use crate::config::Retry;
use crate::llm::Client;
use crate::llm::types::Message;
use crate::protocol::{Actor, EscalationReason, Outcome, SignalKind};

/// The `code` protocol's part of the session state.
#[derive(Debug, Default)]
pub(super) struct CodeSession {
    /// Files the last brief (the first message, or the handoff note) showed as editable:
    /// where a block without a path goes.
    pub targets: Vec<String>,
    /// The last check: the checkpoint it judged and what it said.
    pub checked: Option<(Option<String>, CheckResult)>,
    pub junior: Seat,
    pub senior: Seat,
    /// Each Python file written so far, as it was before the first write: where the task's
    /// examples are read from.
    pub originals: std::collections::BTreeMap<String, String>,
}

/// One writer's resampling state.
#[derive(Debug)]
pub(super) struct Seat {
    /// Set after the first failed check under `agent.retry = "resample"`: the writer's
    /// endpoint at `agent.retry_temperature`, which every later reply is sampled from.
    pub resampler: Option<Client>,
    /// Messages of the writer's history a resample keeps: the system prompt and the first
    /// message, then whatever the operator or a senior added.
    pub opening: usize,
    /// The writer's first reply was drawn as `agent.candidates` candidates already.
    pub drawn: bool,
    /// What the candidates' agreement said, for the step that places the chosen one.
    pub agreement: Option<SignalKind>,
}

impl Default for Seat {
    fn default() -> Self {
        Seat {
            resampler: None,
            opening: 2,
            drawn: false,
            agreement: None,
        }
    }
}

/// What the check said that the conclusion acts on beyond the outcome.
#[derive(Default)]
struct Checked {
    /// The check passed: the writer is shown nothing more.
    passed: bool,
    /// An edit that changed nothing after a failing check, told the failure (not resampled).
    unchanged_after_failure: bool,
    /// The writer answers its first message again (`agent.retry = "resample"`).
    resample: bool,
    /// The tree fails an example the task states.
    examples_failed: bool,
}

impl Session<'_> {
    /// A reply under the `code` protocol, the junior's or a senior's that writes code.
    pub(super) async fn code_step(&mut self, actor: Actor, text: String) -> Next {
        let tree = self.last_checkpoint.clone();
        let has_check = self.config().agent.check.is_some();
        let chosen = self.read_code_reply(&text, has_check);
        let repeat = self
            .progress_of(actor)
            .made(Move::said(&text), tree.as_deref());
        let moved = match chosen {
            CodeMove::GiveUp(why) => return self.gave_up(actor, why).await,
            CodeMove::Unusable(kind, message) => Ok(self.code_unusable(kind, message).await),
            CodeMove::Done => Ok(self.code_done(actor, &text).await),
            CodeMove::Ask(question) => Ok(self.code_ask(actor, question).await),
            CodeMove::Run(command) => self.code_run(actor, command).await,
            CodeMove::Edit(placed) => self.code_edit(actor, placed, repeat.of_move).await,
        };
        let mut outcome = match moved {
            Ok(outcome) => outcome,
            Err(next) => return next,
        };
        outcome.facts.repeats = repeat.of_move;
        self.last_checkpoint.clone_from(&outcome.checkpoint);
        // The task's own examples, before (and whether or not) a check judges the tree.
        // Their verdict is a step fact the judge reads (with or without a check).
        let ran = if outcome.tool == Some(tools::spec::EDIT) && outcome.ok && !outcome.facts.no_diff
        {
            self.run_examples(actor).await
        } else {
            None
        };
        let examples_failed = ran.is_some_and(|(_, failed)| failed > 0);
        match ran {
            Some((_, failed)) if failed > 0 => outcome.sparse.push(SignalKind::ExamplesFailed),
            Some((passed, 0)) if passed > 0 => outcome.sparse.push(SignalKind::ExamplesPassed),
            _ => {}
        }
        if actor == Actor::Junior
            && let Some(fact) = self.take_agreement()
        {
            outcome.sparse.push(fact);
        }
        // The harness runs the check on every tree it has not judged yet.
        let mut checked =
            if has_check && outcome.tool.is_some() && matches!(outcome.after, After::Continue) {
                self.check_code(&mut outcome).await
            } else {
                Checked::default()
            };
        checked.examples_failed = examples_failed;
        self.conclude_code(actor, text, outcome, checked, repeat)
            .await
    }

    /// The check's result on the outcome's tree: the last one when it judged this very
    /// checkpoint, else a fresh run (remembered); `None` when the session was stopped. With
    /// it, the check before this one.
    async fn code_check_result(
        &mut self,
        checkpoint: &Option<String>,
    ) -> (Option<CheckResult>, Option<CheckResult>) {
        let checked = self.code.as_ref().and_then(|c| c.checked.as_ref());
        let before = checked.map(|(_, r)| r.clone());
        let cached = checked
            .filter(|(at, _)| at == checkpoint && checkpoint.is_some())
            .map(|(_, r)| r.clone());
        if cached.is_some() {
            return (cached, before);
        }
        let r = crate::agent::check_run::check_once(
            &self.env,
            &self.emitter,
            &mut self.inbox,
            self.step,
            true,
        )
        .await;
        if let (Some(code), Some(r)) = (self.code.as_mut(), r.as_ref()) {
            code.checked = Some((checkpoint.clone(), r.clone()));
        }
        (r, before)
    }

    /// Runs (or recalls) the check and writes what it said into the outcome: the judge's
    /// `check_failed` and `tests_fixed`, the end on a pass, the failure as the writer's next
    /// message — or, under `retry = "resample"`, a fresh answer instead.
    async fn check_code(&mut self, outcome: &mut CodeOutcome) -> Checked {
        let (result, before) = self.code_check_result(&outcome.checkpoint).await;
        let Some(r) = result else {
            outcome.after = After::End(Outcome::Aborted);
            return Checked::default();
        };
        outcome.facts.check_failed = !r.passed;
        let was_failing = before.as_ref().is_some_and(|b| !b.passed);
        let fewer_failures = before.as_ref().is_some_and(|b| {
            match (
                parse_test_counts(&b.output_tail),
                parse_test_counts(&r.output_tail),
            ) {
                (Some(x), Some(y)) => y.failed < x.failed,
                _ => false,
            }
        });
        if was_failing && (r.passed || fewer_failures) {
            outcome.sparse.push(SignalKind::TestsFixed);
        }
        if r.passed {
            outcome.after = After::End(Outcome::Success);
            return Checked {
                passed: true,
                ..Checked::default()
            };
        }
        if outcome.tool == Some(tools::ASK_OPERATOR) {
            return Checked::default();
        }
        let edited = outcome.tool == Some(tools::spec::EDIT);
        let unchanged = outcome.facts.no_diff && edited;
        let resample = self.config().agent.retry == Retry::Resample;
        outcome.feedback = Some(match outcome.feedback.take() {
            Some(f) if !edited => format!("{f}\n\n{}", failure_message(&r, unchanged)),
            _ => failure_message(&r, unchanged),
        });
        Checked {
            passed: false,
            // A fresh sample that repeats the last one is bad luck, not a junior reading
            // its failure and changing nothing.
            unchanged_after_failure: unchanged && was_failing && !resample,
            resample,
            examples_failed: false,
        }
    }

    /// Ends the step for the judge, answers the writer (or resamples it), and decides what
    /// comes next: the end or a hand-off the move left, the judge's escalation, the failed
    /// check rule, an unchanged resend, the stuck rule.
    async fn conclude_code(
        &mut self,
        actor: Actor,
        text: String,
        outcome: CodeOutcome,
        checked: Checked,
        repeat: Repeat,
    ) -> Next {
        let CodeOutcome {
            facts,
            sparse,
            tool,
            ok,
            checkpoint,
            after,
            feedback,
            repairs_spent,
        } = outcome;
        let tool_name = tool.map(str::to_string);
        let verdict = self
            .end_step(
                actor,
                tool_name,
                ok,
                (&facts, sparse.as_slice()),
                checkpoint,
            )
            .await;
        // The conversation: the reply as the model wrote it, then what came of it.
        if checked.resample {
            self.resample(actor).await;
        } else {
            self.answered(actor, text, feedback.filter(|_| !checked.passed), tool);
        }
        if let Some(next) = self.settle(after).await {
            return next;
        }
        if verdict == Verdict::Escalate {
            return self.escalate(EscalationReason::Threshold).await;
        }
        if facts.check_failed
            && actor == Actor::Junior
            && self.config().policy.escalate_on_failed_check
            && let Some(next) = self.on_failed_check().await
        {
            return next;
        }
        if checked.examples_failed
            && actor == Actor::Junior
            && self.config().policy.escalate_on_failed_examples
            && let Some(next) = self.on_failed_rule(EscalationReason::ExamplesFailed).await
        {
            return next;
        }
        if checked.unchanged_after_failure {
            // Measured on Qwen2.5-Coder 0.5B (docs/guide.md, "The junior writes code"): shown the
            // failing check, a junior that sends its code back unchanged sends it again
            // every time after; the way on is help, not another try.
            let why = format!(
                "the {} sent its code back unchanged after the check failed",
                actor.name()
            );
            return self.stuck(actor, why).await;
        }
        if let Some(why) =
            self.stuck_why(repairs_spent, repeat.on_tree, "code that could be placed")
        {
            return self.stuck(actor, why).await;
        }
        Next::Continue
    }

    /// The conversation of `actor` and its seat's resampling state.
    fn writer(&mut self, actor: Actor) -> (&mut Vec<Message>, Option<&mut Seat>) {
        let seat = self.code.as_mut().map(|c| match actor {
            Actor::Junior => &mut c.junior,
            Actor::Senior => &mut c.senior,
        });
        let history = match (actor, self.senior_history.as_mut()) {
            (Actor::Senior, Some(h)) => h,
            _ => &mut self.junior_history,
        };
        (history, seat)
    }

    /// The reply and what came of it, into the writer's conversation.
    fn answered(
        &mut self,
        actor: Actor,
        text: String,
        feedback: Option<String>,
        tool: Option<&str>,
    ) {
        let (history, seat) = self.writer(actor);
        if let Some(message) = feedback {
            if tool.is_none() {
                reply::ask_again(history, vec![Message::user(reply::repair_note(&message))]);
            } else {
                history.push(Message::assistant(text, Vec::new()));
                history.push(Message::user(message));
                // What the operator answered or a command printed is kept by a resample.
                if let (Some(seat), Some(tools::ASK_OPERATOR | tools::spec::RUN)) = (seat, tool) {
                    seat.opening = history.len();
                }
            }
        } else {
            history.push(Message::assistant(text, Vec::new()));
        }
    }

    /// After a failed check under `agent.retry = "resample"`: the conversation goes back
    /// to its opening and the writer answers it again, sampled at `agent.retry_temperature`
    /// (see [`Retry`] for the figures).
    async fn resample(&mut self, actor: Actor) {
        let temperature = self.config().agent.retry_temperature;
        let client = self.client_of(actor);
        let (history, seat) = self.writer(actor);
        let Some(seat) = seat else {
            return;
        };
        history.truncate(seat.opening);
        if seat.resampler.is_none() {
            seat.resampler = Some(client.sampling_at(temperature));
            let message = format!(
                "the check failed: the {} answers its first message again, sampled at temperature {temperature} (agent.retry = \"resample\")",
                actor.name()
            );
            self.warn("resampled", message).await;
        }
    }

    /// The outcome of a session that ran out, from the last check when it judged the tree
    /// as it is now (a single-shot run checks once, not twice).
    pub(super) fn checked_outcome(&self) -> Option<Outcome> {
        let (at, r) = self.code.as_ref()?.checked.as_ref()?;
        (at.is_some() && *at == self.last_checkpoint).then_some(if r.passed {
            Outcome::Success
        } else {
            Outcome::Failure
        })
    }
}
