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
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files larger than this are fingerprinted by size and time only.
const MAX_HASHED: u64 = 4 * 1024 * 1024;
/// Largest `packed-refs` read line by line; a larger one (or a FIFO in its place) is
/// fingerprinted by its metadata, as other files past [`MAX_HASHED`] are.
const MAX_PACKED_REFS: u64 = 64 * 1024 * 1024;
/// Most entries fingerprinted under one directory (a repository with huge ref trees).
const MAX_ENTRIES: usize = 20_000;

/// The key of `.git` itself in a fingerprint, when it is a link or a gitfile.
const POINTER: &str = ".git";
/// Largest gitfile (`gitdir: …`) read.
const MAX_GITFILE: u64 = 4096;

/// A fingerprint of what matters in `.git`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitState {
    /// `None` when there is no `.git` at all.
    entries: Option<BTreeMap<String, [u8; 32]>>,
    /// The bytes and permission bits of each regular file hashed whole, to put it back.
    kept: BTreeMap<String, (Vec<u8>, u32)>,
    /// The git directory fingerprinted, when `.git` is a symlink or a gitfile: undo writes
    /// there, resolved once at capture.
    resolved: Option<PathBuf>,
    /// `.git` itself when it is not a directory, to put back.
    pointer: Option<Pointer>,
}

/// What a `.git` that is not a directory was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pointer {
    Link(std::ffi::OsString),
    File(Vec<u8>, u32),
}

/// The real git directory of the work tree at `root`: `.git` itself, or where a `.git`
/// symlink or gitfile (`gitdir: …`) leads. What the sandbox binds read-only and the
/// watch fingerprints, so a `.git` that points into the work tree is no way around
/// either.
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let git = root.join(".git");
    let meta = std::fs::symlink_metadata(&git).ok()?;
    let target = if meta.is_dir() {
        return Some(git);
    } else if meta.file_type().is_symlink() {
        git
    } else {
        let bytes = crate::treefiles::read_regular(&git, MAX_GITFILE).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let path = text
            .lines()
            .next()?
            .strip_prefix("gitdir:")?
            .trim()
            .to_string();
        root.join(path)
    };
    let dir = std::fs::canonicalize(target).ok()?;
    dir.is_dir().then_some(dir)
}

