//! `list_files`, `read_file`, `write_file`, and the confined, .gitignore-aware walk that
//! `list_files` and `search` share.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::args::{EditArgs, ListFilesArgs, ReadFileArgs, WriteFileArgs};
use super::{ToolFailure, Workspace, truncate_head};
use crate::agent::confine::{Access, ConfineError, Resolved};
use crate::beneath::{self, Kind, RootDir};

/// Default depth of `list_files`.
pub const DEFAULT_DEPTH: u32 = 2;
/// Deepest `list_files` goes, whatever the model asks.
pub const MAX_DEPTH: u32 = 16;
/// Most entries `list_files` returns.
pub const MAX_ENTRIES: usize = 500;
/// Largest file `read_file` and `apply_patch` load.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Walks the tree under `target` (a confined path) respecting .gitignore files.
///
/// The walk starts at the repository root, not at `target`, and prunes every directory
/// that is neither on the way to `target` nor under it: that way the root's and the
/// intermediate directories' .gitignore files apply, without reading ignore files above
/// the root or the user's global excludes (nothing outside the repository is read).
/// Symlinks are listed but never followed, and `.git` is never entered. The ignore files
/// are read by [`crate::ignorewalk`], never by the walk itself: one that is a FIFO or a
/// link to `/dev/zero` counts as absent instead of hanging the session.
pub(crate) fn walk(ws: &Workspace, target: &Path, max_depth: Option<usize>) -> ignore::Walk {
    let root = ws.root().to_path_buf();
    let target_owned: PathBuf = target.to_path_buf();
    let target_depth = target
        .strip_prefix(&root)
        .map(|r| r.components().count())
        .unwrap_or(0);
    let mut builder = crate::ignorewalk::builder(&root);
    let rules = crate::ignorewalk::IgnoreRules::new(&root);
    builder
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if !rules.keep(entry) {
                return false;
            }
            let path = entry.path();
            if target_owned.starts_with(path) {
                return true;
            }
            if !path.starts_with(&target_owned) {
                return false;
            }
            match max_depth {
                Some(d) => entry.depth() <= target_depth + d,
                None => true,
            }
        });
    builder.build()
}

pub fn list_files(ws: &Workspace, args: &ListFilesArgs) -> Result<String, ToolFailure> {
    let target = ws
        .confinement()
        .resolve(args.path.as_deref().unwrap_or("."), Access::Read)?;
    if !target.exists {
        return Err(ToolFailure::Error(format!(
            "`{}` does not exist",
            target.display()
        )));
    }
    if let Ok(Some(Kind::Special)) = ws.confinement().dir().kind(&target.rel) {
        return Err(ToolFailure::Error(format!(
            "`{}` is not a regular file or directory (a FIFO, socket or device); refused",
            target.display()
        )));
    }
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH) as usize;
    let mut lines: Vec<String> = Vec::new();
    let mut more = 0usize;
    for entry in walk(ws, &target.abs, Some(depth)).flatten() {
        let path = entry.path();
        if !path.starts_with(&target.abs) || (path == target.abs && target.abs.is_dir()) {
            continue;
        }
        if lines.len() >= MAX_ENTRIES {
            more += 1;
            continue;
        }
        let rel = path.strip_prefix(ws.root()).unwrap_or(path);
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let is_link = entry.path_is_symlink();
        let suffix = if is_dir {
            "/"
        } else if is_link {
            " (symlink)"
        } else {
            ""
        };
        lines.push(format!("{}{suffix}", rel.display()));
    }
    let mut out = if lines.is_empty() {
        format!(
            "`{}` is empty (or everything in it is ignored)",
            target.display()
        )
    } else {
        lines.join("\n")
    };
    if more > 0 {
        let _ = write!(
            out,
            "\n[{more} more entries not shown; list a subdirectory]"
        );
    }
    Ok(truncate_head(&out, ws.limits().output_cap_bytes).to_string())
}

