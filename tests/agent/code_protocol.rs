//! The `code` tool protocol through the real binary and real HTTP: the junior writes code,
//! the harness places it, runs the check after every edit and decides the end.

use handoff::config::{Retry, ToolProtocol};
use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use serde_json::Value;

use super::support::{config, log_events, repo, servers};

const STUB: &str = "import math\n\n\ndef helper(x):\n    return math.floor(x)\n\n\ndef double(x):\n    \"\"\"Twice x.\"\"\"\n    raise NotImplementedError\n";
const TEST: &str =
    "from mathx import *\n\nassert double(3) == 6, f\"double(3) is {double(3)}\"\nprint(\"ok\")\n";

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Whether a step's evidence holds `signal` with a present value.
fn has_term(step_end: &Value, signal: &str) -> bool {
    step_end["terms"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["signal"] == signal && t["value"] == 1.0))
}

async fn exec(
    repo: &std::path::Path,
    cfg: &handoff::config::Config,
    task: &str,
) -> (Option<i32>, Vec<Value>, String) {
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("config.toml");
    std::fs::write(&path, toml::to_string(cfg).expect("toml")).expect("write config");
    let log = work.path().join("s.jsonl");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["exec", "--repo"])
        .arg(repo)
        .arg("--config")
        .arg(&path)
        .arg("--log")
        .arg(&log)
        .arg(task)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run handoff");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), log_events(&log), err)
}

