//! `handoff eval examples`: how much the task's own examples tell, measured on HumanEval.
//!
//! Three questions, each answered with the product's own code (the parser of
//! [`crate::code::examples`], the sandboxed runner of [`crate::agent::examples`]):
//! how many prompts state examples the parser reads (and what it could not read); whether
//! the reference solutions pass them (a prompt's own mistakes show here); and, given session
//! logs, how well "the first reply passes its examples" predicts the hidden test's verdict
//! on that reply (AUROC with a bootstrap interval over tasks). No model runs and no hidden
//! test is read: the label comes from the logged `check_ran`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::humaneval::{Problem, ensure_newline, stub, task_slug, task_text};
use crate::agent::examples::run;
use crate::agent::tools::Workspace;
use crate::code::examples::{Extracted, Form, for_file};
use crate::config::AgentConfig;
use crate::log::LogReader;
use crate::metrics::Forecast;
use crate::metrics::ranking::auroc;
use crate::metrics::uncertainty::{Interval, bootstrap};
use crate::protocol::Event;

fn extracted(p: &Problem) -> Extracted {
    for_file(&task_text(p), &stub(p))
}

/// What the parser read from every prompt.
#[derive(Debug, Serialize)]
pub struct Coverage {
    pub tasks: usize,
    pub with_examples: usize,
    /// The tasks whose prompt states no example the parser reads.
    pub without: Vec<String>,
    pub examples: usize,
    pub by_form: BTreeMap<String, usize>,
    pub unread: Vec<UnreadLine>,
}

#[derive(Debug, Serialize)]
pub struct UnreadLine {
    pub task: String,
    pub line: usize,
    pub text: String,
    pub why: String,
}

/// The reference solutions against their prompts' examples.
#[derive(Debug, Serialize)]
pub struct ReferenceCheck {
    pub passed: usize,
    pub failed: Vec<String>,
}

/// "The first reply passes its examples" against the hidden verdict on that reply.
#[derive(Debug, Serialize)]
pub struct Prediction {
    pub sessions: usize,
    pub first_reply_passed_hidden: usize,
    pub passes_examples: usize,
    /// Of those, how many the hidden test also passed.
    pub passes_both: usize,
    pub auroc_passes: Option<Interval>,
    pub auroc_share: Option<Interval>,
    /// Sessions whose task the file does not hold, or whose log could not be read.
    pub skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Measured {
    pub coverage: Coverage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prediction: Option<Prediction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senior: Option<Prediction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cascade: Option<Cascade>,
}

pub fn coverage(problems: &[Problem]) -> Coverage {
    let mut c = Coverage {
        tasks: problems.len(),
        with_examples: 0,
        without: Vec::new(),
        examples: 0,
        by_form: BTreeMap::new(),
        unread: Vec::new(),
    };
    for p in problems {
        let x = extracted(p);
        if x.examples.is_empty() {
            c.without.push(p.task_id.clone());
        } else {
            c.with_examples += 1;
        }
        c.examples += x.examples.len();
        for e in &x.examples {
            *c.by_form.entry(form_name(e.form).into()).or_default() += 1;
        }
        c.unread.extend(x.unread.into_iter().map(|u| UnreadLine {
            task: p.task_id.clone(),
            line: u.line,
            text: u.text,
            why: u.why.into(),
        }));
    }
    c
}

fn form_name(f: Form) -> &'static str {
    match f {
        Form::Doctest => "doctest",
        Form::DoctestAssert => "doctest_assert",
        Form::Inline => "inline",
        Form::InputOutput => "input_output",
        Form::ForOutput => "for_output",
    }
}

/// Runs `source` as `solution.py` against the problem's examples: (passed, run).
async fn run_on(p: &Problem, source: &str, config: &AgentConfig) -> anyhow::Result<(u32, u32)> {
    let x = extracted(p);
    if x.examples.is_empty() {
        return Ok((0, 0));
    }
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("solution.py"), source)?;
    let ws = Workspace::new(dir.path(), config)?;
    let r = run(&ws, "solution", &x.examples).await;
    Ok((r.passed(), r.passed() + r.failed()))
}

