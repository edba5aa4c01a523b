//! Git metadata below the repository root, and index flags, that a command planted.
//!
//! The read-only `.git` mount covers the top-level `.git` only. A command can still make a
//! nested `src/.git/{HEAD,config}` or a submodule-style gitfile pointing at a copied
//! module directory, each with `core.fsmonitor` or a hook: the user's next `git status` in
//! that directory (or at the root, which visits submodules) runs it. No mount can forbid a
//! name anywhere in a writable tree, so the `run` tool fingerprints every `.git` entry
//! below the root before the command and after it: one that appeared is removed before
//! the user's git can see it; one that existed and changed is reported (it may be a real
//! submodule's, which handoff will not delete). Index flags that hide an edit from
//! `git status` and `git diff` (`skip-worktree`, `assume-unchanged`) newly set by the
//! command are cleared. Each is reported in the call's result, which fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::agent::gitguard::GitState;

/// `assume-unchanged` ("valid") in an index entry's flags.
const ASSUME_VALID: u16 = 0x8000;
/// `skip-worktree` in an index entry's extended flags.
const SKIP_WORKTREE: u16 = 1 << 14;

/// The `.git` entries below the root (not the root's own), by path relative to the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nested {
    entries: BTreeMap<PathBuf, GitState>,
    /// The scan stopped at its cap (`agent.max_tree_entries`): what lies beyond is unverified.
    pub truncated: bool,
}

impl Nested {
    /// Scans the work tree under `root`, never following a symlink, reading at most
    /// `max_entries` directory entries.
    pub fn capture(root: &Path, max_entries: usize) -> Nested {
        let mut out = Nested::default();
        let mut stack = vec![PathBuf::new()];
        let mut seen = 0usize;
        while let Some(rel) = stack.pop() {
            let Ok(read) = std::fs::read_dir(root.join(&rel)) else {
                continue;
            };
            for entry in read.flatten() {
                seen += 1;
                if seen > max_entries {
                    out.truncated = true;
                    return out;
                }
                let child = rel.join(entry.file_name());
                let is_git = crate::agent::confine::touches_git_dir(Path::new(&entry.file_name()));
                if is_git {
                    if !rel.as_os_str().is_empty() {
                        out.entries
                            .insert(child, GitState::capture(&root.join(&rel)));
                    }
                    continue;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(child);
                }
            }
        }
        out
    }

    /// What the command did, as (planted entries to remove, changed entries to report).
    pub fn changes(&self, after: &Nested) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut planted = Vec::new();
        let mut changed = Vec::new();
        for (path, state) in &after.entries {
            match self.entries.get(path) {
                None => planted.push(path.clone()),
                Some(before) if before != state => changed.push(path.clone()),
                Some(_) => {}
            }
        }
        (planted, changed)
    }
}

/// Removes each planted entry (a directory with everything in it, or a file); one line
/// per entry saying what happened.
pub fn remove(root: &Path, planted: &[PathBuf]) -> Vec<String> {
    planted
        .iter()
        .map(|rel| {
            let abs = root.join(rel);
            let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir());
            // remove_dir_all removes symlinks inside without following them.
            let removed = if is_dir {
                std::fs::remove_dir_all(&abs)
            } else {
                std::fs::remove_file(&abs)
            };
            match removed {
                Ok(()) => format!("{} was planted and has been removed", rel.display()),
                Err(e) => format!(
                    "{} was planted and could NOT be removed ({e}); delete it before running git there",
                    rel.display()
                ),
            }
        })
        .collect()
}

/// The index paths whose `skip-worktree` or `assume-unchanged` flag is set.
pub fn hidden_entries(root: &Path) -> BTreeSet<Vec<u8>> {
    let Ok(repo) = git2::Repository::open(root) else {
        return BTreeSet::new();
    };
    let Ok(index) = repo.index() else {
        return BTreeSet::new();
    };
    index
        .iter()
        .filter(|e| e.flags & ASSUME_VALID != 0 || e.flags_extended & SKIP_WORKTREE != 0)
        .map(|e| e.path)
        .collect()
}

/// Clears the two flags on the index entries in `paths`; one line per path.
pub fn unhide(root: &Path, paths: &BTreeSet<Vec<u8>>) -> Vec<String> {
    let describe = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    let fail = |why: String| -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                format!(
                    "{} was hidden from git status (skip-worktree/assume-unchanged) and could NOT be shown again ({why})",
                    describe(p)
                )
            })
            .collect()
    };
    let repo = match git2::Repository::open(root) {
        Ok(r) => r,
        Err(e) => return fail(e.message().to_string()),
    };
    let mut index = match repo.index() {
        Ok(i) => i,
        Err(e) => return fail(e.message().to_string()),
    };
    let entries: Vec<git2::IndexEntry> = index
        .iter()
        .filter(|e| paths.contains(&e.path))
        .map(|mut e| {
            e.flags &= !ASSUME_VALID;
            e.flags_extended &= !SKIP_WORKTREE;
            e
        })
        .collect();
    for entry in &entries {
        if let Err(e) = index.add(entry) {
            return fail(e.message().to_string());
        }
    }
    if let Err(e) = index.write() {
        return fail(e.message().to_string());
    }
    paths
        .iter()
        .map(|p| {
            format!(
                "{} was hidden from git status (skip-worktree/assume-unchanged); the flag is cleared",
                describe(p)
            )
        })
        .collect()
}

