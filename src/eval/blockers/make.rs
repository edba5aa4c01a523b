//! `handoff eval blockers make`: two sibling suites from HumanEval, one task each.
//!
//! `OUT/full` is every problem as the junior would see it in the blocker suite, nothing
//! removed; `OUT/blocked` is every problem that has a candidate detail
//! ([`super::detail`]) with the seed's choice taken out and registered as the task's one
//! blocker. Both hide the tests (they hold the examples and rules verbatim) and print only
//! the exception's name when they fail, so neither a `run` command nor a failed check
//! hands the junior what the operator was meant to be asked for. Running the 1.5B
//! single-shot over both and [`super::select`] then keeps the tasks whose detail is needed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::detail::{self, Kind};
use crate::eval::humaneval::{CHECK, ImportError, Problem, ensure_newline, task_slug};
use crate::eval::suite::Blocker;

/// What one problem became: recorded in `OUT/candidates.json`, read by `select`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Made {
    /// The task id in both suites (`humaneval-12`).
    pub id: String,
    pub task_id: String,
    /// How many details could have been removed.
    pub candidates: usize,
    /// The one the seed chose and `blocked` removed; `None`: the problem has no candidate
    /// and is only in `full`.
    pub chosen: Option<Chosen>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chosen {
    pub index: usize,
    pub kind: Kind,
    pub removed: String,
}

/// The file `select` reads back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub seed: u64,
    pub source: String,
    pub tasks: Vec<Made>,
}

pub const MANIFEST: &str = "candidates.json";

/// Words a question uses whatever it asks; never a blocker's phrase.
const STOPWORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "also",
    "always",
    "another",
    "any",
    "are",
    "because",
    "been",
    "before",
    "being",
    "both",
    "case",
    "cases",
    "does",
    "each",
    "either",
    "element",
    "elements",
    "else",
    "every",
    "from",
    "function",
    "given",
    "have",
    "input",
    "into",
    "its",
    "just",
    "list",
    "more",
    "most",
    "must",
    "need",
    "number",
    "numbers",
    "only",
    "other",
    "otherwise",
    "output",
    "return",
    "returned",
    "returns",
    "same",
    "should",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "value",
    "values",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "would",
    "write",
    "your",
];

/// Phrases that mark a question about examples.
const EXAMPLE_PHRASES: &[&str] = &[
    "example",
    "examples",
    "sample",
    "samples",
    "expected output",
    "expected outputs",
    "expected result",
    "expected results",
    "test case",
    "test cases",
    "input and output",
    "inputs and outputs",
    "doctest",
];

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The removed rule's own words: four letters or more, not a stop word, not in what the
/// junior still sees (the reduced prompt, whose words name the function and its
/// parameters). A question that uses one asks about something only the removed text says.
pub fn rule_phrases(removed: &str, remaining_prompt: &str) -> Vec<String> {
    let seen: BTreeSet<String> = words(remaining_prompt).collect();
    let mut out: Vec<String> = Vec::new();
    for w in words(removed) {
        let alphabetic = w.chars().all(|c| c.is_alphabetic());
        if w.len() >= 4
            && alphabetic
            && !STOPWORDS.contains(&w.as_str())
            && !seen.contains(&w)
            && !out.contains(&w)
        {
            out.push(w);
        }
    }
    out
}

/// The blocker a removed detail becomes.
pub fn blocker(kind: Kind, removed: &str, remaining_prompt: &str) -> Blocker {
    match kind {
        Kind::Examples => Blocker {
            id: "examples".into(),
            description: format!(
                "the docstring's examples (calls and their expected results): {removed}"
            ),
            answer: format!("The examples are:\n{removed}"),
            phrases: EXAMPLE_PHRASES.iter().map(|s| s.to_string()).collect(),
        },
        Kind::Rule => Blocker {
            id: "rule".into(),
            description: format!("a rule the docstring states: {removed}"),
            answer: removed.to_string(),
            phrases: {
                // A rule made only of words the prompt still shows: its own content words,
                // then the sentence itself, so the suite loads (a blocker needs a phrase).
                let own = rule_phrases(removed, remaining_prompt);
                let own = if own.is_empty() {
                    rule_phrases(removed, "")
                } else {
                    own
                };
                if own.is_empty() {
                    vec![removed.to_lowercase()]
                } else {
                    own
                }
            },
        },
    }
}

