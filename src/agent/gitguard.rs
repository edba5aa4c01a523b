//! Detects what a command changed in the repository's `.git`, where it could not be
//! prevented (no mount namespace) or to double-check where it was.
//!
//! Only what can make the user's next `git` run code or lose work is fingerprinted: the
//! config files, `HEAD`, hooks, `info/`, and refs (handoff's own checkpoint refs under
//! `refs/handoff/` excluded, as objects and the index are). Call [`GitState::capture`]
//! before a command and [`GitState::changes`] after it; the `run` tool does, reports a
//! change as a failed call and puts back what it can ([`GitState::undo`]): the fingerprint
//! keeps the bytes and mode of every file it hashed, so a hook or a config line a command
//! wrote where `.git` could not be mounted read-only is removed or rewritten as it was.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Files larger than this are fingerprinted by size and time only.
const MAX_HASHED: u64 = 4 * 1024 * 1024;
/// Largest `packed-refs` read line by line; a larger one (or a FIFO in its place) is
/// fingerprinted by its metadata, as other files past [`MAX_HASHED`] are.
const MAX_PACKED_REFS: u64 = 64 * 1024 * 1024;
/// Most entries fingerprinted under one directory (a repository with huge ref trees).
const MAX_ENTRIES: usize = 20_000;

/// A fingerprint of what matters in `.git`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitState {
    /// `None` when there is no `.git` at all.
    entries: Option<BTreeMap<String, [u8; 32]>>,
    /// The bytes and permission bits of each regular file hashed whole, to put it back.
    kept: BTreeMap<String, (Vec<u8>, u32)>,
}

impl GitState {
    /// The fingerprint of `root/.git` now.
    pub fn capture(root: &Path) -> GitState {
        let git = root.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&git) else {
            return GitState::default();
        };
        let mut entries = BTreeMap::new();
        if meta.is_dir() {
            for name in ["config", "config.worktree", "HEAD", "commondir", "gitdir"] {
                add_file(&mut entries, &git, name);
            }
            add_packed_refs(&mut entries, &git);
            for dir in ["hooks", "info", "refs"] {
                add_tree(&mut entries, &git, dir);
            }
        } else {
            entries.insert(".git".into(), hash_path(&git));
        }
        let kept = if meta.is_dir() {
            entries
                .keys()
                .filter(|k| !k.ends_with('/') && k.as_str() != "packed-refs")
                .filter_map(|k| keep(&git.join(k)).map(|v| (k.clone(), v)))
                .collect()
        } else {
            BTreeMap::new()
        };
        GitState {
            entries: Some(entries),
            kept,
        }
    }

    /// Puts `.git` back from `after` to `self`, beneath `root` and never through a
    /// symlink: files removed or changed are rewritten from the kept bytes, files and
    /// directories added are removed. Returns (undone, not undone), one `.git/...` path
    /// each; a `.git` that was removed or replaced whole cannot be undone.
    pub fn undo(&self, after: &GitState, root: &Path) -> (Vec<String>, Vec<String>) {
        let (Some(a), Some(b)) = (&self.entries, &after.entries) else {
            return (Vec::new(), self.changes(after));
        };
        let Ok(dir) = crate::beneath::RootDir::open(root) else {
            return (Vec::new(), self.changes(after));
        };
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        let mut settle = |rel: &str, result: std::io::Result<()>| match result {
            Ok(()) => done.push(format!(".git/{rel}")),
            Err(e) => failed.push(format!(".git/{rel} ({e})")),
        };
        for (rel, hash) in a {
            if b.get(rel) == Some(hash) || rel.ends_with('/') {
                continue;
            }
            let path = Path::new(".git").join(rel);
            match self.kept.get(rel) {
                Some((bytes, mode)) => settle(rel, dir.restore_file(&path, bytes, *mode)),
                None => settle(rel, Err(std::io::Error::other("its content was not kept"))),
            }
        }
        // Deepest first, so a directory is empty when its turn comes.
        for rel in b.keys().filter(|k| !a.contains_key(*k)).rev() {
            let path = Path::new(".git").join(rel.trim_end_matches('/'));
            let result = if rel.ends_with('/') {
                dir.remove_dir(&path)
            } else {
                dir.remove_file(&path)
            };
            settle(rel.trim_end_matches('/'), result);
        }
        (done, failed)
    }

    /// What differs from `self` in `after`, one line per path, empty when nothing does.
    pub fn changes(&self, after: &GitState) -> Vec<String> {
        match (&self.entries, &after.entries) {
            (Some(_), None) => vec![".git was removed".into()],
            (None, Some(_)) => vec![".git was created".into()],
            (None, None) => Vec::new(),
            (Some(a), Some(b)) => {
                let mut out = Vec::new();
                for (k, v) in a {
                    match b.get(k) {
                        None => out.push(format!(".git/{k} was removed")),
                        Some(w) if w != v => out.push(format!(".git/{k} was changed")),
                        _ => {}
                    }
                }
                for k in b.keys().filter(|k| !a.contains_key(*k)) {
                    out.push(format!(".git/{k} was added"));
                }
                out
            }
        }
    }
}

