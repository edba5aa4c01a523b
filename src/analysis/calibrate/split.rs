//! Which side of the split, or which fold, a session is on: a hash of its task, so every
//! session of one task lands on one side whatever the order files are found in.

use sha2::{Digest, Sha256};

use super::LoggedSession;

/// Whether a session is held out: a hash of its task (of its id, or its log's path, when
/// it has none, or when `by_task` is off), so all sessions of a task fall on one side, the
/// split is stable across
/// runs, independent of the order files are found in, and a session copied into two places
/// lands on one side only.
pub fn is_held_out(session: &LoggedSession, holdout: f64, by_task: bool) -> bool {
    split_point(session, by_task) < holdout
}

/// The session's place in [0, 1) by the hash [`is_held_out`] describes; cross-validation
/// folds cut the same line into equal parts, so fold membership has the same properties.
pub(super) fn split_point(session: &LoggedSession, by_task: bool) -> f64 {
    let mut h = Sha256::new();
    if by_task && !session.task.is_empty() {
        h.update(b"task\0");
        h.update(session.task.as_bytes());
    } else if session.session_id.is_empty() {
        h.update(session.source.to_string_lossy().as_bytes());
    } else {
        h.update(session.session_id.as_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(bytes) as f64 / (u64::MAX as f64 + 1.0)
}

/// Which of `folds` cross-validation folds the session is in: [`split_point`]'s line cut
/// into equal parts.
pub(super) fn fold_of(session: &LoggedSession, by_task: bool, folds: usize) -> usize {
    ((split_point(session, by_task) * folds as f64) as usize).min(folds.saturating_sub(1))
}

/// How many tasks (groups of [`group_key`]) the sessions span.
pub(super) fn distinct_tasks(sessions: &[&LoggedSession]) -> usize {
    sessions
        .iter()
        .map(|s| group_key(s))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// What ties a session's forecasts together for the bootstrap and the split: its task.
pub(super) fn group_key(s: &LoggedSession) -> &str {
    if s.task.is_empty() {
        &s.session_id
    } else {
        &s.task
    }
}