/// A test file that runs HumanEval's `check` and shows nothing of it when it fails.
fn quiet_test(p: &Problem) -> String {
    format!(
        "import sys\n\nfrom solution import *  # noqa: F401,F403 (tests may call helpers from the prompt)\n\n{}\n\n\
         if __name__ == \"__main__\":\n    try:\n        check({})\n    except Exception as e:  \
         # the test's lines hold the removed details: name the failure only\n        \
         print(\"hidden test failed:\", type(e).__name__)\n        sys.exit(1)\n    print(\"ok\")\n",
        p.test.trim_end(),
        p.entry_point
    )
}

fn task_toml(p: &Problem, slug: &str, blocker: Option<&Blocker>) -> String {
    let text = format!(
        "Implement `{}` in solution.py as its docstring describes; hidden tests check it \
         (`{CHECK}`).",
        p.entry_point
    );
    let mut doc = toml::Table::new();
    doc.insert("task".into(), text.into());
    doc.insert("repo".into(), format!("repos/{slug}").into());
    doc.insert("check".into(), CHECK.into());
    doc.insert("solution".into(), format!("solutions/{slug}").into());
    doc.insert("hidden".into(), format!("hidden/{slug}").into());
    if let Some(b) = blocker
        && let Ok(toml::Value::Table(t)) = toml::Value::try_from(b)
    {
        doc.insert(
            "blocker".into(),
            toml::Value::Array(vec![toml::Value::Table(t)]),
        );
    }
    let header = format!(
        "# Built from {} (HumanEval) by `eval blockers make`.\n",
        p.task_id
    );
    header + &toml::to_string(&doc).unwrap_or_default()
}

fn write(path: PathBuf, text: &str) -> Result<(), ImportError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|cause| ImportError::Write {
            path: dir.to_path_buf(),
            cause,
        })?;
    }
    std::fs::write(&path, text).map_err(|cause| ImportError::Write { path, cause })
}

/// Writes one task of a suite: the stub from `prompt`, the hidden quiet test, the
/// reference solution on the same prompt.
pub fn write_task(
    suite: &Path,
    p: &Problem,
    prompt: &str,
    blocker: Option<&Blocker>,
) -> Result<String, ImportError> {
    let slug = task_slug(&p.task_id);
    let prompt = ensure_newline(prompt);
    write(
        suite.join("repos").join(&slug).join("solution.py"),
        &format!("{prompt}    raise NotImplementedError\n"),
    )?;
    write(
        suite.join("hidden").join(&slug).join("test_solution.py"),
        &quiet_test(p),
    )?;
    write(
        suite.join("solutions").join(&slug).join("solution.py"),
        &format!("{prompt}{}", p.canonical_solution),
    )?;
    write(
        suite.join(format!("{slug}.toml")),
        &task_toml(p, &slug, blocker),
    )?;
    Ok(slug)
}

/// Writes `out/full`, `out/blocked` and `out/candidates.json`.
pub fn make(
    problems: &[Problem],
    seed: u64,
    source: &str,
    out: &Path,
) -> Result<Manifest, ImportError> {
    let mut tasks = Vec::with_capacity(problems.len());
    for p in problems {
        let id = write_task(&out.join("full"), p, &p.prompt, None)?;
        let cands = detail::candidates(p);
        let chosen = detail::pick(seed, &p.task_id, &cands).map(|index| {
            let removed = detail::remove(p, &cands[index]);
            (index, removed)
        });
        let chosen = match chosen {
            Some((index, removed)) => {
                let b = blocker(removed.kind, &removed.text, &removed.prompt);
                write_task(&out.join("blocked"), p, &removed.prompt, Some(&b))?;
                Some(Chosen {
                    index,
                    kind: removed.kind,
                    removed: removed.text,
                })
            }
            None => None,
        };
        tasks.push(Made {
            id,
            task_id: p.task_id.clone(),
            candidates: cands.len(),
            chosen,
        });
    }
    let manifest = Manifest {
        seed,
        source: source.to_string(),
        tasks,
    };
    let json = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    write(out.join(MANIFEST), &json)?;
    Ok(manifest)
}
