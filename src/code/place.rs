//! Where a reply's code goes: each block becomes the new content of one file.
//!
//! The rules, chosen so that a small model that writes only the function it changed cannot
//! break the rest of the file (the old loop's 1.5B dropped the file's imports in 9 sessions
//! and pasted the stub back in 44):
//! - a block for a file that does not exist yet, or in a language without a grammar here,
//!   is the whole file;
//! - a block in Python or Rust for an existing file is a set of definitions: each replaces
//!   the top-level definition of the same name (a Python method or a Rust `impl` function
//!   when no top-level one has the name), a new name is added before a Python
//!   `if __name__ == "__main__":` block or at the end, an import the file lacks is added
//!   after its imports, and everything else in the file stays; top-level statements of the
//!   block that define nothing (example calls, prints) are left out and the result says so;
//! - a SEARCH/REPLACE block replaces the text it quotes (exactly, else ignoring the ends of
//!   lines' whitespace);
//! - the result must parse: code that does not is never written, and the model is told the
//!   line.

use std::collections::BTreeMap;
use std::path::Path;

use super::reply::{Block, CodeReply, Replace};
use super::syntax::{self, ItemKind, Lang, Parsed};

/// A file's new content and what was done to get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub path: String,
    pub content: String,
    /// One line per change, for the model and the log: "replaced f", "added import os".
    pub notes: Vec<String>,
}

/// Why a reply's code was not written. Nothing of the reply is applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// The code does not parse.
    #[error("{0}")]
    Syntax(String),
    /// The code could not be tied to a file or a place in it.
    #[error("{0}")]
    Unplaced(String),
}

