//! The judge's two hot paths: the per-token belief update (runs on every streamed token)
//! and the optimal schedule (T = 4096 ticks on a 1001-point belief grid, solved before a
//! session starts). Run with `cargo bench --bench competence -- --quick`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use handoff::competence::{
    Calibration, DpSpec, Judge, RouteCost, StopCosts, Threshold, TokenSignals, solve, token_signals,
};

fn per_token(c: &mut Criterion) {
    let signals = [
        TokenSignals {
            entropy: Some(0.02),
            margin: Some(0.97),
            surprise: Some(0.01),
        },
        TokenSignals {
            entropy: Some(1.4),
            margin: Some(0.2),
            surprise: Some(1.1),
        },
    ];
    let mut judge = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    let mut i = 0usize;
    c.bench_function("belief update per token", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            judge.observe_token(black_box(&signals[i & 1]));
            black_box(judge.should_escalate())
        })
    });

    let alternatives = [
        ("fn", -0.05),
        ("pub", -3.2),
        ("let", -4.0),
        ("//", -5.5),
        ("use", -9999.0),
    ];
    let mut judge = Judge::new(Calibration::prior(), Threshold::Constant(0.5));
    c.bench_function("signals from top-5 + belief update per token", |b| {
        b.iter(|| {
            let s = token_signals("fn", Some(-0.05), black_box(alternatives));
            judge.observe_token(&s);
            black_box(judge.should_escalate())
        })
    });
}

fn optimal_schedule(c: &mut Criterion) {
    let law = Calibration::prior().per_tick_law(0.01, 64);
    let spec = DpSpec {
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
    };
    let mut group = c.benchmark_group("optimal schedule");
    group.sample_size(10);
    group.bench_function("T=4096, grid 1001, 64-atom law", |b| {
        b.iter(|| solve(black_box(&law), black_box(&spec)))
    });
    group.finish();
}

criterion_group!(benches, per_token, optimal_schedule);
criterion_main!(benches);
