//! The suite format: a directory of task files, each naming a template repository, the
//! task text, the check that labels the result, budgets, and the blockers the task text
//! deliberately leaves out (HiL-Bench's "registered blockers").
//!
//! A task file `SUITE/<id>.toml` (the id is the file stem):
//!
//! ```toml
//! task = "Make slugify() pass its tests."
//! repo = "repos/slugify"          # template directory, relative to the task file
//! check = "python3 -m unittest -q" # exit status 0 = correct
//! solution = "solutions/slugify"  # optional: files that make the check pass
//! hidden = "hidden/slugify"       # optional: tests laid over the repository only when
//!                                  # the check runs, so the junior cannot read the answer
//!
//! [budget]                         # optional; unset keys keep the config's values
//! max_steps = 12
//! token_budget = 6000
//! command_timeout_s = 120
//!
//! [[blocker]]                      # optional, any number
//! id = "separator"
//! description = "which character joins the words of a slug"
//! answer = "Use a hyphen."
//! phrases = ["separator", "hyphen", "underscore"]  # whole words of the question itself
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a suite could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("cannot read {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("suite {0} has no task files (*.toml other than suite.toml)")]
    Empty(PathBuf),
    #[error("`{0}` is not a shard: expected i/n with 0 <= i < n, e.g. 0/4")]
    Shard(String),
}

/// A detail removed from the task text on purpose: the operator knows it, the junior
/// has to ask for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blocker {
    pub id: String,
    /// What is missing, in words; the LLM judge reads it.
    pub description: String,
    /// What the operator says when asked about it.
    pub answer: String,
    /// A question (its own words, not its options or quotes) that contains one of these
    /// as whole words, case-insensitive, and no other blocker's, targets this blocker
    /// (see [`super::operator`]); topic phrases, not words any question may use.
    pub phrases: Vec<String>,
}

/// Per-task limits that override the config's `[agent]` values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_steps: Option<u32>,
    pub token_budget: Option<u64>,
    pub command_timeout_s: Option<u64>,
}

/// The task file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    task: String,
    repo: PathBuf,
    check: String,
    #[serde(default)]
    solution: Option<PathBuf>,
    #[serde(default)]
    hidden: Option<PathBuf>,
    #[serde(default)]
    budget: Budget,
    #[serde(default, rename = "blocker")]
    blockers: Vec<Blocker>,
}

/// One task with its paths resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: String,
    pub text: String,
    /// The template repository, copied fresh for every run.
    pub repo: PathBuf,
    pub check: String,
    /// Files that make the check pass, laid over the template (validates the suite).
    pub solution: Option<PathBuf>,
    /// Files copied into the repository right before each check (never shown to a model):
    /// how a blocker's hidden answer is tested without leaking it through the test files.
    pub hidden: Option<PathBuf>,
    pub budget: Budget,
    pub blockers: Vec<Blocker>,
}

/// A loaded suite: its name (the directory's) and its tasks sorted by id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suite {
    pub name: String,
    pub dir: PathBuf,
    pub tasks: Vec<Task>,
}

impl Suite {
    /// The task a session log ran: by the task text its `session_started` holds, else by
    /// the log file's stem (eval names each log after its task id).
    pub fn task_of_log(&self, text: Option<&str>, log: &Path) -> Option<&Task> {
        let text = text.map(str::trim).filter(|t| !t.is_empty());
        let stem = log
            .file_name()
            .map(|n| n.to_string_lossy().replace(".gz", "").replace(".jsonl", ""));
        self.tasks
            .iter()
            .find(|t| text.is_some_and(|x| x == t.text.trim()))
            .or_else(|| {
                self.tasks
                    .iter()
                    .find(|t| stem.as_deref() == Some(t.id.as_str()))
            })
    }

