//! Git checkpoints of the work tree, so every step can be diffed and restored.
//!
//! A checkpoint is a *commit* of the work tree (tracked files plus untracked files that are
//! not ignored), built in a *temporary* index seeded from a copy of the user's index, and
//! referenced under `refs/handoff/<session>/<step>` so it survives `git gc`. The commits of
//! one session chain their parents step by step; the first one's parent is HEAD as the
//! session found it, so `git log refs/handoff/<session>/<n>` reads as the session's history.
//! Commits rather than bare trees, because git GUIs that browse every ref expect a ref to
//! name a commit and fail on tree refs; `refs/handoff/` is outside `refs/heads`,
//! `refs/tags` and `refs/remotes`, so no branch list, `git log` or plain `git push` shows
//! them. HEAD, the branches and the user's index are never touched: the agent's change
//! stays an ordinary uncommitted change in the work tree.
//!
//! What a checkpoint holds: what `git add -A` would stage, except that untracked files
//! whose names look like secrets ([`is_secret_name`]: `.env`, private keys, `.netrc`, …)
//! are left out even when no `.gitignore` names them, so a checkpoint never copies a
//! credential into the object database. Files the user tracks are always captured.
//!
//! [`Repo::checkpoint`] returns the checkpoint's *tree* id (a content hash), so two
//! checkpoints have equal ids exactly when the work tree did not change.

use std::path::{Path, PathBuf};

use git2::{DiffFormat, DiffOptions, IndexAddOption, ObjectType, Oid, Repository, Signature};

mod secrets;
mod sessions;

pub use secrets::is_secret_name;
pub use sessions::{
    CheckpointDiff, DEFAULT_MAX_AGE, DEFAULT_MAX_COUNT, PrunePolicy, PruneReport, RestoreReport,
    SessionCheckpoints, StepCheckpoint,
};

/// Untracked files this large are left out of snapshots unless the session sets its own
/// cap ([`Repo::set_max_file_bytes`]): `agent.max_write_mib`'s default, 1 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024 * 1024;

/// Where checkpoint refs live.
pub const REF_PREFIX: &str = "refs/handoff/";

/// Why a git operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// The directory is in no git repository: there is nothing to checkpoint into.
    #[error(
        "{0} is not inside a git repository; checkpoints need one (run `git init` there, or \
         go on without checkpoints)"
    )]
    NotARepository(PathBuf),
    #[error("no checkpoint `{name}` in session `{session}`")]
    NoCheckpoint { session: String, name: String },
    #[error("no checkpoints for session `{0}` in this repository")]
    NoSession(String),
    /// A restore would overwrite changes that no checkpoint of the session holds.
    #[error(
        "the work tree has changes no checkpoint of session `{session}` holds ({}); \
         commit or stash them, or restore with force (the current state is then kept as \
         a checkpoint first)",
        files.join(", ")
    )]
    Uncommitted { session: String, files: Vec<String> },
    #[error("{0} has no work tree (bare repository)")]
    Bare(PathBuf),
    #[error("`{0}` is not a valid checkpoint name")]
    BadName(String),
    #[error("`{0}` is not a tree id")]
    BadTree(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An ignore or attributes file libgit2 would open is a FIFO (it would wait for a
    /// writer forever), a device, a link or oversized: no snapshot is taken.
    #[error(
        "{} is not a regular file of at most {} bytes (a FIFO, device or link); git would \
         block or misread it, so no checkpoint is taken until it is removed",
        .0.display(),
        crate::treefiles::MAX_IGNORE_FILE_BYTES
    )]
    UnsafeIgnoreFile(PathBuf),
}

/// Size of a change, for the UI and the handoff context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffStat {
    pub files_changed: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// git's `--stat` text.
    pub text: String,
}

/// A repository with a work tree.
pub struct Repo {
    repo: Repository,
    workdir: PathBuf,
    /// Holds the temporary index between snapshots, so its stat cache spares re-hashing
    /// unchanged files at every step. Removed with the `Repo`.
    scratch: tempfile::TempDir,
    /// Untracked files of this many bytes or more are left out of snapshots (0: none are).
    max_file_bytes: u64,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("workdir", &self.workdir)
            .finish()
    }
}

