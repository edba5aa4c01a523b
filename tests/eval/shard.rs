//! Shards split a suite the same way on every machine, into disjoint covering slices; the
//! bundled tasks are sound.

use std::collections::BTreeSet;

use handoff::eval::Shard;

use super::fake;

#[test]
fn shards_are_disjoint_cover_the_suite_and_balance() {
    let suite = fake::bundled();
    let all: BTreeSet<String> = suite.tasks.iter().map(|t| t.id.clone()).collect();
    for n in 1..=5 {
        let mut seen = BTreeSet::new();
        let mut sizes = Vec::new();
        for i in 0..n {
            let shard = Shard::parse(&format!("{i}/{n}")).expect("shard");
            let mut reversed = suite.tasks.clone();
            reversed.reverse();
            let ids: Vec<String> = shard
                .select(suite.tasks.clone())
                .into_iter()
                .map(|t| t.id)
                .collect();
            // The same slice whatever order the tasks were listed in.
            let again: Vec<String> = shard.select(reversed).into_iter().map(|t| t.id).collect();
            assert_eq!(ids, again);
            for id in &ids {
                assert!(seen.insert(id.clone()), "{id} in two shards of {n}");
            }
            sizes.push(ids.len());
        }
        assert_eq!(seen, all, "shards of {n} cover the suite");
        let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
        assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{sizes:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_templates_fail_and_their_solutions_pass() {
    // The Rust half is checked by the bundled run (solutions) and `eval --validate`.
    let mut suite = fake::bundled();
    suite.tasks.retain(|t| t.id.starts_with("py-"));
    assert_eq!(suite.tasks.len(), 6);
    for (id, v) in handoff::eval::validate_suite(&suite, 60, 2).await {
        let v = v.expect("validates");
        assert!(v.template_fails, "{id}");
        assert_eq!(v.solution_passes, Some(true), "{id}");
    }
}
