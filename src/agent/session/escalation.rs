//! Handing control away and getting it back: stuck sessions, the escalation itself, the
//! junior's own question, the senior's turn and return. Methods of the loop's
//! [`Session`], kept apart so the loop itself reads as a loop.

use super::code_step::Seat;
use super::{Next, Session, code_brief, shadow_escalation};
use crate::agent::context::{CheckFacts, HandoffFacts, HandoffLedger, handoff_note};
use crate::agent::handoff;
use crate::agent::handoff::{OperatorReply, Triage};
use crate::competence::Verdict;
use crate::competence::repeats::Progress;
use crate::config::{HandoffMode, QuestionWriter, RouteMode};
use crate::llm::types::{Message, ToolSpec};
use crate::protocol::{Actor, EscalationReason, Event, Outcome, Route};
use crate::router;
use crate::router::Question;

impl Session<'_> {
    /// No progress: the junior hands off with reason `stuck`; with no route left (the
    /// senior is in charge, or the session only watches) the session ends as
    /// [`Session::ran_out`] labels it.
    pub(super) async fn stuck(&mut self, actor: Actor, why: String) -> Next {
        self.warn("stuck", why.clone()).await;
        if actor == Actor::Junior {
            self.stuck_why = Some(why);
            // The gate decides, as for a firing: hand off, or (shadow mode, an explored
            // session, or a draw to explore) only log it and let the check label the tree.
            self.gate.set_shadow(self.inbox.control().shadow);
            let verdict = self.gate.on_rule();
            if verdict == Verdict::Escalate {
                return self.escalate(EscalationReason::Stuck).await;
            }
            let reason = EscalationReason::Stuck;
            let ev = shadow_escalation(&self.watch, &self.gate, self.step, reason, verdict);
            self.emitter.emit(ev).await;
        }
        Next::End(self.ran_out().await)
    }

    /// The junior's first failed check under `policy.escalate_on_failed_check`: the gate
    /// decides as for the stuck rule (hand off; or in shadow mode, or explored, only log it
    /// and let the junior go on). Later failures are the judge's.
    pub(super) async fn on_failed_check(&mut self) -> Option<Next> {
        self.on_failed_rule(EscalationReason::CheckFailed).await
    }

    /// One failed-evidence rule (`check_failed`, `examples_failed`): the first time either
    /// acts in a session, the gate decides as for the stuck rule.
    pub(super) async fn on_failed_rule(&mut self, reason: EscalationReason) -> Option<Next> {
        if std::mem::replace(&mut self.failed_check_ruled, true) {
            return None;
        }
        self.gate.set_shadow(self.inbox.control().shadow);
        let verdict = self.gate.on_rule();
        if verdict == Verdict::Escalate {
            return Some(self.escalate(reason).await);
        }
        let ev = shadow_escalation(&self.watch, &self.gate, self.step, reason, verdict);
        self.emitter.emit(ev).await;
        None
    }

    /// The label of a session that ran out of steps, tokens or moves: with `agent.check`
    /// set, the check judges the tree the session left (a junior that never got there
    /// fails; a tree that passes is a success, whoever stopped), so shadow and eval runs of
    /// a weak junior carry labels instead of `aborted`. Without a check it stays aborted.
    /// A quit or a dead endpoint is not running out: those stay aborted (censored).
    pub(super) async fn ran_out(&mut self) -> Outcome {
        if self.config().agent.check.is_none() {
            return Outcome::Aborted;
        }
        if self.senior_history.is_none()
            && let Some(outcome) = self.checked_outcome()
        {
            return outcome;
        }
        crate::agent::check_run::run_check(&self.env, &self.emitter, &mut self.inbox, self.step)
            .await
    }

    /// The tools the next reply may call: all of them, except that under a constrained
    /// protocol (`json_schema`) a tool the last step called again on an unchanged tree is
    /// left out of the schema for one reply (a warning says so). The system prompt still
    /// lists every tool, so the server's prompt cache is kept.
    pub(super) async fn offered(&mut self, actor: Actor, specs: &[ToolSpec]) -> Vec<ToolSpec> {
        let client = self.client_of(actor);
        let Some(barred) = self.barred.take() else {
            return specs.to_vec();
        };
        if !client.config().tool_protocol.constrains_reply() {
            return specs.to_vec();
        }
        let message = format!(
            "{barred} was called again on an unchanged work tree; this reply may not call it"
        );
        self.warn("repeat_barred", message).await;
        specs.iter().filter(|t| t.name != barred).cloned().collect()
    }

    /// The junior's history as it fits its context window, and its size in bytes (to be
    /// compared with the prompt tokens the server reports).
    pub(super) async fn fitted_junior_history(&mut self) -> (Vec<Message>, Option<usize>) {
        let fitted = self.context.fit(&self.junior_history);
        if fitted.elided > 0 && !self.context_trimmed {
            self.context_trimmed = true;
            let message = format!(
                "older tool outputs elided to keep the junior's history within context_window                  ({} messages this request)",
                fitted.elided
            );
            self.warn("context_trimmed", message).await;
        }
        (fitted.messages, Some(fitted.bytes))
    }

    /// The handoff note: why the junior was stopped (`reason`), what it changed, the last
    /// check, and the task with its files as they stand now, in the shape of the first
    /// message of the reader's protocol. Never the junior's replies or calls. With it, the
    /// files the note shows for editing (where a senior's block without a path goes).
    /// `for_writer` builds it for the question writer: the files are shown without the
    /// brief's request for code (a code-writing 1.5B told to "complete the code" did so
    /// instead of writing the question).
    pub(super) fn note(
        &self,
        reason: &str,
        restarted: bool,
        for_writer: bool,
    ) -> (String, Vec<String>) {
        let why = self.watch.why();
        // What the junior tried: the start against its last tree (kept by a restart).
        let tried = self.tried.as_ref().or(self.last_checkpoint.as_ref());
        let diff = match (self.env.repo, &self.start_checkpoint, tried) {
            (Some(repo), Some(a), Some(b)) => repo
                .lock()
                .ok()
                .and_then(|r| r.diff(a, b).ok())
                .unwrap_or_default(),
            _ => String::new(),
        };
        let checked = self.code.as_ref().and_then(|c| c.checked.as_ref());
        let check = checked.map(|(_, r)| CheckFacts {
            command: &r.command,
            exit_code: r.exit_code,
            passed: r.passed,
            output_tail: r.output_for_models(),
        });
        let config = self.config();
        let brief = code_brief(
            self.env.workspace,
            config,
            &config.senior,
            self.task,
            !for_writer,
        );
        let note = handoff_note(
            &self.prompts.handoff,
            &HandoffFacts {
                reason,
                belief: self.watch.belief(),
                threshold: self.watch.threshold(),
                step: self.step,
                tick: self.watch.tick(),
                why: &why,
                diff: &diff,
                restarted,
                check,
                last_command: self.ledger.last_run.as_deref(),
                refused: self.ledger.refused.as_deref(),
                brief: &brief.message,
            },
        );
        (note, brief.targets)
    }

    /// Why control left the junior, in the words the note gives the senior.
    pub(super) fn reason_words(&self, reason: EscalationReason) -> String {
        match reason {
            EscalationReason::Threshold => {
                "the judge found it unlikely to finish the task correctly".to_string()
            }
            EscalationReason::Forced => "the operator handed the task to you".to_string(),
            EscalationReason::SelfAsk => {
                "it asked the operator, who left the decision to you".to_string()
            }
            EscalationReason::Fault => "its model endpoint kept failing".to_string(),
            EscalationReason::CheckFailed => "its check failed".to_string(),
            EscalationReason::ExamplesFailed => {
                "its code failed the examples the task states".to_string()
            }
            EscalationReason::AtStart => {
                "it has not started yet: the task may leave out a detail only the user knows"
                    .to_string()
            }
            EscalationReason::Stuck => match &self.stuck_why {
                Some(why) => format!("it was stuck ({why})"),
                None => "it was stuck".to_string(),
            },
        }
    }

    /// Control leaves the junior: decide the route, tell the log, and hand off.
    pub(super) async fn escalate(&mut self, reason: EscalationReason) -> Next {
        let words = self.reason_words(reason);
        let at_start = reason == EscalationReason::AtStart;
        let mode = if at_start {
            RouteMode::Operator
        } else {
            self.config().policy.route
        };
        let decision = if reason == EscalationReason::Fault {
            router::decide(RouteMode::Senior, None, self.task)
        } else {
            let reply = if router::needs_triage_call(mode) {
                // Triage reads the note the senior would get, less its request for code;
                // built only when asked for.
                let (note, _) = self.note(&words, false, true);
                let note = format!("{note}\n\n{WRITER_CLOSING}");
                let prompt = if at_start {
                    &self.prompts.ask_first
                } else {
                    &self.prompts.triage
                };
                let writer = match self.config().policy.question_writer {
                    QuestionWriter::Senior => (self.senior, Actor::Senior),
                    QuestionWriter::Junior => (self.junior, Actor::Junior),
                };
                match handoff::triage(&self.emitter, &mut self.inbox, writer, prompt, &note).await {
                    Triage::Reply(reply) => {
                        if let Some(text) = reply.as_deref().filter(|t| !router::readable(t)) {
                            self.emitter.emit(unreadable_reply(text)).await;
                        }
                        reply
                    }
                    Triage::Quit => return Next::End(Outcome::Aborted),
                }
            } else {
                None
            };
            router::decide(mode, reply.as_deref(), self.task)
        };
        // The gate drew this hand-off (a firing or a loop rule) under exploration.
        let drawn = matches!(
            reason,
            EscalationReason::Threshold
                | EscalationReason::Stuck
                | EscalationReason::CheckFailed
                | EscalationReason::ExamplesFailed
        );
        let propensity = drawn.then(|| self.gate.propensity()).flatten();
        let escalated = self
            .watch
            .escalated(self.step, decision.route, reason, false, propensity);
        self.emitter.emit(escalated).await;
        self.censored = true;
        if reason != EscalationReason::Threshold {
            // The gate fired for a threshold escalation; any other kind it learns of here.
            self.gate.on_handoff();
        }
        if let (Route::Operator, Some(q)) = (decision.route, decision.question) {
            match handoff::ask(&self.emitter, &mut self.inbox, self.step, &q, false).await {
                OperatorReply::Answer(answer) => {
                    let told = handoff::operator_answered(&q.text, &answer);
                    self.junior_history.push(told);
                    self.resume_junior();
                    return Next::Continue;
                }
                OperatorReply::Quit => return Next::End(Outcome::Aborted),
                OperatorReply::Defer => {}
            }
        }
        if at_start {
            // Nobody answered the opening question: the junior starts as it would have.
            return Next::Continue;
        }
        self.hand_to_senior(&words).await;
        Next::Continue
    }

    /// The junior called `ask_operator` itself: one escalation, one question. A deferral
    /// hands the step's work to the senior once the step is recorded, with no second
    /// escalation and no second question.
    pub(super) async fn self_ask(
        &mut self,
        question: String,
        options: Vec<String>,
    ) -> OperatorReply {
        let escalated = self.watch.escalated(
            self.step,
            Route::Operator,
            EscalationReason::SelfAsk,
            false,
            None,
        );
        self.emitter.emit(escalated).await;
        self.censored = true;
        self.gate.on_handoff();
        let q = Question {
            text: question,
            options,
            default_assumption: None,
            topic: None,
        };
        let reply = handoff::ask(&self.emitter, &mut self.inbox, self.step, &q, true).await;
        if matches!(reply, OperatorReply::Answer(_)) {
            self.resume_junior();
        }
        reply
    }

    /// The senior takes over in a fresh conversation: its system prompt and the handoff
    /// note built now (after a restart, from the tree at the session's start), with its own
    /// step and token budget counted from here.
    pub(super) async fn hand_to_senior(&mut self, reason: &str) {
        let restart = self.config().policy.handoff == HandoffMode::Restart;
        if restart {
            self.start_over().await;
        }
        let restarted = restart && self.tried.is_some();
        let (note, targets) = self.note(reason, restarted, false);
        let system = if restart {
            self.prompts.restart.clone()
        } else {
            self.prompts.senior.clone()
        };
        let (step, tick) = (self.step, self.watch.tick());
        let history =
            handoff::take_over(&self.emitter, self.config(), step, tick, system, note).await;
        self.senior_history = Some(history);
        self.senior_since = self.step;
        self.senior_tokens = 0;
        self.senior_progress = Progress::default();
        self.repairs.usable();
        if self.config().senior.tool_protocol.writes_code()
            && let Some(code) = self.code.as_mut()
        {
            // Where a block without a path goes: the files the note showed for editing.
            code.targets = targets;
            code.senior = Seat::default();
        }
    }

    /// `handoff = "restart"`: the work tree goes back to the session's start; the junior's
    /// tree is kept as the checkpoint `before-restart` (so `handoff restore` brings it
    /// back). Without a repository or a start checkpoint the senior starts from the tree as
    /// it is, and a warning says so.
    async fn start_over(&mut self) {
        let restored = match (self.env.repo, &self.start_checkpoint) {
            (Some(repo), Some(start)) => match repo.lock() {
                Ok(r) => r
                    .restore(start)
                    .and_then(|before| r.keep(self.env.session_id, "before-restart", &before))
                    .map_err(|e| e.to_string()),
                Err(_) => Err("the repository lock was poisoned".to_string()),
            },
            _ => Err("the session has no start checkpoint (not a git repository)".to_string()),
        };
        match restored {
            Ok(()) => {
                self.tried = self.last_checkpoint.take();
                self.last_checkpoint.clone_from(&self.start_checkpoint);
                self.ledger = HandoffLedger::default();
            }
            Err(why) => {
                let message = format!(
                    "restart: the work tree could not go back to the session's start ({why}); \
                     the senior starts from the tree as the junior left it"
                );
                self.warn("restart_restore", message).await;
            }
        }
    }

    /// After a one-step takeover: the junior continues, told what the senior did.
    pub(super) async fn senior_returned(&mut self, did: &str) {
        self.senior_history = None;
        self.emitter
            .emit(Event::SeniorReturned {
                step: self.step,
                tick: self.watch.tick(),
            })
            .await;
        self.junior_history.push(handoff::senior_did(did));
        self.resume_junior();
        self.repairs.usable();
    }

    /// New information or help: the belief restarts from the prior, with a cooldown.
    ///
    /// The repeat count is not reset: asking the same question again after its answer, on
    /// the same work tree, is no progress.
    pub(super) fn resume_junior(&mut self) {
        self.watch.reset();
        self.gate.on_reset();
        // What the operator or the senior said stays when a failed check sends the junior
        // back to its opening (`agent.retry = "resample"`).
        if let Some(code) = self.code.as_mut() {
            code.junior.opening = self.junior_history.len();
        }
    }

    pub(super) async fn force_ignored(&self) {
        let message = "escalation not forced: the senior is already in charge".to_string();
        self.warn("force_ignored", message).await;
    }
}

/// The last line of the question writer's note: small code models follow the last
/// instruction they read, and the note before it is mostly code.
const WRITER_CLOSING: &str = "Do not write or fix any code. Reply with the one JSON object \
                              your instructions describe, and nothing else.";

/// The warning for a question writer's reply that holds no readable decision: the reply's
/// start, so a log shows why the fallback question (or the senior) was used.
fn unreadable_reply(text: &str) -> Event {
    const SHOWN: usize = 600;
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        shown.push('…');
    }
    Event::Warning {
        kind: "writer_reply_unreadable".into(),
        message: format!("the question writer's reply held no readable JSON decision: {shown}"),
    }
}
