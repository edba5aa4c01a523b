//! A small generator of session logs with a known generative process, written through the
//! real `LogWriter` the way the live loop writes them (a `BeliefUpdated` per junior token;
//! at a step end a `BeliefUpdated` repeating the token's terms plus the step facts, then
//! `StepEnded`), so `calibrate` can be checked against the truth.
//!
//! Truth: Y ~ Bernoulli(0.6); per token, entropy = 3·Beta(2, 5) when Y = 1 and
//! 3·Beta(2.6, 4.4) when Y = 0 (about 0.1 nats a token), independent; every 25 tokens a step ends with a tool error
//! with probability 0.1 (Y = 1) or 0.3 (Y = 0). The Bayes posterior is therefore calibrated,
//! and a fit with enough data must be too.

use std::path::{Path, PathBuf};

use handoff::competence::{Calibration, Judge, StepFacts, Threshold, TokenSignals};
use handoff::log::LogWriter;
use handoff::protocol::{Actor, AskCounts, Event, Outcome, Stamped};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Beta, Distribution};

/// How a synthetic session ends up in the corpus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Ran to the end; labelled by Y.
    Plain,
    /// Escalated for real: censored, labelled `success` whatever Y (the senior fixed it).
    Censored,
}

fn started(id: &str) -> Event {
    Event::SessionStarted {
        session_id: id.into(),
        task: "synthetic".into(),
        repo: "synthetic".into(),
        head: None,
        config_digest: "synthetic".into(),
        junior_model: "j".into(),
        senior_model: "s".into(),
        policy: "constant".into(),
        shadow: false,
        token_budget: 8192,
        prior: 0.7,
    }
}

/// The events of one session, scored live by a judge under the built-in prior.
pub fn session(rng: &mut StdRng, id: &str, kind: Kind) -> (Vec<Event>, bool) {
    let ok = Beta::new(2.0, 5.0).expect("beta");
    let bad = Beta::new(2.6, 4.4).expect("beta");
    let y = rng.random_bool(0.6);
    let ticks = rng.random_range(40..120);
    let mut judge = Judge::new(Calibration::prior(), Threshold::Constant(0.3));
    let mut events = vec![started(id)];
    let mut step = 1;
    let update = |judge: &Judge| Event::BeliefUpdated {
        tick: judge.tick(),
        belief: judge.belief(),
        log_odds: judge.log_odds(),
        threshold: judge.threshold(),
        policy: "constant".into(),
        terms: judge.terms().to_vec(),
    };
    for t in 1..=ticks {
        let e = 3.0 * if y { ok.sample(rng) } else { bad.sample(rng) };
        judge.observe_token(&TokenSignals {
            entropy: Some(e),
            margin: None,
            surprise: None,
        });
        events.push(update(&judge));
        if t % 25 == 0 || t == ticks {
            let facts = StepFacts {
                tool_error: rng.random_bool(if y { 0.1 } else { 0.3 }),
                ..StepFacts::default()
            };
            judge.observe_step(&facts);
            events.push(update(&judge));
            events.push(Event::StepEnded {
                step,
                actor: Actor::Junior,
                tick: judge.tick(),
                tool: Some("run".into()),
                ok: !facts.tool_error,
                belief: judge.belief(),
                terms: judge.terms().to_vec(),
                checkpoint: None,
            });
            step += 1;
        }
    }
    let (outcome, censored) = match kind {
        Kind::Plain if y => (Outcome::Success, false),
        Kind::Plain => (Outcome::Failure, false),
        Kind::Censored => (Outcome::Success, true),
    };
    events.push(Event::SessionEnded {
        outcome,
        censored,
        steps: step - 1,
        ticks: judge.tick(),
        usd: 0.0,
        ask: AskCounts::default(),
    });
    (events, y)
}

fn write(path: &Path, events: Vec<Event>) {
    let mut w = LogWriter::new(path, "synthetic");
    for (i, event) in events.into_iter().enumerate() {
        w.append(&Stamped {
            t_ms: i as u64,
            event,
        })
        .expect("append");
    }
    w.close().expect("close");
}

/// A temporary directory for a corpus, in memory where the system offers one: the writer
/// syncs at every step end, and thousands of syncs to a disk take longer than the test.
pub fn corpus_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new().prefix("handoff-").tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("tempdir")
}

/// Writes `n` sessions, one log each, into `dir`; every `censored_every`-th is censored
/// (0: none). Files are written from several threads: the writer syncs at every step end,
/// and syncs of parallel writers are committed together by the file system.
pub fn corpus(dir: &Path, n: usize, censored_every: usize, seed: u64) -> Vec<PathBuf> {
    let threads = 16;
    let paths: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("s{i:05}.jsonl"))).collect();
    std::thread::scope(|scope| {
        for k in 0..threads {
            let paths = &paths;
            scope.spawn(move || {
                for (i, path) in paths.iter().enumerate().skip(k).step_by(threads) {
                    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003) + i as u64);
                    let kind = if censored_every > 0 && i % censored_every == censored_every - 1 {
                        Kind::Censored
                    } else {
                        Kind::Plain
                    };
                    let (events, _) = session(&mut rng, &format!("syn-{seed}-{i}"), kind);
                    write(path, events);
                }
            });
        }
    });
    paths
}
