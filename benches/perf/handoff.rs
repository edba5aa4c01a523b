//! Handoff latency: from the judge's threshold crossing in the middle of a junior stream to
//! the senior's request arriving at its server, in full headless sessions on loopback
//! (real client, judge, git checkpoints and diff, handoff note, session log).
//!
//! The crossing is timestamped by a consumer of the event stream when the first
//! `BeliefUpdated` with B_t < τ_t reaches it (microseconds after the judge computed it, so
//! the figure is if anything slightly low); the arrival is the scripted server's own
//! record, taken when the request's headers are in.

use std::path::Path;
use std::time::{Duration, Instant};

use handoff::agent::emitter::Emitter;
use handoff::agent::session::{self, Approvals};
use handoff::app::wiring as exec;
use handoff::config::{Approval, Config, HandoffMode, RouteMode, ThresholdKind};
use handoff::demo::script::{confident, hesitant};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use handoff::demo::sse::completion;
use handoff::protocol::{Command, Event, Stamped};
use serde_json::json;
use tokio::sync::mpsc;

use crate::Options;
use crate::timing::{Row, median, show};

/// The built-in prior starts at 0.7; a few dozen hesitant tokens take it below this.
const TAU: f64 = 0.69;
/// Pause between junior tokens, like a small local model generating.
const TOKEN_GAP: Duration = Duration::from_millis(2);

fn junior_reply() -> Reply {
    let mut toks = confident("I will add the hours unit to the parser now.");
    toks.extend(hesitant(
        &"but the match arm could go before minutes or maybe after the seconds case if the tests \
          expect it "
            .repeat(8),
    ));
    let args = json!({"path": "src/lib.rs", "content": "// never written\n"}).to_string();
    Reply::sse(
        completion(&toks, &[("c1", "write_file", args.as_str())], 900),
        TOKEN_GAP,
    )
}

fn senior_reply() -> Reply {
    let args = json!({"summary": "done"}).to_string();
    Reply::sse(
        completion(
            &confident("Finishing."),
            &[("s1", "finish", args.as_str())],
            1200,
        ),
        Duration::ZERO,
    )
}

/// A small committed repository, made with the git command line.
fn repo(dir: &Path) -> Option<()> {
    std::fs::create_dir_all(dir.join("src")).ok()?;
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn parse_duration(s: &str) -> Result<u64, String> {\n    s.parse().map_err(|e| format!(\"{e}\"))\n}\n",
    )
    .ok()?;
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args([
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@example.invalid",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    git(&["init", "-q"])?;
    git(&["add", "-A"])?;
    git(&["commit", "-qm", "init"])?;
    Some(())
}

fn config(junior: &ScriptedServer, senior: &ScriptedServer) -> Config {
    let mut c = Config::default();
    c.junior.base_url = junior.base_url();
    c.junior.model = "junior".into();
    c.senior.base_url = senior.base_url();
    c.senior.model = "senior".into();
    c.senior.api_key_env = None;
    c.policy.threshold = ThresholdKind::Constant;
    c.policy.constant = TAU;
    c.policy.route = RouteMode::Senior;
    c.policy.handoff = HandoffMode::Rest;
    c.agent.approval = Approval::Never;
    c.agent.max_steps = 4;
    c
}

/// When the stages of one handoff reached the event consumer.
#[derive(Default)]
struct Seen {
    crossing: Option<Instant>,
    escalated: Option<Instant>,
}

/// One session; the latency from crossing to the senior's request, and to `Escalated`.
async fn one_handoff(
    junior: &ScriptedServer,
    senior: &ScriptedServer,
    root: &Path,
    i: usize,
) -> Option<(Duration, Duration)> {
    let dir = root.join(format!("repo{i}"));
    repo(&dir)?;
    let cfg = config(junior, senior);
    let prepared = exec::prepare(
        cfg,
        &dir,
        "add an hours unit",
        Approvals::Refused,
        Some(root.join(format!("log{i}.jsonl"))),
    )
    .ok()?;
    let (log_tx, log_task) = exec::spawn_log(prepared.log);
    let (probe_tx, mut probe_rx) = mpsc::channel::<Stamped>(4096);
    // On a thread of its own: a task on the session's runtime would only run once the
    // session task yields, which it need not do between the crossing and the handoff.
    let probe = std::thread::spawn(move || {
        let mut seen = Seen::default();
        while let Some(s) = probe_rx.blocking_recv() {
            let now = Instant::now();
            match s.event {
                Event::BeliefUpdated {
                    belief, threshold, ..
                } if belief < threshold && seen.crossing.is_none() => seen.crossing = Some(now),
                Event::Escalated { .. } if seen.escalated.is_none() => seen.escalated = Some(now),
                _ => {}
            }
        }
        seen
    });
    // The probe is first in line: it hears of the crossing before the log writer does.
    let emitter = Emitter::new(vec![probe_tx, log_tx]);
    // Held until the session ends: a closed command channel means "quit".
    let (_cmd_tx, cmd_rx) = mpsc::channel::<Command>(8);
    let before = senior.requests().len();
    let end = session::run(prepared.setup, emitter, cmd_rx).await;
    let _ = log_task.await;
    let seen = probe.join().ok()?;
    end.ok()?;
    let crossing = seen.crossing?;
    let arrived = senior.requests().get(before)?.received;
    Some((
        arrived.checked_duration_since(crossing)?,
        seen.escalated?.checked_duration_since(crossing)?,
    ))
}

pub fn run(opts: &Options) -> Vec<Row> {
    let sessions = opts.rounds(21, 3);
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let Ok(tmp) = tempfile::tempdir() else {
        return Vec::new();
    };
    let measured: Vec<(Duration, Duration)> = rt.block_on(async {
        let junior =
            ScriptedServer::start(Script::new(Vec::new()).respond_with(|_| junior_reply())).await;
        let senior =
            ScriptedServer::start(Script::new(Vec::new()).respond_with(|_| senior_reply())).await;
        let (Ok(junior), Ok(senior)) = (junior, senior) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for i in 0..sessions {
            if let Some(m) = one_handoff(&junior, &senior, tmp.path(), i).await {
                out.push(m);
            }
        }
        out
    });
    if measured.is_empty() {
        return vec![Row {
            figure: "handoff latency (crossing → senior request on loopback)",
            measured: "no session escalated".into(),
            baseline: "—".into(),
            ratio: "—".into(),
            goal: "≤ 10 ms median",
            pass: false,
        }];
    }
    let latency: Vec<Duration> = measured.iter().map(|m| m.0).collect();
    let decided: Vec<Duration> = measured.iter().map(|m| m.1).collect();
    let worst = latency.iter().max().copied().unwrap_or_default();
    let med = median(latency);
    let goal = Duration::from_millis(10);
    vec![Row {
        figure: "handoff latency (crossing → senior request on loopback)",
        measured: format!(
            "median {} (max {}) over {} sessions",
            show(med),
            show(worst),
            measured.len()
        ),
        baseline: format!(
            "crossing → `escalated` event: median {}",
            show(median(decided))
        ),
        ratio: format!("{:.2} of goal", med.as_secs_f64() / goal.as_secs_f64()),
        goal: "≤ 10 ms median",
        pass: med <= goal && measured.len() == sessions,
    }]
}
