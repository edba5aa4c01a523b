//! Path confinement: every path a file tool touches resolves inside the repository root.
//!
//! The model's path is untrusted text. It is checked lexically first (no NUL or control
//! characters, no bidi overrides, bounded length, no `..` that climbs above the root), then
//! the longest prefix that exists on disk is canonicalized, so a symlink that leads out of
//! the root (or loops) is caught by the kernel's own resolution rather than by guessing.
//! Tools then operate on the *resolved* path, never on the raw text, so what was checked
//! is what is opened. Unicode look-alikes (fullwidth `．`, `／`) are never normalised: they
//! stay ordinary name characters and cannot become separators.
//!
//! Writes are further refused anywhere inside a `.git` directory, in any letter case and
//! with the trailing dots or spaces some file systems ignore. What passed the check is then
//! opened through [`crate::beneath`], relative to a handle on the root and refusing
//! any symlink on the way, so a process (a command's background child, say) that swaps a
//! directory for a symlink between check and use makes the call fail, not escape.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Longest path text accepted, in bytes (Linux's PATH_MAX is 4096).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single path component accepted, in bytes (NAME_MAX on common file systems).
pub const MAX_NAME_BYTES: usize = 255;

/// Why a path was refused. The message is shown to the model as is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfineError {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path contains a control or bidirectional-override character (U+{0:04X})")]
    ControlChar(u32),
    #[error("path is too long ({0} bytes; the limit is {MAX_PATH_BYTES})")]
    TooLong(usize),
    #[error("a path component is too long ({0} bytes; the limit is {MAX_NAME_BYTES})")]
    NameTooLong(usize),
    #[error("path `{0}` leaves the repository")]
    Escapes(String),
    #[error("path `{0}` goes through a symlink that leads outside the repository")]
    SymlinkEscapes(String),
    #[error("path `{0}` goes through a symlink loop")]
    SymlinkLoop(String),
    #[error("path `{0}` is a dangling symlink")]
    DanglingSymlink(String),
    #[error("writing inside `.git` is not allowed (`{0}`)")]
    GitDir(String),
    #[error("cannot resolve `{path}`: {message}")]
    Io { path: String, message: String },
}

/// Whether the resolved path is going to be read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A repository root that paths are confined to.
#[derive(Debug, Clone)]
pub struct Confinement {
    root: PathBuf,
    dir: crate::beneath::RootDir,
}

/// A path that passed confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute path with every existing component canonical; tools open this.
    pub abs: PathBuf,
    /// The same path relative to the root (empty for the root itself), for messages.
    pub rel: PathBuf,
    /// Whether something (file, directory) exists at `abs`.
    pub exists: bool,
}

impl Resolved {
    /// The relative path as the model should see it (`.` for the root).
    pub fn display(&self) -> String {
        if self.rel.as_os_str().is_empty() {
            ".".into()
        } else {
            self.rel.to_string_lossy().into_owned()
        }
    }
}

impl Confinement {
    /// Canonicalizes `root` once, so every later comparison is between canonical paths.
    pub fn new(root: &Path) -> io::Result<Confinement> {
        let root = root.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        let dir = crate::beneath::RootDir::open(&root)?;
        Ok(Confinement { root, dir })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The handle on the root that resolved paths are opened relative to.
    pub fn dir(&self) -> &crate::beneath::RootDir {
        &self.dir
    }

    /// Resolves the model's `path` (relative to the root, or absolute inside it).
    pub fn resolve(&self, path: &str, access: Access) -> Result<Resolved, ConfineError> {
        check_text(path)?;
        let lexical = self.lexical(path)?;
        let resolved = self.physical(path, &lexical)?;
        if access == Access::Write && touches_git_dir(&resolved.rel) {
            return Err(ConfineError::GitDir(path.to_string()));
        }
        Ok(resolved)
    }

    /// Joins `path` onto the root and folds `.` and `..` without touching the disk,
    /// refusing any `..` that would climb above the root.
    fn lexical(&self, path: &str) -> Result<PathBuf, ConfineError> {
        let raw = Path::new(path);
        let mut parts: Vec<&OsStr> = Vec::new();
        let rest: &Path = if raw.is_absolute() {
            match raw.strip_prefix(&self.root) {
                Ok(rest) => rest,
                // An absolute path that names the root through a non-canonical spelling
                // (e.g. a symlinked ancestor) is still allowed if it canonicalizes inside.
                Err(_) => return self.absolute_outside_spelling(path, raw),
            }
        } else {
            raw
        };
        for component in rest.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(ConfineError::Escapes(path.to_string()));
                    }
                }
                Component::Normal(name) => parts.push(name),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ConfineError::Escapes(path.to_string()));
                }
            }
        }
        let mut out = self.root.clone();
        out.extend(parts);
        Ok(out)
    }

    /// An absolute path not spelled under the canonical root: accepted only when its
    /// existing prefix canonicalizes into the root (for instance `/tmp/x` where `/tmp`
    /// is a symlink to the real location).
    fn absolute_outside_spelling(&self, path: &str, raw: &Path) -> Result<PathBuf, ConfineError> {
        if raw.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(ConfineError::Escapes(path.to_string()));
        }
        let raw: PathBuf = raw
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        let (existing, tail) = split_existing(&raw);
        let canonical = existing
            .canonicalize()
            .map_err(|_| ConfineError::Escapes(path.to_string()))?;
        if !canonical.starts_with(&self.root) {
            return Err(ConfineError::Escapes(path.to_string()));
        }
        let mut out = canonical;
        out.extend(tail);
        Ok(out)
    }

    /// Canonicalizes the longest existing prefix of the lexical path and checks it is
    /// still inside the root; the non-existing rest is made of plain names.
    fn physical(&self, path: &str, lexical: &Path) -> Result<Resolved, ConfineError> {
        let (existing, tail) = split_existing(lexical);
        let canonical = match existing.canonicalize() {
            Ok(c) => c,
            Err(e) => return Err(classify(path, &existing, e)),
        };
        if !canonical.starts_with(&self.root) {
            return Err(ConfineError::SymlinkEscapes(path.to_string()));
        }
        let exists = tail.is_empty();
        let mut abs = canonical;
        abs.extend(&tail);
        let rel = abs
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .map_err(|_| ConfineError::Escapes(path.to_string()))?;
        Ok(Resolved { abs, rel, exists })
    }
}

