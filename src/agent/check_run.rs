//! The check (`agent.check`): run once on the tree as the model left it, watched as `run`
//! is, and logged as `check_ran`; its result is the session's label. Split from the step's
//! tools so each file has one job.

use super::emitter::Emitter;
use super::inbox::Inbox;
use super::step::StepEnv;
use super::tools::run::{GitGuard, run_shell};
use crate::protocol::{Event, Outcome};

/// Runs `agent.check` and turns its exit status into the session's label.
///
/// The protected files are put back first, whatever happened before, so the check judges
/// the code against the tests as they were at the start; if one cannot be put back, the
/// check does not run and the session is a failure (a pass could not be trusted). A quit
/// while the check runs kills it and ends the session `aborted`, without a `check_ran`.
pub(crate) async fn run_check(
    env: &StepEnv<'_>,
    emitter: &Emitter,
    inbox: &mut Inbox,
    step: u32,
) -> Outcome {
    if env.config.agent.check.is_none() {
        return Outcome::Unlabelled;
    }
    match check_once(env, emitter, inbox, step, false).await {
        None => Outcome::Aborted,
        Some(r) if r.passed => Outcome::Success,
        Some(_) => Outcome::Failure,
    }
}

/// What one run of `agent.check` said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckResult {
    pub command: String,
    pub exit_code: Option<i32>,
    pub passed: bool,
    /// The output as the log keeps it (the label's evidence, for people).
    pub output_tail: String,
    /// The check's tests are hidden (a suite's `hidden =` files, laid only while it runs):
    /// a grading check is a label, so no model is shown a line of what it printed.
    pub hidden: bool,
}

/// What a model is shown in place of a hidden check's output.
pub(crate) const HIDDEN_OUTPUT: &str =
    "(the check's tests are hidden: what they printed is not shown)";

impl CheckResult {
    /// The output a model may read: the tail of a visible check (the user's own test is
    /// the best evidence there is), nothing of a hidden one.
    pub fn output_for_models(&self) -> &str {
        if self.hidden {
            HIDDEN_OUTPUT
        } else {
            &self.output_tail
        }
    }
}

/// Runs `agent.check` once and logs `check_ran`; `None` when there is no check or the
/// operator quit while it ran. `briefly`: the check's hidden files are taken out of the
/// tree again afterwards (a check in the middle of a session, under the `code` protocol).
pub(crate) async fn check_once(
    env: &StepEnv<'_>,
    emitter: &Emitter,
    inbox: &mut Inbox,
    step: u32,
    briefly: bool,
) -> Option<CheckResult> {
    let command = env.config.agent.check.clone()?;
    let restored = env.workspace.restore_protected();
    if !restored.is_empty() {
        emitter
            .emit(Event::ProtectedTouched {
                step,
                refused: Vec::new(),
                restored: restored.restored,
                unrestored: restored.failed.clone(),
                git: Vec::new(),
            })
            .await;
    }
    // Only now, after the model's last action, do the check's hidden files reach the tree.
    let (unlaid, saved) = if briefly {
        env.workspace.lay_check_overlay_briefly()
    } else {
        (env.workspace.lay_check_overlay(), Vec::new())
    };
    let (exit_code, output_tail, passed) = if !unlaid.is_empty() {
        let why = format!(
            "not run: the check's files could not be written: {}",
            unlaid.join("; ")
        );
        (None, why, false)
    } else if restored.failed.is_empty() {
        let spec = env.workspace.check_command(&command);
        // The check runs the model's code (a test it added), so it is watched as `run` is:
        // git metadata it plants is removed, the check fails and the session exits 5.
        let guard = GitGuard::start(env.workspace);
        let ran = inbox.unless_quit(run_shell(&spec)).await;
        let found = guard.finish(env.workspace).lines();
        if !found.is_empty() {
            emitter
                .emit(Event::ProtectedTouched {
                    step,
                    refused: Vec::new(),
                    restored: Vec::new(),
                    unrestored: Vec::new(),
                    git: found.clone(),
                })
                .await;
        }
        let breach = |tail: &str| {
            format!(
                "error: the check changed git metadata, which it must not do (not passed): {}\n{tail}",
                found.join("; ")
            )
        };
        match ran {
            None => {
                env.workspace.lift_check_overlay(saved);
                return None;
            }
            Some(Ok(r)) if found.is_empty() => (r.exit_code, r.output_tail.clone(), r.success()),
            Some(Ok(r)) => (r.exit_code, breach(&r.output_tail), false),
            Some(Err(e)) => (None, e.to_string(), false),
        }
    } else {
        let why = format!(
            "not run: protected files could not be put back: {}",
            restored.failed.join("; ")
        );
        (None, why, false)
    };
    env.workspace.lift_check_overlay(saved);
    emitter
        .emit(Event::CheckRan {
            command: command.clone(),
            exit_code,
            passed,
            output_tail: output_tail.clone(),
        })
        .await;
    Some(CheckResult {
        hidden: env.workspace.has_check_overlay(),
        command,
        exit_code,
        passed,
        output_tail,
    })
}
