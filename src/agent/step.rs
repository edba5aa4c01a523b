//! Executing the tool call of a turn: what the reply proposes, approval, the tool itself,
//! its result and checkpoint, and the step facts the judge gets from what the tool reported.
//!
//! A step takes values and returns values: it never decides an escalation and never holds
//! the session's state. [`act`] says what a call came to ([`Acted`]); the loop resolves the
//! calls that need it (`finish` runs the check, `ask_operator` asks); [`record`] logs the
//! result, takes the checkpoint and returns the [`StepReport`] the judge reads.

use crate::config::{Approval, Config};
use crate::llm::types::{Message, ToolCall};
use crate::protocol::{Actor, Event, SignalKind};
use crate::repo::Repo;

use super::emitter::Emitter;
use super::inbox::{Inbox, Intent, Waiting};
use super::reply::Unusable;
use super::tools::spec::{APPLY_PATCH, FINISH, LIST_FILES, READ_FILE, RUN, SEARCH, WRITE_FILE};
use super::tools::{self, ASK_OPERATOR, OutcomeKind, Workspace};
use crate::competence::StepFacts;

/// Who can say yes to a tool call that needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approvals {
    /// `exec --approve`: every call is approved.
    Granted,
    /// Someone at the TUI answers `ApprovalRequested` with `Command::Approve`.
    Interactive,
    /// Nobody: calls that need approval are refused (and logged).
    Refused,
}

/// What the session has that a step needs, borrowed for the session's duration.
pub(crate) struct StepEnv<'a> {
    pub workspace: &'a Workspace,
    /// git2's repository is not `Sync`; the lock is only held in synchronous sections.
    pub repo: Option<&'a std::sync::Mutex<Repo>>,
    pub session_id: &'a str,
    pub config: &'a Config,
    pub approvals: Approvals,
}

/// What a proposed call came to.
pub(crate) enum Acted {
    /// The tool ran, or was refused; the result goes to the model.
    Ran {
        ok: bool,
        output: String,
        facts: StepFacts,
        /// The path the call wrote to, if it wrote one.
        wrote: Option<String>,
        /// Protected paths a file tool refused to change.
        refused: Vec<String>,
    },
    /// `finish`: the loop runs the check.
    Finish,
    /// `ask_operator`: the loop asks.
    Ask {
        question: String,
        options: Vec<String>,
    },
    /// The operator forced an escalation while the call waited for approval: the call is
    /// discarded unrun.
    Escalate,
    /// The operator quit before the call ran (while it waited for approval).
    Quit,
    /// The operator quit while the call ran: it was stopped (a command's whole tree
    /// killed) and its result is lost.
    Stopped,
}

/// The arguments of a call as JSON (a non-JSON string is kept as a string).
pub(crate) fn arguments(call: &ToolCall) -> serde_json::Value {
    let text = &call.function.arguments;
    serde_json::from_str(text).unwrap_or(serde_json::Value::String(text.clone()))
}

/// The arguments as logged: whole up to `cap` bytes (`agent.max_argument_bytes`, the size
/// the tools refuse above); past it, a string with the head and a marker saying how much
/// was cut, so a 100 MB argument costs the log and the front ends `cap` bytes, not 100 MB.
pub(crate) fn logged_arguments(
    call: &ToolCall,
    parsed: &serde_json::Value,
    cap: usize,
) -> serde_json::Value {
    let text = &call.function.arguments;
    if text.len() <= cap {
        return parsed.clone();
    }
    let head = super::tools::truncate_head(text, cap);
    serde_json::Value::String(format!(
        "{head}… [arguments cut at {cap} of {} bytes (agent.max_argument_bytes)]",
        text.len()
    ))
}

/// Logs the call, asks for approval when needed, and runs it.
pub(crate) async fn act(
    env: &StepEnv<'_>,
    emitter: &Emitter,
    inbox: &mut Inbox,
    step: u32,
    actor: Actor,
    call: &ToolCall,
) -> Acted {
    let name = call.function.name.as_str();
    let args = arguments(call);
    let cap = env.workspace.limits().max_argument_bytes;
    emitter
        .emit(Event::ToolCalled {
            step,
            actor,
            call_id: call.id.clone(),
            name: name.to_string(),
            arguments: logged_arguments(call, &args, cap),
        })
        .await;
    match name {
        FINISH => return Acted::Finish,
        ASK_OPERATOR => {
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
            return Acted::Ask { question, options };
        }
        _ => {}
    }
    match approve(env, emitter, inbox, step, actor, call, &args).await {
        Approved::Yes => {}
        Approved::No(why) => {
            return Acted::Ran {
                ok: false,
                output: why,
                facts: StepFacts::default(),
                wrote: None,
                refused: Vec::new(),
            };
        }
        Approved::Escalate => return Acted::Escalate,
        Approved::Quit => return Acted::Quit,
    }
    let run = env.workspace.execute(name, &call.function.arguments);
    let Some(out) = inbox.unless_quit(run).await else {
        return Acted::Stopped;
    };
    if let Some(message) = &out.fault {
        // The setup refused the call (a sandbox denial): the operator hears of it as a
        // fault, and the step's facts do not hold it against the model.
        emitter
            .emit(Event::Fault {
                actor,
                kind: out.kind.name().to_string(),
                message: message.clone(),
                retryable: false,
                attempt: 0,
            })
            .await;
    }
    let facts = StepFacts {
        tool_error: matches!(out.kind, OutcomeKind::ToolError | OutcomeKind::BadArguments),
        patch_rejected: matches!(out.kind, OutcomeKind::PatchRejected),
        ..StepFacts::default()
    };
    let wrote = if out.writes {
        args.get("path")
            .and_then(|p| p.as_str())
            .map(str::to_string)
    } else {
        None
    };
    Acted::Ran {
        ok: out.ok,
        output: out.output,
        facts,
        wrote,
        refused: out.protected,
    }
}

