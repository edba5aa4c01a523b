//! The producing end of the one event stream.
//!
//! The session is the only producer; each consumer (log writer, TUI, `--json` printer,
//! headless operator) gets its own bounded channel, so a slow consumer applies back-pressure
//! instead of growing memory, and a consumer that went away (the TUI after `q`) is skipped.

use std::time::Instant;

use tokio::sync::mpsc;

use crate::event::{Event, Stamped};

/// Sends every event, stamped with its time, to every sink.
#[derive(Clone)]
pub struct Emitter {
    start: Instant,
    sinks: Vec<mpsc::Sender<Stamped>>,
}

impl Emitter {
    pub fn new(sinks: Vec<mpsc::Sender<Stamped>>) -> Self {
        Emitter {
            start: Instant::now(),
            sinks,
        }
    }

    /// Milliseconds since the session started.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub async fn emit(&self, event: Event) {
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
}
