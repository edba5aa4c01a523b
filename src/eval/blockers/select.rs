//! `handoff eval blockers select`: keep the blocker tasks whose detail is needed, mix in
//! untouched ones, write the suite.
//!
//! The rule (HiL-Bench keeps a blocker only when the task cannot be solved without it):
//! a blocked task is kept when the reference model's single shot **passes the full task
//! and fails the blocked one**, both runs measured (no endpoint error). Every other task is
//! dropped, and why is counted: it passed without the detail (not needed), it failed even
//! with it (the reference cannot tell), it had no candidate, or a run measured nothing.
//! Then as many untouched tasks (the `full` variant, no blocker) as were kept are drawn
//! with the seed from the tasks not kept, so that asking when nothing is missing costs
//! precision. The counts and the draw go to `OUT/selection.json` and `OUT/README.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::detail::{fnv1a, splitmix64};
use super::make::{MANIFEST, Manifest};
use crate::eval::EvalReport;

#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// Missing, not a regular file, too large or not text (see [`crate::infile`]).
    #[error("{0}")]
    File(#[from] crate::infile::InputFileError),
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: expected the results of one policy, found {found}")]
    Policies { path: PathBuf, found: String },
    #[error("cannot write {path}: {cause}")]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Why a task is or is not in the suite as a blocker task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Passed with the detail, failed without: the detail is needed.
    Kept,
    /// Passed without the detail.
    NotNeeded,
    /// Failed with the detail too: the reference model cannot say whether it is needed.
    FailsWithIt,
    /// No detail could be removed.
    NoCandidate,
    /// One of the two runs is missing or measured nothing.
    Unmeasured,
}

