//! The UI's whole state and the only two ways it changes: [`AppState::apply`] for events
//! (here, handing each event to the panels that own what it changes) and
//! [`AppState::handle_key`] for keys (in `input.rs`).

use super::approval::ApprovalPrompt;
use super::competence::{Competence, Counterfactual};
use super::intent::UiOptions;
use super::question::QuestionModal;
use super::status::Ledger;
use super::steps::Steps;
use super::text::{TLine, Tone};
use super::transcript::Transcript;
use crate::protocol::{Event, Outcome, Stamped};

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

    /// Applies one event: the only place events change the state. The session's own
    /// fields change here; then each panel takes the event and changes what it owns, so
    /// what an event does to a panel is read beside how the panel draws it.
    pub fn apply(&mut self, stamped: &Stamped) {
        let event = &stamped.event;
        match event {
            Event::SessionStarted { .. } => self.start_session(event),
            Event::ControlChanged { paused, shadow } => {
                self.paused = *paused;
                self.shadow = *shadow;
            }
            Event::SessionEnded { outcome, .. } => self.end_session(*outcome),
            _ => {}
        }
        self.ledger.apply(stamped);
        self.competence.apply(event);
        self.steps.apply(event);
        self.transcript.apply(event);
        self.apply_to_prompts(event);
    }

    /// The question and the approval prompt open on their requests, live only (a replay
    /// shows what was asked and decided in the transcript, and its keys steer the
    /// feeder), and close once the request is settled.
    fn apply_to_prompts(&mut self, event: &Event) {
        match event {
            Event::OperatorAsked { .. } if !self.replay => {
                self.question = QuestionModal::asked(event);
            }
            Event::OperatorAnswered { .. } => self.question = None,
            Event::ApprovalRequested { call_id, .. } if !self.replay => {
                let arguments = self
                    .transcript
                    .tool_mut(call_id)
                    .map(|t| t.arguments.as_str());
                self.approval = ApprovalPrompt::requested(event, arguments);
            }
            Event::ApprovalDecided { call_id, .. } | Event::ToolResulted { call_id, .. } => {
                self.close_approval(call_id);
            }
            _ => {}
        }
    }

    /// A session starts from a clean slate ([`Self::reset_session`]) and remembers what
    /// it is about; the panels take the rest of the event themselves.
    fn start_session(&mut self, event: &Event) {
        let Event::SessionStarted {
            session_id,
            task,
            junior_model,
            senior_model,
            shadow,
            ..
        } = event
        else {
            return;
        };
        self.reset_session();
        self.session = Some(SessionInfo {
            session_id: session_id.clone(),
            task: task.clone(),
            junior_model: junior_model.clone(),
            senior_model: senior_model.clone(),
        });
        self.shadow = *shadow;
    }

    /// Nothing is left to answer, approve or confirm once the session has ended.
    fn end_session(&mut self, outcome: Outcome) {
        self.ended = Some(outcome);
        self.question = None;
        self.approval = None;
        self.confirm_quit = false;
        self.paused = false;
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
