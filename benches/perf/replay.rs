//! Reading logs back (what `report`, `calibrate` and `replay` do first): `LogReader` and
//! the session fold against serde_json decoding the same lines from memory, and the peak
//! memory of reading a corpus as it grows tenfold, measured in a child process (Linux).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use handoff::analysis::summarize_file;
use handoff::log::{LogWriter, log_files};
use handoff::protocol::{
    Actor, Alternative, AskCounts, Event, EvidenceTerm, Outcome, SignalKind, Stamped,
};

use crate::Options;
use crate::timing::{Row, best_of_interleaved, cpu_of, show};

/// The child's flag: `perf --replay-peak-rss DIR` reads every log under DIR and prints
/// its peak resident set in KiB.
const CHILD_FLAG: &str = "--replay-peak-rss";

/// Junior tokens per logged session.
const SESSION_TOKENS: u64 = 3_000;
/// Sessions in the small corpus; the large one has ten times as many.
const CORPUS: usize = 10;

/// Runs the child's work when this process is the child; returns its exit code.
pub fn child_main() -> Option<i32> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == CHILD_FLAG)?;
    let dir = PathBuf::from(args.get(i + 1)?);
    let (files, _) = log_files(&[dir]);
    let mut sessions = 0;
    for f in &files {
        if let Ok((summaries, _)) = summarize_file(f) {
            sessions += summaries.len();
        }
    }
    println!("{} {sessions}", peak_rss_kib());
    Some(0)
}

/// The high-water mark of this process's resident memory (`VmHWM`). Not `getrusage`:
/// Linux carries `ru_maxrss` over from the parent across fork and exec, so a child would
/// report the bench's own peak.
fn peak_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(-1)
}

/// Peak RSS (KiB) and sessions read by a child reading every log under `dir`.
fn child_peak(dir: &Path) -> Option<(i64, usize)> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace();
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn term(signal: SignalKind, value: f64, llr: f64) -> EvidenceTerm {
    EvidenceTerm { signal, value, llr }
}

/// The events of one realistic session: a token and a belief update per junior token with
/// top-5 logprobs, a tool step every 150 tokens, costs, a labelled end.
fn session_events(id: usize) -> Vec<Event> {
    let mut events = vec![Event::SessionStarted {
        session_id: format!("s{id}"),
        task: "add an hours unit to parse_duration".into(),
        repo: "sample".into(),
        head: Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904".into()),
        config_digest: "d".into(),
        junior_model: "qwen2.5-coder-1.5b-instruct".into(),
        senior_model: "gpt-4.1".into(),
        policy: "optimal".into(),
        shadow: true,
        token_budget: 8192,
        prior: 0.7,
    }];
    let words = [
        " the", " parser", " reads", " each", " unit", " and", " adds", " it",
    ];
    let mut step = 0;
    for tick in 1..=SESSION_TOKENS {
        if tick % 150 == 1 {
            step += 1;
            events.push(Event::StepStarted {
                step,
                actor: Actor::Junior,
                tick: tick - 1,
            });
        }
        let w = words[(tick as usize) % words.len()];
        let lp = -0.05 - 0.3 * ((tick % 7) as f64);
        let top: Vec<Alternative> = [
            (w, lp),
            (" a", -2.5),
            (" or", -3.1),
            ("\n", -4.0),
            (" if", -5.2),
        ]
        .iter()
        .map(|(t, l)| Alternative {
            token: (*t).into(),
            logprob: *l,
        })
        .collect();
        events.push(Event::Token {
            actor: Actor::Junior,
            tick,
            text: w.into(),
            logprob: Some(lp),
            top,
        });
        events.push(Event::BeliefUpdated {
            tick,
            belief: 0.7 - tick as f64 * 1e-5,
            log_odds: 0.84 - tick as f64 * 5e-5,
            threshold: 0.41,
            policy: "optimal".into(),
            terms: vec![
                term(SignalKind::Entropy, 0.61, -0.0002),
                term(SignalKind::Margin, 0.52, 0.0001),
                term(SignalKind::Surprise, -lp, -0.0001),
            ],
        });
        if tick % 150 == 0 {
            events.push(Event::ToolCalled {
                step,
                actor: Actor::Junior,
                call_id: format!("c{step}"),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "src/lib.rs"}),
            });
            events.push(Event::ToolResulted {
                step,
                call_id: format!("c{step}"),
                name: "read_file".into(),
                ok: true,
                output: "pub fn parse_duration(s: &str) -> Result<u64, String> {\n".repeat(8),
            });
            events.push(Event::StepEnded {
                step,
                actor: Actor::Junior,
                tick,
                tool: Some("read_file".into()),
                ok: true,
                belief: 0.69,
                terms: vec![term(SignalKind::ToolError, 0.0, 0.001)],
                checkpoint: Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904".into()),
            });
            events.push(Event::CostIncurred {
                actor: Actor::Junior,
                model: "qwen2.5-coder-1.5b-instruct".into(),
                input_tokens: 2_000,
                output_tokens: 150,
                usd: 0.0001,
                estimated: false,
            });
        }
    }
    events.push(Event::SessionEnded {
        outcome: if id.is_multiple_of(3) {
            Outcome::Failure
        } else {
            Outcome::Success
        },
        censored: false,
        steps: step,
        ticks: SESSION_TOKENS,
        usd: 0.002,
        ask: AskCounts::default(),
    });
    events
}

