use super::*;

fn junior(passed: bool, requests: &[(u64, u64)]) -> JuniorRun {
    JuniorRun {
        passed,
        requests: requests
            .iter()
            .map(|&(input, output)| Request { input, output })
            .collect(),
        loop_handoff: None,
        first_failed_check: None,
        wall: WallTrace::default(),
    }
}

fn pair(task: &str, j: JuniorRun, s_passed: bool) -> TaskPair {
    TaskPair {
        task: task.to_string(),
        junior: j,
        senior: SeniorRun {
            passed: s_passed,
            input: 1000,
            output: 100,
            wall: Wall::default(),
        },
    }
}

#[test]
fn spent_by_counts_started_requests_whole_input_and_output_up_to_the_tick() {
    let j = junior(false, &[(500, 40), (700, 60), (900, 10)]);
    assert_eq!(j.spent_by(0), (0, 0), "nothing before the first token");
    assert_eq!(j.spent_by(1), (500, 1));
    assert_eq!(
        j.spent_by(40),
        (500, 40),
        "the second request has not started"
    );
    assert_eq!(j.spent_by(41), (1200, 41));
    assert_eq!(j.spent_by(100), (1200, 100));
    assert_eq!(j.spent_by(10_000), j.total());
    assert_eq!(j.total(), (2100, 110));
}

#[test]
fn each_policy_spends_what_its_rule_says() {
    let p = pair("a", junior(false, &[(500, 40), (700, 60)]), true);
    let j = junior_alone(&p);
    assert!(!j.passed && !j.escalated);
    assert_eq!(
        (j.spent.junior_in, j.spent.junior_out, j.spent.senior_out),
        (1200, 100, 0)
    );
    let s = streaming(&p, Some(41));
    assert!(s.passed && s.escalated);
    assert_eq!(
        (
            s.spent.junior_in,
            s.spent.junior_out,
            s.spent.senior_in,
            s.spent.senior_out
        ),
        (1200, 41, 1000, 100)
    );
    let o = oracle(&p);
    assert!(o.passed && o.spent.junior_out == 0 && o.spent.senior_out == 100);
    // The loop's stuck rule at tick 30 comes before the judge's 41: the loop hands off.
    let mut stuck = p.clone();
    stuck.junior.loop_handoff = Some(30);
    let l = streaming(&stuck, Some(41));
    assert!(l.by_loop && l.spent.junior_out == 30);
    assert!(!streaming(&stuck, Some(20)).by_loop, "the judge was first");
    assert!(streaming(&stuck, None).by_loop);
    let h = post_hoc(&p, true);
    assert!(h.passed && h.spent.junior_out == 100 && h.spent.senior_out == 100);
    // The oracle leaves a task the junior solves with the junior.
    let good = pair("b", junior(true, &[(10, 5)]), false);
    assert_eq!(oracle(&good), junior_alone(&good));
}

#[test]
fn score_gives_accuracy_escalation_and_compute_relative_to_the_junior() {
    let ps = [
        pair("a", junior(false, &[(500, 40), (700, 60)]), true),
        pair("b", junior(true, &[(100, 20)]), false),
    ];
    let ratio = 3.0;
    let alone: Vec<Decision> = ps.iter().map(junior_alone).collect();
    let base = score("junior alone", None, &alone, ratio, (0.0, 0.0));
    // out: (100 + 20) / 2 = 60; all: (1300 + 120) / 2 = 710.
    assert_eq!((base.compute_out, base.compute_all), (60.0, 710.0));
    let senior: Vec<Decision> = ps.iter().map(senior_alone).collect();
    let s = score("senior alone", None, &senior, ratio, (60.0, 710.0));
    assert_eq!(s.accuracy.estimate, 0.5);
    assert_eq!(s.escalation_rate, 1.0);
    // 100 senior output tokens × 3 = 300; input + output: 1100 × 3 = 3300.
    assert_eq!((s.compute_out, s.compute_all), (300.0, 3300.0));
    assert!((s.relative_out - 5.0).abs() < 1e-12);
    assert!((s.relative_all - 3300.0 / 710.0).abs() < 1e-12);
    let o: Vec<Decision> = ps.iter().map(oracle).collect();
    let o = score("oracle", None, &o, ratio, (60.0, 710.0));
    assert_eq!(o.accuracy.estimate, 1.0);
    assert!(o.accuracy.lower <= 1.0 && o.accuracy.upper == 1.0);
}

#[test]
fn the_interval_is_degenerate_only_when_every_task_agrees() {
    let mixed: Vec<f64> = (0..40).map(|i| f64::from(u8::from(i % 4 == 0))).collect();
    let i = mean_interval(&mixed);
    assert_eq!(i.estimate, 0.25);
    assert!(i.lower < 0.25 && 0.25 < i.upper, "{i:?}");
    assert!(i.lower > 0.05 && i.upper < 0.45, "{i:?}");
    let all = mean_interval(&[1.0; 10]);
    assert_eq!((all.lower, all.upper), (1.0, 1.0));
}

