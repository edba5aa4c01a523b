//! Out-of-fold calibrations for analyses that re-score logs under a fitted judge (`eval
//! cascade --folds`): a judge fitted on the same sessions it then decides on has seen their
//! labels, and its cascade looks better than any live judge could. Folds are cut as
//! `calibrate --folds` cuts them, by a hash of the task.

use std::path::PathBuf;

use super::split::fold_of;
use super::{CalibrateError, CalibrateOptions, Corpus, eligible, weighted};
use crate::competence::{Calibration, fit};

/// One calibration per fold, each fitted without that fold's tasks, and the fold of every
/// session read (by its log file).
#[derive(Debug, Clone)]
pub struct FoldFits {
    pub calibrations: Vec<Calibration>,
    pub fold_of: Vec<(PathBuf, usize)>,
}

/// Fits `options.folds` (≥ 2) calibrations on the eligible sessions of `corpus`, fold k's
/// on the sessions of the other folds.
pub fn fold_fits(corpus: &Corpus, options: &CalibrateOptions) -> Result<FoldFits, CalibrateError> {
    let folds = options.folds;
    if folds < 2 {
        return Err(CalibrateError::Folds);
    }
    let (_, eligible, by_task) = eligible(&corpus.sessions, options.include_censored);
    let mut calibrations = Vec::with_capacity(folds);
    for k in 0..folds {
        let outside: Vec<_> = eligible
            .iter()
            .copied()
            .filter(|s| fold_of(s, by_task, folds) != k)
            .collect();
        let (calibration, _) =
            fit(&weighted(&outside, options.ipw), &options.fit).map_err(|source| {
                CalibrateError::Fold {
                    fold: k + 1,
                    folds,
                    source,
                }
            })?;
        calibrations.push(calibration);
    }
    let by_file = corpus
        .sessions
        .iter()
        .map(|s| (s.source.clone(), fold_of(s, by_task, folds)))
        .collect();
    Ok(FoldFits {
        calibrations,
        fold_of: by_file,
    })
}
