//! `search`: a regular expression over the lines of every non-ignored text file.
//!
//! The `regex` crate runs in linear time, so a pathological pattern from the model cannot
//! hang the session; the compiled size is bounded as well.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};

use super::args::SearchArgs;
use super::files::walk;
use super::{ToolFailure, Workspace, truncate_head};
use crate::agent::confine::Access;

/// Most matches returned.
pub const MAX_MATCHES: usize = 100;
/// Longest line shown per match, in bytes.
pub const MAX_LINE_BYTES: usize = 240;
/// Matches past [`MAX_MATCHES`] are counted up to this many, then the search stops: the
/// model only needs to know the pattern is far too broad.
pub const MAX_COUNTED: usize = 10_000;
/// Files larger than this are skipped (generated or data files, rarely what is wanted).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

pub fn search(ws: &Workspace, args: &SearchArgs) -> Result<String, ToolFailure> {
    let regex = regex::RegexBuilder::new(&args.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolFailure::BadArguments {
            tool: "search".into(),
            message: format!("invalid regex: {e}"),
        })?;
    let target = ws
        .confinement()
        .resolve(args.path.as_deref().unwrap_or("."), Access::Read)?;
    if !target.exists {
        return Err(ToolFailure::Error(format!(
            "`{}` does not exist",
            target.display()
        )));
    }
    let cap = ws.limits().output_cap_bytes;
    let mut out = String::new();
    let mut shown = 0usize;
    let mut more = 0usize;
    for entry in walk(ws, &target.abs, None).flatten() {
        if more >= MAX_COUNTED {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) || !entry.path().starts_with(&target.abs)
        {
            continue;
        }
        if entry
            .metadata()
            .map(|m| m.len() > MAX_FILE_BYTES)
            .unwrap_or(true)
        {
            continue;
        }
        // Opened relative to the root's handle, refusing symlinks and anything but a
        // regular file: the walk's view may be stale by the time the file is opened.
        let Some(rel) = entry.path().strip_prefix(ws.root()).ok() else {
            continue;
        };
        let Ok(file) = ws.confinement().dir().open_read(rel) else {
            continue;
        };
        let mut reader = BufReader::new(file);
        if reader
            .fill_buf()
            .map(|head| head.contains(&0))
            .unwrap_or(true)
        {
            continue;
        }
        let rel = entry.path().strip_prefix(ws.root()).unwrap_or(entry.path());
        let mut buf = Vec::new();
        let mut number = 0usize;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            number += 1;
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if !regex.is_match(line) {
                continue;
            }
            if shown >= MAX_MATCHES || out.len() >= cap {
                more += 1;
                if more >= MAX_COUNTED {
                    break;
                }
                continue;
            }
            let shown_line = truncate_head(line, MAX_LINE_BYTES);
            let ellipsis = if shown_line.len() < line.len() {
                "…"
            } else {
                ""
            };
            let _ = writeln!(out, "{}:{number}: {shown_line}{ellipsis}", rel.display());
            shown += 1;
        }
    }
    if shown == 0 {
        return Ok(format!(
            "no matches for `{}` in {}",
            args.pattern,
            target.display()
        ));
    }
    let mut out = truncate_head(&out, cap).to_string();
    if more >= MAX_COUNTED {
        let _ = write!(
            out,
            "[at least {more} more matches not shown; the search stopped there. Narrow the pattern or the path]"
        );
    } else if more > 0 {
        let _ = write!(
            out,
            "[{more} more matches not shown; narrow the pattern or the path]"
        );
    }
    Ok(out)
}