impl Repo {
    /// Finds the repository containing `dir` (like `git` does from a subdirectory).
    pub fn open(dir: &Path) -> Result<Repo, RepoError> {
        let repo = Repository::discover(dir).map_err(|e| match e.code() {
            git2::ErrorCode::NotFound => RepoError::NotARepository(dir.to_path_buf()),
            _ => RepoError::Git(e),
        })?;
        let workdir = repo
            .workdir()
            .map(Path::to_path_buf)
            .ok_or_else(|| RepoError::Bare(repo.path().to_path_buf()))?;
        let scratch = tempfile::Builder::new()
            .prefix("handoff-index-")
            .tempdir()
            .map_err(|source| RepoError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        Ok(Repo {
            repo,
            workdir,
            scratch,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        })
    }

    /// Leaves untracked files of `bytes` or more out of every snapshot (0: keeps them
    /// all). The session sets it to `agent.max_write_mib`, the size at which a command's
    /// write is cut: a file that reached it is a runaway output (the one that grew `.git`
    /// by 1.3 GB, kept by `refs/handoff` after the model deleted it), not work to restore.
    pub fn set_max_file_bytes(&mut self, bytes: u64) {
        self.max_file_bytes = bytes;
    }

    /// The root of the work tree.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The commit HEAD points to; `None` in a repository without commits.
    pub fn head(&self) -> Option<String> {
        let head = self.repo.head().ok()?;
        head.peel_to_commit().ok().map(|c| c.id().to_string())
    }

    /// The tree of the work tree as it is now, written to the object database but not
    /// referenced (see [`Repo::checkpoint`] for the kept kind).
    pub fn snapshot(&self) -> Result<String, RepoError> {
        // libgit2 opens every `.gitignore` and `.gitattributes` it meets with a plain,
        // blocking open: look at them first (crate::ignorewalk).
        if let Some(path) = crate::ignorewalk::unsafe_ignore_files(&self.workdir, 1)
            .into_iter()
            .next()
        {
            return Err(RepoError::UnsafeIgnoreFile(path));
        }
        let index_path = self.scratch.path().join("index");
        let user_index = self.repo.path().join("index");
        // Seeded once from the user's index, so files that are tracked but match an ignore
        // pattern are still part of the snapshot (as `git add -A` would keep them).
        if !index_path.exists() && user_index.is_file() {
            std::fs::copy(&user_index, &index_path).map_err(|source| RepoError::Io {
                path: user_index.clone(),
                source,
            })?;
        }
        // A second handle, so the temporary index never becomes the index of `self.repo`.
        let repo = Repository::open(self.repo.path())?;
        let mut index = git2::Index::open(&index_path)?;
        repo.set_index(&mut index)?;
        let tracked = self.user_index()?;
        let is_tracked = |path: &Path| {
            tracked
                .as_ref()
                .is_some_and(|i| i.get_path(path, 0).is_some())
        };
        let too_big = |path: &Path| {
            self.max_file_bytes > 0
                && std::fs::symlink_metadata(self.workdir.join(path))
                    .is_ok_and(|m| m.is_file() && m.len() >= self.max_file_bytes)
        };
        let mut skip_secrets = |path: &Path, _spec: &[u8]| -> i32 {
            let secret = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_secret_name);
            i32::from((secret || too_big(path)) && !is_tracked(path))
        };
        index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip_secrets))?;
        index.update_all(["*"], None)?;
        // An untracked file captured before a `.gitignore` (or a secret name) covered it
        // stays in the temporary index; drop it, so what is captured follows the rules now.
        let stale: Vec<PathBuf> = index
            .iter()
            .filter_map(|e| String::from_utf8(e.path).ok().map(PathBuf::from))
            .filter(|p| !is_tracked(p))
            .filter(|p| {
                repo.is_path_ignored(p).unwrap_or(false)
                    || too_big(p)
                    || p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_secret_name)
            })
            .collect();
        for path in &stale {
            index.remove_path(path)?;
        }
        let tree = index.write_tree()?;
        index.write()?;
        Ok(tree.to_string())
    }

    /// The user's index as it is on disk now (`None` before the first `git add`).
    fn user_index(&self) -> Result<Option<git2::Index>, RepoError> {
        let path = self.repo.path().join("index");
        if !path.is_file() {
            return Ok(None);
        }
        Ok(Some(git2::Index::open(&path)?))
    }

    /// Snapshots the work tree and keeps it as a commit under
    /// `refs/handoff/<session>/<step>`, whose parent is the session's previous checkpoint
    /// (HEAD for the first). Returns the snapshot's tree id.
    pub fn checkpoint(&self, session: &str, step: u32) -> Result<String, RepoError> {
        let name = checkpoint_ref(session, &step.to_string())?;
        let tree = self.snapshot()?;
        let parent = self.previous_commit(session, Some(step))?;
        let message = format!("handoff checkpoint: session {session}, step {step}");
        self.commit_to(&name, &tree, parent, &message)?;
        Ok(tree)
    }

    /// The tree a checkpoint ref points to (through its commit; older tree refs too).
    pub fn checkpoint_tree(&self, session: &str, step: u32) -> Result<String, RepoError> {
        self.named_tree(session, &step.to_string())
    }

    /// The tree of checkpoint `name` (a step number or a kept name) of `session`.
    pub(crate) fn named_tree(&self, session: &str, name: &str) -> Result<String, RepoError> {
        let refname = checkpoint_ref(session, name)?;
        let r = self
            .repo
            .find_reference(&refname)
            .map_err(|e| match e.code() {
                git2::ErrorCode::NotFound => RepoError::NoCheckpoint {
                    session: session.to_string(),
                    name: name.to_string(),
                },
                _ => RepoError::Git(e),
            })?;
        Ok(r.peel_to_tree()?.id().to_string())
    }

    /// The commit of the highest-numbered checkpoint of `session` below `before` (any, if
    /// `None`); HEAD if the session has none yet; `None` in a repository without commits.
    /// Tree refs written by older versions are skipped as parents.
    fn previous_commit(
        &self,
        session: &str,
        before: Option<u32>,
    ) -> Result<Option<git2::Commit<'_>>, RepoError> {
        let best = self
            .session_refs(session)?
            .into_iter()
            .filter_map(|(name, r)| name.parse::<u32>().ok().map(|n| (n, r)))
            .filter(|(n, _)| before.is_none_or(|b| *n < b))
            .filter_map(|(n, r)| r.peel_to_commit().ok().map(|c| (n, c)))
            .max_by_key(|(n, _)| *n);
        Ok(match best {
            Some((_, c)) => Some(c),
            None => self.repo.head().ok().and_then(|h| h.peel_to_commit().ok()),
        })
    }

    /// The refs of one session as (last name component, reference).
    fn session_refs(&self, session: &str) -> Result<Vec<(String, git2::Reference<'_>)>, RepoError> {
        let prefix = format!("{REF_PREFIX}{session}/");
        let mut out = Vec::new();
        for r in self.repo.references()? {
            let r = r?;
            if let Some(name) = r.name().ok().and_then(|n| n.strip_prefix(&prefix))
                && !name.contains('/')
            {
                out.push((name.to_string(), r));
            }
        }
        Ok(out)
    }

    /// Writes a commit of `tree` with `parent` and points `refname` at it.
    fn commit_to(
        &self,
        refname: &str,
        tree: &str,
        parent: Option<git2::Commit<'_>>,
        message: &str,
    ) -> Result<Oid, RepoError> {
        let tree = self.tree(tree)?;
        // A fixed identity: checkpoints must work where no user.name is configured, and
        // they are the tool's records, not the user's commits.
        let sig = Signature::now("handoff", "handoff@localhost")?;
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let oid = self
            .repo
            .commit(None, &sig, &sig, message, &tree, &parents)?;
        self.repo.reference(refname, oid, true, message)?;
        Ok(oid)
    }

    /// Whether the work tree differs between two checkpoints (the no-diff step signal).
    pub fn changed(&self, from: &str, to: &str) -> bool {
        !from.eq_ignore_ascii_case(to)
    }

    fn tree(&self, id: &str) -> Result<git2::Tree<'_>, RepoError> {
        let oid = Oid::from_str(id).map_err(|_| RepoError::BadTree(id.to_string()))?;
        let object = self.repo.find_object(oid, None)?;
        object
            .peel_to_tree()
            .map_err(|_| RepoError::BadTree(id.to_string()))
    }

    fn tree_diff(&self, from: &str, to: &str) -> Result<git2::Diff<'_>, RepoError> {
        let a = self.tree(from)?;
        let b = self.tree(to)?;
        let mut opts = DiffOptions::new();
        opts.context_lines(3);
        // libgit2 reads attributes from the work tree, which the model writes: a
        // `.gitattributes` of `* -diff` would turn every edit into "binary" and hide it from
        // review. Every file is text to the diff; binary content is told by its bytes
        // instead (see `Repo::diff`).
        opts.force_text(true);
        Ok(self
            .repo
            .diff_tree_to_tree(Some(&a), Some(&b), Some(&mut opts))?)
    }

    /// Unified patch text from one tree to another (what `git diff` would print).
    pub fn diff(&self, from: &str, to: &str) -> Result<String, RepoError> {
        let diff = self.tree_diff(from, to)?;
        let mut out = String::new();
        let mut binary: Option<(Option<std::path::PathBuf>, bool)> = None;
        diff.print(DiffFormat::Patch, |delta, _hunk, line| {
            let path = delta.new_file().path().map(Path::to_path_buf);
            let is_binary = match &binary {
                Some((p, b)) if *p == path => *b,
                _ => {
                    let b = self.holds_nul(delta.old_file().id())
                        || self.holds_nul(delta.new_file().id());
                    if b {
                        let name = path.as_deref().unwrap_or(Path::new("?")).display();
                        out.push_str(&format!("Binary file {name} changed\n"));
                    }
                    binary = Some((path, b));
                    b
                }
            };
            if is_binary {
                return true;
            }
            let origin = line.origin();
            if matches!(origin, '+' | '-' | ' ') {
                out.push(origin);
            }
            out.push_str(&String::from_utf8_lossy(line.content()));
            true
        })?;
        Ok(out)
    }

    /// Whether a blob is binary by its bytes (a NUL in its first 8,000, git's own rule).
    fn holds_nul(&self, id: Oid) -> bool {
        !id.is_zero()
            && self
                .repo
                .find_blob(id)
                .is_ok_and(|b| b.content().iter().take(8000).any(|&c| c == 0))
    }

    /// Files changed, insertions and deletions from one tree to another.
    pub fn diff_stat(&self, from: &str, to: &str) -> Result<DiffStat, RepoError> {
        stat_of(&self.tree_diff(from, to)?)
    }

    /// Puts the work tree back to checkpoint `tree`: files that differ are rewritten from
    /// the tree, files the tree lacks are removed. Ignored files, the index, HEAD and the
    /// branches are left alone.
    ///
    /// Returns the tree of the work tree as it was just before, already written to the
    /// object database, so a restore can itself be undone (keep it with [`Repo::keep`]).
    pub fn restore(&self, tree: &str) -> Result<String, RepoError> {
        let now = self.snapshot()?;
        let diff = self.tree_diff(&now, tree)?;
        // Deletions first, so a file can replace a directory of the same name (and back).
        for delta in diff.deltas() {
            if delta.status() == git2::Delta::Deleted
                && let Some(path) = delta.old_file().path()
            {
                self.remove(path)?;
            }
        }
        for delta in diff.deltas() {
            let new = delta.new_file();
            if delta.status() != git2::Delta::Deleted
                && let Some(path) = new.path()
                && !new.id().is_zero()
            {
                self.write_blob(path, new.id(), new.mode())?;
            }
        }
        Ok(now)
    }

    /// References an existing tree under `refs/handoff/<session>/<name>` (e.g. the tree a
    /// restore returned), so `git gc` keeps it.
    pub fn keep(&self, session: &str, name: &str, tree: &str) -> Result<(), RepoError> {
        let refname = checkpoint_ref(session, name)?;
        let parent = self.previous_commit(session, None)?;
        let message = format!("handoff checkpoint: session {session}, kept as {name}");
        self.commit_to(&refname, tree, parent, &message)?;
        Ok(())
    }

    /// Deletes every checkpoint ref of `session` (the trees become garbage for `git gc`).
    /// Returns how many refs were removed.
    pub fn remove_checkpoints(&self, session: &str) -> Result<usize, RepoError> {
        let mut removed = 0;
        for (_, mut reference) in self.session_refs(session)? {
            reference.delete()?;
            removed += 1;
        }
        Ok(removed)
    }

    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RepoError + '_ {
        move |source| RepoError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The work tree as a directory handle: every restore write goes through it, beneath
    /// the root and never through a symlink ([`crate::beneath`]).
    fn root_dir(&self) -> Result<crate::beneath::RootDir, RepoError> {
        crate::beneath::RootDir::open(&self.workdir).map_err(Self::io(&self.workdir))
    }

    fn remove(&self, rel: &Path) -> Result<(), RepoError> {
        let root = self.root_dir()?;
        let abs = self.workdir.join(rel);
        match root.remove_file(rel) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // A symlink on the way: what the checkpoint would remove is not in the tree.
            Err(e) if crate::beneath::is_escape(&e) => return Ok(()),
            Err(e) => return Err(Self::io(&abs)(e)),
        }
        // Drop directories the removal left empty, up to the work tree.
        let mut dir = rel.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if root.remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    /// Writes one blob of the checkpoint at `rel`. A symlink the model planted where the
    /// checkpoint has a directory is removed, not followed, and the file lands inside the
    /// work tree (see [`crate::beneath::RootDir::restore_file`]).
    fn write_blob(&self, rel: &Path, id: Oid, mode: git2::FileMode) -> Result<(), RepoError> {
        let abs = self.workdir.join(rel);
        let blob = self.repo.find_object(id, Some(ObjectType::Blob))?;
        let blob = blob
            .as_blob()
            .ok_or_else(|| RepoError::BadTree(id.to_string()))?;
        let root = self.root_dir()?;
        if mode == git2::FileMode::Link {
            use std::os::unix::ffi::OsStrExt as _;
            let target = std::ffi::OsStr::from_bytes(blob.content());
            return root.restore_link(rel, target).map_err(Self::io(&abs));
        }
        let current = root.file_mode(rel).unwrap_or(0o644);
        let wanted = if mode == git2::FileMode::BlobExecutable {
            current | ((current & 0o444) >> 2)
        } else {
            current & !0o111
        };
        root.restore_file(rel, blob.content(), wanted)
            .map_err(Self::io(&abs))
    }
}

/// `refs/handoff/<session>/<name>`, refused unless git accepts it as a ref name.
fn checkpoint_ref(session: &str, name: &str) -> Result<String, RepoError> {
    let refname = format!("{REF_PREFIX}{session}/{name}");
    if session.is_empty() || session.contains('/') || !git2::Reference::is_valid_name(&refname) {
        return Err(RepoError::BadName(refname));
    }
    Ok(refname)
}

/// git's stat of a diff, as [`DiffStat`].
fn stat_of(diff: &git2::Diff<'_>) -> Result<DiffStat, RepoError> {
    let stats = diff.stats()?;
    let text = stats
        .to_buf(git2::DiffStatsFormat::FULL, 80)
        .ok()
        .and_then(|b| b.as_str().ok().map(str::to_string))
        .unwrap_or_default();
    Ok(DiffStat {
        files_changed: stats.files_changed(),
        insertions: stats.insertions(),
        deletions: stats.deletions(),
        text,
    })
}
