//! Evidence from execution through the real binary and real HTTP: the task's own examples
//! run after every edit and are logged and shown; a hidden check's output reaches no model.

use std::ffi::OsStr;

use handoff::config::{Retry, ToolProtocol};
use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use serde_json::Value;

use super::support::{bin, config, has_python, log_events, repo, servers, write_config};

const STUB: &str = "def double(x):\n    \"\"\"Twice x.\n\n    >>> double(3)\n    6\n\n    double(0) == 0\n    double(n) -> n + n\n    \"\"\"\n    raise NotImplementedError\n";

/// `handoff exec` on `repo` with `cfg` and `task`: the run and its log's events.
async fn exec(
    repo: &std::path::Path,
    cfg: &handoff::config::Config,
    task: &str,
) -> (super::support::Bin, Vec<Value>, String) {
    let home = tempfile::tempdir().expect("home");
    let path = write_config(home.path(), cfg);
    let log = home.path().join("s.jsonl");
    let ran = bin(
        home.path(),
        &[
            OsStr::new("exec"),
            OsStr::new("--repo"),
            repo.as_os_str(),
            OsStr::new("--config"),
            path.as_os_str(),
            OsStr::new("--log"),
            log.as_os_str(),
            OsStr::new(task),
        ],
        None,
        &[],
    )
    .await;
    let raw = std::fs::read_to_string(&log).unwrap_or_default();
    (ran, log_events(&log), raw)
}

/// The whole session for an assertion's message: the exit, the trace and the log.
fn story(ran: &super::support::Bin, trace: &str, events: &[Value]) -> String {
    format!(
        "exit {:?}\n--- trace ---\n{trace}\n--- log ---\n{}",
        ran.code,
        events
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    )
}

#[tokio::test]
async fn the_tasks_examples_run_after_each_edit_and_are_logged_and_shown() {
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    // The first reply also rewrites the docstring's example: the examples come from the
    // file as the task gave it, so the rewrite changes nothing.
    let wrong = "```python\ndef double(x):\n    \"\"\">>> double(3)\n    5\n    \"\"\"\n    return x + 2\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let junior = Script::new(vec![
        reply(confident(wrong), None),
        reply(confident(right), None),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("mathx.py", STUB)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.agent.check = Some("python3 -c 'from mathx import double; assert double(5) == 10'".into());
    cfg.agent.retry = Retry::Feedback;
    cfg.policy.constant = 0.01;
    let (ran, events, _) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    // Every assertion below shows the whole session when it fails: the trace and the log.
    let trace = format!("{}{}", ran.stdout, ran.stderr);
    let story = story(&ran, &trace, &events);
    assert_eq!(ran.code, Some(0), "{story}");
    let runs: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "examples_ran")
        .collect();
    assert_eq!(runs.len(), 2, "one run per edit\n{story}");
    // The first reply: double(3) gave 5, double(0) gave 2; the recurrence is unread.
    let first = (
        &runs[0]["passed"],
        &runs[0]["failed"],
        &runs[0]["unread"],
        &runs[0]["files"][0],
        &runs[0]["results"][0]["call"],
        &runs[0]["results"][0]["got"],
    );
    assert_eq!(
        first,
        (
            &Value::from(0),
            &Value::from(2),
            &Value::from(1),
            &Value::from("mathx.py"),
            &Value::from("double(3)"),
            &Value::from("5")
        ),
        "{story}"
    );
    assert_eq!(
        (&runs[1]["passed"], &runs[1]["failed"]),
        (&Value::from(2), &Value::from(0)),
        "{story}"
    );
    // Logged before the step's check, in the step that made the edit.
    let first_check = events.iter().position(|e| e["type"] == "check_ran");
    let first_run = events.iter().position(|e| e["type"] == "examples_ran");
    assert!(
        matches!((first_run, first_check), (Some(r), Some(c)) if r < c),
        "{story}"
    );
    // The judge reads the verdicts: a failed example lowers B at the first step, a passing
    // set raises it at the second (each a term of that step's update).
    let read = |fact: &str| -> Vec<f64> {
        events
            .iter()
            .filter(|e| e["type"] == "belief_updated")
            .flat_map(|e| e["terms"].as_array().cloned().unwrap_or_default())
            .filter(|t| t["signal"] == fact)
            .filter_map(|t| t["llr"].as_f64())
            .collect()
    };
    let (failed, passed) = (read("examples_failed"), read("examples_passed"));
    assert!(
        failed.len() == 1 && failed[0] < 0.0 && passed.len() == 1 && passed[0] > 0.0,
        "failed {failed:?}, passed {passed:?}\n{story}"
    );
    // exec's trace says it in the words the TUI uses.
    assert!(
        trace.contains("examples 0/2 (1 unread): double(3) gave 5, not 6"),
        "{story}"
    );
    assert!(trace.contains("examples 2/2 (1 unread)"), "{story}");
}

