//! Runs several candidate versions of one module on the same inputs, in the check's
//! sandbox: the examples' calls, then calls derived from them by changing one literal
//! argument (`probe.py`). What each candidate returned on each input is what
//! [`crate::code::agreement`] groups them by; whether it holds on the examples is what
//! ranks the groups.
//!
//! Nothing is written to the tree: each candidate's source travels on the command line and
//! is executed as the module from memory, so the tree stays the one the session knows.

use std::time::Duration;

use super::{HARNESS_COMMON, MARK, PER_EXAMPLE_S, quote};
use crate::agent::tools::Workspace;
use crate::agent::tools::run::run_shell;
use crate::code::agreement::Behaviour;
use crate::code::examples::Example;

const PROBE: &str = include_str!("probe.py");
/// Seconds one derived input may take: a changed argument can make slow code slower.
const PER_PROBE_S: u64 = 1;
/// Inputs run per candidate at most, the examples' included.
pub(crate) const MAX_PROBES: usize = 24;
/// The candidates' sources travel as one argument, which Linux caps at 128 KiB.
const MAX_SOURCE_BYTES: usize = 96 * 1024;
const OUTPUT_CAP: usize = 512 * 1024;

/// What the probe run came to: the inputs, and per candidate what it did on them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Probed {
    pub probes: Vec<String>,
    pub behaviours: Vec<Behaviour>,
}

/// Runs every source in `sources` as `module` (the file `path`) on the examples' calls and
/// the inputs derived from them; `Err` says why nothing could run.
pub(crate) async fn probe(
    ws: &Workspace,
    module: &str,
    path: &str,
    sources: &[String],
    examples: &[Example],
) -> Result<Probed, String> {
    let examples = &examples[..examples.len().min(MAX_PROBES)];
    let sources_json = serde_json::to_string(sources).map_err(|e| e.to_string())?;
    if sources_json.len() > MAX_SOURCE_BYTES {
        return Err(format!(
            "the candidates are {} KiB together, more than the {} KiB one command line carries",
            sources_json.len() / 1024,
            MAX_SOURCE_BYTES / 1024
        ));
    }
    let list: Vec<serde_json::Value> = examples
        .iter()
        .map(|e| serde_json::json!({"call": e.call, "expected": e.expected}))
        .collect();
    let root = ws.root().to_string_lossy().into_owned();
    let script = format!("{HARNESS_COMMON}{PROBE}");
    let command = format!(
        "python3 -I -c {} {} {} {} {} {} {PER_EXAMPLE_S} {PER_PROBE_S} {MAX_PROBES}",
        quote(&script),
        quote(&root),
        quote(module),
        quote(path),
        quote(&sources_json),
        quote(&serde_json::Value::Array(list).to_string()),
    );
    let per_candidate =
        2 * PER_EXAMPLE_S + PER_EXAMPLE_S * examples.len() as u64 + PER_PROBE_S * MAX_PROBES as u64;
    let wanted = Duration::from_secs(10 + per_candidate * sources.len() as u64);
    let spec = ws.shell(
        &command,
        wanted.min(ws.limits().command_timeout),
        OUTPUT_CAP,
    );
    let ran = run_shell(&spec)
        .await
        .map_err(|e| format!("the candidates could not run: {e}"))?;
    Ok(read_probed(&ran.output_tail, sources.len()))
}

