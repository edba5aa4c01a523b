//! Git checkpoints of the work tree, so every step can be diffed and restored.
//!
//! A checkpoint is a tree object of the work tree (tracked files plus untracked files that
//! are not ignored), built in a *temporary* index seeded from a copy of the user's index and
//! referenced under `refs/handoff/<session>/<step>` so it survives `git gc`. No commit is
//! made, HEAD, branches and the user's index are never touched: the change the agent makes
//! stays an ordinary uncommitted change in the work tree. Tree ids are content hashes, so
//! two checkpoints differ exactly when their ids do.

use std::path::{Path, PathBuf};

use git2::{DiffFormat, DiffOptions, IndexAddOption, ObjectType, Oid, Repository};

/// Why a git operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
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
        let repo = Repository::discover(dir)?;
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
        })
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
        index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
        index.update_all(["*"], None)?;
        let tree = index.write_tree()?;
        index.write()?;
        Ok(tree.to_string())
    }

    /// Snapshots the work tree and keeps it under `refs/handoff/<session>/<step>`.
    pub fn checkpoint(&self, session: &str, step: u32) -> Result<String, RepoError> {
        let name = format!("refs/handoff/{session}/{step}");
        if !git2::Reference::is_valid_name(&name) {
            return Err(RepoError::BadName(name));
        }
        let tree = self.snapshot()?;
        let oid = Oid::from_str(&tree)?;
        self.repo
            .reference(&name, oid, true, "handoff checkpoint")?;
        Ok(tree)
    }

    /// The tree a checkpoint ref points to.
    pub fn checkpoint_tree(&self, session: &str, step: u32) -> Result<String, RepoError> {
        let r = self
            .repo
            .find_reference(&format!("refs/handoff/{session}/{step}"))?;
        let oid = r
            .target()
            .ok_or_else(|| RepoError::BadName(format!("refs/handoff/{session}/{step}")))?;
        Ok(oid.to_string())
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
        Ok(self
            .repo
            .diff_tree_to_tree(Some(&a), Some(&b), Some(&mut opts))?)
    }

    /// Unified patch text from one tree to another (what `git diff` would print).
    pub fn diff(&self, from: &str, to: &str) -> Result<String, RepoError> {
        let diff = self.tree_diff(from, to)?;
        let mut out = String::new();
        diff.print(DiffFormat::Patch, |_delta, _hunk, line| {
            let origin = line.origin();
            if matches!(origin, '+' | '-' | ' ') {
                out.push(origin);
            }
            out.push_str(&String::from_utf8_lossy(line.content()));
            true
        })?;
        Ok(out)
    }

    /// Files changed, insertions and deletions from one tree to another.
    pub fn diff_stat(&self, from: &str, to: &str) -> Result<DiffStat, RepoError> {
        let stats = self.tree_diff(from, to)?.stats()?;
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
        let refname = format!("refs/handoff/{session}/{name}");
        if !git2::Reference::is_valid_name(&refname) {
            return Err(RepoError::BadName(refname));
        }
        let oid = self.tree(tree)?.id();
        self.repo.reference(&refname, oid, true, "handoff keep")?;
        Ok(())
    }

    /// Deletes every checkpoint ref of `session` (the trees become garbage for `git gc`).
    /// Returns how many refs were removed.
    pub fn remove_checkpoints(&self, session: &str) -> Result<usize, RepoError> {
        let glob = format!("refs/handoff/{session}/*");
        let mut removed = 0;
        for reference in self.repo.references_glob(&glob)? {
            reference?.delete()?;
            removed += 1;
        }
        Ok(removed)
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RepoError + '_ {
        move |source| RepoError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn remove(&self, rel: &Path) -> Result<(), RepoError> {
        let abs = self.workdir.join(rel);
        match std::fs::symlink_metadata(&abs) {
            Ok(_) => std::fs::remove_file(&abs).map_err(Self::io(&abs))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Self::io(&abs)(e)),
        }
        // Drop directories the removal left empty, up to the work tree.
        let mut dir = abs.parent();
        while let Some(d) = dir {
            if d == self.workdir || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    fn write_blob(&self, rel: &Path, id: Oid, mode: git2::FileMode) -> Result<(), RepoError> {
        let abs = self.workdir.join(rel);
        let blob = self.repo.find_object(id, Some(ObjectType::Blob))?;
        let blob = blob
            .as_blob()
            .ok_or_else(|| RepoError::BadTree(id.to_string()))?;
        if let Some(parent) = abs.parent() {
            std::fs::create_dir_all(parent).map_err(Self::io(parent))?;
        }
        if std::fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink() || m.is_file())
        {
            std::fs::remove_file(&abs).map_err(Self::io(&abs))?;
        }
        match mode {
            #[cfg(unix)]
            git2::FileMode::Link => {
                let target = PathBuf::from(String::from_utf8_lossy(blob.content()).into_owned());
                std::os::unix::fs::symlink(target, &abs).map_err(Self::io(&abs))?;
            }
            _ => {
                std::fs::write(&abs, blob.content()).map_err(Self::io(&abs))?;
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    let meta = std::fs::metadata(&abs).map_err(Self::io(&abs))?;
                    let current = meta.permissions().mode();
                    let wanted = if mode == git2::FileMode::BlobExecutable {
                        current | ((current & 0o444) >> 2)
                    } else {
                        current & !0o111
                    };
                    if wanted != current {
                        std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(wanted))
                            .map_err(Self::io(&abs))?;
                    }
                }
            }
        }
        Ok(())
    }
}
