//! The `.gitignore` rules of a work tree, read by handoff itself as a walk meets each
//! directory, so no library opens a file of the model's tree on its own.
//!
//! The `ignore` crate's walk reads `.gitignore` and `.ignore` with a plain, blocking open
//! that follows links, and it reads a directory's files even when the walk's filter skips
//! that directory: a FIFO `.gitignore` hung handoff, one linked to `/dev/zero` was read
//! until memory ran out (issue 50, item 9). Here the walk reads no ignore file at all
//! ([`builder`] turns that off); [`IgnoreRules::keep`], called from the walk's filter,
//! reads each directory's `.ignore` and `.gitignore` (and the root's
//! `.git/info/exclude`) through [`crate::treefiles::read_regular`]: regular files only, no
//! link, no blocking, [`crate::treefiles::MAX_IGNORE_FILE_BYTES`] at most. A file that
//! fails those rules counts as absent (git itself does not follow a linked `.gitignore`)
//! and is kept in [`IgnoreRules::refused`], for a caller that must not go on with it in
//! the tree (a checkpoint: libgit2 opens it plainly).
//!
//! Precedence is git's and the crate's: a deeper directory's rules before a shallower
//! one's, `.ignore` before `.gitignore` in one directory, the last matching line of a
//! file wins, and a `!pattern` whitelists.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::treefiles::{MAX_IGNORE_FILE_BYTES, read_regular};

/// Rules per directory, in the order they are asked.
type Rules = Arc<Vec<Gitignore>>;

/// The ignore rules of the tree under `root`, read as directories are met.
#[derive(Debug)]
pub struct IgnoreRules {
    root: PathBuf,
    dirs: Mutex<HashMap<PathBuf, Rules>>,
    refused: Mutex<Vec<PathBuf>>,
}

impl IgnoreRules {
    pub fn new(root: &Path) -> Arc<IgnoreRules> {
        Arc::new(IgnoreRules {
            root: root.to_path_buf(),
            dirs: Mutex::new(HashMap::new()),
            refused: Mutex::new(Vec::new()),
        })
    }

    /// Whether a walk keeps `entry`: not `.git`, not ignored by the rules of the
    /// directories above it.
    pub fn keep(&self, entry: &ignore::DirEntry) -> bool {
        if entry.depth() == 0 {
            return true;
        }
        if entry.file_name() == ".git" {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !self.ignored(entry.path(), is_dir)
    }

    /// Whether `path` (under the root) is ignored.
    pub fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for dir in path.ancestors().skip(1) {
            if !dir.starts_with(&self.root) {
                break;
            }
            for rules in self.rules_of(dir).iter() {
                let m = rules.matched(path, is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
        }
        false
    }

    /// The ignore files that were not read because they are not plain (a FIFO, a device,
    /// a link, or too large), in the order met.
    pub fn refused(&self) -> Vec<PathBuf> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn rules_of(&self, dir: &Path) -> Rules {
        let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rules) = dirs.get(dir) {
            return rules.clone();
        }
        let mut names = vec![dir.join(".ignore"), dir.join(".gitignore")];
        if dir == self.root {
            names.push(dir.join(".git/info/exclude"));
        }
        let rules: Vec<Gitignore> = names
            .iter()
            .filter_map(|file| self.read_rules(dir, file))
            .collect();
        let rules = Arc::new(rules);
        dirs.insert(dir.to_path_buf(), rules.clone());
        rules
    }

    /// The rules of one file; `None` when it is absent, refused or holds none.
    fn read_rules(&self, dir: &Path, file: &Path) -> Option<Gitignore> {
        let bytes = match read_regular(file, MAX_IGNORE_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => {
                self.refused
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(file.to_path_buf());
                return None;
            }
        };
        let mut builder = GitignoreBuilder::new(dir);
        for line in String::from_utf8_lossy(&bytes).lines() {
            // A line that is no valid glob is skipped, as git skips it.
            let _ = builder.add_line(Some(file.to_path_buf()), line);
        }
        builder.build().ok().filter(|g| !g.is_empty())
    }
}

/// A walk of `root` that reads no ignore file itself: hidden files included, no link
/// followed, nothing above the root or global read. Callers set its filter, calling
/// [`IgnoreRules::keep`].
pub fn builder(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(false)
        .follow_links(false);
    builder
}

/// Every ignore or attributes file a checkpoint's libgit2 would open that is not plain,
/// in the directories git would enter (ignored ones and `.git` are not), at most `limit`.
pub fn unsafe_ignore_files(root: &Path, limit: usize) -> Vec<PathBuf> {
    let rules = IgnoreRules::new(root);
    let keep = rules.clone();
    let walk = builder(root).filter_entry(move |e| keep.keep(e)).build();
    let mut attributes = Vec::new();
    for entry in walk.flatten() {
        if rules.refused().len() + attributes.len() >= limit {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            let file = entry.path().join(".gitattributes");
            if crate::treefiles::not_plain(&file) {
                attributes.push(file);
            }
        }
    }
    let mut found = rules.refused();
    found.extend(attributes);
    found.truncate(limit);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("cstring");
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    fn walked(root: &Path) -> Vec<String> {
        let rules = IgnoreRules::new(root);
        let mut out: Vec<String> = builder(root)
            .filter_entry(move |e| rules.keep(e))
            .build()
            .flatten()
            .filter(|e| e.depth() > 0)
            .map(|e| {
                e.path()
                    .strip_prefix(root)
                    .expect("inside")
                    .display()
                    .to_string()
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_rules_follow_gits_precedence() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for d in ["build", "src/gen", ".git/info"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        for (path, text) in [
            (".gitignore", "build/\n*.log\n"),
            (".git/info/exclude", "secret.txt\n"),
            ("src/.gitignore", "gen/\n!keep.log\n"),
            ("src/.ignore", "local.txt\n"),
            ("a.log", ""),
            ("secret.txt", ""),
            ("build/out", ""),
            ("src/keep.log", ""),
            ("src/drop.log", ""),
            ("src/local.txt", ""),
            ("src/gen/x", ""),
            ("src/main.rs", ""),
        ] {
            std::fs::write(root.join(path), text).expect("write");
        }
        assert_eq!(
            walked(root),
            [
                ".gitignore",
                "src",
                "src/.gitignore",
                "src/.ignore",
                "src/keep.log",
                "src/main.rs"
            ]
        );
    }

    #[test]
    fn fifos_and_links_are_never_opened_and_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for d in ["a", "b/c", "ignored/d", "ok"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join(".gitignore"), "ignored/\n").expect("write");
        std::fs::write(root.join("ok/.gitignore"), "*.o\n").expect("write");
        std::fs::write(root.join("a/x"), "").expect("write");
        mkfifo(&root.join("a/.gitignore"));
        std::os::unix::fs::symlink("/dev/zero", root.join("b/c/.gitignore")).expect("link");
        std::os::unix::fs::symlink("/dev/zero", root.join("ok/.gitattributes")).expect("link");
        mkfifo(&root.join("ignored/d/.gitignore"));
        let mut found: Vec<String> = unsafe_ignore_files(root, 10)
            .iter()
            .map(|p| p.strip_prefix(root).expect("inside").display().to_string())
            .collect();
        found.sort();
        assert_eq!(
            found,
            ["a/.gitignore", "b/c/.gitignore", "ok/.gitattributes"]
        );
        assert!(
            walked(root).contains(&"a/x".to_string()),
            "a FIFO is as absent"
        );
    }
}