pub async fn reference(
    problems: &[Problem],
    config: &AgentConfig,
) -> anyhow::Result<ReferenceCheck> {
    let mut out = ReferenceCheck {
        passed: 0,
        failed: Vec::new(),
    };
    for p in problems {
        let source = format!("{}{}", ensure_newline(&p.prompt), p.canonical_solution);
        let (passed, run) = run_on(p, &source, config).await?;
        out.passed += passed as usize;
        if passed < run {
            out.failed
                .push(format!("{} ({} of {run})", p.task_id, run - passed));
        }
    }
    Ok(out)
}

/// What one logged session's first reply came to.
struct FirstReply {
    /// The `solution.py` it wrote; `None`: it wrote nothing (the stub stays).
    code: Option<String>,
    /// The hidden test's verdict on it (a session that never ran the check failed it).
    passed: bool,
    /// Tokens, input plus output, of the first model call.
    tokens: u64,
}

/// The first reply of one session log.
fn first_reply(path: &Path) -> anyhow::Result<FirstReply> {
    let mut code = None;
    let mut passed = None;
    let mut tokens = None;
    for item in LogReader::open(path)? {
        let Ok(stamped) = item else { continue };
        match stamped.event {
            Event::CostIncurred {
                input_tokens,
                output_tokens,
                ..
            } if tokens.is_none() => tokens = Some(input_tokens + output_tokens),
            Event::ToolCalled {
                name, arguments, ..
            } if name == "edit" && code.is_none() => {
                code = arguments
                    .get("files")
                    .and_then(|f| f.as_array())
                    .and_then(|files| {
                        files
                            .iter()
                            .find(|f| f.get("path").and_then(|p| p.as_str()) == Some("solution.py"))
                    })
                    .and_then(|f| f.get("content"))
                    .and_then(|c| c.as_str())
                    .map(str::to_string);
            }
            Event::CheckRan { passed: p, .. } if passed.is_none() => {
                passed = Some(p);
                break;
            }
            _ => {}
        }
    }
    Ok(FirstReply {
        code,
        passed: passed.unwrap_or(false),
        tokens: tokens.unwrap_or(0),
    })
}

fn slug_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".jsonl.gz")
        .or_else(|| name.strip_suffix(".jsonl"))?;
    Some(stem.to_string())
}