/// A finished step, as the judge and the conversation need it.
pub(crate) struct StepReport {
    /// The step's facts, with `no_diff` from the checkpoint.
    pub facts: StepFacts,
    /// Tool replies for the conversation (every call gets one).
    pub replies: Vec<Message>,
    /// One line of what was done, for the junior after a senior step.
    pub summary: String,
    /// The checkpoint after the step (the previous one when nothing could be taken).
    pub checkpoint: Option<String>,
    /// Present step facts logged only when present ([`SignalKind::is_sparse`]).
    pub sparse: Vec<SignalKind>,
}

/// What a call that ran left for [`record`]: its result, its facts, and the protected
/// paths a file tool refused.
pub(crate) struct Ran {
    pub ok: bool,
    pub output: String,
    pub facts: StepFacts,
    pub refused: Vec<String>,
}

/// The result of a call that ran: puts back any protected file the step changed, logs the
/// result, answers every call of the reply, and takes the checkpoint that says whether the
/// work tree changed (after the restore, so the checkpoint holds the start's tests).
pub(crate) async fn record(
    env: &StepEnv<'_>,
    emitter: &Emitter,
    step: u32,
    (call, extra): (&ToolCall, &[ToolCall]),
    ran: Ran,
    last_checkpoint: Option<&str>,
) -> StepReport {
    let Ran {
        mut ok,
        mut output,
        mut facts,
        refused,
    } = ran;
    let name = call.function.name.as_str();
    let restored = env.workspace.restore_protected();
    if !restored.is_empty() {
        output = format!(
            "{output}\nnote: this changed protected files (agent.protected), which were put back as they were at the start: {}. The check runs on them as they were; fix the code under test instead.",
            restored
                .restored
                .iter()
                .chain(&restored.failed)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // The checkpoint that says whether the tree changed. A call whose tree cannot be
    // checkpointed fails: its change is in no checkpoint, so neither the summary nor
    // `handoff diff` nor `restore` can account for it.
    let taken = try_checkpoint(env, step);
    if let Err(why) = &taken {
        ok = false;
        facts.tool_error = true;
        output = format!(
            "error: handoff could not checkpoint the work tree after this call ({why}); remove what git cannot store before going on\n{output}"
        );
    }
    emitter
        .emit(Event::ToolResulted {
            step,
            call_id: call.id.clone(),
            name: name.to_string(),
            ok,
            output: output.clone(),
        })
        .await;
    let git = env.workspace.take_git_repairs();
    let touched = !refused.is_empty() || !restored.is_empty() || !git.is_empty();
    if touched {
        emitter
            .emit(Event::ProtectedTouched {
                step,
                refused,
                restored: restored.restored,
                unrestored: restored.failed,
                git,
            })
            .await;
    }
    let summary = format!("{name}: {}", first_line(&output));
    let mut replies = vec![Message::tool(call.id.clone(), output)];
    for c in extra {
        replies.push(Message::tool(
            c.id.clone(),
            "not run: one tool call per reply",
        ));
    }
    let taken = match taken {
        Ok(taken) => taken,
        Err(why) => {
            // A tree git cannot snapshot (a directory named `GIT~1`, say) would otherwise
            // make every later summary say "no change" while the files sit in the tree.
            emitter
                .emit(Event::Warning {
                    kind: CHECKPOINT_FAILED.into(),
                    message: format!(
                        "step {step}: the work tree could not be checkpointed, so `handoff diff` and the summary do not show this step's changes (the call fails; the session exits 5): {why}"
                    ),
                })
                .await;
            None
        }
    };
    let changed = taken.is_some() && taken.as_deref() != last_checkpoint;
    facts.no_diff = !changed && !matches!(name, LIST_FILES | READ_FILE | SEARCH | FINISH);
    StepReport {
        facts,
        replies,
        summary,
        checkpoint: taken.or_else(|| last_checkpoint.map(str::to_string)),
        sparse: if touched {
            vec![SignalKind::TouchedProtected]
        } else {
            Vec::new()
        },
    }
}

/// The report of a reply with no usable call: the model is told `message` (see
/// [`super::reply::ask_again`]), and the judge gets the fact.
pub(crate) fn unusable(
    last_checkpoint: Option<&str>,
    why: Unusable,
    message: String,
) -> StepReport {
    let replies = vec![Message::user(super::reply::repair_note(&message))];
    StepReport {
        facts: StepFacts {
            no_diff: true,
            no_tool_call: why == Unusable::NoCall,
            malformed_call: why == Unusable::Malformed,
            ..StepFacts::default()
        },
        replies,
        summary: match why {
            Unusable::NoCall => "said something, called no tool".into(),
            Unusable::Malformed => "wrote a tool call that could not be used".into(),
        },
        checkpoint: last_checkpoint.map(str::to_string),
        sparse: Vec::new(),
    }
}

/// Snapshot of the work tree after `step`, if the directory is a git repository.
pub(crate) fn checkpoint(env: &StepEnv<'_>, step: u32) -> Option<String> {
    try_checkpoint(env, step).ok().flatten()
}

/// The step's checkpoint, or why it could not be taken (`Ok(None)`: no repository).
fn try_checkpoint(env: &StepEnv<'_>, step: u32) -> Result<Option<String>, String> {
    let Some(repo) = env.repo else {
        return Ok(None);
    };
    let repo = repo
        .lock()
        .map_err(|_| "the repository lock is poisoned".to_string())?;
    repo.checkpoint(env.session_id, step)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Warning kind of a step whose checkpoint could not be taken.
pub(crate) const CHECKPOINT_FAILED: &str = "checkpoint_failed";

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

enum Approved {
    Yes,
    No(String),
    Escalate,
    Quit,
}

async fn approve(
    env: &StepEnv<'_>,
    emitter: &Emitter,
    inbox: &mut Inbox,
    step: u32,
    actor: Actor,
    call: &ToolCall,
    args: &serde_json::Value,
) -> Approved {
    let name = call.function.name.as_str();
    let needed = match env.config.agent.approval {
        Approval::Never => false,
        Approval::Always => true,
        Approval::OnWrite => tools::is_write(name, &call.function.arguments),
    };
    if !needed {
        return Approved::Yes;
    }
    let decided = |approved: bool, by: &str| Event::ApprovalDecided {
        step,
        call_id: call.id.clone(),
        approved,
        by: by.to_string(),
    };
    match env.approvals {
        Approvals::Granted => {
            emitter.emit(decided(true, "flag")).await;
            Approved::Yes
        }
        Approvals::Refused => {
            emitter.emit(decided(false, "policy")).await;
            Approved::No(format!(
                "refused: `{name}` needs the operator's approval (agent.approval) and nobody can give it; \
                 run with --approve or set agent.approval = \"never\""
            ))
        }
        Approvals::Interactive => {
            emitter
                .emit(Event::ApprovalRequested {
                    step,
                    call_id: call.id.clone(),
                    name: name.to_string(),
                    summary: describe_call(name, args),
                })
                .await;
            let waiting = Waiting::Approval {
                call_id: &call.id,
                junior: actor == Actor::Junior,
            };
            match inbox.wait(waiting).await {
                Intent::Approved(true) => {
                    emitter.emit(decided(true, "operator")).await;
                    Approved::Yes
                }
                Intent::Escalate => {
                    // The operator's escalation withdraws the call: refused by the operator.
                    emitter.emit(decided(false, "operator")).await;
                    Approved::Escalate
                }
                Intent::Quit => Approved::Quit,
                _ => {
                    emitter.emit(decided(false, "operator")).await;
                    Approved::No(format!("refused: the operator did not approve `{name}`"))
                }
            }
        }
    }
}

/// What a call would do, for the approval prompt: the whole command of a `run`, every file
/// a patch creates, deletes, renames or changes (one line each, from the parser that
/// applies it), the path and size of a write. Nothing is cut here; the front ends wrap it
/// and show its control characters.
fn describe_call(name: &str, args: &serde_json::Value) -> String {
    let field = |k: &str| {
        args.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_string()
    };
    match name {
        WRITE_FILE => {
            let lines = args
                .get("content")
                .and_then(|v| v.as_str())
                .map_or(0, |c| c.lines().count());
            format!("write {} ({lines} lines)", field("path"))
        }
        APPLY_PATCH => {
            let files = tools::patch::describe(&field("patch"));
            let count = files.len();
            format!(
                "patch {count} file{}:\n{}",
                if count == 1 { "" } else { "s" },
                files.join("\n")
            )
        }
        RUN => format!("run `{}`", field("command")),
        other => format!("{other} {args}"),
    }
}
