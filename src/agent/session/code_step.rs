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
//! gets `check_failed` on a failing check and `tests_fixed` when a check passes, or fails fewer tests, after a failing one; code that
//! does not parse or cannot be placed is never written and counts as a malformed move
//! (`syntax_rejected` and `edit_unplaced` warnings name which), an edit that changes
//! nothing is `no_diff`, and the same reply on the same tree is a repeat.

use super::*;
use crate::code::place::{self, PlaceError, Placed};
use crate::code::reply::{self as code_reply, Request};
use crate::competence::facts::parse_test_counts;
use crate::config::Retry;
use crate::llm::types::FunctionCall;
use crate::protocol::StepFacts;

use step::CheckResult;

use super::check_message::check_tail;
use super::check_message::failure_message;

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
}

impl Default for Seat {
    fn default() -> Self {
        Seat {
            resampler: None,
            opening: 2,
        }
    }
}

/// What a reply comes to before anything runs.
enum CodeMove {
    Edit(Vec<Placed>),
    Run(String),
    Ask(String),
    GiveUp(String),
    /// No code and no request, and no check: the model's own "done".
    Done,
    /// Nothing can be done with it: the warning kind and the message for the model.
    Unusable(&'static str, String),
}

fn synthetic(step: u32, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("code-{step}"),
        kind: "function".into(),
        function: FunctionCall {
            name: name.to_string(),
            arguments: arguments.to_string(),
        },
    }
}

