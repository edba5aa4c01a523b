//! Diffs rendered for people: `handoff diff` and the end-of-session summary show a change
//! with it, and the screen's transcript and approval prompt tag a patch's lines with the
//! same classifier ([`diffline`]), so every view agrees on what a line is.
//!
//! A rendering is a list of lines, each tagged with what it is ([`LineKind`]), and no
//! colour: the screen colours by kind, plain output prints the text as it is, `NO_COLOR`
//! needs nothing special. Every file section opens with a line that *names* what happened
//! to the file (`modified`, `new file`, `deleted`, `renamed a → b`), because a bare
//! `--- a/x` / `+++ /dev/null` pair is easy to misread on a small screen.
//!
//! Two sources feed it:
//! - a patch text as written ([`from_patch`]; sloppy model patches included: lines are
//!   classified for display by [`diffline::classify`], the classifier the screen uses too,
//!   never applied, so nothing here can reject one);
//! - a git diff between two checkpoint trees ([`from_git`]), where git2 already has the
//!   objects and finds renames.

use serde::{Deserialize, Serialize};

use crate::protocol::diffline;
pub use crate::protocol::diffline::LineKind;

/// One line of a rendered diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub kind: LineKind,
    /// The text as printed, with its `+`/`-`/` ` prefix for body lines; no newline.
    pub text: String,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum FileChange {
    Added,
    Deleted,
    Modified,
    Renamed { from: String },
}

/// One file of a diff and its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    /// The path after the change (before it, for a deletion).
    pub path: String,
    pub change: FileChange,
    pub insertions: usize,
    pub deletions: usize,
}

/// A diff ready to show, with its per-file stat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderedDiff {
    pub lines: Vec<DiffLine>,
    pub files: Vec<FileDiff>,
}

impl RenderedDiff {
    pub fn insertions(&self) -> usize {
        self.files.iter().map(|f| f.insertions).sum()
    }

    pub fn deletions(&self) -> usize {
        self.files.iter().map(|f| f.deletions).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The lines joined with newlines (what a pager or a log would show).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&line.text);
            out.push('\n');
        }
        out
    }

    /// A diffstat: one line per file, then the totals (`2 files changed, +3 -1`).
    pub fn stat(&self) -> String {
        let width = self
            .files
            .iter()
            .map(|f| f.label().chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for f in &self.files {
            let label = f.label();
            let pad = width - label.chars().count();
            out.push_str(&format!(
                " {label}{:pad$} | +{} -{}\n",
                "", f.insertions, f.deletions
            ));
        }
        let n = self.files.len();
        out.push_str(&format!(
            " {n} file{} changed, +{} -{}\n",
            if n == 1 { "" } else { "s" },
            self.insertions(),
            self.deletions()
        ));
        out
    }

    fn push(&mut self, kind: LineKind, text: impl Into<String>) {
        self.lines.push(DiffLine {
            kind,
            text: text.into(),
        });
    }

    /// Starts a file section: its naming line and its stat entry.
    fn open_file(&mut self, path: String, change: FileChange) {
        let file = FileDiff {
            path,
            change,
            insertions: 0,
            deletions: 0,
        };
        self.push(LineKind::File, file.header());
        self.files.push(file);
    }

    /// Adds a body line to the current file section, counting it.
    fn body(&mut self, kind: LineKind, text: String) {
        if let Some(f) = self.files.last_mut() {
            match kind {
                LineKind::Added => f.insertions += 1,
                LineKind::Removed => f.deletions += 1,
                _ => {}
            }
        }
        self.push(kind, text);
    }
}

impl FileDiff {
    /// The naming line of a file section.
    fn header(&self) -> String {
        match &self.change {
            FileChange::Added => format!("new file {}", self.path),
            FileChange::Deleted => format!("deleted {}", self.path),
            FileChange::Modified => format!("modified {}", self.path),
            FileChange::Renamed { from } => format!("renamed {from} → {}", self.path),
        }
    }

    /// The path as the stat shows it.
    fn label(&self) -> String {
        match &self.change {
            FileChange::Renamed { from } => format!("{from} → {}", self.path),
            _ => self.path.clone(),
        }
    }
}

fn change_of(old_path: Option<&str>, new_path: Option<&str>) -> Option<FileChange> {
    Some(match (old_path, new_path) {
        (None, None) => return None,
        (None, Some(_)) => FileChange::Added,
        (Some(_), None) => FileChange::Deleted,
        (Some(a), Some(b)) if a == b => FileChange::Modified,
        (Some(a), Some(_)) => FileChange::Renamed {
            from: a.to_string(),
        },
    })
}

const NO_NEWLINE: &str = "\\ No newline at end of file";