    /// Reads every `*.toml` in `dir` (not recursively; `suite.toml` is reserved for notes).
    pub fn load(dir: &Path) -> Result<Suite, SuiteError> {
        let read = |cause| SuiteError::Read {
            path: dir.to_path_buf(),
            cause,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(read)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|e| e == "toml")
                    && p.file_name().is_some_and(|n| n != "suite.toml")
                    && p.is_file()
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(SuiteError::Empty(dir.to_path_buf()));
        }
        let tasks = files
            .iter()
            .map(|f| load_task(f))
            .collect::<Result<Vec<_>, _>>()?;
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "suite".into());
        Ok(Suite {
            name,
            dir: dir.to_path_buf(),
            tasks,
        })
    }

    /// Keeps only the tasks of one shard (see [`Shard::select`]).
    pub fn shard(mut self, shard: Shard) -> Suite {
        self.tasks = shard.select(self.tasks);
        self
    }

    pub fn blockers(&self) -> usize {
        self.tasks.iter().map(|t| t.blockers.len()).sum()
    }
}

/// Reads and checks one task file.
pub fn load_task(path: &Path) -> Result<Task, SuiteError> {
    let text = std::fs::read_to_string(path).map_err(|cause| SuiteError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    let file: TaskFile = toml::from_str(&text).map_err(|e| SuiteError::Parse {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let invalid = |message: String| SuiteError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if file.task.trim().is_empty() {
        return Err(invalid("`task` is empty".into()));
    }
    if file.check.trim().is_empty() {
        return Err(invalid("`check` is empty".into()));
    }
    let repo = base.join(&file.repo);
    if !repo.is_dir() {
        return Err(invalid(format!(
            "`repo` {} is not a directory",
            repo.display()
        )));
    }
    let solution = file.solution.map(|s| base.join(s));
    let hidden = file.hidden.map(|s| base.join(s));
    for (key, dir) in [("solution", &solution), ("hidden", &hidden)] {
        if let Some(d) = dir
            && !d.is_dir()
        {
            return Err(invalid(format!(
                "`{key}` {} is not a directory",
                d.display()
            )));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for b in &file.blockers {
        if !seen.insert(b.id.as_str()) {
            return Err(invalid(format!("blocker `{}` is registered twice", b.id)));
        }
        if b.phrases.iter().all(|p| p.trim().is_empty()) {
            return Err(invalid(format!(
                "blocker `{}` needs at least one identifying phrase",
                b.id
            )));
        }
    }
    Ok(Task {
        id,
        text: file.task,
        repo,
        check: file.check,
        solution,
        hidden,
        budget: file.budget,
        blockers: file.blockers,
    })
}

/// One slice of a suite for job arrays (Slurm `--array`, Kubernetes indexed jobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// 0-based index of this slice.
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `i/n` (0-based i, as `SLURM_ARRAY_TASK_ID` with `--array=0-(n-1)` and
    /// Kubernetes' `JOB_COMPLETION_INDEX` count).
    pub fn parse(text: &str) -> Result<Shard, SuiteError> {
        let bad = || SuiteError::Shard(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Round-robin over the tasks sorted by id: task k goes to shard k mod n. Every
    /// machine computes the same split from the suite alone, the slices are disjoint and
    /// cover the suite, and their sizes differ by at most one.
    pub fn select(self, mut tasks: Vec<Task>) -> Vec<Task> {
        tasks.sort_by(|a, b| a.id.cmp(&b.id));
        tasks
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % self.count == self.index)
            .map(|(_, t)| t)
            .collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_syntax() {
        assert_eq!(
            Shard::parse("2/5").expect("ok"),
            Shard { index: 2, count: 5 }
        );
        for bad in ["5/5", "1/0", "x/2", "3", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_task_file_with_a_duplicate_blocker_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("r")).expect("mkdir");
        let text = "task = \"t\"\nrepo = \"r\"\ncheck = \"true\"\n\
                    [[blocker]]\nid = \"a\"\ndescription = \"d\"\nanswer = \"x\"\nphrases = [\"p\"]\n\
                    [[blocker]]\nid = \"a\"\ndescription = \"d\"\nanswer = \"y\"\nphrases = [\"q\"]\n";
        let path = dir.path().join("t.toml");
        std::fs::write(&path, text).expect("write");
        let err = load_task(&path).expect_err("duplicate").to_string();
        assert!(err.contains("registered twice"), "{err}");
    }
}
