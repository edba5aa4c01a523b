//! The process exit codes, in one table, so scripts can tell the outcomes apart.
//!
//! | code | meaning | when |
//! | --- | --- | --- |
//! | 0 | success | the session's check passed, or it ended unlabelled (no check configured); `doctor` found every endpoint usable; `eval` ran every run without an error |
//! | 1 | check failed | the session's check failed (or the operator rejected the result); `doctor` found an endpoint unusable; `eval` had a run that errored |
//! | 2 | usage | the command line is wrong (clap's own code for it), or `run` has no terminal |
//! | 3 | aborted | the session stopped before a result: endpoints down, quit, interrupted, budget or steps exhausted; or any command stopped by an error that is not about its input |
//! | 4 | bad config or input | the config file, a log, a suite or another input cannot be used (missing, unreadable, invalid), or a file would be overwritten |
//! | 5 | repaired | the session ended (whatever its outcome), but a `run` command changed git metadata — the repository's `.git` where no read-only mount could be made, a `.git` or gitfile planted below the root, `skip-worktree`/`assume-unchanged` flags — and handoff undid it (or says what it could not undo); or a step's tree could not be checkpointed, so the summary and `handoff diff` cannot show what it changed: review the result before trusting it or running git |
//!
//! 1 and 3 differ because a script retries an abort (the server was down) but not a
//! failed check (the work is wrong). 2 stays clap's usage code, and a broken config gets
//! its own 4 instead of sharing 2, so "fix the command" and "fix the file" are distinct.
//! 5 takes precedence over 0, 1 and 3 for a session that ended: a repaired breach is
//! the one thing a script must not pass over, and it is only seen in the exit code. A
//! check that passed says nothing about a hook that was undone; a script that retries an
//! abort (3) would run the same hostile model again without anyone having looked. It
//! never meets 2 or 4: those stop a command before any session runs. A session whose
//! commands touched no git metadata keeps 0, 1 or 3, so legitimate sessions, `eval`
//! (which reports per run and keeps its own codes) and `demo` are unchanged. Changes to
//! `agent.protected` files are not a breach: they are put back and label the session
//! (honest labels), so they keep the outcome's code. The second signal's immediate exit
//! is 3 whatever happened: it exits without finishing the session.
//! An interrupt by a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) still ends a session as `aborted`
//! (3) once the session is closed and its log flushed, and an interrupted `eval` exits 3
//! too: not the shell's 128+n, because the process did not die of the signal, it ended
//! the session the way a quit does (`app::stop`), and a script that retries an
//! abort should retry it.

use crate::config::ConfigError;
use crate::infile::InputFileError;
use crate::protocol::Outcome;

/// Marks an error as the fault of an input the user gave (a suite, a log, a task file),
/// so it exits 4 like a broken config, not 3 like an interrupted run.
#[derive(Debug, thiserror::Error)]
#[error("{}", crate::chain::once(.0))]
pub struct BadInput(pub anyhow::Error);

/// Wraps any error as [`BadInput`]; for `map_err` at the place an input is read.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

/// Why the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    CheckFailed,
    Usage,
    Aborted,
    BadInput,
    Repaired,
}

impl Exit {
    /// Every code, in table order.
    pub const ALL: [Exit; 6] = [
        Exit::Success,
        Exit::CheckFailed,
        Exit::Usage,
        Exit::Aborted,
        Exit::BadInput,
        Exit::Repaired,
    ];

    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::CheckFailed => 1,
            Exit::Usage => 2,
            Exit::Aborted => 3,
            Exit::BadInput => 4,
            Exit::Repaired => 5,
        }
    }

    /// Lowercase name, as `--json` summaries print it.
    pub fn name(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::CheckFailed => "check_failed",
            Exit::Usage => "usage",
            Exit::Aborted => "aborted",
            Exit::BadInput => "bad_input",
            Exit::Repaired => "repaired",
        }
    }

    /// How a session exits (`exec`, `run`) that ended with `outcome` after `repaired`
    /// steps whose command changed git metadata that handoff then undid: 5 before the
    /// outcome's own code (see the module's table for why).
    pub fn for_session(outcome: Outcome, repaired: u32) -> Exit {
        if repaired > 0 {
            Exit::Repaired
        } else {
            Exit::for_outcome(outcome)
        }
    }

    /// How a session that ended with `outcome` exits, when no command changed git
    /// metadata.
    pub fn for_outcome(outcome: Outcome) -> Exit {
        match outcome {
            Outcome::Success | Outcome::Unlabelled => Exit::Success,
            Outcome::Failure => Exit::CheckFailed,
            Outcome::Aborted => Exit::Aborted,
        }
    }

    /// A command that stopped with an error: 4 when the error is about its config or
    /// another input, else 3.
    pub fn for_error(err: &anyhow::Error) -> Exit {
        let input = err
            .chain()
            .any(|c| c.is::<BadInput>() || c.is::<ConfigError>() || c.is::<InputFileError>());
        if input { Exit::BadInput } else { Exit::Aborted }
    }

    /// `doctor`: success only if every endpoint is usable.
    pub fn for_doctor(all_usable: bool) -> Exit {
        if all_usable {
            Exit::Success
        } else {
            Exit::CheckFailed
        }
    }

    /// `eval`: any run that errored (as opposed to finishing with a failed check, which
    /// is a result the eval measures) makes the eval fail.
    pub fn for_eval(runs_errored: usize) -> Exit {
        if runs_errored == 0 {
            Exit::Success
        } else {
            Exit::CheckFailed
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_follow_the_table() {
        let codes: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
        let table = include_str!("exit.rs");
        for e in Exit::ALL {
            assert!(
                table.contains(&format!("//! | {} | ", e.code())),
                "the doc table has no row for {}",
                e.name()
            );
        }
    }

    #[test]
    fn outcomes_map_to_what_a_script_should_do() {
        assert_eq!(Exit::for_outcome(Outcome::Success).code(), 0);
        assert_eq!(Exit::for_outcome(Outcome::Unlabelled).code(), 0);
        assert_eq!(Exit::for_outcome(Outcome::Failure).code(), 1);
        assert_eq!(Exit::for_outcome(Outcome::Aborted).code(), 3);
        assert_eq!(Exit::for_eval(0), Exit::Success);
        assert_eq!(Exit::for_eval(12), Exit::CheckFailed);
        assert_eq!(Exit::for_doctor(false).code(), 1);
    }

    #[test]
    fn a_repaired_breach_outranks_every_outcome_and_only_a_breach_gives_5() {
        for outcome in [
            Outcome::Success,
            Outcome::Unlabelled,
            Outcome::Failure,
            Outcome::Aborted,
        ] {
            assert_eq!(Exit::for_session(outcome, 1), Exit::Repaired);
            assert_eq!(Exit::for_session(outcome, 0), Exit::for_outcome(outcome));
        }
        assert_eq!(Exit::Repaired.code(), 5);
        assert_eq!(Exit::Repaired.name(), "repaired");
    }

    #[test]
    fn errors_about_inputs_exit_4_and_others_3() {
        let config: anyhow::Error = ConfigError::Exists("x.toml".into()).into();
        assert_eq!(Exit::for_error(&config.context("loading")), Exit::BadInput);
        let suite = bad_input(anyhow::anyhow!("suite.toml line 3: expected a check"));
        assert_eq!(
            Exit::for_error(&suite.context("reading the suite")),
            Exit::BadInput
        );
        let other = anyhow::anyhow!("the runtime could not start");
        assert_eq!(Exit::for_error(&other), Exit::Aborted);
    }
}
