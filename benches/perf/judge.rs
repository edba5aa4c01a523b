//! The judge beside the decoding it rides on: per-token work, and the optimal schedule.

use std::hint::black_box;
use std::time::Duration;

use handoff::agent::watch::Watch;
use handoff::competence::{Calibration, DpSpec, RouteCost, StopCosts, Threshold, solve};
use handoff::demo::sse::{self, Tok};
use handoff::event::{Event, Route};
use handoff::llm::chunk;
use serde_json::Value;

use crate::Options;
use crate::timing::{Row, best_of, best_of_interleaved, cpu_of, per_call, show};

/// The schedule of issue 9: T = 4096 ticks, 1001 belief points, decisions at every tick.
fn dp_spec() -> DpSpec {
    DpSpec {
        costs: StopCosts {
            kappa: 0.00002,
            loss: 1.0,
            route: RouteCost {
                gamma: 0.2,
                p_success: 0.85,
            },
        },
        horizon: 4096,
        grid_points: 1001,
        stride: 1,
    }
}

/// The optimal threshold a live session would use (what `Watch::from_config` solves).
fn optimal_threshold() -> Threshold {
    let law = Calibration::prior().per_tick_law(0.01, 64);
    match solve(&law, &dp_spec()) {
        Ok(schedule) => schedule.into_threshold(),
        // Cannot happen with the constants above; a constant keeps the bench running.
        Err(_) => Threshold::Constant(0.5),
    }
}

/// One junior token as vLLM streams it: a hesitant choice among five alternatives.
pub fn hesitant_chunk() -> Vec<u8> {
    let tok = Tok::new(" parse", -1.1).top(&[
        (" parse", -1.1),
        (" or", -1.25),
        (" maybe", -1.5),
        (" if", -1.9),
        (" but", -2.2),
    ]);
    sse::tokens(&[tok]).to_string().into_bytes()
}

/// Per-token judge work (signals, belief, threshold lookup, the `BeliefUpdated` event)
/// against serde_json decoding the chunk that carried the token.
pub fn run(opts: &Options) -> Vec<Row> {
    let json = hesitant_chunk();
    let Ok(value) = serde_json::from_slice::<Value>(&json) else {
        return Vec::new();
    };
    let parsed = chunk::parse(&value);
    let Some(token) = parsed.tokens.as_ref().and_then(|t| t.first()).cloned() else {
        return Vec::new();
    };
    let mut watch = Watch::new(
        Calibration::prior(),
        optimal_threshold(),
        "optimal",
        Route::Senior,
    );
    let n = if opts.quick { 20_000 } else { 200_000 };
    let rounds = opts.rounds(7, 2);
    let (judge, decode) = best_of_interleaved(
        rounds,
        || {
            per_call(n, || {
                let reading = watch.token(&token.text, token.logprob, &token.top);
                let event: Event = watch.belief_event(&reading);
                black_box(event);
            })
        },
        || {
            per_call(n, || {
                black_box(serde_json::from_slice::<Value>(black_box(&json)).ok());
            })
        },
    );
    let ratio = judge.as_secs_f64() / decode.as_secs_f64();
    vec![Row {
        figure: "per-token judge work / bare decode of its chunk",
        measured: format!("{} per token", show(judge)),
        baseline: format!("{} per chunk ({} B JSON)", show(decode), json.len()),
        ratio: format!("{:.1}%", ratio * 100.0),
        goal: "≤ 5%",
        pass: ratio <= 0.05,
    }]
}

/// The optimal schedule at T = 4096 on a 1001-point grid.
pub fn run_dp(opts: &Options) -> Vec<Row> {
    let law = Calibration::prior().per_tick_law(0.01, 64);
    let spec = dp_spec();
    let best = best_of(opts.rounds(5, 1), || {
        cpu_of(|| {
            black_box(solve(black_box(&law), black_box(&spec)).is_ok());
        })
    });
    let goal = Duration::from_millis(200);
    vec![Row {
        figure: "optimal schedule, T = 4096, grid 1001, 64-atom law",
        measured: format!("{} CPU", show(best)),
        baseline: "—".into(),
        ratio: format!("{:.2} of goal", best.as_secs_f64() / goal.as_secs_f64()),
        goal: "≤ 200 ms",
        pass: best <= goal,
    }]
}
