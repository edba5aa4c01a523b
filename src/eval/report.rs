//! Scores of an evaluation: accuracy, cost, escalations per route and Ask-F1 per policy,
//! the cost–accuracy frontier over the policies, and APGR against the two baselines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::ask::{BlockerAsk, TaskQuestions, pool};
use super::run::TaskRun;
use crate::metrics::{
    CostAccuracyCurve, CostAccuracyPoint, PgrCurve, SessionAsk, cost_accuracy_curve,
};
use crate::protocol::Route;

/// How often one route was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteRate {
    /// Sessions with at least one escalation to this route.
    pub sessions: usize,
    pub escalations: usize,
    /// sessions / runs.
    pub rate: f64,
}

/// The scores of one policy over the tasks it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyReport {
    pub policy: String,
    /// Runs that happened (errors excluded).
    pub runs: usize,
    pub passed: usize,
    pub accuracy: Option<f64>,
    /// Mean money per run, and its split by model.
    pub mean_usd: Option<f64>,
    pub mean_junior_usd: Option<f64>,
    pub mean_senior_usd: Option<f64>,
    pub senior: RouteRate,
    pub operator: RouteRate,
    /// Ask-F1 per blocker, pooled over tasks as HiL-Bench pools it.
    pub ask: BlockerAsk,
    /// Ask-F1 per session: one decision and one label per session.
    #[serde(default)]
    pub ask_sessions: SessionAsk,
    /// Questions the simulated operator refused after its limit of answers per task.
    #[serde(default)]
    pub refused: usize,
    /// Runs that could not happen.
    pub errors: usize,
    /// Runs in which the model tried to change a protected file (the task's tests).
    #[serde(default)]
    pub protected_touched: usize,
}

/// APGR and the cost at which a given share of the junior–senior gap is recovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapReport {
    pub apgr: f64,
    /// Normalised cost (0 = junior only, 1 = senior only) reaching 50 % of the gap.
    pub cpt50: Option<f64>,
    pub cpt80: Option<f64>,
    /// (normalised cost, performance gap recovered).
    pub knots: Vec<(f64, f64)>,
}

/// Everything `handoff eval` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub suite: String,
    pub shard: String,
    pub tasks: usize,
    pub blockers: usize,
    pub policies: Vec<PolicyReport>,
    /// Over every policy that ran, baselines included.
    pub frontier: Option<CostAccuracyCurve>,
    /// Present when both baselines ran and differ in cost and accuracy.
    pub gap: Option<GapReport>,
    pub runs: Vec<TaskRun>,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn route_rate(runs: &[&TaskRun], route: Route) -> RouteRate {
    let per_run: Vec<usize> = runs
        .iter()
        .map(|r| r.escalations.iter().filter(|e| e.route == route).count())
        .collect();
    let sessions = per_run.iter().filter(|&&n| n > 0).count();
    RouteRate {
        sessions,
        escalations: per_run.iter().sum(),
        rate: if runs.is_empty() {
            0.0
        } else {
            sessions as f64 / runs.len() as f64
        },
    }
}

/// Scores one policy's runs.
pub fn policy_report(policy: &str, all: &[&TaskRun]) -> PolicyReport {
    let runs: Vec<&TaskRun> = all.iter().copied().filter(|r| r.error.is_none()).collect();
    let passed = runs.iter().filter(|r| r.passed).count();
    let questions: Vec<TaskQuestions> = runs
        .iter()
        .map(|r| TaskQuestions {
            matched: r.questions.clone(),
            registered: r.blockers,
        })
        .collect();
    PolicyReport {
        policy: policy.to_string(),
        runs: runs.len(),
        passed,
        accuracy: mean(runs.iter().map(|r| if r.passed { 1.0 } else { 0.0 })),
        mean_usd: mean(runs.iter().map(|r| r.usd)),
        mean_junior_usd: mean(runs.iter().map(|r| r.junior_usd)),
        mean_senior_usd: mean(runs.iter().map(|r| r.senior_usd)),
        senior: route_rate(&runs, Route::Senior),
        operator: route_rate(&runs, Route::Operator),
        ask: pool(&questions),
        ask_sessions: SessionAsk::tally(runs.iter().map(|r| &r.ask)),
        refused: runs.iter().map(|r| r.refused).sum(),
        errors: all.len() - runs.len(),
        protected_touched: runs.iter().filter(|r| r.protected_touched).count(),
    }
}

