use super::*;
use crate::competence::{Calibration, Judge, Threshold};

const CARGO_FAIL: &str = "\
running 3 tests
test parse::empty ... ok
test parse::spaces ... FAILED
test parse::yes ... ok

failures:
    parse::spaces

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
";

const CARGO_PASS: &str = "\
running 3 tests
test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/all.rs
running 2 tests
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
";

const PYTEST_FAIL: &str = "\
============================= test session starts ==============================
collected 4 items

test_wc.py .F.E                                                          [100%]
=========================== short test summary info ============================
FAILED test_wc.py::test_empty - AssertionError
ERROR test_wc.py::test_unicode - ImportError
===================== 1 failed, 2 passed, 1 error in 0.12s =====================
";

const PYTEST_QUIET: &str = "....\n4 passed in 0.01s\n";

const UNITTEST_FAIL: &str = "\
..F.E
======================================================================
FAIL: test_empty (test_wc.WordCount)
----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=1, errors=1)
";

const UNITTEST_OK: &str = "....\n------\nRan 4 tests in 0.000s\n\nOK\n";

#[test]
fn test_counts_are_read_from_cargo_pytest_and_unittest() {
    let c = |passed, failed| Some(TestCounts { passed, failed });
    assert_eq!(parse_test_counts(CARGO_FAIL), c(2, 1));
    assert_eq!(parse_test_counts(CARGO_PASS), c(5, 0));
    assert_eq!(parse_test_counts(PYTEST_FAIL), c(2, 2));
    assert_eq!(parse_test_counts(PYTEST_QUIET), c(4, 0));
    assert_eq!(parse_test_counts(UNITTEST_FAIL), c(3, 2));
    assert_eq!(parse_test_counts(UNITTEST_OK), c(4, 0));
    assert_eq!(
        parse_test_counts("error[E0425]: cannot find value `x`"),
        None
    );
    assert_eq!(parse_test_counts(""), None);
}

#[test]
fn test_commands_are_recognised() {
    for c in [
        "cargo test",
        "cargo test --release parse",
        "pytest -q",
        "python -m pytest",
        "python3 -m unittest discover",
        "go test ./...",
        "npm test",
    ] {
        assert!(is_test_command(c), "{c}");
    }
    for c in ["cargo build", "ls", "cat pytest.ini", "echo test"] {
        assert!(!is_test_command(c), "{c}");
    }
}

fn run<'a>(command: &'a str, exit: i32, output: &'a str, tree: &'a str) -> StepDescription<'a> {
    StepDescription {
        tool: Some("run"),
        arguments: command,
        command: Some(command),
        exit_code: Some(exit),
        output,
        tree_before: Some(tree),
        tree_after: Some(tree),
        check: Some("cargo test"),
        ..StepDescription::default()
    }
}

fn patch<'a>(before: &'a str, after: &'a str) -> StepDescription<'a> {
    StepDescription {
        tool: Some("apply_patch"),
        arguments: "--- a/src/parse.rs\n+++ b/src/parse.rs\n",
        tree_before: Some(before),
        tree_after: Some(after),
        ..StepDescription::default()
    }
}

#[test]
fn a_failing_test_run_is_a_failed_check_not_a_tool_error() {
    let mut m = StepMemory::default();
    let v = m.judge(&run("cargo test", 101, CARGO_FAIL, "t1"));
    assert!(!v.facts.tool_error && v.facts.check_failed && !v.facts.no_diff);
    assert_eq!(
        v.tests,
        Some(TestCounts {
            passed: 2,
            failed: 1
        })
    );
    // A command that is not found is a tool error even for a test run.
    let v = m.judge(&run("pytest", 127, "sh: pytest: not found", "t1"));
    assert!(v.facts.tool_error);
    // Any other failing command is a tool error, and one that changes nothing is no_diff.
    let v = m.judge(&run("cargo build", 101, "error[E0425]", "t1"));
    assert!(v.facts.tool_error && v.facts.no_diff && !v.facts.check_failed);
}

