//! The one place a session reads the operator's commands.
//!
//! Whatever the session is waiting for — a junior stream, an approval, an answer, the end
//! of a pause or of a retry backoff — every command is handled the same way:
//!
//! - `Pause`, `Resume` and `SetShadow` change the control state at once and are answered by
//!   [`Event::ControlChanged`], so the screen shows what the session does and a replay knows
//!   where a shadow toggle took effect. A pause takes hold before the next step; a backoff
//!   still runs its full course.
//! - `ForceEscalate` hands the junior's work to the senior at the first moment the junior
//!   would act: it cuts the junior's stream, withdraws the junior's call from its approval,
//!   cuts a backoff of the junior's request, and turns a pending question into "let the
//!   senior decide". Anywhere else (paused, between steps) it waits for the junior's next
//!   turn; while the senior is in charge it is answered by a warning and dropped.
//! - `Answer`, `DeferToSenior` and `Approve` end the wait they belong to and mean nothing
//!   elsewhere (a stale one is dropped).
//! - `Quit`, or the command channel closing, ends every wait, and stops a tool or the
//!   check that is running ([`Inbox::unless_quit`]): the command's whole tree is killed
//!   at once, instead of the session waiting for it to end on its own.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::protocol::{Command, Event};

use super::emitter::Emitter;

/// The session's control state, as the operator set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Control {
    pub paused: bool,
    pub shadow: bool,
}

/// What the session is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting<'a> {
    /// A model's stream; `junior` when a forced escalation may cut it.
    Stream { junior: bool },
    /// The operator's yes or no to this call; `junior` when it is the junior's call.
    Approval { call_id: &'a str, junior: bool },
    /// The answer to the pending operator question.
    Answer,
    /// Paused between steps: until `Resume`.
    Resume,
    /// A retry backoff of a request; `junior` when it is the junior's request.
    Backoff { delay: Duration, junior: bool },
    /// A tool or the check is running: only `Quit` ends it (a forced escalation waits for
    /// the junior's next turn, as between steps).
    Running,
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intent {
    /// The wait is over: resumed, or the backoff elapsed.
    Go,
    Approved(bool),
    Answered {
        answer: String,
        needed: Option<bool>,
    },
    /// "Let the senior decide" (or a forced escalation during a question).
    Deferred,
    /// A forced escalation cut the junior's wait.
    Escalate,
    Quit,
}

/// The session's end of the command channel.
pub struct Inbox {
    commands: mpsc::Receiver<Command>,
    emitter: Emitter,
    control: Control,
    force: bool,
}

impl Inbox {
    pub fn new(commands: mpsc::Receiver<Command>, emitter: Emitter, shadow: bool) -> Inbox {
        Inbox {
            commands,
            emitter,
            control: Control {
                paused: false,
                shadow,
            },
            force: false,
        }
    }

    pub fn control(&self) -> Control {
        self.control
    }

    /// A `ForceEscalate` that arrived while nothing of the junior's could be cut; taking it
    /// clears it.
    pub fn take_force(&mut self) -> bool {
        std::mem::take(&mut self.force)
    }

    /// Waits for one command. Cancel-safe: use it in a `select!` and hand what it returns
    /// to [`Inbox::handle`] outside the `select!`.
    pub async fn recv(&mut self) -> Option<Command> {
        self.commands.recv().await
    }

    /// Waits until something ends `waiting` (for a backoff: its delay, unless a command
    /// ends it first).
    pub async fn wait(&mut self, waiting: Waiting<'_>) -> Intent {
        let deadline = match waiting {
            Waiting::Backoff { delay, .. } => Some(tokio::time::Instant::now() + delay),
            _ => None,
        };
        loop {
            let cmd = match deadline {
                Some(at) => tokio::select! {
                    _ = tokio::time::sleep_until(at) => return Intent::Go,
                    cmd = self.commands.recv() => cmd,
                },
                None => self.commands.recv().await,
            };
            if let Some(intent) = self.handle(cmd, waiting).await {
                return intent;
            }
        }
    }

    /// Runs `work` while reading commands as [`Waiting::Running`]; `None` when `Quit` (or
    /// the channel closing) came first, in which case `work` is dropped before this
    /// returns. Dropping a command's future kills its tree
    /// (`tools::run::run_shell`), so quitting never waits for a command.
    ///
    /// Commands are read with the cancel-safe [`Inbox::recv`] and handled outside the
    /// `select!`, so an acknowledgement is never cut half-way when `work` finishes.
    pub async fn unless_quit<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let mut work = std::pin::pin!(work);
        loop {
            let cmd = tokio::select! {
                done = &mut work => return Some(done),
                cmd = self.commands.recv() => cmd,
            };
            if self.handle(cmd, Waiting::Running).await == Some(Intent::Quit) {
                return None;
            }
        }
    }

    /// Applies one received command (`None`: the channel closed) in the context of
    /// `waiting`; `Some` when it ends that wait.
    pub async fn handle(&mut self, cmd: Option<Command>, waiting: Waiting<'_>) -> Option<Intent> {
        let junior = match waiting {
            Waiting::Stream { junior }
            | Waiting::Approval { junior, .. }
            | Waiting::Backoff { junior, .. } => junior,
            Waiting::Answer | Waiting::Resume | Waiting::Running => false,
        };
        match cmd {
            None | Some(Command::Quit) => Some(Intent::Quit),
            Some(Command::Pause) => {
                self.control.paused = true;
                self.acknowledge().await;
                None
            }
            Some(Command::Resume) => {
                self.control.paused = false;
                self.acknowledge().await;
                (waiting == Waiting::Resume).then_some(Intent::Go)
            }
            Some(Command::SetShadow { on }) => {
                self.control.shadow = on;
                self.acknowledge().await;
                None
            }
            Some(Command::ForceEscalate) if junior => Some(Intent::Escalate),
            Some(Command::ForceEscalate) if waiting == Waiting::Answer => Some(Intent::Deferred),
            Some(Command::ForceEscalate) => {
                self.force = true;
                None
            }
            Some(Command::Answer { answer, needed }) if waiting == Waiting::Answer => {
                Some(Intent::Answered { answer, needed })
            }
            Some(Command::DeferToSenior) if waiting == Waiting::Answer => Some(Intent::Deferred),
            Some(Command::Approve { call_id, approved }) => match waiting {
                Waiting::Approval {
                    call_id: pending, ..
                } if pending == call_id => Some(Intent::Approved(approved)),
                _ => None,
            },
            Some(Command::Answer { .. } | Command::DeferToSenior) => None,
        }
    }

    async fn acknowledge(&self) {
        self.emitter
            .emit(Event::ControlChanged {
                paused: self.control.paused,
                shadow: self.control.shadow,
            })
            .await;
    }
}
