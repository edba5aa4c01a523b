//! `[checkpoints]`: how long the checkpoints of past sessions stay in a repository.
//!
//! Every step of a session leaves a commit under `refs/handoff/<session>/`; without a limit
//! they pile up in every repository handoff ever worked in. Pruning runs when a session
//! starts (the library's [`crate::repo::Repo::prune`]), removes whole sessions (never one
//! step of a kept session) and only deletes refs: the objects go at the next `git gc`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a session start prunes, and what `handoff sessions prune` does by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointsConfig {
    /// Prune old sessions' checkpoints when a session starts.
    pub prune: bool,
    /// Sessions whose newest checkpoint is older than this many days are removed (0: no
    /// age limit).
    pub max_age_days: u32,
    /// At most this many sessions keep their checkpoints, the newest (0: no count limit).
    pub max_sessions: u32,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        CheckpointsConfig {
            prune: true,
            max_age_days: 30,
            max_sessions: 50,
        }
    }
}

impl CheckpointsConfig {
    /// The limits as the repository's prune policy; 0 means no limit.
    pub fn policy(&self) -> crate::repo::PrunePolicy {
        crate::repo::PrunePolicy {
            max_age: (self.max_age_days > 0)
                .then(|| Duration::from_secs(u64::from(self.max_age_days) * 24 * 3600)),
            max_count: (self.max_sessions > 0)
                .then(|| usize::try_from(self.max_sessions).unwrap_or(usize::MAX)),
        }
    }
}
