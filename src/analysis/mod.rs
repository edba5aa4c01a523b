//! What is read back out of session logs: reports, calibration, replay's re-scoring, CSV
//! and plots. Everything here reads logs through `log` and folds them with the one
//! [`SessionFold`](crate::metrics::session::SessionFold); nothing here runs a session.

pub(crate) mod ask_scores;
pub mod calibrate;
pub(crate) mod cascade;
pub(crate) mod cascade_live;
pub(crate) mod cascade_sweep;
pub(crate) mod csv;
pub(crate) mod discrimination;
pub(crate) mod plot;
pub(crate) mod regime;
pub mod replay;
pub mod report;
pub(crate) mod rescore;
pub(crate) mod schedule_paths;
pub(crate) mod schedule_plan;
pub(crate) mod schedule_returns;
pub(crate) mod wall;

use std::path::Path;

use crate::log::{LogError, LogReader, ReadWarning};
use crate::metrics::session::{SessionSummary, summarize};

/// Summaries of one log file and the lines that had to be skipped, streaming.
pub fn summarize_file(path: &Path) -> Result<(Vec<SessionSummary>, Vec<ReadWarning>), LogError> {
    let reader = LogReader::open(path)?;
    let mut warnings = Vec::new();
    let events = reader.filter_map(|item| match item {
        Ok(stamped) => Some(stamped.event),
        Err(w) => {
            warnings.push(w);
            None
        }
    });
    let summaries = summarize(path, events);
    Ok((summaries, warnings))
}
