//! A junior's reply under the `code` protocol, read as a person would read it: prose, fenced
//! code blocks each tied to a path, SEARCH/REPLACE blocks, and one-line requests
//! (`RUN:`, `ASK:`, `GIVE UP:`).
//!
//! Accepted as real small models write it (seen on Qwen2.5-Coder 0.5B and 1.5B): a fence
//! with or without a language, the path in the fence's info string (`python solution.py`,
//! `solution.py`, `title="a.py"`), on the line above (`solution.py:`, `**solution.py**`,
//! `# File: solution.py`), or in a comment on the block's first line; a fence left open at
//! the end of the reply. A block with no path is placed later by what it defines.

/// One fenced block of code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The path the reply ties the block to, if it names one.
    pub path: Option<String>,
    /// The fence's language tag, lower case (`python`, `rust`, `` for none).
    pub lang: String,
    pub code: String,
}

/// One SEARCH/REPLACE edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replace {
    pub path: Option<String>,
    pub search: String,
    pub replace: String,
}

/// What a reply asks for, besides code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Run(String),
    Ask(String),
    GiveUp(String),
}

/// A reply, taken apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeReply {
    pub blocks: Vec<Block>,
    pub replaces: Vec<Replace>,
    pub requests: Vec<Request>,
}

impl CodeReply {
    pub fn has_edits(&self) -> bool {
        !self.blocks.is_empty() || !self.replaces.is_empty()
    }
}

/// Fence tags of text that is not code to place: shell sessions, program output.
const NOT_CODE: [&str; 9] = [
    "bash",
    "sh",
    "shell",
    "console",
    "text",
    "output",
    "plaintext",
    "txt",
    "pycon",
];

/// Reads a reply. Never fails: what cannot be read is simply not there, and the caller
/// says so to the model.
pub fn read(text: &str) -> CodeReply {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = CodeReply::default();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if is_search_start(trimmed) {
            let path = path_above(&lines, i);
            let (replace, next) = read_replace(&lines, i, path);
            out.replaces.extend(replace);
            i = next;
            continue;
        }
        if let Some(info) = fence_open(trimmed) {
            let fence = &trimmed[..trimmed.len() - info.len()];
            let mut body = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && !is_fence_close(lines[j].trim_start(), fence) {
                body.push(lines[j]);
                j += 1;
            }
            if body.iter().any(|l| is_search_start(l.trim_start())) {
                // SEARCH/REPLACE inside a fence: the path is the info string's or above.
                let path = info_path(info).or_else(|| path_above(&lines, i));
                let mut k = 0;
                while k < body.len() {
                    if is_search_start(body[k].trim_start()) {
                        let here = path_above(&body, k).or_else(|| path.clone());
                        let (replace, next) = read_replace(&body, k, here);
                        out.replaces.extend(replace);
                        k = next;
                    } else {
                        k += 1;
                    }
                }
            } else {
                let lang = info
                    .split(|c: char| c.is_whitespace() || c == ':' || c == '{')
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let lang = if looks_like_path(&lang) {
                    String::new()
                } else {
                    lang
                };
                let (first_path, body) = comment_path(&body);
                let path = info_path(info)
                    .or_else(|| path_above(&lines, i))
                    .or(first_path);
                let code = body.join("\n");
                let skip = NOT_CODE.contains(&lang.as_str()) && path.is_none();
                if !skip && !code.trim().is_empty() {
                    out.blocks.push(Block {
                        path,
                        lang,
                        code: format!("{code}\n"),
                    });
                }
            }
            i = j + 1;
            continue;
        }
        if let Some(r) = request(trimmed) {
            out.requests.push(r);
        }
        i += 1;
    }
    out
}

fn fence_open(line: &str) -> Option<&str> {
    let ticks = line.len() - line.trim_start_matches('`').len();
    let tildes = line.len() - line.trim_start_matches('~').len();
    let n = ticks.max(tildes);
    (n >= 3).then(|| line[n..].trim())
}

fn is_fence_close(line: &str, fence: &str) -> bool {
    let marker = fence.trim_end();
    let c = marker.chars().next().unwrap_or('`');
    let n = marker.chars().take_while(|x| *x == c).count().max(3);
    let run = line.chars().take_while(|x| *x == c).count();
    run >= n && line[run..].trim().is_empty()
}

fn is_search_start(line: &str) -> bool {
    line.starts_with("<<<<<<<") && line.contains("SEARCH")
}

fn read_replace(lines: &[&str], start: usize, path: Option<String>) -> (Option<Replace>, usize) {
    let mut search = Vec::new();
    let mut replace = Vec::new();
    let mut j = start + 1;
    let mut in_replace = false;
    while j < lines.len() {
        let t = lines[j].trim();
        if !in_replace && t.starts_with("=======") {
            in_replace = true;
        } else if in_replace && t.starts_with(">>>>>>>") {
            let r = Replace {
                path,
                search: join(&search),
                replace: join(&replace),
            };
            return (Some(r), j + 1);
        } else if in_replace {
            replace.push(lines[j]);
        } else {
            search.push(lines[j]);
        }
        j += 1;
    }
    // An unclosed block is not an edit.
    (None, j)
}

fn join(lines: &[&str]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("{}\n", lines.join("\n"))
    }
}

/// Whether a word looks like a file path: a name with an extension of letters, or with a
/// directory, and no spaces.
pub fn looks_like_path(word: &str) -> bool {
    if word.is_empty() || word.len() > 200 || word.contains(char::is_whitespace) {
        return false;
    }
    if word.contains("://") || word.starts_with('-') {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && !ext.is_empty()
                && ext.len() <= 6
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        }
        None => false,
    }
}

