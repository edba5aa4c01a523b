//! A tolerant parser of unified diffs as models write them.
//!
//! Models get hunk line counts wrong, drop the leading space of blank context lines, omit
//! the `diff --git` line and the `a/`/`b/` prefixes. None of that changes what the patch
//! means, so the parser recounts hunks from their bodies and accepts every spelling of the
//! headers; only the text of the lines must be right.

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

/// One `@@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based line where the old side starts, as the header claims (a hint only).
    pub old_start: usize,
    /// The `@@ ... @@` line, for messages.
    pub header: String,
    pub lines: Vec<HunkLine>,
    /// `\ No newline at end of file` followed the old side's last line.
    pub old_no_newline: bool,
    /// `\ No newline at end of file` followed the new side's last line.
    pub new_no_newline: bool,
}

impl Hunk {
    /// The lines the file must contain (context and removals).
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    /// The lines that replace them (context and additions); the parser's tests read a hunk
    /// back through it.
    #[cfg(test)]
    pub fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Add(s) => Some(s.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

/// The changes to one file. `None` paths are `/dev/null` (creation or deletion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub old_path: Option<String>,
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
}

/// Why a patch text could not be parsed at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the patch has no `--- old` / `+++ new` file headers")]
    NoFiles,
    #[error("line {line}: `---` header without a following `+++` header")]
    MissingNewHeader { line: usize },
    #[error("line {line}: malformed hunk header `{text}` (expected `@@ -a,b +c,d @@`)")]
    BadHunkHeader { line: usize, text: String },
    #[error("line {line}: `{path}` has a header but no hunks")]
    NoHunks { line: usize, path: String },
    #[error(
        "line {line}: unexpected line in a hunk: `{text}` (lines start with ' ', '-', '+' or '\\')"
    )]
    BadHunkLine { line: usize, text: String },
}

/// Parses every file section of `text`.
pub fn parse(text: &str) -> Result<Vec<FilePatch>, ParseError> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_file_header(&lines, i) {
            if lines[i].starts_with("--- ") {
                return Err(ParseError::MissingNewHeader { line: i + 1 });
            }
            i += 1;
            continue;
        }
        let header_line = i + 1;
        let old = header_path(&lines[i][4..]);
        let new = header_path(&lines[i + 1][4..]);
        let (old_path, new_path) = strip_prefixes(old, new);
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let (hunk, next) = parse_hunk(&lines, i)?;
            hunks.push(hunk);
            i = next;
        }
        if hunks.is_empty() {
            let path = new_path.clone().or(old_path.clone()).unwrap_or_default();
            return Err(ParseError::NoHunks {
                line: header_line,
                path,
            });
        }
        files.push(FilePatch {
            old_path,
            new_path,
            hunks,
        });
    }
    if files.is_empty() {
        return Err(ParseError::NoFiles);
    }
    Ok(files)
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// The path of a `---`/`+++` header, without a trailing timestamp; `None` for /dev/null.
fn header_path(raw: &str) -> Option<String> {
    let path = raw.split('\t').next().unwrap_or(raw).trim();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    (path != "/dev/null" && !path.is_empty()).then(|| path.to_string())
}

/// Drops git's `a/` and `b/` prefixes when the headers use them.
fn strip_prefixes(old: Option<String>, new: Option<String>) -> (Option<String>, Option<String>) {
    let old_ok = old.as_deref().is_none_or(|p| p.starts_with("a/"));
    let new_ok = new.as_deref().is_none_or(|p| p.starts_with("b/"));
    if old_ok && new_ok && (old.is_some() || new.is_some()) {
        let strip = |p: Option<String>| p.map(|s| s[2..].to_string());
        (strip(old), strip(new))
    } else {
        (old, new)
    }
}

fn parse_hunk(lines: &[&str], start: usize) -> Result<(Hunk, usize), ParseError> {
    let header = lines[start];
    let old_start = parse_old_start(header).ok_or_else(|| ParseError::BadHunkHeader {
        line: start + 1,
        text: header.to_string(),
    })?;
    let mut hunk = Hunk {
        old_start,
        header: header.to_string(),
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
    };
    // A removed `-- x` line followed by an added `++ y` line looks like the next file's
    // `--- x`/`+++ y` headers. Real headers are followed by a hunk; failing that, the
    // header's counts (often wrong in a model's patch, so used only here) decide.
    let (old_count, new_count) = parse_counts(header).unwrap_or((0, 0));
    let (mut old_seen, mut new_seen) = (0usize, 0usize);
    let mut i = start + 1;
    while i < lines.len() {
        let line = lines[i];
        let body_expected = old_seen < old_count && new_seen < new_count;
        let hunk_follows = lines.get(i + 2).is_some_and(|l| l.starts_with("@@"));
        if line.starts_with("@@")
            || line.starts_with("diff ")
            || (is_file_header(lines, i) && (hunk_follows || !body_expected))
        {
            break;
        }
        match line.as_bytes().first() {
            Some(b' ') | None => {
                old_seen += 1;
                new_seen += 1;
            }
            Some(b'-') => old_seen += 1,
            Some(b'+') => new_seen += 1,
            _ => {}
        }
        match line.chars().next() {
            Some(' ') => hunk.lines.push(HunkLine::Context(line[1..].to_string())),
            Some('-') => hunk.lines.push(HunkLine::Remove(line[1..].to_string())),
            Some('+') => hunk.lines.push(HunkLine::Add(line[1..].to_string())),
            Some('\\') => match hunk.lines.last() {
                Some(HunkLine::Remove(_)) => hunk.old_no_newline = true,
                Some(HunkLine::Add(_)) => hunk.new_no_newline = true,
                Some(HunkLine::Context(_)) => {
                    hunk.old_no_newline = true;
                    hunk.new_no_newline = true;
                }
                None => {}
            },
            // A blank line whose leading space was lost.
            None => hunk.lines.push(HunkLine::Context(String::new())),
            Some(_) => {
                // Trailing prose after the last hunk ends the patch; inside a file it is an error.
                if lines[i..]
                    .iter()
                    .any(|l| l.starts_with("@@") || l.starts_with("--- "))
                {
                    return Err(ParseError::BadHunkLine {
                        line: i + 1,
                        text: line.to_string(),
                    });
                }
                break;
            }
        }
        i += 1;
    }
    Ok((hunk, i))
}