impl EvalReport {
    /// Groups runs by policy (in the order policies first appear) and scores them.
    pub fn new(suite: &str, shard: &str, blockers: usize, runs: Vec<TaskRun>) -> EvalReport {
        let mut order: Vec<String> = Vec::new();
        let mut groups: BTreeMap<String, Vec<&TaskRun>> = BTreeMap::new();
        for r in &runs {
            if !groups.contains_key(&r.policy) {
                order.push(r.policy.clone());
            }
            groups.entry(r.policy.clone()).or_default().push(r);
        }
        let policies: Vec<PolicyReport> = order
            .iter()
            .map(|p| policy_report(p, groups.get(p).map(Vec::as_slice).unwrap_or(&[])))
            .collect();
        let point = |p: &PolicyReport| {
            Some(CostAccuracyPoint::new(
                p.policy.clone(),
                p.mean_usd?,
                p.accuracy?,
            ))
        };
        let points: Vec<CostAccuracyPoint> = policies.iter().filter_map(point).collect();
        let frontier = (!points.is_empty()).then(|| cost_accuracy_curve(points.clone()));
        let find = |label: &str| points.iter().find(|p| p.label == label).cloned();
        let gap = match (find("junior-only"), find("senior-only")) {
            (Some(j), Some(s)) => {
                let others: Vec<CostAccuracyPoint> = points
                    .iter()
                    .filter(|p| p.label != "junior-only" && p.label != "senior-only")
                    .cloned()
                    .collect();
                PgrCurve::new(j, s, &others).map(|c| GapReport {
                    apgr: c.apgr(),
                    cpt50: c.cpt(0.5),
                    cpt80: c.cpt(0.8),
                    knots: c.knots.clone(),
                })
            }
            _ => None,
        };
        let tasks = {
            let mut ids: Vec<&str> = runs.iter().map(|r| r.task.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        EvalReport {
            suite: suite.to_string(),
            shard: shard.to_string(),
            tasks,
            blockers,
            policies,
            frontier,
            gap,
            runs,
        }
    }

    /// One report from the results of several shards (`results.json` of each): the runs
    /// are pooled, a (policy, task) run seen twice counts once, and every score, the
    /// frontier and APGR are computed again over the whole suite.
    pub fn merge(parts: Vec<EvalReport>) -> EvalReport {
        let suite = parts.first().map(|p| p.suite.clone()).unwrap_or_default();
        let mut runs: Vec<TaskRun> = Vec::new();
        for r in parts.into_iter().flat_map(|p| p.runs) {
            if !runs
                .iter()
                .any(|q| q.policy == r.policy && q.task == r.task)
            {
                runs.push(r);
            }
        }
        let mut per_task: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &runs {
            per_task.insert(&r.task, r.blockers);
        }
        let blockers = per_task.values().sum();
        EvalReport::new(&suite, "merged", blockers, runs)
    }

    /// The report as aligned text tables.
    pub fn to_table(&self) -> String {
        let opt = |v: Option<f64>, digits: usize| {
            v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "suite {}  shard {}  tasks {}  blockers {}",
            self.suite, self.shard, self.tasks, self.blockers
        );
        let _ = writeln!(
            out,
            "\n{:<14} {:>4} {:>6} {:>10} {:>8} {:>8} {:>5} {:>6} {:>6} {:>6} {:>4}",
            "policy",
            "runs",
            "acc",
            "mean $",
            "senior",
            "operator",
            "asks",
            "askP",
            "askR",
            "askF1",
            "err"
        );
        for p in &self.policies {
            let _ = writeln!(
                out,
                "{:<14} {:>4} {:>6} {:>10} {:>8} {:>8} {:>5} {:>6} {:>6} {:>6} {:>4}",
                p.policy,
                p.runs,
                opt(p.accuracy, 3),
                opt(p.mean_usd, 6),
                format!("{:.2}", p.senior.rate),
                format!("{:.2}", p.operator.rate),
                p.ask.questions,
                opt(p.ask.precision, 2),
                opt(p.ask.recall, 2),
                opt(p.ask.f1, 2),
                p.errors
            );
        }
        let _ = writeln!(
            out,
            "askP/askR/askF1: Ask-F1 per blocker, pooled over tasks as HiL-Bench pools it \
             (distinct blockers found / questions asked, / blockers registered)\n\
             \nAsk-F1 per session (one decision, one label per session: escalated or asked at \
             least once; help needed = failed or a question marked needed)\n{:<14} {:>4} {:>4} {:>4} {:>4} {:>7} {:>6} {:>6} {:>6} {:>7}",
            "policy", "tp", "fp", "fn", "tn", "unknown", "P", "R", "F1", "refused"
        );
        for p in &self.policies {
            let s = &p.ask_sessions;
            let _ = writeln!(
                out,
                "{:<14} {:>4} {:>4} {:>4} {:>4} {:>7} {:>6} {:>6} {:>6} {:>7}",
                p.policy,
                s.tp,
                s.fp,
                s.fn_,
                s.tn,
                s.unknown,
                opt(s.precision(), 2),
                opt(s.recall(), 2),
                opt(s.f1(), 2),
                p.refused
            );
        }
        for p in self.policies.iter().filter(|p| p.protected_touched > 0) {
            let _ = writeln!(
                out,
                "{}: {} of {} runs tried to change the task's tests (refused or undone)",
                p.policy, p.protected_touched, p.runs
            );
        }
        if let Some(f) = &self.frontier {
            let names: Vec<&str> = f.frontier.iter().map(|p| p.label.as_str()).collect();
            let _ = writeln!(out, "\nfrontier: {}", names.join(" → "));
        }
        match &self.gap {
            Some(g) => {
                let _ = writeln!(
                    out,
                    "APGR {:.3}  CPT(50%) {}  CPT(80%) {}",
                    g.apgr,
                    opt(g.cpt50, 3),
                    opt(g.cpt80, 3)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "APGR: needs junior-only and senior-only runs that differ in cost and accuracy"
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::run::RunEscalation;
    use crate::protocol::EscalationReason;

    fn run(policy: &str, task: &str, passed: bool, usd: f64, routes: &[Route]) -> TaskRun {
        TaskRun {
            task: task.into(),
            policy: policy.into(),
            passed,
            outcome: None,
            steps: 1,
            usd,
            junior_usd: usd,
            senior_usd: 0.0,
            escalations: routes
                .iter()
                .map(|&route| RunEscalation {
                    route,
                    reason: EscalationReason::Threshold,
                })
                .collect(),
            questions: vec![],
            refused: 0,
            ask: crate::metrics::AskSession::default(),
            blockers: 0,
            protected_touched: false,
            log: "l".into(),
            error: None,
        }
    }

    #[test]
    fn baselines_give_a_gap_and_routes_are_rated_per_session() {
        let runs = vec![
            run("junior-only", "a", false, 1.0, &[]),
            run("junior-only", "b", true, 1.0, &[]),
            run("senior-only", "a", true, 5.0, &[]),
            run("senior-only", "b", true, 5.0, &[]),
            run("tau-0.50", "a", true, 2.0, &[Route::Senior, Route::Senior]),
            run("tau-0.50", "b", true, 2.0, &[]),
        ];
        let r = EvalReport::new("s", "0/1", 0, runs);
        let mid = &r.policies[2];
        assert_eq!(mid.policy, "tau-0.50");
        assert_eq!(mid.senior.sessions, 1);
        assert_eq!(mid.senior.escalations, 2);
        assert_eq!(mid.senior.rate, 0.5);
        // Junior (1, 0.5), senior (5, 1.0), policy (2, 1.0): x = 0.25 recovers the whole gap.
        let g = r.gap.expect("gap");
        assert_eq!(g.knots, vec![(0.0, 0.0), (0.25, 1.0), (1.0, 1.0)]);
        assert!((g.apgr - (0.125 + 0.75)).abs() < 1e-12);
        let front: Vec<&str> = r
            .frontier
            .as_ref()
            .expect("frontier")
            .frontier
            .iter()
            .map(|p| p.label.as_str())
            .collect();
        assert_eq!(front, ["junior-only", "tau-0.50"]);
    }

    #[test]
    fn merged_shards_score_like_one_run() {
        let all = vec![
            run("junior-only", "a", false, 1.0, &[]),
            run("senior-only", "a", true, 5.0, &[]),
            run("junior-only", "b", true, 1.0, &[]),
            run("senior-only", "b", true, 5.0, &[]),
        ];
        let whole = EvalReport::new("s", "0/1", 0, all.clone());
        let first = EvalReport::new("s", "0/2", 0, all[..2].to_vec());
        let second = EvalReport::new("s", "1/2", 0, all[2..].to_vec());
        let merged = EvalReport::merge(vec![first.clone(), second, first]);
        assert_eq!(merged.runs.len(), 4);
        assert_eq!(merged.policies, whole.policies);
        assert_eq!(merged.gap, whole.gap);
    }

    /// The committed corpora keep `results.json.gz`: `eval merge` reads a shard directory
    /// holding either, and the merged runs are every shard's.
    #[test]
    fn merge_reads_shard_directories_with_plain_or_gzipped_results() {
        use std::io::Write;
        let all = [
            run("junior-only", "a", false, 1.0, &[]),
            run("junior-only", "b", true, 1.0, &[]),
        ];
        let tmp = tempfile::tempdir().expect("tempdir");
        let (plain, zipped) = (tmp.path().join("s0"), tmp.path().join("s1"));
        std::fs::create_dir_all(&plain).expect("dir");
        std::fs::create_dir_all(&zipped).expect("dir");
        let first = EvalReport::new("s", "0/2", 0, all[..1].to_vec());
        let second = EvalReport::new("s", "1/2", 0, all[1..].to_vec());
        let json = |r: &EvalReport| serde_json::to_string(r).expect("json");
        std::fs::write(plain.join("results.json"), json(&first)).expect("write");
        let file = std::fs::File::create(zipped.join("results.json.gz")).expect("create");
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        gz.write_all(json(&second).as_bytes()).expect("gzip");
        gz.finish().expect("gzip");
        let merged = crate::eval::merge(&[plain, zipped], &tmp.path().join("out")).expect("merge");
        assert_eq!(merged.runs.len(), 2);
        assert_eq!(merged.policies[0].passed, 1);
    }
}
