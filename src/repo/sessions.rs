//! The checkpoints of past sessions as a user handles them: list, diff a step, restore a
//! step, prune old sessions. `handoff diff`, `handoff restore` and `handoff sessions` are
//! thin front ends over these.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::{REF_PREFIX, Repo, RepoError, stat_of};
use crate::diffview::{self, RenderedDiff};

/// Sessions older than this are pruned by default.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);
/// At most this many sessions keep their checkpoints by default (the newest).
pub const DEFAULT_MAX_COUNT: usize = 50;

/// One kept checkpoint of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepCheckpoint {
    /// The step number, or `None` for a checkpoint kept under a name (e.g. the state a
    /// forced restore replaced).
    pub step: Option<u32>,
    /// The ref's last component: the step number or the kept name.
    pub name: String,
    pub tree: String,
    /// `None` for tree refs written by older versions.
    pub commit: Option<String>,
    /// Commit time, seconds since the Unix epoch.
    pub time: Option<i64>,
}

/// Everything kept for one session in this repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCheckpoints {
    pub session: String,
    /// Numbered steps first (ascending), then kept names.
    pub checkpoints: Vec<StepCheckpoint>,
}

impl SessionCheckpoints {
    /// When the session last wrote a checkpoint; `None` if only undated tree refs remain.
    pub fn newest(&self) -> Option<i64> {
        self.checkpoints.iter().filter_map(|c| c.time).max()
    }

    /// The highest step number kept.
    pub fn last_step(&self) -> Option<u32> {
        self.checkpoints.iter().filter_map(|c| c.step).max()
    }

    fn steps(&self) -> impl Iterator<Item = &StepCheckpoint> {
        self.checkpoints.iter().filter(|c| c.step.is_some())
    }
}

/// A change between two checkpoints, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointDiff {
    pub session: String,
    /// What the diff starts from: `step N`, `HEAD at start`, or `empty tree`.
    pub from: String,
    /// What it ends at: `step N`.
    pub to: String,
    pub diff: RenderedDiff,
    /// git's own stat (`--stat` text and counts).
    pub stat: super::DiffStat,
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    pub session: String,
    /// The checkpoint restored: a step number or a kept name.
    pub name: String,
    /// The tree the work tree now matches.
    pub tree: String,
    /// With force over changes no checkpoint held: the kept name they were saved under
    /// (restore it like a step: `refs/handoff/<session>/<name>`).
    pub saved_as: Option<String>,
    /// Files the restore rewrote or removed.
    pub files_changed: usize,
}

/// Which sessions' checkpoints to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrunePolicy {
    /// Remove sessions whose newest checkpoint is older than this.
    pub max_age: Option<Duration>,
    /// Keep at most this many sessions (the newest).
    pub max_count: Option<usize>,
}

impl Default for PrunePolicy {
    fn default() -> Self {
        PrunePolicy {
            max_age: Some(DEFAULT_MAX_AGE),
            max_count: Some(DEFAULT_MAX_COUNT),
        }
    }
}

/// What a prune removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Sessions whose refs were deleted, oldest first.
    pub removed: Vec<String>,
    pub refs_deleted: usize,
    /// Sessions left.
    pub kept: usize,
}