/// `agent.candidates = 4`: the junior's greedy reply fails the examples, the three drawn
/// after it agree and pass them; the harness places one of the three, logs the groups,
/// the judge reads the agreement, and every drawn reply's tokens are in the cost events.
#[tokio::test]
async fn the_first_reply_as_four_candidates_places_the_one_the_examples_rank_first() {
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let wrong = "```python\ndef double(x):\n    return x + 2\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let also_right = "```python\ndef double(x):\n    return x + x\n```\n";
    let junior = Script::new(vec![
        reply(confident(wrong), None),
        reply(confident(right), None),
        reply(confident("I would rather not."), None),
        reply(confident(also_right), None),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("mathx.py", STUB)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.agent.check = Some("python3 -c 'from mathx import double; assert double(5) == 10'".into());
    cfg.agent.candidates = 4;
    cfg.policy.constant = 0.01;
    let (ran, events, raw) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    let trace = format!("{}{}", ran.stdout, ran.stderr);
    let story = story(&ran, &trace, &events);
    assert_eq!(
        ran.code,
        Some(0),
        "the placed candidate passes the check\n{story}"
    );
    let drawn: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "candidates_ran")
        .collect();
    assert_eq!(
        drawn.len(),
        1,
        "only the first reply is drawn k times\n{story}"
    );
    let c = drawn[0];
    assert_eq!(c["file"], "mathx.py", "{story}");
    assert_eq!(c["groups"], serde_json::json!([1, 2]), "{story}");
    assert_eq!(c["chosen"], 1, "{story}");
    assert_eq!(c["candidates"][0]["examples_failed"], 2, "{story}");
    assert_eq!(c["candidates"][1]["examples_passed"], 2, "{story}");
    assert!(c["candidates"][2]["group"].is_null(), "{story}");
    // Derived inputs beyond the examples' two calls.
    let probes = c["probes"].as_array().map_or(0, Vec::len);
    assert!(probes > 2, "{story}");
    // The placed code is the chosen candidate's.
    let placed = std::fs::read_to_string(dir.path().join("mathx.py")).expect("mathx.py");
    assert!(placed.contains("return 2 * x"), "{placed}\n{story}");
    // Two of four agree: a split, which the judge reads on the step that placed it.
    let facts: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "belief_updated")
        .flat_map(|e| e["terms"].as_array().into_iter().flatten())
        .filter(|t| t["signal"] == "candidates_split")
        .collect();
    assert_eq!(facts.len(), 1, "{story}");
    let junior_costs = events
        .iter()
        .filter(|e| e["type"] == "cost_incurred" && e["actor"] == "junior")
        .count();
    assert_eq!(junior_costs, 4, "every drawn reply is paid for\n{story}");
    assert!(
        trace.contains("2 of 4 candidates agree (groups 1 + 2 on"),
        "{story}"
    );
    assert!(trace.contains("placed #2 (examples 2/2)"), "{story}");
    // `replay` shows the evidence the judge read.
    let home = tempfile::tempdir().expect("home");
    let log = home.path().join("again.jsonl");
    std::fs::write(&log, raw).expect("log");
    let replayed = bin(
        home.path(),
        &[
            OsStr::new("replay"),
            OsStr::new("--headless"),
            log.as_os_str(),
        ],
        None,
        &[],
    )
    .await;
    assert!(
        replayed
            .stdout
            .contains("log: step 1: 2 of 4 candidates agree (groups 1 + 2 on"),
        "{}{}",
        replayed.stdout,
        replayed.stderr
    );
    assert!(
        replayed.stdout.contains("log: step 1: examples 2/2"),
        "{}",
        replayed.stdout
    );
}

