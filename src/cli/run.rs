//! `handoff run`: one session in the terminal UI; exits as the session ended, or 3 when
//! the UI was left before it did.

use anyhow::Context;

use super::args::{Globals, SessionArgs};
use super::output::block_on;
use crate::exit::Exit;
use crate::tui::intent::ExitReason;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    session: SessionArgs,
}

pub fn run(args: Args, globals: &Globals) -> anyhow::Result<Exit> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        eprintln!("handoff: run needs a terminal; for a session without one use `handoff exec`");
        return Ok(Exit::Usage);
    }
    let mut config = globals.load()?;
    config.policy.shadow |= args.session.shadow;
    let task = args.session.task_text()?;
    let session = args.session;
    let (left, log) = block_on(async {
        let prepared = crate::app::wiring::prepare(
            config,
            &session.repo,
            &task,
            crate::agent::session::Approvals::Interactive,
            session.log.log,
        )
        .map_err(super::exec::session_error)?;
        let log = prepared.log_path.clone();
        let left = crate::app::interactive::run_tui(prepared, None).await?;
        Ok::<_, anyhow::Error>((left, log))
    })?
    .context("running the session")?;
    // The terminal is restored: what the session did, and how to see or undo it.
    // After SIGHUP the terminal is gone: a failed write must not turn the abort into a panic.
    {
        use std::io::Write as _;
        let mut err = std::io::stderr();
        let _ = match &left.summary {
            Some(summary) => write!(err, "{}", crate::app::present::summary_text(summary)),
            None => writeln!(err, "session log: {}", log.display()),
        };
    }
    let reason = left.reason;
    // Leaving before the session ended (quit, a signal, stdin closed) is an abort: the
    // work has no result a script could use. A session whose command changed git metadata
    // exits 5 either way, once the summary knows it (`crate::exit`).
    let repaired = left
        .summary
        .as_ref()
        .map_or(0, |s| s.git_repaired + s.checkpoint_failed);
    Ok(match reason {
        ExitReason::SessionEnded(outcome) => Exit::for_session(outcome, repaired),
        ExitReason::Quit | ExitReason::Signal | ExitReason::InputClosed => {
            Exit::for_session(crate::protocol::Outcome::Aborted, repaired)
        }
    })
}
