//! Logs in, sessions out: each file streamed, each session folded into a labelled
//! [`Trajectory`] of the raw observation values its log kept.

use std::path::{Path, PathBuf};

use super::super::regime::Regime;
use super::super::rescore::{EvidenceDecoder, TrajectoryFold};
use crate::competence::Trajectory;
use crate::log::{LogError, LogReader, ReadWarning, log_files};
use crate::protocol::{Actor, Event};

/// One session as read from a log.
#[derive(Debug, Clone)]
pub struct LoggedSession {
    pub source: PathBuf,
    pub session_id: String,
    /// The task text of `session_started` (empty when the log has none).
    pub task: String,
    /// The junior model `session_started` names.
    pub junior_model: String,
    /// The longest top-logprob list on a junior token.
    pub top_logprobs: usize,
    pub trajectory: Trajectory,
    pub shadow: bool,
    pub censored: bool,
    /// The log reached `session_ended`.
    pub ended: bool,
    /// The probability, given its evidence, that shadow exploration left this session
    /// uncensored (1 when no decision of it was drawn); its fitting weight is the inverse.
    pub propensity: f64,
}

/// What a session's start (and its tokens) say about it.
#[derive(Debug, Default)]
struct Started {
    session_id: String,
    task: String,
    junior_model: String,
    top_logprobs: usize,
}

/// Sessions of one log file, streamed: the reader holds one line at a time and each
/// session only its own trajectory.
pub fn read_sessions(path: &Path) -> Result<(Vec<LoggedSession>, Vec<ReadWarning>), LogError> {
    read_sessions_in(path, Regime::Check)
}

/// [`read_sessions`] as the judge would have seen the sessions in `regime` (without the
/// check: no check facts, for a judge fitted to work where a task has no test).
pub fn read_sessions_in(
    path: &Path,
    regime: Regime,
) -> Result<(Vec<LoggedSession>, Vec<ReadWarning>), LogError> {
    let items = LogReader::open(path)?.filter_map(move |item| match item {
        Ok(mut stamped) => {
            stamped.event = regime.take(stamped.event)?;
            Some(Ok(stamped))
        }
        Err(w) => Some(Err(w)),
    });
    Ok(fold_sessions(path, items))
}

/// The sessions of a stream of logged events (what [`read_sessions`] reads from a file;
/// a simulator's events in memory), `source` naming where they came from.
pub fn fold_sessions(
    source: &Path,
    items: impl IntoIterator<Item = Result<crate::protocol::Stamped, ReadWarning>>,
) -> (Vec<LoggedSession>, Vec<ReadWarning>) {
    let path = source;
    let mut warnings = Vec::new();
    let mut sessions = Vec::new();
    let mut decoder = EvidenceDecoder::new();
    let mut current: Option<(Started, TrajectoryFold)> = None;
    let mut evidence = Vec::new();
    let finish = |(started, fold): (Started, TrajectoryFold)| LoggedSession {
        source: path.to_path_buf(),
        session_id: started.session_id,
        task: started.task,
        junior_model: started.junior_model,
        top_logprobs: started.top_logprobs,
        trajectory: fold.trajectory,
        shadow: fold.shadow,
        censored: fold.censored,
        ended: fold.ended,
        propensity: fold.propensity,
    };
    for item in items {
        let event = match item {
            Ok(stamped) => stamped.event,
            Err(w) => {
                warnings.push(w);
                continue;
            }
        };
        if let Event::SessionStarted {
            session_id,
            task,
            junior_model,
            ..
        } = &event
        {
            sessions.extend(current.take().map(finish));
            let started = Started {
                session_id: session_id.clone(),
                task: task.clone(),
                junior_model: junior_model.clone(),
                top_logprobs: 0,
            };
            current = Some((started, TrajectoryFold::default()));
        }
        let (started, fold) = current.get_or_insert_with(Default::default);
        if let Event::Token {
            actor: Actor::Junior,
            top,
            ..
        } = &event
        {
            started.top_logprobs = started.top_logprobs.max(top.len());
        }
        evidence.clear();
        decoder.push(&event, &mut evidence);
        for e in &evidence {
            fold.push(e);
        }
    }
    sessions.extend(current.map(finish));
    (sessions, warnings)
}

/// Sessions read from logs, and what had to be skipped on the way.
#[derive(Debug, Default)]
pub struct Corpus {
    pub files: usize,
    pub sessions: Vec<LoggedSession>,
    /// Unreadable files and skipped lines, each naming file (and line).
    pub warnings: Vec<String>,
}

/// Every session of the logs named by `inputs` (files or directories of `*.jsonl`). With
/// `progress`, a bar on stderr when it is a terminal and there are many files.
pub fn load(inputs: &[PathBuf], progress: bool) -> Corpus {
    load_in(inputs, progress, Regime::Check)
}

/// [`load`] in a regime: [`Regime::NoCheck`] reads the logs without what the check told
/// the loop.
pub fn load_in(inputs: &[PathBuf], progress: bool, regime: Regime) -> Corpus {
    let (files, errors) = log_files(inputs);
    let bar = progress.then(|| progress_bar(files.len())).flatten();
    let mut corpus = Corpus {
        files: files.len(),
        warnings: errors.iter().map(ToString::to_string).collect(),
        ..Corpus::default()
    };
    for file in &files {
        match read_sessions_in(file, regime) {
            Ok((s, w)) => {
                corpus.sessions.extend(s);
                corpus.warnings.extend(w.iter().map(ToString::to_string));
            }
            Err(e) => corpus.warnings.push(e.to_string()),
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    corpus
}

/// A progress bar on stderr when it is a terminal and there are many files to read.
fn progress_bar(files: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if files < 20 || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(files as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("reading logs {bar:40} {pos}/{len} {eta}")
    {
        bar.set_style(style);
    }
    Some(bar)
}
