//! Candidates grouped by what they do, and the one the evidence places.
//!
//! The junior's first reply may be k samples (`agent.candidates`). Each candidate's code
//! runs on the same inputs (the task's examples, then inputs derived from them); two
//! candidates that return the same on every input are one behaviour group. The placed
//! candidate is the first member of the group that passes the most of the task's examples,
//! then the largest group: the examples are the task's own statement of what it wants, so
//! they outrank a majority. CodeT (Chen et al., ICLR 2023) scores a group by its size times
//! the model-written tests it passes; with tests the task itself states, passing them is
//! not a guess to be weighed against agreement.
//!
//! The largest group's share of all k is the agreement fact the judge reads: candidates
//! that agree are evidence the task is understood (on public samples of another model, plain
//! agreement among samples separates right from wrong at AUROC 0.62–0.71, CodeT's dual
//! agreement at 0.87: ../shared reviews, results audit 4).

/// What one candidate did on the probe's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behaviour {
    /// What it returned (or raised) on each input, as printed; `None` when it did not run.
    pub outputs: Option<Vec<String>>,
    pub examples_passed: u32,
    pub examples_failed: u32,
    /// Why it did not run.
    pub note: Option<String>,
}

impl Behaviour {
    /// A candidate that gave nothing to compare, and why.
    pub fn silent(note: &str) -> Behaviour {
        Behaviour {
            outputs: None,
            examples_passed: 0,
            examples_failed: 0,
            note: Some(note.to_string()),
        }
    }
}

/// The k candidates grouped, and the one to place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreement {
    /// Per candidate, its group (an index into `sizes`); `None` for one that wrote no code
    /// or did not run.
    pub group: Vec<Option<usize>>,
    /// Members per group, groups in the order of their first member.
    pub sizes: Vec<u32>,
    /// The candidate to place: 0 (the first reply) when no candidate ran.
    pub chosen: usize,
}

impl Agreement {
    /// Candidates drawn.
    pub fn k(&self) -> u32 {
        u32::try_from(self.group.len()).unwrap_or(u32::MAX)
    }

    /// Members of the largest group (0 when none ran).
    pub fn largest(&self) -> u32 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }

    /// The largest group holds at least three quarters of all k candidates.
    pub fn agree(&self) -> bool {
        self.k() >= 2 && self.largest() * 4 >= self.k() * 3
    }

    /// No group holds more than half of all k candidates.
    pub fn split(&self) -> bool {
        self.k() >= 2 && self.largest() * 2 <= self.k()
    }
}

/// Groups `behaviours` (`None`: the candidate wrote no code) and chooses the one to place.
pub fn agree(behaviours: &[Option<&Behaviour>]) -> Agreement {
    let mut keys: Vec<&Vec<String>> = Vec::new();
    let mut sizes: Vec<u32> = Vec::new();
    let mut passed: Vec<u32> = Vec::new();
    let mut first: Vec<usize> = Vec::new();
    let group = behaviours
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let b = (*b)?;
            let outputs = b.outputs.as_ref()?;
            let g = match keys.iter().position(|k| *k == outputs) {
                Some(g) => g,
                None => {
                    keys.push(outputs);
                    sizes.push(0);
                    passed.push(b.examples_passed);
                    first.push(i);
                    keys.len() - 1
                }
            };
            sizes[g] += 1;
            Some(g)
        })
        .collect();
    // Most examples passed, then most members, then the earliest first member.
    let best = (0..sizes.len()).max_by(|&a, &b| {
        (passed[a], sizes[a])
            .cmp(&(passed[b], sizes[b]))
            .then(first[b].cmp(&first[a]))
    });
    Agreement {
        group,
        chosen: best.map_or(0, |g| first[g]),
        sizes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(outputs: &[&str], passed: u32, failed: u32) -> Behaviour {
        Behaviour {
            outputs: Some(outputs.iter().map(|s| s.to_string()).collect()),
            examples_passed: passed,
            examples_failed: failed,
            note: None,
        }
    }

    #[test]
    fn the_group_passing_most_examples_is_placed_before_a_larger_one() {
        let wrong = ran(&["5", "7"], 0, 1);
        let right = ran(&["6", "8"], 1, 0);
        let a = agree(&[Some(&wrong), Some(&wrong), Some(&wrong), Some(&right)]);
        assert_eq!(a.group, [Some(0), Some(0), Some(0), Some(1)]);
        assert_eq!(a.sizes, [3, 1]);
        assert_eq!(a.chosen, 3);
        assert!(a.agree() && !a.split());
    }

    #[test]
    fn among_equals_the_larger_group_then_the_earlier_wins() {
        let x = ran(&["1"], 1, 0);
        let y = ran(&["2"], 1, 0);
        let a = agree(&[Some(&x), Some(&y), Some(&y)]);
        assert_eq!((a.chosen, a.largest()), (1, 2));
        assert!(!a.agree() && !a.split(), "two of three is neither");
        let b = agree(&[Some(&x), Some(&y)]);
        assert_eq!(b.chosen, 0);
        assert!(b.split());
    }

    #[test]
    fn candidates_without_code_or_a_run_join_no_group() {
        let silent = Behaviour::silent("did not import");
        let x = ran(&["1"], 0, 0);
        let a = agree(&[None, Some(&silent), Some(&x), None]);
        assert_eq!(a.group, [None, None, Some(0), None]);
        assert_eq!((a.chosen, a.largest(), a.k()), (2, 1, 4));
        assert!(a.split());
        let none = agree(&[None, Some(&silent)]);
        assert_eq!((none.chosen, none.largest()), (0, 0));
        assert!(none.sizes.is_empty());
    }

    #[test]
    fn one_candidate_neither_agrees_nor_splits() {
        let x = ran(&["1"], 1, 0);
        let a = agree(&[Some(&x)]);
        assert!(!a.agree() && !a.split());
    }
}
