//! Handing control away and getting it back: stuck sessions, the escalation itself, the
//! junior's own question, the senior's turn and return. Methods of the loop's
//! [`Session`], kept apart so the loop itself reads as a loop.

use super::*;

impl Session<'_> {
    /// No progress: the junior hands off with reason `stuck`; with no route left (the
    /// senior is in charge, or the session only watches) the session ends as
    /// [`Session::ran_out`] labels it.
    pub(super) async fn stuck(&mut self, actor: Actor, why: String) -> Next {
        self.warn("stuck", why).await;
        if actor == Actor::Junior {
            // The gate decides, as for a firing: hand off, or (shadow mode, an explored
            // session, or a draw to explore) only log it and let the check label the tree.
            self.gate.set_shadow(self.inbox.control().shadow);
            let verdict = self.gate.on_stuck();
            if verdict == Verdict::Escalate {
                return self.escalate(EscalationReason::Stuck).await;
            }
            let reason = EscalationReason::Stuck;
            let ev = shadow_escalation(&self.watch, &self.gate, self.step, reason, verdict);
            self.emitter.emit(ev).await;
        }
        Next::End(self.ran_out().await)
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
        step::run_check(&self.env, &self.emitter, &mut self.inbox, self.step).await
    }

    /// The tools the next reply may call: all of them, except that under a constrained
    /// protocol (`json_schema`) a tool the last step called again on an unchanged tree is
    /// left out of the schema for one reply (a warning says so). The system prompt still
    /// lists every tool, so the server's prompt cache is kept.
    pub(super) async fn offered(&mut self, actor: Actor, specs: &[ToolSpec]) -> Vec<ToolSpec> {
        let client = match actor {
            Actor::Junior => self.junior,
            Actor::Senior => self.senior,
        };
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

    /// The handoff note from what the session has done so far.
    pub(super) fn note(&self) -> String {
        let why = self.watch.why();
        let diff = match (self.env.repo, &self.start_checkpoint, &self.last_checkpoint) {
            (Some(repo), Some(a), Some(b)) => repo
                .lock()
                .ok()
                .and_then(|r| r.diff(a, b).ok())
                .unwrap_or_default(),
            _ => String::new(),
        };
        handoff_note(
            &self.prompts.handoff,
            &HandoffFacts {
                task: self.task,
                belief: self.watch.belief(),
                threshold: self.watch.threshold(),
                step: self.step,
                tick: self.watch.tick(),
                why: &why,
                plan: &self.ledger.plan,
                files: &self.ledger.files_touched,
                diff: &diff,
                tool_outputs: &self.ledger.tool_outputs,
            },
        )
    }

    /// Control leaves the junior: decide the route, tell the log, and hand off.
    pub(super) async fn escalate(&mut self, reason: EscalationReason) -> Next {
        let note = self.note();
        let mode = self.config().policy.route;
        let decision = if reason == EscalationReason::Fault {
            router::decide(RouteMode::Senior, None, self.task)
        } else {
            let reply = if router::needs_triage_call(mode) {
                let prompt = &self.prompts.triage;
                match handoff::triage(&self.emitter, &mut self.inbox, self.senior, prompt, &note)
                    .await
                {
                    Triage::Reply(reply) => reply,
                    Triage::Quit => return Next::End(Outcome::Aborted),
                }
            } else {
                None
            };
            router::decide(mode, reply.as_deref(), self.task)
        };
        // The gate drew this hand-off (a firing or the stuck rule) under exploration.
        let drawn = matches!(
            reason,
            EscalationReason::Threshold | EscalationReason::Stuck
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
        self.hand_to_senior(note).await;
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
        };
        let reply = handoff::ask(&self.emitter, &mut self.inbox, self.step, &q, true).await;
        if matches!(reply, OperatorReply::Answer(_)) {
            self.resume_junior();
        }
        reply
    }

    pub(super) async fn hand_to_senior(&mut self, note: String) {
        // The senior's opening: the handoff note under the senior's prompt, or, starting
        // over, the task alone under the junior's.
        let (system, opening) = if self.config().policy.handoff == HandoffMode::Restart {
            self.start_over().await;
            (self.prompts.restart.clone(), self.task.to_string())
        } else {
            (self.prompts.senior.clone(), note)
        };
        let (step, tick) = (self.step, self.watch.tick());
        let history =
            handoff::take_over(&self.emitter, self.config(), step, tick, system, opening).await;
        self.senior_history = Some(history);
        self.senior_progress = Progress::default();
        self.repairs.usable();
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
            code.opening = self.junior_history.len();
        }
    }

    pub(super) async fn force_ignored(&self) {
        let message = "escalation not forced: the senior is already in charge".to_string();
        self.warn("force_ignored", message).await;
    }
}
