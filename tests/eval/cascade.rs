//! `eval cascade` through the binary over the committed real corpus: the 0.5B's shadow
//! logs and the 1.5B alone on HumanEval shard 0. The single points must agree with what
//! `eval` itself wrote in each shard's results.json.gz (another path through the code).

use std::path::Path;
use std::process::Command;

use super::{json_of, passed_in_results};

#[test]
fn the_cascade_over_the_real_corpus_agrees_with_eval_and_orders_its_policies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let junior = root.join("junior/shard-0-of-8");
    let senior = root.join("senior-as-junior/shard-0-of-8");
    let out = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("--config")
        .arg(root.join("junior/config.toml"))
        .args(["eval", "cascade", "--json", "--junior"])
        .arg(&junior)
        .arg("--senior")
        .arg(&senior)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("run handoff");
    let v = json_of(output);
    assert_eq!(v["tasks"], 21);
    assert_eq!(
        v["junior_passed"].as_u64(),
        Some(passed_in_results(&junior))
    );
    assert_eq!(
        v["senior_passed"].as_u64(),
        Some(passed_in_results(&senior))
    );
    let points = v["points"].as_array().expect("points");
    let find = |name: &str| {
        points
            .iter()
            .find(|p| p["policy"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let acc = |p: &serde_json::Value| p["accuracy"]["estimate"].as_f64().expect("accuracy");
    let (j, s, o) = (find("junior alone"), find("senior alone"), find("oracle"));
    assert_eq!(j["relative_all"], 1.0);
    assert_eq!(acc(j), v["junior_passed"].as_f64().unwrap() / 21.0);
    assert_eq!(acc(s), v["senior_passed"].as_f64().unwrap() / 21.0);
    // The oracle is at least as accurate as either alone, and never dearer than the senior
    // alone plus the junior's whole run.
    assert!(acc(o) >= acc(j).max(acc(s)));
    for p in points {
        let a = acc(p);
        assert!(a <= acc(o) + 1e-12, "nothing beats the oracle: {p}");
        assert!(p["accuracy"]["lower"].as_f64().unwrap() <= a);
        assert!(a <= p["accuracy"]["upper"].as_f64().unwrap());
    }
    // Post-hoc at a τ above every belief escalates every task and pays for both runs.
    let everything = points
        .iter()
        .find(|p| p["policy"] == "post-hoc" && p["parameter"] == 0.9)
        .expect("post-hoc at 0.9");
    assert_eq!(acc(everything), acc(s));
    assert!(everything["relative_all"].as_f64().unwrap() > s["relative_all"].as_f64().unwrap());
    for f in [
        "cascade.json",
        "cascade.txt",
        "cascade-all.svg",
        "cascade-out.svg",
    ] {
        assert!(out.path().join(f).is_file(), "{f} written");
    }
}

#[test]
fn cascade_without_pairs_is_bad_input_naming_the_counts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let empty = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["eval", "cascade", "--junior"])
        .arg(root.join("junior/shard-0-of-8"))
        .arg("--senior")
        .arg(empty.path())
        .output()
        .expect("run handoff");
    assert_eq!(output.status.code(), Some(4), "bad input");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("no task has both") && err.contains("21 junior, 0 senior"),
        "{err}"
    );
}

#[test]
fn the_live_check_reads_the_live_run_as_eval_scored_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let live = root.join("live-tau-0.5/shard-0-of-8");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("--config")
        .arg(root.join("junior/config.toml"))
        .args(["eval", "cascade", "--json", "--junior"])
        .arg(root.join("junior/shard-0-of-8"))
        .arg("--senior")
        .arg(root.join("senior-as-junior/shard-0-of-8"))
        .arg("--live")
        .arg(format!("0.5={}", live.display()))
        .output()
        .expect("run handoff");
    let v = json_of(output);
    let check = &v["live"][0];
    let rows = check["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 21);
    let live_passed = rows.iter().filter(|r| r["live_passed"] == true).count() as u64;
    assert_eq!(live_passed, passed_in_results(&live));
    let tasks = rows.len() as f64;
    assert!(
        (check["live_accuracy"].as_f64().expect("acc") - live_passed as f64 / tasks).abs() < 1e-12
    );
    // The prediction is the offline streaming point at the same τ over the same tasks.
    let offline = v["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["policy"] == "streaming, constant τ" && p["parameter"] == 0.5)
        .expect("τ 0.5 point");
    assert_eq!(check["predicted_accuracy"], offline["accuracy"]["estimate"]);
}

#[test]
fn a_live_argument_without_a_threshold_is_bad_input() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["eval", "cascade", "--junior"])
        .arg(root.join("junior/shard-0-of-8"))
        .arg("--senior")
        .arg(root.join("senior-as-junior/shard-0-of-8"))
        .args(["--live", "somewhere"])
        .output()
        .expect("run handoff");
    assert_eq!(output.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected TAU=DIR"));
}

/// The two regimes on the code protocol's shard 0: with the check, the failed-check policy
/// is scored; without it, that row is absent, and the judge is fitted out of fold.
#[test]
fn the_cascade_with_and_without_the_check_on_the_code_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/real");
    let run = |policy: &str, no_check: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_handoff"));
        cmd.arg("--config")
            .arg(root.join("code-resample-0.5b/config.toml"))
            .args(["eval", "cascade", "--json", "--junior"])
            .arg(root.join(format!("code-resample-0.5b/shard-0-of-8/logs/{policy}")))
            .arg("--senior")
            .arg(root.join(format!("code-resample-1.5b/shard-0-of-8/logs/{policy}")));
        if no_check {
            // Without the check, the judge is fitted out of fold on these logs.
            cmd.args(["--no-check", "--folds", "3"]);
        }
        json_of(cmd.output().expect("run handoff"))
    };
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| p["policy"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let with = run("junior-only", false);
    assert_eq!(with["sweep"]["regime"], "check");
    let failed = with["points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| p["policy"] == "hand-off on first failed check")
        .expect("the failed-check row");
    let senior = &with["points"][1];
    assert_eq!(senior["policy"], "senior alone");
    assert_eq!(senior["gap_recovered"], 1.0);
    let junior = &with["points"][0];
    // Some of the junior's tasks failed a check on the way: the row hands those off.
    let rate = failed["escalation_rate"].as_f64().expect("rate");
    assert!(rate > 0.0 && rate < 1.0, "{failed}");
    assert!(junior["seconds"]["total"].as_f64().expect("seconds") > 0.0);
    let without = run("single-shot", true);
    assert_eq!(without["sweep"]["regime"], "no_check");
    assert_eq!(without["cross_fitted"], 3);
    assert_eq!(with["cross_fitted"], 0);
    assert!(
        !names(&without).contains(&"hand-off on first failed check".to_string()),
        "{:?}",
        names(&without)
    );
    assert!(names(&without).contains(&"streaming, myopic".to_string()));
}
