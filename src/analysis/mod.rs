//! What is read back out of session logs: reports, calibration, replay's re-scoring, CSV
//! and plots. Everything here reads logs through `log` and folds them with the one
//! [`SessionFold`](crate::metrics::session::SessionFold); nothing here runs a session.

pub mod ask_scores;
pub mod calibrate;
pub mod cascade;
pub mod cascade_live;
pub mod cascade_sweep;
pub mod csv;
pub mod discrimination;
pub mod plot;
pub mod regime;
pub mod replay;
pub mod report;
pub mod rescore;
pub mod schedule_paths;
pub mod schedule_plan;
pub mod schedule_returns;
pub mod wall;

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
