//! Whole evaluations against the scripted fakes: the bundled suite, Ask-F1 on known
//! blockers, and a sweep with both baselines.

use std::path::Path;

use handoff::eval::operator::{NO_INFORMATION, REFUSED};
use handoff::eval::{EvalArgs, EvalReport, Policy, Shard, Suite};
use serde_json::json;

use super::fake::{self, Behaviour};

fn args(out: &Path, policies: Vec<Policy>, sweep: Option<&str>) -> EvalArgs {
    EvalArgs {
        suite: out.to_path_buf(),
        policies,
        sweep: sweep.map(str::to_string),
        baselines: false,
        shard: Shard::WHOLE,
        jobs: 2,
        out: out.to_path_buf(),
        llm_judge: false,
        progress: false,
        stop: handoff::app::stop::Stop::never(),
    }
}

fn only(mut suite: Suite, ids: &[&str]) -> Suite {
    suite.tasks.retain(|t| ids.contains(&t.id.as_str()));
    assert_eq!(suite.tasks.len(), ids.len());
    suite
}

const PYTHON: [&str; 6] = [
    "py-config",
    "py-fizzbuzz",
    "py-median",
    "py-roman",
    "py-slugify",
    "py-wordcount",
];

async fn run(suite: Suite, junior: Behaviour, senior: Behaviour, a: &EvalArgs) -> EvalReport {
    let (j, s) = fake::servers(&suite, junior, senior).await;
    handoff::eval::run_suite(fake::config(&j, &s), suite, a)
        .await
        .expect("evaluation runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_suite_passes_when_the_junior_asks_about_every_blocker() {
    let out = tempfile::tempdir().expect("tempdir");
    let suite = fake::bundled();
    assert!(suite.tasks.len() >= 12);
    let asks = Behaviour {
        asks: true,
        ..Behaviour::default()
    };
    let a = args(out.path(), vec![Policy::JuniorOnly], None);
    let report = run(suite.clone(), asks.clone(), asks, &a).await;
    let p = &report.policies[0];
    let failed: Vec<(&str, &Option<String>)> = report
        .runs
        .iter()
        .filter(|r| !r.passed)
        .map(|r| (r.task.as_str(), &r.error))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        (p.runs, p.passed, p.errors),
        (suite.tasks.len(), suite.tasks.len(), 0)
    );
    assert_eq!(p.ask.registered, suite.blockers() as u64);
    assert_eq!(p.ask.questions, p.ask.registered);
    assert_eq!(p.ask.f1, Some(1.0));
    // Every session is logged where `handoff report` finds it.
    let corpus = handoff::analysis::report::load(&[out.path().join("logs")]);
    assert_eq!(
        corpus.sessions.len(),
        suite.tasks.len(),
        "{:?}",
        corpus.warnings
    );
    assert!(out.path().join("results.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_f1_pools_distinct_blockers_over_questions_and_registrations() {
    let out = tempfile::tempdir().expect("tempdir");
    let suite = only(fake::bundled(), &PYTHON);
    let junior = Behaviour {
        asks: true,
        ask_twice: vec!["py-median".into()],
        off_target: vec!["py-fizzbuzz".into()],
        ..Behaviour::default()
    };
    let a = args(out.path(), vec![Policy::JuniorOnly], None);
    let report = run(suite.clone(), junior, Behaviour::default(), &a).await;
    let ask = report.policies[0].ask;
    // 4 blockers asked once, one of them again, and one question about nothing.
    assert_eq!((ask.questions, ask.matched, ask.registered), (6, 4, 4));
    assert_eq!(ask.precision, Some(4.0 / 6.0));
    assert_eq!(ask.recall, Some(1.0));
    assert!((ask.f1.expect("f1") - 0.8).abs() < 1e-12);
    assert_eq!(report.policies[0].passed, 6);
    // The question about nothing registered got no answer and was marked not needed.
    let fizz = report
        .runs
        .iter()
        .find(|r| r.task == "py-fizzbuzz")
        .expect("run");
    assert_eq!(fizz.questions, vec![None]);
    let (summaries, _) = handoff::analysis::summarize_file(&fizz.log).expect("log");
    let q = &summaries[0].questions[0];
    assert_eq!(q.answer.as_deref(), Some(NO_INFORMATION));
    assert_eq!(q.needed, Some(false));

    // A junior that never asks guesses wrong on every blocker and scores no recall.
    let out = tempfile::tempdir().expect("tempdir");
    let a = args(out.path(), vec![Policy::JuniorOnly], None);
    let silent = run(suite, Behaviour::default(), Behaviour::default(), &a).await;
    let p = &silent.policies[0];
    assert_eq!(p.passed, 2, "only the tasks without blockers pass");
    assert_eq!(
        (p.ask.questions, p.ask.precision, p.ask.recall),
        (0, None, Some(0.0))
    );
}

/// The strict operator through the whole loop: the junior's `ask_operator` calls go over
/// HTTP to the fake, the session asks, the operator judges the question's own words and
/// stops answering after three, and the log holds every answer and refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_reads_only_the_question_and_answers_three_per_task() {
    let out = tempfile::tempdir().expect("tempdir");
    let suite = only(fake::bundled(), &["py-slugify"]);
    let again = json!({"question": "Which separator do you want between words?"});
    let junior = Behaviour {
        asks: true,
        extra: vec![(
            "py-slugify".into(),
            vec![
                // A statement naming the topic: not a question.
                json!({"question": "I will join the words with a hyphen."}),
                // The topic only in the options: the question itself names nothing.
                json!({"question": "Which one should I pick?", "options": ["hyphen", "underscore"]}),
                again.clone(),
                again.clone(),
                again,
            ],
        )],
        ..Behaviour::default()
    };
    let a = args(out.path(), vec![Policy::JuniorOnly], None);
    let report = run(suite, junior, Behaviour::default(), &a).await;
    let run = &report.runs[0];
    let sep = Some("separator".to_string());
    assert_eq!(
        run.questions,
        vec![sep.clone(), None, None, sep.clone(), sep, None],
        "{run:?}"
    );
    assert_eq!(run.refused, 1);
    let p = &report.policies[0];
    assert_eq!((p.ask.questions, p.ask.matched, p.refused), (6, 1, 1));
    assert!(run.passed, "the answer was given before the limit");
    let (summaries, _) = handoff::analysis::summarize_file(&run.log).expect("log");
    let answers: Vec<Option<&str>> = summaries[0]
        .questions
        .iter()
        .map(|q| q.answer.as_deref())
        .collect();
    assert_eq!(answers.len(), 6);
    assert_eq!(answers[1], Some(NO_INFORMATION));
    assert_eq!(answers[2], Some(NO_INFORMATION));
    assert_eq!(answers[5], Some(REFUSED), "the refusal is logged");
    // One session, one decision: it asked, and its questions were needed.
    assert_eq!((p.ask_sessions.tp, p.ask_sessions.fp), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_runs_both_baselines_and_reports_the_frontier_and_apgr() {
    let out = tempfile::tempdir().expect("tempdir");
    let suite = only(fake::bundled(), &["py-fizzbuzz", "py-median", "py-slugify"]);
    let senior = Behaviour {
        asks: true,
        ..Behaviour::default()
    };
    let a = args(out.path(), vec![], Some("threshold=0.3:0.9:0.3"));
    let report = run(suite, Behaviour::default(), senior, &a).await;
    let labels: Vec<&str> = report.policies.iter().map(|p| p.policy.as_str()).collect();
    assert_eq!(
        labels,
        [
            "junior-only",
            "senior-only",
            "tau-0.30",
            "tau-0.60",
            "tau-0.90"
        ]
    );
    let by = |l: &str| {
        report
            .policies
            .iter()
            .find(|p| p.policy == l)
            .expect("policy")
    };
    let (junior, senior) = (by("junior-only"), by("senior-only"));
    assert_eq!(junior.accuracy, Some(1.0 / 3.0));
    assert_eq!(senior.accuracy, Some(1.0));
    assert!(
        senior.mean_usd > junior.mean_usd,
        "{senior:?} vs {junior:?}"
    );
    // At τ = 0.6 the hesitant junior is cut off on the blocker tasks, triage sends the
    // question to the operator, and the answer gets every task right for a fraction of
    // the senior's cost; at τ = 0.3 the judge never steps in.
    let mid = by("tau-0.60");
    assert_eq!(mid.accuracy, Some(1.0));
    assert_eq!((mid.operator.sessions, mid.ask.matched), (2, 2));
    assert!(mid.mean_usd < senior.mean_usd);
    assert_eq!(by("tau-0.30").accuracy, junior.accuracy);
    let gap = report.gap.as_ref().expect("both baselines differ");
    assert!(gap.apgr > 0.5, "better than mixing the baselines: {gap:?}");
    assert_eq!(gap.knots.first(), Some(&(0.0, 0.0)));
    assert_eq!(gap.knots.last(), Some(&(1.0, 1.0)));
    for plot in ["frontier.svg", "gap.svg"] {
        let svg = std::fs::read_to_string(out.path().join(plot)).expect("plot written");
        assert!(svg.contains("<svg"), "{plot}");
    }
    // Every session of every policy is logged, one directory per policy.
    let corpus = handoff::analysis::report::load(&[out.path().join("logs")]);
    assert_eq!(corpus.sessions.len(), 15);
    assert!(
        report.runs.iter().all(|r| r.error.is_none()),
        "{:?}",
        report.runs
    );
}
