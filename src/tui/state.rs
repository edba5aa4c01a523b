//! The UI's whole state and the only two ways it changes: [`AppState::apply`] for events
//! (here) and [`AppState::handle_key`] for keys (in `input.rs`).

use super::approval::ApprovalPrompt;
use super::competence::{Competence, Counterfactual};
use super::intent::UiOptions;
use super::question::QuestionModal;
use super::status::Ledger;
use super::steps::Steps;
use super::text::{TLine, Tone};
use super::transcript::{ToolEntry, Transcript};
use crate::protocol::{Actor, Event, Outcome, Route, Stamped};

/// What `SessionStarted` said about the session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub task: String,
    pub junior_model: String,
    pub senior_model: String,
}

/// Everything the screen shows.
#[derive(Debug, Clone)]
pub struct AppState {
    pub banner: Option<String>,
    pub log_path: Option<String>,
    /// Fed from a log: keys steer the feeder, not a session.
    pub replay: bool,
    pub session: Option<SessionInfo>,
    pub ended: Option<Outcome>,
    pub paused: bool,
    pub shadow: bool,
    pub transcript: Transcript,
    pub competence: Competence,
    pub steps: Steps,
    pub ledger: Ledger,
    pub question: Option<QuestionModal>,
    pub approval: Option<ApprovalPrompt>,
    pub show_help: bool,
    pub confirm_quit: bool,
    /// The event stream ended (the producer is gone).
    pub feed_closed: bool,
    /// A short acknowledgement of the last intent, shown in the title bar.
    pub notice: Option<String>,
}

impl AppState {
    /// An empty screen waiting for `SessionStarted`.
    pub fn new(opts: &UiOptions) -> Self {
        let mut competence = Competence::default();
        competence.set_counterfactual(opts.counterfactual.clone());
        AppState {
            banner: opts.banner.clone(),
            log_path: opts.log_path.clone(),
            replay: opts.replay.is_some(),
            session: None,
            ended: None,
            paused: false,
            shadow: false,
            transcript: Transcript::default(),
            competence,
            steps: Steps::default(),
            ledger: Ledger::default(),
            question: None,
            approval: None,
            show_help: false,
            confirm_quit: false,
            feed_closed: false,
            notice: None,
        }
    }

    /// A session is under way and can still be steered.
    pub fn running(&self) -> bool {
        self.session.is_some() && self.ended.is_none() && !self.feed_closed
    }

    /// The models' names, for the steps list.
    pub fn models(&self) -> (&str, &str) {
        match &self.session {
            Some(s) => (&s.junior_model, &s.senior_model),
            None => ("junior", "senior"),
        }
    }

    /// Sets the counterfactual belief trace shown beside the logged one (replay).
    pub fn set_counterfactual(&mut self, cf: Option<Counterfactual>) {
        self.competence.set_counterfactual(cf);
    }

    /// Wall-clock time since the session started, from the run loop's slow clock; only a
    /// live, running session's clock moves (a replay's time is the log's).
    pub fn set_clock(&mut self, elapsed_ms: u64) {
        if self.running() && !self.replay {
            self.ledger.elapsed_ms = self.ledger.elapsed_ms.max(elapsed_ms);
        }
    }

    /// The producer went away.
    pub fn close_feed(&mut self) {
        if !self.feed_closed {
            self.feed_closed = true;
            self.question = None;
            self.approval = None;
            let what = if self.ended.is_some() {
                "end of the event stream"
            } else {
                "the event stream closed before the session ended"
            };
            self.transcript
                .push_note(TLine::of(format!("■ {what}"), Tone::Dim));
        }
    }

