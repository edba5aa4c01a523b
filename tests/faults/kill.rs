//! Crash safety: the real `handoff exec --json` binary, SIGKILLed at random points of
//! sessions against scripted servers in this process. After every kill the log must still
//! read (a torn last line tolerated), report and calibrate, agree with what the binary
//! printed, and hold every event printed up to the last durability point (a step or the
//! session ended) — `exec` prints those only once the log has synced them.
//!
//! The normal suite kills a few sessions; `--features stress` (or `HANDOFF_KILLS=N`) runs
//! the full 80. `HANDOFF_KILL_SEED` replays one sequence of kill points.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use handoff::analysis::report::{Report, load};
use handoff::competence::{Calibration, FitOptions, Observation, Trajectory, fit};
use handoff::config::{Config, HandoffMode};
use handoff::demo::script::{confident, hesitant, join};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::{Tok, completion};
use handoff::log::LogReader;
use handoff::log::reader::Damage;
use handoff::protocol::{Actor, Event, Outcome, Stamped};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::common::{CHECK, FILES};
use crate::agent::support::{config, repo, servers};

/// Pause between streamed chunks: long enough that kills land mid-stream, short enough
/// that a session takes well under a second.
const GAP: Duration = Duration::from_millis(3);

fn kills() -> usize {
    let default = if cfg!(feature = "stress") { 80 } else { 8 };
    std::env::var("HANDOFF_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Index of the step a request is for: how many assistant turns its history holds.
fn turn(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// The task as the junior was given it (message 1).
fn task_of(body: &Value) -> String {
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn streamed(toks: Vec<Tok>, call: (&str, &str, Value)) -> Reply {
    let (id, name, args) = call;
    let args = args.to_string();
    Reply::sse(completion(&toks, &[(id, name, args.as_str())], 200), GAP)
}

/// A junior that reads, writes, runs, lists and finishes; with "lost" in the task it
/// hesitates at its third step until the judge hands off; with "skip" it never writes the
/// file the check looks for.
fn junior() -> Script {
    Script::new(vec![]).respond_with(|body| {
        let task = task_of(body);
        let write = if task.contains("skip") {
            "other.txt"
        } else {
            "done.txt"
        };
        match turn(body) {
            0 => streamed(
                confident("I will read the notes first to see what is there."),
                ("c0", "read_file", json!({"path": "notes.txt"})),
            ),
            1 => streamed(
                confident("Now I write the file the task asks for."),
                (
                    "c1",
                    "write_file",
                    json!({"path": write, "content": "done\n"}),
                ),
            ),
            2 if task.contains("lost") => streamed(
                join([
                    confident("Then"),
                    hesitant(&"I am not sure what the format should be, ".repeat(10)),
                ]),
                ("c2", "run", json!({"command": "true"})),
            ),
            2 => streamed(
                confident("Checking that the tree is fine."),
                ("c2", "run", json!({"command": "true"})),
            ),
            3 => streamed(
                confident("Listing the files once more."),
                ("c3", "list_files", json!({})),
            ),
            _ => streamed(
                confident("All done."),
                ("c4", "finish", json!({"summary": "done"})),
            ),
        }
    })
}

/// The senior writes the file and finishes.
fn senior() -> Script {
    Script::new(vec![]).respond_with(|body| {
        // Its history starts fresh at the takeover: system, handoff note, then its turns.
        if turn(body) == 0 {
            streamed(
                confident("Writing it."),
                (
                    "s1",
                    "write_file",
                    json!({"path": "done.txt", "content": "done\n"}),
                ),
            )
        } else {
            streamed(
                confident("Finished."),
                ("s2", "finish", json!({"summary": "done"})),
            )
        }
    })
}

/// What one run of the binary left behind.
struct Run {
    /// Events printed on stdout before the end (the summary object excluded).
    printed: Vec<Value>,
    /// The summary line was printed: the session ran to its end.
    finished: bool,
    log: PathBuf,
    /// From the first printed event to the process's exit: the span kills are timed in.
    elapsed: Duration,
}

async fn launch(config: &Path, log: &Path, task: &str, kill_after: Option<Duration>) -> Run {
    let dir = repo(&FILES);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("exec")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(config)
        .arg("--json")
        .arg("--log")
        .arg(log)
        .arg(task)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start handoff");
    let mut stdout = child.stdout.take().expect("stdout");
    let (first_line, started_session) = tokio::sync::oneshot::channel::<Instant>();
    let reader = tokio::spawn(async move {
        let mut bytes = Vec::new();
        let mut first_line = Some(first_line);
        let mut chunk = [0u8; 4096];
        loop {
            match stdout.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            }
            if bytes.contains(&b'\n')
                && let Some(tx) = first_line.take()
            {
                let _ = tx.send(Instant::now());
            }
        }
        bytes
    });
    // Kills and session lengths are both counted from the first printed event, so a slow
    // start-up (a loaded machine) neither widens the window nor pushes a kill past the end.
    let first_event = started_session.await.ok();
    if let Some(after) = kill_after {
        tokio::time::sleep(after).await;
        // SIGKILL: no handler, no destructor, no flush runs.
        let _ = child.start_kill();
    }
    let _ = child.wait().await;
    let elapsed = first_event.map_or(Duration::ZERO, |t| t.elapsed());
    let bytes = reader.await.expect("stdout reader");
    let text = String::from_utf8_lossy(&bytes);
    // A line cut by the kill has no newline; it was never a whole event.
    let whole = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    let mut printed: Vec<Value> = whole
        .lines()
        .map(|l| serde_json::from_str(l).expect("every printed line is JSON"))
        .collect();
    let finished = printed.last().is_some_and(|v| v["type"] == "summary");
    if finished {
        printed.pop();
    }
    Run {
        printed,
        finished,
        log: log.to_path_buf(),
        elapsed,
    }
}

fn durable(v: &Value) -> bool {
    v["type"] == "step_ended" || v["type"] == "session_ended"
}

/// Checks one run's log against its stdout; returns the logged events.
fn check(run: &Run) -> Vec<Stamped> {
    let last_durable = run.printed.iter().rposition(durable);
    let nothing_owed = || {
        assert!(
            last_durable.is_none(),
            "{}: no log, but the binary printed a durable event",
            run.log.display()
        );
        Vec::new()
    };
    match std::fs::metadata(&run.log) {
        Err(_) => return nothing_owed(),
        // Killed between creating the file and writing its header.
        Ok(m) if m.len() == 0 => return nothing_owed(),
        Ok(_) => {}
    }
    let reader = LogReader::open(&run.log).expect("a killed session's log still opens");
    let mut logged = Vec::new();
    let mut torn = false;
    for item in reader {
        assert!(!torn, "only the last line may be torn");
        match item {
            Ok(s) => logged.push(s),
            Err(w) if w.damage == Damage::Torn => torn = true,
            Err(w) => panic!("damage other than a torn last line: {w}"),
        }
    }
    let values: Vec<Value> = logged
        .iter()
        .map(|s| serde_json::to_value(s).expect("encode"))
        .collect();
    // Both are prefixes of the one stream the session emitted.
    for (i, (l, p)) in values.iter().zip(&run.printed).enumerate() {
        assert_eq!(l, p, "{}: event {i} differs", run.log.display());
    }
    if let Some(k) = last_durable {
        assert!(
            values.len() > k,
            "{}: printed durable event {k} ({}) but the log holds only {} events",
            run.log.display(),
            run.printed[k]["type"],
            values.len()
        );
    }
    if run.finished {
        assert_eq!(
            values, run.printed,
            "a finished session's log is its stdout"
        );
    }
    logged
}

/// The judge's raw observations of a log, as `calibrate` reads them: token signals per
/// junior tick (the `BeliefUpdated` right after each junior token), step facts at step ends.
fn trajectory(events: &[Stamped]) -> Trajectory {
    let label = events.iter().find_map(|s| match s.event {
        Event::SessionEnded {
            outcome: Outcome::Success,
            ..
        } => Some(true),
        Event::SessionEnded {
            outcome: Outcome::Failure,
            ..
        } => Some(false),
        _ => None,
    });
    let obs = |terms: &[handoff::protocol::EvidenceTerm]| -> Vec<Observation> {
        terms
            .iter()
            .map(handoff::protocol::EvidenceTerm::observation)
            .collect()
    };
    let mut tr = Trajectory::new(label);
    let mut after_token = false;
    for s in events {
        match &s.event {
            Event::Token {
                actor: Actor::Junior,
                ..
            } => after_token = true,
            Event::BeliefUpdated { terms, .. } if after_token => {
                tr.push_tick(&obs(terms));
                after_token = false;
            }
            Event::StepEnded {
                actor: Actor::Junior,
                terms,
                ..
            } => tr.push_observations(&obs(terms)),
            _ => {}
        }
    }
    tr
}

async fn setup() -> (ScriptedServer, ScriptedServer, tempfile::TempDir, PathBuf) {
    let (j, s) = servers(junior(), senior()).await;
    let mut cfg: Config = config(&j, &s);
    cfg.policy.handoff = HandoffMode::Rest;
    cfg.agent.check = Some(CHECK.into());
    let work = tempfile::tempdir().expect("tempdir");
    let path = work.path().join("config.toml");
    std::fs::write(&path, toml::to_string(&cfg).expect("toml")).expect("write config");
    (j, s, work, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_no_flushed_event() {
    let (_j, _s, work, config) = setup().await;
    let logs = work.path().join("logs");
    let n = Arc::new(AtomicUsize::new(0));
    let log = |name: &str| logs.join(format!("{}-{name}.jsonl", n.fetch_add(1, Ordering::SeqCst)));
    let tasks = [
        "create done.txt",
        "create done.txt, lost",
        "create done.txt, skip",
    ];

    // Whole sessions first: they label the corpus and time the kill window (on the
    // shortest, so that a whole session slowed by a loaded machine does not stretch the
    // window past the end of the killed ones).
    let mut shortest = Duration::MAX;
    let mut outcomes = Vec::new();
    for task in tasks {
        let run = launch(&config, &log("whole"), task, None).await;
        assert!(run.finished, "{task}: the session ran to its end");
        let events = check(&run);
        let escalated = events.iter().any(|s| s.event.kind() == "escalated");
        assert_eq!(escalated, task.contains("lost"), "{task}: escalation");
        outcomes.push(events.iter().find_map(|s| match s.event {
            Event::SessionEnded { outcome, .. } => Some(outcome),
            _ => None,
        }));
        shortest = shortest.min(run.elapsed);
    }
    assert_eq!(
        outcomes,
        vec![
            Some(Outcome::Success),
            Some(Outcome::Success),
            Some(Outcome::Failure)
        ]
    );

    let seed = std::env::var("HANDOFF_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Kills are timed from the first event (see `launch`).
    let window = 0.0..shortest.as_secs_f64() * 0.9;
    let (mut mid_session, mut shorter) = (0, 0);
    for i in 0..kills() {
        let at = Duration::from_secs_f64(rng.random_range(window.clone()));
        let run = launch(&config, &log("killed"), tasks[i % 2], Some(at)).await;
        let events = check(&run);
        if !run.finished && !events.is_empty() {
            mid_session += 1;
        }
        if events.len() < run.printed.len() {
            shorter += 1;
        }
    }
    eprintln!(
        "kill test (seed {seed}): {} kills, {mid_session} mid-session, {shorter} logs shorter than \
         stdout (by events past the last step end)",
        kills()
    );
    assert!(
        mid_session * 2 >= kills(),
        "most kills should land inside a session (seed {seed}): {mid_session} of {}",
        kills()
    );

    // The whole corpus reports and calibrates.
    let corpus = load(std::slice::from_ref(&logs));
    for w in &corpus.warnings {
        assert!(
            w.contains("torn last line") || w.contains("file is empty"),
            "{w}"
        );
    }
    let report = Report::new(&corpus);
    let json = serde_json::to_value(&report).expect("report encodes");
    assert!(json.is_object());
    let mut trajectories = Vec::new();
    for file in handoff::log::log_files(std::slice::from_ref(&logs)).0 {
        let Ok(reader) = LogReader::open(&file) else {
            continue;
        };
        let events: Vec<Stamped> = reader.filter_map(Result::ok).collect();
        let tr = trajectory(&events);
        let path = Calibration::prior().score(&tr);
        assert_eq!(path.len(), tr.ticks() + 1);
        assert!(path.iter().all(|b| (0.0..=1.0).contains(b)), "{path:?}");
        trajectories.push(tr);
    }
    let labelled = trajectories.iter().filter(|t| t.label.is_some()).count();
    assert!(labelled >= 3);
    let (fitted, _) = fit(&trajectories, &FitOptions::default()).expect("the corpus calibrates");
    fitted.validate().expect("a valid calibration");
}