fn clean_word(w: &str) -> &str {
    w.trim_matches(|c: char| "*`'\"():,;#[]<>".contains(c))
        .trim_end_matches([':', '.', ','])
        .trim_matches(|c: char| "*`'\"".contains(c))
}

/// The path in a fence's info string: `python solution.py`, `solution.py`,
/// `python:solution.py`, `py title="solution.py"`, `{file=a.py}`.
fn info_path(info: &str) -> Option<String> {
    info.split(|c: char| c.is_whitespace() || c == ':' || c == '{' || c == '}')
        .map(|w| w.split_once('=').map_or(w, |(_, v)| v))
        .map(clean_word)
        .find(|w| looks_like_path(w))
        .map(str::to_string)
}

/// The path on the line above a fence (skipping one blank line): its last word that looks
/// like a path.
fn path_above(lines: &[&str], fence: usize) -> Option<String> {
    let mut k = fence;
    for _ in 0..2 {
        if k == 0 {
            return None;
        }
        k -= 1;
        let line = lines[k].trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with("```") || line.starts_with(">>>>>>>") {
            return None;
        }
        return line
            .split_whitespace()
            .map(clean_word)
            .rfind(|w| looks_like_path(w))
            .map(str::to_string);
    }
    None
}

/// A path named in a comment on the block's first line (`# solution.py`,
/// `// src/lib.rs`, `# File: a.py`); the comment stays in the code.
fn comment_path<'a>(body: &[&'a str]) -> (Option<String>, Vec<&'a str>) {
    let Some(first) = body.first() else {
        return (None, Vec::new());
    };
    let t = first.trim();
    let comment = t
        .strip_prefix('#')
        .or_else(|| t.strip_prefix("//"))
        .map(str::trim);
    let path = comment.and_then(|c| {
        let words: Vec<&str> = c.split_whitespace().collect();
        // Only a comment that is little more than the path: "# solution.py",
        // "# file: solution.py", not a sentence that mentions a file.
        (words.len() <= 2)
            .then(|| {
                words
                    .iter()
                    .map(|w| clean_word(w))
                    .find(|w| looks_like_path(w))
            })
            .flatten()
            .map(str::to_string)
    });
    (path, body.to_vec())
}

fn request(line: &str) -> Option<Request> {
    let t = line.trim_start_matches(['*', '-', '>', ' ']).trim();
    let (head, rest) = t.split_once(':')?;
    let head = head.trim_matches('*').trim().to_ascii_uppercase();
    let rest = rest
        .trim()
        .trim_start_matches('*')
        .trim()
        .trim_matches('`')
        .trim()
        .to_string();
    if rest.is_empty() && head != "GIVE UP" {
        return None;
    }
    match head.as_str() {
        "RUN" => Some(Request::Run(rest)),
        "ASK" => Some(Request::Ask(rest)),
        "GIVE UP" => Some(Request::GiveUp(rest)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_from_the_info_string_the_line_above_or_a_first_comment() {
        let r = read(
            "Here it is.\n```python solution.py\ndef f():\n    return 1\n```\n\n**b.py**:\n```\ndef g(): pass\n```\n```py\n# c.py\nx = 1\n```\n```python\ndef h(): pass\n",
        );
        let paths: Vec<Option<&str>> = r.blocks.iter().map(|b| b.path.as_deref()).collect();
        assert_eq!(
            paths,
            [Some("solution.py"), Some("b.py"), Some("c.py"), None]
        );
        assert_eq!(r.blocks[0].code, "def f():\n    return 1\n");
        assert_eq!(r.blocks[0].lang, "python");
        assert_eq!(
            r.blocks[3].code, "def h(): pass\n",
            "an unclosed fence at the end"
        );
    }

    #[test]
    fn shell_blocks_and_sentences_are_not_code_or_paths() {
        let r = read(
            "Run it with\n```bash\npython3 test.py\n```\nThe function in this file is fine.\n```python\nx = 1\n```\n",
        );
        assert_eq!(r.blocks.len(), 1);
        assert_eq!(r.blocks[0].path, None);
        assert!(!looks_like_path("e.g."));
        assert!(!looks_like_path("3.14"));
        assert!(looks_like_path("src/lib.rs"));
    }

    #[test]
    fn search_replace_inside_and_outside_fences() {
        let r = read(
            "a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```python\nb.py\n<<<<<<< SEARCH\ny = 1\n=======\n>>>>>>> REPLACE\n```\n",
        );
        assert_eq!(r.replaces.len(), 2);
        assert_eq!(r.replaces[0].path.as_deref(), Some("a.py"));
        assert_eq!(r.replaces[0].replace, "x = 2\n");
        assert_eq!(r.replaces[1].path.as_deref(), Some("b.py"));
        assert_eq!(r.replaces[1].replace, "");
        assert!(r.blocks.is_empty());
    }

    #[test]
    fn requests_are_one_line_each() {
        let r = read(
            "I cannot tell which format.\nASK: Should dates be ISO 8601?\n**RUN:** `ls -la`\nGIVE UP: no idea\nThe ratio: 3\n",
        );
        assert_eq!(
            r.requests,
            [
                Request::Ask("Should dates be ISO 8601?".into()),
                Request::Run("ls -la".into()),
                Request::GiveUp("no idea".into())
            ]
        );
    }
}