    /// Applies one event: the only place events change the state.
    pub fn apply(&mut self, stamped: &Stamped) {
        self.ledger.elapsed_ms = self.ledger.elapsed_ms.max(stamped.t_ms);
        match &stamped.event {
            Event::SessionStarted {
                session_id,
                task,
                junior_model,
                senior_model,
                policy,
                shadow,
                ..
            } => {
                self.reset_session();
                self.ledger.elapsed_ms = stamped.t_ms;
                self.session = Some(SessionInfo {
                    session_id: session_id.clone(),
                    task: task.clone(),
                    junior_model: junior_model.clone(),
                    senior_model: senior_model.clone(),
                });
                self.shadow = *shadow;
                self.competence.policy = policy.clone();
                self.transcript.push_note(
                    TLine::of("session ", Tone::Dim)
                        .with(session_id, Tone::Dim)
                        .with(" · task: ", Tone::Dim)
                        .with(task, Tone::Text),
                );
            }
            Event::StepStarted { step, actor, .. } => {
                self.steps.start(*step, *actor);
                self.competence.on_step_start();
                self.transcript.push_note(TLine::of(
                    format!("── step {step} · {} ──", actor.name()),
                    Tone::Dim,
                ));
            }
            Event::Token {
                actor,
                text,
                logprob,
                ..
            } => self.transcript.push_token(*actor, text, *logprob),
            Event::BeliefUpdated {
                tick,
                belief,
                threshold,
                policy,
                terms,
                ..
            } => {
                if self.competence.policy != *policy {
                    self.competence.policy = policy.clone();
                }
                self.competence.on_belief(*tick, *belief, *threshold, terms);
            }
            Event::ToolCalled {
                step,
                actor,
                call_id,
                name,
                arguments,
            } => {
                let arguments = serde_json::to_string(arguments).unwrap_or_default();
                self.steps.row_mut(*step, *actor).tool = Some(name.clone());
                self.transcript.push_tool(ToolEntry {
                    step: *step,
                    actor: *actor,
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments,
                    approval: None,
                    result: None,
                });
            }
            Event::ApprovalRequested {
                call_id,
                name,
                summary,
                ..
            } => {
                if !self.replay {
                    let change = self
                        .transcript
                        .tool_mut(call_id)
                        .and_then(|t| {
                            // Whole: what is approved is shown, scrolled if long.
                            crate::tui::patchview::change_lines(name, &t.arguments, usize::MAX)
                        })
                        .unwrap_or_default();
                    self.approval = Some(ApprovalPrompt::new(
                        call_id.clone(),
                        name.clone(),
                        summary.clone(),
                        change,
                    ));
                }
            }
            Event::ApprovalDecided {
                call_id,
                approved,
                by,
                ..
            } => {
                self.close_approval(call_id);
                if let Some(t) = self.transcript.tool_mut(call_id) {
                    t.approval = Some((*approved, by.clone()));
                }
            }
            Event::ToolResulted {
                call_id,
                ok,
                output,
                ..
            } => {
                self.close_approval(call_id);
                if let Some(t) = self.transcript.tool_mut(call_id) {
                    t.result = Some((*ok, output.clone()));
                }
            }
            Event::StepEnded {
                step,
                actor,
                tick,
                tool,
                ok,
                belief,
                terms,
                ..
            } => {
                let row = self.steps.row_mut(*step, *actor);
                // A step the senior took over ends as the senior's.
                row.actor = *actor;
                row.ok = Some(*ok);
                row.belief = Some(*belief);
                if tool.is_some() {
                    row.tool = tool.clone();
                }
                self.competence.on_step_end(*tick, *belief, terms);
            }
            Event::Escalated { .. } => self.on_escalated(&stamped.event),
            Event::OperatorAsked {
                step,
                question,
                options,
                default_assumption,
                self_initiated,
                topic,
            } => {
                let mut line = TLine::of("? ", Tone::Question).with(question, Tone::Question);
                if !options.is_empty() {
                    line.push(&format!("  [{}]", options.join(" | ")), Tone::Dim);
                }
                self.transcript.push_note(line);
                if !self.replay {
                    self.question = Some(
                        QuestionModal::new(
                            *step,
                            question.clone(),
                            options.clone(),
                            default_assumption.clone(),
                            *self_initiated,
                        )
                        .about(topic.clone()),
                    );
                }
            }
            Event::OperatorAnswered {
                answer,
                needed,
                deferred_to_senior,
                ..
            } => {
                self.question = None;
                let mark = match needed {
                    Some(true) => " (needed)",
                    Some(false) => " (not needed)",
                    None => "",
                };
                let text = if *deferred_to_senior {
                    format!("↳ operator: let the senior decide{mark}")
                } else {
                    format!("↳ operator: {answer}{mark}")
                };
                self.transcript.push_note(TLine::of(text, Tone::Answer));
                self.ledger.route_now = deferred_to_senior.then_some(Route::Senior);
            }
            Event::SeniorTookOver {
                mode,
                context_chars,
                ..
            } => {
                self.ledger.route_now = Some(Route::Senior);
                self.transcript.push_note(TLine::of(
                    format!("⇄ senior takes over ({mode}), handoff context {context_chars} chars"),
                    Tone::Speaker(Actor::Senior),
                ));
            }
            Event::SeniorReturned { .. } => {
                self.ledger.route_now = None;
                self.transcript.push_note(TLine::of(
                    "⇄ control returns to the junior",
                    Tone::Speaker(Actor::Junior),
                ));
            }
            Event::CostIncurred {
                actor,
                model,
                input_tokens,
                output_tokens,
                usd,
                estimated,
            } => self.ledger.add_cost(
                *actor,
                model,
                input_tokens + output_tokens,
                *usd,
                *estimated,
            ),
            Event::CheckRan {
                command,
                exit_code,
                passed,
                ..
            } => {
                let line = if *passed {
                    TLine::of(format!("✓ check `{command}` passed"), Tone::Ok)
                } else {
                    let code =
                        exit_code.map_or("no exit code".to_string(), |c| format!("exit {c}"));
                    TLine::of(format!("✗ check `{command}` failed ({code})"), Tone::Err)
                };
                self.transcript.push_note(line);
            }
            Event::Fault {
                actor,
                kind,
                message,
                retryable,
                attempt,
            } => {
                let next = if *retryable { "retrying" } else { "giving up" };
                let text = if *attempt == 0 {
                    format!("! {} fault {kind}: {message}", actor.name())
                } else {
                    format!(
                        "! {} fault {kind}: {message} (attempt {attempt}, {next})",
                        actor.name()
                    )
                };
                self.transcript.push_note(TLine::of(text, Tone::Warn));
            }
            Event::ControlChanged { paused, shadow } => {
                self.paused = *paused;
                self.shadow = *shadow;
            }
            Event::ProtectedTouched {
                step,
                refused,
                restored,
                unrestored,
                git,
            } => {
                let mut parts = Vec::new();
                for (what, paths) in [
                    ("refused", refused),
                    ("put back", restored),
                    ("NOT put back", unrestored),
                    ("git metadata", git),
                ] {
                    if !paths.is_empty() {
                        parts.push(format!("{what} {}", paths.join(", ")));
                    }
                }
                let text = format!(
                    "! step {step} touched protected files: {}",
                    parts.join("; ")
                );
                self.transcript.push_note(TLine::of(text, Tone::Warn));
            }
            Event::Warning { kind, message } => self
                .transcript
                .push_note(TLine::of(format!("! {kind}: {message}"), Tone::Warn)),
            Event::SessionEnded {
                outcome,
                steps,
                ticks,
                usd,
                ..
            } => {
                self.ended = Some(*outcome);
                self.question = None;
                self.approval = None;
                self.confirm_quit = false;
                self.paused = false;
                let tone = match outcome {
                    Outcome::Success => Tone::Ok,
                    Outcome::Failure | Outcome::Aborted => Tone::Err,
                    Outcome::Unlabelled => Tone::Dim,
                };
                self.transcript.push_note(TLine::of(
                    format!(
                        "■ session ended: {} · {steps} steps · {ticks} ticks · ${usd:.4}",
                        outcome_name(*outcome)
                    ),
                    tone,
                ));
            }
        }
    }

