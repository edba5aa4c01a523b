//! A frame of the TUI for a 100k-token session: `tui::ui::render` into a fresh buffer, the
//! full redraw the UI does after new tokens.

use std::hint::black_box;
use std::time::{Duration, Instant};

use handoff::protocol::{Actor, Alternative, Event, EvidenceTerm, SignalKind, Stamped};
use handoff::tui::{AppState, UiOptions, ui};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::Options;
use crate::timing::{Row, best_of, per_call, show};

/// Junior tokens in the session drawn.
const TOKENS: u64 = 100_000;

/// The state of the UI after a long session: a token and a belief update per junior token,
/// a newline every 12 tokens, a tool step every 2,000 tokens.
fn long_session(tokens: u64) -> AppState {
    let mut state = AppState::new(&UiOptions::default());
    let mut t_ms = 0;
    let mut apply = |state: &mut AppState, event: Event| {
        t_ms += 1;
        state.apply(&Stamped { t_ms, event });
    };
    apply(
        &mut state,
        Event::SessionStarted {
            session_id: "bench".into(),
            task: "add an hours unit to parse_duration".into(),
            repo: "sample".into(),
            head: None,
            config_digest: "d".into(),
            junior_model: "junior".into(),
            senior_model: "senior".into(),
            policy: "optimal".into(),
            shadow: true,
            token_budget: 131_072,
            prior: 0.7,
        },
    );
    let words = ["let", " x", " =", " parse", "(s)", ";", " ok", "\n"];
    let mut step = 0;
    for tick in 1..=tokens {
        if tick % 2000 == 1 {
            step += 1;
            apply(
                &mut state,
                Event::StepStarted {
                    step,
                    actor: Actor::Junior,
                    tick: tick - 1,
                },
            );
        }
        let text = if tick % 12 == 0 {
            "\n"
        } else {
            words[(tick as usize) % 7]
        };
        let lp = -0.05 - 0.2 * ((tick % 5) as f64);
        apply(
            &mut state,
            Event::Token {
                actor: Actor::Junior,
                tick,
                text: text.into(),
                logprob: Some(lp),
                top: vec![Alternative {
                    token: text.into(),
                    logprob: lp,
                }],
            },
        );
        apply(
            &mut state,
            Event::BeliefUpdated {
                tick,
                belief: 0.7 - (tick % 1000) as f64 * 1e-4,
                log_odds: 0.8,
                threshold: 0.4 + (tick as f64 / tokens as f64) * 0.1,
                policy: "optimal".into(),
                terms: vec![EvidenceTerm {
                    signal: SignalKind::Entropy,
                    value: 0.5,
                    llr: -0.0001,
                }],
            },
        );
        if tick % 2000 == 0 {
            apply(
                &mut state,
                Event::ToolCalled {
                    step,
                    actor: Actor::Junior,
                    call_id: format!("c{step}"),
                    name: "run".into(),
                    arguments: serde_json::json!({"command": "cargo test"}),
                },
            );
            apply(
                &mut state,
                Event::ToolResulted {
                    step,
                    call_id: format!("c{step}"),
                    name: "run".into(),
                    ok: step % 3 != 0,
                    output: "test result: ok".into(),
                },
            );
            apply(
                &mut state,
                Event::StepEnded {
                    step,
                    actor: Actor::Junior,
                    tick,
                    tool: Some("run".into()),
                    ok: true,
                    belief: 0.65,
                    terms: Vec::new(),
                    checkpoint: None,
                },
            );
        }
    }
    state
}

/// Mean time of a full frame at `w`×`h` over `n` frames.
fn frame(state: &AppState, w: u16, h: u16, n: u32) -> Duration {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    ui::render(state, area, &mut buf);
    per_call(n, || {
        buf.reset();
        ui::render(black_box(state), area, &mut buf);
        black_box(&buf);
    })
}

pub fn run(opts: &Options) -> Vec<Row> {
    let tokens = if opts.quick { 10_000 } else { TOKENS };
    let t0 = Instant::now();
    let state = long_session(tokens);
    let built = t0.elapsed();
    let rounds = opts.rounds(5, 1);
    let n = if opts.quick { 5 } else { 50 };
    let big = best_of(rounds, || frame(&state, 160, 48, n));
    let small = best_of(rounds, || frame(&state, 80, 24, n));
    let goal = Duration::from_millis(2);
    let worst = big.max(small);
    vec![Row {
        figure: "TUI frame of a 100k-token session (render into a buffer)",
        measured: format!("160×48: {}; 80×24: {} (CPU)", show(big), show(small)),
        baseline: format!(
            "building the state from {tokens} tokens' events: {}",
            show(built)
        ),
        ratio: format!("{:.2} of goal", worst.as_secs_f64() / goal.as_secs_f64()),
        goal: "≤ 2 ms",
        pass: worst <= goal,
    }]
}
