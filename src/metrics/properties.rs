//! Properties every scoring function must have whatever the data: ranges, symmetries, and
//! invariance to the order sessions happen to be listed in.

use proptest::prelude::*;

use super::*;

fn forecasts() -> impl Strategy<Value = Vec<Forecast>> {
    // Coarse values make ties common, which is where rank-based scores go wrong.
    let p = prop_oneof![(0u32..=10).prop_map(|k| f64::from(k) / 10.0), 0.0f64..=1.0];
    prop::collection::vec((p, any::<bool>()), 1..60)
        .prop_map(|v| v.into_iter().map(|(p, s)| Forecast::new(p, s)).collect())
}

fn flipped(data: &[Forecast]) -> Vec<Forecast> {
    data.iter()
        .map(|f| Forecast::new(f.p, !f.success))
        .collect()
}

proptest! {
    #[test]
    fn calibration_errors_lie_in_the_unit_interval(data in forecasts()) {
        for binning in [Binning::WIDTH_15, Binning::MASS_10, Binning::EqualWidth(1)] {
            let e = ece(&data, binning).expect("defined");
            let m = mce(&data, binning).expect("defined");
            prop_assert!((0.0..=1.0).contains(&e));
            prop_assert!(e <= m + 1e-12, "ece {} above mce {}", e, m);
        }
        let bins = reliability_bins(&data, Binning::MASS_10).expect("defined");
        prop_assert_eq!(bins.iter().map(|b| b.count).sum::<usize>(), data.len());
        let b = brier(&data).expect("defined");
        prop_assert!((0.0..=1.0).contains(&b));
    }

    #[test]
    fn flipping_every_label_mirrors_auroc(data in forecasts()) {
        if let Some(a) = auroc(&data) {
            prop_assert!((0.0..=1.0).contains(&a));
            let mirrored = auroc(&flipped(&data)).expect("still two classes");
            prop_assert!((a + mirrored - 1.0).abs() < 1e-12);
        } else {
            prop_assert!(data.iter().all(|f| f.success) || data.iter().all(|f| !f.success));
        }
    }

    #[test]
    fn scores_do_not_depend_on_input_order(data in forecasts(), seed in any::<u64>()) {
        let mut shuffled = data.clone();
        // A deterministic shuffle driven by the seed (Fisher–Yates with an LCG).
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (state >> 33) as usize % (i + 1));
        }
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() < 1e-9,
            (a, b) => a == b,
        };
        prop_assert!(close(aurc(&data), aurc(&shuffled)));
        prop_assert!(close(auroc(&data), auroc(&shuffled)));
        prop_assert!(close(ece(&data, Binning::WIDTH_15), ece(&shuffled, Binning::WIDTH_15)));
        prop_assert!(close(brier(&data), brier(&shuffled)));
    }

    #[test]
    fn excess_aurc_is_never_negative(data in forecasts()) {
        let e = e_aurc(&data).expect("defined");
        prop_assert!(e >= -1e-12, "e-aurc {}", e);
        prop_assert!(aurc(&data).expect("defined") <= 1.0 + 1e-12);
    }

    #[test]
    fn ask_f1_lies_between_zero_and_one(
        sessions in prop::collection::vec(
            (prop::collection::vec((any::<bool>(), prop::option::of(any::<bool>())), 0..3),
             any::<bool>()),
            0..30,
        )
    ) {
        let sessions: Vec<AskSession> = sessions
            .into_iter()
            .map(|(escalations, failed)| AskSession {
                escalations: escalations
                    .into_iter()
                    .map(|(senior, needed)| EscalationMark {
                        route: if senior { crate::protocol::Route::Senior } else { crate::protocol::Route::Operator },
                        needed,
                    })
                    .collect(),
                failed,
            })
            .collect();
        let t = ask_table(&sessions);
        for tally in [t.pooled, t.senior, t.operator] {
            for v in [tally.precision(), tally.recall(), tally.f1()].into_iter().flatten() {
                prop_assert!((0.0..=1.0).contains(&v));
            }
        }
        prop_assert_eq!(t.pooled.tp, t.senior.tp + t.operator.tp);
        prop_assert_eq!(t.pooled.fp, t.senior.fp + t.operator.fp);
    }

    #[test]
    fn cpt_is_monotone_in_the_target_when_pgr_is(
        mut gains in prop::collection::vec(0.0f64..1.0, 0..8),
        a in 0.0f64..1.0,
        b in 0.0f64..1.0,
    ) {
        // A monotone router: more money never buys less.
        gains.sort_by(f64::total_cmp);
        let n = gains.len() as f64;
        let policies: Vec<CostAccuracyPoint> = gains
            .iter()
            .enumerate()
            .map(|(i, g)| CostAccuracyPoint::new("p", (i as f64 + 1.0) / (n + 1.0), *g))
            .collect();
        let curve = PgrCurve::new(
            CostAccuracyPoint::new("junior", 0.0, 0.0),
            CostAccuracyPoint::new("senior", 1.0, 1.0),
            &policies,
        )
        .expect("gap");
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let (x_lo, x_hi) = (curve.cpt(lo).expect("reached"), curve.cpt(hi).expect("reached"));
        prop_assert!(x_lo <= x_hi + 1e-12);
        prop_assert!((0.0..=1.0).contains(&curve.apgr()));
    }
}