/// The bytes and permission bits of a regular file small enough to hash whole.
fn keep(path: &Path) -> Option<(Vec<u8>, u32)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_HASHED {
        return None;
    }
    Some((
        crate::treefiles::read_regular(path, MAX_HASHED).ok()?,
        meta.mode() & 0o7777,
    ))
}

fn add_file(entries: &mut BTreeMap<String, [u8; 32]>, git: &Path, rel: &str) {
    let path = git.join(rel);
    if std::fs::symlink_metadata(&path).is_ok() {
        entries.insert(rel.to_string(), hash_path(&path));
    }
}

/// `packed-refs` without the lines of handoff's own refs.
fn add_packed_refs(entries: &mut BTreeMap<String, [u8; 32]>, git: &Path) {
    let path = git.join("packed-refs");
    let text = match crate::treefiles::read_regular(&path, MAX_PACKED_REFS) {
        Ok(text) => text,
        Err(_) => {
            if std::fs::symlink_metadata(&path).is_ok() {
                entries.insert("packed-refs".into(), hash_path(&path));
            }
            return;
        }
    };
    let mut h = Sha256::new();
    for line in text.split(|&b| b == b'\n') {
        if !line.windows(13).any(|w| w == b"refs/handoff/") {
            h.update(line);
            h.update(b"\n");
        }
    }
    entries.insert("packed-refs".into(), h.finalize().into());
}

fn add_tree(entries: &mut BTreeMap<String, [u8; 32]>, git: &Path, dir: &str) {
    let mut stack = vec![dir.to_string()];
    let mut seen = 0usize;
    while let Some(rel) = stack.pop() {
        if rel == "refs/handoff" {
            continue;
        }
        let path = git.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        seen += 1;
        if seen > MAX_ENTRIES {
            return;
        }
        if meta.is_dir() {
            entries.insert(format!("{rel}/"), [0; 32]);
            if let Ok(read) = std::fs::read_dir(&path) {
                for e in read.flatten() {
                    if let Some(name) = e.file_name().to_str() {
                        stack.push(format!("{rel}/{name}"));
                    }
                }
            }
        } else {
            entries.insert(rel, hash_path(&path));
        }
    }
}

/// Content hash of a file (mode and symlink target included), never following links.
fn hash_path(path: &Path) -> [u8; 32] {
    use std::os::unix::fs::MetadataExt as _;
    let mut h = Sha256::new();
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            h.update(b"link:");
            if let Ok(target) = std::fs::read_link(path) {
                h.update(target.as_os_str().as_encoded_bytes());
            }
        }
        Ok(meta) => {
            h.update(meta.mode().to_le_bytes());
            if meta.is_file() && meta.len() <= MAX_HASHED {
                if let Ok(bytes) = crate::treefiles::read_regular(path, MAX_HASHED) {
                    h.update(&bytes);
                }
            } else {
                h.update(meta.len().to_le_bytes());
                h.update(meta.mtime().to_le_bytes());
                h.update(meta.mtime_nsec().to_le_bytes());
            }
        }
        Err(_) => h.update(b"missing"),
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_config_and_removal_are_detected_but_checkpoint_refs_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).expect("mkdir");
        std::fs::create_dir_all(git.join("refs/handoff/s")).expect("mkdir");
        std::fs::write(git.join("config"), "[core]\n").expect("write");
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        let before = GitState::capture(dir.path());
        std::fs::write(git.join("refs/handoff/s/0"), "abc\n").expect("write");
        assert_eq!(
            before.changes(&GitState::capture(dir.path())),
            Vec::<String>::new()
        );
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\n").expect("write");
        std::fs::write(git.join("config"), "[core]\nfsmonitor = x\n").expect("write");
        assert_eq!(
            before.changes(&GitState::capture(dir.path())),
            vec![".git/config was changed", ".git/hooks/pre-commit was added"]
        );
        let after = GitState::capture(dir.path());
        let (done, failed) = before.undo(&after, dir.path());
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(done, vec![".git/config", ".git/hooks/pre-commit"]);
        assert_eq!(
            std::fs::read_to_string(git.join("config")).expect("config"),
            "[core]\n"
        );
        assert!(!git.join("hooks/pre-commit").exists());
        assert!(before.changes(&GitState::capture(dir.path())).is_empty());
        std::fs::remove_dir_all(&git).expect("rm");
        assert_eq!(
            before.changes(&GitState::capture(dir.path())),
            vec![".git was removed"]
        );
    }
}