/// `agent.candidates_when = "first_fails"` (the default): a first reply that passes its
/// examples is placed as it is and nothing more is drawn; `"always"` draws all four.
#[tokio::test]
async fn a_first_reply_that_passes_its_examples_is_not_drawn_again_unless_always() {
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    for (when, requests) in [
        (handoff::config::CandidatesWhen::FirstFails, 1),
        (handoff::config::CandidatesWhen::Always, 4),
    ] {
        let junior = Script::new(vec![
            reply(confident(right), None),
            reply(confident(right), None),
            reply(confident(right), None),
            reply(confident(right), None),
        ]);
        let (j, s) = servers(junior, Script::new(vec![])).await;
        let dir = repo(&[("mathx.py", STUB)]);
        let mut cfg = config(&j, &s);
        cfg.junior.tool_protocol = ToolProtocol::Code;
        cfg.agent.check =
            Some("python3 -c 'from mathx import double; assert double(5) == 10'".into());
        cfg.agent.candidates = 4;
        cfg.agent.candidates_when = when;
        let (ran, events, _) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
        let log: Vec<String> = events.iter().map(Value::to_string).collect();
        assert_eq!(
            ran.code,
            Some(0),
            "{when:?}: {}\n{}",
            ran.stderr,
            log.join("\n")
        );
        let costs = events
            .iter()
            .filter(|e| e["type"] == "cost_incurred" && e["actor"] == "junior")
            .count();
        assert_eq!(costs, requests, "{when:?}: {}", log.join("\n"));
        let drawn = events
            .iter()
            .filter(|e| e["type"] == "candidates_ran")
            .count();
        assert_eq!(drawn, usize::from(requests > 1), "{when:?}");
        if requests > 1 {
            let agree = events
                .iter()
                .filter(|e| e["type"] == "belief_updated")
                .flat_map(|e| e["terms"].as_array().into_iter().flatten())
                .any(|t| t["signal"] == "candidates_agree");
            assert!(agree, "four alike agree: {}", log.join("\n"));
        }
    }
}

