//! The tool protocol in the loop, against servers that answer the way real small models on
//! llama.cpp do: calls written as text, broken calls, prose, the same reply again and again.
//! Every test is a whole session over loopback HTTP.

use handoff::agent::session::Approvals;
use handoff::config::{Config, ToolProtocol};
use handoff::demo::llamacpp::{self, Behaviour};
use handoff::demo::script::{confident, reply};
use handoff::demo::server::{Reply, Script};
use handoff::demo::sse;
use handoff::protocol::{EscalationReason, Event, Outcome, SignalKind};
use serde_json::json;

use super::support::{FILES, Ran, config, finish, repo, run, servers};

const CALC: [(&str, &str); 1] = [("calc.py", "def add(a, b):\n    return a - b\n")];

/// A junior that never hands off on belief alone (τ = 0): only the loop's own rules act.
fn patient(mut c: Config) -> Config {
    c.policy.constant = 0.0;
    c.agent.max_steps = 12;
    c
}

fn junior_calls(ran: &Ran) -> Vec<(String, serde_json::Value)> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCalled {
                actor: handoff::protocol::Actor::Junior,
                name,
                arguments,
                ..
            } => Some((name.clone(), arguments.clone())),
            _ => None,
        })
        .collect()
}

fn warnings(ran: &Ran, kind: &str) -> Vec<String> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { kind: k, message } if k == kind => Some(message.clone()),
            _ => None,
        })
        .collect()
}

fn escalations(ran: &Ran) -> Vec<(EscalationReason, Vec<SignalKind>)> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            Event::Escalated {
                reason,
                why,
                shadow: false,
                ..
            } => Some((*reason, why.iter().map(|t| t.signal).collect())),
            _ => None,
        })
        .collect()
}

/// The value each step gave a step signal, in step order (junior steps).
fn step_values(ran: &Ran, signal: SignalKind) -> Vec<f64> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            Event::StepEnded { terms, .. } if !terms.is_empty() => {
                terms.iter().find(|t| t.signal == signal).map(|t| t.value)
            }
            _ => None,
        })
        .collect()
}

fn senior_finishes() -> Script {
    Script::new(vec![finish()])
}

#[tokio::test]
async fn calls_written_as_text_run_under_auto_and_the_same_reply_gets_the_session_unstuck() {
    for behaviour in [
        Behaviour::JsonInContent,
        Behaviour::DoubledBraces,
        Behaviour::FencedBlock,
        Behaviour::ToolCallTags,
    ] {
        let (j, s) = servers(llamacpp::script(behaviour.clone()), senior_finishes()).await;
        let dir = repo(&CALC);
        let mut c = patient(config(&j, &s));
        c.junior.tool_protocol = ToolProtocol::Auto;
        let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
        let calls = junior_calls(&ran);
        // Every junior step ran the call it wrote as text: read_file, the same file.
        assert!(calls.len() >= 2, "{behaviour:?}: {calls:?}");
        assert!(calls.iter().all(|(n, _)| n == "read_file"), "{calls:?}");
        assert!(warnings(&ran, "malformed_call").is_empty(), "{behaviour:?}");
        assert!(warnings(&ran, "no_tool_call").is_empty(), "{behaviour:?}");
        // llama.cpp's 400 for logprobs with tools: the client falls back, the session goes on.
        assert_eq!(j.requests().len() as u32, ran_junior_requests(&ran) + 1);
        // The same call on the same tree: the repeat count grows, and the stuck rule hands
        // off well before max_steps.
        let repeats = step_values(&ran, SignalKind::RepeatedAction);
        assert_eq!(repeats, vec![0.0, 1.0, 2.0, 3.0], "{behaviour:?}");
        assert_eq!(warnings(&ran, "stuck").len(), 1);
        let esc = escalations(&ran);
        assert_eq!(esc.len(), 1, "{esc:?}");
        assert_eq!(esc[0].0, EscalationReason::Stuck);
        assert!(esc[0].1.contains(&SignalKind::RepeatedAction), "{esc:?}");
        assert_eq!(ran.summary.outcome, Outcome::Unlabelled);
        assert!(ran.summary.steps < 12);
    }
}

