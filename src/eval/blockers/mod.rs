//! A blocker suite from HumanEval, built the HiL-Bench way: take a detail the solution
//! needs out of each task, register it as a blocker whose answer is the removed text, and
//! keep the task only when the real lane shows the detail is needed.
//!
//! Two steps, because the middle one runs models: [`make::make`] writes the full and the
//! blocked variant of every problem; `handoff eval --policy single-shot` runs the reference
//! model over both; [`select::select`] keeps what the rule in [`select`] says and mixes in
//! untouched tasks. `tools/real-models/blocker-suite` runs the three in order.

pub(crate) mod detail;
pub(crate) mod make;
pub(crate) mod select;