/// A code junior that replies `wrong`, then `right`, on `mathx.py` with its check (the
/// senior's server is kept alive beside it).
async fn wrong_then_right(
    wrong: &str,
    right: &str,
) -> (
    (
        handoff::demo::server::ScriptedServer,
        handoff::demo::server::ScriptedServer,
    ),
    tempfile::TempDir,
    handoff::config::Config,
) {
    let junior = Script::new(vec![
        reply(confident(wrong), None),
        reply(confident(right), None),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("mathx.py", STUB), ("test_mathx.py", TEST)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.agent.check = Some("python3 test_mathx.py".into());
    ((j, s), dir, cfg)
}

#[tokio::test]
async fn a_failing_check_goes_back_to_the_junior_and_the_fix_ends_the_session() {
    let wrong = "The function doubles x.\n```python\ndef double(x):\n    return x + 2\n```\n";
    let right =
        "I see: it must multiply.\n\nmathx.py\n```python\ndef double(x):\n    return 2 * x\n```\n";
    let ((j, _s), dir, mut cfg) = wrong_then_right(wrong, right).await;
    cfg.agent.retry = Retry::Feedback;
    cfg.policy.constant = 0.05;
    let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(code, Some(0), "{err}");

    // The first message showed the file; the test is protected and withheld.
    let bodies = j.bodies();
    assert_eq!(
        bodies.len(),
        2,
        "two replies, no third: the pass ended the work"
    );
    assert!(
        bodies[0].get("tools").is_none(),
        "no tools field under code"
    );
    let first = bodies[0]["messages"][1]["content"]
        .as_str()
        .expect("first message");
    assert!(
        first.contains("mathx.py\n```python\nimport math\n"),
        "{first}"
    );
    assert!(!first.contains("assert double(3)"), "{first}");
    // The failure went back as the next message, with the assertion.
    let second = bodies[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .expect("last message");
    assert!(second.contains("python3 test_mathx.py"), "{second}");
    assert!(second.contains("double(3) is 5"), "{second}");

    let checks = of_type(&events, "check_ran");
    let passed: Vec<bool> = checks.iter().map(|c| c["passed"] == true).collect();
    assert_eq!(
        passed,
        [false, true],
        "the harness checked after each edit, once"
    );
    let ends = of_type(&events, "step_ended");
    assert_eq!(ends.len(), 2);
    assert!(has_term(ends[0], "check_failed"), "{}", ends[0]);
    assert!(has_term(ends[1], "tests_fixed"), "{}", ends[1]);
    assert!(
        !has_term(ends[0], "tool_error"),
        "a failing check is not a tool error"
    );
    let start = of_type(&events, "session_started")[0]["prior"]
        .as_f64()
        .expect("prior");
    let last = ends[1]["belief"].as_f64().expect("belief");
    assert!(last > start, "B went from {start} to {last}");
    let end = of_type(&events, "session_ended");
    assert_eq!(end[0]["outcome"], "success");
    // The file kept its import and helper, and the stub is gone.
    let text = std::fs::read_to_string(dir.path().join("mathx.py")).expect("read");
    assert!(
        text.starts_with("import math\n") && text.contains("def helper(x):"),
        "{text}"
    );
    assert!(
        text.contains("return 2 * x") && !text.contains("NotImplementedError"),
        "{text}"
    );
}

#[tokio::test]
async fn a_failing_check_under_resample_sends_the_first_message_again_at_the_retry_temperature() {
    let wrong = "```python\ndef double(x):\n    return x + 2\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let ((j, _s), dir, mut cfg) = wrong_then_right(wrong, right).await;
    cfg.junior.temperature = 0.0;
    cfg.agent.retry = Retry::Resample;
    cfg.agent.retry_temperature = 0.7;
    cfg.policy.constant = 0.05;
    let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(code, Some(0), "{err}");

    let bodies = j.bodies();
    assert_eq!(bodies.len(), 2, "the fresh reply passed and ended the work");
    // The same conversation as the first request: the failure is not shown.
    assert_eq!(bodies[1]["messages"], bodies[0]["messages"]);
    let temperature = |b: &Value| b["temperature"].as_f64().expect("temperature");
    assert_eq!(temperature(&bodies[0]), 0.0);
    assert!(
        (temperature(&bodies[1]) - 0.7).abs() < 1e-6,
        "{}",
        bodies[1]
    );

    let warned: Vec<&Value> = of_type(&events, "warning")
        .into_iter()
        .filter(|w| w["kind"] == "resampled")
        .collect();
    assert_eq!(warned.len(), 1, "the resample is in the log");
    let ends = of_type(&events, "step_ended");
    assert!(has_term(ends[0], "check_failed"), "{}", ends[0]);
    assert!(has_term(ends[1], "tests_fixed"), "{}", ends[1]);
    let text = std::fs::read_to_string(dir.path().join("mathx.py")).expect("read");
    assert!(
        text.contains("return 2 * x") && !text.contains("x + 2") && text.contains("def helper"),
        "the fresh definition replaced the failed one: {text}"
    );
}

#[tokio::test]
async fn code_that_does_not_parse_is_never_written_and_the_line_goes_back() {
    let broken = "```python\ndef double(x):\n    return (2 * x\n```\n";
    let junior = Script::new(vec![
        reply(confident(broken), None),
        reply(confident("GIVE UP: I do not know."), None),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&[("mathx.py", STUB), ("test_mathx.py", TEST)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.agent.check = Some("python3 test_mathx.py".into());
    cfg.policy.shadow = true;
    let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(code, Some(1), "the check fails at the end: {err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mathx.py")).expect("read"),
        STUB,
        "nothing was written"
    );
    let warned: Vec<&str> = of_type(&events, "warning")
        .iter()
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert!(warned.contains(&"syntax_rejected"), "{warned:?}");
    assert!(
        warned.contains(&"stuck"),
        "giving up is the stuck rule: {warned:?}"
    );
    let ends = of_type(&events, "step_ended");
    assert!(has_term(ends[0], "malformed_call"), "{}", ends[0]);
    let bodies = j.bodies();
    let note = bodies[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .expect("note");
    assert!(note.contains("line 2"), "{note}");
    let roles: Vec<&str> = bodies[1]["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["role"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        roles,
        ["system", "user", "user"],
        "the broken reply is not kept in the conversation, the note is"
    );
}

#[tokio::test]
async fn a_reply_that_sends_the_stub_back_is_not_written_and_the_junior_is_told() {
    let echo =
        "```python\ndef double(x):\n    \"\"\"Twice x.\"\"\"\n    raise NotImplementedError\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let ((j, _s), dir, cfg) = wrong_then_right(echo, right).await;
    let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(code, Some(0), "{err}");
    let warned: Vec<&Value> = of_type(&events, "warning")
        .into_iter()
        .filter(|w| w["kind"] == "stub_echoed")
        .collect();
    assert_eq!(warned.len(), 1, "{events:?}");
    assert!(
        warned[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`double`"))
    );
    // Nothing was written for the echo, so the check ran once, on the fix.
    assert_eq!(of_type(&events, "check_ran").len(), 1);
    let second = j.bodies()[1]["messages"].to_string();
    assert!(
        second.contains("still raises NotImplementedError"),
        "{second}"
    );
}

/// Issue "The cascade, for real": a takeover is a fresh conversation seeded with the
/// distilled note — the files as they stand, the failing check's output, the judge's reason
/// — and never the junior's raw replies; a code-writing senior gets the junior's protocol.
#[tokio::test]
async fn a_takeover_gives_a_code_senior_the_files_and_the_failing_check_and_no_junior_reply() {
    use handoff::config::{HandoffMode, RouteMode};
    use handoff::demo::script::{hesitant, join};
    let wrong = "The function doubles x.\n```python\ndef double(x):\n    return x + 2\n```\n";
    let junior = Script::new(vec![
        reply(confident(wrong), None),
        reply(
            join([confident("Maybe"), hesitant(&super::support::lost())]),
            None,
        ),
    ]);
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    let off = "```python\ndef double(x):\n    return x * x\n```\n";
    let senior = Script::new(vec![
        reply(confident(off), None),
        reply(confident(right), None),
    ]);
    let (j, s) = servers(junior, senior).await;
    let dir = repo(&[("mathx.py", STUB), ("test_mathx.py", TEST)]);
    let mut cfg = config(&j, &s);
    cfg.junior.tool_protocol = ToolProtocol::Code;
    cfg.senior.tool_protocol = ToolProtocol::Code;
    // The junior's two steps use up `[agent] max_steps`; the senior has its own two.
    cfg.agent.max_steps = 2;
    cfg.senior.max_steps = Some(2);
    cfg.agent.check = Some("python3 test_mathx.py".into());
    cfg.agent.retry = Retry::Feedback;
    cfg.policy.route = RouteMode::Senior;
    cfg.policy.handoff = HandoffMode::Rest;
    let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(of_type(&events, "senior_took_over").len(), 1, "{err}");

    let bodies = s.bodies();
    assert_eq!(
        bodies.len(),
        2,
        "its own budget: a wrong reply, then the fix"
    );
    assert!(
        bodies[0].get("tools").is_none(),
        "a code senior gets no tools"
    );
    let messages = bodies[0]["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2, "a fresh conversation: system and note");
    let note = messages[1]["content"].as_str().expect("note");
    // The files as they stand now, in the junior's first-message shape (the junior's edit in).
    assert!(
        note.contains("mathx.py\n```python\nimport math\n") && note.contains("return x + 2"),
        "{note}"
    );
    // The failing check, its command and output; what the junior changed, as a diff.
    assert!(note.contains("`python3 test_mathx.py` failed"), "{note}");
    assert!(note.contains("double(3) is 5"), "{note}");
    assert!(note.contains("+    return x + 2"), "{note}");
    // Never the junior's replies.
    assert!(!note.contains("The function doubles x."), "{note}");
    assert!(!note.contains("I am not sure which file"), "{note}");
    // The protected test is not shown as a file (its failing line is in the check's output,
    // as the junior saw it).
    assert!(!note.contains("test_mathx.py\n```"), "{note}");

    let text = std::fs::read_to_string(dir.path().join("mathx.py")).expect("read");
    assert!(
        text.contains("return 2 * x") && text.contains("def helper"),
        "{text}"
    );
}

/// `policy.escalate_on_failed_check`: the junior's first failed check hands off at once,
/// whatever B_t says (the judge is off here: τ = 0); in shadow mode it is only logged, once.
#[tokio::test]
async fn the_first_failed_check_hands_off_under_escalate_on_failed_check() {
    use handoff::config::{HandoffMode, RouteMode};
    let wrong = "```python\ndef double(x):\n    return x + 2\n```\n";
    let right = "```python\ndef double(x):\n    return 2 * x\n```\n";
    for shadow in [false, true] {
        let junior = Script::new(vec![
            reply(confident(wrong), None),
            reply(confident(wrong), None),
            reply(confident(right), None),
        ]);
        let senior = Script::new(vec![reply(confident(right), None)]);
        let (j, s) = servers(junior, senior).await;
        let dir = repo(&[("mathx.py", STUB), ("test_mathx.py", TEST)]);
        let mut cfg = config(&j, &s);
        cfg.junior.tool_protocol = ToolProtocol::Code;
        cfg.senior.tool_protocol = ToolProtocol::Code;
        cfg.agent.check = Some("python3 test_mathx.py".into());
        cfg.agent.retry = Retry::Resample;
        cfg.policy.threshold = handoff::config::ThresholdKind::Constant;
        cfg.policy.constant = 0.0;
        cfg.policy.route = RouteMode::Senior;
        cfg.policy.handoff = HandoffMode::Rest;
        cfg.policy.escalate_on_failed_check = true;
        cfg.policy.shadow = shadow;
        let (code, events, err) = exec(dir.path(), &cfg, "Implement `double` in mathx.py.").await;
        assert_eq!(code, Some(0), "{err}");
        let escalations = of_type(&events, "escalated");
        assert_eq!(escalations.len(), 1, "once per session: {escalations:?}");
        assert_eq!(escalations[0]["reason"], "check_failed");
        assert_eq!(escalations[0]["step"], 1);
        assert_eq!(escalations[0]["shadow"], shadow);
        if shadow {
            // The junior went on, failed again (no second escalation) and then passed.
            assert_eq!(j.bodies().len(), 3);
            assert!(s.bodies().is_empty());
        } else {
            assert_eq!(
                j.bodies().len(),
                1,
                "the junior stopped at its first failure"
            );
            assert_eq!(s.bodies().len(), 1);
            assert_eq!(of_type(&events, "senior_took_over").len(), 1);
        }
    }
}