/// Junior requests that got an answer (the refused first attempt is not a step).
fn ran_junior_requests(ran: &Ran) -> u32 {
    ran.events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::StepStarted {
                    actor: handoff::protocol::Actor::Junior,
                    ..
                }
            )
        })
        .count() as u32
}

#[tokio::test]
async fn native_only_does_not_read_text_and_nudges() {
    let (j, s) = servers(
        llamacpp::script(Behaviour::JsonInContent),
        senior_finishes(),
    )
    .await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.junior.tool_protocol = ToolProtocol::Native;
    c.junior.logprobs = false;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    assert!(junior_calls(&ran).is_empty());
    let nudges = warnings(&ran, "no_tool_call");
    assert_eq!(nudges.len(), 3, "max_repairs = 2, then stuck: {nudges:?}");
    // The model was told, in the conversation, to reply with one tool call.
    let second = &j.bodies()[1];
    let last = second["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages");
    assert_eq!(last["role"], "user");
    let told = last["content"].as_str().unwrap_or("");
    assert!(
        told.contains("exactly one tool call") && told.contains("finish"),
        "{told}"
    );
    let esc = escalations(&ran);
    assert_eq!(esc.len(), 1);
    assert_eq!(esc[0].0, EscalationReason::Stuck);
    assert!(esc[0].1.contains(&SignalKind::NoToolCall), "{esc:?}");
}

#[tokio::test]
async fn an_unknown_tool_gets_one_repair_message_naming_it_and_the_allowed_tools() {
    let (j, s) = servers(llamacpp::script(Behaviour::UnknownTool), senior_finishes()).await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.junior.tool_protocol = ToolProtocol::Text;
    c.agent.max_repairs = 1;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    let bodies = j.bodies();
    assert!(
        bodies.iter().all(|b| b.get("tools").is_none()),
        "text: no tools field"
    );
    // One repair: two junior requests, the second ends with the repair message.
    assert_eq!(bodies.len(), 2);
    let last = bodies[1]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages");
    let told = last["content"].as_str().unwrap_or("");
    assert!(told.contains("open_file"), "{told}");
    assert!(
        told.contains("read_file") && told.contains("finish"),
        "{told}"
    );
    assert_eq!(warnings(&ran, "malformed_call").len(), 2);
    assert_eq!(step_values(&ran, SignalKind::MalformedCall), vec![1.0, 1.0]);
    let esc = escalations(&ran);
    assert_eq!(esc[0].0, EscalationReason::Stuck);
    assert!(esc[0].1.contains(&SignalKind::MalformedCall), "{esc:?}");
}

#[tokio::test]
async fn a_text_only_reply_lowers_the_belief_and_the_escalation_says_why() {
    let (j, s) = servers(llamacpp::script(Behaviour::ProseOnly), senior_finishes()).await;
    let dir = repo(&CALC);
    let mut c = config(&j, &s);
    c.junior.tool_protocol = ToolProtocol::Text;
    c.policy.constant = 0.62;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    let beliefs: Vec<f64> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::StepEnded { belief, terms, .. } if !terms.is_empty() => Some(*belief),
            _ => None,
        })
        .collect();
    // The prior is 0.7; one prose reply takes the belief below 0.62 by itself.
    assert_eq!(beliefs.len(), 1, "{beliefs:?}");
    assert!(beliefs[0] < 0.62, "{beliefs:?}");
    let esc = escalations(&ran);
    assert_eq!(esc.len(), 1);
    assert_eq!(esc[0].0, EscalationReason::Threshold);
    assert_eq!(esc[0].1.first(), Some(&SignalKind::NoToolCall), "{esc:?}");
}