/// The `b` and `d` of `@@ -a,b +c,d @@` (a missing count is 1).
fn parse_counts(header: &str) -> Option<(usize, usize)> {
    let rest = header.strip_prefix("@@")?.trim_start();
    let mut ranges = rest.split_whitespace();
    let count = |range: &str| -> Option<usize> {
        match range.split_once(',') {
            Some((_, n)) => n.parse().ok(),
            None => Some(1),
        }
    };
    let old = count(ranges.next()?.strip_prefix('-')?)?;
    let new = count(ranges.next()?.strip_prefix('+')?)?;
    Some((old, new))
}

/// The `a` of `@@ -a,b +c,d @@` (also `@@ -a +c @@`).
fn parse_old_start(header: &str) -> Option<usize> {
    let rest = header.strip_prefix("@@")?.trim_start();
    let old = rest.strip_prefix('-')?;
    let end = old.find([',', ' '])?;
    old[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_git_diff_with_prefixes_and_wrong_counts_parses() {
        let text = "diff --git a/src/x.rs b/src/x.rs\nindex 1..2 100644\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -3,9 +3,9 @@ fn f() {\n a\n-b\n+c\n\n d\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].old_path.as_deref(), Some("src/x.rs"));
        assert_eq!(files[0].new_path.as_deref(), Some("src/x.rs"));
        let h = &files[0].hunks[0];
        assert_eq!(h.old_start, 3);
        assert_eq!(h.old_lines(), vec!["a", "b", "", "d"]);
        assert_eq!(h.new_lines(), vec!["a", "c", "", "d"]);
    }

    #[test]
    fn creation_deletion_and_plain_paths() {
        let text = "--- /dev/null\n+++ new.txt\n@@ -0,0 +1 @@\n+hello\n--- old.txt\t2024-01-01\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\\ No newline at end of file\n";
        let files = parse(text).expect("parses");
        assert_eq!(files[0].old_path, None);
        assert_eq!(files[0].new_path.as_deref(), Some("new.txt"));
        assert_eq!(files[1].old_path.as_deref(), Some("old.txt"));
        assert_eq!(files[1].new_path, None);
        assert!(files[1].hunks[0].old_no_newline);
    }

    #[test]
    fn removed_and_added_lines_that_look_like_file_headers_stay_in_the_hunk() {
        let text = "--- a/notes.md\n+++ b/notes.md\n@@ -1,2 +1,2 @@\n--- old rule\n+++ new rule\n same\n--- a/other\n+++ b/other\n@@ -1 +1 @@\n-x\n+y\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].hunks[0].old_lines(), vec!["-- old rule", "same"]);
        assert_eq!(files[0].hunks[0].new_lines(), vec!["++ new rule", "same"]);
        assert_eq!(files[1].new_path.as_deref(), Some("other"));
        // Overstated counts do not swallow the next file's headers.
        let text =
            "--- a/x\n+++ b/x\n@@ -1,9 +1,9 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].hunks[0].old_lines(), vec!["a"]);
    }

    #[test]
    fn malformed_patches_say_where() {
        assert_eq!(parse("just words"), Err(ParseError::NoFiles));
        assert_eq!(
            parse("--- a\n+++ b\n@@ nonsense @@\n x\n"),
            Err(ParseError::BadHunkHeader {
                line: 3,
                text: "@@ nonsense @@".into()
            })
        );
        assert!(matches!(
            parse("--- a\n+++ b\n"),
            Err(ParseError::NoHunks { line: 1, .. })
        ));
        assert!(matches!(
            parse("--- a\n+++ b\n@@ -1 +1 @@\n x\n*oops\n@@ -5 +5 @@\n y\n"),
            Err(ParseError::BadHunkLine { line: 5, .. })
        ));
    }
}
