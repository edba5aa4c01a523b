//! `apply_patch`: applies a unified diff to the work tree, all or nothing.
//!
//! The engine is ours rather than git's because what the model needs from a rejection is a
//! reason it can act on ("hunk 2: line 41 reads `x` where the patch expects `y`"), and
//! because model-written patches carry wrong line numbers and counts that a strict applier
//! refuses. Each hunk is placed where its old lines occur, nearest to the line its header
//! claims; trailing whitespace and blank context at a hunk's edges are forgiven as a second
//! try. Every path is confined before anything is read, every hunk is applied in memory,
//! and only when all of them fit is anything written.

use std::fmt::Write as _;

use super::args::ApplyPatchArgs;
use super::files::{read_bytes, remove_confined, write_confined};
use super::unified::{self, FilePatch, Hunk, HunkLine};
use super::{ToolFailure, Workspace};
use crate::agent::confine::{Access, Resolved};
use crate::beneath::{Kind, RootDir};

/// A file's text as lines, with what is needed to write it back the same way.
///
/// Lines keep their own `\r`, so a file with mixed line endings is written back with the
/// endings it had; lines the patch adds take the file's dominant ending.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Text {
    lines: Vec<String>,
    final_newline: bool,
    /// Most lines end in CRLF.
    crlf: bool,
}

impl Text {
    fn parse(content: &str) -> Text {
        let newlines = content.matches('\n').count();
        let crlf = content.matches("\r\n").count() * 2 > newlines;
        let final_newline = content.is_empty() || content.ends_with('\n');
        let body = content.strip_suffix('\n').unwrap_or(content);
        let lines = if content.is_empty() {
            Vec::new()
        } else {
            body.split('\n').map(str::to_string).collect()
        };
        Text {
            lines,
            final_newline,
            crlf,
        }
    }

