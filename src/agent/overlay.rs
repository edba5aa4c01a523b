//! Files laid over the work tree right before the check runs, held in memory until then:
//! how `eval` tests a blocker's hidden answer without leaving the tests anywhere a `run`
//! command could read them while the model works (review finding M8: staged on disk next
//! to the repository, they were one `cat ../*.hidden/*` away).
//!
//! The files are read before the session starts, by handoff, and written into the tree only
//! when the check runs: after the model's last action (a check ends the session), so no
//! later model turn can see them.

use std::path::{Path, PathBuf};

/// Files (paths relative to the repository) to write before the check; empty for every
/// session but `eval`'s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckOverlay {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl CheckOverlay {
    /// Every regular file under `dir`, read now (symlinks and other special files are
    /// skipped, as a template copy skips them).
    pub fn read_dir(dir: &Path) -> std::io::Result<CheckOverlay> {
        let mut files = Vec::new();
        collect(dir, Path::new(""), &mut files)?;
        files.sort();
        Ok(CheckOverlay { files })
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files as (relative path, content).
    pub fn files(&self) -> &[(PathBuf, Vec<u8>)] {
        &self.files
    }

    /// Writes every file into `root` with plain file system calls, for a tree no session
    /// works in any more (eval's check after the session, suite validation).
    pub fn lay_plain(&self, root: &Path) -> std::io::Result<()> {
        for (rel, bytes) in &self.files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, bytes)?;
        }
        Ok(())
    }
}

fn collect(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let rel = rel.join(entry.file_name());
        if kind.is_dir() {
            collect(root, &rel, out)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(entry.path())?;
            out.push((rel, bytes));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_read_whole_and_laid_over_another() {
        let from = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(from.path().join("tests")).expect("mkdir");
        std::fs::write(from.path().join("tests/test_hidden.py"), "x = 1\n").expect("write");
        std::fs::write(from.path().join("top.txt"), "t").expect("write");
        let overlay = CheckOverlay::read_dir(from.path()).expect("read");
        let names: Vec<_> = overlay.files().iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(
            names,
            [
                PathBuf::from("tests/test_hidden.py"),
                PathBuf::from("top.txt")
            ]
        );
        let to = tempfile::tempdir().expect("tempdir");
        overlay.lay_plain(to.path()).expect("lay");
        assert_eq!(
            std::fs::read_to_string(to.path().join("tests/test_hidden.py")).expect("read"),
            "x = 1\n"
        );
        assert!(CheckOverlay::default().is_empty());
    }
}