    fn on_escalated(&mut self, event: &Event) {
        let &Event::Escalated {
            step,
            tick,
            route,
            reason,
            belief,
            threshold,
            ref why,
            shadow,
            ..
        } = event
        else {
            return;
        };
        self.competence
            .on_escalation(tick, belief, threshold, route, why);
        if let Some(row) = self.steps.rows.iter_mut().rev().find(|r| r.step == step) {
            row.escalated = true;
        }
        if shadow {
            self.ledger.escalations_shadow += 1;
        } else {
            match route {
                Route::Senior => self.ledger.escalations_senior += 1,
                Route::Operator => self.ledger.escalations_operator += 1,
            }
            self.ledger.route_now = Some(route);
        }
        let (route, reason) = (route.name(), reason.explain());
        let shadow = if shadow {
            " [shadow: not handed off]"
        } else {
            ""
        };
        self.transcript.push_note(TLine::of(
            format!("▼ escalate → {route}: {reason} (B_t {belief:.2}  τ_t {threshold:.2}){shadow}"),
            Tone::Escalation,
        ));
    }

    fn close_approval(&mut self, call_id: &str) {
        if self.approval.as_ref().is_some_and(|a| a.call_id == call_id) {
            self.approval = None;
        }
    }

    /// A new `SessionStarted` (a new session, or a replay seeking backwards) starts from a
    /// clean slate; the operator's view preferences and the counterfactual stay.
    fn reset_session(&mut self) {
        self.session = None;
        self.ended = None;
        self.paused = self.replay && self.paused;
        self.transcript.clear();
        self.competence.clear();
        self.steps.clear();
        self.ledger = Ledger::default();
        self.question = None;
        self.approval = None;
        self.confirm_quit = false;
        self.feed_closed = false;
        self.notice = None;
    }
}

/// The outcome's name as written in logs.
pub fn outcome_name(outcome: Outcome) -> &'static str {
    outcome.name()
}