/// Writes `count` session logs under `dir` through the real writer.
fn write_corpus(dir: &Path, count: usize) -> Option<()> {
    std::fs::create_dir_all(dir).ok()?;
    for i in 0..count {
        let mut writer = LogWriter::new(dir.join(format!("{i:04}.jsonl")), "d");
        for (t_ms, event) in session_events(i).into_iter().enumerate() {
            let stamped = Stamped {
                t_ms: t_ms as u64,
                event,
            };
            writer.append(&stamped).ok()?;
        }
        writer.close().ok()?;
    }
    Some(())
}

pub fn run(opts: &Options) -> Vec<Row> {
    let Ok(tmp) = tempfile::tempdir() else {
        return Vec::new();
    };
    let small = tmp.path().join("small");
    let large = tmp.path().join("large");
    let (n_small, n_large) = if opts.quick {
        (2, 20)
    } else {
        (CORPUS, CORPUS * 10)
    };
    if write_corpus(&small, n_small).is_none() || write_corpus(&large, n_large).is_none() {
        return Vec::new();
    }
    let (files, _) = log_files(std::slice::from_ref(&small));
    let texts: Vec<String> = files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let mb = bytes as f64 / 1e6;
    let mut sessions = 0;
    let (read, decode) = best_of_interleaved(
        opts.rounds(5, 1),
        || {
            cpu_of(|| {
                sessions = files
                    .iter()
                    .filter_map(|f| summarize_file(f).ok())
                    .map(|(s, _)| s.len())
                    .sum();
            })
        },
        || {
            cpu_of(|| {
                for text in &texts {
                    for line in text.lines().skip(1) {
                        black_box(serde_json::from_str::<Stamped>(line).ok());
                    }
                }
            })
        },
    );
    let share = decode.as_secs_f64() / read.as_secs_f64();
    let mut rows = vec![Row {
        figure: "log read + session fold / serde_json alone",
        measured: format!(
            "{:.0} MB/s ({sessions} sessions, {mb:.0} MB in {})",
            mb / read.as_secs_f64(),
            show(read)
        ),
        baseline: format!(
            "{:.0} MB/s decoding the lines from memory",
            mb / decode.as_secs_f64()
        ),
        ratio: format!("{:.0}%", share * 100.0),
        goal: "≥ 50%",
        pass: share >= 0.5 && sessions == n_small,
    }];
    if let (Some((rss_small, s1)), Some((rss_large, s2))) = (child_peak(&small), child_peak(&large))
    {
        let growth = rss_large as f64 / rss_small as f64;
        rows.push(Row {
            figure: "peak RSS reading a corpus 10× larger",
            measured: format!("{:.1} MiB for {s2} sessions", rss_large as f64 / 1024.0),
            baseline: format!("{:.1} MiB for {s1} sessions", rss_small as f64 / 1024.0),
            ratio: format!("{growth:.2}×"),
            goal: "flat (≤ 1.1×)",
            pass: growth <= 1.1 && s1 == n_small && s2 == n_large,
        });
    }
    rows
}
