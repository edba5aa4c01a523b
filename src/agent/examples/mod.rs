//! Runs the task's own examples against the tree a step left, in the check's sandbox.
//!
//! The examples come from the files as the task gave them (their docstrings before the
//! writer touched them, so a writer cannot edit an example away) and from the task's text;
//! [`crate::code::examples`] reads them. They are evidence the harness gets for free and
//! before any grading check: on HumanEval the junior's first reply passing its own
//! docstring's examples predicts the hidden verdict far better than its tokens do
//! (../shared reviews, results audit 4, §3.3). They are never the check: the check's
//! hidden files are not laid while they run.
//!
//! One `python3 -I` process per run: the program and the examples travel on its command
//! line, so nothing is written for it anywhere a command could have planted a link; `-I`
//! keeps the repository's own files and `PYTHON*` variables from replacing the harness's
//! modules. Each example has its own alarm; the process has the command timeout.

use std::time::Duration;

use crate::agent::tools::Workspace;
use crate::agent::tools::run::run_shell;
use crate::code::examples::Example;
use crate::protocol::ExampleCheck;

mod probe;
pub(crate) use probe::probe;

/// What the harness and the candidates probe share: the marker, the comparison, the alarm.
const HARNESS_COMMON: &str = include_str!("common.py");
const HARNESS: &str = concat!(include_str!("common.py"), include_str!("harness.py"));
/// Marks the harness's result lines among whatever the code under test prints.
const MARK: &str = "@@handoff-example@@ ";
/// Seconds one example may take.
const PER_EXAMPLE_S: u64 = 3;
/// Examples run per file at most: a docstring with hundreds of asserts is a test file.
pub(crate) const MAX_EXAMPLES: usize = 40;
/// Output kept from the run: every result line, each cut to a few hundred bytes.
const OUTPUT_CAP: usize = 64 * 1024;

/// What running one file's examples came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ExamplesResult {
    pub results: Vec<ExampleCheck>,
    /// Why nothing (or not everything) could be judged.
    pub note: Option<String>,
}

impl ExamplesResult {
    pub fn passed(&self) -> u32 {
        count(self.results.iter().filter(|r| r.passed))
    }

    pub fn failed(&self) -> u32 {
        count(self.results.iter().filter(|r| !r.passed))
    }
}

fn count<I: Iterator>(it: I) -> u32 {
    u32::try_from(it.count()).unwrap_or(u32::MAX)
}

/// The Python module a repository path imports as: `pkg/mod.py` → `pkg.mod`; `None` for a
/// path that is not a Python file or whose parts are not Python names.
pub(crate) fn module_of(path: &str) -> Option<String> {
    let stem = path.strip_suffix(".py")?;
    let parts: Vec<&str> = stem.split('/').collect();
    let name_ok = |p: &&str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    parts.iter().all(name_ok).then(|| parts.join("."))
}

/// Runs `examples` (at most [`MAX_EXAMPLES`]) against `module` in the workspace's sandbox.
pub(crate) async fn run(ws: &Workspace, module: &str, examples: &[Example]) -> ExamplesResult {
    let examples = &examples[..examples.len().min(MAX_EXAMPLES)];
    if examples.is_empty() {
        return ExamplesResult::default();
    }
    let list: Vec<serde_json::Value> = examples
        .iter()
        .map(|e| serde_json::json!({"call": e.call, "expected": e.expected}))
        .collect();
    let json = serde_json::Value::Array(list).to_string();
    let root = ws.root().to_string_lossy().into_owned();
    let command = format!(
        "python3 -I -c {} {} {} {} {PER_EXAMPLE_S}",
        quote(HARNESS),
        quote(&root),
        quote(module),
        quote(&json)
    );
    let limit = ws.limits().command_timeout;
    let wanted = Duration::from_secs(10 + PER_EXAMPLE_S * examples.len() as u64);
    let spec = ws.shell(&command, wanted.min(limit), OUTPUT_CAP);
    match run_shell(&spec).await {
        Ok(r) => read_results(&r.output_tail, examples, r.timed_out),
        Err(e) => ExamplesResult {
            results: Vec::new(),
            note: Some(format!("the examples could not run: {e}")),
        },
    }
}