#[test]
fn repetition_is_keyed_on_the_tree_and_going_round_is_stuck() {
    let mut m = StepMemory::default();
    assert!(
        m.judge(&run("cargo test", 101, CARGO_FAIL, "t1"))
            .facts
            .repeats
            == 0
    );
    // After an edit the same command is a new action.
    assert!(
        m.judge(&run("cargo test", 101, CARGO_FAIL, "t2"))
            .facts
            .repeats
            == 0
    );
    let again = m.judge(&run("cargo test", 101, CARGO_FAIL, "t2"));
    assert!(again.facts.repeats == 1 && again.sparse.is_empty());
    let third = m.judge(&run("cargo test", 101, CARGO_FAIL, "t2"));
    assert_eq!(third.sparse, vec![SignalKind::Stuck]);
    assert_eq!(
        third.facts.repeats, 2,
        "each repeat counts the earlier ones"
    );
}

#[test]
fn no_call_and_malformed_calls_are_facts() {
    let mut m = StepMemory::default();
    let v = m.judge(&StepDescription::default());
    assert!(v.facts.no_tool_call && !v.facts.malformed_call && v.sparse.is_empty());
    let v = m.judge(&StepDescription {
        tool: Some("apply_patch"),
        malformed: true,
        tool_failed: true,
        ..StepDescription::default()
    });
    assert!(v.facts.tool_error && v.facts.malformed_call && !v.facts.no_tool_call);
    assert!(v.sparse.is_empty());
    assert_eq!(v.observations().len(), 7);
}

/// The audit's test–edit–test loop: under the old facts, the re-run of a now-passing test
/// lowered the belief (a repeat of the same call); under these facts it raises it.
#[test]
fn fail_fix_rerun_of_a_now_passing_test_raises_the_belief() {
    let mut judge = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    let mut memory = StepMemory::default();
    let observe = |judge: &mut Judge, v: &StepVerdict| {
        for o in v.observations() {
            judge.observe(o);
        }
        judge.belief()
    };
    let start = judge.belief();
    let failed = memory.judge(&run("cargo test", 101, CARGO_FAIL, "t1"));
    let b1 = observe(&mut judge, &failed);
    let b2 = observe(&mut judge, &memory.judge(&patch("t1", "t2")));
    let rerun = memory.judge(&run("cargo test", 0, CARGO_PASS, "t2"));
    assert!(rerun.facts.repeats == 0 && !rerun.facts.check_failed);
    assert_eq!(rerun.sparse, vec![SignalKind::TestsFixed]);
    let b3 = observe(&mut judge, &rerun);
    assert!(b1 < start, "the failing check lowers B: {start} → {b1}");
    assert!(b3 > b2, "the passing re-run raises B: {b2} → {b3}");
    assert!(
        b3 > start,
        "fail → fix → pass ends above where it started: {start} → {b3}"
    );

    // The old facts of the same loop: tool_error for the failing run, then the re-run is
    // the same (tool, arguments) and counts as a repeat.
    let mut old = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    for facts in [
        StepFacts {
            tool_error: true,
            no_diff: true,
            ..StepFacts::default()
        },
        StepFacts::default(),
    ] {
        old.observe_step(&facts);
    }
    let before = old.belief();
    old.observe_step(&StepFacts {
        repeats: 1,
        no_diff: true,
        ..StepFacts::default()
    });
    assert!(
        old.belief() < before,
        "old facts: {before} → {}",
        old.belief()
    );
}

#[test]
fn touching_a_protected_file_is_a_sparse_fact_that_lowers_the_belief() {
    let mut memory = StepMemory::default();
    let step = StepDescription {
        tool: Some("write_file"),
        arguments: r#"{"path":"test_x.py"}"#,
        tool_failed: true,
        touched_protected: true,
        ..StepDescription::default()
    };
    let v = memory.judge(&step);
    assert_eq!(v.sparse, vec![SignalKind::TouchedProtected]);
    assert!(SignalKind::TouchedProtected.is_sparse());
    let mut judge = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    let before = judge.belief();
    for o in v.observations() {
        judge.observe(o);
    }
    let mut plain = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    let untouched = StepDescription {
        touched_protected: false,
        ..step
    };
    for o in StepMemory::default().judge(&untouched).observations() {
        plain.observe(o);
    }
    assert!(judge.belief() < plain.belief() && plain.belief() < before + 1e-9);
}
