//! The producing end of the one event stream.
//!
//! The session is the only producer; each consumer (log writer, TUI, `--json` printer,
//! headless operator) gets its own bounded channel, so a slow consumer applies back-pressure
//! instead of growing memory, and a consumer that went away (the TUI after `q`) is skipped.
//!
//! Every event also goes through the same [`SessionFold`] that `report` runs over a log, so
//! what the session says about itself at its end (Ask-F1 counts, money) is that fold's
//! result by construction, not a second count.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;

use crate::event::{Event, Stamped};
use crate::trajectory::session::{SessionFold, SessionSummary};

/// Sends every event, stamped with its time, to every sink.
#[derive(Clone)]
pub struct Emitter {
    start: Instant,
    sinks: Vec<mpsc::Sender<Stamped>>,
    fold: Arc<Mutex<SessionFold>>,
}

impl Emitter {
    pub fn new(sinks: Vec<mpsc::Sender<Stamped>>) -> Self {
        Emitter {
            start: Instant::now(),
            sinks,
            fold: Arc::new(Mutex::new(SessionFold::new(""))),
        }
    }

    /// Milliseconds since the session started.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub async fn emit(&self, event: Event) {
        self.with_fold(|f| f.push(&event));
        let stamped = Stamped {
            t_ms: self.elapsed_ms(),
            event,
        };
        if let Some((last, rest)) = self.sinks.split_last() {
            for sink in rest {
                // A closed sink is a consumer that left; the session goes on without it.
                let _ = sink.send(stamped.clone()).await;
            }
            let _ = last.send(stamped).await;
        }
    }

    /// The summary `report` would make of the events emitted so far followed by `last`
    /// (which is not emitted).
    pub fn summary_with(&self, last: &Event) -> SessionSummary {
        let mut fold = self.with_fold(|f| f.clone());
        fold.push(last);
        fold.finish()
    }

    fn with_fold<T>(&self, f: impl FnOnce(&mut SessionFold) -> T) -> T {
        // A panic elsewhere while holding the lock leaves a valid fold behind; keep going.
        let mut guard = self.fold.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}