/// The harness's result lines, matched to the examples; an example with no line did not
/// finish (the process died or ran out of time) and counts as failed.
pub(crate) fn read_results(output: &str, examples: &[Example], timed_out: bool) -> ExamplesResult {
    let mut got: Vec<Option<serde_json::Value>> = vec![None; examples.len()];
    let mut note = None;
    for line in output.lines() {
        let Some(record) = line
            .strip_prefix(MARK)
            .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok())
        else {
            continue;
        };
        if let Some(e) = record.get("import_error").and_then(|v| v.as_str()) {
            note = Some(format!("the module did not import: {e}"));
            continue;
        }
        let slot = record
            .get("i")
            .and_then(serde_json::Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| got.get_mut(i));
        if let Some(slot) = slot {
            *slot = Some(record);
        }
    }
    let text =
        |r: &serde_json::Value, key: &str| r.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let results = examples
        .iter()
        .zip(got)
        .map(|(e, record)| {
            let (passed, got, error) = match &record {
                Some(r) => (
                    r.get("passed").and_then(serde_json::Value::as_bool) == Some(true),
                    text(r, "got"),
                    text(r, "error"),
                ),
                None => {
                    let why = note.clone().unwrap_or_else(|| {
                        if timed_out {
                            "the examples ran out of time".into()
                        } else {
                            "no result (the process ended first)".into()
                        }
                    });
                    (false, None, Some(why))
                }
            };
            ExampleCheck {
                call: e.call.clone(),
                expected: e.expected.clone(),
                passed,
                got,
                error,
            }
        })
        .collect();
    ExamplesResult { results, note }
}

/// `text` as one single-quoted shell word.
pub(super) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::examples::Form;

    fn example(call: &str, expected: &str) -> Example {
        Example {
            function: "f".into(),
            call: call.into(),
            expected: expected.into(),
            form: Form::Inline,
            line: 1,
        }
    }

    #[test]
    fn modules_of_paths() {
        assert_eq!(module_of("solution.py").as_deref(), Some("solution"));
        assert_eq!(module_of("pkg/sub/m.py").as_deref(), Some("pkg.sub.m"));
        assert_eq!(module_of("src/lib.rs"), None);
        assert_eq!(module_of("my-file.py"), None);
        assert_eq!(module_of("../x.py"), None);
    }

    #[test]
    fn results_are_matched_by_index_and_missing_ones_fail() {
        let ex = vec![
            example("f(1)", "2"),
            example("f(2)", "3"),
            example("f(3)", "4"),
        ];
        let out = format!(
            "noise\n{MARK}{{\"i\": 1, \"passed\": false, \"got\": \"5\"}}\nprinted by the code\n{MARK}{{\"i\": 0, \"passed\": true, \"got\": \"2\"}}\n{MARK}not json\n"
        );
        let r = read_results(&out, &ex, false);
        assert_eq!(r.passed(), 1);
        assert_eq!(r.failed(), 2);
        assert_eq!(r.results[1].got.as_deref(), Some("5"));
        assert_eq!(
            r.results[2].error.as_deref(),
            Some("no result (the process ended first)")
        );
        let timed = read_results("", &ex, true);
        assert_eq!(timed.failed(), 3);
        assert_eq!(
            timed.results[0].error.as_deref(),
            Some("the examples ran out of time")
        );
    }

    #[test]
    fn an_import_error_fails_every_example_with_its_reason() {
        let ex = vec![example("f(1)", "2")];
        let out = format!("{MARK}{{\"import_error\": \"SyntaxError: bad\"}}\n");
        let r = read_results(&out, &ex, false);
        assert_eq!(r.failed(), 1);
        assert_eq!(
            r.note.as_deref(),
            Some("the module did not import: SyntaxError: bad")
        );
        assert_eq!(r.results[0].error, r.note);
    }

    /// Python trusts a bytecode file on the source's recorded mtime and size: an edit of the
    /// same size in the same second would run the old code unless the harness compiles
    /// from source. Runs the harness itself (no sandbox), when python3 is there.
    #[test]
    fn an_edit_of_the_same_size_in_the_same_second_is_what_runs() {
        use std::process::Command;
        if no_python3() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("m.py");
        std::fs::write(&file, "def f():\n    return 1\n").expect("write");
        let when = std::fs::metadata(&file)
            .and_then(|m| m.modified())
            .expect("mtime");
        let compiled = Command::new("python3")
            .current_dir(dir.path())
            .env_remove("PYTHONDONTWRITEBYTECODE")
            .args(["-c", "import m"])
            .status()
            .expect("python3");
        assert!(compiled.success());
        assert!(dir.path().join("__pycache__").is_dir(), "bytecode written");
        std::fs::write(&file, "def f():\n    return 2\n").expect("rewrite");
        std::fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(when))
            .expect("same mtime");
        let root = dir.path().to_string_lossy().into_owned();
        let out = Command::new("python3")
            .args([
                "-I",
                "-c",
                HARNESS,
                &root,
                "m",
                r#"[{"call": "f()", "expected": "2"}]"#,
                "3",
            ])
            .output()
            .expect("harness");
        let r = read_results(
            &String::from_utf8_lossy(&out.stdout),
            &[example("f()", "2")],
            false,
        );
        assert_eq!(r.results[0].got.as_deref(), Some("2"), "{r:?}");
        assert_eq!(r.passed(), 1);
    }

    /// Whether python3 is missing here (the tests that run a harness itself skip then).
    pub(in crate::agent::examples) fn no_python3() -> bool {
        let missing = std::process::Command::new("python3")
            .args(["-c", ""])
            .status()
            .is_err();
        if missing {
            eprintln!("skipped: needs python3");
        }
        missing
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("a'b"), r"'a'\''b'");
    }
}
