//! The run loop end to end over ratatui's TestBackend: events in, keys in, commands and
//! the exit reason out.
//!
//! The loop and the test share one current-thread runtime and nothing waits on real I/O,
//! so a short sleep lets the loop drain everything sent so far before the next input.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures::channel::mpsc::{UnboundedSender, unbounded};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::fixture;
use super::intent::{ExitReason, ReplayControl, UiOptions};
use super::run::drive;
use super::state::AppState;
use crate::protocol::{Command, Outcome, Stamped};

type Keys = UnboundedSender<io::Result<TermEvent>>;

/// TestBackend that counts frames (one flush per `Terminal::draw`).
struct Counting {
    inner: TestBackend,
    frames: Arc<AtomicUsize>,
}

impl Backend for Counting {
    type Error = Infallible;
    fn draw<'a, I>(&mut self, content: I) -> Result<(), Infallible>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Infallible> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Infallible> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Infallible> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> Result<(), Infallible> {
        self.inner.set_cursor_position(p)
    }
    fn clear(&mut self) -> Result<(), Infallible> {
        self.inner.clear()
    }
    fn clear_region(&mut self, t: ClearType) -> Result<(), Infallible> {
        self.inner.clear_region(t)
    }
    fn size(&self) -> Result<Size, Infallible> {
        self.inner.size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Infallible> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> Result<(), Infallible> {
        self.frames.fetch_add(1, Ordering::SeqCst);
        self.inner.flush()
    }
}

struct Harness {
    keys: Keys,
    events: mpsc::Sender<Stamped>,
    commands: mpsc::Receiver<Command>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    ui: JoinHandle<(Result<ExitReason, super::TuiError>, String)>,
    frames: Arc<AtomicUsize>,
}

fn start(opts: UiOptions) -> Harness {
    let (keys, input) = unbounded();
    let (events_tx, events_rx) = mpsc::channel(1024);
    let (cmd_tx, cmd_rx) = mpsc::channel(16);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let shutdown: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
        let _ = stop_rx.await;
    });
    let frames = Arc::new(AtomicUsize::new(0));
    let backend = Counting {
        inner: TestBackend::new(80, 24),
        frames: frames.clone(),
    };
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(backend).expect("terminal");
        let result = drive(
            &mut terminal,
            input,
            events_rx,
            cmd_tx,
            opts,
            AppState::new,
            shutdown,
        )
        .await;
        (result, terminal.backend().inner.to_string())
    });
    Harness {
        keys,
        events: events_tx,
        commands: cmd_rx,
        stop: Some(stop_tx),
        ui,
        frames,
    }
}

async fn settle() {
    tokio::time::sleep(Duration::from_millis(40)).await;
}

fn press(keys: &Keys, code: KeyCode) {
    let _ = keys.unbounded_send(Ok(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))));
}

async fn send_all(h: &Harness, events: &[Stamped]) {
    for e in events {
        h.events.send(e.clone()).await.expect("ui receives events");
    }
    settle().await;
}

#[tokio::test]
async fn a_session_is_answered_and_closed_from_the_keyboard() {
    let mut h = start(UiOptions::default());
    let full = fixture::full().events;
    let asked = fixture::until_question().events.len();
    send_all(&h, &full[..asked]).await;
    press(&h.keys, KeyCode::Char('2'));
    press(&h.keys, KeyCode::Enter);
    settle().await;
    assert_eq!(
        h.commands.try_recv().ok(),
        Some(Command::Answer {
            answer: "No, ISO only".into(),
            needed: Some(true)
        })
    );
    send_all(&h, &full[asked..]).await;
    press(&h.keys, KeyCode::Char('q'));
    let (result, screen) = h.ui.await.expect("ui task");
    assert_eq!(
        result.expect("ui ran"),
        ExitReason::SessionEnded(Outcome::Success)
    );
    assert!(screen.contains("ENDED success"), "{screen}");
    assert!(screen.contains("B_t 0."), "{screen}");
}

#[tokio::test]
async fn a_signal_stops_the_session_and_returns() {
    let mut h = start(UiOptions::default());
    send_all(&h, &fixture::until_question().events[..4]).await;
    if let Some(stop) = h.stop.take() {
        let _ = stop.send(());
    }
    let (result, _) = h.ui.await.expect("ui task");
    assert_eq!(result.expect("ui ran"), ExitReason::Signal);
    assert_eq!(h.commands.try_recv().ok(), Some(Command::Quit));
}

#[tokio::test]
async fn closed_input_ends_the_ui() {
    let h = start(UiOptions::default());
    h.keys.close_channel();
    let (result, _) = h.ui.await.expect("ui task");
    assert_eq!(result.expect("ui ran"), ExitReason::InputClosed);
}

#[tokio::test]
async fn a_closed_feed_is_shown_and_the_ui_stays_until_quit() {
    let h = start(UiOptions::default());
    send_all(&h, &fixture::until_question().events[..4]).await;
    let Harness {
        keys, events, ui, ..
    } = h;
    drop(events);
    settle().await;
    assert!(!ui.is_finished());
    press(&keys, KeyCode::Char('q'));
    let (result, screen) = ui.await.expect("ui task");
    assert_eq!(
        result.expect("ui ran"),
        ExitReason::Quit,
        "no confirmation: nothing runs"
    );
    assert!(screen.contains("event stream closed"), "{screen}");
}

#[tokio::test]
async fn replay_keys_reach_the_feeder() {
    let (tx, mut rx) = mpsc::channel(8);
    let h = start(UiOptions {
        replay: Some(tx),
        ..UiOptions::default()
    });
    send_all(&h, &fixture::until_question().events).await;
    for code in [
        KeyCode::Char('p'),
        KeyCode::Right,
        KeyCode::Char(']'),
        KeyCode::Char('['),
    ] {
        press(&h.keys, code);
    }
    settle().await;
    let mut got = Vec::new();
    while let Ok(c) = rx.try_recv() {
        got.push(c);
    }
    assert_eq!(
        got,
        vec![
            ReplayControl::Pause,
            ReplayControl::StepEvent,
            ReplayControl::NextStep,
            ReplayControl::PreviousStep
        ]
    );
    press(&h.keys, KeyCode::Char('q'));
    let (result, _) = h.ui.await.expect("ui task");
    assert_eq!(result.expect("ui ran"), ExitReason::Quit);
}

#[tokio::test]
async fn a_flood_of_events_is_drawn_in_few_frames() {
    // 20k events arrive at once; the loop applies them in batches and draws far fewer
    // frames than events, then shows the last state.
    let h = start(UiOptions::default());
    let mut s = fixture::Script::new();
    s.start();
    s.step_start(1, crate::protocol::Actor::Junior);
    for _ in 0..1000 {
        s.junior_says(&[("tok ", -0.3); 10]);
    }
    let t0 = Instant::now();
    let before = h.frames.load(Ordering::SeqCst);
    send_all(&h, &s.events).await;
    let took = t0.elapsed();
    let frames = h.frames.load(Ordering::SeqCst) - before;
    assert!(
        frames * 20 < s.events.len(),
        "{frames} frames for {} events",
        s.events.len()
    );
    press(&h.keys, KeyCode::Char('q'));
    press(&h.keys, KeyCode::Char('y'));
    let (result, screen) = h.ui.await.expect("ui task");
    assert_eq!(result.expect("ui ran"), ExitReason::Quit);
    assert!(
        screen.contains(&format!("{}", s.tick)),
        "x axis ends at the last tick"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}
