//! The junior's first message under the `code` protocol: the task, the files it is about in
//! full, and a short map of the rest of the repository.
//!
//! The old loop sent the task sentence alone: the 0.5B never saw the file it had to change,
//! went looking for the prompt example's `calc.py` in 47 sessions and asked for the file's
//! name 53 times. Which files are "about" the task: those the task names, those the check
//! command names (or, for `unittest`/`pytest` without arguments, the test files they would
//! discover), and the Python modules those import. Files under `agent.protected` (the
//! check's tests) are shown read-only when `show_tests` is set, otherwise only named in the
//! map. Code is shown without line numbers: the old loop's 1.5B pasted `read_file`'s
//! numbered lines back into its file.

use std::path::Path;

use super::syntax::{self, ItemKind, Lang};

/// What the brief is built from.
pub struct BriefInput<'a> {
    pub task: &'a str,
    pub check: Option<&'a str>,
    /// Every file of the repository (relative paths, `/`-separated), sorted.
    pub paths: &'a [String],
    /// Whether a path is protected (`agent.protected`).
    pub protected: &'a dyn Fn(&str) -> bool,
    /// Show protected files the check uses, read-only.
    pub show_tests: bool,
    /// Most bytes of file text to include in full; the rest goes into the map.
    pub budget_bytes: usize,
    /// The reader writes code blocks (`code` protocol) rather than calling tools: the brief
    /// then says the check runs after each edit and ends with how to reply.
    pub writes_code: bool,
    /// Tell the reader it may reply `ASK: <question>` instead of code
    /// (`policy.junior_may_ask`).
    pub invite_questions: bool,
}

/// The first message and the files it offers for editing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    pub message: String,
    /// Files shown in full and open to edits, in the order shown.
    pub targets: Vec<String>,
    /// Protected files shown read-only.
    pub shown_read_only: Vec<String>,
}

/// Most files the map lists.
const MAP_FILES: usize = 60;
/// Most definitions the map lists per file.
const MAP_DEFS: usize = 12;

/// Builds the brief; `read` gives a file's text.
pub fn brief(input: &BriefInput, read: &dyn Fn(&str) -> Option<String>) -> Brief {
    let mut about: Vec<String> = Vec::new();
    let push = |p: &str, about: &mut Vec<String>| {
        if !about.iter().any(|a| a == p) {
            about.push(p.to_string());
        }
    };
    for p in named_in(input.task, input.paths) {
        push(&p, &mut about);
    }
    let check_files = input
        .check
        .map(|c| check_files(c, input.paths))
        .unwrap_or_default();
    for p in &check_files {
        push(p, &mut about);
    }
    // The modules the shown files import (one level), so `from solution import *` in the
    // test brings `solution.py` even when the test itself is withheld.
    let mut i = 0;
    while i < about.len() {
        if let Some(text) = read(&about[i]) {
            for m in python_imports(&about[i], &text, input.paths) {
                push(&m, &mut about);
            }
        }
        i += 1;
        if i > 50 {
            break;
        }
    }
    let mut targets = Vec::new();
    let mut read_only = Vec::new();
    let mut shown = String::new();
    let mut used = 0usize;
    for p in &about {
        let protected = (input.protected)(p);
        if protected && !input.show_tests {
            continue;
        }
        let Some(text) = read(p) else { continue };
        if used + text.len() > input.budget_bytes {
            continue;
        }
        used += text.len();
        let fence = Lang::of(Path::new(p)).map_or("", Lang::fence);
        let label = if protected {
            read_only.push(p.clone());
            format!("{p} (the check's tests: read-only)")
        } else {
            targets.push(p.clone());
            p.clone()
        };
        let body = if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        };
        shown.push_str(&format!("{label}\n```{fence}\n{body}```\n\n"));
    }
    let mut message = format!("Task: {}\n\n", input.task.trim());
    match (input.check, input.writes_code) {
        (Some(check), true) => message.push_str(&format!(
            "After each edit you send, the check `{check}` runs; the task is done when it passes.\n\n"
        )),
        (Some(check), false) => message.push_str(&format!(
            "The task is done when the check `{check}` passes.\n\n"
        )),
        (None, _) => {}
    }
    message.push_str(&shown);
    let map = map(input, read, &targets, &read_only);
    if !map.is_empty() {
        message.push_str("Other files in the repository:\n");
        message.push_str(&map);
        message.push('\n');
    }
    if input.writes_code {
        message.push_str(match targets.as_slice() {
            [] => "Write the code the task needs, each block under its file's path.",
            [_] => "Complete the code: reply with the whole definition of each function you write or change, in one fenced code block.",
            _ => "Complete the code: reply with the whole definition of each function you write or change, each block under its file's path.",
        });
        if input.invite_questions {
            message.push_str(INVITATION);
        }
    }
    Brief {
        message,
        targets,
        shown_read_only: read_only,
    }
}

