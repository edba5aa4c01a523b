//! Keys: the only place keys change the state, and the hints that describe them.
//!
//! Keys go to the top-most component first (help, quit confirmation, the question modal,
//! the approval prompt), then to the global keys, then to the transcript; the first one
//! that consumes a key ends its journey.

use crossterm::event::{KeyCode, KeyEvent};

use super::approval::ApprovalPrompt;
use super::intent::{Action, ExitReason, ReplayControl};
use super::keys::{KeyHint, KeyOutcome, hint, is_char, is_ctrl, is_press};
use super::question::QuestionModal;
use super::state::AppState;
use crate::protocol::Command;

impl AppState {
    /// Handles one key: the only place keys change the state.
    pub fn handle_key(&mut self, key: KeyEvent) -> Vec<Action> {
        if !is_press(&key) {
            return Vec::new();
        }
        if is_ctrl(&key, 'c') {
            return self.quit_now();
        }
        if self.show_help {
            if is_char(&key, '?') || is_char(&key, 'q') || key.code == KeyCode::Esc {
                self.show_help = false;
            }
            return Vec::new();
        }
        if self.confirm_quit {
            if is_char(&key, 'y') || is_char(&key, 'q') {
                return self.quit_now();
            }
            if is_char(&key, 'n') || key.code == KeyCode::Esc {
                self.confirm_quit = false;
            }
            return Vec::new();
        }
        if let Some(q) = self.question.as_mut().filter(|q| !q.hidden)
            && let KeyOutcome::Consumed(actions) = q.handle_key(&key)
        {
            if !actions.is_empty() {
                self.question = None;
                self.notice = Some("answer sent".into());
            }
            return actions;
        }
        if let Some(a) = self.approval.as_mut()
            && let KeyOutcome::Consumed(actions) = a.handle_key(&key)
        {
            // A scroll keeps the prompt; an answer closes it.
            if !actions.is_empty() {
                self.approval = None;
            }
            return actions;
        }
        if let Some(actions) = self.global_key(&key) {
            return actions;
        }
        match self.transcript.handle_key(&key) {
            KeyOutcome::Consumed(actions) => actions,
            KeyOutcome::Ignored => Vec::new(),
        }
    }

    fn quit_now(&mut self) -> Vec<Action> {
        self.confirm_quit = false;
        if self.running() && !self.replay {
            vec![Action::Agent(Command::Quit), Action::Exit(ExitReason::Quit)]
        } else {
            vec![Action::Exit(self.exit_reason())]
        }
    }

    fn exit_reason(&self) -> ExitReason {
        match self.ended {
            Some(outcome) => ExitReason::SessionEnded(outcome),
            None => ExitReason::Quit,
        }
    }

    /// Session and replay keys; `None` passes the key on.
    fn global_key(&mut self, key: &KeyEvent) -> Option<Vec<Action>> {
        if is_char(key, '?') {
            self.show_help = true;
            return Some(Vec::new());
        }
        if is_char(key, 'q') {
            if self.running() && !self.replay {
                self.confirm_quit = true;
                return Some(Vec::new());
            }
            return Some(vec![Action::Exit(self.exit_reason())]);
        }
        if self.replay {
            return self.replay_key(key);
        }
        if is_char(key, 'a') {
            if let Some(q) = self.question.as_mut() {
                q.hidden = false;
            }
            return Some(Vec::new());
        }
        if !self.running() {
            return None;
        }
        // Pause and shadow change when the session says so (`ControlChanged`), not when the
        // key is pressed: the screen never shows a state the session is not in.
        if is_char(key, 'p') {
            let (cmd, notice) = if self.paused {
                (Command::Resume, "resume requested")
            } else {
                (Command::Pause, "pause requested")
            };
            self.notice = Some(notice.into());
            return Some(vec![Action::Agent(cmd)]);
        }
        if is_char(key, 'e') {
            self.notice = Some("escalation requested".into());
            return Some(vec![Action::Agent(Command::ForceEscalate)]);
        }
        if is_char(key, 's') {
            let on = !self.shadow;
            self.notice = Some(format!(
                "shadow {} requested",
                if on { "on" } else { "off" }
            ));
            return Some(vec![Action::Agent(Command::SetShadow { on })]);
        }
        None
    }

    fn replay_key(&mut self, key: &KeyEvent) -> Option<Vec<Action>> {
        let control = if is_char(key, 'p') {
            self.paused = !self.paused;
            if self.paused {
                ReplayControl::Pause
            } else {
                ReplayControl::Resume
            }
        } else if is_char(key, 'n') || key.code == KeyCode::Right {
            ReplayControl::StepEvent
        } else if is_char(key, ']') {
            ReplayControl::NextStep
        } else if is_char(key, '[') {
            ReplayControl::PreviousStep
        } else {
            return None;
        };
        Some(vec![Action::Replay(control)])
    }

    /// The session-wide keys that apply now.
    pub fn global_hints(&self) -> Vec<KeyHint> {
        let mut h = Vec::new();
        if self.replay {
            h.push(hint("p", if self.paused { "play" } else { "pause" }));
            h.push(hint("→/n", "next event"));
            h.push(hint("] [", "next/previous step"));
        } else if self.running() {
            h.push(hint("p", if self.paused { "resume" } else { "pause" }));
            h.push(hint("e", "escalate"));
            h.push(hint(
                "s",
                if self.shadow {
                    "shadow off"
                } else {
                    "shadow on"
                },
            ));
            if self.question.as_ref().is_some_and(|q| q.hidden) {
                h.push(hint("a", "answer the question"));
            }
        }
        h.push(hint("?", "help"));
        h.push(hint("q", "quit"));
        h
    }

    /// The hints of whatever has the keys now, for the status bar.
    pub fn hints(&self) -> Vec<KeyHint> {
        if self.show_help {
            return vec![hint("?/Esc", "close help")];
        }
        if self.confirm_quit {
            return vec![
                hint("y", "quit and stop the session"),
                hint("n/Esc", "stay"),
            ];
        }
        if let Some(q) = self.question.as_ref().filter(|q| !q.hidden) {
            return q.hints();
        }
        let mut h = Vec::new();
        if let Some(a) = &self.approval {
            h.extend(a.hints());
        }
        h.extend(self.global_hints());
        h.extend(self.transcript.hints());
        h
    }

    /// Every component's keys, for the help overlay.
    pub fn help_sections(&self) -> Vec<(&'static str, Vec<KeyHint>)> {
        let sample = QuestionModal::new(0, String::new(), vec![String::new()], None, false);
        let approval = ApprovalPrompt::new(String::new(), String::new(), String::new(), Vec::new());
        let mut global = self.global_hints();
        global.push(hint("Ctrl-C", "quit now"));
        vec![
            (if self.replay { "Replay" } else { "Session" }, global),
            ("Transcript", self.transcript.hints()),
            ("Operator question", sample.hints()),
            ("Approval", approval.hints()),
        ]
    }
}