    fn render(&self) -> String {
        let mut out = self.lines.join("\n");
        if self.final_newline && !self.lines.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// A line without its carriage return, as the patch (parsed without them) spells it.
fn strip_cr(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

/// The state of one path after the patch, before anything is written.
struct Staged {
    target: Resolved,
    /// `None`: the file is deleted.
    text: Option<Text>,
}

pub fn apply_patch(ws: &Workspace, args: &ApplyPatchArgs) -> Result<String, ToolFailure> {
    let files = unified::parse(&args.patch)
        .map_err(|e| ToolFailure::PatchRejected(format!("cannot parse the patch: {e}")))?;
    let confine = ws.confinement();
    // Confinement first, for every path, so a refused path touches nothing.
    let mut resolved = Vec::with_capacity(files.len());
    for file in &files {
        let old = file
            .old_path
            .as_deref()
            .map(|p| confine.resolve(p, Access::Write))
            .transpose()?;
        let new = file
            .new_path
            .as_deref()
            .map(|p| confine.resolve(p, Access::Write))
            .transpose()?;
        resolved.push((old, new));
    }
    let paths = resolved.iter().flat_map(|(o, n)| [o, n]).flatten();
    ws.guard_protected(&paths.map(|r| r.rel.as_path()).collect::<Vec<_>>())?;
    let mut staged: Vec<Staged> = Vec::new();
    let mut rejects: Vec<String> = Vec::new();
    let mut summary: Vec<String> = Vec::new();
    for (file, (old, new)) in files.iter().zip(resolved) {
        match stage_file(confine.dir(), file, old.as_ref(), new.as_ref(), &staged) {
            Ok((changes, line)) => {
                summary.push(line);
                for change in changes {
                    upsert(&mut staged, change);
                }
            }
            Err(mut messages) => rejects.append(&mut messages),
        }
    }
    if !rejects.is_empty() {
        let mut out = String::from("patch rejected; nothing was changed.\n");
        for r in rejects {
            let _ = writeln!(out, "- {r}");
        }
        out.push_str("Re-read the file and send a patch whose context lines match it exactly.");
        return Err(ToolFailure::PatchRejected(out));
    }
    commit(confine.dir(), &staged)?;
    Ok(summary.join("\n"))
}

/// Writes every staged change; if one fails (disk full, permissions), the files already
/// changed are put back as they were, so the patch stays all or nothing.
fn commit(dir: &RootDir, staged: &[Staged]) -> Result<(), ToolFailure> {
    let originals: Vec<Option<Vec<u8>>> = staged
        .iter()
        .map(|c| read_bytes(dir, &c.target).ok())
        .collect();
    for (done, change) in staged.iter().enumerate() {
        let result = match &change.text {
            Some(text) => write_confined(dir, &change.target, text.render().as_bytes()),
            None => remove_confined(dir, &change.target),
        };
        if let Err(failure) = result {
            for (undo, original) in staged[..done].iter().zip(&originals) {
                let _ = match original {
                    Some(bytes) => write_confined(dir, &undo.target, bytes),
                    None => remove_confined(dir, &undo.target),
                };
            }
            return Err(ToolFailure::Error(format!(
                "{failure}; the files already changed were put back"
            )));
        }
    }
    Ok(())
}

fn upsert(staged: &mut Vec<Staged>, change: Staged) {
    match staged
        .iter_mut()
        .find(|s| s.target.abs == change.target.abs)
    {
        Some(slot) => *slot = change,
        None => staged.push(change),
    }
}

/// The current text of a path: staged by an earlier section of the same patch, or on disk.
fn current(dir: &RootDir, target: &Resolved, staged: &[Staged]) -> Result<Option<Text>, String> {
    if let Some(s) = staged.iter().find(|s| s.target.abs == target.abs) {
        return Ok(s.text.clone());
    }
    if !target.exists {
        return Ok(None);
    }
    if let Ok(Some(Kind::Dir)) = dir.kind(&target.rel) {
        return Err(format!("`{}` is a directory", target.display()));
    }
    let bytes = read_bytes(dir, target).map_err(|e| e.to_string())?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!("`{}` is a binary file", target.display()));
    }
    let content = String::from_utf8(bytes)
        .map_err(|_| format!("`{}` is not UTF-8 text", target.display()))?;
    Ok(Some(Text::parse(&content)))
}

type StageResult = Result<(Vec<Staged>, String), Vec<String>>;

fn stage_file(
    dir: &RootDir,
    file: &FilePatch,
    old: Option<&Resolved>,
    new: Option<&Resolved>,
    staged: &[Staged],
) -> StageResult {
    let one = |m: String| vec![m];
    let (adds, removes) = count(&file.hunks);
    let base = match old {
        Some(o) => match current(dir, o, staged).map_err(one)? {
            Some(text) => text,
            None => return Err(one(format!("`{}` does not exist", o.display()))),
        },
        None => {
            let Some(n) = new else {
                return Err(one("a file section with /dev/null on both sides".into()));
            };
            match current(dir, n, staged).map_err(one)? {
                Some(t) if !t.lines.is_empty() => {
                    return Err(one(format!(
                        "`{}` already exists; patch it instead of creating it",
                        n.display()
                    )));
                }
                _ => Text::parse(""),
            }
        }
    };
    let label = new.or(old).map(Resolved::display).unwrap_or_default();
    let text = apply_hunks(&base, &file.hunks, &label)?;
    let stats = format!("+{adds} -{removes}");
    match (old, new) {
        (Some(o), None) => {
            if !text.lines.is_empty() {
                return Err(one(format!(
                    "deleting `{}`: the patch does not remove all of its {} lines",
                    o.display(),
                    base.lines.len()
                )));
            }
            let gone = Staged {
                target: o.clone(),
                text: None,
            };
            Ok((vec![gone], format!("deleted {}", o.display())))
        }
        (None, Some(n)) => {
            let made = Staged {
                target: n.clone(),
                text: Some(text),
            };
            Ok((vec![made], format!("created {} ({stats})", n.display())))
        }
        (Some(o), Some(n)) if o.abs != n.abs => {
            let gone = Staged {
                target: o.clone(),
                text: None,
            };
            let made = Staged {
                target: n.clone(),
                text: Some(text),
            };
            let line = format!("renamed {} to {} ({stats})", o.display(), n.display());
            Ok((vec![gone, made], line))
        }
        (Some(_), Some(n)) => {
            let made = Staged {
                target: n.clone(),
                text: Some(text),
            };
            let hunks = file.hunks.len();
            let line = format!(
                "patched {} ({hunks} hunk{}, {stats})",
                n.display(),
                if hunks == 1 { "" } else { "s" }
            );
            Ok((vec![made], line))
        }
        (None, None) => Err(one("a file section with /dev/null on both sides".into())),
    }
}

fn count(hunks: &[Hunk]) -> (usize, usize) {
    hunks
        .iter()
        .flat_map(|h| &h.lines)
        .fold((0, 0), |(a, r), l| match l {
            HunkLine::Add(_) => (a + 1, r),
            HunkLine::Remove(_) => (a, r + 1),
            HunkLine::Context(_) => (a, r),
        })
}

/// Applies the hunks of one file in order, or explains every hunk that does not fit.
fn apply_hunks(base: &Text, hunks: &[Hunk], label: &str) -> Result<Text, Vec<String>> {
    let mut text = base.clone();
    let mut delta: isize = 0;
    let mut floor = 0usize;
    let mut errors = Vec::new();
    for (k, hunk) in hunks.iter().enumerate() {
        // `-a,b` names the first old line; a hunk without old lines (`-a,0`) instead names
        // the line it goes *after*.
        let first = if hunk.old_lines().is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let hint = (first as isize + delta).max(0) as usize;
        match place(&text.lines, hunk, hint, floor, text.crlf) {
            Some((pos, old_len, new)) => {
                let reaches_end = pos + old_len == text.lines.len();
                let new_len = new.len();
                text.lines.splice(pos..pos + old_len, new);
                delta += new_len as isize - old_len as isize;
                floor = pos + new_len;
                if reaches_end {
                    text.final_newline = !hunk.new_no_newline;
                }
            }
            None => errors.push(format!(
                "{label}: hunk {} ({}) does not apply: {}",
                k + 1,
                hunk.header,
                diagnose(&text.lines, &hunk.old_lines(), hint)
            )),
        }
    }
    if errors.is_empty() {
        Ok(text)
    } else {
        Err(errors)
    }
}

/// Where a hunk goes: (position, old lines replaced, new lines). Tries the hunk as written,
/// then without blank context lines at its edges; each first exactly, then ignoring
/// trailing whitespace.
fn place(
    lines: &[String],
    hunk: &Hunk,
    hint: usize,
    floor: usize,
    crlf: bool,
) -> Option<(usize, usize, Vec<String>)> {
    let exact = |a: &str, b: &str| strip_cr(a) == b;
    let loose = |a: &str, b: &str| a.trim_end() == b.trim_end();
    for body in variants(&hunk.lines) {
        let old: Vec<&str> = body
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect();
        for eq in [&exact as &dyn Fn(&str, &str) -> bool, &loose] {
            if let Some(pos) = locate(lines, &old, hint, floor, eq) {
                let new = body
                    .iter()
                    .filter_map(|l| match l {
                        HunkLine::Context(s) => lines
                            .get(pos + context_index(body, l))
                            .cloned()
                            .or(Some(s.clone())),
                        HunkLine::Add(s) if crlf => Some(format!("{s}\r")),
                        HunkLine::Add(s) => Some(s.clone()),
                        HunkLine::Remove(_) => None,
                    })
                    .collect();
                return Some((pos, old.len(), new));
            }
        }
    }
    None
}

/// Index on the old side of a context line of `body` (context lines keep the file's own
/// text, so forgiven trailing whitespace is not rewritten).
fn context_index(body: &[HunkLine], line: &HunkLine) -> usize {
    let mut old_index = 0usize;
    for l in body {
        if std::ptr::eq(l, line) {
            return old_index;
        }
        if !matches!(l, HunkLine::Add(_)) {
            old_index += 1;
        }
    }
    old_index
}

/// The hunk as written, then without blank context lines at the end, then at both edges.
fn variants(lines: &[HunkLine]) -> Vec<&[HunkLine]> {
    let blank = |l: &HunkLine| matches!(l, HunkLine::Context(s) if s.trim().is_empty());
    let mut out = vec![lines];
    let mut end = lines.len();
    while end > 0 && blank(&lines[end - 1]) {
        end -= 1;
    }
    let mut start = 0;
    while start < end && blank(&lines[start]) {
        start += 1;
    }
    if end < lines.len() {
        out.push(&lines[..end]);
    }
    if start > 0 {
        out.push(&lines[start..end]);
    }
    out
}

/// The position at or after `floor` where `old` occurs, nearest to `hint`.
fn locate(
    lines: &[String],
    old: &[&str],
    hint: usize,
    floor: usize,
    eq: &dyn Fn(&str, &str) -> bool,
) -> Option<usize> {
    if old.is_empty() {
        return Some(hint.clamp(floor.min(lines.len()), lines.len()));
    }
    if old.len() > lines.len() {
        return None;
    }
    (floor..=lines.len() - old.len())
        .filter(|&p| old.iter().zip(&lines[p..]).all(|(o, l)| eq(l, o)))
        .min_by_key(|&p| p.abs_diff(hint))
}

/// Explains why `old` does not occur: the best partial match and its first wrong line.
fn diagnose(lines: &[String], old: &[&str], hint: usize) -> String {
    if old.is_empty() {
        return "the hunk has no lines".into();
    }
    let prefix = |p: usize| {
        old.iter()
            .zip(&lines[p.min(lines.len())..])
            .take_while(|(o, l)| l.trim_end() == o.trim_end())
            .count()
    };
    let best = (0..lines.len()).max_by_key(|&p| (prefix(p), std::cmp::Reverse(p.abs_diff(hint))));
    match best {
        Some(p) if prefix(p) >= old.len() => format!(
            "its lines occur at line {} only, which a previous hunk of this file already changed \
             or passed (hunks must be in file order and must not overlap)",
            p + 1
        ),
        Some(p) if prefix(p) > 0 => {
            let j = prefix(p);
            let at = p + j;
            match lines.get(at) {
                Some(found) => format!(
                    "the closest match starts at line {}; its line {} reads `{}` where the patch expects `{}`",
                    p + 1,
                    at + 1,
                    strip_cr(found),
                    old[j]
                ),
                None => format!(
                    "the closest match starts at line {} but the file ends after {} lines, before the patch's `{}`",
                    p + 1,
                    lines.len(),
                    old[j]
                ),
            }
        }
        _ => format!(
            "its first line `{}` does not occur in the file{}",
            old[0],
            if lines.is_empty() {
                " (the file is empty)"
            } else {
                ""
            }
        ),
    }
}

/// What a patch would do to each file, one line per file section, read by the parser that
/// applies it: `create P`, `delete P`, `rename A → B`, `modify P`, each with its line
/// counts. An approval prompt shows these, so a patch cannot delete or rename a file the
/// operator was not told about (review finding M2). A text that does not parse says so:
/// the tool will refuse it.
pub fn describe(patch: &str) -> Vec<String> {
    let files = match unified::parse(patch) {
        Ok(files) => files,
        Err(e) => {
            return vec![format!(
                "a patch that does not parse ({e}); it will be refused"
            )];
        }
    };
    files
        .iter()
        .map(|f| {
            let (adds, removes) = count(&f.hunks);
            let what = match (&f.old_path, &f.new_path) {
                (None, Some(n)) => format!("create {n}"),
                (Some(o), None) => format!("delete {o}"),
                (Some(o), Some(n)) if o != n => format!("rename {o} → {n}"),
                (Some(_), Some(n)) => format!("modify {n}"),
                (None, None) => "a section with /dev/null on both sides (refused)".to_string(),
            };
            format!("{what} (+{adds} -{removes})")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_every_ending() {
        for content in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r\nb\n",
            "a\n\n",
        ] {
            assert_eq!(Text::parse(content).render(), content, "{content:?}");
        }
    }

    #[test]
    fn a_description_names_every_file_and_what_becomes_of_it() {
        let patch = "--- a/src/lib.py\n+++ b/src/lib_v2.py\n@@ -1 +1 @@\n-a\n+b\n\
                     --- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\
                     --- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n\
                     --- a/same\n+++ b/same\n@@ -1 +1 @@\n-c\n+d\n";
        assert_eq!(
            describe(patch),
            [
                "rename src/lib.py → src/lib_v2.py (+1 -1)",
                "delete old.txt (+0 -1)",
                "create new.txt (+1 -0)",
                "modify same (+1 -1)",
            ]
        );
        assert!(describe("not a patch")[0].contains("does not parse"));
    }
}
