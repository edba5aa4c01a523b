//! Simulated sessions written as ordinary session logs, so `calibrate`, `report` and
//! `replay` can be checked against a known truth.
//!
//! Each session is one query of the [`World`], logged in shadow mode (never handed off, so
//! its label is uncensored) exactly as the live loop logs one: per tick a `BeliefUpdated`
//! whose `terms` carry the raw signal values (token signals: entropy, margin, surprise); at
//! the end of every step the five step facts, drawn given Y, land on that tick, and — as in
//! a live session — a second `BeliefUpdated` and the `StepEnded` carry that step's own
//! terms (the five step facts); `Escalated { shadow: true }` where the belief first crosses the
//! optimal threshold; `SessionEnded` with the outcome. The belief and each term's `llr` are
//! the true ones (Beta density ratios, exact Bernoulli ratios for the step facts), so a
//! calibrator fitted on the raw values can be compared with the exact posterior.
//!
//! With [`LogOptions::explore`] set the sessions are *live* instead: the first decision of
//! the live loop's [`Gate`] to hand off censors the session (the senior finishes it, with
//! its own success rate, and `SessionEnded` says `censored`), unless the gate's exploration
//! draw keeps the junior on, in which case the decision is logged with its propensity and
//! the session goes on in shadow mode. A corpus that censors as a deployed judge would,
//! with the propensities `calibrate` needs to undo it.

use std::path::{Path, PathBuf};

use indicatif::ProgressBar;
use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SimError;
use super::world::World;
use crate::competence::calibrator::sigmoid;
use crate::competence::law::DEFAULT_LAW_ATOMS;
use crate::competence::{DpSpec, Exploration, Gate, LlrLaw, SignalKind, Verdict, solve};
use crate::log::LogWriter;
use crate::protocol::{
    Actor, AskCounts, EscalationReason, Event, EvidenceTerm, Outcome, Route, Stamped,
};

/// Random stream of the logged sessions (distinct from the study's streams).
const LOG_STREAM: u64 = 7;
/// Milliseconds of simulated time per tick, so replay has something to pace by.
const MS_PER_TICK: u64 = 25;

/// How often each step fact is present at a step end, given success (`p1`) and failure
/// (`p0`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FactRate {
    pub signal: SignalKind,
    pub p1: f64,
    pub p0: f64,
}

/// Default step-fact rates: failing sessions hit tool errors, rejected patches and empty
/// steps more often. Chosen for plausibility, not measured.
pub const FACT_RATES: [FactRate; 5] = [
    FactRate {
        signal: SignalKind::ToolError,
        p1: 0.10,
        p0: 0.30,
    },
    FactRate {
        signal: SignalKind::PatchRejected,
        p1: 0.05,
        p0: 0.15,
    },
    FactRate {
        signal: SignalKind::CheckFailed,
        p1: 0.02,
        p0: 0.08,
    },
    FactRate {
        signal: SignalKind::RepeatedAction,
        p1: 0.03,
        p0: 0.10,
    },
    FactRate {
        signal: SignalKind::NoDiff,
        p1: 0.15,
        p0: 0.30,
    },
];

impl FactRate {
    /// ln P(value | Y=1)/P(value | Y=0) for a present (1.0) or absent (0.0) fact.
    pub fn llr(&self, present: bool) -> f64 {
        if present {
            (self.p1 / self.p0).ln()
        } else {
            ((1.0 - self.p1) / (1.0 - self.p0)).ln()
        }
    }
}

/// What to write.
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    pub sessions: usize,
    pub seed: u64,
    /// A step ends every this many ticks (and at the last tick).
    pub tokens_per_step: u32,
    /// Sessions written concurrently. Every step end and session end is synced to disk,
    /// so writing is bound by sync latency, not by the CPU; a few writers hide it.
    pub writers: usize,
    /// `Some(ε)`: live sessions that hand off (censored) where the gate fires, except that
    /// each such decision is explored with probability ε (see the module docs).
    pub explore: Option<f64>,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            sessions: 2000,
            seed: 1,
            tokens_per_step: 10,
            writers: 8,
            explore: None,
        }
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogsWritten {
    pub dir: PathBuf,
    pub sessions: usize,
    pub successes: usize,
    /// Sessions whose belief crossed the threshold at least once (shadow escalations).
    pub escalated: usize,
}

