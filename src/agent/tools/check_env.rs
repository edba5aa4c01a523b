//! What the check's environment adds for a Python test runner started by module name.
//!
//! `python3 -m unittest` puts the working directory first on `sys.path`, so a `unittest/`
//! package (or an `argparse.py` the runner imports) that the model plants in the
//! repository replaces the runner: it exits 0 without running a test, and the session
//! was labelled `success` (issue 50, item 16). With `PYTHONSAFEPATH=1` (Python 3.11+;
//! older versions ignore it) the runner and what it imports come from the installation;
//! discovery then puts the start directory on `sys.path` itself, so the tests still import
//! the project's modules, and a planted `unittest/` package is discovered as a foreign
//! package and fails the run.
//!
//! Only a check that starts such a runner gets it: `python3 test_solution.py` (HumanEval's
//! check) needs the script's directory on `sys.path` to import the solution, which the
//! variable would take away. What this does not stop: the model's code, once a test
//! imports it, runs inside the test process and can end it with status 0 (`os._exit(0)`);
//! no runner can label that honestly from inside the process.

/// The modules whose start from the working directory this guards.
const RUNNERS: [&str; 2] = ["unittest", "pytest"];

/// Whether `command` starts a Python interpreter on one of [`RUNNERS`] by `-m`
/// (`python3 -m unittest -q`, `python -B -m pytest`), before any shell operator.
pub fn runs_python_runner(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(interpreter) = words.next() else {
        return false;
    };
    let name = interpreter.rsplit('/').next().unwrap_or(interpreter);
    let is_python = name
        .strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    if !is_python {
        return false;
    }
    for word in words {
        if word == "-m" {
            break;
        }
        if !word.starts_with('-') || word.starts_with("-c") {
            return false;
        }
    }
    let mut words = command
        .split_whitespace()
        .skip_while(|w| *w != "-m")
        .skip(1);
    words.next().is_some_and(|module| RUNNERS.contains(&module))
}

/// The variables the check gets on top of a command's environment.
pub fn extra_env(command: &str) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    if runs_python_runner(command) {
        vec![("PYTHONSAFEPATH".into(), "1".into())]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_runner_started_by_module_is_recognised() {
        for yes in [
            "python3 -m unittest -q",
            "python -m pytest -x tests",
            "/usr/bin/python3.11 -B -m unittest discover",
        ] {
            assert!(runs_python_runner(yes), "{yes}");
        }
        for no in [
            "python3 test_solution.py",
            "python3 -c 'import unittest' -m unittest",
            "python3 -m mypkg",
            "cargo test --quiet --offline",
            "sh -c 'python3 -m unittest'",
            "pythonic -m unittest",
            "",
        ] {
            assert!(!runs_python_runner(no), "{no}");
        }
    }
}