/// A unified patch as a model or git wrote it, classified line by line for display.
///
/// Nothing is applied or validated: a sloppy patch renders as well as a clean one, and
/// lines that fit no rule show as notes. File sections start at `diff --git` or at a
/// `---`/`+++` pair; `/dev/null` on a side, `new file mode`/`deleted file mode` and
/// `rename from`/`rename to` name what happened to the file.
pub fn from_patch(text: &str) -> RenderedDiff {
    let mut out = RenderedDiff::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let (section, next) = git_section(&lines, i, rest);
            out.open_file(section.0, section.1);
            i = next;
            continue;
        }
        if let Some(old) = line.strip_prefix("--- ")
            && let Some(new) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ "))
        {
            let old = patch_path(old);
            let new = patch_path(new);
            if let Some(change) = change_of(old.as_deref(), new.as_deref()) {
                let path = new.or(old).unwrap_or_default();
                out.open_file(path, change);
            }
            i += 2;
            continue;
        }
        let kind = diffline::classify(line);
        let text = if line.is_empty() { " " } else { line };
        out.body(kind, text.to_string());
        i += 1;
    }
    out
}

/// Reads a `diff --git a/x b/y` section header and its extended header lines (up to the
/// first hunk or binary note); returns the file's path and change, and where its body starts.
fn git_section(lines: &[&str], start: usize, rest: &str) -> ((String, FileChange), usize) {
    let (mut old, mut new) = split_git_paths(rest);
    let (mut added, mut deleted, mut renamed) = (false, false, false);
    let mut i = start + 1;
    while let Some(line) = lines.get(i) {
        let body_starts = ["@@", "diff --git ", "Binary files", "GIT binary patch"];
        if body_starts.iter().any(|p| line.starts_with(p)) {
            break;
        }
        if line.starts_with("new file mode") {
            added = true;
        } else if line.starts_with("deleted file mode") {
            deleted = true;
        } else if let Some(p) = line.strip_prefix("rename from ") {
            old = Some(p.to_string());
            renamed = true;
        } else if let Some(p) = line.strip_prefix("rename to ") {
            new = Some(p.to_string());
            renamed = true;
        } else if let Some(p) = line.strip_prefix("--- ") {
            match patch_path(p) {
                Some(p) => old = Some(p),
                None => added = true,
            }
        } else if let Some(p) = line.strip_prefix("+++ ") {
            match patch_path(p) {
                Some(p) => new = Some(p),
                None => deleted = true,
            }
        }
        i += 1;
    }
    let change = if added {
        FileChange::Added
    } else if deleted {
        FileChange::Deleted
    } else if let Some(from) = old.clone().filter(|o| renamed || Some(o) != new.as_ref()) {
        FileChange::Renamed { from }
    } else {
        FileChange::Modified
    };
    let path = if deleted { old.or(new) } else { new.or(old) };
    ((path.unwrap_or_default(), change), i)
}

/// `a/x b/y` → (`x`, `y`); paths with spaces are split at ` b/`.
fn split_git_paths(rest: &str) -> (Option<String>, Option<String>) {
    match rest.find(" b/") {
        Some(at) => (patch_path(&rest[..at]), patch_path(&rest[at + 1..])),
        None => (None, None),
    }
}

/// A `---`/`+++` path without its `a/`/`b/` prefix and timestamp; `None` for `/dev/null`.
fn patch_path(raw: &str) -> Option<String> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim();
    if raw == "/dev/null" || raw.is_empty() {
        return None;
    }
    let raw = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    Some(raw.to_string())
}

/// A git diff (between two checkpoint trees) rendered like the others. Call
/// `find_similar` on the diff first for renames to be named as such.
pub fn from_git(diff: &git2::Diff<'_>) -> Result<RenderedDiff, git2::Error> {
    let mut out = RenderedDiff::default();
    diff.print(git2::DiffFormat::Patch, |delta, _hunk, line| {
        let content = String::from_utf8_lossy(line.content());
        let content = content.trim_end_matches(['\n', '\r']);
        let path_of = |f: git2::DiffFile<'_>| {
            f.path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        match line.origin() {
            'F' => {
                let old = path_of(delta.old_file());
                let new = path_of(delta.new_file());
                let (path, change) = match delta.status() {
                    git2::Delta::Added | git2::Delta::Untracked => (new, FileChange::Added),
                    git2::Delta::Deleted => (old, FileChange::Deleted),
                    git2::Delta::Renamed => (new, FileChange::Renamed { from: old }),
                    _ => (new, FileChange::Modified),
                };
                out.open_file(path, change);
            }
            'H' => out.push(LineKind::Hunk, content.to_string()),
            '+' => out.body(LineKind::Added, format!("+{content}")),
            '-' => out.body(LineKind::Removed, format!("-{content}")),
            ' ' => out.body(LineKind::Context, format!(" {content}")),
            '=' | '>' | '<' => out.push(LineKind::Note, NO_NEWLINE),
            'B' => out.push(LineKind::Note, "binary file differs"),
            _ => {}
        }
        true
    })?;
    Ok(out)
}

#[cfg(test)]
#[path = "diffview_tests.rs"]
mod tests;