/// What placing needs to know about the repository.
pub trait Files {
    /// The file's text, `None` when it does not exist (or is not text).
    fn read(&self, path: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Files for F {
    fn read(&self, path: &str) -> Option<String> {
        self(path)
    }
}

/// Places every edit of `reply`. `targets` are the files the task is about (the first
/// prompt showed them as editable), used for a block that names no path.
pub fn place(
    reply: &CodeReply,
    files: &impl Files,
    targets: &[String],
) -> Result<Vec<Placed>, PlaceError> {
    // Current text per path as the edits are applied one after another.
    let mut state: BTreeMap<String, (Option<String>, Vec<String>)> = BTreeMap::new();
    let current = |path: &str, state: &mut BTreeMap<String, (Option<String>, Vec<String>)>| {
        state
            .entry(path.to_string())
            .or_insert_with(|| (files.read(path), Vec::new()))
            .0
            .clone()
    };
    for block in &reply.blocks {
        let path = block_path(block, files, targets)?;
        let before = current(&path, &mut state);
        let (content, notes) = place_block(&path, before.as_deref(), block)?;
        let entry = state.entry(path).or_insert((None, Vec::new()));
        entry.0 = Some(content);
        entry.1.extend(notes);
    }
    for r in &reply.replaces {
        let path = replace_path(r, targets)?;
        let before = current(&path, &mut state);
        let content = apply_replace(&path, before.as_deref(), r)?;
        let entry = state.entry(path).or_insert((None, Vec::new()));
        entry.0 = Some(content);
        entry.1.push("replaced the SEARCH text".into());
    }
    let mut out = Vec::new();
    for (path, (content, notes)) in state {
        let Some(content) = content else { continue };
        if notes.is_empty() {
            continue;
        }
        if let Some(lang) = Lang::of(Path::new(&path))
            && let Some(parsed) = syntax::parse(lang, &content)
            && let Some((line, text)) = parsed.error
        {
            return Err(PlaceError::Syntax(format!(
                "{path} would not parse as {} at line {line}: `{}`; nothing was written",
                lang.name(),
                text.trim()
            )));
        }
        out.push(Placed {
            path,
            content,
            notes,
        });
    }
    Ok(out)
}

fn normalise(path: &str) -> String {
    path.trim_start_matches("./").to_string()
}

fn block_path(block: &Block, files: &impl Files, targets: &[String]) -> Result<String, PlaceError> {
    if let Some(p) = &block.path {
        let p = normalise(p);
        // A bare file name that matches one target's name is that target.
        if !p.contains('/')
            && files.read(&p).is_none()
            && let Some(t) = targets
                .iter()
                .find(|t| t.rsplit('/').next() == Some(p.as_str()))
        {
            return Ok(t.clone());
        }
        return Ok(p);
    }
    match targets {
        [only] => Ok(only.clone()),
        [] => Err(PlaceError::Unplaced(
            "a code block names no file: put the file's path on the line above the ``` fence"
                .into(),
        )),
        several => {
            // The target that already defines what the block defines.
            let defined: Vec<&String> = several
                .iter()
                .filter(|t| {
                    let Some(lang) = Lang::of(Path::new(t.as_str())) else {
                        return false;
                    };
                    let (Some(text), Some(block)) =
                        (files.read(t), syntax::parse(lang, &block.code))
                    else {
                        return false;
                    };
                    let Some(file) = syntax::parse(lang, &text) else {
                        return false;
                    };
                    block
                        .items
                        .iter()
                        .filter_map(|i| i.name())
                        .any(|n| file.items.iter().any(|f| f.name() == Some(n)))
                })
                .collect();
            match defined.as_slice() {
                [one] => Ok((*one).clone()),
                _ => Err(PlaceError::Unplaced(format!(
                    "a code block names no file and could be for {}: put the file's path on the line above the ``` fence",
                    several.join(" or ")
                ))),
            }
        }
    }
}

fn replace_path(r: &Replace, targets: &[String]) -> Result<String, PlaceError> {
    match (&r.path, targets) {
        (Some(p), _) => Ok(normalise(p)),
        (None, [only]) => Ok(only.clone()),
        _ => Err(PlaceError::Unplaced(
            "a SEARCH/REPLACE block names no file: put the file's path on the line above `<<<<<<< SEARCH`"
                .into(),
        )),
    }
}

fn apply_replace(path: &str, before: Option<&str>, r: &Replace) -> Result<String, PlaceError> {
    let Some(text) = before else {
        if r.search.trim().is_empty() {
            return Ok(r.replace.clone());
        }
        return Err(PlaceError::Unplaced(format!(
            "{path} does not exist, so its SEARCH text cannot be found; to create it, write the whole file in a code block"
        )));
    };
    if r.search.is_empty() {
        return Ok(format!("{text}{}", r.replace));
    }
    if let Some(i) = text.find(&r.search) {
        return Ok(format!(
            "{}{}{}",
            &text[..i],
            r.replace,
            &text[i + r.search.len()..]
        ));
    }
    // Line by line, ignoring whitespace at the ends of lines.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let want: Vec<&str> = r.search.lines().map(str::trim).collect();
    if !want.is_empty() {
        for start in 0..lines.len() {
            let end = start + want.len();
            if end > lines.len() {
                break;
            }
            if lines[start..end]
                .iter()
                .zip(&want)
                .all(|(a, b)| a.trim() == *b)
            {
                let head: String = lines[..start].concat();
                let tail: String = lines[end..].concat();
                return Ok(format!("{head}{}{tail}", r.replace));
            }
        }
    }
    Err(PlaceError::Unplaced(format!(
        "the SEARCH text is not in {path}; copy the lines exactly as the file has them, or write the whole definition instead"
    )))
}

fn place_block(
    path: &str,
    before: Option<&str>,
    block: &Block,
) -> Result<(String, Vec<String>), PlaceError> {
    let lang = Lang::of(Path::new(path));
    let existing = before.filter(|t| !t.trim().is_empty());
    let (Some(lang), Some(text)) = (lang, existing) else {
        return Ok((block.code.clone(), vec![format!("wrote {path}")]));
    };
    let parsed_block = parse(lang, &block.code)?;
    if let Some((line, text)) = &parsed_block.error {
        return Err(PlaceError::Syntax(format!(
            "line {line} of the code block for {path} does not parse as {}: `{}`; nothing was written. Write whole definitions, from the `def` or `fn` line, indented as in the file",
            lang.name(),
            text.trim()
        )));
    }
    let defines = parsed_block
        .items
        .iter()
        .any(|i| matches!(i.kind, ItemKind::Definition(_) | ItemKind::Import));
    if !defines {
        return Err(PlaceError::Unplaced(format!(
            "the code block for {path} defines nothing; write the whole function (from its `{}` line), not only its body or a call",
            if lang == Lang::Python { "def" } else { "fn" }
        )));
    }
    splice(lang, text, &block.code, &parsed_block)
}

fn parse(lang: Lang, text: &str) -> Result<Parsed, PlaceError> {
    syntax::parse(lang, text).ok_or_else(|| {
        PlaceError::Unplaced(format!("the {} grammar could not be loaded", lang.name()))
    })
}

/// Replaces, adds and imports the block's items in `text`.
fn splice(
    lang: Lang,
    text: &str,
    code: &str,
    block: &Parsed,
) -> Result<(String, Vec<String>), PlaceError> {
    let mut out = text.to_string();
    let mut notes = Vec::new();
    let mut left_out = 0;
    let sep = if lang == Lang::Python {
        "\n\n\n"
    } else {
        "\n\n"
    };
    // Imports first, so byte ranges of definitions are taken from the file as it then is.
    for item in &block.items {
        if item.kind != ItemKind::Import {
            continue;
        }
        let import = code[item.range.clone()].trim_end();
        let file = parse(lang, &out)?;
        let has = file
            .items
            .iter()
            .any(|i| i.kind == ItemKind::Import && squash(&out[i.range.clone()]) == squash(import));
        if has {
            continue;
        }
        let at = match file.items.iter().rfind(|i| i.kind == ItemKind::Import) {
            Some(last) => line_end(&out, last.range.end),
            None => after_docstring(lang, &out, &file),
        };
        out.insert_str(at, &format!("{import}\n"));
        notes.push(format!("added `{}`", squash(import)));
    }
    for item in &block.items {
        let new = code[item.range.clone()].trim_end();
        match &item.kind {
            ItemKind::Import => {}
            ItemKind::Other => left_out += 1,
            ItemKind::Definition(name) => {
                let file = parse(lang, &out)?;
                // The file's own tests are the check's: a block's `mod tests` never replaces
                // them (the 1.5B rewrote the tests of a Rust task beside its fix).
                if lang == Lang::Rust
                    && name == "tests"
                    && file.items.iter().any(|i| i.name() == Some("tests"))
                {
                    if out.contains(new) {
                        notes.push("tests unchanged".into());
                    } else {
                        notes.push(
                            "kept the file's mod tests (a block may not replace them)".into(),
                        );
                    }
                    continue;
                }
                if let Some(old) = file.items.iter().find(|i| i.name() == Some(name)) {
                    let range = old.range.clone();
                    let new = keep_docstring(lang, &out[range.clone()], new);
                    if out[range.clone()].trim_end() != new {
                        out.replace_range(range, &new);
                        notes.push(format!("replaced {name}"));
                    } else {
                        notes.push(format!("{name} unchanged"));
                    }
                } else if let Some(m) = file.methods.iter().find(|m| &m.name == name) {
                    let old = indent(&out[m.range.clone()], "");
                    let indented = indent(&keep_docstring(lang, &old, new), &m.indent);
                    out.replace_range(m.range.clone(), indented.trim_end());
                    notes.push(format!("replaced method {name}"));
                } else {
                    let main = file
                        .items
                        .iter()
                        .find(|i| i.name().is_some_and(|n| n.starts_with("if __name__")));
                    match main {
                        Some(m) => {
                            out.insert_str(m.range.start, &format!("{new}{sep}"));
                        }
                        None => {
                            let trimmed = out.trim_end().len();
                            out.truncate(trimmed);
                            out.push_str(&format!("{sep}{new}\n"));
                        }
                    }
                    notes.push(format!("added {name}"));
                }
            }
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if left_out > 0 {
        notes.push(format!(
            "left out {left_out} top-level statement{} that define{} nothing",
            if left_out == 1 { "" } else { "s" },
            if left_out == 1 { "s" } else { "" }
        ));
    }
    Ok((out, notes))
}

/// A Python definition written without the docstring of the one it replaces gets that
/// docstring back: a junior asked for the function's code often leaves it out, and the
/// user's documentation should not be lost to an edit of the body.
fn keep_docstring(lang: Lang, old: &str, new: &str) -> String {
    if lang != Lang::Python {
        return new.to_string();
    }
    let (Some((_, Some(doc))), Some((at, None))) =
        (syntax::python_body(old), syntax::python_body(new))
    else {
        return new.to_string();
    };
    let doc_text = &old[doc];
    let new_indent: String = new[at..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let old_indent: String = doc_text
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let moved: String = doc_text
        .split_inclusive('\n')
        .map(|l| match l.strip_prefix(old_indent.as_str()) {
            Some(rest) => format!("{new_indent}{rest}"),
            None => l.to_string(),
        })
        .collect();
    let moved = if moved.ends_with('\n') {
        moved
    } else {
        format!("{moved}\n")
    };
    format!("{}{moved}{}", &new[..at], &new[at..])
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i + 1)
}

/// Where the first import goes in a file with none: after a Python module docstring.
fn after_docstring(lang: Lang, text: &str, file: &Parsed) -> usize {
    if lang == Lang::Python
        && let Some(first) = file.items.first()
        && first.kind == ItemKind::Other
    {
        let t = text[first.range.clone()].trim_start();
        if t.starts_with("\"\"\"") || t.starts_with("'''") || t.starts_with('"') {
            return line_end(text, first.range.end);
        }
    }
    0
}

/// Re-indents a definition written at the top level to sit at `prefix`.
fn indent(code: &str, prefix: &str) -> String {
    let base = code
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    code.lines()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                format!("{prefix}{}", &l[base.min(l.len() - l.trim_start().len())..])
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "place_tests.rs"]
mod tests;
