//! The calibrations that ship are what `calibrate` fits on the committed real corpus, byte
//! for byte: the feature model, 5-fold by task, on each model's loop sessions of the code
//! protocol (`data/real/code-resample-*`, `--policy junior-only`), as
//! `tools/real-models/refit` fits them (docs/results/2026-12-06-cascade-code.md).

use std::path::Path;
use std::process::Command;

use super::succeeded;

fn refit(args: &[&str], committed: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("tempdir");
    let file = out.path().join("fit.json");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .current_dir(root)
        .args([
            "--config",
            "data/real/code-resample-0.5b/config.toml",
            "calibrate",
        ])
        .args(args)
        .arg("-o")
        .arg(&file)
        .output()
        .expect("run handoff");
    succeeded(output);
    let fitted = std::fs::read(&file).expect("written");
    let shipped = std::fs::read(root.join(committed)).expect("committed calibration");
    assert!(
        fitted == shipped,
        "{committed} is not what `calibrate {}` fits now: rerun tools/real-models/refit",
        args.join(" ")
    );
}

/// The loop sessions of one model: the eight HumanEval shards and the bundled suite.
fn loop_sessions(model: &str) -> Vec<String> {
    (0..8)
        .map(|i| format!("data/real/code-resample-{model}/shard-{i}-of-8/logs/junior-only"))
        .chain([format!(
            "data/real/code-resample-bundled-{model}/shard-0-of-1/logs/junior-only"
        )])
        .collect()
}

#[test]
fn the_shipped_calibrations_are_what_calibrate_fits_on_the_corpus() {
    for (model, shipped) in [
        (
            "0.5b",
            "data/calibrations/qwen2.5-coder-0.5b-instruct.llamacpp.top5.json",
        ),
        (
            "1.5b",
            "data/calibrations/qwen2.5-coder-1.5b-instruct.llamacpp.top5.json",
        ),
    ] {
        let dirs = loop_sessions(model);
        let mut args: Vec<&str> = dirs.iter().map(String::as_str).collect();
        args.extend(["--folds", "5", "--model", "features"]);
        refit(&args, shipped);
    }
}
