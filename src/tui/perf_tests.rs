//! The frame budget: a long session must not make drawing slow. The goal is a frame of a
//! 100k-token session in ≤ 2 ms; the assertion is looser so a loaded CI machine does not
//! fail it, and the measured time is printed (`--nocapture`).

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::fixture::Script;
use super::intent::UiOptions;
use super::state::AppState;
use super::ui;
use crate::protocol::Actor;

/// 100k junior tokens with a belief update each, a newline every 12 tokens and a tool
/// step every 2,000 tokens.
fn long_session() -> AppState {
    let mut s = Script::new();
    s.start();
    let mut state = AppState::new(&UiOptions::default());
    let words = [
        ("let", -0.1),
        (" x", -0.4),
        (" =", -0.05),
        (" parse", -1.3),
        ("(s)", -0.7),
        (";", -0.02),
    ];
    let mut step = 0;
    while s.tick < 100_000 {
        step += 1;
        s.step_start(step, Actor::Junior);
        for i in 0..(2000 / 12) {
            s.junior_says(&words);
            s.junior_says(&words[..5]);
            s.junior_says(&[(if i % 2 == 0 { "\n" } else { " ok\n" }, -0.2)]);
        }
        s.tool(
            step,
            Actor::Junior,
            "run",
            json!({"command": "cargo test"}),
            step % 3 != 0,
            "test result: ok",
        );
        s.step_end(step, Actor::Junior, "run", true, vec![]);
        for e in s.events.drain(..) {
            state.apply(&e);
        }
    }
    state
}

fn frame_time(state: &AppState, w: u16, h: u16) -> Duration {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::draw(f, state)).expect("warm-up draw");
    let n = 20;
    let t0 = Instant::now();
    for _ in 0..n {
        // Force a full redraw each time, as after new tokens.
        t.clear().expect("clear");
        t.draw(|f| ui::draw(f, state)).expect("draw");
    }
    t0.elapsed() / n
}

#[test]
fn a_frame_of_a_100k_token_session_is_cheap() {
    let t0 = Instant::now();
    let state = long_session();
    let build = t0.elapsed();
    let big = frame_time(&state, 160, 48);
    let small = frame_time(&state, 80, 24);
    println!("100k tokens: built in {build:?}; frame 160x48 {big:?}, 80x24 {small:?}");
    assert!(big < Duration::from_millis(25), "160x48 frame took {big:?}");
    assert!(
        small < Duration::from_millis(25),
        "80x24 frame took {small:?}"
    );
}
