//! What the text front ends print and where the log goes, through the real binary: model
//! and log text is shown, never obeyed by the terminal (review finding L3), and a session
//! whose log cannot be created does not start (L7).

use std::ffi::OsStr;
use std::path::Path;

use handoff::demo::script::{confident, reply};
use handoff::demo::server::{Script, ScriptedServer};
use serde_json::json;

use crate::agent::support::{FILES, bin, config, repo, write_config, write_done};

/// What a hostile model sends: a window title, a screen clear, hidden text.
const TITLE: &str = "\x1b]2;TITLE-FROM-MODEL\x07";
const CLEAR: &str = "\x1b[2J";
const HIDE: &str = "\x1b[8m";

/// No escape sequence, bell or carriage return reached the reader.
fn assert_inert(what: &str, text: &str) {
    for c in ['\x1b', '\x07', '\r', '\u{9b}'] {
        assert!(
            !text.contains(c),
            "{what} carries {c:?} raw:\n{}",
            text.escape_debug()
        );
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[tokio::test]
async fn model_and_log_text_is_shown_not_obeyed_in_every_text_front_end() {
    let words = format!("Look {TITLE} here {CLEAR} and {HIDE}hidden");
    let junior = Script::new(vec![
        reply(
            confident(&words),
            Some((
                "c1",
                "ask_operator",
                json!({
                    "question": format!(
                        "{HIDE}hidden question\x1b[0m which file?\nquestion to the operator: FORGED"
                    ),
                    "options": [format!("a{CLEAR}"), "b"],
                }),
            )),
        ),
        reply(
            confident("Done."),
            Some((
                "c2",
                "finish",
                json!({"summary": format!("did it {TITLE}")}),
            )),
        ),
    ]);
    let j = ScriptedServer::start(junior).await.expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let home = tempfile::tempdir().expect("home");
    let dir = repo(&FILES);
    let mut c = config(&j, &s);
    // The junior's question goes to the operator, who answers from the file.
    c.policy.route = handoff::config::RouteMode::Operator;
    let cfg = write_config(home.path(), &c);
    let answers = home.path().join("answers.jsonl");
    std::fs::write(&answers, "{\"answer\": \"a\", \"needed\": true}\n").expect("answers");
    let log = home.path().join("s.jsonl");
    let ran = bin(
        home.path(),
        &[
            os("exec"),
            os("--repo"),
            dir.path().as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("--answers"),
            answers.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("look around"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_inert("exec's trace (stderr)", &ran.stderr);
    assert_inert("exec's summary (stdout)", &ran.stdout);
    assert!(
        ran.stderr.contains("␛]2;TITLE-FROM-MODEL␇") && ran.stderr.contains("␛[2J"),
        "the model's words are shown:\n{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("question to the operator: ␛[8mhidden question␛[0m which file?"),
        "the question is readable:\n{}",
        ran.stderr
    );
    // A newline in the question is shown, so it cannot forge a second question line.
    assert!(
        ran.stderr
            .contains("which file?␊question to the operator: FORGED")
            && !ran.stderr.lines().any(|l| l
                .trim_start()
                .starts_with("question to the operator: FORGED")),
        "the question's newline forged a line:\n{}",
        ran.stderr
    );

    // A log is input too: a hostile session id and policy, read back by replay and report.
    let text = std::fs::read_to_string(&log).expect("log");
    let hostile_id = format!("=HYPERLINK(1){TITLE}");
    let edited: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("json line");
            if v["type"] == "session_started" {
                v["session_id"] = json!(hostile_id);
                v["policy"] = json!(format!("+pol{HIDE}"));
            }
            format!("{v}\n")
        })
        .collect();
    let hostile = home.path().join("hostile.jsonl");
    std::fs::write(&hostile, edited).expect("hostile log");

    let replay = bin(
        home.path(),
        &[os("replay"), os("--headless"), hostile.as_os_str()],
        None,
        &[],
    )
    .await;
    assert_eq!(replay.code, Some(0), "{}", replay.stderr);
    assert_inert("replay --headless", &replay.stdout);
    assert!(
        replay
            .stdout
            .contains("session =HYPERLINK(1)␛]2;TITLE-FROM-MODEL␇ (policy +pol␛[8m)"),
        "{}",
        replay.stdout
    );

    let csv = home.path().join("r.csv");
    let report = bin(
        home.path(),
        &[
            os("report"),
            hostile.as_os_str(),
            os("--csv"),
            csv.as_os_str(),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(report.code, Some(0), "{}", report.stderr);
    assert_inert("report", &report.stdout);
    assert_inert("report's warnings", &report.stderr);
    let table = std::fs::read_to_string(&csv).expect("csv");
    assert_inert("report --csv", &table);
    let row = table.lines().nth(1).expect("a session row");
    let cells: Vec<&str> = row.split(',').collect();
    // A cell that starts like a formula gets a leading quote; escapes are shown.
    assert_eq!(cells[2], "'=HYPERLINK(1)␛]2;TITLE-FROM-MODEL␇", "{row}");
    assert_eq!(cells[3], "'+pol␛[8m", "{row}");
}

/// `exec` with `--log` at `log`; the junior would write `done.txt`.
async fn exec_logging_to(
    home: &Path,
    dir: &Path,
    log: &Path,
) -> (crate::agent::support::Bin, usize) {
    let j = ScriptedServer::start(Script::new(vec![write_done()]))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let cfg = write_config(home, &config(&j, &s));
    let ran = bin(
        home,
        &[
            os("exec"),
            os("--repo"),
            dir.as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("write done.txt"),
        ],
        None,
        &[],
    )
    .await;
    (ran, j.requests().len())
}

#[tokio::test]
async fn a_log_that_cannot_be_created_stops_the_session_before_it_starts() {
    let home = tempfile::tempdir().expect("home");
    let existing = home.path().join("old.jsonl");
    std::fs::write(&existing, "someone else's log\n").expect("old log");
    // A directory that cannot be made: its parent is a file (a read-only directory would
    // not stop root, who may run these tests).
    let under_a_file = existing.join("new.jsonl");
    for (log, why) in [
        (&existing, "File exists"),
        (&under_a_file, "cannot create its directory"),
    ] {
        let dir = repo(&FILES);
        let (ran, requests) = exec_logging_to(home.path(), dir.path(), log).await;
        assert_eq!(ran.code, Some(4), "bad input: {}", ran.stderr);
        assert!(
            ran.stderr.contains("cannot create the session log")
                && ran.stderr.contains(&log.display().to_string())
                && ran.stderr.contains(why),
            "the error names the file and the cause:\n{}",
            ran.stderr
        );
        assert_eq!(requests, 0, "no model was asked anything");
        assert!(
            !dir.path().join("done.txt").exists(),
            "the repository is untouched"
        );
        let status = std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir.path())
            .output()
            .expect("git status");
        assert!(status.stdout.is_empty(), "the work tree is clean");
        let refs = std::process::Command::new("git")
            .args(["for-each-ref"])
            .current_dir(dir.path())
            .output()
            .expect("git refs");
        assert_eq!(
            String::from_utf8_lossy(&refs.stdout).lines().count(),
            1,
            "no checkpoint was made"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&existing).expect("old log"),
        "someone else's log\n",
        "the existing file is untouched"
    );
}