impl Repo {
    /// Every session with checkpoints in this repository, newest first; sessions with only
    /// undated (older-format) refs come last, by name.
    pub fn list_sessions(&self) -> Result<Vec<SessionCheckpoints>, RepoError> {
        let mut by_session: BTreeMap<String, Vec<StepCheckpoint>> = BTreeMap::new();
        for r in self.repo.references()? {
            let r = r?;
            let Some((session, name)) = r
                .name()
                .ok()
                .and_then(|n| n.strip_prefix(REF_PREFIX))
                .and_then(|rest| rest.rsplit_once('/'))
            else {
                continue;
            };
            let (session, name) = (session.to_string(), name.to_string());
            let Ok(tree) = r.peel_to_tree() else { continue };
            let commit = r.peel_to_commit().ok();
            by_session.entry(session).or_default().push(StepCheckpoint {
                step: name.parse().ok(),
                name,
                tree: tree.id().to_string(),
                commit: commit.as_ref().map(|c| c.id().to_string()),
                time: commit.map(|c| c.time().seconds()),
            });
        }
        let mut sessions: Vec<SessionCheckpoints> = by_session
            .into_iter()
            .map(|(session, mut checkpoints)| {
                checkpoints.sort_by(|a, b| match (a.step, b.step) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => a.name.cmp(&b.name),
                });
                SessionCheckpoints {
                    session,
                    checkpoints,
                }
            })
            .collect();
        sessions.sort_by(|a, b| {
            b.newest()
                .cmp(&a.newest())
                .then_with(|| a.session.cmp(&b.session))
        });
        Ok(sessions)
    }

    fn session(&self, session: &str) -> Result<SessionCheckpoints, RepoError> {
        self.list_sessions()?
            .into_iter()
            .find(|s| s.session == session)
            .ok_or_else(|| RepoError::NoSession(session.to_string()))
    }

    /// What step `step` changed (from the checkpoint before it; for the first step, from
    /// HEAD as the session found it), or with `None` what the whole session changed (first
    /// checkpoint to last).
    pub fn checkpoint_diff(
        &self,
        session: &str,
        step: Option<u32>,
    ) -> Result<CheckpointDiff, RepoError> {
        let s = self.session(session)?;
        let pick = |n: u32| {
            s.steps()
                .find(|c| c.step == Some(n))
                .ok_or_else(|| RepoError::NoCheckpoint {
                    session: session.to_string(),
                    name: n.to_string(),
                })
        };
        let (from_tree, from, to_cp) = match step {
            None => {
                let first = s
                    .steps()
                    .next()
                    .ok_or_else(|| RepoError::NoSession(session.into()))?;
                let last = s.steps().last().unwrap_or(first);
                (first.tree.clone(), step_label(first), last)
            }
            Some(n) => {
                let to = pick(n)?;
                match s.steps().filter(|c| c.step < Some(n)).last() {
                    Some(prev) => (prev.tree.clone(), step_label(prev), to),
                    None => self.base_of(to)?,
                }
            }
        };
        let to = step_label(to_cp);
        let mut diff = self.tree_diff(&from_tree, &to_cp.tree)?;
        diff.find_similar(None)?;
        Ok(CheckpointDiff {
            session: session.to_string(),
            from,
            to,
            diff: diffview::from_git(&diff)?,
            stat: stat_of(&diff)?,
        })
    }

    /// What the first checkpoint of a session started from: its parent commit (HEAD at
    /// the start), or the empty tree.
    fn base_of<'a>(
        &self,
        first: &'a StepCheckpoint,
    ) -> Result<(String, String, &'a StepCheckpoint), RepoError> {
        let parent = first
            .commit
            .as_deref()
            .and_then(|c| git2::Oid::from_str(c).ok())
            .and_then(|oid| self.repo.find_commit(oid).ok())
            .and_then(|c| c.parent(0).ok());
        Ok(match parent {
            Some(p) => (p.tree_id().to_string(), "HEAD at start".into(), first),
            None => {
                let empty = self.repo.treebuilder(None)?.write()?;
                (empty.to_string(), "empty tree".into(), first)
            }
        })
    }

    /// Puts the work tree back to checkpoint `step` of `session`.
    ///
    /// Refuses when the work tree holds changes that no checkpoint of the session holds
    /// (edits made after the session, or never captured): restoring would lose them. With
    /// `force` it goes ahead, but first keeps the current state as a checkpoint named
    /// `before-restore-<unix seconds>`, so even a forced restore can be undone. Untracked
    /// ignored files and secret-named files are never touched (they are in no checkpoint).
    pub fn restore_checkpoint(
        &self,
        session: &str,
        step: u32,
        force: bool,
    ) -> Result<RestoreReport, RepoError> {
        self.restore_named(session, &step.to_string(), force)
    }

    /// Like [`Repo::restore_checkpoint`], for any checkpoint of the session by its name: a
    /// step number, or a kept name such as the `before-restore-…` a forced restore saved,
    /// so a forced restore is undone with the same command.
    pub fn restore_named(
        &self,
        session: &str,
        name: &str,
        force: bool,
    ) -> Result<RestoreReport, RepoError> {
        let s = self.session(session)?;
        let target = s
            .checkpoints
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| RepoError::NoCheckpoint {
                session: session.to_string(),
                name: name.to_string(),
            })?
            .tree
            .clone();
        let now = self.snapshot()?;
        let saved = s.checkpoints.iter().any(|c| c.tree == now);
        let mut saved_as = None;
        if !saved {
            if !force {
                let tip = s.steps().last().map_or(now.as_str(), |c| c.tree.as_str());
                let files = self.changed_paths(tip, &now)?;
                return Err(RepoError::Uncommitted {
                    session: session.to_string(),
                    files,
                });
            }
            let stamp = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let name = format!("before-restore-{stamp}");
            self.keep(session, &name, &now)?;
            saved_as = Some(name);
        }
        let files_changed = self.tree_diff(&now, &target)?.deltas().len();
        self.restore(&target)?;
        Ok(RestoreReport {
            session: session.to_string(),
            name: name.to_string(),
            tree: target,
            saved_as,
            files_changed,
        })
    }

    fn changed_paths(&self, from: &str, to: &str) -> Result<Vec<String>, RepoError> {
        Ok(self
            .tree_diff(from, to)?
            .deltas()
            .filter_map(|d| {
                d.new_file()
                    .path()
                    .or(d.old_file().path())
                    .map(|p| p.display().to_string())
            })
            .collect())
    }

    /// Deletes the checkpoints of sessions beyond the policy: older than `max_age` at
    /// `now`, or beyond the newest `max_count`. Undated sessions (older-format tree refs)
    /// count as older than any dated one. The objects stay until `git gc` collects them.
    pub fn prune(&self, policy: PrunePolicy, now: SystemTime) -> Result<PruneReport, RepoError> {
        let sessions = self.list_sessions()?;
        let now_s = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let mut report = PruneReport::default();
        for (rank, s) in sessions.iter().enumerate() {
            let too_many = policy.max_count.is_some_and(|max| rank >= max);
            let too_old = policy.max_age.is_some_and(|age| {
                let limit = i64::try_from(age.as_secs()).unwrap_or(i64::MAX);
                s.newest().is_none_or(|t| now_s.saturating_sub(t) > limit)
            });
            if too_many || too_old {
                report.refs_deleted += self.remove_checkpoints(&s.session)?;
                report.removed.push(s.session.clone());
            } else {
                report.kept += 1;
            }
        }
        report.removed.reverse();
        Ok(report)
    }
}

fn step_label(c: &StepCheckpoint) -> String {
    match c.step {
        Some(n) => format!("step {n}"),
        None => c.name.clone(),
    }
}
