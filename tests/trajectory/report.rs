//! `report` on a hand-built corpus whose every number was counted by hand.

use std::path::Path;
use std::process::Command;

use handoff::analysis::report::{Report, load};
use handoff::protocol::{Actor, EscalationReason, Event, Outcome, Route};

use super::fixtures::{cost, ended, escalated, started, step_ended, write_log};

/// Seven sessions (see each comment); the expected numbers below follow from them alone.
fn corpus(dir: &Path) {
    use EscalationReason::{Forced, Threshold};
    // A: shadow; the judge would have sent it to the senior at tick 25 of 100; the junior
    // then failed, so the escalation was needed (senior tp).
    write_log(
        &dir.join("a.jsonl"),
        vec![
            started("A", true),
            escalated(25, Route::Senior, Threshold, true),
            cost(Actor::Junior, 0.01),
            ended(Outcome::Failure, false, 100, 0.01),
        ],
    );
    // B: a question at tick 40 of 80, marked not needed (operator fp); success.
    write_log(
        &dir.join("b.jsonl"),
        vec![
            started("B", false),
            escalated(40, Route::Operator, Threshold, false),
            Event::OperatorAsked {
                step: 1,
                question: "which format?".into(),
                options: vec![],
                default_assumption: None,
                self_initiated: false,
                topic: None,
            },
            Event::OperatorAnswered {
                step: 1,
                answer: "ISO".into(),
                needed: Some(false),
                deferred_to_senior: false,
            },
            cost(Actor::Junior, 0.02),
            ended(Outcome::Success, false, 80, 0.02),
        ],
    );
    // C: a silent failure (fn).
    write_log(
        &dir.join("c.jsonl"),
        vec![
            started("C", false),
            cost(Actor::Junior, 0.005),
            ended(Outcome::Failure, false, 50, 0.005),
        ],
    );
    // D: a quiet success.
    write_log(
        &dir.join("d.jsonl"),
        vec![
            started("D", false),
            cost(Actor::Junior, 0.004),
            ended(Outcome::Success, false, 60, 0.004),
        ],
    );
    // E: a real takeover at tick 30 of 120: censored, so its need is unknown (unmarked).
    write_log(
        &dir.join("e.jsonl"),
        vec![
            started("E", false),
            escalated(30, Route::Senior, Threshold, false),
            cost(Actor::Junior, 0.01),
            cost(Actor::Senior, 0.05),
            ended(Outcome::Success, true, 120, 0.06),
        ],
    );
    // F: the operator forced a takeover at tick 10 of 20; not the judge's decision, and
    // the failure afterwards is not a miss of the judge.
    write_log(
        &dir.join("f.jsonl"),
        vec![
            started("F", false),
            escalated(10, Route::Senior, Forced, false),
            cost(Actor::Junior, 0.001),
            cost(Actor::Senior, 0.02),
            ended(Outcome::Failure, true, 20, 0.021),
        ],
    );
    // G: crashed mid-session: incomplete, and its last line (line 5, after the header and
    // three events) is torn.
    let g = dir.join("g.jsonl");
    write_log(
        &g,
        vec![
            started("G", false),
            cost(Actor::Junior, 0.003),
            step_ended(7),
        ],
    );
    let mut text = std::fs::read_to_string(&g).expect("read");
    text.push_str("{\"t_ms\":9,\"type\":\"tok");
    std::fs::write(&g, text).expect("write");
}

