//! The golden log: one recorded demo session (ids, times and paths normalised) checked in
//! as `tests/golden/demo_v1.jsonl`. It pins log v1 — every line must still parse and write
//! back byte for byte, so renaming a field fails here — and it is the input of the replay,
//! report and TUI snapshot tests (`src/tui/snapshot_tests.rs`), so those read what the
//! agent really emits, not a hand-written script.
//!
//! Regenerate after a deliberate change of the demo:
//! `cargo test --release --test all golden -- --ignored`, then review the diff.

use std::path::{Path, PathBuf};

use handoff::analysis::report::{Report, load};
use handoff::log::LogReader;
use handoff::protocol::{Event, Outcome, Route, Stamped};
use pretty_assertions::assert_eq;

use super::replay::assert_reproduced;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/demo_v1.jsonl")
}

fn golden_events() -> Vec<Event> {
    super::super::agent::support::read_log(&golden())
}

/// The demo's own judge settings (its servers' addresses do not matter for judging).
fn demo_config() -> handoff::config::Config {
    handoff::demo::run::config("http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1")
}

#[test]
fn log_v1_reads_without_a_warning_and_writes_back_byte_for_byte() {
    let reader = LogReader::open(&golden()).expect("the golden log opens");
    assert_eq!(reader.header().v, 1);
    let text = std::fs::read_to_string(golden()).expect("read");
    for (i, line) in text.lines().enumerate().skip(1) {
        let stamped: Stamped =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        let again = serde_json::to_string(&stamped).expect("serialize");
        assert_eq!(again, line, "line {} changed shape", i + 1);
    }
}

#[test]
fn the_golden_session_replays_to_its_own_beliefs_and_decisions() {
    let events = golden_events();
    let r = assert_reproduced(&events, &demo_config());
    assert!(
        !r.escalations.is_empty(),
        "the demo escalates on the threshold"
    );
}

#[test]
fn the_golden_session_reports_what_the_demo_did() {
    let report = Report::new(&load(&[golden()]));
    assert_eq!((report.files, report.sessions), (1, 1));
    assert_eq!(report.outcomes.success, 1);
    assert_eq!(report.censored, 1);
    assert_eq!(report.escalations_operator.total, 1);
    assert_eq!(report.escalations_senior.total, 1);
    assert_eq!(
        report.ask_pooled.tp, 1,
        "the operator marked the question needed"
    );
    // The session's own end says what the report's fold says.
    let ended = golden_events().iter().find_map(|e| match e {
        Event::SessionEnded { ask, outcome, .. } => Some((ask.tp, ask.fp, ask.fn_, *outcome)),
        _ => None,
    });
    let p = report.ask_pooled;
    assert_eq!(
        ended,
        Some((p.tp as u32, p.fp as u32, p.fn_ as u32, Outcome::Success))
    );
    let routes: Vec<Route> = handoff::metrics::session::summarize(&golden(), golden_events())[0]
        .escalations
        .iter()
        .map(|e| e.route)
        .collect();
    assert_eq!(routes, vec![Route::Operator, Route::Senior]);
}

/// Records the demo and normalises what differs between runs: the session id, times, the
/// temporary repository's path, its HEAD, the config digest (it covers the servers' ports).
#[tokio::test]
#[ignore = "regenerates tests/golden/demo_v1.jsonl"]
async fn regenerate_golden_demo_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("demo.jsonl");
    handoff::demo::run::demo(true, Some(log.clone()))
        .await
        .expect("the demo runs");
    let text = std::fs::read_to_string(&log).expect("log");
    let mut lines = text.lines();
    let mut header: serde_json::Value =
        serde_json::from_str(lines.next().expect("header")).expect("header json");
    header["handoff"] = "0.0.0".into();
    header["config_digest"] = "digest".into();
    let mut out = vec![header.to_string()];
    let mut repo = String::new();
    for (i, line) in lines.enumerate() {
        let mut s: Stamped = serde_json::from_str(line).expect("event");
        s.t_ms = i as u64 * 10;
        if let Event::SessionStarted {
            session_id,
            repo: r,
            head,
            config_digest,
            ..
        } = &mut s.event
        {
            repo = r.clone();
            *session_id = "golden-demo".into();
            *r = "/repo".into();
            *head = head.as_ref().map(|_| "0".repeat(40));
            *config_digest = "digest".into();
        }
        let line = serde_json::to_string(&s).expect("serialize");
        let line = if repo.is_empty() {
            line
        } else {
            line.replace(&repo, "/repo")
        };
        out.push(line);
    }
    std::fs::write(golden(), out.join("\n") + "\n").expect("write golden");
}
