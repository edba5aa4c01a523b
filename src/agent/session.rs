//! The step loop: the junior works, the judge watches, the router acts.
//!
//! A step is one model turn plus the tool call it makes. Steps are numbered across actors.
//! When the judge's belief falls below the threshold in the middle of a junior turn, the
//! stream is cut at once, the proposed (unfinished) action is discarded — the judge scored
//! it before it touched the repository — and the router hands control off.

use std::collections::HashSet;
use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::config::{Config, HandoffMode};
use crate::event::{Actor, AskCounts, Command, EscalationReason, Event, Outcome};
use crate::llm::Client;
use crate::llm::types::{ChatRequest, Message};

use super::emitter::Emitter;
use super::escalate::{self, Handoff};
use super::prompts::Prompts;
use super::step::{self, StepResult};
use super::tools::{self, Workspace};
use super::turn::{self, TurnContext, TurnEnd};
use super::watch::Watch;
use crate::repo::Repo;

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

/// Everything a session is started with.
pub struct SessionSetup {
    pub config: Config,
    pub repo: PathBuf,
    pub task: String,
    pub session_id: String,
    pub approvals: Approvals,
    pub prompts: Prompts,
    pub watch: Watch,
    pub junior: Client,
    pub senior: Client,
}

/// What a finished session reports (the same facts are in the last event).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEnd {
    pub outcome: Outcome,
    pub steps: u32,
    pub ticks: u64,
    pub usd: f64,
    pub ask: AskCounts,
    pub censored: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot use {0} as the workspace: {1}")]
    Workspace(PathBuf, std::io::Error),
}

/// Mutable state of a running session, shared by the loop and its helpers.
pub(crate) struct State {
    pub emitter: Emitter,
    pub commands: mpsc::Receiver<Command>,
    pub watch: Watch,
    pub shadow: bool,
    pub paused: bool,
    pub step: u32,
    pub usd_seen: f64,
    pub junior_history: Vec<Message>,
    pub seen_calls: HashSet<(String, String)>,
    pub files_touched: Vec<String>,
    pub plan: Vec<String>,
    pub tool_outputs: Vec<(String, String)>,
    pub last_checkpoint: Option<String>,
    pub start_checkpoint: Option<String>,
    /// Steps left during which no new escalation happens (after a return).
    pub cooldown: u32,
    pub escalations: Vec<EscalationRecord>,
    pub censored: bool,
}

/// One escalation, for Ask-F1 at the end.
#[derive(Debug, Clone)]
pub struct EscalationRecord {
    pub shadow: bool,
    /// The operator's mark, when given.
    pub needed: Option<bool>,
}

impl EscalationRecord {
    /// A crossing in shadow mode: logged, not acted on; scored by the outcome.
    pub fn shadow() -> Self {
        EscalationRecord {
            shadow: true,
            needed: None,
        }
    }
}

