//! Protected files: what the check depends on stays as it was at the session's start.
//!
//! The session's label is the check's exit status, and the label is the ground truth the
//! judge is calibrated on. A junior that rewrites or deletes the test, instead of fixing
//! the code, would otherwise turn a failure into a success the judge then learns from. So
//! the files `agent.protected` names (by default the usual test files and the files the
//! check command names, see [`crate::config::protected`]) are captured — content and
//! permission bits — when the workspace is made, and:
//! - `write_file` and `apply_patch` refuse to change them (a tool result for the model);
//! - `run` gets them bind-mounted read-only where the sandbox has a mount namespace
//!   ([`crate::agent::sandbox`]; Landlock alone cannot make a file read-only inside the
//!   writable repository);
//! - after every step [`Protected::restore`] compares each with its start (content and
//!   mode, by SHA-256; a deleted or renamed-away file is missing, a replaced one differs)
//!   and puts back what differs, and the session logs it;
//! - the check runs only after the same restore, so it always sees the start's files.
//!
//! Only files that existed at the start are protected: a new file that matches a glob
//! (the junior adding a test) is the junior's own and may be written. Files the walk skips
//! (ignored by `.gitignore`, or past the caps below) are not protected, and the session
//! says how many were left out.

pub(crate) mod named;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::beneath::{Kind, RootDir};
use crate::config::protected::{GlobProblem, ProtectedGlob, patterns};

/// Most files protected; more would cost every step a long walk.
pub const MAX_FILES: usize = 4096;
/// Most bytes held for putting files back.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// One protected file as it was at the start.
#[derive(Debug)]
struct Pristine {
    bytes: Vec<u8>,
    mode: u32,
    fingerprint: [u8; 32],
}

/// The protected files of a workspace, captured once; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    files: Arc<BTreeMap<String, Pristine>>,
    /// Matching files left out by the caps.
    skipped: usize,
}

/// What [`Protected::restore`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths that differed from the start and are now as they were.
    pub restored: Vec<String>,
    /// Paths that differed and could not be put back, each as `path: why`.
    pub failed: Vec<String>,
}

impl Restored {
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.failed.is_empty()
    }
}

fn fingerprint(bytes: &[u8], mode: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((mode & 0o7777).to_le_bytes());
    h.update(bytes);
    h.finalize().into()
}

impl Protected {
    /// The files under `root` (canonical) that `configured` globs match — the defaults
    /// when `None`, plus then the files `check` names — as they are now.
    pub fn capture(
        root: &Path,
        configured: Option<&[String]>,
        check: Option<&str>,
    ) -> Result<Protected, GlobProblem> {
        let globs = patterns(configured)
            .iter()
            .map(|p| ProtectedGlob::new(p))
            .collect::<Result<Vec<_>, _>>()?;
        let named = match (configured, check) {
            (None, Some(command)) => named::named_by(command, root),
            _ => named::Named::default(),
        };
        if globs.is_empty() && named == named::Named::default() {
            return Ok(Protected::default());
        }
        let mut files = BTreeMap::new();
        let (mut bytes, mut skipped) = (0u64, 0usize);
        // The ignore files are read by handoff (no FIFO, no link), never by the walk.
        let rules = crate::ignorewalk::IgnoreRules::new(root);
        let walk = crate::ignorewalk::builder(root)
            .filter_entry(move |e| rules.keep(e))
            .build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(rel) = entry
                .path()
                .strip_prefix(root)
                .ok()
                .and_then(Path::to_str)
                .map(str::to_string)
            else {
                continue;
            };
            if !(named.covers(&rel) || globs.iter().any(|g| g.matches(&rel))) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if files.len() >= MAX_FILES || bytes + meta.len() > MAX_BYTES {
                skipped += 1;
                continue;
            }
            let Ok(content) = crate::treefiles::read_regular(entry.path(), MAX_BYTES - bytes)
            else {
                skipped += 1;
                continue;
            };
            bytes += content.len() as u64;
            let mode = meta.permissions().mode() & 0o7777;
            let fingerprint = fingerprint(&content, mode);
            files.insert(
                rel,
                Pristine {
                    bytes: content,
                    mode,
                    fingerprint,
                },
            );
        }
        Ok(Protected {
            files: Arc::new(files),
            skipped,
        })
    }

    /// Whether the repository path `rel` is protected (it existed at the start and matched).
    pub fn contains(&self, rel: &Path) -> bool {
        rel.to_str().is_some_and(|r| self.files.contains_key(r))
    }

    /// The protected paths, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Matching files that are not protected because of [`MAX_FILES`] or [`MAX_BYTES`].
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The protected paths that differ from the start now: changed, missing, or no longer
    /// a regular file.
    pub fn changed(&self, dir: &RootDir) -> Vec<String> {
        self.files
            .iter()
            .filter(|(rel, p)| current(dir, Path::new(rel.as_str())) != Some(p.fingerprint))
            .map(|(rel, _)| rel.clone())
            .collect()
    }

    /// Puts every protected file that differs back as it was at the start. `root` is the
    /// canonical directory `dir` is a handle on (for removing a directory left in a file's
    /// place).
    pub fn restore(&self, dir: &RootDir, root: &Path) -> Restored {
        let mut out = Restored::default();
        for rel in self.changed(dir) {
            let Some(p) = self.files.get(&rel) else {
                continue;
            };
            match put_back(dir, root, Path::new(&rel), p) {
                Ok(()) => out.restored.push(rel),
                Err(e) => out.failed.push(format!("{rel}: {e}")),
            }
        }
        out
    }

    /// Absolute paths of the protected files, for read-only bind mounts (at most `cap`).
    pub fn absolute(&self, root: &Path, cap: usize) -> Vec<PathBuf> {
        self.files.keys().take(cap).map(|r| root.join(r)).collect()
    }
}

/// The fingerprint of `rel` now, `None` when it is not a regular file.
fn current(dir: &RootDir, rel: &Path) -> Option<[u8; 32]> {
    if !matches!(dir.kind(rel), Ok(Some(Kind::File))) {
        return None;
    }
    let mut file = dir.open_read(rel).ok()?;
    let mode = file.metadata().ok()?.permissions().mode();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(fingerprint(&bytes, mode))
}

/// Clears whatever stands in the way of `rel` (a file or link where a parent directory
/// was, a directory or link where the file was), then writes the start's content and mode.
/// Nothing is followed: a parent swapped for a symlink is removed, never written through.
fn put_back(dir: &RootDir, root: &Path, rel: &Path, p: &Pristine) -> std::io::Result<()> {
    let mut prefix = PathBuf::new();
    let parents: Vec<_> = rel
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    let mut parents_there = true;
    for part in parents {
        prefix.push(part);
        match dir.kind(&prefix)? {
            Some(Kind::Dir) => {}
            None => parents_there = false,
            Some(Kind::File | Kind::Symlink | Kind::Special) => {
                dir.remove_file(&prefix)?;
                parents_there = false;
            }
        }
        if !parents_there {
            break;
        }
    }
    let leaf = if parents_there { dir.kind(rel)? } else { None };
    match leaf {
        // `kind` opened every parent without following a link, so this is inside the root.
        Some(Kind::Dir) => std::fs::remove_dir_all(root.join(rel))?,
        Some(Kind::Symlink | Kind::Special) => dir.remove_file(rel)?,
        Some(Kind::File) | None => {}
    }
    dir.write_atomic_mode(rel, &p.bytes, Some(p.mode))?;
    if current(dir, rel) != Some(p.fingerprint) {
        return Err(std::io::Error::other(
            "the file differs after writing it back",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
