//! The files a check command names: `python3 test_shout.py` depends on `test_shout.py`
//! whatever the globs say, so those are protected by default too.
//!
//! The command is read as words, not parsed as shell: every word that is the path of a file
//! or directory inside the repository counts (a directory: every file beneath it). Words
//! that are options, hold shell expansions or lead outside the repository do not, nor does
//! the repository root itself (`cp -R hidden/. .` names `.`, which would protect all).

use std::path::Path;

/// What a check command names inside the repository, as repository paths with `/`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Named {
    pub files: Vec<String>,
    pub dirs: Vec<String>,
}

impl Named {
    /// Whether `rel` is one of the named files or lies beneath a named directory.
    pub fn covers(&self, rel: &str) -> bool {
        self.files.iter().any(|f| f == rel)
            || self.dirs.iter().any(|d| {
                rel.strip_prefix(d.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            })
    }
}

/// The files and directories `command` names inside `root` (a canonical directory).
pub fn named_by(command: &str, root: &Path) -> Named {
    let mut out = Named::default();
    let words = command
        .split(|c: char| c.is_whitespace() || ";&|()<>`".contains(c))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .filter(|w| !w.contains(['$', '*', '?', '[', '=', '\'', '"', '~']));
    for word in words {
        let candidate = root.join(word);
        let Ok(real) = candidate.canonicalize() else {
            continue;
        };
        let Ok(rel) = real.strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str().filter(|r| !r.is_empty()) else {
            continue;
        };
        if rel == ".git" || rel.starts_with(".git/") {
            continue;
        }
        let rel = rel.to_string();
        match std::fs::metadata(&real) {
            Ok(m) if m.is_file() && !out.files.contains(&rel) => out.files.push(rel),
            Ok(m) if m.is_dir() && !out.dirs.contains(&rel) => out.dirs.push(rel),
            _ => {}
        }
    }
    out
}