#[tokio::test]
async fn escalate_on_failed_examples_hands_the_first_failing_edit_to_the_senior() {
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let wrong = "```python\ndef double(x):\n    return x + 2\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let (j, s) = servers(
        Script::new(vec![reply(confident(wrong), None)]),
        Script::new(vec![reply(confident(right), None)]),
    )
    .await;
    let dir = repo(&[("mathx.py", STUB)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.senior.tool_protocol = ToolProtocol::Code;
    cfg.agent.check = Some("python3 -c 'from mathx import double; assert double(5) == 10'".into());
    cfg.policy.constant = 0.01;
    cfg.policy.escalate_on_failed_examples = true;
    let (ran, events, _) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let escalated: Vec<&Value> = events.iter().filter(|e| e["type"] == "escalated").collect();
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    assert_eq!(escalated[0]["reason"], "examples_failed");
    assert_eq!(
        escalated[0]["step"], 1,
        "at the step of the junior's first edit"
    );
    assert!(events.iter().any(|e| e["type"] == "senior_took_over"));
    assert_eq!(j.requests().len(), 1, "the junior was not asked again");
}

/// A one-task suite whose hidden test fails with an assertion message that must never
/// reach a model.
fn leaky_suite(dir: &std::path::Path) {
    let w = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    w(
        "leak.toml",
        "task = \"Implement `double` in mathx.py.\"\nrepo = \"repos/leak\"\ncheck = \"python3 test_mathx.py\"\nhidden = \"hidden/leak\"\n",
    );
    w("repos/leak/mathx.py", STUB);
    w(
        "hidden/leak/test_mathx.py",
        "from mathx import double\nassert double(7) == 14, 'LEAKMARK-7731 double(7) should be 14'\nprint('ok')\n",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_checks_output_reaches_no_model_not_the_junior_nor_the_senior() {
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let suite = home.path().join("suite");
    leaky_suite(&suite);
    let wrong = "```python\ndef double(x):\n    return x + 2\n```\n";
    let junior = Script::new(vec![
        reply(confident(wrong), None),
        reply(confident(wrong), None),
        reply(confident(wrong), None),
    ]);
    let senior = Script::new(vec![
        reply(confident(wrong), None),
        reply(confident(wrong), None),
    ]);
    let (j, s) = servers(junior, senior).await;
    let mut cfg = super::support::config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.senior.tool_protocol = ToolProtocol::Code;
    cfg.agent.retry = Retry::Feedback;
    cfg.agent.max_steps = 3;
    cfg.agent.sandbox = false;
    cfg.policy.constant = 0.01;
    cfg.policy.escalate_on_failed_check = true;
    let path = write_config(home.path(), &cfg);
    let out = home.path().join("out");
    let ran = bin(
        home.path(),
        &[
            OsStr::new("eval"),
            suite.as_os_str(),
            OsStr::new("--config"),
            path.as_os_str(),
            OsStr::new("--policy"),
            OsStr::new("configured"),
            OsStr::new("--out"),
            out.as_os_str(),
        ],
        None,
        &[],
    )
    .await;
    let log = std::fs::read_to_string(out.join("logs/configured/leak.jsonl")).expect("log");
    assert!(
        log.contains("LEAKMARK-7731"),
        "the label keeps what the check printed: {}",
        ran.stderr
    );
    assert!(log.contains("\"senior_took_over\""), "a takeover happened");
    for (who, server) in [("junior", &j), ("senior", &s)] {
        let bodies: String = server.bodies().iter().map(|b| b.to_string()).collect();
        assert!(!bodies.is_empty(), "the {who} was asked");
        assert!(
            !bodies.contains("LEAKMARK"),
            "the {who} saw the hidden test's output"
        );
    }
    let senior_saw: String = s.bodies().iter().map(|b| b.to_string()).collect();
    assert!(
        senior_saw.contains("the check's tests are hidden"),
        "the note says why it shows no output"
    );
}

#[tokio::test]
async fn a_native_tool_session_that_fixes_its_failing_check_ends_with_the_belief_raised() {
    use serde_json::json;
    if !has_python() {
        eprintln!("skipped: needs python3");
        return;
    }
    let check = "python3 -m unittest -q";
    let fixed = "def double(x):\n    return 2 * x\n";
    let junior = Script::new(vec![
        reply(
            confident("Running the tests."),
            Some(("c1", "run", json!({"command": check}))),
        ),
        reply(
            confident("Fixing double."),
            Some((
                "c2",
                "write_file",
                json!({"path": "mathx.py", "content": fixed}),
            )),
        ),
        reply(
            confident("Again."),
            Some(("c3", "run", json!({"command": check}))),
        ),
        reply(
            confident("Done."),
            Some(("c4", "finish", json!({"summary": "double doubles"}))),
        ),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let test = "import unittest\nfrom mathx import double\n\n\nclass T(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(3), 6)\n";
    let dir = repo(&[
        ("mathx.py", "def double(x):\n    return x + 2\n"),
        ("test_mathx.py", test),
    ]);
    let mut cfg = config(&j, &s);
    cfg.agent.check = Some(check.into());
    cfg.policy.constant = 0.01;
    let (ran, events, _) = exec(dir.path(), &cfg, "Make double double.").await;
    let trace: Vec<String> = events
        .iter()
        .filter(|e| {
            e["type"] == "step_ended" || e["type"] == "tool_resulted" || e["type"] == "warning"
        })
        .map(|e| e.to_string().chars().take(300).collect())
        .collect();
    assert_eq!(
        ran.code,
        Some(0),
        "{}\n{}\n{}",
        ran.stdout,
        ran.stderr,
        trace.join("\n")
    );
    let ends: Vec<Value> = events
        .into_iter()
        .filter(|e| e["type"] == "step_ended")
        .collect();
    let present = |e: &Value, signal: &str| {
        e["terms"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["signal"] == signal && t["value"] == 1.0))
    };
    let failed = ends
        .iter()
        .position(|e| present(e, "check_failed"))
        .expect("the failing run is check_failed");
    assert!(
        !present(&ends[failed], "tool_error"),
        "a failing test run is not a tool error"
    );
    let fixed_at = ends
        .iter()
        .position(|e| present(e, "tests_fixed"))
        .expect("the passing run is tests_fixed");
    assert!(fixed_at > failed);
    let belief = |e: &Value| e["belief"].as_f64().expect("belief");
    assert!(
        belief(&ends[fixed_at]) > belief(&ends[failed]),
        "B after the fix {} is above B after the failure {}",
        belief(&ends[fixed_at]),
        belief(&ends[failed])
    );
    let last = ends.last().expect("a last step");
    assert!(belief(last) > belief(&ends[failed]));
}

/// `policy.calibration_without_check` is the judge of a session without `agent.check`;
/// with a check the session keeps `policy.calibration` (each told apart by its π₀, which
/// `session_started` logs).
#[tokio::test]
async fn a_session_without_a_check_uses_the_calibration_fitted_without_one() {
    let files = tempfile::tempdir().expect("files");
    let write = |name: &str, prior: f64| {
        let mut c = handoff::competence::Calibration::prior();
        c.prior = prior;
        let path = files.path().join(name);
        std::fs::write(&path, c.to_json()).expect("write calibration");
        path
    };
    let with = write("with.json", 0.61);
    let without = write("without.json", 0.34);
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    for (check, want) in [
        (None, 0.34),
        (
            Some("python3 -c 'from mathx import double; assert double(5) == 10'"),
            0.61,
        ),
    ] {
        let (j, s) = servers(
            Script::new(vec![reply(confident(right), None)]),
            Script::new(vec![]),
        )
        .await;
        let dir = repo(&[("mathx.py", STUB)]);
        let mut cfg = config(&j, &s);
        cfg.junior.tool_protocol = ToolProtocol::Code;
        cfg.agent.check = check.map(str::to_string);
        cfg.policy.constant = 0.01;
        cfg.policy.calibration = Some(with.clone());
        cfg.policy.calibration_without_check = Some(without.clone());
        let (ran, events, _) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
        let started = events
            .iter()
            .find(|e| e["type"] == "session_started")
            .expect("session_started");
        assert_eq!(
            started["prior"].as_f64(),
            Some(want),
            "check {check:?}: {}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
}