#[tokio::test]
async fn several_calls_in_one_reply_run_the_first_and_warn() {
    let two = format!(
        "{}\n{}",
        llamacpp::TEXT_CALL,
        r#"{"name": "finish", "arguments": {"summary": "x"}}"#
    );
    let junior = Script::new(vec![])
        .models(&["qwen2.5-coder-0.5b-instruct"])
        .respond_with(move |body| {
            let n = body["messages"].as_array().map_or(0, Vec::len);
            let content = if n <= 2 {
                two.clone()
            } else {
                r#"{"name": "finish", "arguments": {"summary": "done"}}"#.to_string()
            };
            llamacpp::reply(&Behaviour::Content(content), body)
        });
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.junior.tool_protocol = ToolProtocol::Text;
    let ran = run(c, dir.path(), "look", vec![], Approvals::Refused).await;
    let calls = junior_calls(&ran);
    assert_eq!(calls[0].0, "read_file");
    assert_eq!(calls[1].0, "finish");
    assert_eq!(calls.len(), 2);
    assert_eq!(warnings(&ran, "several_tool_calls").len(), 1);
}

#[tokio::test]
async fn a_test_run_again_after_an_edit_is_progress_not_a_repeat() {
    let cat = || {
        reply(
            confident("Checking."),
            Some(("c1", "run", json!({"command": "cat notes.txt"}))),
        )
    };
    let write = reply(
        confident("Fixing."),
        Some((
            "c2",
            "write_file",
            json!({"path": "notes.txt", "content": "bye\n"}),
        )),
    );
    let junior = Script::new(vec![cat(), write, cat(), cat(), finish()]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let dir = repo(&FILES);
    let ran = run(
        patient(config(&j, &s)),
        dir.path(),
        "edit",
        vec![],
        Approvals::Refused,
    )
    .await;
    // cat, write, cat (tree changed: new), cat (same tree: 1 repeat), finish.
    assert_eq!(
        step_values(&ran, SignalKind::RepeatedAction),
        vec![0.0, 0.0, 0.0, 1.0, 0.0]
    );
    assert!(warnings(&ran, "stuck").is_empty());
}

#[tokio::test]
async fn stuck_with_no_route_left_ends_aborted() {
    // Shadow mode: the judge only watches, so a stuck junior has nowhere to go.
    let (j, s) = servers(
        llamacpp::script(Behaviour::FencedBlock),
        Script::new(vec![]),
    )
    .await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.policy.shadow = true;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    assert_eq!(ran.summary.outcome, Outcome::Aborted);
    assert_eq!(
        ran.summary.steps, 4,
        "stuck_after = 3: the fourth identical call"
    );
    assert!(s.requests().is_empty(), "no senior");
    assert!(ran.events.iter().any(|e| matches!(
        e,
        Event::Escalated {
            reason: EscalationReason::Stuck,
            shadow: true,
            ..
        }
    )));
}

/// The rs-palindrome session of the bundled rerun: the 0.5B cycled a search, a test run and
/// a question on an unchanged tree, none made a fourth time, and reached max_steps. Every
/// move after the first round is a repeat on that tree; the third repeat is stuck.
#[tokio::test]
async fn a_cycle_of_three_moves_on_one_tree_is_stuck_before_max_steps() {
    let moves = [
        ("search", json!({"pattern": "hello"})),
        ("run", json!({"command": "cat notes.txt"})),
        ("read_file", json!({"path": "notes.txt"})),
    ];
    let replies: Vec<Reply> = moves
        .iter()
        .cycle()
        .take(12)
        .enumerate()
        .map(|(i, (tool, args))| {
            let id = format!("c{i}");
            reply(
                confident("Looking."),
                Some((id.as_str(), tool, args.clone())),
            )
        })
        .collect();
    let (j, s) = servers(Script::new(replies), Script::new(vec![])).await;
    let dir = repo(&FILES);
    let mut c = patient(config(&j, &s));
    c.policy.shadow = true;
    // Under the old rule (one move made a fourth time) this ran to max_steps.
    c.agent.max_steps = 9;
    let ran = run(c, dir.path(), "look around", vec![], Approvals::Refused).await;
    assert_eq!(
        ran.summary.steps, 6,
        "3 distinct moves, then 3 repeats on one tree (stuck_after = 3)"
    );
    assert_eq!(
        step_values(&ran, SignalKind::RepeatedAction),
        vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        "no one move was made a third time"
    );
    let stuck = warnings(&ran, "stuck");
    assert_eq!(stuck.len(), 1, "{stuck:?}");
    assert!(stuck[0].starts_with("3 repeated moves"), "{}", stuck[0]);
    assert!(
        !ran.events
            .iter()
            .any(|e| matches!(e, Event::Warning { kind, .. } if kind == "max_steps")),
        "the stuck rule fired first"
    );
}

/// A reply whose usage says the server read `prompt_tokens`.
fn read_with_usage(id: &str, path: &str, prompt_tokens: u64) -> Reply {
    let args = json!({"path": path}).to_string();
    let mut chunks = vec![sse::data(&sse::tokens(&confident("Reading.")))];
    chunks.push(sse::data(&sse::tool_call(
        0,
        Some(id),
        Some("read_file"),
        &args,
    )));
    chunks.push(sse::data(&sse::finish("tool_calls")));
    chunks.push(sse::data(&sse::usage(prompt_tokens, 3)));
    chunks.push(sse::done());
    Reply::sse(chunks, std::time::Duration::ZERO)
}

#[tokio::test]
async fn the_history_is_kept_within_the_context_window() {
    let big: String = (0..120)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    let files = [
        ("a.txt", big.as_str()),
        ("b.txt", big.as_str()),
        ("c.txt", big.as_str()),
    ];
    let paths = ["a.txt", "b.txt", "c.txt", "a.txt", "b.txt", "c.txt"];
    let mut replies: Vec<Reply> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| read_with_usage(&format!("r{i}"), p, 0))
        .collect();
    // No usage reported (0): nothing to calibrate or to call truncated.
    let done = json!({"summary": "read"}).to_string();
    replies.push(Reply::sse(
        sse::completion(&confident("Done."), &[("c9", "finish", done.as_str())], 0),
        std::time::Duration::ZERO,
    ));
    let (j, s) = servers(Script::new(replies), Script::new(vec![])).await;
    let dir = repo(&files);
    let mut c = patient(config(&j, &s));
    c.junior.context_window = Some(4096);
    c.junior.max_tokens = Some(512);
    c.agent.stuck_after = 0;
    let ran = run(c, dir.path(), "read everything", vec![], Approvals::Refused).await;
    let bodies = j.bodies();
    let last = bodies.last().expect("requests");
    let messages = last["messages"].as_array().expect("messages");
    let sent = serde_json::to_string(messages).map_or(0, |s| s.len());
    // Each file is ~3 kB: unfitted, the last request would carry six of them (~20 kB).
    assert!(sent < 12_000, "{sent} bytes sent");
    assert_eq!(
        messages[1]["content"], "read everything",
        "the task stays whole"
    );
    let elided = messages
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[elided to fit the context window:"))
        })
        .count();
    assert!(elided >= 2, "{elided}");
    let first_tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    assert!(
        first_tool["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[elided to fit the context window:")),
        "the oldest output goes first: {first_tool}"
    );
    let last_tool = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    assert!(last_tool.contains("line 119"), "the last step stays whole");
    assert_eq!(warnings(&ran, "context_trimmed").len(), 1);
    assert!(warnings(&ran, "context_truncated").is_empty());
}

