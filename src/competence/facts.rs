//! Step facts with meaning: what a finished step says about the junior, decided from a plain
//! description of the step. Pure: the agent loop describes, this module decides.
//!
//! The rules, each fixing a way the old facts fired on normal work:
//! - a failing *test run* is not a failing *tool*: `tool_error` is raised for a test command
//!   only when it could not run at all (not found, not executable, killed, timed out);
//! - `check_failed` is raised when a `run` is the configured check command and fails;
//! - test counts are parsed from cargo test, pytest and unittest output, and a run with
//!   fewer failing tests than the previous test run (or passing after a failure) raises
//!   `tests_fixed`, the one fact that speaks for the junior;
//! - repetition is the loop's own rule ([`super::repeats`]): keyed on (tool, normalised
//!   arguments, tree hash), so re-running the tests after an edit is not a repeat;
//!   `repeated_action` carries how many earlier steps made the same move, and the second
//!   repeated move on an unchanged tree (of any kind: cycles count) is `stuck`;
//! - a step that tried to change a protected file (the check's tests) is
//!   `touched_protected`, logged only when present;
//! - a reply without a tool call is `no_tool_call`, one whose call cannot be read is
//!   `malformed_call` (both logged on every step, as the agent loop does);
//! - running tests changes no files by design, so a test run never counts as `no_diff`.

use super::repeats::{self, Move, Progress};
use crate::protocol::{Observation, SignalKind, StepFacts};

/// Tests passed and failed in one run (errors count as failed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestCounts {
    pub passed: u32,
    pub failed: u32,
}

fn number_before(text: &str, word: &str) -> Option<u32> {
    let i = text.find(word)?;
    text[..i]
        .split_whitespace()
        .last()?
        .trim_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

/// Counts from a cargo test log: the sum over its `test result:` lines (one per test binary).
fn cargo_counts(output: &str) -> Option<TestCounts> {
    let mut found = None;
    for line in output
        .lines()
        .filter(|l| l.trim_start().starts_with("test result:"))
    {
        let c = found.get_or_insert(TestCounts::default());
        c.passed += number_before(line, " passed").unwrap_or(0);
        c.failed += number_before(line, " failed").unwrap_or(0);
    }
    found
}

/// Counts from pytest's last summary line (`=== 1 failed, 3 passed in 0.1s ===`, or
/// `3 passed in 0.01s` under `-q`).
fn pytest_counts(output: &str) -> Option<TestCounts> {
    let line = output.lines().rev().find(|l| {
        let l = l.trim();
        (l.contains(" passed") || l.contains(" failed") || l.contains(" error"))
            && l.contains(" in ")
            && !l.starts_with("test result:")
    })?;
    let field = |w: &str| {
        line.split(',')
            .find_map(|part| number_before(&format!("{} ", part.trim_matches('=')), w))
            .unwrap_or(0)
    };
    Some(TestCounts {
        passed: field(" passed"),
        failed: field(" failed") + field(" error"),
    })
}

/// Counts from unittest: `Ran N tests` then `OK` or `FAILED (failures=a, errors=b)`.
fn unittest_counts(output: &str) -> Option<TestCounts> {
    let ran = output.lines().find_map(|l| {
        let l = l.trim();
        l.strip_prefix("Ran ")?
            .split_whitespace()
            .next()?
            .parse::<u32>()
            .ok()
    })?;
    let mut failed = 0;
    if let Some(line) = output
        .lines()
        .rev()
        .find(|l| l.trim().starts_with("FAILED"))
    {
        for part in line.split(['(', ')', ',']) {
            if let Some((key, value)) = part.trim().split_once('=')
                && matches!(key, "failures" | "errors")
            {
                failed += value.trim().parse::<u32>().unwrap_or(0);
            }
        }
    }
    Some(TestCounts {
        passed: ran.saturating_sub(failed),
        failed,
    })
}

/// Test counts from the output of cargo test, pytest or unittest; `None` when the output
/// has no summary any of them would print (a build error before any test ran, say).
pub fn parse_test_counts(output: &str) -> Option<TestCounts> {
    cargo_counts(output)
        .or_else(|| unittest_counts(output))
        .or_else(|| pytest_counts(output))
}

/// Whether a shell command runs a test suite (cargo test/nextest, pytest, unittest, go
/// test, npm/yarn/pnpm test, make test, tox).
pub fn is_test_command(command: &str) -> bool {
    let c = format!(
        " {} ",
        command.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    [
        " cargo test ",
        " cargo nextest ",
        " pytest ",
        "-m pytest ",
        "-m unittest ",
        " go test ",
        " npm test ",
        " yarn test ",
        " pnpm test ",
        " make test ",
        " tox ",
    ]
    .iter()
    .any(|p| c.contains(p))
}

fn same_command(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// What the loop knows about one finished step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepDescription<'a> {
    /// `None`: the reply had no tool call.
    pub tool: Option<&'a str>,
    /// The call's argument text as the model wrote it.
    pub arguments: &'a str,
    /// The call could not be read (bad JSON, unknown tool).
    pub malformed: bool,
    /// For `run`: the command, its exit code (`None` when killed) and whether it timed out.
    pub command: Option<&'a str>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The tool's output (for `run`, the output tail).
    pub output: &'a str,
    /// A non-`run` tool reported an error (bad arguments, missing file…).
    pub tool_failed: bool,
    pub patch_rejected: bool,
    /// The tool only reads (read_file, list_files, search…).
    pub read_only: bool,
    /// Work-tree hashes before and after the step, when the repository can tell.
    pub tree_before: Option<&'a str>,
    pub tree_after: Option<&'a str>,
    /// `agent.check`, when configured.
    pub check: Option<&'a str>,
    /// The step tried to change a protected file (a tool refused, or a command's change was
    /// undone).
    pub touched_protected: bool,
}

/// The facts of one step: the seven always logged, the present sparse ones, and the counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepVerdict {
    pub facts: StepFacts,
    /// Present facts of [`SignalKind::is_sparse`] kinds.
    pub sparse: Vec<SignalKind>,
    pub tests: Option<TestCounts>,
}

impl StepVerdict {
    /// What the judge observes: the seven facts present or absent, then the present sparse
    /// ones (as [`super::Belief::add`] takes them, in this order).
    pub fn observations(&self) -> Vec<Observation> {
        let mut out = self.facts.observations().to_vec();
        out.extend(
            self.sparse
                .iter()
                .map(|&signal| Observation { signal, value: 1.0 }),
        );
        out
    }
}

/// What the decisions remember across the steps of one session.
#[derive(Debug, Clone, Default)]
pub struct StepMemory {
    /// The moves so far, by the tree they were made on.
    progress: Progress,
    tests: TestRuns,
}

/// What one command said, as the test-run rule reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandRun<'a> {
    pub command: &'a str,
    /// `None` when it was killed.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub output: &'a str,
    /// `agent.check`, when configured.
    pub check: Option<&'a str>,
}

