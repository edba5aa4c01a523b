//! `handoff run`: one session in the terminal UI; exits as the session ended, or 3 when
//! the UI was left before it did.

use anyhow::Context;

use super::args::{ConfigArg, SessionArgs};
use super::output::runtime;
use crate::exit::Exit;
use crate::tui::intent::ExitReason;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    config: ConfigArg,
    #[command(flatten)]
    session: SessionArgs,
}

pub fn run(args: Args) -> anyhow::Result<Exit> {
    let mut config = args.config.load()?;
    config.policy.shadow |= args.session.shadow;
    let session = args.session;
    let (reason, log) = runtime()?
        .block_on(async {
            let prepared = crate::app::wiring::prepare(
                config,
                &session.repo,
                &session.task,
                crate::agent::session::Approvals::Interactive,
                session.log.log,
            )?;
            let log = prepared.log_path.clone();
            let reason = crate::app::interactive::run_tui(prepared, None).await?;
            Ok::<_, anyhow::Error>((reason, log))
        })
        .context("running the session")?;
    eprintln!("session log: {}", log.display());
    // Leaving before the session ended (quit, a signal, stdin closed) is an abort: the
    // work has no result a script could use.
    Ok(match reason {
        ExitReason::SessionEnded(outcome) => Exit::for_outcome(outcome),
        ExitReason::Quit | ExitReason::Signal | ExitReason::InputClosed => Exit::Aborted,
    })
}