/// What a `run` call watches: taken before the command, compared and undone after it.
pub struct Watch {
    nested: Nested,
    hidden: BTreeSet<Vec<u8>>,
    max_entries: usize,
}

impl Watch {
    /// Puts back a `.git` entry that was there before the command and changed (a real
    /// submodule's gitfile rewritten to lead to a planted git directory, say): the user's
    /// next `git status` there must not run what it now points at. One line saying so.
    fn put_back(&self, after: &Nested, root: &Path, rel: &Path) -> String {
        let parent = root.join(rel.parent().unwrap_or(Path::new("")));
        let undone = match (self.nested.entries.get(rel), after.entries.get(rel)) {
            (Some(before), Some(now)) => before.undo(now, &parent),
            _ => (Vec::new(), vec!["it was not kept".into()]),
        };
        match undone {
            (done, failed) if failed.is_empty() && !done.is_empty() => format!(
                "{} (git metadata that was already there) was changed and has been put back",
                rel.display()
            ),
            (_, failed) => format!(
                "{} (git metadata that was already there) was changed and could NOT be put back ({}); check it before running git there",
                rel.display(),
                failed.join(", ")
            ),
        }
    }

    pub fn start(root: &Path, max_entries: usize) -> Watch {
        Watch {
            nested: Nested::capture(root, max_entries),
            hidden: hidden_entries(root),
            max_entries,
        }
    }

    /// Removes planted `.git` entries, clears new index flags, and says what it did (empty
    /// when the command touched no git metadata in the work tree). A tree too large to
    /// scan whole is a finding too: what the scan did not reach is unverified, and a
    /// command could plant a `.git` behind enough empty files to outrun any fixed cap. The
    /// cap (`agent.max_tree_entries`, two million by default) is far above a large
    /// `node_modules`; a user whose tree is larger raises it.
    pub fn finish(self, root: &Path) -> Vec<String> {
        let after = Nested::capture(root, self.max_entries);
        let (planted, changed) = self.nested.changes(&after);
        let mut out = remove(root, &planted);
        out.extend(changed.iter().map(|p| self.put_back(&after, root, p)));
        let newly: BTreeSet<Vec<u8>> = hidden_entries(root)
            .difference(&self.hidden)
            .cloned()
            .collect();
        if !newly.is_empty() {
            out.extend(unhide(root, &newly));
        }
        if after.truncated {
            out.push(format!(
                "the work tree has more than {} entries (agent.max_tree_entries), so it could not be checked whole for planted .git entries; remove what the command made, or raise the cap",
                self.max_entries
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_nested_git_is_found_and_removed_and_the_roots_own_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        let before = Nested::capture(root, 1000);
        std::fs::create_dir_all(root.join("src/.git")).expect("mkdir");
        std::fs::write(root.join("src/.git/config"), "[core]\nfsmonitor = x\n").expect("w");
        std::fs::create_dir_all(root.join("lib")).expect("mkdir");
        std::fs::write(root.join("lib/.git"), "gitdir: ../evil\n").expect("w");
        let after = Nested::capture(root, 1000);
        let (planted, changed) = before.changes(&after);
        assert_eq!(
            planted,
            vec![PathBuf::from("lib/.git"), PathBuf::from("src/.git")]
        );
        assert!(changed.is_empty());
        let said = remove(root, &planted);
        assert!(
            said.iter().all(|l| l.contains("has been removed")),
            "{said:?}"
        );
        assert!(!root.join("src/.git").exists() && !root.join("lib/.git").exists());
        assert!(root.join(".git/hooks").exists());
    }

    /// Pass two's last open case: a submodule's gitfile rewritten to lead to a planted git
    /// directory is put back, so the user's next `git status` does not run its fsmonitor.
    #[test]
    fn a_rewritten_submodule_gitfile_is_put_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/modules/sub")).expect("mkdir");
        std::fs::write(root.join(".git/modules/sub/config"), "[core]\n").expect("w");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        let gitfile = "gitdir: ../.git/modules/sub\n";
        std::fs::write(root.join("sub/.git"), gitfile).expect("w");
        let watch = Watch::start(root, 1000);
        std::fs::create_dir_all(root.join("evil")).expect("mkdir");
        std::fs::write(root.join("evil/config"), "[core]\nfsmonitor = x\n").expect("w");
        std::fs::write(root.join("sub/.git"), "gitdir: ../evil\n").expect("w");
        let said = watch.finish(root);
        assert_eq!(
            said,
            vec![
                "sub/.git (git metadata that was already there) was changed and has been put back"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join("sub/.git")).expect("gitfile"),
            gitfile
        );
    }
}