/// The facts a command gives when it runs tests, `None` for any other command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestRunFacts {
    /// It could not run at all (not found, not executable, killed, timed out).
    pub could_not_run: bool,
    /// It is the configured check, and it failed.
    pub check_failed: bool,
    /// Fewer failing tests than the test run before it, or passing after a failure.
    pub tests_fixed: bool,
    pub counts: Option<TestCounts>,
}

/// The test runs of one session: the rule behind `check_failed` and `tests_fixed` for a
/// `run` the model makes itself (the tool protocols; under the `code` protocol the harness
/// runs the check and judges it the same way).
#[derive(Debug, Clone, Copy, Default)]
pub struct TestRuns {
    /// Failing tests of the last test run with counts, or 1/0 for one without.
    last_failing: Option<u32>,
}

impl TestRuns {
    /// Judges `run` when it is a test run (the check, or a known test command) and
    /// remembers its failures; `None` for a command that runs no tests.
    pub fn judge(&mut self, run: &CommandRun) -> Option<TestRunFacts> {
        let is_check = run.check.is_some_and(|c| same_command(c, run.command));
        if !is_check && !is_test_command(run.command) {
            return None;
        }
        let failed = run.exit_code != Some(0) || run.timed_out;
        let could_not_run =
            run.timed_out || run.exit_code.is_none() || matches!(run.exit_code, Some(126 | 127));
        let counts = parse_test_counts(run.output);
        let failing = match counts {
            Some(c) => c.failed,
            None => u32::from(failed),
        };
        let mut tests_fixed = false;
        if !could_not_run {
            tests_fixed = self.last_failing.is_some_and(|before| failing < before);
            self.last_failing = Some(failing);
        }
        Some(TestRunFacts {
            could_not_run,
            check_failed: is_check && failed,
            tests_fixed,
            counts,
        })
    }
}

impl StepMemory {
    /// Decides the facts of `step` and remembers what later steps need.
    pub fn judge(&mut self, step: &StepDescription) -> StepVerdict {
        let mut v = StepVerdict::default();
        let Some(tool) = step.tool else {
            v.facts.no_diff = true;
            v.facts.no_tool_call = true;
            return v;
        };
        if step.malformed {
            v.facts.malformed_call = true;
        }
        if step.touched_protected {
            v.sparse.push(SignalKind::TouchedProtected);
        }
        let repeat = self
            .progress
            .made(Move::call(tool, step.arguments), step.tree_before);
        v.facts.repeats = repeat.of_move;
        if repeat.of_move > 0 && repeats::is_stuck(repeat.on_tree, repeats::STUCK_FACT_AFTER) {
            v.sparse.push(SignalKind::Stuck);
        }
        v.facts.patch_rejected = step.patch_rejected;
        let unchanged = match (step.tree_before, step.tree_after) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        match step.command {
            Some(command) => {
                let run = CommandRun {
                    command,
                    exit_code: step.exit_code,
                    timed_out: step.timed_out,
                    output: step.output,
                    check: step.check,
                };
                match self.tests.judge(&run) {
                    Some(t) => {
                        v.facts.tool_error = t.could_not_run;
                        v.facts.check_failed = t.check_failed;
                        v.tests = t.counts;
                        if t.tests_fixed {
                            v.sparse.push(SignalKind::TestsFixed);
                        }
                    }
                    None => {
                        v.facts.tool_error = step.exit_code != Some(0) || step.timed_out;
                        v.facts.no_diff = unchanged;
                    }
                }
            }
            None => {
                v.facts.tool_error = step.tool_failed;
                v.facts.no_diff = unchanged && !step.read_only && tool != "finish";
            }
        }
        v
    }
}

#[cfg(test)]
#[path = "facts_tests.rs"]
mod tests;