/// Rejects text that is not a sane path before it gets near the file system.
fn check_text(path: &str) -> Result<(), ConfineError> {
    if path.is_empty() {
        return Err(ConfineError::Empty);
    }
    if path.contains('\0') {
        return Err(ConfineError::Nul);
    }
    if let Some(c) = path.chars().find(|&c| c.is_control() || is_bidi_control(c)) {
        return Err(ConfineError::ControlChar(c as u32));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(ConfineError::TooLong(path.len()));
    }
    if let Some(long) = path.split('/').map(str::len).find(|&n| n > MAX_NAME_BYTES) {
        return Err(ConfineError::NameTooLong(long));
    }
    Ok(())
}

/// Characters that reorder how a path is displayed (the "Trojan Source" family), so a
/// name could read as something it is not in a log or an approval prompt.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Splits a path into its longest prefix that exists (as a directory entry, symlinks not
/// followed) and the names after it.
fn split_existing(path: &Path) -> (PathBuf, Vec<&OsStr>) {
    let mut existing = path.to_path_buf();
    let mut tail: Vec<&OsStr> = Vec::new();
    let mut names = path.components().rev().filter_map(|c| match c {
        Component::Normal(n) => Some(n),
        _ => None,
    });
    while std::fs::symlink_metadata(&existing).is_err() {
        match (existing.parent().map(Path::to_path_buf), names.next()) {
            (Some(parent), Some(name)) => {
                tail.push(name);
                existing = parent;
            }
            _ => break,
        }
    }
    tail.reverse();
    (existing, tail)
}

fn classify(path: &str, existing: &Path, e: io::Error) -> ConfineError {
    // ELOOP has no stable ErrorKind yet; match the raw code on Unix.
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return ConfineError::SymlinkLoop(path.to_string());
    }
    let is_link = std::fs::symlink_metadata(existing)
        .map(|m| m.file_type().is_symlink())
        .unwrap_or(false);
    if e.kind() == io::ErrorKind::NotFound && is_link {
        return ConfineError::DanglingSymlink(path.to_string());
    }
    ConfineError::Io {
        path: path.to_string(),
        message: e.to_string(),
    }
}

/// True when any component is `.git` as git itself would see it on a case-insensitive or
/// trailing-dot-trimming file system (`.GIT`, `.git.`, `.git `).
pub fn touches_git_dir(rel: &Path) -> bool {
    rel.components().any(|c| match c {
        Component::Normal(name) => name
            .to_str()
            .map(|s| s.trim_end_matches(['.', ' ']).eq_ignore_ascii_case(".git"))
            .unwrap_or(false),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_dir_names_in_every_spelling() {
        for p in [
            ".git",
            ".GIT/x",
            "a/.Git/b",
            ".git./c",
            ".git /d",
            ".git.. /e",
        ] {
            assert!(touches_git_dir(Path::new(p)), "{p}");
        }
        for p in [
            ".gitignore",
            ".github/x",
            "git",
            "a/.gitmodules",
            "x.git",
            "..git",
        ] {
            assert!(!touches_git_dir(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn text_checks_name_the_problem() {
        assert_eq!(check_text(""), Err(ConfineError::Empty));
        assert_eq!(check_text("a\0b"), Err(ConfineError::Nul));
        assert_eq!(check_text("a\u{7f}"), Err(ConfineError::ControlChar(0x7f)));
        assert_eq!(check_text("a\u{85}"), Err(ConfineError::ControlChar(0x85)));
        assert_eq!(
            check_text("\u{2067}x"),
            Err(ConfineError::ControlChar(0x2067))
        );
        assert_eq!(
            check_text(&"x".repeat(256)),
            Err(ConfineError::NameTooLong(256))
        );
        assert_eq!(
            check_text(&"x/".repeat(2049)),
            Err(ConfineError::TooLong(4098))
        );
        assert_eq!(check_text("src/ｌｉｂ．ｒｓ"), Ok(()));
    }

    #[test]
    fn an_absolute_path_spelled_through_a_symlinked_ancestor_is_inside() {
        let base = tempfile::tempdir().expect("tempdir");
        let real = base.path().join("real");
        std::fs::create_dir_all(real.join("src")).expect("mkdir");
        std::fs::write(real.join("src/a.rs"), "x").expect("write");
        std::os::unix::fs::symlink(&real, base.path().join("alias")).expect("symlink");
        let confine = Confinement::new(&real).expect("root");
        let spelled = base.path().join("alias/./src/a.rs");
        let resolved = confine
            .resolve(&spelled.display().to_string(), Access::Read)
            .expect("inside");
        assert_eq!(resolved.rel, PathBuf::from("src/a.rs"));
        assert!(resolved.exists);
        let new_file = base.path().join("alias/src/new.rs");
        let resolved = confine
            .resolve(&new_file.display().to_string(), Access::Write)
            .expect("inside");
        assert_eq!(resolved.rel, PathBuf::from("src/new.rs"));
        assert!(!resolved.exists);
    }
}