/// The probe's result lines: the inputs, then one record per candidate; a candidate with
/// no record (the process died or ran out of time) did nothing anyone saw.
pub(crate) fn read_probed(output: &str, candidates: usize) -> Probed {
    let mut probed = Probed {
        probes: Vec::new(),
        behaviours: vec![Behaviour::silent("no result (the run ended first)"); candidates],
    };
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|s| s.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    for line in output.lines() {
        let Some(record) = line
            .strip_prefix(MARK)
            .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok())
        else {
            continue;
        };
        if let Some(p) = record.get("probes") {
            probed.probes = strings(p);
            continue;
        }
        let Some(slot) = record
            .get("c")
            .and_then(serde_json::Value::as_u64)
            .and_then(|c| usize::try_from(c).ok())
            .and_then(|c| probed.behaviours.get_mut(c))
        else {
            continue;
        };
        *slot = match record.get("import_error").and_then(|e| e.as_str()) {
            Some(e) => Behaviour::silent(&format!("did not import: {e}")),
            None => {
                let passed: Vec<bool> = record
                    .get("passed")
                    .and_then(|p| p.as_array())
                    .map(|a| a.iter().map(|b| b.as_bool() == Some(true)).collect())
                    .unwrap_or_default();
                Behaviour {
                    outputs: Some(strings(&record["outs"])),
                    examples_passed: count(passed.iter().filter(|p| **p)),
                    examples_failed: count(passed.iter().filter(|p| !**p)),
                    note: None,
                }
            }
        };
    }
    probed
}

fn count<I: Iterator>(it: I) -> u32 {
    u32::try_from(it.count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_matched_to_candidates_and_missing_ones_are_silent() {
        let out = format!(
            "{MARK}{{\"probes\": [\"f(1)\", \"f(2)\"]}}\nnoise\n{MARK}{{\"c\": 1, \"outs\": [\"2\", \"raises ValueError\"], \"passed\": [true]}}\n{MARK}{{\"c\": 0, \"import_error\": \"SyntaxError: x\"}}\n{MARK}{{\"c\": 9, \"outs\": []}}\n"
        );
        let p = read_probed(&out, 3);
        assert_eq!(p.probes, ["f(1)", "f(2)"]);
        assert_eq!(p.behaviours[0].outputs, None);
        assert_eq!(
            p.behaviours[0].note.as_deref(),
            Some("did not import: SyntaxError: x")
        );
        assert_eq!(
            p.behaviours[1].outputs.as_deref(),
            Some(&["2".to_string(), "raises ValueError".to_string()][..])
        );
        assert_eq!(
            (
                p.behaviours[1].examples_passed,
                p.behaviours[1].examples_failed
            ),
            (1, 0)
        );
        assert_eq!(
            p.behaviours[2].note.as_deref(),
            Some("no result (the run ended first)")
        );
    }

    /// The probe script itself, when python3 is there: two candidates that agree on the
    /// examples but not on a derived input are told apart; a broken one does not import.
    #[test]
    fn derived_inputs_tell_apart_what_the_examples_do_not() {
        use std::process::Command;
        if super::super::tests::no_python3() {
            return;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let sources = serde_json::to_string(&[
            "def f(x):\n    return 2 * x\n",
            "def f(x):\n    return x + 2\n",
            "def f(x) return\n",
        ])
        .expect("json");
        let script = format!("{HARNESS_COMMON}{PROBE}");
        let root = dir.path().to_string_lossy().into_owned();
        let out = Command::new("python3")
            .args([
                "-I",
                "-c",
                &script,
                &root,
                "m",
                "m.py",
                &sources,
                r#"[{"call": "f(2)", "expected": "4"}]"#,
                "3",
                "1",
                "8",
            ])
            .output()
            .expect("probe");
        let p = read_probed(&String::from_utf8_lossy(&out.stdout), 3);
        assert_eq!(p.probes[0], "f(2)");
        assert!(p.probes.contains(&"f(3)".to_string()), "{p:?}");
        let (a, b) = (&p.behaviours[0], &p.behaviours[1]);
        assert_eq!((a.examples_passed, b.examples_passed), (1, 1), "{p:?}");
        assert_eq!(a.outputs.as_ref().map(|o| o[0].clone()), Some("4".into()));
        assert_ne!(a.outputs, b.outputs, "{p:?}");
        assert!(
            p.behaviours[2]
                .note
                .as_deref()
                .is_some_and(|n| n.contains("SyntaxError"))
        );
    }
}
