//! Sessions in the TUI (`handoff run`, `handoff demo`): the session, the log and the screen
//! as one producer and two consumers, with the screen's intents flowing back.

use tokio::sync::mpsc;

use super::stop::Stop;
use super::wiring::{Prepared, spawn_log};
use crate::agent::emitter::Emitter;
use crate::agent::session;
use crate::protocol::{Command, Stamped};
use crate::tui::{ExitReason, UiOptions};

#[derive(Debug, thiserror::Error)]
pub enum InteractiveError {
    #[error(transparent)]
    Ui(#[from] crate::tui::TuiError),
    /// Without the handlers a signal would kill handoff with the terminal in raw mode.
    #[error(
        "cannot take over SIGINT, SIGTERM, SIGHUP and SIGQUIT to stop the session cleanly: {0}"
    )]
    Signals(std::io::Error),
    #[error(transparent)]
    Session(#[from] session::SessionError),
}

/// How a TUI session ended: why the screen closed, and the session's summary (for the
/// text printed after the terminal is restored), when the session ended properly.
pub struct Left {
    pub reason: ExitReason,
    pub summary: Option<super::summary::Summary>,
}

/// Runs a prepared session under the TUI until the operator leaves it.
///
/// Quitting mid-session sends `Command::Quit`: the session ends as `aborted`, and the log is
/// flushed and closed before this returns, whatever the UI did. SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// are [`Stop::on_signals_then`]'s, as in `exec`: the first closes the UI and quits the
/// session, a second one exits at once.
pub async fn run_tui(prepared: Prepared, banner: Option<String>) -> Result<Left, InteractiveError> {
    let stop =
        Stop::on_signals_then(crate::tui::terminal::restore).map_err(InteractiveError::Signals)?;
    let Prepared {
        setup,
        log_path,
        log,
        no_checkpoints,
    } = prepared;
    // Outside git the title bar says so for the whole session: stderr is hidden by the UI.
    let banner = match (banner, no_checkpoints) {
        (Some(b), _) => Some(b),
        (None, Some(_)) => Some("no git repository: no checkpoints".to_string()),
        (None, None) => None,
    };
    let repo = setup.repo.clone();
    let (sum_tx, sum_rx) = mpsc::channel::<Stamped>(4096);
    let collector = tokio::spawn(super::summary::collect(sum_rx));
    let (log_tx, log_task) = spawn_log(log);
    let (ui_tx, ui_rx) = mpsc::channel::<Stamped>(4096);
    let (cmd_tx, cmd_rx) = mpsc::channel::<Command>(64);
    let opts = UiOptions {
        banner,
        log_path: Some(log_path.display().to_string()),
        replay: None,
        counterfactual: None,
    };
    let emitter = Emitter::new(vec![log_tx, ui_tx, sum_tx]);
    let session = tokio::spawn(session::run(setup, emitter, cmd_rx));
    let ui = crate::tui::run(ui_rx, cmd_tx.clone(), opts, stop.shutdown()).await;
    // Whatever ended the UI, the session must end too, so the log is complete.
    let _ = cmd_tx.send(Command::Quit).await;
    drop(cmd_tx);
    let ended = session.await;
    let log_warning = log_task.await.ok().flatten();
    if let Some(w) = log_warning {
        // The terminal may be gone (SIGHUP): a failed write is not worth a panic.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "handoff: warning: {w}");
    }
    let tally = collector.await.unwrap_or_default();
    let summary = match ended {
        Ok(Err(e)) => return Err(e.into()),
        Ok(Ok(end)) => Some(super::summary::Summary::new(&end, tally, &repo, &log_path)),
        Err(_) => None,
    };
    Ok(Left {
        reason: ui?,
        summary,
    })
}
