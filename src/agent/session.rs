//! The step loop: the junior works, the judge watches, the router acts.
//!
//! A step is one model turn plus the tool call it makes. Steps are numbered across actors.
//! When the judge's belief falls below the threshold in the middle of a junior turn, the
//! stream is cut at once, the proposed (unfinished) action is discarded — the judge scored
//! it before it touched the repository — and the router hands control off.
//!
//! This loop is the only holder of the session's mutable state ([`Session`]). The pieces it
//! calls take values and return values: [`turn`] streams a reply, [`step`] runs a call,
//! [`handoff`] triages, asks and hands over, the [`Inbox`] reads commands, and the
//! [`Gate`] holds the escalation rule. None of them points back here.

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::competence::{Exploration, Gate, TestRuns, Verdict};
use crate::config::Config;
use crate::llm::Client;
use crate::llm::types::{ChatRequest, Message};
use crate::protocol::{Actor, AskCounts, Command, EscalationReason, Event, Outcome};
use crate::repo::Repo;

use super::context::HandoffLedger;
use super::emitter::Emitter;
use super::history::ContextFit;
use super::inbox::{Inbox, Intent, Waiting};
use super::prompts::Prompts;
use super::reply::Repairs;
use super::step::{self, StepEnv};
use super::tools::{self, Workspace};
use super::turn::{self, TokenLimit, TurnEnd};
use crate::competence::repeats::{self, Progress};
use crate::judge::SessionJudge;

mod candidates;
mod check_message;
mod code_moves;
mod code_step;
mod ends;
mod escalation;
mod examples;
mod observers;
mod tool_step;

use code_step::CodeSession;

use observers::{JuniorJudging, SeniorTokens};

pub use super::step::Approvals;

/// Everything a session is started with.
pub struct SessionSetup {
    pub config: Config,
    pub repo: PathBuf,
    pub task: String,
    pub session_id: String,
    pub approvals: Approvals,
    pub prompts: Prompts,
    pub watch: SessionJudge,
    pub junior: Client,
    pub senior: Client,
    /// Files laid over the tree right before the check (see [`crate::agent::overlay`]);
    /// empty but for `eval`.
    pub check_overlay: crate::agent::overlay::CheckOverlay,
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
        check_overlay,
    } = setup;
    // Commands the model runs never see the endpoints' API keys.
    let key_vars: Vec<String> = [&config.junior.api_key_env, &config.senior.api_key_env]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let workspace = Workspace::new(&repo_dir, &config.agent)
        .map_err(|e| SessionError::Workspace(repo_dir.clone(), e))?
        .hide_env(key_vars)
        .with_check_overlay(check_overlay);
    let repo = Repo::open(&repo_dir).ok().map(|mut r| {
        r.set_max_file_bytes(config.agent.max_write_mib.saturating_mul(1024 * 1024));
        std::sync::Mutex::new(r)
    });
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
    if let Some(message) = watch.calibration_mismatch(&config.junior) {
        emitter
            .emit(Event::Warning {
                kind: "calibration_mismatch".into(),
                message,
            })
            .await;
    }
    if let Some(note) = workspace.sandbox_note() {
        emitter
            .emit(Event::Warning {
                kind: "sandbox".into(),
                message: note,
            })
            .await;
    }
    let env = StepEnv {
        workspace: &workspace,
        repo: repo.as_ref(),
        session_id: &session_id,
        config: &config,
        approvals,
    };
    let start_checkpoint = step::checkpoint(&env, 0);
    // Under the `code` protocol the first message carries the files the task is about.
    let (opening, code) = if config.junior.tool_protocol.writes_code() {
        let brief = code_brief(&workspace, &config, &config.junior, &task, true);
        let code = CodeSession {
            targets: brief.targets,
            ..CodeSession::default()
        };
        (brief.message, Some(code))
    } else if config.senior.tool_protocol.writes_code() {
        (task.clone(), Some(CodeSession::default()))
    } else {
        (task.clone(), None)
    };
    let mut session = Session {
        inbox: Inbox::new(commands, emitter.clone(), config.policy.shadow),
        gate: Gate::new(config.policy.shadow, config.policy.cooldown_steps).with_exploration(
            Exploration::for_session(config.policy.explore, config.policy.explore_seed, &task),
        ),
        emitter,
        watch,
        env,
        task: &task,
        prompts: &prompts,
        junior: &junior,
        senior: &senior,
        step: 0,
        junior_history: vec![
            Message::system(prompts.junior.clone()),
            Message::user(opening),
        ],
        senior_history: None,
        senior_since: 0,
        senior_tokens: 0,
        progress: Progress::default(),
        senior_progress: Progress::default(),
        repairs: Repairs::new(config.agent.max_repairs),
        context: ContextFit::new(&config.junior),
        context_trimmed: false,
        ledger: HandoffLedger::default(),
        last_checkpoint: start_checkpoint.clone(),
        start_checkpoint,
        tried: None,
        stuck_why: None,
        failed_check_ruled: false,
        censored: false,
        barred: None,
        code,
        tests: TestRuns::default(),
    };
    let outcome = session.steps().await;
    Ok(session.finish(outcome).await)
}

