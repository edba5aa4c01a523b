use super::*;

fn problem(prompt: &str, entry: &str) -> Problem {
    Problem {
        task_id: "HumanEval/x".into(),
        prompt: prompt.into(),
        canonical_solution: "    return None\n".into(),
        test: "def check(c):\n    pass\n".into(),
        entry_point: entry.into(),
    }
}

const LONGEST: &str = "from typing import List, Optional\n\n\ndef longest(strings: List[str]) -> Optional[str]:\n    \"\"\" Out of list of strings, return the longest one. Return the first one in case of multiple\n    strings of the same length. Return None in case the input list is empty.\n    >>> longest([])\n\n    >>> longest(['a', 'b', 'c'])\n    'a'\n    >>> longest(['a', 'bb', 'ccc'])\n    'ccc'\n    \"\"\"\n";

#[test]
fn a_docstring_splits_into_its_examples_and_its_rules_after_the_first() {
    let p = problem(LONGEST, "longest");
    let c = candidates(&p);
    let kinds: Vec<Kind> = c.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [Kind::Examples, Kind::Rule, Kind::Rule]);
    let rules: Vec<String> = c[1..].iter().map(|c| remove(&p, c).text).collect();
    assert_eq!(
        rules,
        [
            "Return the first one in case of multiple strings of the same length.",
            "Return None in case the input list is empty."
        ]
    );
}

#[test]
fn removing_the_examples_drops_their_lines_and_keeps_the_rules() {
    let p = problem(LONGEST, "longest");
    let c = candidates(&p);
    let r = remove(&p, &c[0]);
    assert_eq!(
        r.text,
        ">>> longest([])\n>>> longest(['a', 'b', 'c'])\n'a'\n>>> longest(['a', 'bb', 'ccc'])\n'ccc'"
    );
    assert!(!r.prompt.contains(">>>"), "{}", r.prompt);
    assert!(
        r.prompt
            .contains("Return None in case the input list is empty.")
    );
    assert!(r.prompt.ends_with("\"\"\"\n"), "{:?}", r.prompt);
}

#[test]
fn removing_a_rule_that_spans_two_lines_leaves_the_rest_of_each_line() {
    let p = problem(LONGEST, "longest");
    let c = candidates(&p);
    let r = remove(&p, &c[1]);
    assert!(
        r.prompt.contains("return the longest one.\n"),
        "{}",
        r.prompt
    );
    assert!(r.prompt.contains("Return None in case"), "{}", r.prompt);
    assert!(!r.prompt.contains("multiple"));
    assert!(r.prompt.contains(">>> longest([])"));
}

#[test]
fn a_worked_recurrence_is_a_rule_but_its_literal_calls_are_examples() {
    let prompt = "\ndef tri(n):\n    \"\"\"Everyone knows Fibonacci. Tribonacci is defined by the recurrence:\n    tri(n) = 1 + n / 2, if n is even.\n    For example:\n    tri(2) = 1 + (2 / 2) = 2\n           = 2 + 3 + 3 = 8 \n    You are given a non-negative integer number n, return a list.\n    \"\"\"\n";
    let p = problem(prompt, "tri");
    let c = candidates(&p);
    let ex = remove(&p, &c[0]);
    assert_eq!(ex.kind, Kind::Examples);
    assert_eq!(
        ex.text,
        "For example:\ntri(2) = 1 + (2 / 2) = 2\n       = 2 + 3 + 3 = 8"
    );
    assert!(ex.prompt.contains("tri(n) = 1 + n / 2, if n is even."));
    let rules: Vec<String> = c[1..].iter().map(|c| remove(&p, c).text).collect();
    assert!(
        rules
            .iter()
            .any(|r| r.ends_with("recurrence: tri(n) = 1 + n / 2, if n is even.")),
        "{rules:?}"
    );
}

#[test]
fn decimals_do_not_end_a_sentence() {
    assert_eq!(sentence_ends("rounded to 2.5 places. Next"), [22]);
}

#[test]
fn a_problem_with_no_docstring_has_no_candidates() {
    let p = problem("def f(x):\n    pass\n", "f");
    assert!(candidates(&p).is_empty());
    assert_eq!(pick(7, "HumanEval/0", &[]), None);
}

#[test]
fn splitmix64_matches_its_reference_values() {
    // The first three outputs of the reference SplitMix64 seeded with 0 (each call
    // advances the state by the golden gamma, as the reference `next()` does).
    let gamma: u64 = 0x9e37_79b9_7f4a_7c15;
    let outs: Vec<u64> = (0..3u64)
        .map(|i| splitmix64(i.wrapping_mul(gamma)))
        .collect();
    assert_eq!(
        outs,
        [
            0xe220_a839_7b1d_cdaf,
            0x6e78_9e6a_a1b9_65f4,
            0x06c4_5d18_8009_454f
        ]
    );
}

#[test]
fn the_pick_depends_on_the_seed_and_the_task_and_nothing_else() {
    let p = problem(LONGEST, "longest");
    let c = candidates(&p);
    let a: Vec<Option<usize>> = (0..20).map(|s| pick(s, "HumanEval/12", &c)).collect();
    let b: Vec<Option<usize>> = (0..20).map(|s| pick(s, "HumanEval/12", &c)).collect();
    assert_eq!(a, b);
    let distinct: std::collections::BTreeSet<_> = a.iter().collect();
    assert_eq!(distinct.len(), 3, "20 seeds reach every candidate: {a:?}");
}