/// Runs a session to its end. Events go to `emitter`; intents come from `commands`.
pub async fn run(
    setup: SessionSetup,
    emitter: Emitter,
    commands: mpsc::Receiver<Command>,
) -> Result<SessionEnd, SessionError> {
    let SessionSetup {
        config,
        repo: repo_dir,
        task,
        session_id,
        approvals,
        prompts,
        watch,
        junior,
        senior,
    } = setup;
    // Commands the model runs never see the endpoints' API keys.
    let key_vars: Vec<String> = [&config.junior.api_key_env, &config.senior.api_key_env]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let workspace = Workspace::new(&repo_dir, &config.agent)
        .map_err(|e| SessionError::Workspace(repo_dir.clone(), e))?
        .hide_env(key_vars);
    let repo = Repo::open(&repo_dir).ok().map(std::sync::Mutex::new);
    emitter
        .emit(Event::SessionStarted {
            session_id: session_id.clone(),
            task: task.clone(),
            repo: repo_dir.display().to_string(),
            head: repo
                .as_ref()
                .and_then(|r| r.lock().ok().and_then(|r| r.head())),
            config_digest: config.digest(),
            junior_model: junior.model().to_string(),
            senior_model: senior.model().to_string(),
            policy: watch.policy_name().to_string(),
            shadow: config.policy.shadow,
            token_budget: config.agent.token_budget,
            prior: watch.prior(),
        })
        .await;
    if let Some(note) = workspace.sandbox_note() {
        emitter
            .emit(Event::Warning {
                kind: "sandbox".into(),
                message: note,
            })
            .await;
    }
    let mut st = State {
        emitter,
        commands,
        watch,
        shadow: config.policy.shadow,
        paused: false,
        step: 0,
        usd_seen: 0.0,
        junior_history: vec![
            Message::system(prompts.junior.clone()),
            Message::user(task.clone()),
        ],
        seen_calls: HashSet::new(),
        files_touched: Vec::new(),
        plan: Vec::new(),
        tool_outputs: Vec::new(),
        last_checkpoint: None,
        start_checkpoint: None,
        cooldown: 0,
        escalations: Vec::new(),
        censored: false,
    };
    let ctx = step::StepEnv {
        workspace: &workspace,
        repo: repo.as_ref(),
        session_id: &session_id,
        config: &config,
        approvals,
    };
    st.start_checkpoint = step::checkpoint(&ctx, &st, 0);
    st.last_checkpoint = st.start_checkpoint.clone();
    let specs = tools::specs();
    let mut senior_in_charge: Option<Vec<Message>> = None;

    let outcome = loop {
        if st.step >= config.agent.max_steps {
            st.emitter
                .emit(Event::Warning {
                    kind: "max_steps".into(),
                    message: format!("stopped after {} steps (agent.max_steps)", st.step),
                })
                .await;
            break Outcome::Aborted;
        }
        if st.watch.tick() >= config.agent.token_budget && senior_in_charge.is_none() {
            st.emitter
                .emit(Event::Warning {
                    kind: "token_budget".into(),
                    message: format!(
                        "the junior used its token budget ({} tokens)",
                        config.agent.token_budget
                    ),
                })
                .await;
            break Outcome::Aborted;
        }
        if st.paused && !wait_while_paused(&mut st).await {
            break Outcome::Aborted;
        }
        st.step += 1;
        let actor = if senior_in_charge.is_some() {
            Actor::Senior
        } else {
            Actor::Junior
        };
        st.emitter
            .emit(Event::StepStarted {
                step: st.step,
                actor,
                tick: st.watch.tick(),
            })
            .await;
        let (client, messages) = match &senior_in_charge {
            Some(history) => (&senior, history.clone()),
            None => (&junior, st.junior_history.clone()),
        };
        let req = ChatRequest {
            messages,
            tools: specs.clone(),
        };
        let may_escalate = !st.shadow && st.cooldown == 0;
        let end = {
            let mut tctx = TurnContext {
                emitter: &st.emitter,
                commands: &mut st.commands,
                watch: &mut st.watch,
                may_escalate,
                shadow: &mut st.shadow,
                step: st.step,
                paused: &mut st.paused,
                usd: &mut st.usd_seen,
                escalations: &mut st.escalations,
            };
            turn::stream_turn(&mut tctx, client, actor, &req).await
        };
        let (text, calls) = match end {
            TurnEnd::Done { text, tool_calls } => (text, tool_calls),
            TurnEnd::Quit => break Outcome::Aborted,
            TurnEnd::Failed(_) if actor == Actor::Junior => {
                // The junior's endpoint is gone: hand off as a fault, not as evidence.
                match escalate::escalate(
                    &mut st,
                    &ctx,
                    &task,
                    &prompts,
                    &senior,
                    EscalationReason::Fault,
                )
                .await
                {
                    Handoff::Senior(history) => {
                        senior_in_charge = Some(history);
                        continue;
                    }
                    Handoff::Resume => continue,
                    Handoff::Stop => break Outcome::Aborted,
                }
            }
            TurnEnd::Failed(_) => break Outcome::Aborted,
            TurnEnd::Escalate(reason) => {
                match escalate::escalate(&mut st, &ctx, &task, &prompts, &senior, reason).await {
                    Handoff::Senior(history) => senior_in_charge = Some(history),
                    Handoff::Resume => {}
                    Handoff::Stop => break Outcome::Aborted,
                }
                continue;
            }
        };
        if !text.trim().is_empty() {
            st.plan.push(text.clone());
        }
        let result = step::run_step(&mut st, &ctx, actor, &text, &calls).await;
        // The conversation of whoever acted gets the turn and its tool results.
        let history = match &mut senior_in_charge {
            Some(h) => h,
            None => &mut st.junior_history,
        };
        history.push(Message::assistant(text, result.calls_made.clone()));
        history.extend(result.replies.iter().cloned());
        st.cooldown = st.cooldown.saturating_sub(1);
        match result.result {
            StepResult::Continue => {}
            StepResult::Finished(outcome) => break outcome,
            StepResult::Quit => break Outcome::Aborted,
            StepResult::Escalate(reason) if actor == Actor::Junior => {
                match escalate::escalate(&mut st, &ctx, &task, &prompts, &senior, reason).await {
                    Handoff::Senior(history) => senior_in_charge = Some(history),
                    Handoff::Resume => {}
                    Handoff::Stop => break Outcome::Aborted,
                }
                continue;
            }
            StepResult::Escalate(_) => {}
        }
        if actor == Actor::Senior && config.policy.handoff == HandoffMode::Step {
            let did = result.summary;
            senior_in_charge = None;
            escalate::senior_returned(&mut st, &config, &did).await;
        }
    };
    Ok(finish(st, outcome).await)
}

