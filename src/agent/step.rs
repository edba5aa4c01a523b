//! Executing the tool call of a turn: approval, the tool itself, the checkpoint, and the step
//! evidence the judge gets from what the tool reported.

use crate::config::{Approval, Config};
use crate::event::{Actor, Command, EscalationReason, Event, Outcome};
use crate::llm::types::{Message, ToolCall};
use crate::repo::Repo;

use super::escalate::{self, OperatorReply};
use super::session::{Approvals, State};
use super::tools::run::run_shell;
use super::tools::{self, OutcomeKind, Workspace};
use super::watch::StepFacts;

/// What the session has that a step needs, borrowed for the session's duration.
pub(crate) struct StepEnv<'a> {
    pub workspace: &'a Workspace,
    /// git2's repository is not `Sync`; the lock is only held in synchronous sections.
    pub repo: Option<&'a std::sync::Mutex<Repo>>,
    pub session_id: &'a str,
    pub config: &'a Config,
    pub approvals: Approvals,
}

pub(crate) enum StepResult {
    Continue,
    Finished(Outcome),
    Escalate(EscalationReason),
    Quit,
}

pub(crate) struct StepOutcome {
    pub result: StepResult,
    /// The calls as they go into the history (every call gets a tool reply).
    pub calls_made: Vec<ToolCall>,
    pub replies: Vec<Message>,
    /// One line of what was done, for the junior after a senior step.
    pub summary: String,
}

/// Snapshot of the work tree after `step`, if the directory is a git repository.
pub(crate) fn checkpoint(env: &StepEnv<'_>, _st: &State, step: u32) -> Option<String> {
    let repo = env.repo?.lock().ok()?;
    repo.checkpoint(env.session_id, step).ok()
}

const READ_ONLY: [&str; 3] = ["list_files", "read_file", "search"];

