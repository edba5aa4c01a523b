//! The HumanEval importer on a small handmade file in HumanEval's format.

use std::io::Write;

use handoff::eval::humaneval::{CHECK, import, read_problems};
use handoff::eval::{Suite, run::validate};
use serde_json::json;

fn problems() -> String {
    let add = json!({
        "task_id": "HumanEval/0",
        "prompt": "def add(a: int, b: int) -> int:\n    \"\"\"Sum of a and b.\n    >>> add(2, 3)\n    5\n    \"\"\"\n",
        "canonical_solution": "    return a + b\n",
        "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
        "entry_point": "add"
    });
    // The test calls a helper defined in the prompt, as HumanEval/32 does.
    let root = json!({
        "task_id": "HumanEval/1",
        "prompt": "def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n\ndef find_root(xs):\n    \"\"\"A root of the linear polynomial xs.\"\"\"\n",
        "canonical_solution": "    return -xs[0] / xs[1]\n",
        "test": "def check(candidate):\n    assert abs(poly([2, 4], candidate([2, 4]))) < 1e-9\n",
        "entry_point": "find_root"
    });
    format!("{add}\n\n{root}\n")
}

#[tokio::test]
async fn imported_problems_are_sound_tasks_from_plain_and_gzipped_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("HumanEval.jsonl");
    std::fs::write(&plain, problems()).expect("write");
    let gz = dir.path().join("HumanEval.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).expect("create"),
        flate2::Compression::default(),
    );
    enc.write_all(problems().as_bytes()).expect("gzip");
    enc.finish().expect("finish");

    let from_plain = read_problems(&plain).expect("plain");
    assert_eq!(read_problems(&gz).expect("gz"), from_plain);
    assert_eq!(from_plain.len(), 2);

    let out = dir.path().join("suite");
    let ids = import(&from_plain, &out).expect("import");
    assert_eq!(ids, ["humaneval-0", "humaneval-1"]);
    let suite = Suite::load(&out).expect("an imported suite loads");
    assert_eq!(suite.tasks.len(), 2);
    for task in &suite.tasks {
        assert_eq!(task.check, CHECK);
        assert!(task.blockers.is_empty());
        let v = validate(task, 60).await.expect("validate");
        assert!(v.template_fails, "{}: the stub must fail", task.id);
        assert_eq!(v.solution_passes, Some(true), "{}", task.id);
    }
    assert!(suite.tasks[1].text.contains("find_root"));
}

#[test]
fn a_line_that_is_not_a_problem_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("bad.jsonl");
    std::fs::write(
        &p,
        format!(
            "{}\n{{\"task_id\": 3}}\n",
            problems().lines().next().unwrap_or("")
        ),
    )
    .expect("write");
    let err = read_problems(&p).expect_err("bad line").to_string();
    assert!(err.contains("bad.jsonl:2:"), "{err}");
}

#[test]
fn the_binary_imports_then_validates_the_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("HumanEval.jsonl");
    std::fs::write(&file, problems()).expect("write");
    let out = dir.path().join("suite");
    let bin = env!("CARGO_BIN_EXE_handoff");
    let import = std::process::Command::new(bin)
        .args(["eval", "import-humaneval"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("runs");
    assert!(import.status.success(), "{import:?}");
    assert!(String::from_utf8_lossy(&import.stdout).contains("wrote 2 tasks"));
    let validate = std::process::Command::new(bin)
        .args(["eval", "--validate"])
        .arg(&out)
        .env("HANDOFF_CONFIG", "")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&validate.stdout);
    assert!(validate.status.success(), "{validate:?}");
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(" ok")).count(),
        2,
        "{stdout}"
    );
}