impl GitState {
    /// The fingerprint of `root/.git` now: of the directory a `.git` symlink or gitfile
    /// leads to as well, and of the link or gitfile itself.
    pub fn capture(root: &Path) -> GitState {
        let git = root.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&git) else {
            return GitState::default();
        };
        let mut entries = BTreeMap::new();
        let (dir, resolved, pointer) = if meta.is_dir() {
            (Some(git.clone()), None, None)
        } else {
            entries.insert(POINTER.into(), hash_path(&git));
            let pointer = if meta.file_type().is_symlink() {
                std::fs::read_link(&git)
                    .ok()
                    .map(|t| Pointer::Link(t.into_os_string()))
            } else {
                keep(&git).map(|(bytes, mode)| Pointer::File(bytes, mode))
            };
            let resolved = git_dir(root);
            (resolved.clone(), resolved, pointer)
        };
        if let Some(dir) = &dir {
            for name in ["config", "config.worktree", "HEAD", "commondir", "gitdir"] {
                add_file(&mut entries, dir, name);
            }
            add_packed_refs(&mut entries, dir);
            for sub in ["hooks", "info", "refs"] {
                add_tree(&mut entries, dir, sub);
            }
        }
        let kept = match &dir {
            Some(dir) => entries
                .keys()
                .filter(|k| !k.ends_with('/') && *k != "packed-refs" && *k != POINTER)
                .filter_map(|k| keep(&dir.join(k)).map(|v| (k.clone(), v)))
                .collect(),
            None => BTreeMap::new(),
        };
        GitState {
            entries: Some(entries),
            kept,
            resolved,
            pointer,
        }
    }

    /// Puts `.git` back from `after` to `self`, beneath `root` and never through a
    /// symlink: files removed or changed are rewritten from the kept bytes, files and
    /// directories added are removed. Returns (undone, not undone), one `.git/...` path
    /// each; a `.git` that was removed or replaced whole cannot be undone.
    pub fn undo(&self, after: &GitState, root: &Path) -> (Vec<String>, Vec<String>) {
        // A `.git` link or gitfile that now leads elsewhere is put back first; what lies
        // where it leads is then compared afresh, not with the planted directory.
        let pointer_moved = match (&self.entries, &after.entries) {
            (Some(a), Some(b)) => a.get(POINTER).is_some() && a.get(POINTER) != b.get(POINTER),
            _ => false,
        };
        if !pointer_moved {
            return self.undo_files(after, root);
        }
        let put = crate::beneath::RootDir::open(root).and_then(|top| match &self.pointer {
            Some(Pointer::Link(target)) => top.restore_link(Path::new(".git"), target),
            Some(Pointer::File(bytes, mode)) => top.restore_file(Path::new(".git"), bytes, *mode),
            None => Err(std::io::Error::other("it was not kept")),
        });
        match put {
            Ok(()) => {
                let (mut done, failed) = self.undo_files(&GitState::capture(root), root);
                done.insert(0, ".git".to_string());
                (done, failed)
            }
            Err(e) => (Vec::new(), vec![format!(".git ({e})")]),
        }
    }

    /// [`GitState::undo`] of the files, `.git` itself left as it is.
    fn undo_files(&self, after: &GitState, root: &Path) -> (Vec<String>, Vec<String>) {
        let (Some(a), Some(b)) = (&self.entries, &after.entries) else {
            return (Vec::new(), self.changes(after));
        };
        // The fingerprinted files live under `.git`, or in the directory it leads to.
        let (base, prefix) = match &self.resolved {
            Some(resolved) => (resolved.clone(), PathBuf::new()),
            None => (root.to_path_buf(), PathBuf::from(".git")),
        };
        let Ok(dir) = crate::beneath::RootDir::open(&base) else {
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
            if rel == POINTER {
                continue;
            }
            let path = prefix.join(rel);
            match self.kept.get(rel) {
                Some((bytes, mode)) => settle(rel, dir.restore_file(&path, bytes, *mode)),
                None => settle(rel, Err(std::io::Error::other("its content was not kept"))),
            }
        }
        // Deepest first, so a directory is empty when its turn comes.
        for rel in b
            .keys()
            .filter(|k| !a.contains_key(*k) && *k != POINTER)
            .rev()
        {
            let path = prefix.join(rel.trim_end_matches('/'));
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
                let name = |k: &str| {
                    if k == POINTER {
                        ".git".to_string()
                    } else {
                        format!(".git/{k}")
                    }
                };
                for (k, v) in a {
                    match b.get(k) {
                        None => out.push(format!("{} was removed", name(k))),
                        Some(w) if w != v => out.push(format!("{} was changed", name(k))),
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

    /// A `.git` that is a symlink into the work tree: the directory it leads to is
    /// fingerprinted and put back, and a link that was retargeted is put back first.
    #[test]
    fn a_git_link_into_the_tree_is_watched_through_and_put_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let real = root.join("realgit");
        std::fs::create_dir_all(real.join("hooks")).expect("mkdir");
        std::fs::write(real.join("config"), "[core]\n").expect("write");
        std::os::unix::fs::symlink("realgit", root.join(".git")).expect("link");
        assert_eq!(
            git_dir(root),
            Some(std::fs::canonicalize(&real).expect("canonical"))
        );
        let before = GitState::capture(root);
        std::fs::write(real.join("config"), "[core]\nfsmonitor = x\n").expect("write");
        std::fs::write(real.join("hooks/pre-commit"), "#!/bin/sh\n").expect("write");
        let after = GitState::capture(root);
        assert_eq!(
            before.changes(&after),
            vec![".git/config was changed", ".git/hooks/pre-commit was added"]
        );
        let (done, failed) = before.undo(&after, root);
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(done, vec![".git/config", ".git/hooks/pre-commit"]);
        assert_eq!(
            std::fs::read_to_string(real.join("config")).expect("config"),
            "[core]\n"
        );
        // Retargeted at a planted directory: the link goes back, nothing else is touched.
        let evil = root.join("evil");
        std::fs::create_dir_all(evil.join("hooks")).expect("mkdir");
        std::fs::write(evil.join("config"), "[core]\nfsmonitor = y\n").expect("write");
        std::fs::remove_file(root.join(".git")).expect("rm");
        std::os::unix::fs::symlink("evil", root.join(".git")).expect("link");
        let moved = GitState::capture(root);
        assert!(
            before
                .changes(&moved)
                .contains(&".git was changed".to_string())
        );
        let (done, failed) = before.undo(&moved, root);
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(done, vec![".git"]);
        assert_eq!(
            std::fs::read_link(root.join(".git")).expect("link"),
            PathBuf::from("realgit")
        );
        assert!(before.changes(&GitState::capture(root)).is_empty());
    }

    #[test]
    fn a_gitfile_leads_to_its_git_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("modules/sub")).expect("mkdir");
        std::fs::write(root.join(".git"), "gitdir: modules/sub\n").expect("write");
        assert_eq!(
            git_dir(root),
            Some(std::fs::canonicalize(root.join("modules/sub")).expect("canonical"))
        );
        let before = GitState::capture(root);
        std::fs::write(root.join(".git"), "gitdir: elsewhere\n").expect("write");
        let after = GitState::capture(root);
        assert_eq!(before.changes(&after), vec![".git was changed"]);
        let (done, failed) = before.undo(&after, root);
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(done, vec![".git"]);
        assert_eq!(
            std::fs::read_to_string(root.join(".git")).expect("gitfile"),
            "gitdir: modules/sub\n"
        );
    }

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