impl Session<'_> {
    /// A reply under the `code` protocol, the junior's or a senior's that writes code.
    pub(super) async fn code_step(&mut self, actor: Actor, text: String) -> Next {
        let step = self.step;
        let tree = self.last_checkpoint.clone();
        let has_check = self.config().agent.check.is_some();
        let chosen = self.read_code_reply(&text, has_check);
        let repeat = self
            .progress_of(actor)
            .made(Move::said(&text), tree.as_deref());
        let mut after = After::Continue;
        let mut repairs_spent = false;
        let mut sparse = Vec::new();
        let mut feedback: Option<String> = None;
        let (mut facts, tool, ok, checkpoint) = match chosen {
            CodeMove::Unusable(kind, message) => {
                self.warn(kind, message.clone()).await;
                repairs_spent = !self.repairs.another();
                let facts = StepFacts {
                    no_diff: true,
                    malformed_call: kind != NO_EDIT,
                    no_tool_call: kind == NO_EDIT,
                    ..StepFacts::default()
                };
                feedback = Some(message);
                (facts, None, false, self.last_checkpoint.clone())
            }
            CodeMove::GiveUp(why) => {
                let who = actor.name();
                let said = if why.is_empty() {
                    format!("the {who} gave up")
                } else {
                    format!("the {who} gave up: {why}")
                };
                return self.stuck(actor, said).await;
            }
            CodeMove::Done => {
                // The reply's prose is the summary, as `finish{summary}` carries it.
                let summary: String = text
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect();
                let call = synthetic(step, FINISH_NAME, serde_json::json!({"summary": summary}));
                let _ = step::act(
                    &self.env,
                    &self.emitter,
                    &mut self.inbox,
                    step,
                    actor,
                    &call,
                )
                .await;
                after = After::End(Outcome::Unlabelled);
                (
                    StepFacts::default(),
                    Some(FINISH_NAME.to_string()),
                    true,
                    tree.clone(),
                )
            }
            CodeMove::Ask(question) => {
                self.repairs.usable();
                let call = synthetic(
                    step,
                    tools::ASK_OPERATOR,
                    serde_json::json!({"question": question}),
                );
                let _ = step::act(
                    &self.env,
                    &self.emitter,
                    &mut self.inbox,
                    step,
                    actor,
                    &call,
                )
                .await;
                let (ok, output) = match self.self_ask(question, Vec::new()).await {
                    OperatorReply::Answer(a) => (true, a),
                    OperatorReply::Defer => {
                        after = After::Senior;
                        (
                            true,
                            "The operator asked a senior engineer to decide.".to_string(),
                        )
                    }
                    OperatorReply::Quit => {
                        after = After::End(Outcome::Aborted);
                        (false, "the session was stopped".to_string())
                    }
                };
                feedback = Some(format!("The user answered: {output}"));
                let report = self
                    .record_synthetic(&call, ok, output, StepFacts::default(), Vec::new())
                    .await;
                (
                    report.facts,
                    Some(tools::ASK_OPERATOR.to_string()),
                    ok,
                    report.checkpoint,
                )
            }
            CodeMove::Run(command) => {
                self.repairs.usable();
                let call = synthetic(
                    step,
                    tools::spec::RUN,
                    serde_json::json!({"command": command}),
                );
                match self.act_synthetic(actor, &call).await {
                    Err(next) => return next,
                    Ok((ok, output, facts)) => {
                        feedback = Some(format!(
                            "`{command}` said:\n```\n{}\n```",
                            check_tail(&output)
                        ));
                        let report = self
                            .record_synthetic(&call, ok, output, facts, Vec::new())
                            .await;
                        sparse.extend(report.sparse.iter().copied());
                        (
                            report.facts,
                            Some(tools::spec::RUN.to_string()),
                            ok,
                            report.checkpoint,
                        )
                    }
                }
            }
            CodeMove::Edit(placed) => {
                self.repairs.usable();
                // Files the check protects are left out and the rest is written: a junior
                // that also "fixes" the tests (the 1.5B wrote its own test_roman.py beside a
                // right roman.py) keeps its real work. A reply for protected files alone
                // goes to the file tool, which refuses it.
                let protected = self.env.workspace.protected();
                let (placed, refused): (Vec<Placed>, Vec<Placed>) = if placed
                    .iter()
                    .all(|p| protected.contains(std::path::Path::new(&p.path)))
                {
                    (placed, Vec::new())
                } else {
                    placed
                        .into_iter()
                        .partition(|p| !protected.contains(std::path::Path::new(&p.path)))
                };
                let refused: Vec<String> = refused.into_iter().map(|p| p.path).collect();
                let mut notes: Vec<String> = placed
                    .iter()
                    .map(|p| format!("{}: {}", p.path, p.notes.join(", ")))
                    .collect();
                for path in &refused {
                    notes.push(format!(
                        "{path}: left out, it is protected (the check's tests); change the code under test instead"
                    ));
                }
                let files: Vec<serde_json::Value> = placed
                    .iter()
                    .map(|p| serde_json::json!({"path": p.path, "content": p.content}))
                    .collect();
                let call = synthetic(step, tools::spec::EDIT, serde_json::json!({"files": files}));
                match self.act_synthetic(actor, &call).await {
                    Err(next) => return next,
                    Ok((ok, output, facts)) => {
                        let output = if ok { notes.join("\n") } else { output };
                        if !ok {
                            feedback = Some(format!("Your edit was not written: {output}"));
                        }
                        let report = self
                            .record_synthetic(&call, ok, output, facts, refused)
                            .await;
                        sparse.extend(report.sparse.iter().copied());
                        if repeat.of_move > 0 {
                            self.warn(
                                "repeated_edit",
                                format!(
                                    "the same reply again on the same tree ({} before)",
                                    repeat.of_move
                                ),
                            )
                            .await;
                        }
                        (
                            report.facts,
                            Some(tools::spec::EDIT.to_string()),
                            ok,
                            report.checkpoint,
                        )
                    }
                }
            }
        };
        facts.repeats = repeat.of_move;
        self.last_checkpoint.clone_from(&checkpoint);
        // The harness runs the check on every tree it has not judged yet.
        let mut passed = false;
        let mut unchanged_after_failure = false;
        let mut resample = false;
        if has_check && tool.is_some() && matches!(after, After::Continue) {
            let cached = self
                .code
                .as_ref()
                .and_then(|c| c.checked.as_ref())
                .filter(|(at, _)| *at == checkpoint && checkpoint.is_some())
                .map(|(_, r)| r.clone());
            let before = self.code.as_ref().and_then(|c| c.checked.clone());
            let result = match cached {
                Some(r) => Some(r),
                None => {
                    let r = step::check_once(&self.env, &self.emitter, &mut self.inbox, step, true)
                        .await;
                    if let (Some(code), Some(r)) = (self.code.as_mut(), r.as_ref()) {
                        code.checked = Some((checkpoint.clone(), r.clone()));
                    }
                    r
                }
            };
            match result {
                None => after = After::End(Outcome::Aborted),
                Some(r) => {
                    facts.check_failed = !r.passed;
                    let was_failing = before.as_ref().is_some_and(|(_, b)| !b.passed);
                    let fewer_failures = before.as_ref().is_some_and(|(_, b)| {
                        match (
                            parse_test_counts(&b.output_tail),
                            parse_test_counts(&r.output_tail),
                        ) {
                            (Some(x), Some(y)) => y.failed < x.failed,
                            _ => false,
                        }
                    });
                    if was_failing && (r.passed || fewer_failures) {
                        sparse.push(SignalKind::TestsFixed);
                    }
                    if r.passed {
                        passed = true;
                        after = After::End(Outcome::Success);
                    } else if tool.as_deref() != Some(tools::ASK_OPERATOR) {
                        let unchanged = facts.no_diff && tool.as_deref() == Some(tools::spec::EDIT);
                        resample = self.config().agent.retry == Retry::Resample;
                        // A fresh sample that repeats the last one is bad luck, not a
                        // junior reading its failure and changing nothing.
                        unchanged_after_failure = unchanged && was_failing && !resample;
                        feedback = Some(match feedback {
                            Some(f) if tool.as_deref() != Some(tools::spec::EDIT) => {
                                format!("{f}\n\n{}", failure_message(&r, unchanged))
                            }
                            _ => failure_message(&r, unchanged),
                        });
                    }
                }
            }
        }
        let sparse_all: Vec<SignalKind> = sparse;
        let verdict = self
            .end_step(
                actor,
                tool.clone(),
                ok,
                (&facts, sparse_all.as_slice()),
                checkpoint,
            )
            .await;
        // The conversation: the reply as the model wrote it, then what came of it.
        if resample {
            self.resample(actor).await;
        } else {
            self.answered(actor, text, feedback.filter(|_| !passed), tool.as_deref());
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
        if unchanged_after_failure {
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

    fn read_code_reply(&self, text: &str, has_check: bool) -> CodeMove {
        let reply = code_reply::read(text);
        if reply.has_edits() {
            let ws = self.env.workspace;
            let read = |p: &str| tools::files::text_of(ws, p);
            let targets = self
                .code
                .as_ref()
                .map(|c| c.targets.clone())
                .unwrap_or_default();
            return match place::place(&reply, &read, &targets) {
                Ok(placed) if !placed.is_empty() => {
                    match crate::code::stub::left_unwritten(&reply, &placed, &read) {
                        Some(name) => CodeMove::Unusable(
                            STUB_ECHOED,
                            format!(
                                "`{name}` still raises NotImplementedError, as the stub did: write the body of `{name}` in full."
                            ),
                        ),
                        None => CodeMove::Edit(placed),
                    }
                }
                Ok(_) => {
                    CodeMove::Unusable(EDIT_UNPLACED, "the code blocks changed no file".into())
                }
                Err(PlaceError::Syntax(m)) => CodeMove::Unusable(SYNTAX_REJECTED, m),
                Err(PlaceError::Unplaced(m)) => CodeMove::Unusable(EDIT_UNPLACED, m),
            };
        }
        for r in &reply.requests {
            match r {
                Request::Run(c) => return CodeMove::Run(c.clone()),
                Request::Ask(q) => return CodeMove::Ask(q.clone()),
                Request::GiveUp(_) => {}
            }
        }
        if let Some(Request::GiveUp(why)) = reply.requests.first() {
            return CodeMove::GiveUp(why.clone());
        }
        if has_check {
            CodeMove::Unusable(
                NO_EDIT,
                "your reply held no code block. Write the code in a fenced block (```), under the file's path; the check decides when the task is done.".into(),
            )
        } else {
            CodeMove::Done
        }
    }

    /// Runs a call the reply came to; `Err` when the session must stop or hand off first.
    async fn act_synthetic(
        &mut self,
        actor: Actor,
        call: &ToolCall,
    ) -> Result<(bool, String, StepFacts), Next> {
        let acted = step::act(
            &self.env,
            &self.emitter,
            &mut self.inbox,
            self.step,
            actor,
            call,
        )
        .await;
        match acted {
            Acted::Ran {
                ok,
                output,
                mut facts,
                wrote,
                ..
            } => {
                // A command that ran and exited non-zero is the command's answer, not a
                // failing tool: only one that could not run is a tool error.
                if call.function.name == tools::spec::RUN && !output.starts_with("error:") {
                    facts.tool_error = false;
                }
                self.ledger
                    .tool(&call.function.name, ok, &output, wrote.as_deref());
                Ok((ok, output, facts))
            }
            Acted::Escalate => Err(self.escalate(EscalationReason::Forced).await),
            Acted::Quit | Acted::Stopped => Err(Next::End(Outcome::Aborted)),
            Acted::Finish | Acted::Ask { .. } => Ok((true, String::new(), StepFacts::default())),
        }
    }

    async fn record_synthetic(
        &mut self,
        call: &ToolCall,
        ok: bool,
        output: String,
        facts: StepFacts,
        refused: Vec<String>,
    ) -> step::StepReport {
        let ran = step::Ran {
            ok,
            output,
            facts,
            refused,
        };
        let last = self.last_checkpoint.clone();
        step::record(
            &self.env,
            &self.emitter,
            self.step,
            (call, &[]),
            ran,
            last.as_deref(),
        )
        .await
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

/// Warning kinds of a `code` reply that could not be used.
pub(super) const SYNTAX_REJECTED: &str = "syntax_rejected";
pub(super) const EDIT_UNPLACED: &str = "edit_unplaced";
pub(super) const NO_EDIT: &str = "no_edit";
/// The reply left the stub unwritten ([`crate::code::stub::left_unwritten`]).
pub(super) const STUB_ECHOED: &str = "stub_echoed";
const FINISH_NAME: &str = "finish";
