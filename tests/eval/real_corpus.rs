//! The calibrations that ship are what `calibrate` fits on the committed real corpus, byte
//! for byte: docs/results/2026-12-01-real-corpus-and-fits.md's "handoff calibrate data/real/… reproduces the committed
//! calibration" as a check (the commands are those of `tools/real-models/refit`).

use std::path::Path;
use std::process::Command;

use super::succeeded;

fn refit(args: &[&str], committed: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("tempdir");
    let file = out.path().join("fit.json");
    let output = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .current_dir(root)
        .args(["--config", "data/real/junior/config.toml", "calibrate"])
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

#[test]
fn the_shipped_calibrations_are_what_calibrate_fits_on_the_corpus() {
    refit(
        &["data/real/junior", "data/real/bundled-junior"],
        "data/calibrations/qwen2.5-coder-0.5b-instruct.llamacpp.top5.json",
    );
    refit(
        &["data/real/senior-as-junior", "--folds", "5"],
        "data/calibrations/qwen2.5-coder-1.5b-instruct.llamacpp.top5.json",
    );
}