/// Blocks between steps until `Resume`; false when the operator quit instead.
async fn wait_while_paused(st: &mut State) -> bool {
    while st.paused {
        match st.commands.recv().await {
            Some(Command::Resume) => st.paused = false,
            Some(Command::SetShadow { on }) => st.shadow = on,
            Some(Command::Quit) | None => return false,
            Some(_) => {}
        }
    }
    true
}

/// Ask-F1 counts for the session (HiL-Bench style, see `metrics`): an operator escalation
/// counts by the operator's mark; a shadow escalation was needed iff the junior went on to
/// fail; a live senior takeover hides the junior's own outcome, so it counts in neither
/// column; a failure with no escalation at all is a false negative.
pub(crate) fn ask_counts(escalations: &[EscalationRecord], outcome: Outcome) -> AskCounts {
    let mut ask = AskCounts::default();
    for e in escalations {
        let needed = match (e.needed, e.shadow, outcome) {
            (Some(n), _, _) => Some(n),
            (None, true, Outcome::Failure) => Some(true),
            (None, true, Outcome::Success) => Some(false),
            _ => None,
        };
        match needed {
            Some(true) => ask.tp += 1,
            Some(false) => ask.fp += 1,
            None => {}
        }
    }
    if escalations.is_empty() && outcome == Outcome::Failure {
        ask.fn_ += 1;
    }
    ask
}

async fn finish(st: State, outcome: Outcome) -> SessionEnd {
    let ask = ask_counts(&st.escalations, outcome);
    let end = SessionEnd {
        outcome,
        steps: st.step,
        ticks: st.watch.tick(),
        usd: st.usd_seen,
        ask,
        censored: st.censored,
    };
    st.emitter
        .emit(Event::SessionEnded {
            outcome,
            censored: end.censored,
            steps: end.steps,
            ticks: end.ticks,
            usd: end.usd,
            ask,
        })
        .await;
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(shadow: bool, needed: Option<bool>) -> EscalationRecord {
        EscalationRecord { shadow, needed }
    }

    #[test]
    fn ask_counts_follow_marks_shadow_outcomes_and_silent_failures() {
        let marked = [rec(false, Some(true)), rec(false, Some(false))];
        assert_eq!(
            ask_counts(&marked, Outcome::Success),
            AskCounts {
                tp: 1,
                fp: 1,
                fn_: 0
            }
        );
        let shadow = [rec(true, None)];
        assert_eq!(
            ask_counts(&shadow, Outcome::Failure),
            AskCounts {
                tp: 1,
                fp: 0,
                fn_: 0
            }
        );
        assert_eq!(
            ask_counts(&shadow, Outcome::Success),
            AskCounts {
                tp: 0,
                fp: 1,
                fn_: 0
            }
        );
        let live_senior = [rec(false, None)];
        assert_eq!(
            ask_counts(&live_senior, Outcome::Failure),
            AskCounts::default()
        );
        assert_eq!(
            ask_counts(&[], Outcome::Failure),
            AskCounts {
                tp: 0,
                fp: 0,
                fn_: 1
            }
        );
        assert_eq!(ask_counts(&[], Outcome::Unlabelled), AskCounts::default());
    }
}