fn close(got: Option<f64>, want: f64) {
    let got = got.expect("defined");
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[test]
fn report_numbers_match_the_hand_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    corpus(dir.path());
    let report = Report::new(&load(&[dir.path().to_path_buf()]));

    assert_eq!((report.files, report.sessions), (7, 7));
    let o = report.outcomes;
    assert_eq!(
        (o.success, o.failure, o.aborted, o.unlabelled, o.incomplete),
        (3, 3, 0, 0, 1)
    );
    assert_eq!((report.censored, report.shadow_sessions), (2, 1));

    let s = report.escalations_senior;
    assert_eq!((s.total, s.threshold, s.forced, s.shadow), (3, 2, 1, 1));
    let op = report.escalations_operator;
    assert_eq!((op.total, op.threshold, op.shadow), (1, 1, 0));
    // Earliness: A 25/100, E 30/120, F 10/20 (senior); B 40/80 (operator).
    close(s.earliness.mean, (0.25 + 0.25 + 0.5) / 3.0);
    close(s.earliness.median, 0.25);
    close(op.earliness.mean, 0.5);
    close(report.earliness.mean, 0.375);
    close(report.earliness.median, 0.375);

    // Ask-F1 per session: tp A, fp B, fn C, tn D, unknown E; F (forced) and G (no
    // result) are left out.
    let a = report.ask_sessions;
    let c = a.counts;
    assert_eq!((c.tp, c.fp, c.fn_, c.tn, c.unknown), (1, 1, 1, 1, 1));
    close(a.precision, 0.5);
    close(a.recall, 0.5);
    close(a.f1, 0.5);

    // Per escalation: tp A, fp B, fn C, unmarked E; F is not scored.
    let p = report.ask_pooled;
    assert_eq!((p.tp, p.fp, p.fn_, p.unmarked), (1, 1, 1, 1));
    close(p.precision, 0.5);
    close(p.recall, 0.5);
    close(p.f1, 0.5);
    let sr = report.ask_senior;
    assert_eq!((sr.tp, sr.fp, sr.fn_, sr.unmarked), (1, 0, 1, 1));
    close(sr.precision, 1.0);
    close(sr.recall, 0.5);
    close(sr.f1, 2.0 / 3.0);
    let or = report.ask_operator;
    assert_eq!((or.tp, or.fp, or.fn_), (0, 1, 1));
    close(or.f1, 0.0);

    // Routes taken: junior only A C D G, senior E F, operator B.
    let j = report.cost_junior_only;
    assert_eq!(j.sessions, 4);
    close(j.usd_per_session, (0.01 + 0.005 + 0.004 + 0.003) / 4.0);
    close(j.accuracy, 1.0 / 3.0); // G has no result
    let sn = report.cost_senior;
    assert_eq!(sn.sessions, 2);
    close(sn.usd_per_session, (0.06 + 0.021) / 2.0);
    close(sn.senior_usd_per_session, (0.05 + 0.02) / 2.0);
    close(sn.accuracy, 0.5);
    close(report.cost_operator.accuracy, 1.0);

    let point = report.cost_accuracy.expect("point");
    assert!((point.cost - 0.12 / 6.0).abs() < 1e-12, "{}", point.cost);
    assert!((point.accuracy - 0.5).abs() < 1e-12);

    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("g.jsonl:5:"),
        "{}",
        report.warnings[0]
    );
}

#[test]
fn the_command_prints_a_table_json_and_csv() {
    let dir = tempfile::tempdir().expect("tempdir");
    corpus(dir.path());
    let csv = dir.path().join("out/report.csv");
    std::fs::create_dir_all(dir.path().join("out")).expect("mkdir");
    let bin = env!("CARGO_BIN_EXE_handoff");

    let table = Command::new(bin)
        .arg("report")
        .arg(dir.path())
        .arg("--csv")
        .arg(&csv)
        .output()
        .expect("run");
    assert!(table.status.success(), "{table:?}");
    let text = String::from_utf8(table.stdout).expect("utf-8");
    assert!(text.starts_with("7 sessions from 7 files"), "{text}");
    let pooled = text
        .lines()
        .find(|l| l.starts_with("pooled"))
        .expect("pooled row");
    let cells: Vec<&str> = pooled.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "pooled", "1", "1", "1", "1", "0.500", "0.500", "0.500", "[0.00,", "1.00]"
        ],
        "the F1 interval over 7 sessions, one of them a true positive, spans [0, 1]"
    );

    let rows = std::fs::read_to_string(&csv).expect("csv");
    let lines: Vec<&str> = rows.lines().collect();
    let columns: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(columns[0], "kind");
    // 7 session rows + 4 escalation rows, every row as wide as the header.
    assert_eq!(lines.len(), 1 + 7 + 4);
    assert!(lines.iter().all(|l| l.split(',').count() == columns.len()));
    let kinds = |k: &str| lines.iter().filter(|l| l.starts_with(k)).count();
    assert_eq!((kinds("session,"), kinds("escalation,")), (7, 4));
    let needed = columns.iter().position(|c| *c == "needed").expect("column");
    let a_escalation = lines
        .iter()
        .find(|l| l.starts_with("escalation,") && l.contains(",A,"))
        .expect("A's escalation");
    assert_eq!(a_escalation.split(',').nth(needed), Some("true"));

    let json = Command::new(bin)
        .args(["report", "--json"])
        .arg(dir.path())
        .output()
        .expect("run");
    assert!(json.status.success());
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(value["sessions"], 7);
    assert_eq!(value["ask_senior"]["fn"], 1);
    assert_eq!(value["ask_sessions"]["tn"], 1);
    assert!(String::from_utf8_lossy(&json.stderr).contains("g.jsonl:5:"));
}

#[test]
fn the_command_fails_clearly_without_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("report")
        .arg(dir.path().join("nothing"))
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no session logs found") && err.contains("nothing"),
        "{err}"
    );
}