fn map(
    input: &BriefInput,
    read: &dyn Fn(&str) -> Option<String>,
    targets: &[String],
    read_only: &[String],
) -> String {
    let mut out = String::new();
    for p in input
        .paths
        .iter()
        .filter(|p| !targets.contains(p) && !read_only.contains(p))
        .take(MAP_FILES)
    {
        let mut line = format!("- {p}");
        if (input.protected)(p) {
            line.push_str(" (protected: the check's tests)");
        }
        if let Some(lang) = Lang::of(Path::new(p))
            && let Some(text) = read(p)
            && let Some(parsed) = syntax::parse(lang, &text)
        {
            let defs: Vec<String> = syntax::signatures(&parsed, &text)
                .into_iter()
                .take(MAP_DEFS)
                .collect();
            if !defs.is_empty() {
                line.push_str(": ");
                line.push_str(&defs.join("; "));
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    if input.paths.len() > MAP_FILES + targets.len() + read_only.len() {
        out.push_str("- …\n");
    }
    out
}

/// How the junior may ask (`policy.junior_may_ask`): the `ASK:` line the reply reader
/// already takes ([`super::reply`]).
pub const INVITATION: &str = "\nIf the task leaves out a detail you need and cannot decide yourself, reply with one line `ASK: <your question>` instead of code; the user answers it.";

/// Repository files the task text names, by path or by file name.
fn named_in(task: &str, paths: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for word in task.split(|c: char| c.is_whitespace() || "`'\"(),;:".contains(c)) {
        let w = word
            .trim_end_matches(['.', '!', '?'])
            .trim_start_matches("./");
        if w.is_empty() {
            continue;
        }
        let hit = paths.iter().find(|p| p.as_str() == w).or_else(|| {
            let mut named = paths.iter().filter(|p| p.rsplit('/').next() == Some(w));
            match (named.next(), named.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        });
        if let Some(p) = hit
            && !out.contains(p)
        {
            out.push(p.clone());
        }
    }
    out
}

/// The files a check command runs: named on its command line, else the test files
/// `unittest` or `pytest` would discover at the root.
fn check_files(check: &str, paths: &[String]) -> Vec<String> {
    let named = named_in(check, paths);
    if !named.is_empty() {
        return named;
    }
    if check.contains("unittest") || check.contains("pytest") {
        return paths
            .iter()
            .filter(|p| {
                let name = p.rsplit('/').next().unwrap_or(p);
                name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
            })
            .take(4)
            .cloned()
            .collect();
    }
    Vec::new()
}

/// The repository's Python modules that `path` imports.
fn python_imports(path: &str, text: &str, paths: &[String]) -> Vec<String> {
    if Lang::of(Path::new(path)) != Some(Lang::Python) {
        return Vec::new();
    }
    let Some(parsed) = syntax::parse(Lang::Python, text) else {
        return Vec::new();
    };
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for item in parsed.items.iter().filter(|i| i.kind == ItemKind::Import) {
        let stmt = &text[item.range.clone()];
        let words: Vec<&str> = stmt
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .collect();
        let modules: Vec<&str> = match words.first() {
            Some(&"from") => words.get(1).into_iter().copied().collect(),
            Some(&"import") => words[1..].iter().copied().filter(|w| *w != "as").collect(),
            _ => Vec::new(),
        };
        for m in modules {
            let rel = m.trim_start_matches('.').replace('.', "/");
            for candidate in [
                format!("{rel}.py"),
                format!("{rel}/__init__.py"),
                if dir.is_empty() {
                    String::new()
                } else {
                    format!("{dir}/{rel}.py")
                },
            ] {
                if !candidate.is_empty() && paths.contains(&candidate) && !out.contains(&candidate)
                {
                    out.push(candidate);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(p: &str) -> Option<String> {
        match p {
            "solution.py" => {
                Some("def f(x):\n    \"\"\"Double.\"\"\"\n    raise NotImplementedError\n".into())
            }
            "test_solution.py" => {
                Some("from solution import *\n\ndef check(c):\n    assert c(2) == 4\n".into())
            }
            "util/helpers.py" => Some("def g():\n    pass\n\nclass H:\n    pass\n".into()),
            _ => None,
        }
    }

    fn paths() -> Vec<String> {
        ["solution.py", "test_solution.py", "util/helpers.py"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn the_file_under_test_is_shown_whole_and_the_test_is_withheld_by_default() {
        let paths = paths();
        let protected = |p: &str| p.starts_with("test_");
        let input = BriefInput {
            task: "Implement `f` in solution.py as its docstring describes.",
            check: Some("python3 test_solution.py"),
            paths: &paths,
            protected: &protected,
            show_tests: false,
            writes_code: true,
            invite_questions: false,
            budget_bytes: 10_000,
        };
        let b = brief(&input, &repo);
        assert_eq!(b.targets, ["solution.py"]);
        assert!(
            b.message.contains("solution.py\n```python\ndef f(x):\n"),
            "{}",
            b.message
        );
        assert!(!b.message.contains("assert c(2)"), "{}", b.message);
        assert!(
            b.message.contains("- test_solution.py (protected"),
            "{}",
            b.message
        );
        assert!(
            b.message.contains("- util/helpers.py: def g():; class H:"),
            "{}",
            b.message
        );
        assert!(!b.message.contains("   1 "), "no line numbers");
        let shown = BriefInput {
            show_tests: true,
            ..input
        };
        let b = brief(&shown, &repo);
        assert_eq!(b.shown_read_only, ["test_solution.py"]);
        assert!(b.message.contains("assert c(2) == 4"));
    }

    #[test]
    fn imports_of_the_check_bring_the_module_under_test() {
        let paths = paths();
        let protected = |_: &str| false;
        let input = BriefInput {
            task: "Make the tests pass.",
            check: Some("python3 -m unittest -q"),
            paths: &paths,
            protected: &protected,
            show_tests: false,
            writes_code: true,
            invite_questions: false,
            budget_bytes: 10_000,
        };
        let b = brief(&input, &repo);
        assert_eq!(b.targets, ["test_solution.py", "solution.py"]);
    }
}
