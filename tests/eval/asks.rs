//! `eval asks` through the binary over the committed real runs of the bundled suite: every
//! logged question is counted once, under the origin its escalation names, and the per-
//! blocker counts agree with the runs' own results (another path through the code).

use std::io::Read as _;
use std::path::Path;
use std::process::Command;

use super::json_of;

/// `(questions, self-initiated questions)` in the gzipped logs under `dir`.
fn logged_questions(dir: &Path) -> (u64, u64) {
    let (mut all, mut own) = (0, 0);
    for entry in std::fs::read_dir(dir).expect("logs dir") {
        let path = entry.expect("entry").path();
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("log"))
            .read_to_string(&mut text)
            .expect("gzip");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json line");
            if v["type"] == "operator_asked" {
                all += 1;
                own += u64::from(v["self_initiated"] == true);
            }
        }
    }
    (all, own)
}

#[test]
fn questions_are_split_by_who_asked_and_none_is_lost() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = root.join("data/real/bundled-configured-3/shard-0-of-1");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["eval", "asks", "--json", "--suite"])
        .arg(root.join("suites/bundled"))
        .arg(&run)
        .output()
        .expect("run handoff");
    let scores = json_of(output);
    let rows = scores.as_array().expect("one row per origin");
    assert_eq!(rows.len(), 4, "junior, judge, loop, once at the start");
    let questions = |origin: &str| {
        rows.iter()
            .find(|r| r["origin"] == origin)
            .and_then(|r| r["questions"].as_u64())
            .expect("origin row")
    };
    let (all, own) = logged_questions(&run.join("logs/configured"));
    assert!(all > 0);
    assert_eq!(
        questions("junior") + questions("judge") + questions("loop"),
        all
    );
    assert_eq!(questions("junior"), own);
    // Twelve sessions, six with one blocker each: every origin's session counts add up.
    for r in rows {
        let c = &r["per_session"];
        let total: u64 = ["tp", "fp", "fn", "tn"]
            .iter()
            .map(|k| c[k].as_u64().expect("count"))
            .sum();
        assert_eq!(total, 12, "{r}");
        assert_eq!(r["per_blocker"]["registered"], 6);
    }
}

#[test]
fn logs_of_another_suite_are_bad_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let empty = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["eval", "asks", "--suite"])
        .arg(root.join("suites/bundled"))
        .arg(empty.path())
        .output()
        .expect("run handoff");
    assert_eq!(output.status.code(), Some(4), "bad input");
    assert!(String::from_utf8_lossy(&output.stderr).contains("no session log"));
}

#[test]
fn report_with_the_suite_prints_the_numbers_eval_asks_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = root.join("data/real/bundled-configured-3/shard-0-of-1");
    let suite = root.join("suites/bundled");
    let bin = env!("CARGO_BIN_EXE_handoff");
    let asks = json_of(
        Command::new(bin)
            .args(["eval", "asks", "--json", "--suite"])
            .arg(&suite)
            .arg(&run)
            .output()
            .expect("eval asks"),
    );
    let report = json_of(
        Command::new(bin)
            .args(["report", "--json", "--suite"])
            .arg(&suite)
            .arg(&run)
            .output()
            .expect("report"),
    );
    assert!(
        asks.as_array().is_some_and(|rows| !rows.is_empty()),
        "{asks}"
    );
    assert_eq!(report["asks_by_origin"], asks);
    // The report itself is still there beside it.
    assert!(
        report["sessions"].as_u64().is_some_and(|n| n > 0),
        "{report}"
    );
}

/// Every labelled sample's agreement, as its results page states it.
#[test]
fn the_matcher_figure_on_the_results_page_is_what_the_labels_give() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (labels, page) in [
        (
            "data/real/operator-suite/labels.jsonl",
            "docs/results/2026-12-06-operator-route.md",
        ),
        (
            "data/real/operator-suite-v2/labels.jsonl",
            "docs/results/2026-12-07-operator-table.md",
        ),
        (
            "data/real/operator-triage-spec/labels.jsonl",
            "docs/results/2026-12-07-operator-table.md",
        ),
    ] {
        let a = json_of(
            Command::new(env!("CARGO_BIN_EXE_handoff"))
                .args(["eval", "matcher", "--json"])
                .arg(root.join(labels))
                .output()
                .expect("eval matcher"),
        );
        let n = |k: &str| a[k].as_u64().expect(k);
        let len = |k: &str| a[k].as_array().expect(k).len() as u64;
        assert_eq!(
            n("agree") + len("false_accepts") + len("false_rejects"),
            n("questions")
        );
        let text = std::fs::read_to_string(root.join(page)).expect("results page");
        let figure = format!(
            "{} of {} ({:.1} %)",
            n("agree"),
            n("questions"),
            100.0 * n("agree") as f64 / n("questions") as f64
        );
        assert!(
            text.contains(&figure),
            "{page} should say {figure} for {labels}"
        );
    }
}