/// The prediction over `logs`, and each task's judged first reply (the last log of a task
/// wins when several are given).
pub async fn prediction(
    problems: &[Problem],
    logs: &[PathBuf],
    config: &AgentConfig,
) -> anyhow::Result<(Prediction, BTreeMap<String, Judged>)> {
    let by_slug: BTreeMap<String, &Problem> = problems
        .iter()
        .map(|p| (task_slug(&p.task_id), p))
        .collect();
    let (files, _) = crate::log::log_files(logs);
    let mut binary: BTreeMap<String, Vec<Forecast>> = BTreeMap::new();
    let mut firsts: BTreeMap<String, Judged> = BTreeMap::new();
    let mut share: BTreeMap<String, Vec<Forecast>> = BTreeMap::new();
    let mut out = Prediction {
        sessions: 0,
        first_reply_passed_hidden: 0,
        passes_examples: 0,
        passes_both: 0,
        auroc_passes: None,
        auroc_share: None,
        skipped: Vec::new(),
    };
    for file in files {
        let Some(p) = slug_of(&file).and_then(|s| by_slug.get(&s).copied()) else {
            out.skipped.push(file.display().to_string());
            continue;
        };
        let reply = match first_reply(&file) {
            Ok(r) => r,
            Err(e) => {
                out.skipped.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        let hidden = reply.passed;
        let source = reply.code.clone().unwrap_or_else(|| stub(p));
        let (passed, run) = run_on(p, &source, config).await?;
        // A prompt with no examples gives no evidence against the reply.
        let all = passed == run;
        let fraction = if run == 0 {
            1.0
        } else {
            f64::from(passed) / f64::from(run)
        };
        out.sessions += 1;
        out.first_reply_passed_hidden += usize::from(hidden);
        out.passes_examples += usize::from(all);
        out.passes_both += usize::from(all && hidden);
        let task = p.task_id.clone();
        firsts.insert(
            task.clone(),
            Judged {
                passes_examples: all,
                passed: hidden,
                tokens: reply.tokens,
            },
        );
        binary
            .entry(task.clone())
            .or_default()
            .push(Forecast::new(if all { 1.0 } else { 0.0 }, hidden));
        share
            .entry(task)
            .or_default()
            .push(Forecast::new(fraction, hidden));
    }
    let groups = |m: BTreeMap<String, Vec<Forecast>>| m.into_values().collect::<Vec<_>>();
    out.auroc_passes = bootstrap(&groups(binary), auroc, 2000, 1);
    out.auroc_share = bootstrap(&groups(share), auroc, 2000, 1);
    Ok((out, firsts))
}

/// One task's first reply, judged: by its examples, and by the hidden test.
#[derive(Debug, Clone, Copy)]
pub struct Judged {
    pub passes_examples: bool,
    pub passed: bool,
    pub tokens: u64,
}

/// The cascade "hand the task to the senior when the junior's first reply fails its
/// examples", replayed from single-shot logs of both models on the same tasks. Compute is
/// junior tokens plus senior tokens times the parameter ratio (input plus output tokens).
#[derive(Debug, Serialize)]
pub struct Cascade {
    pub tasks: usize,
    pub ratio: f64,
    pub junior_passed: usize,
    pub senior_passed: usize,
    pub cascade_passed: usize,
    /// The senior alone, given the same evidence: its first reply, or the junior's when the
    /// senior's fails its examples and the junior's passes them.
    pub handed_off: usize,
    pub junior_compute: f64,
    pub senior_compute: f64,
    pub cascade_compute: f64,
}

pub fn cascade(
    junior: &BTreeMap<String, Judged>,
    senior: &BTreeMap<String, Judged>,
    ratio: f64,
) -> Cascade {
    let mut c = Cascade {
        tasks: 0,
        ratio,
        junior_passed: 0,
        senior_passed: 0,
        cascade_passed: 0,
        handed_off: 0,
        junior_compute: 0.0,
        senior_compute: 0.0,
        cascade_compute: 0.0,
    };
    for (task, j) in junior {
        let Some(s) = senior.get(task) else { continue };
        c.tasks += 1;
        c.junior_passed += usize::from(j.passed);
        c.senior_passed += usize::from(s.passed);
        let jt = j.tokens as f64;
        let st = s.tokens as f64 * ratio;
        c.junior_compute += jt;
        c.senior_compute += st;
        if j.passes_examples {
            c.cascade_passed += usize::from(j.passed);
            c.cascade_compute += jt;
        } else {
            c.handed_off += 1;
            c.cascade_passed += usize::from(s.passed);
            c.cascade_compute += jt + st;
        }
    }
    c
}

fn prediction_text(who: &str, p: &Prediction) -> String {
    let iv = |i: &Option<Interval>| {
        i.as_ref().map_or("undefined".to_string(), |i| {
            format!("{:.3} [{:.3}, {:.3}]", i.estimate, i.lower, i.upper)
        })
    };
    let mut s = format!(
        "{who} sessions: {}; the first reply passed the hidden test in {} and its examples in {} ({} both)\n",
        p.sessions, p.first_reply_passed_hidden, p.passes_examples, p.passes_both
    );
    s.push_str(&format!(
        "{who} AUROC against the hidden verdict (bootstrap over tasks, 2000 reps): passes its examples {}; share of examples passed {}\n",
        iv(&p.auroc_passes),
        iv(&p.auroc_share)
    ));
    if !p.skipped.is_empty() {
        s.push_str(&format!(
            "{who}: skipped {} log(s) of other tasks\n",
            p.skipped.len()
        ));
    }
    s
}

fn cascade_text(c: &Cascade) -> String {
    let share = |n: usize| n as f64 / c.tasks.max(1) as f64;
    let of_senior = |x: f64| x / c.senior_compute.max(1.0);
    format!(
        "cascade on {} tasks (compute = junior tokens + senior tokens x {}, input + output):\n  junior alone   {}/{} = {:.3}  compute {:.2}x the senior's\n  senior alone   {}/{} = {:.3}  compute 1.00x\n  hand off when the first reply fails its examples: {}/{} = {:.3}, {} handed off, compute {:.2}x the senior's\n",
        c.tasks,
        c.ratio,
        c.junior_passed,
        c.tasks,
        share(c.junior_passed),
        of_senior(c.junior_compute),
        c.senior_passed,
        c.tasks,
        share(c.senior_passed),
        c.cascade_passed,
        c.tasks,
        share(c.cascade_passed),
        c.handed_off,
        of_senior(c.cascade_compute),
    )
}

pub fn to_text(m: &Measured) -> String {
    let c = &m.coverage;
    let mut s = format!(
        "examples: {} of {} tasks state at least one; {} examples",
        c.with_examples, c.tasks, c.examples
    );
    let forms: Vec<String> = c.by_form.iter().map(|(f, n)| format!("{f} {n}")).collect();
    s.push_str(&format!(" ({})\n", forms.join(", ")));
    if !c.without.is_empty() {
        s.push_str(&format!("no example read: {}\n", c.without.join(", ")));
    }
    s.push_str(&format!(
        "unread: {} line(s) looked like examples and were not read\n",
        c.unread.len()
    ));
    for u in &c.unread {
        s.push_str(&format!(
            "  {} line {}: {} — {}\n",
            u.task, u.line, u.why, u.text
        ));
    }
    if let Some(r) = &m.reference {
        s.push_str(&format!(
            "reference solutions: {} of {} examples pass; failing: {}\n",
            r.passed,
            c.examples,
            if r.failed.is_empty() {
                "none".to_string()
            } else {
                r.failed.join(", ")
            }
        ));
    }
    if let Some(p) = &m.prediction {
        s.push_str(&prediction_text("junior", p));
    }
    if let Some(p) = &m.senior {
        s.push_str(&prediction_text("senior", p));
    }
    if let Some(c) = &m.cascade {
        s.push_str(&cascade_text(c));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(passes_examples: bool, passed: bool, tokens: u64) -> Judged {
        Judged {
            passes_examples,
            passed,
            tokens,
        }
    }

    #[test]
    fn the_cascade_keeps_the_junior_where_its_examples_pass_and_pays_both_elsewhere() {
        let junior: BTreeMap<String, Judged> = [
            ("a".to_string(), judged(true, true, 100)),
            ("b".to_string(), judged(false, false, 100)),
            ("c".to_string(), judged(true, false, 100)),
            ("only-junior".to_string(), judged(true, true, 100)),
        ]
        .into();
        let senior: BTreeMap<String, Judged> = [
            ("a".to_string(), judged(true, false, 50)),
            ("b".to_string(), judged(true, true, 50)),
            ("c".to_string(), judged(true, true, 50)),
        ]
        .into();
        let c = cascade(&junior, &senior, 2.0);
        assert_eq!(c.tasks, 3, "tasks both models ran");
        assert_eq!((c.junior_passed, c.senior_passed), (1, 2));
        // a: the junior's pass; b: handed off, the senior passes; c: kept, a wrong keep.
        assert_eq!(c.cascade_passed, 2);
        assert_eq!(c.handed_off, 1);
        assert_eq!(c.junior_compute, 300.0);
        assert_eq!(c.senior_compute, 300.0);
        assert_eq!(c.cascade_compute, 400.0);
    }
}