/// The mutable state of a running session, owned by the loop alone.
struct Session<'a> {
    env: StepEnv<'a>,
    task: &'a str,
    prompts: &'a Prompts,
    junior: &'a Client,
    senior: &'a Client,
    emitter: Emitter,
    inbox: Inbox,
    watch: SessionJudge,
    gate: Gate,
    step: u32,
    junior_history: Vec<Message>,
    /// The senior's conversation while it is in charge.
    senior_history: Option<Vec<Message>>,
    /// The step the senior took over at: its steps count from here (`senior.max_steps`).
    senior_since: u32,
    /// Output tokens the senior wrote since it took over (`senior.token_budget`).
    senior_tokens: u64,
    /// The junior's moves, by work tree: a repeat is a step fact. Kept across a senior's
    /// step or an operator's answer: the same move on the same tree is no progress whoever
    /// acted in between (a senior that changed the tree makes every move new again).
    progress: Progress,
    /// The senior's moves while it is in charge (fresh at each takeover).
    senior_progress: Progress,
    /// Repair messages sent in a row.
    repairs: Repairs,
    /// The junior's history kept inside its context window.
    context: ContextFit,
    /// The first elision has been reported.
    context_trimmed: bool,
    ledger: HandoffLedger,
    start_checkpoint: Option<String>,
    last_checkpoint: Option<String>,
    /// After a restart: the junior's last tree (kept as `before-restart`), for the note's
    /// "what the junior changed".
    tried: Option<String>,
    /// Why the stuck rule last fired, for the note's reason.
    stuck_why: Option<String>,
    /// `policy.escalate_on_failed_check` acted (handed off, or logged in shadow): it acts on
    /// the first failed check of a session only.
    failed_check_ruled: bool,
    /// Control left the junior: its own outcome is not observed.
    censored: bool,
    /// The tool the last step called again on an unchanged tree: under a constrained
    /// protocol the next reply's schema leaves it out, so a small model that would sample
    /// the same call again must make another move (see [`Session::offered`]).
    barred: Option<String>,
    /// The junior or the senior writes code (`tool_protocol = "code"`): the targets, the
    /// last check, each seat's resampling state.
    code: Option<CodeSession>,
    /// The test runs the models made with `run`: what `check_failed` and `tests_fixed`
    /// are judged against under the tool protocols.
    tests: TestRuns,
}

/// The first message of a `code` session, and the body of a handoff note: the task, the
/// files it is about as they stand now, a map of the rest, within a third of the reader's
/// context window (4 bytes a token; 24 KiB when the window is unknown).
fn code_brief(
    workspace: &Workspace,
    config: &Config,
    reader: &crate::config::ModelConfig,
    task: &str,
    // False for the question writer: it reads the files but must not be told to write code.
    asks_for_code: bool,
) -> crate::code::brief::Brief {
    let paths = tools::files::repo_files(workspace, 2000);
    let protected = |p: &str| workspace.protected().contains(std::path::Path::new(p));
    let budget_bytes = reader
        .context_window
        .map_or(24 * 1024, |w| w as usize * 4 / 3);
    let input = crate::code::brief::BriefInput {
        task,
        check: config.agent.check.as_deref(),
        paths: &paths,
        protected: &protected,
        show_tests: config.agent.show_tests,
        budget_bytes,
        writes_code: asks_for_code && reader.tool_protocol.writes_code(),
        invite_questions: config.policy.junior_may_ask,
    };
    let read = |p: &str| tools::files::text_of(workspace, p);
    crate::code::brief::brief(&input, &read)
}

/// What the loop does next.
enum Next {
    Continue,
    End(Outcome),
}

