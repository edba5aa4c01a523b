//! Stopping any front end (`exec`, `eval`, `run`, `replay`, the demo) on SIGINT, SIGTERM,
//! SIGHUP or SIGQUIT (whose default, a core dump, would leave the terminal raw and the log
//! without its end).
//!
//! A signal does not end the process: it asks each running session to quit through the
//! session's own command inbox (`Command::Quit`), the same path the TUI's `q` takes (the
//! TUI gets the request as its shutdown future and sends the `Quit` itself). The session,
//! the one owner of its state, stops what runs (a `run` command's whole tree is killed at
//! once), logs `session_ended` with outcome `aborted` and returns; the front end writes
//! what it has and exits 3 ([`crate::exit::Exit::Aborted`], not the shell's
//! 128+signal: the session did end, as an abort, and its log is complete).
//!
//! A second signal is the way out of a session that cannot stop (a TUI blocked writing to
//! a terminal that takes no output; a request that hangs before its first byte is not one,
//! the turn reads the inbox while the request opens): every
//! command tree handoff started is killed, and the process exits 3 at once, with the log
//! cut where it was.

use tokio::sync::{mpsc, watch};

use crate::protocol::Command;

/// How long the second signal's exit waits for the terminal to be given back.
const LAST_WORDS: std::time::Duration = std::time::Duration::from_millis(500);

/// The signal that asked for the stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
    Quit,
}

impl StopSignal {
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Hangup => "SIGHUP",
            StopSignal::Quit => "SIGQUIT",
        }
    }
}

/// A request to stop, shared by everything that runs sessions; cheap to clone.
#[derive(Debug, Clone)]
pub struct Stop {
    rx: watch::Receiver<Option<StopSignal>>,
}

impl Stop {
    /// A stop that is never requested (library callers and tests that own no signals).
    pub fn never() -> Stop {
        let (_tx, rx) = watch::channel(None);
        Stop { rx }
    }

    /// A stop requested by the first SIGINT, SIGTERM, SIGHUP or SIGQUIT; the second one kills every
    /// command tree and exits. Installs the handlers (they replace the default, which
    /// would kill handoff mid-write), so it must run inside the runtime.
    pub fn on_signals() -> std::io::Result<Stop> {
        Stop::on_signals_then(|| {})
    }

    /// [`Stop::on_signals`], with `before_exit` run first when the second signal exits: the
    /// TUI gives the terminal back there, since the exit runs no destructor and the second
    /// signal may come before the UI has returned.
    pub fn on_signals_then(before_exit: fn()) -> std::io::Result<Stop> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        let mut quit = signal(SignalKind::quit())?;
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let first = next([&mut int, &mut term, &mut hup, &mut quit]).await;
            let _ = tx.send(Some(first));
            // After SIGHUP the terminal may be gone, and a terminal that takes no output
            // blocks a write: what is said goes through its own thread, so nothing here
            // waits on the terminal before the second signal can be read.
            let text = format!(
                "{}: stopping (a running command is killed; a second signal exits at once)",
                first.name()
            );
            std::thread::spawn(move || note(&text));
            let second = next([&mut int, &mut term, &mut hup, &mut quit]).await;
            crate::agent::proctree::kill_every_command();
            let text = format!(
                "second signal ({}): exiting without waiting for the session",
                second.name()
            );
            let (said, heard) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                before_exit();
                note(&text);
                let _ = said.send(());
            });
            // Giving the terminal back gets a moment, not a veto over the exit.
            let _ = heard.recv_timeout(LAST_WORDS);
            std::process::exit(i32::from(crate::exit::Exit::Aborted.code()));
        });
        Ok(Stop { rx })
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        self.rx.borrow().is_some()
    }

    /// Runs `session` to its end. When a stop is requested first, `Command::Quit` goes to
    /// the session's inbox through `commands`, and the session still ends its own way
    /// (logging `session_ended: aborted`): there is one ending path, the session's.
    pub async fn quitting<T>(
        &self,
        commands: &mpsc::Sender<Command>,
        session: impl std::future::Future<Output = T>,
    ) -> T {
        let mut session = std::pin::pin!(session);
        tokio::select! {
            ended = &mut session => return ended,
            _ = self.requested() => {}
        }
        // A full or closed inbox: the session is ending or gone already.
        let _ = commands.send(Command::Quit).await;
        session.await
    }

    /// [`Stop::requested`] as an owned future, for a front end that takes one (the TUI).
    pub fn shutdown(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let stop = self.clone();
        Box::pin(async move {
            stop.requested().await;
        })
    }

    /// Resolves when a stop is requested (never, for [`Stop::never`]).
    pub async fn requested(&self) -> StopSignal {
        let mut rx = self.rx.clone();
        let got: Option<StopSignal> = rx.wait_for(Option::is_some).await.ok().and_then(|s| *s);
        match got {
            Some(signal) => signal,
            // The sender is gone without a request: none will come.
            None => std::future::pending().await,
        }
    }
}

/// One line on stderr, if stderr still takes it.
fn note(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "handoff: {text}");
}

/// The next of the four signals (in the order of [`Stop::on_signals_then`]'s handlers).
async fn next(signals: [&mut tokio::signal::unix::Signal; 4]) -> StopSignal {
    let [int, term, hup, quit] = signals;
    tokio::select! {
        _ = int.recv() => StopSignal::Interrupt,
        _ = term.recv() => StopSignal::Terminate,
        _ = hup.recv() => StopSignal::Hangup,
        _ = quit.recv() => StopSignal::Quit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_that_is_never_requested_stays_pending() {
        let stop = Stop::never();
        assert!(!stop.is_requested());
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), stop.requested()).await;
        assert!(waited.is_err());
    }
}