/// What `select` decided, written beside the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub seed: u64,
    pub counts: BTreeMap<String, usize>,
    /// Per task id, the verdict.
    pub verdicts: BTreeMap<String, Verdict>,
    /// The untouched tasks drawn into the suite.
    pub untouched: Vec<String>,
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, SelectError> {
    let text = crate::eval::read_text(path)?;
    serde_json::from_str(&text).map_err(|e| SelectError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Per task, whether the one policy's run passed (`None`: it measured nothing).
fn outcomes(dir: &Path) -> Result<BTreeMap<String, Option<bool>>, SelectError> {
    let path = crate::eval::results_file(dir);
    let report: EvalReport = read_json(&path)?;
    let policies: BTreeSet<&str> = report.runs.iter().map(|r| r.policy.as_str()).collect();
    if policies.len() > 1 {
        return Err(SelectError::Policies {
            path,
            found: policies.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(report
        .runs
        .iter()
        .map(|r| {
            let measured = r.unmeasured().is_none();
            (r.task.clone(), measured.then_some(r.passed))
        })
        .collect())
}

/// The verdict of each task of the manifest.
pub fn verdicts(
    manifest: &Manifest,
    with: &BTreeMap<String, Option<bool>>,
    without: &BTreeMap<String, Option<bool>>,
) -> BTreeMap<String, Verdict> {
    manifest
        .tasks
        .iter()
        .map(|t| {
            let v = if t.chosen.is_none() {
                Verdict::NoCandidate
            } else {
                match (
                    with.get(&t.id).copied().flatten(),
                    without.get(&t.id).copied().flatten(),
                ) {
                    (Some(true), Some(false)) => Verdict::Kept,
                    (Some(true), Some(true)) => Verdict::NotNeeded,
                    (Some(false), Some(_)) => Verdict::FailsWithIt,
                    _ => Verdict::Unmeasured,
                }
            };
            (t.id.clone(), v)
        })
        .collect()
}

/// `n` ids drawn from `pool` without replacement, the same for the same seed and pool.
pub fn draw(seed: u64, pool: &[String], n: usize) -> Vec<String> {
    let mut keyed: Vec<(u64, &String)> = pool
        .iter()
        .map(|id| (splitmix64(seed ^ fnv1a(id) ^ 0x5eed), id))
        .collect();
    keyed.sort();
    let mut out: Vec<String> = keyed
        .into_iter()
        .take(n)
        .map(|(_, id)| id.clone())
        .collect();
    out.sort();
    out
}

fn copy_task(from: &Path, to: &Path, id: &str) -> Result<(), SelectError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |cause| SelectError::Write { path, cause }
    };
    for sub in ["repos", "hidden", "solutions"] {
        let (src, dst) = (from.join(sub).join(id), to.join(sub).join(id));
        if src.is_dir() {
            crate::eval::run::copy_tree(&src, &dst).map_err(io(&dst))?;
        }
    }
    let file = format!("{id}.toml");
    std::fs::copy(from.join(&file), to.join(&file)).map_err(io(&to.join(&file)))?;
    Ok(())
}

/// Reads the manifest of `made` (the output of `make`) and the two single-shot results,
/// and writes the suite to `out`.
pub fn select(
    made: &Path,
    with: &Path,
    without: &Path,
    out: &Path,
) -> Result<Selection, SelectError> {
    let manifest: Manifest = read_json(&made.join(MANIFEST))?;
    let verdicts = verdicts(&manifest, &outcomes(with)?, &outcomes(without)?);
    let kept: Vec<String> = verdicts
        .iter()
        .filter(|(_, v)| **v == Verdict::Kept)
        .map(|(id, _)| id.clone())
        .collect();
    let pool: Vec<String> = verdicts
        .iter()
        .filter(|(_, v)| **v != Verdict::Kept)
        .map(|(id, _)| id.clone())
        .collect();
    let untouched = draw(manifest.seed, &pool, kept.len());
    std::fs::create_dir_all(out).map_err(|cause| SelectError::Write {
        path: out.to_path_buf(),
        cause,
    })?;
    for id in &kept {
        copy_task(&made.join("blocked"), out, id)?;
    }
    for id in &untouched {
        copy_task(&made.join("full"), out, id)?;
    }
    let mut counts = BTreeMap::new();
    for v in verdicts.values() {
        let key = serde_json::to_value(v)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *counts.entry(key).or_insert(0) += 1;
    }
    counts.insert("untouched".into(), untouched.len());
    let selection = Selection {
        seed: manifest.seed,
        counts,
        verdicts,
        untouched,
    };
    let json = serde_json::to_string_pretty(&selection).unwrap_or_default();
    let path = out.join("selection.json");
    std::fs::write(&path, json).map_err(|cause| SelectError::Write { path, cause })?;
    Ok(selection)
}

#[cfg(test)]
mod tests {
    use super::super::detail::Kind;
    use super::super::make::{Chosen, Made};
    use super::*;

    fn made(id: &str, chosen: bool) -> Made {
        Made {
            id: id.into(),
            task_id: id.into(),
            candidates: usize::from(chosen),
            chosen: chosen.then(|| Chosen {
                index: 0,
                kind: Kind::Rule,
                removed: "x".into(),
            }),
        }
    }

    #[test]
    fn only_a_detail_that_turns_a_pass_into_a_failure_is_kept() {
        let manifest = Manifest {
            seed: 1,
            source: "t".into(),
            tasks: vec![
                made("a", true),
                made("b", true),
                made("c", true),
                made("d", false),
                made("e", true),
            ],
        };
        let with: BTreeMap<String, Option<bool>> = [
            ("a", Some(true)),
            ("b", Some(true)),
            ("c", Some(false)),
            ("d", Some(true)),
            ("e", None),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let without: BTreeMap<String, Option<bool>> = [
            ("a", Some(false)),
            ("b", Some(true)),
            ("c", Some(false)),
            ("e", Some(false)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let v = verdicts(&manifest, &with, &without);
        assert_eq!(v["a"], Verdict::Kept);
        assert_eq!(v["b"], Verdict::NotNeeded);
        assert_eq!(v["c"], Verdict::FailsWithIt);
        assert_eq!(v["d"], Verdict::NoCandidate);
        assert_eq!(v["e"], Verdict::Unmeasured);
    }

    #[test]
    fn the_draw_is_a_fixed_subset_for_a_seed() {
        let pool: Vec<String> = (0..30).map(|i| format!("t{i}")).collect();
        let a = draw(3, &pool, 10);
        assert_eq!(a, draw(3, &pool, 10));
        assert_eq!(a.len(), 10);
        assert_ne!(a, draw(4, &pool, 10));
        assert!(a.iter().all(|id| pool.contains(id)));
        assert_eq!(draw(3, &pool, 100).len(), 30);
    }
}