/// The one `Escalated` event of a decision that did not hand off (a shadow crossing, or a
/// firing drawn to explore): the route a live hand-off would have taken, and the gate's
/// propensity when the decision was drawn. Token, step end and the stuck rule all log it so.
fn shadow_escalation(
    watch: &SessionJudge,
    gate: &Gate,
    step: u32,
    reason: EscalationReason,
    verdict: Verdict,
) -> Event {
    let propensity = (verdict == Verdict::Explored)
        .then(|| gate.propensity())
        .flatten();
    watch.escalated(step, watch.shadow_route(), reason, true, propensity)
}

/// What a resolved call leaves for the loop once the step is recorded.
enum After {
    Continue,
    End(Outcome),
    /// The operator deferred the junior's own question: the senior takes over.
    Senior,
}

impl<'a> Session<'a> {
    /// The endpoint `actor` is served by (borrowed for the session, not from `self`).
    fn client_of(&self, actor: Actor) -> &'a Client {
        match actor {
            Actor::Junior => self.junior,
            Actor::Senior => self.senior,
        }
    }
}

impl Session<'_> {
    fn config(&self) -> &Config {
        self.env.config
    }

    /// Why the loop should treat the model as stuck, if it should: the repair messages are
    /// spent (`usable`: what the replies lacked), or `on_tree` repeated moves reached
    /// `agent.stuck_after`.
    fn stuck_why(&self, repairs_spent: bool, on_tree: u32, usable: &str) -> Option<String> {
        let agent = &self.config().agent;
        if repairs_spent {
            Some(format!(
                "{} replies in a row without {usable} (agent.max_repairs = {})",
                agent.max_repairs + 1,
                agent.max_repairs
            ))
        } else if repeats::is_stuck(on_tree, agent.stuck_after) {
            Some(format!(
                "{on_tree} repeated moves with no change to the work tree (agent.stuck_after = {})",
                agent.stuck_after
            ))
        } else {
            None
        }
    }

    /// The senior's takeover budget: steps from the hand-off and output tokens, each its
    /// `[senior]` setting or, unset, the junior's `[agent]` one.
    fn senior_budget(&self) -> (u32, u64) {
        let (senior, agent) = (&self.config().senior, &self.config().agent);
        (
            senior.max_steps.unwrap_or(agent.max_steps),
            senior.token_budget.unwrap_or(agent.token_budget),
        )
    }

    /// The warning kind and message when whoever is in charge has used its budget.
    fn out_of_budget(&self) -> Option<(&'static str, String)> {
        let agent = &self.config().agent;
        if self.senior_history.is_some() {
            let (steps, tokens) = self.senior_budget();
            let taken = self.step - self.senior_since;
            if taken >= steps {
                let m = format!(
                    "the senior stopped after {taken} steps of its takeover (senior.max_steps)"
                );
                return Some(("max_steps", m));
            }
            if self.senior_tokens >= tokens {
                let m = format!("the senior used its takeover's token budget ({tokens} tokens)");
                return Some(("token_budget", m));
            }
            return None;
        }
        if self.step >= agent.max_steps {
            let m = format!("stopped after {} steps (agent.max_steps)", self.step);
            return Some(("max_steps", m));
        }
        let budget = agent.token_budget;
        (self.watch.tick() >= budget).then(|| {
            let m = format!("the junior used its token budget ({budget} tokens)");
            ("token_budget", m)
        })
    }

    /// Whether `actor` writes code blocks (`tool_protocol = "code"`) rather than calls.
    fn writes_code(&self, actor: Actor) -> bool {
        self.code.is_some() && self.client_of(actor).config().tool_protocol.writes_code()
    }

    fn progress_of(&mut self, actor: Actor) -> &mut Progress {
        match actor {
            Actor::Junior => &mut self.progress,
            Actor::Senior => &mut self.senior_progress,
        }
    }

    /// The step is over for the gate; what the resolved move left (an end, or the
    /// operator's deferral to the senior) decides what comes next, else `None` and the
    /// loop goes on to the judge's verdict and the stuck rule. Both protocols end a step so.
    async fn settle(&mut self, after: After) -> Option<Next> {
        self.gate.on_step_done();
        match after {
            After::End(outcome) => Some(Next::End(outcome)),
            After::Senior if self.senior_history.is_none() => {
                let reason = self.reason_words(EscalationReason::SelfAsk);
                self.hand_to_senior(&reason).await;
                Some(Next::Continue)
            }
            After::Senior => None,
            After::Continue => None,
        }
    }

    async fn warn(&self, kind: &str, message: String) {
        self.emitter
            .emit(Event::Warning {
                kind: kind.into(),
                message,
            })
            .await;
    }

    /// Steps until the session ends.
    async fn steps(&mut self) -> Outcome {
        let specs = tools::specs();
        if self.config().policy.ask_first
            && let Next::End(outcome) = self.escalate(EscalationReason::AtStart).await
        {
            return outcome;
        }
        loop {
            let config = self.config();
            let budget = config.agent.token_budget;
            if let Some(message) = self.out_of_budget() {
                self.warn(message.0, message.1).await;
                return self.ran_out().await;
            }
            if self.inbox.control().paused && self.inbox.wait(Waiting::Resume).await == Intent::Quit
            {
                return Outcome::Aborted;
            }
            if self.inbox.take_force() {
                if self.senior_history.is_some() {
                    self.force_ignored().await;
                } else {
                    match self.escalate(EscalationReason::Forced).await {
                        Next::Continue => continue,
                        Next::End(outcome) => return outcome,
                    }
                }
            }
            self.step += 1;
            let actor = if self.senior_history.is_some() {
                Actor::Senior
            } else {
                Actor::Junior
            };
            self.emitter
                .emit(Event::StepStarted {
                    step: self.step,
                    actor,
                    tick: self.watch.tick(),
                })
                .await;
            let (messages, sent_bytes) = match &self.senior_history {
                Some(h) => (h.clone(), None),
                None => self.fitted_junior_history().await,
            };
            let writes_code = self.writes_code(actor);
            let tools = if writes_code {
                Vec::new()
            } else {
                self.offered(actor, &specs).await
            };
            let req = ChatRequest { messages, tools };
            let tick_before = self.watch.tick();
            let end = match actor {
                Actor::Junior => {
                    let mut judging = JuniorJudging {
                        watch: &mut self.watch,
                        gate: &mut self.gate,
                        emitter: &self.emitter,
                        step: self.step,
                    };
                    let client = self
                        .code
                        .as_ref()
                        .and_then(|c| c.junior.resampler.as_ref())
                        .unwrap_or(self.junior);
                    let emitter = &self.emitter;
                    let left = budget.saturating_sub(judging.watch.tick());
                    let limit = TokenLimit::of(client, actor, Some(left));
                    let inbox = &mut self.inbox;
                    turn::stream_turn(emitter, inbox, client, actor, &req, &mut judging, limit)
                        .await
                }
                Actor::Senior => {
                    let left = self.senior_budget().1.saturating_sub(self.senior_tokens);
                    let mut tokens = SeniorTokens {
                        emitter: &self.emitter,
                        tick: self.watch.tick(),
                        count: &mut self.senior_tokens,
                    };
                    let client = self
                        .code
                        .as_ref()
                        .and_then(|c| c.senior.resampler.as_ref())
                        .unwrap_or(self.senior);
                    let emitter = &self.emitter;
                    let limit = TokenLimit::of(client, actor, Some(left));
                    let inbox = &mut self.inbox;
                    turn::stream_turn(emitter, inbox, client, actor, &req, &mut tokens, limit).await
                }
            };
            let next = match end {
                TurnEnd::Done {
                    text,
                    tool_calls,
                    problem,
                    prompt_tokens,
                } => {
                    if let (Some(bytes), Some(tokens)) = (sent_bytes, prompt_tokens)
                        && let Some(message) = self.context.reported(bytes, tokens)
                    {
                        self.warn("context_truncated", message).await;
                    }
                    if writes_code && actor == Actor::Junior {
                        let tokens = self.watch.tick().saturating_sub(tick_before);
                        match self.first_candidates(&req, text, tokens).await {
                            Ok(text) => self.code_step(actor, text).await,
                            Err(next) => next,
                        }
                    } else if writes_code {
                        self.code_step(actor, text).await
                    } else {
                        self.step_with(actor, text, tool_calls, problem).await
                    }
                }
                TurnEnd::Quit => Next::End(Outcome::Aborted),
                // The junior's endpoint is gone: hand off as a fault, not as evidence.
                TurnEnd::Failed if actor == Actor::Junior => {
                    self.escalate(EscalationReason::Fault).await
                }
                TurnEnd::Failed => Next::End(Outcome::Aborted),
                TurnEnd::Escalate(reason) => self.escalate(reason).await,
            };
            if let Next::End(outcome) = next {
                return outcome;
            }
        }
    }
}