/// Reads a confined file as text, refusing directories and binary files with a message
/// that tells the model what to do instead.
fn read_text(dir: &RootDir, target: &Resolved) -> Result<String, ToolFailure> {
    if !target.exists {
        return Err(ToolFailure::Error(format!(
            "`{}` does not exist",
            target.display()
        )));
    }
    if let Ok(Some(Kind::Dir)) = dir.kind(&target.rel) {
        return Err(ToolFailure::Error(format!(
            "`{}` is a directory; use list_files",
            target.display()
        )));
    }
    let bytes = read_bytes(dir, target)?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(ToolFailure::Error(format!(
            "`{}` is a binary file ({} bytes)",
            target.display(),
            bytes.len()
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn read_file(ws: &Workspace, args: &ReadFileArgs) -> Result<String, ToolFailure> {
    let target = ws.confinement().resolve(&args.path, Access::Read)?;
    let text = read_text(ws.confinement().dir(), &target)?;
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len() as u64;
    let start = args.start_line.unwrap_or(1).max(1);
    let end = args.end_line.unwrap_or(total).min(total);
    if total == 0 {
        return Ok(format!("{} is empty", target.display()));
    }
    if start > total {
        return Err(ToolFailure::Error(format!(
            "start_line {start} is past the end of `{}` ({total} lines)",
            target.display()
        )));
    }
    if end < start {
        return Err(ToolFailure::Error(format!(
            "end_line {end} is before start_line {start}"
        )));
    }
    let cap = ws.limits().output_cap_bytes;
    let width = end.to_string().len();
    let mut body = String::new();
    let mut last = start - 1;
    for n in start..=end {
        let line = lines.get((n - 1) as usize).copied().unwrap_or("");
        let numbered = format!("{n:>width$}  {line}\n");
        if body.len() + numbered.len() > cap {
            if n == start {
                // One enormous line: show its head rather than nothing.
                body.push_str(truncate_head(&numbered, cap));
                body.push('\n');
                last = n;
            }
            break;
        }
        body.push_str(&numbered);
        last = n;
    }
    let mut out = format!(
        "{} (lines {start}-{last} of {total})\n{body}",
        target.display()
    );
    if last < end {
        let _ = write!(
            out,
            "[cut at the output limit; call read_file with start_line={} to read on]",
            last + 1
        );
    }
    Ok(out)
}

pub fn write_file(ws: &Workspace, args: &WriteFileArgs) -> Result<String, ToolFailure> {
    let target = ws.confinement().resolve(&args.path, Access::Write)?;
    ws.guard_protected(&[target.rel.as_path()])?;
    let dir = ws.confinement().dir();
    if target.rel.as_os_str().is_empty() || matches!(dir.kind(&target.rel), Ok(Some(Kind::Dir))) {
        return Err(ToolFailure::Error(format!(
            "`{}` is a directory",
            target.display()
        )));
    }
    write_confined(dir, &target, args.content.as_bytes())?;
    Ok(format!(
        "{} {} ({} bytes)",
        if target.exists { "replaced" } else { "created" },
        target.display(),
        args.content.len()
    ))
}

/// The files of a placed `code` reply: every path is resolved and checked against the
/// protected globs before any is written, so a reply that touches a test writes nothing.
pub fn edit(ws: &Workspace, args: &EditArgs) -> Result<String, ToolFailure> {
    let mut targets = Vec::new();
    for f in &args.files {
        targets.push(ws.confinement().resolve(&f.path, Access::Write)?);
    }
    let rels: Vec<&Path> = targets.iter().map(|t| t.rel.as_path()).collect();
    ws.guard_protected(&rels)?;
    let mut out = Vec::new();
    for f in &args.files {
        out.push(write_file(ws, f)?);
    }
    Ok(out.join("\n"))
}

/// A repository file's text for the `code` protocol's brief and placement: `None` when it
/// is missing, outside the repository, too large or not a regular file.
pub fn text_of(ws: &Workspace, path: &str) -> Option<String> {
    let target = ws.confinement().resolve(path, Access::Read).ok()?;
    let bytes = read_bytes(ws.confinement().dir(), &target).ok()?;
    String::from_utf8(bytes).ok()
}

/// Every file of the repository the walk sees (`.gitignore` respected, `.git` never),
/// relative and `/`-separated, sorted; at most `cap`.
pub fn repo_files(ws: &Workspace, cap: usize) -> Vec<String> {
    let root = ws.root().to_path_buf();
    let mut out: Vec<String> = walk(ws, &root, None)
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| {
            e.path()
                .strip_prefix(&root)
                .ok()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
        })
        .take(cap)
        .collect();
    out.sort();
    out
}

/// Writes `bytes` to a confined path, creating its parent directories, relative to the
/// root's handle (see [`beneath`]).
///
/// The content goes to a temporary file beside the target, which is then renamed over it:
/// a session killed mid-write leaves the old file or the new one, never half of each, and a
/// file hard-linked from outside the repository is replaced rather than written through.
/// An existing file keeps its permission bits; a new one gets `0666` minus the umask.
pub(crate) fn write_confined(
    dir: &RootDir,
    target: &Resolved,
    bytes: &[u8],
) -> Result<(), ToolFailure> {
    dir.write_atomic(&target.rel, bytes)
        .map_err(|e| io_failure(target, "write", e))
}

/// Removes a confined file (a symlink is removed itself, never followed).
pub(crate) fn remove_confined(dir: &RootDir, target: &Resolved) -> Result<(), ToolFailure> {
    match dir.remove_file(&target.rel) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_failure(target, "delete", e)),
        _ => Ok(()),
    }
}

/// An I/O error on a confined path: a refusal when the path changed into a symlink or out
/// of the root since it was checked, else a plain error.
fn io_failure(target: &Resolved, what: &str, e: std::io::Error) -> ToolFailure {
    if beneath::is_escape(&e) {
        ToolFailure::Refused(ConfineError::SymlinkEscapes(target.display()))
    } else {
        ToolFailure::Error(format!("cannot {what} `{}`: {e}", target.display()))
    }
}

/// Reads a confined file, refusing ones too large to be source code worth showing whole,
/// and anything that is not a regular file.
pub(crate) fn read_bytes(dir: &RootDir, target: &Resolved) -> Result<Vec<u8>, ToolFailure> {
    use std::io::Read as _;
    let file = dir
        .open_read(&target.rel)
        .map_err(|e| io_failure(target, "read", e))?;
    let len = file
        .metadata()
        .map(|m| m.len())
        .map_err(|e| io_failure(target, "read", e))?;
    if len > MAX_FILE_BYTES {
        return Err(ToolFailure::Error(format!(
            "`{}` is too large ({len} bytes); use search, or run with head/sed",
            target.display()
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| io_failure(target, "read", e))?;
    Ok(bytes)
}
