//! The run loop: terminal input, agent events, signals and a slow clock become one stream
//! of messages; the state changes in one place; frames are drawn on demand, coalesced.
//!
//! Frames are not drawn on a fixed fast tick: a burst of tokens marks the screen dirty,
//! and the loop draws at most once per [`FRAME`], after draining what has already
//! arrived (the codex-rs frame scheduler idea). An idle session draws once a second, for
//! the clock.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, EventStream};
use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use tokio::sync::mpsc::{Receiver, Sender};
use tokio::time::{Instant, MissedTickBehavior};

use super::TuiError;
use super::intent::{Action, ExitReason, UiOptions};
use super::state::AppState;
use super::terminal::TerminalGuard;
use super::ui;
use crate::protocol::{Command, Stamped};

/// Shortest time between two frames (about 60 per second).
pub const FRAME: Duration = Duration::from_millis(16);
/// Most events applied before a frame is allowed, so a flood cannot starve input.
const BATCH: usize = 4096;

/// Resolves when the program is asked to stop (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the UI then
/// returns [`ExitReason::Signal`], telling a running session to quit. The caller owns the
/// signals, so one mechanism stops every front end (and a second signal exits at once).
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs the UI in the terminal until the operator quits or `shutdown` resolves.
///
/// Events come from the agent loop (or a replay feeder); commands go back to it. The
/// terminal is restored however this returns. `shutdown` must be listening before this
/// is called, so a signal can never leave the terminal in raw mode.
pub async fn run(
    events: Receiver<Stamped>,
    commands: Sender<Command>,
    opts: UiOptions,
    shutdown: Shutdown,
) -> Result<ExitReason, TuiError> {
    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let result = drive(
        &mut terminal,
        EventStream::new(),
        events,
        commands,
        opts,
        AppState::new,
        shutdown,
    )
    .await;
    drop(guard);
    result
}

/// The loop behind [`run`], over any backend and input stream so tests can drive it with
/// ratatui's `TestBackend` and scripted keys. `init` builds the state from the options
/// (tests use it to set a counterfactual before the first event).
pub async fn drive<B, I, F>(
    terminal: &mut Terminal<B>,
    mut input: I,
    mut events: Receiver<Stamped>,
    commands: Sender<Command>,
    opts: UiOptions,
    init: F,
    shutdown: Shutdown,
) -> Result<ExitReason, TuiError>
where
    B: Backend,
    I: Stream<Item = io::Result<TermEvent>> + Unpin,
    F: FnOnce(&UiOptions) -> AppState,
{
    let mut state = init(&opts);
    let replay = opts.replay.clone();
    let mut shutdown = shutdown;
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut last_frame: Option<Instant> = None;
    let mut feed_open = true;
    let mut clock_base: Option<(Instant, u64)> = None;

    loop {
        if dirty && last_frame.is_none_or(|t| t.elapsed() >= FRAME) {
            terminal
                .draw(|f| ui::draw(f, &state))
                .map_err(|e| TuiError::Draw(e.to_string()))?;
            dirty = false;
            last_frame = Some(Instant::now());
        }
        let next_frame = last_frame.map_or_else(Instant::now, |t| t + FRAME);
        let actions: Vec<Action> = tokio::select! {
            biased;
            _ = &mut shutdown => {
                if state.running() && !state.replay {
                    let _ = commands.send(Command::Quit).await;
                }
                return Ok(ExitReason::Signal);
            }
            input_event = input.next() => match input_event {
                Some(Ok(TermEvent::Key(key))) => { dirty = true; state.handle_key(key) }
                Some(Ok(TermEvent::Resize(_, _))) => {
                    terminal.autoresize().map_err(|e| TuiError::Draw(e.to_string()))?;
                    dirty = true;
                    Vec::new()
                }
                Some(Ok(_)) => Vec::new(),
                Some(Err(e)) => return Err(TuiError::Io(e)),
                None => return Ok(ExitReason::InputClosed),
            },
            received = events.recv(), if feed_open => {
                match received {
                    Some(ev) => {
                        if matches!(ev.event, crate::protocol::Event::SessionStarted { .. }) {
                            clock_base = Some((Instant::now(), ev.t_ms));
                        }
                        state.apply(&ev);
                        let mut n = 1;
                        while n < BATCH {
                            match events.try_recv() {
                                Ok(ev) => { state.apply(&ev); n += 1; }
                                Err(_) => break,
                            }
                        }
                    }
                    None => { feed_open = false; state.close_feed(); }
                }
                dirty = true;
                Vec::new()
            }
            _ = clock.tick() => {
                if let Some((at, base)) = clock_base {
                    let before = state.ledger.elapsed_ms / 1000;
                    state.set_clock(base + at.elapsed().as_millis() as u64);
                    dirty |= state.ledger.elapsed_ms / 1000 != before;
                }
                Vec::new()
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => Vec::new(),
        };
        for action in actions {
            match action {
                // A session that is gone cannot be steered; the UI keeps showing what it has.
                Action::Agent(cmd) => send_without_blocking(&commands, cmd),
                Action::Replay(control) => {
                    if let Some(tx) = &replay {
                        send_without_blocking(tx, control);
                    }
                }
                Action::Exit(reason) => return Ok(reason),
            }
        }
    }
}

/// Sends an intent without ever blocking the UI: when the receiver's queue is full the
/// send finishes on its own task. A closed receiver means the session is gone and there
/// is nothing left to steer.
fn send_without_blocking<T: Send + 'static>(tx: &Sender<T>, value: T) {
    use tokio::sync::mpsc::error::TrySendError;
    if let Err(TrySendError::Full(value)) = tx.try_send(value) {
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(value).await;
        });
    }
}
