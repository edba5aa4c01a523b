//! `handoff schedule` through the binary over the committed real corpus: the 0.5B's shadow
//! logs and the 1.5B alone on HumanEval shard 0.

use std::path::Path;
use std::process::Command;

use super::{json_of, passed_in_results};

#[test]
fn the_schedule_is_planned_on_the_real_corpus_and_checked_on_held_out_tasks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let junior = root.join("junior/shard-0-of-8");
    let senior = root.join("senior-as-junior/shard-0-of-8");
    let out = tempfile::tempdir().expect("tempdir");
    let written = out.path().join("schedule.json");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("--config")
        .arg(root.join("junior/config.toml"))
        .args(["schedule", "--json", "--junior"])
        .arg(&junior)
        .arg("--senior")
        .arg(&senior)
        .arg("--write")
        .arg(&written)
        .output()
        .expect("run handoff");
    let v = json_of(output);
    assert_eq!(v["sessions"], 21);
    assert_eq!(v["tasks_with_senior"], 21);
    // p of the route is the senior's pass rate as eval recorded it (another path).
    let p = v["route"]["p_success"].as_f64().expect("p");
    assert!(
        (p - passed_in_results(&senior) as f64 / 21.0).abs() < 1e-12,
        "{p}"
    );
    let horizon = v["process"]["hazard"].as_array().expect("hazard").len();
    assert_eq!(v["schedule"]["tau"].as_array().expect("tau").len(), horizon);
    let policies = v["policies"].as_array().expect("policies");
    let names: Vec<&str> = policies
        .iter()
        .filter_map(|p| p["policy"].as_str())
        .collect();
    for name in [
        "step DP (planned on logs)",
        "constant τ (off-policy)",
        "never",
        "always",
        "token-clock DP, configured route",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for p in policies {
        let r = &p["realised"];
        let (lo, est, hi) = (
            r["lower"].as_f64().unwrap(),
            r["estimate"].as_f64().unwrap(),
            r["upper"].as_f64().unwrap(),
        );
        assert!(lo <= est && est <= hi, "{p}");
    }
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written).expect("written")).expect("json");
    assert_eq!(file["tau"], v["schedule"]["tau"]);
    assert_eq!(file["clock"], "junior step ends");
}

#[test]
fn schedule_refuses_bad_folds_and_logs_without_hand_backs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_handoff"))
            .args(["schedule", "--junior"])
            .arg(root.join("junior/shard-0-of-8"))
            .args(extra)
            .output()
            .expect("run handoff")
    };
    let folds = run(&["--folds", "1"]);
    assert_eq!(folds.status.code(), Some(4), "bad input");
    assert!(String::from_utf8_lossy(&folds.stderr).contains("--folds"));
    // The junior's shadow logs have no hand-back in them.
    let shadow = root.join("junior/shard-0-of-8");
    let returns = run(&["--returns", shadow.to_str().expect("utf-8 path")]);
    assert_eq!(returns.status.code(), Some(4), "bad input");
    assert!(
        String::from_utf8_lossy(&returns.stderr).contains("handed control back"),
        "{}",
        String::from_utf8_lossy(&returns.stderr)
    );
}