pub(crate) async fn run_step(
    st: &mut State,
    env: &StepEnv<'_>,
    actor: Actor,
    _text: &str,
    calls: &[ToolCall],
) -> StepOutcome {
    let step = st.step;
    let Some((call, extra)) = calls.split_first() else {
        let replies = vec![Message::user(
            "Reply with exactly one tool call. Call finish when the task is done.",
        )];
        let result = end_step(
            st,
            env,
            actor,
            None,
            false,
            StepFacts {
                no_diff: true,
                ..StepFacts::default()
            },
        )
        .await;
        return StepOutcome {
            result,
            calls_made: Vec::new(),
            replies,
            summary: "said something, called no tool".into(),
        };
    };
    let mut replies = Vec::new();
    let name = call.function.name.clone();
    let args_text = call.function.arguments.clone();
    let args: serde_json::Value =
        serde_json::from_str(&args_text).unwrap_or(serde_json::Value::String(args_text.clone()));
    st.emitter
        .emit(Event::ToolCalled {
            step,
            actor,
            call_id: call.id.clone(),
            name: name.clone(),
            arguments: args.clone(),
        })
        .await;
    let repeated = !st.seen_calls.insert((name.clone(), args_text.clone()));
    let mut result = StepResult::Continue;
    let mut facts = StepFacts {
        repeated_action: repeated,
        ..StepFacts::default()
    };
    let (ok, output) = match name.as_str() {
        "finish" => {
            let outcome = run_check(st, env).await;
            result = StepResult::Finished(outcome);
            (true, "finished".to_string())
        }
        "ask_operator" => {
            let question = args
                .get("question")
                .and_then(|q| q.as_str())
                .unwrap_or("")
                .to_string();
            let options: Vec<String> = args
                .get("options")
                .and_then(|o| o.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            match escalate::self_ask(st, env.config, &question, options).await {
                OperatorReply::Answer(a) => (true, a),
                OperatorReply::Defer => {
                    result = StepResult::Escalate(EscalationReason::SelfAsk);
                    (
                        true,
                        "The operator asked a senior engineer to decide.".to_string(),
                    )
                }
                OperatorReply::Quit => {
                    result = StepResult::Quit;
                    (false, "the session was stopped".to_string())
                }
            }
        }
        _ => match approve(st, env, call, &name, &args).await {
            Approved::Yes => {
                let out = env.workspace.execute(&name, &args_text).await;
                facts.tool_error =
                    matches!(out.kind, OutcomeKind::ToolError | OutcomeKind::BadArguments);
                facts.patch_rejected = matches!(out.kind, OutcomeKind::PatchRejected);
                if out.writes
                    && let Some(path) = args.get("path").and_then(|p| p.as_str())
                    && !st.files_touched.iter().any(|f| f == path)
                {
                    st.files_touched.push(path.to_string());
                }
                (out.ok, out.output)
            }
            Approved::No(why) => (false, why),
            Approved::Quit => {
                result = StepResult::Quit;
                (false, "the session was stopped".to_string())
            }
        },
    };
    st.emitter
        .emit(Event::ToolResulted {
            step,
            call_id: call.id.clone(),
            name: name.clone(),
            ok,
            output: output.clone(),
        })
        .await;
    st.tool_outputs.push((name.clone(), output.clone()));
    replies.push(Message::tool(call.id.clone(), output.clone()));
    for c in extra {
        replies.push(Message::tool(
            c.id.clone(),
            "not run: one tool call per reply",
        ));
    }
    let checkpoint = checkpoint(env, st, step);
    let changed = checkpoint.is_some() && checkpoint != st.last_checkpoint;
    facts.no_diff = !changed && !READ_ONLY.contains(&name.as_str()) && name != "finish";
    if checkpoint.is_some() {
        st.last_checkpoint = checkpoint.clone();
    }
    let judged = end_step_with(st, env, actor, Some(name.clone()), ok, facts, checkpoint).await;
    if matches!(result, StepResult::Continue) {
        result = judged;
    }
    let summary = format!("{name}: {}", first_line(&output));
    StepOutcome {
        result,
        calls_made: calls.to_vec(),
        replies,
        summary,
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

async fn end_step(
    st: &mut State,
    env: &StepEnv<'_>,
    actor: Actor,
    tool: Option<String>,
    ok: bool,
    facts: StepFacts,
) -> StepResult {
    let cp = st.last_checkpoint.clone();
    end_step_with(st, env, actor, tool, ok, facts, cp).await
}

/// Adds the step evidence (junior steps only), logs the step end, and says whether the
/// judge now wants to escalate.
async fn end_step_with(
    st: &mut State,
    _env: &StepEnv<'_>,
    actor: Actor,
    tool: Option<String>,
    ok: bool,
    facts: StepFacts,
    checkpoint: Option<String>,
) -> StepResult {
    let step = st.step;
    if actor == Actor::Senior {
        st.emitter
            .emit(Event::StepEnded {
                step,
                actor,
                tick: st.watch.tick(),
                tool,
                ok,
                belief: st.watch.belief(),
                terms: Vec::new(),
                checkpoint,
            })
            .await;
        return StepResult::Continue;
    }
    let reading = st.watch.step(&facts);
    let terms = st.watch.last_terms().to_vec();
    if !terms.is_empty() {
        st.emitter.emit(reading.event(&st.watch)).await;
    }
    st.emitter
        .emit(Event::StepEnded {
            step,
            actor,
            tick: reading.tick,
            tool,
            ok,
            belief: reading.belief,
            terms,
            checkpoint,
        })
        .await;
    if reading.below && st.cooldown == 0 {
        if st.shadow {
            if reading.crossed {
                st.escalations
                    .push(super::session::EscalationRecord::shadow());
                let ev = st.watch.shadow_escalation(step);
                st.emitter.emit(ev).await;
            }
        } else {
            return StepResult::Escalate(EscalationReason::Threshold);
        }
    }
    StepResult::Continue
}

/// Runs `agent.check` and turns its exit status into the session's label.
async fn run_check(st: &mut State, env: &StepEnv<'_>) -> Outcome {
    let Some(command) = env.config.agent.check.clone() else {
        return Outcome::Unlabelled;
    };
    let spec = env.workspace.check_command(&command);
    let (exit_code, output_tail, passed) = match run_shell(&spec).await {
        Ok(r) => (r.exit_code, r.output_tail.clone(), r.success()),
        Err(e) => (None, e.to_string(), false),
    };
    st.emitter
        .emit(Event::CheckRan {
            command,
            exit_code,
            passed,
            output_tail,
        })
        .await;
    if passed {
        Outcome::Success
    } else {
        Outcome::Failure
    }
}

enum Approved {
    Yes,
    No(String),
    Quit,
}

async fn approve(
    st: &mut State,
    env: &StepEnv<'_>,
    call: &ToolCall,
    name: &str,
    args: &serde_json::Value,
) -> Approved {
    let needed = match env.config.agent.approval {
        Approval::Never => false,
        Approval::Always => true,
        Approval::OnWrite => tools::is_write(name, &args.to_string()),
    };
    if !needed {
        return Approved::Yes;
    }
    let step = st.step;
    let decided = |approved: bool, by: &str| Event::ApprovalDecided {
        step,
        call_id: call.id.clone(),
        approved,
        by: by.to_string(),
    };
    match env.approvals {
        Approvals::Granted => {
            st.emitter.emit(decided(true, "flag")).await;
            Approved::Yes
        }
        Approvals::Refused => {
            st.emitter.emit(decided(false, "policy")).await;
            Approved::No(format!(
                "refused: `{name}` needs the operator's approval (agent.approval) and nobody can give it; \
                 run with --approve or set agent.approval = \"never\""
            ))
        }
        Approvals::Interactive => {
            st.emitter
                .emit(Event::ApprovalRequested {
                    step,
                    call_id: call.id.clone(),
                    name: name.to_string(),
                    summary: describe_call(name, args),
                })
                .await;
            loop {
                match st.commands.recv().await {
                    Some(Command::Approve { call_id, approved }) if call_id == call.id => {
                        st.emitter.emit(decided(approved, "operator")).await;
                        return if approved {
                            Approved::Yes
                        } else {
                            Approved::No(format!("refused: the operator did not approve `{name}`"))
                        };
                    }
                    Some(Command::Quit) | None => return Approved::Quit,
                    Some(Command::SetShadow { on }) => st.shadow = on,
                    Some(_) => {}
                }
            }
        }
    }
}

/// One line saying what a call would do, for the approval prompt.
fn describe_call(name: &str, args: &serde_json::Value) -> String {
    let field = |k: &str| {
        args.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string()
    };
    match name {
        "write_file" => {
            let lines = args
                .get("content")
                .and_then(|v| v.as_str())
                .map_or(0, |c| c.lines().count());
            format!("write {} ({lines} lines)", field("path"))
        }
        "apply_patch" => {
            let patch = field("patch");
            let files: Vec<String> = patch
                .lines()
                .filter_map(|l| l.strip_prefix("+++ "))
                .map(|p| p.trim_start_matches("b/").to_string())
                .collect();
            format!(
                "patch {}",
                if files.is_empty() {
                    "?".to_string()
                } else {
                    files.join(", ")
                }
            )
        }
        "run" => format!("run `{}`", field("command")),
        other => format!("{other} {args}"),
    }
}
