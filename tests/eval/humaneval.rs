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
    // The grading test is a label: a hidden file of the suite, not in the repository.
    for id in &ids {
        assert!(!out.join("repos").join(id).join("test_solution.py").exists());
        assert!(
            out.join("hidden")
                .join(id)
                .join("test_solution.py")
                .is_file()
        );
    }
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

#[test]
fn the_binary_reads_the_prompts_examples_and_runs_them_on_the_references() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("HumanEval.jsonl");
    std::fs::write(&file, problems()).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["eval", "examples", "--reference", "--json"])
        .arg(&file)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["coverage"]["tasks"], 2);
    assert_eq!(v["coverage"]["with_examples"], 1, "{v}");
    assert_eq!(v["coverage"]["examples"], 1);
    assert_eq!(v["coverage"]["by_form"]["doctest"], 1);
    assert_eq!(v["reference"]["passed"], 1, "{v}");
    assert_eq!(v["reference"]["failed"], serde_json::json!([]));
}

/// The reply a scripted junior gives under the `code` protocol: `add` right at once,
/// `find_root` wrong at the endpoint's temperature and right when the loop resamples it
/// at `agent.retry_temperature` after the failed check.
fn code_junior(body: &serde_json::Value) -> handoff::demo::server::Reply {
    use handoff::demo::script::{confident, reply};
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first = messages
        .get(1)
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    let resampled = messages.len() == 2 && body["temperature"].as_f64().unwrap_or(0.0) >= 0.5;
    let text = if first.contains("def add(") {
        "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```\n"
    } else if resampled {
        "solution.py\n```python\ndef find_root(xs):\n    return -xs[0] / xs[1]\n```\n"
    } else {
        "```python\ndef find_root(xs):\n    return 0\n```\n"
    };
    reply(confident(text), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_shot_reference_and_the_loop_run_side_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("suite");
    import(
        &read_problems(&{
            let f = dir.path().join("HumanEval.jsonl");
            std::fs::write(&f, problems()).expect("write");
            f
        })
        .expect("problems"),
        &out,
    )
    .expect("import");
    let j = handoff::demo::server::ScriptedServer::start(
        handoff::demo::server::Script::new(vec![]).respond_with(code_junior),
    )
    .await
    .expect("junior");
    let s =
        handoff::demo::server::ScriptedServer::start(handoff::demo::server::Script::new(vec![]))
            .await
            .expect("senior");
    let mut cfg = crate::agent::support::config(&j, &s);
    cfg.junior.tool_protocol = handoff::config::ToolProtocol::Code;
    let cfg_path = crate::agent::support::write_config(dir.path(), &cfg);
    let results = dir.path().join("out");
    let ran = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("eval")
        .arg(&out)
        .arg("--config")
        .arg(&cfg_path)
        .args([
            "--policy",
            "single-shot",
            "--policy",
            "junior-only",
            "--out",
        ])
        .arg(&results)
        .output()
        .expect("runs");
    assert!(ran.status.success(), "{ran:?}");
    let text = std::fs::read_to_string(results.join("results.json")).expect("results");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    let runs = doc
        .get("runs")
        .and_then(|r| r.as_array())
        .or_else(|| doc.as_array())
        .cloned()
        .expect("runs");
    let passed = |policy: &str, task: &str| {
        runs.iter()
            .find(|r| r["policy"] == policy && r["task"] == task)
            .map(|r| r["passed"] == true)
            .expect("a run")
    };
    assert!(passed("single-shot", "humaneval-0"));
    assert!(
        !passed("single-shot", "humaneval-1"),
        "one reply, one check"
    );
    assert!(passed("junior-only", "humaneval-0"));
    assert!(passed("junior-only", "humaneval-1"), "the loop fixed it");
    // One request per single-shot session, two for the loop's fix.
    assert_eq!(j.bodies().len(), 1 + 1 + 1 + 2);
}
