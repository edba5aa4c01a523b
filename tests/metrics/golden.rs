//! The metrics against values computed independently by `tools/golden_metrics.py`
//! (scikit-learn where it has the function, numpy from the definition where it has not).

use handoff::metrics::{
    AskSession, AskTally, Binning, CostAccuracyPoint, EscalationMark, Forecast, PgrCurve,
    ask_table, aurc, auroc, brier, cost_accuracy_curve, e_aurc, ece, mce, oracle_aurc,
    reliability_bins,
};
use handoff::protocol::Route;
use serde_json::Value;

const TOLERANCE: f64 = 1e-9;

fn golden() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/metrics.json");
    let text = std::fs::read_to_string(&path).expect("golden file is committed");
    serde_json::from_str(&text).expect("golden file is JSON")
}

fn close(name: &str, got: Option<f64>, want: &Value) {
    match (got, want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() <= TOLERANCE, "{name}: {g} vs {w}"),
        (None, None) => assert!(want.is_null(), "{name}: expected {want}"),
        (g, _) => panic!("{name}: got {g:?}, golden {want}"),
    }
}

fn forecasts(case: &Value) -> Vec<Forecast> {
    let p = case["p"].as_array().expect("p");
    let y = case["y"].as_array().expect("y");
    assert_eq!(p.len(), y.len());
    p.iter()
        .zip(y)
        .map(|(p, y)| Forecast::new(p.as_f64().expect("p"), y.as_i64() == Some(1)))
        .collect()
}

#[test]
fn calibration_and_ranking_match_the_golden_values() {
    let golden = golden();
    let cases = golden["forecasts"].as_object().expect("forecasts");
    assert!(cases.len() >= 5);
    for (name, case) in cases {
        let data = forecasts(case);
        let want = &case["expected"];
        let n = |m: &str| format!("{name}.{m}");
        close(
            &n("ece_width_15"),
            ece(&data, Binning::WIDTH_15),
            &want["ece_width_15"],
        );
        close(
            &n("mce_width_15"),
            mce(&data, Binning::WIDTH_15),
            &want["mce_width_15"],
        );
        close(
            &n("ece_mass_10"),
            ece(&data, Binning::MASS_10),
            &want["ece_mass_10"],
        );
        close(
            &n("mce_mass_10"),
            mce(&data, Binning::MASS_10),
            &want["mce_mass_10"],
        );
        close(&n("brier"), brier(&data), &want["brier"]);
        close(&n("auroc"), auroc(&data), &want["auroc"]);
        close(&n("aurc"), aurc(&data), &want["aurc"]);
        close(&n("oracle_aurc"), oracle_aurc(&data), &want["oracle_aurc"]);
        close(&n("e_aurc"), e_aurc(&data), &want["e_aurc"]);
        for (binning, key) in [
            (Binning::WIDTH_15, "bins_width_15"),
            (Binning::MASS_10, "bins_mass_10"),
        ] {
            let bins = reliability_bins(&data, binning).expect("bins");
            let want_bins = want[key].as_array().expect("bins");
            assert_eq!(bins.len(), want_bins.len(), "{name}.{key}");
            for (b, w) in bins.iter().zip(want_bins) {
                assert_eq!(Some(b.count as u64), w[0].as_u64(), "{name}.{key} count");
                close(&n(key), Some(b.confidence), &w[1]);
                close(&n(key), Some(b.accuracy), &w[2]);
            }
        }
    }
}

#[test]
fn ask_f1_matches_sklearn() {
    let golden = golden();
    let ask = &golden["ask"];
    let sessions: Vec<AskSession> = ask["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| AskSession {
            escalations: serde_json::from_value::<Vec<EscalationMark>>(s["escalations"].clone())
                .expect("escalations"),
            failed: s["failed"].as_bool().expect("failed"),
        })
        .collect();
    let table = ask_table(&sessions);
    let check = |name: &str, tally: &AskTally| {
        let want = &ask["expected"][name];
        close(
            &format!("{name}.precision"),
            tally.precision(),
            &want["precision"],
        );
        close(&format!("{name}.recall"), tally.recall(), &want["recall"]);
        close(&format!("{name}.f1"), tally.f1(), &want["f1"]);
    };
    check("pooled", &table.pooled);
    check("senior", table.route(Route::Senior));
    check("operator", table.route(Route::Operator));
}

fn point(v: &Value) -> (f64, f64) {
    (
        v[0].as_f64().expect("cost"),
        v[1].as_f64().expect("accuracy"),
    )
}

#[test]
fn apgr_cpt_and_frontier_match_the_golden_values() {
    let golden = golden();
    for (name, case) in golden["routing"].as_object().expect("routing") {
        let (cj, aj) = point(&case["junior"]);
        let (cs, a_s) = point(&case["senior"]);
        let policies: Vec<CostAccuracyPoint> = case["policies"]
            .as_array()
            .expect("policies")
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let (c, a) = point(v);
                CostAccuracyPoint::new(format!("p{i}"), c, a)
            })
            .collect();
        let want = &case["expected"];
        let curve = PgrCurve::new(
            CostAccuracyPoint::new("junior", cj, aj),
            CostAccuracyPoint::new("senior", cs, a_s),
            &policies,
        )
        .expect("gap");
        let knots = want["knots"].as_array().expect("knots");
        assert_eq!(curve.knots.len(), knots.len(), "{name}.knots");
        for (k, w) in curve.knots.iter().zip(knots) {
            close(&format!("{name}.knot.x"), Some(k.0), &w[0]);
            close(&format!("{name}.knot.g"), Some(k.1), &w[1]);
        }
        close(&format!("{name}.apgr"), Some(curve.apgr()), &want["apgr"]);
        for t in case["targets"].as_array().expect("targets") {
            let t = t.as_f64().expect("target");
            let key = format!("{t:?}");
            close(
                &format!("{name}.cpt({key})"),
                curve.cpt(t),
                &want["cpt"][&key],
            );
        }
        let frontier: Vec<(f64, f64)> = cost_accuracy_curve(policies)
            .frontier
            .iter()
            .map(|p| (p.cost, p.accuracy))
            .collect();
        let want_frontier: Vec<(f64, f64)> = want["frontier"]
            .as_array()
            .expect("frontier")
            .iter()
            .map(point)
            .collect();
        assert_eq!(frontier, want_frontier, "{name}.frontier");
    }
}