/// One simulated session as the events of its log.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedSession {
    /// `sim-<seed>-<index>`, also the log's file stem.
    pub id: String,
    pub events: Vec<Stamped>,
    pub success: bool,
    /// The belief crossed the threshold at least once (a shadow escalation was logged).
    pub escalated: bool,
}

/// What every session of one corpus shares: the world, the options, the true optimal
/// schedule and the digest that stands in for a configuration digest.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    world: World,
    options: LogOptions,
    tau: Vec<f64>,
    digest: String,
}

impl SessionPlan {
    pub fn new(world: &World, options: &LogOptions) -> Result<SessionPlan, SimError> {
        world.validate()?;
        if options.tokens_per_step == 0 {
            return Err(SimError::Invalid("tokens per step must be ≥ 1".into()));
        }
        Ok(SessionPlan {
            world: world.clone(),
            options: options.clone(),
            tau: schedule(world, options.tokens_per_step)?,
            digest: digest(world, options),
        })
    }

    /// τ*_t for t = 0..=T under the true law: the threshold the logged sessions use.
    pub fn threshold(&self) -> &[f64] {
        &self.tau
    }
}

/// Writes `options.sessions` simulated sessions to `dir`, one log file each
/// (`sim-<seed>-<index>.jsonl`), through [`LogWriter`] (so with its syncs). Fails if a file
/// already exists (logs are never overwritten) or on the first write error.
pub fn write_logs(
    world: &World,
    dir: &Path,
    options: &LogOptions,
    progress: &ProgressBar,
) -> Result<LogsWritten, SimError> {
    let plan = SessionPlan::new(world, options)?;
    let writers = options.writers.clamp(1, 64);
    let results: Vec<Result<(usize, usize), SimError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let plan = &plan;
                scope.spawn(move || {
                    let (mut ok, mut escalated) = (0, 0);
                    for i in (w..plan.options.sessions).step_by(writers) {
                        let session = plan.session(i)?;
                        let path = dir.join(format!("{}.jsonl", session.id));
                        let mut log = LogWriter::new(&path, plan.digest.clone());
                        for event in &session.events {
                            log.append(event)?;
                        }
                        log.close()?;
                        ok += usize::from(session.success);
                        escalated += usize::from(session.escalated);
                        progress.inc(1);
                    }
                    Ok((ok, escalated))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(SimError::Invalid("a log writer panicked".into())))
            })
            .collect()
    });
    let (mut successes, mut escalated) = (0, 0);
    for r in results {
        let (s, e) = r?;
        successes += s;
        escalated += e;
    }
    Ok(LogsWritten {
        dir: dir.to_path_buf(),
        sessions: options.sessions,
        successes,
        escalated,
    })
}

/// The optimal schedule under the true law of a tick (token signals, plus the step facts
/// on the ticks where a step ends, mixed in at rate 1/`tokens_per_step`).
fn schedule(world: &World, tokens_per_step: u32) -> Result<Vec<f64>, SimError> {
    let token = world.llr_law()?;
    let mut step = LlrLaw::no_evidence();
    for f in FACT_RATES {
        let fact = LlrLaw::consistent(&[(f.p1, f.p0), (1.0 - f.p1, 1.0 - f.p0)])
            .map_err(|e| SimError::Invalid(e.to_string()))?;
        step = step.convolve(&fact, DEFAULT_LAW_ATOMS);
    }
    let with_step = token.convolve(&step, 4 * DEFAULT_LAW_ATOMS);
    let law = token.mix(
        &with_step,
        1.0 / f64::from(tokens_per_step),
        4 * DEFAULT_LAW_ATOMS,
    );
    let spec = DpSpec {
        costs: world.costs,
        horizon: u64::from(world.horizon),
        grid_points: 1001,
        stride: 1,
    };
    Ok(solve(&law, &spec)
        .map_err(|e| SimError::Invalid(e.to_string()))?
        .tau)
}

