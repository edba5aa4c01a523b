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

/// The judge that reads the task's examples, fitted without the check on the single-shot
/// collections that log them (docs/results/2026-12-07-judge-reads-examples.md), is what
/// `calibrate` fits on them now, byte for byte; and its B at the end of the one reply (the
/// first decision point of a session without a check) ranks the hidden verdicts as the
/// page says.
#[test]
fn the_examples_judge_is_what_calibrate_fits_on_the_examples_collections() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for model in ["0.5b", "1.5b"] {
        let collection = format!("data/real/code-examples-{model}");
        if !root.join(&collection).is_dir() {
            continue;
        }
        let dirs: Vec<String> = (0..8)
            .map(|i| format!("{collection}/shard-{i}-of-8/logs/single-shot"))
            .collect();
        let mut args: Vec<&str> = vec!["--no-check"];
        args.extend(dirs.iter().map(String::as_str));
        args.extend(["--folds", "5", "--model", "features"]);
        refit(
            &args,
            &format!(
                "data/calibrations/qwen2.5-coder-{model}-instruct.llamacpp.top5.no-check.json"
            ),
        );
    }
    let page =
        std::fs::read_to_string(root.join("docs/results/2026-12-07-judge-reads-examples.md"))
            .expect("the results page");
    for model in ["0.5b", "1.5b"] {
        let text = std::fs::read_to_string(root.join(format!(
            "data/real/fits/examples/{model}-no-check-features.txt"
        )))
        .expect("the fit's report");
        let last = text
            .lines()
            .find(|l| l.trim_start().starts_with("100%"))
            .expect("the row at 100 %");
        let auroc = last.split_whitespace().nth(4).expect("its AUROC");
        assert!(
            page.contains(&format!("**{auroc}**")),
            "the page should state the {model}'s B AUROC at the first decision point, {auroc} ({last})"
        );
    }
}
