//! Telling a sandbox denial from a command that failed on its own, so a denial reaches the
//! model and the operator as what it is (a fault of the setup, with the setting that
//! allows it) and never reaches the judge as the model's `tool_error`.
//!
//! The kernel says nothing that marks a refusal as Landlock's: the process sees `EACCES`
//! or `EPERM`, the same errors a file's own permissions give. So the decision is made from
//! what the command printed and what handoff knows about the sandbox, and it is a denial
//! only when all of these hold:
//!
//! 1. Landlock was in force for the command and the command failed;
//! 2. its output says `Permission denied` (EACCES), `Operation not permitted` (EPERM) or
//!    `Read-only file system` (EROFS, from the read-only mount view outside the writable
//!    roots);
//! 3. the output names a path (absolute, or `..`-relative to the repository) outside every
//!    directory the sandbox lets commands write, on the line of the error or, for tools
//!    such as cargo that print the path above a `Caused by:` line, anywhere in the output;
//! 4. handoff itself, outside the sandbox, may write that path (or, for a path that does
//!    not exist yet, its nearest existing parent), so the file's own permissions are not
//!    what refused it.
//!
//! Without a path there is no telling the sandbox from the file's mode (`./build.sh:
//! Permission denied` is a missing execute bit), so such a failure stays the command's:
//! a denial is never guessed, and an ordinary failure is never excused.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// What a refused file system call leaves in output: EACCES, EPERM and EROFS as libc
/// spells them.
const DENIED: [&str; 3] = [
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

/// A command's failure that the sandbox caused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The path the command was refused, as the output named it (normalised).
    pub path: PathBuf,
}

impl Denial {
    /// The text the model and the operator read: what was refused, that it is the sandbox,
    /// the setting that allows it, and what to do meanwhile.
    pub fn message(&self) -> String {
        format!(
            "sandbox denial: the command was refused access to {} because it is outside the \
             directories commands may write (the repository, the session's temp dir and \
             agent.writable_roots). This is the sandbox, not a mistake in the command: the \
             operator can allow it by adding the directory to agent.writable_roots in the \
             config; until then keep what the command writes inside the repository (for \
             cargo, CARGO_TARGET_DIR=target).",
            self.path.display()
        )
    }
}

/// The denial in a failed command's `output`, given the directories the sandbox let it
/// write and the directory it ran in; `None` when the failure is the command's own.
pub fn find(output: &str, writable: &[PathBuf], cwd: &Path) -> Option<Denial> {
    let denial_lines: Vec<&str> = output
        .lines()
        .filter(|l| DENIED.iter().any(|d| l.contains(d)))
        .collect();
    if denial_lines.is_empty() {
        return None;
    }
    let outside = |p: &PathBuf| {
        !writable.iter().any(|w| p.starts_with(w)) && !p.starts_with("/dev") && writable_by_us(p)
    };
    let on_error_lines = denial_lines.iter().flat_map(|l| paths(l, cwd));
    let anywhere = output.lines().flat_map(|l| paths(l, cwd));
    on_error_lines
        .chain(anywhere)
        .find(outside)
        .map(|path| Denial { path })
}

/// Path-like words of `line`: starting with `/` (not `//`, which is a URL's) or `../`,
/// after a space, a quote (ASCII or typographic) or a colon, up to the next of those.
fn paths(line: &str, cwd: &Path) -> Vec<PathBuf> {
    // Typographic quotes too: coreutils quote with them under a UTF-8 locale.
    let stops = |c: char| c.is_whitespace() || "'\"`:,;()[]<>‘’“”«»".contains(c);
    line.split(stops)
        .map(|w| w.trim_end_matches(['.', '!']))
        .filter(|w| (w.starts_with('/') && !w.starts_with("//")) || w.starts_with("../"))
        .map(|w| normalise(&cwd.join(w)))
        .collect()
}

/// `path` with `.` and `..` resolved by name (the file may not exist).
pub(super) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether this process, unconfined, may write `path` or (when it does not exist) its
/// nearest existing parent directory.
fn writable_by_us(path: &Path) -> bool {
    let Some(existing) = path.ancestors().find(|p| p.exists()) else {
        return false;
    };
    let Ok(c) = CString::new(existing.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(repo: &Path) -> Vec<PathBuf> {
        vec![repo.to_path_buf()]
    }

    #[test]
    fn a_shell_redirect_outside_the_roots_is_a_denial_naming_its_path() {
        let outside = tempfile::tempdir().expect("tempdir");
        let repo = tempfile::tempdir().expect("tempdir");
        let target = outside.path().join("out.txt");
        let output = format!(
            "sh: 1: cannot create {}: Permission denied\n",
            target.display()
        );
        let d = find(&output, &roots(repo.path()), repo.path()).expect("a denial");
        assert_eq!(d.path, target);
        assert!(
            d.message().contains("agent.writable_roots"),
            "{}",
            d.message()
        );
    }

    #[test]
    fn cargos_path_above_its_caused_by_line_is_found() {
        let outside = tempfile::tempdir().expect("tempdir");
        let repo = tempfile::tempdir().expect("tempdir");
        let dir = outside.path().join("target/debug");
        let output = format!(
            "error: failed to create directory `{}`\n\nCaused by:\n  Permission denied (os error 13)\n",
            dir.display()
        );
        let d = find(&output, &roots(repo.path()), repo.path()).expect("a denial");
        assert_eq!(d.path, dir);
    }

    #[test]
    fn failures_inside_the_roots_or_without_a_path_stay_the_commands() {
        let repo = tempfile::tempdir().expect("tempdir");
        let r = roots(repo.path());
        let inside = format!(
            "touch: cannot touch '{}/x': Permission denied",
            repo.path().display()
        );
        assert_eq!(find(&inside, &r, repo.path()), None);
        assert_eq!(
            find("sh: 1: ./build.sh: Permission denied", &r, repo.path()),
            None
        );
        assert_eq!(
            find("Permission denied (os error 13)", &r, repo.path()),
            None
        );
        assert_eq!(
            find("error: /nowhere/x not found", &r, repo.path()),
            None,
            "no denial phrase"
        );
        assert_eq!(
            find(
                "curl: (7) https://example.invalid/x: Operation not permitted",
                &r,
                repo.path()
            ),
            None,
            "a URL is not a path"
        );
    }

    #[test]
    fn dotdot_paths_are_resolved_against_the_repository() {
        let base = tempfile::tempdir().expect("tempdir");
        let repo = base.path().join("repo");
        std::fs::create_dir(&repo).expect("mkdir");
        let output = "mkdir: cannot create directory ‘../elsewhere’: Permission denied";
        let d = find(output, &roots(&repo), &repo).expect("a denial");
        assert_eq!(d.path, base.path().join("elsewhere"));
    }
}