fn digest(world: &World, options: &LogOptions) -> String {
    let text = serde_json::json!({"world": world, "seed": options.seed, "tokens_per_step": options.tokens_per_step});
    let hash = Sha256::digest(text.to_string().as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// The live loop's bookkeeping of one session: belief, crossing, and the "why" of a step.
struct Tracker {
    log_odds: f64,
    gate: Gate,
    /// The gate handed off: the junior's evidence ends here.
    censored: bool,
    step_llr: [f64; SignalKind::ALL.len()],
    step_value: [f64; SignalKind::ALL.len()],
    escalations: u32,
}

impl Tracker {
    fn add(&mut self, terms: &[EvidenceTerm]) {
        for t in terms {
            self.log_odds += t.llr;
            self.step_llr[t.signal.index()] += t.llr;
            self.step_value[t.signal.index()] = t.value;
        }
    }

    /// Up to three signals that pulled the belief down most in the current step.
    fn why(&self) -> Vec<EvidenceTerm> {
        let mut terms: Vec<EvidenceTerm> = SignalKind::ALL
            .iter()
            .filter(|s| self.step_llr[s.index()] < 0.0)
            .map(|s| EvidenceTerm {
                signal: *s,
                value: self.step_value[s.index()],
                llr: self.step_llr[s.index()],
            })
            .collect();
        terms.sort_by(|a, b| a.llr.total_cmp(&b.llr));
        terms.truncate(3);
        terms
    }
}

impl SessionPlan {
    /// Session `index` of the corpus, as the events its log holds (deterministic per seed
    /// and index).
    pub fn session(&self, index: usize) -> Result<SimulatedSession, SimError> {
        let mut events = Vec::with_capacity(4 * self.world.horizon as usize);
        let (success, escalated) = self.events(index, &mut |tick, event| {
            events.push(Stamped {
                t_ms: tick * MS_PER_TICK,
                event,
            })
        })?;
        Ok(SimulatedSession {
            id: format!("sim-{}-{index:05}", self.options.seed),
            events,
            success,
            escalated,
        })
    }

    /// Emits session `index`'s events; returns (success, crossed the threshold at least once).
    fn events(
        &self,
        index: usize,
        emit: &mut dyn FnMut(u64, Event),
    ) -> Result<(bool, bool), SimError> {
        let plan = self;
        let world = &plan.world;
        let seed = plan.options.seed;
        let mut rng = World::rng(seed, LOG_STREAM, index as u64);
        let query = world.draw_query(0.0, &mut rng)?;
        let mut write = |tick: u64, event: Event| emit(tick, event);
        let policy = "optimal".to_string();
        let live = plan.options.explore.is_some();
        write(
            0,
            Event::SessionStarted {
                session_id: format!("sim-{seed}-{index:05}"),
                task: format!("simulated query {index} (seed {seed})"),
                repo: "(simulated)".into(),
                head: None,
                config_digest: plan.digest.clone(),
                junior_model: "simulated-junior".into(),
                senior_model: "simulated-senior".into(),
                policy: policy.clone(),
                shadow: !live,
                token_budget: u64::from(world.horizon),
                prior: world.prior,
            },
        );
        let exploration = plan
            .options
            .explore
            .and_then(|rate| Exploration::for_session(rate, seed, &format!("sim {index}")));
        let mut tr = Tracker {
            log_odds: world.prior_log_odds(),
            gate: Gate::new(!live, 0).with_exploration(exploration),
            censored: false,
            step_llr: [0.0; SignalKind::ALL.len()],
            step_value: [0.0; SignalKind::ALL.len()],
            escalations: 0,
        };
        let k = world.signals.len();
        let per_step = plan.options.tokens_per_step as usize;
        let horizon = world.horizon as usize;
        let mut step = 0u32;
        let mut terms: Vec<EvidenceTerm> = Vec::with_capacity(k + FACT_RATES.len());
        let mut end = horizon as u64;
        for t in 1..=horizon {
            let tick = t as u64;
            if (t - 1) % per_step == 0 {
                step += 1;
                tr.step_llr = [0.0; SignalKind::ALL.len()];
                write(
                    tick - 1,
                    Event::StepStarted {
                        step,
                        actor: Actor::Junior,
                        tick: tick - 1,
                    },
                );
            }
            terms.clear();
            terms.extend(
                world
                    .signals
                    .iter()
                    .zip(query.tick(t, k))
                    .map(|(s, v)| EvidenceTerm {
                        signal: s.signal,
                        value: *v,
                        llr: s.llr(*v),
                    }),
            );
            tr.add(&terms);
            let tau = plan.tau[t];
            let reading = |tr: &mut Tracker, terms: &[EvidenceTerm]| {
                let belief = sigmoid(tr.log_odds);
                let below = belief < tau;
                let crossed = tr.gate.on_token(below);
                let event = Event::BeliefUpdated {
                    tick,
                    belief,
                    log_odds: tr.log_odds,
                    threshold: tau,
                    policy: policy.clone(),
                    terms: terms.to_vec(),
                };
                (event, belief, crossed)
            };
            // The gate's verdict as the live loop logs it: a hand-off (censoring the
            // session), an explored decision with its propensity, or a shadow crossing.
            let escalation = |tr: &mut Tracker, belief: f64, verdict: Verdict| {
                let propensity = match verdict {
                    Verdict::Continue => return None,
                    Verdict::ShadowCrossing => None,
                    Verdict::Escalate | Verdict::Explored => tr.gate.propensity(),
                };
                tr.escalations += 1;
                tr.censored |= verdict == Verdict::Escalate;
                Some(Event::Escalated {
                    step,
                    tick,
                    route: Route::Senior,
                    reason: EscalationReason::Threshold,
                    belief,
                    threshold: tau,
                    why: tr.why(),
                    shadow: verdict != Verdict::Escalate,
                    propensity,
                })
            };
            let (event, belief, verdict) = reading(&mut tr, &terms);
            write(tick, event);
            if let Some(e) = escalation(&mut tr, belief, verdict) {
                write(tick, e);
            }
            if tr.censored {
                end = tick;
                break;
            }
            if t % per_step == 0 || t == horizon {
                // A step's update carries only the step's own evidence, as the live judge's.
                terms.clear();
                let mut tool_error = false;
                for f in FACT_RATES {
                    let present = rng.random_bool(if query.success { f.p1 } else { f.p0 });
                    tool_error |= present && f.signal == SignalKind::ToolError;
                    let term = EvidenceTerm {
                        signal: f.signal,
                        value: if present { 1.0 } else { 0.0 },
                        llr: f.llr(present),
                    };
                    tr.add(&[term]);
                    terms.push(term);
                }
                let (event, belief, verdict) = reading(&mut tr, &terms);
                write(tick, event);
                write(
                    tick,
                    Event::StepEnded {
                        step,
                        actor: Actor::Junior,
                        tick,
                        tool: Some("simulated".into()),
                        ok: !tool_error,
                        belief,
                        terms: terms.clone(),
                        checkpoint: None,
                    },
                );
                if let Some(e) = escalation(&mut tr, belief, verdict) {
                    write(tick, e);
                }
                if tr.censored {
                    end = tick;
                    break;
                }
            }
        }
        let usd = world.costs.kappa * end as f64;
        write(
            end,
            Event::CostIncurred {
                actor: Actor::Junior,
                model: "simulated-junior".into(),
                input_tokens: 0,
                output_tokens: end,
                usd,
                estimated: true,
            },
        );
        // A censored session is finished by the senior: its outcome is the senior's.
        let solved = if tr.censored {
            query.senior_ok
        } else {
            query.success
        };
        let outcome = if solved {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        let ask = match (tr.escalations, query.success) {
            (0, false) => AskCounts {
                tp: 0,
                fp: 0,
                fn_: 1,
            },
            (n, false) => AskCounts {
                tp: n,
                fp: 0,
                fn_: 0,
            },
            (n, true) => AskCounts {
                tp: 0,
                fp: n,
                fn_: 0,
            },
        };
        write(
            end,
            Event::SessionEnded {
                outcome,
                censored: tr.censored,
                steps: step,
                ticks: end,
                usd,
                ask,
            },
        );
        Ok((query.success, tr.escalations > 0))
    }
}