#[test]
fn pairing_names_the_tasks_with_one_side_only() {
    let mut js = BTreeMap::new();
    js.insert("a".to_string(), junior(true, &[]));
    js.insert("b".to_string(), junior(false, &[]));
    let mut ss = BTreeMap::new();
    let s = SeniorRun {
        passed: true,
        input: 1,
        output: 1,
        wall: Wall::default(),
    };
    ss.insert("b".to_string(), s);
    ss.insert("c".to_string(), s);
    let (pairs, unpaired) = super::pair(js, ss);
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].task, "b");
    assert_eq!(unpaired, ["a", "c"]);
}

#[test]
fn the_frontier_keeps_only_points_nothing_cheaper_beats() {
    let point = |acc: f64, all: f64| Point {
        policy: "p".into(),
        parameter: None,
        tasks: 1,
        accuracy: Interval {
            estimate: acc,
            lower: acc,
            upper: acc,
        },
        escalation_rate: 0.0,
        loop_rate: 0.0,
        compute_out: all,
        compute_all: all,
        relative_out: 1.0,
        relative_all: 1.0,
        gap_recovered: None,
        seconds: Seconds::default(),
    };
    let pts = [
        point(0.2, 1.0),
        point(0.1, 2.0),
        point(0.5, 3.0),
        point(0.5, 4.0),
    ];
    let f: Vec<(f64, f64)> = frontier(&pts)
        .into_iter()
        .map(|i| (pts[i].accuracy.estimate, pts[i].compute_all))
        .collect();
    assert_eq!(f, [(0.2, 1.0), (0.5, 3.0)]);
}

#[test]
fn a_junior_log_gives_its_requests_label_and_the_loops_handoff() {
    use crate::protocol::{AskCounts, Route};
    let cost = |i, o| Event::CostIncurred {
        actor: Actor::Junior,
        model: "j".into(),
        input_tokens: i,
        output_tokens: o,
        usd: 0.0,
        estimated: false,
    };
    let events = vec![
        cost(100, 10),
        Event::Escalated {
            step: 1,
            tick: 7,
            route: Route::Senior,
            reason: EscalationReason::Threshold,
            belief: 0.1,
            threshold: 0.5,
            why: vec![],
            shadow: true,
            propensity: None,
        },
        Event::Escalated {
            step: 2,
            tick: 10,
            route: Route::Senior,
            reason: EscalationReason::Stuck,
            belief: 0.1,
            threshold: 0.5,
            why: vec![],
            shadow: true,
            propensity: None,
        },
        cost(200, 5),
        Event::SessionEnded {
            outcome: Outcome::Success,
            censored: false,
            steps: 2,
            ticks: 15,
            usd: 0.0,
            ask: AskCounts::default(),
        },
    ];
    let j = JuniorRun::from_events(&events);
    assert!(j.passed);
    assert_eq!(j.total(), (300, 15));
    assert_eq!(
        j.loop_handoff,
        Some(10),
        "the judge's own escalation is not the loop's"
    );
    let s = SeniorRun::from_events(&events);
    assert_eq!((s.passed, s.input, s.output), (true, 300, 15));
}

#[test]
fn a_failed_check_hands_off_where_it_failed_and_a_passing_junior_keeps_the_task() {
    let mut failing = junior(false, &[(500, 40), (700, 60)]);
    failing.first_failed_check = Some(40);
    let p = pair("a", failing, true);
    let d = on_failed_check(&p);
    assert!(d.escalated && d.passed && !d.by_loop);
    assert_eq!((d.spent.junior_in, d.spent.junior_out), (500, 40));
    assert_eq!(d.spent.senior_out, 100);
    let kept = on_failed_check(&pair("b", junior(true, &[(500, 40)]), false));
    assert!(!kept.escalated && kept.passed);
}

#[test]
fn the_first_failed_check_is_read_at_the_junior_token_before_it() {
    let check = |passed: bool| Event::CheckRan {
        command: "t".into(),
        exit_code: Some(i32::from(!passed)),
        passed,
        output_tail: String::new(),
    };
    let token = |tick| Event::Token {
        actor: Actor::Junior,
        tick,
        text: "x".into(),
        logprob: None,
        top: Vec::new(),
    };
    let events = [token(1), token(2), check(false), token(3), check(false)];
    assert_eq!(JuniorRun::from_events(&events).first_failed_check, Some(2));
    let events = [token(1), check(true)];
    assert_eq!(JuniorRun::from_events(&events).first_failed_check, None);
}
