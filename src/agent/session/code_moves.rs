//! The first half of a `code` step: the reply is read for its one move
//! ([`Session::read_code_reply`]), and the move is carried out as the tool call it stands
//! for (`edit`, `run`, `ask_operator`, `finish`) and recorded, each in its own function that
//! returns a [`CodeOutcome`]. Nothing here runs the check or decides what comes next; that
//! is [`super::code_step`]'s second half.

use super::check_message::check_tail;
use super::{After, Next, Session};
use crate::agent::handoff::OperatorReply;
use crate::agent::step::Acted;
use crate::agent::{step, tools};
use crate::code::place::{self, PlaceError, Placed};
use crate::code::reply::{self as code_reply, Request};
use crate::competence::StepFacts;
use crate::llm::types::{FunctionCall, ToolCall};
use crate::protocol::{Actor, EscalationReason, Outcome, SignalKind};

/// What a reply comes to before anything runs.
pub(super) enum CodeMove {
    Edit(Vec<Placed>),
    Run(String),
    Ask(String),
    GiveUp(String),
    /// No code and no request, and no check: the model's own "done".
    Done,
    /// Nothing can be done with it: the warning kind and the message for the model.
    Unusable(&'static str, String),
}

/// What one move of a `code` reply came to: the shape of the tool protocol's step outcome
/// (`tool_step.rs`) with what writing code adds — the signals the recorded step raised,
/// the checkpoint it left, and the message the writer is shown next. The check adds to it;
/// the conclusion reads only it.
pub(super) struct CodeOutcome {
    pub facts: StepFacts,
    pub sparse: Vec<SignalKind>,
    /// The tool the move stood for; `None` when the reply was unusable.
    pub tool: Option<&'static str>,
    pub ok: bool,
    pub checkpoint: Option<String>,
    pub after: After,
    /// What the writer is shown after its reply; `None`: the reply stands alone.
    pub feedback: Option<String>,
    /// The reply was unusable and no repair note is left.
    pub repairs_spent: bool,
}

impl CodeOutcome {
    /// A move that leaves the loop to go on, with no signals and repairs to spare.
    pub(super) fn new(
        facts: StepFacts,
        tool: Option<&'static str>,
        ok: bool,
        checkpoint: Option<String>,
        feedback: Option<String>,
    ) -> CodeOutcome {
        CodeOutcome {
            facts,
            sparse: Vec::new(),
            tool,
            ok,
            checkpoint,
            after: After::Continue,
            feedback,
            repairs_spent: false,
        }
    }