#[tokio::test]
async fn a_server_that_truncates_the_prompt_is_reported_once() {
    let big: String = (0..400)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    let files = [("a.txt", big.as_str())];
    let replies = vec![
        read_with_usage("r0", "a.txt", 700),
        read_with_usage("r1", "a.txt", 500),
        read_with_usage("r2", "a.txt", 500),
        finish(),
    ];
    let (j, s) = servers(Script::new(replies), Script::new(vec![])).await;
    let dir = repo(&files);
    let mut c = patient(config(&j, &s));
    c.agent.stuck_after = 0;
    let ran = run(c, dir.path(), "read", vec![], Approvals::Refused).await;
    let reported = warnings(&ran, "context_truncated");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains("500 prompt tokens"), "{reported:?}");
}

/// The real 0.5B under the `json_schema` protocol (recorded llama.cpp stream): the sample
/// the grammar refused is not a token of the reply, the schema lists `name` before
/// `arguments` (llama.cpp's grammar follows property order), and a call made again on the
/// same tree is left out of the next reply's schema while the system prompt stays the same.
#[tokio::test]
async fn the_grammar_reply_reads_clean_and_a_repeated_call_is_barred_from_the_next_schema() {
    let (j, s) = servers(llamacpp::script(Behaviour::GrammarJson), senior_finishes()).await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.junior.tool_protocol = ToolProtocol::JsonSchema;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    // Step 1's tokens spell the reply exactly: no "```" from the refused sample.
    let mut first_step = String::new();
    for e in &ran.events {
        match e {
            Event::Token { text, .. } => first_step.push_str(text),
            Event::ToolCalled { .. } => break,
            _ => {}
        }
    }
    assert_eq!(first_step, llamacpp::GRAMMAR_CALL);
    let calls = junior_calls(&ran);
    assert_eq!(
        calls[0],
        ("search".into(), json!({"pattern": "a", "path": "calc.py"}))
    );
    let bodies = j.bodies();
    let schema = bodies[0]["response_format"].to_string();
    let (name, arguments) = (
        schema.find(r#""name":{"const""#).expect("name"),
        schema.find(r#""arguments":"#).expect("arguments"),
    );
    assert!(name < arguments, "{schema}");
    let offered = |b: &serde_json::Value| -> Vec<String> {
        b["response_format"]["json_schema"]["schema"]["anyOf"]
            .as_array()
            .expect("anyOf")
            .iter()
            .map(|x| {
                x["properties"]["name"]["const"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    };
    // Step 2 repeats step 1 on the same tree: step 3's schema leaves `search` out.
    assert_eq!(offered(&bodies[1]).len(), 8);
    assert!(!offered(&bodies[2]).contains(&"search".to_string()));
    assert_eq!(offered(&bodies[2]).len(), 7);
    assert_eq!(bodies[2]["messages"][0], bodies[0]["messages"][0]);
    assert!(!warnings(&ran, "repeat_barred").is_empty());
    // The model was told why it sees the same result again.
    let told = bodies[2]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(told.contains("You made this exact call before"), "{told}");
}

/// The junior's repeat count survives a senior's step that left the tree as it was: the
/// junior that goes back to the same call is stuck again at once, not after another
/// `stuck_after` rounds (measured on the real lane: with the count reset at every return,
/// two default-policy sessions reached max_steps repeating without the rule firing).
#[tokio::test]
async fn the_repeat_count_survives_a_senior_step_that_changed_nothing() {
    let senior_reads = Script::new(vec![reply(
        confident("Reading."),
        Some(("s1", "read_file", json!({"path": "src/main.rs"}))),
    )]);
    let (j, s) = servers(llamacpp::script(Behaviour::JsonInContent), senior_reads).await;
    let dir = repo(&CALC);
    let mut c = patient(config(&j, &s));
    c.junior.tool_protocol = ToolProtocol::Auto;
    c.policy.handoff = handoff::config::HandoffMode::Step;
    let ran = run(c, dir.path(), "fix add", vec![], Approvals::Refused).await;
    let kinds: Vec<String> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Warning { kind, .. } if kind == "stuck" => Some("stuck".to_string()),
            Event::SeniorReturned { .. } => Some("returned".to_string()),
            Event::StepStarted {
                actor: handoff::protocol::Actor::Junior,
                ..
            } => Some("junior step".to_string()),
            _ => None,
        })
        .collect();
    let returned = kinds
        .iter()
        .position(|k| k == "returned")
        .unwrap_or_else(|| panic!("the senior returned: {kinds:?}"));
    let after: Vec<&String> = kinds[returned + 1..].iter().take(2).collect();
    assert_eq!(after, ["junior step", "stuck"], "{kinds:?}");
}