    /// A recorded call (`run`, `edit`): its report's facts, signals and checkpoint.
    pub(super) fn recorded(
        report: step::StepReport,
        tool: &'static str,
        ok: bool,
        feedback: Option<String>,
    ) -> CodeOutcome {
        let checkpoint = report.checkpoint;
        CodeOutcome {
            sparse: report.sparse,
            ..CodeOutcome::new(report.facts, Some(tool), ok, checkpoint, feedback)
        }
    }
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

/// The placed files the check does not protect, and the paths of those it does. A
/// junior that also "fixes" the tests (the 1.5B wrote its own test_roman.py beside a right
/// roman.py) keeps its real work. A reply for protected files alone goes to the file tool
/// whole, which refuses it.
fn leave_out_protected(
    placed: Vec<Placed>,
    protected: &crate::agent::protect::Protected,
) -> (Vec<Placed>, Vec<String>) {
    let is_protected = |p: &Placed| protected.contains(std::path::Path::new(&p.path));
    if placed.iter().all(is_protected) {
        return (placed, Vec::new());
    }
    let (placed, refused): (Vec<Placed>, Vec<Placed>) =
        placed.into_iter().partition(|p| !is_protected(p));
    (placed, refused.into_iter().map(|p| p.path).collect())
}

impl Session<'_> {
    /// The reply's one move, in the order of precedence the module docs of
    /// [`super::code_step`] give; the blocks are placed here, so an edit that cannot be
    /// placed is already [`CodeMove::Unusable`].
    pub(super) fn read_code_reply(&self, text: &str, has_check: bool) -> CodeMove {
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

    /// `GIVE UP:` — the stuck rule, with the writer's own words as the reason.
    pub(super) async fn gave_up(&mut self, actor: Actor, why: String) -> Next {
        let who = actor.name();
        let said = if why.is_empty() {
            format!("the {who} gave up")
        } else {
            format!("the {who} gave up: {why}")
        };
        self.stuck(actor, said).await
    }

    /// A reply nothing can be done with: warned, a repair note spent, and a malformed
    /// move (or, for a reply with no code at all, a missing one) for the judge.
    pub(super) async fn code_unusable(
        &mut self,
        kind: &'static str,
        message: String,
    ) -> CodeOutcome {
        self.warn(kind, message.clone()).await;
        let repairs_spent = !self.repairs.another();
        let facts = StepFacts {
            no_diff: true,
            malformed_call: kind != NO_EDIT,
            no_tool_call: kind == NO_EDIT,
            ..StepFacts::default()
        };
        CodeOutcome {
            repairs_spent,
            ..CodeOutcome::new(
                facts,
                None,
                false,
                self.last_checkpoint.clone(),
                Some(message),
            )
        }
    }

    /// The model's own "done" (no check configured): logged as a `finish` call whose
    /// summary is the reply's first line, as `finish{summary}` carries it.
    pub(super) async fn code_done(&mut self, actor: Actor, text: &str) -> CodeOutcome {
        let summary: String = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        let call = synthetic(
            self.step,
            FINISH_NAME,
            serde_json::json!({"summary": summary}),
        );
        let _ = self.act_call(actor, &call).await;
        let tree = self.last_checkpoint.clone();
        CodeOutcome {
            after: After::End(Outcome::Unlabelled),
            ..CodeOutcome::new(StepFacts::default(), Some(FINISH_NAME), true, tree, None)
        }
    }

    /// `ASK:` — the operator's answer is the step's output and the writer's next message;
    /// a deferral hands the turn to the senior, a quit ends the session.
    pub(super) async fn code_ask(&mut self, actor: Actor, question: String) -> CodeOutcome {
        self.repairs.usable();
        let question_json = serde_json::json!({"question": question});
        let call = synthetic(self.step, tools::ASK_OPERATOR, question_json);
        let _ = self.act_call(actor, &call).await;
        let (ok, output, after) = match self.self_ask(question, Vec::new()).await {
            OperatorReply::Answer(a) => (true, a, After::Continue),
            OperatorReply::Defer => (
                true,
                "The operator asked a senior engineer to decide.".to_string(),
                After::Senior,
            ),
            OperatorReply::Quit => (
                false,
                "the session was stopped".to_string(),
                After::End(Outcome::Aborted),
            ),
        };
        let feedback = Some(format!("The user answered: {output}"));
        let report = self
            .record_synthetic(&call, ok, output, StepFacts::default(), Vec::new())
            .await;
        // An answer's step raises no signal of its own (the code protocol never counted one).
        let tool = Some(tools::ASK_OPERATOR);
        CodeOutcome {
            after,
            ..CodeOutcome::new(report.facts, tool, ok, report.checkpoint, feedback)
        }
    }

    /// `RUN:` — the command runs as a `run` call; its output's tail is the writer's next
    /// message. `Err` when the session must stop or hand off first.
    pub(super) async fn code_run(
        &mut self,
        actor: Actor,
        command: String,
    ) -> Result<CodeOutcome, Next> {
        self.repairs.usable();
        let arguments = serde_json::json!({"command": command});
        let call = synthetic(self.step, tools::spec::RUN, arguments);
        let (ok, output, facts) = self.act_synthetic(actor, &call).await?;
        let feedback = format!("`{command}` said:\n```\n{}\n```", check_tail(&output));
        let report = self
            .record_synthetic(&call, ok, output, facts, Vec::new())
            .await;
        Ok(CodeOutcome::recorded(
            report,
            tools::spec::RUN,
            ok,
            Some(feedback),
        ))
    }

    /// Code blocks — the placed files (less the protected ones) written as one `edit`;
    /// the writer is told only when the edit was not written. `Err` when the session must
    /// stop or hand off first.
    pub(super) async fn code_edit(
        &mut self,
        actor: Actor,
        placed: Vec<Placed>,
        repeated: u32,
    ) -> Result<CodeOutcome, Next> {
        self.repairs.usable();
        let (placed, refused) = leave_out_protected(placed, self.env.workspace.protected());
        self.keep_originals(&placed);
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
        let arguments = serde_json::json!({"files": files});
        let call = synthetic(self.step, tools::spec::EDIT, arguments);
        let (ok, output, facts) = self.act_synthetic(actor, &call).await?;
        let output = if ok { notes.join("\n") } else { output };
        let feedback = (!ok).then(|| format!("Your edit was not written: {output}"));
        let report = self
            .record_synthetic(&call, ok, output, facts, refused)
            .await;
        if repeated > 0 {
            let message = format!("the same reply again on the same tree ({repeated} before)");
            self.warn("repeated_edit", message).await;
        }
        Ok(CodeOutcome::recorded(
            report,
            tools::spec::EDIT,
            ok,
            feedback,
        ))
    }

    /// Carries out `call` as this step's tool call (logged, approved, run).
    async fn act_call(&mut self, actor: Actor, call: &ToolCall) -> Acted {
        step::act(
            &self.env,
            &self.emitter,
            &mut self.inbox,
            self.step,
            actor,
            call,
        )
        .await
    }

    /// Runs a call the reply came to; `Err` when the session must stop or hand off first.
    async fn act_synthetic(
        &mut self,
        actor: Actor,
        call: &ToolCall,
    ) -> Result<(bool, String, StepFacts), Next> {
        let acted = self.act_call(actor, call).await;
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
}

/// Warning kinds of a `code` reply that could not be used.
pub(super) const SYNTAX_REJECTED: &str = "syntax_rejected";
pub(super) const EDIT_UNPLACED: &str = "edit_unplaced";
pub(super) const NO_EDIT: &str = "no_edit";
/// The reply left the stub unwritten ([`crate::code::stub::left_unwritten`]).
pub(super) const STUB_ECHOED: &str = "stub_echoed";
const FINISH_NAME: &str = "finish";
