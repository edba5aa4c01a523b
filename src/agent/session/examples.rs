//! The task's own examples, run after every edit that changed the tree (see
//! [`crate::agent::examples`]): one `examples_ran` event per run, beside the step.

use super::Session;
use crate::agent::examples::{self, module_of};
use crate::agent::tools;
use crate::code::examples::{Extracted, for_file};
use crate::code::place::Placed;
use crate::protocol::{Actor, Event};

impl Session<'_> {
    /// Remembers each Python file the way the task gave it, before the first edit that
    /// writes it: the examples are read from these texts, never from the writer's.
    pub(super) fn keep_originals(&mut self, placed: &[Placed]) {
        let ws = self.env.workspace;
        let Some(code) = self.code.as_mut() else {
            return;
        };
        for p in placed {
            if module_of(&p.path).is_some() && !code.originals.contains_key(&p.path) {
                let text = tools::files::text_of(ws, &p.path).unwrap_or_default();
                code.originals.insert(p.path.clone(), text);
            }
        }
    }

    /// Runs the examples of every Python file written so far against the tree as it is,
    /// and logs what they said: (passed, failed). Nothing is logged, and `None` comes back,
    /// when no file states an example.
    pub(super) async fn run_examples(&mut self, actor: Actor) -> Option<(u32, u32)> {
        let code = self.code.as_ref()?;
        let originals: Vec<(String, String)> = code
            .originals
            .iter()
            .map(|(p, t)| (p.clone(), t.clone()))
            .collect();
        let mut files = Vec::new();
        let mut results = Vec::new();
        let mut unread = 0usize;
        let mut notes = Vec::new();
        for (path, original) in originals {
            let Some(module) = module_of(&path) else {
                continue;
            };
            let found = self.examples_of(&path, &original);
            unread += found.unread.len();
            if found.examples.is_empty() {
                continue;
            }
            let ran = examples::run(self.env.workspace, &module, &found.examples).await;
            if let Some(note) = &ran.note {
                notes.push(format!("{path}: {note}"));
            }
            files.push(path);
            results.extend(ran.results);
        }
        if results.is_empty() && notes.is_empty() {
            return None;
        }
        let passed = results.iter().filter(|r| r.passed).count();
        let failed = results.len() - passed;
        let as_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.emitter
            .emit(Event::ExamplesRan {
                step: self.step,
                actor,
                files,
                passed: as_u32(passed),
                failed: as_u32(failed),
                unread: as_u32(unread),
                results,
                note: (!notes.is_empty()).then(|| notes.join("; ")),
            })
            .await;
        Some((as_u32(passed), as_u32(failed)))
    }

    /// The examples of one file: its docstrings as the task gave them (the current text
    /// for a file the writer created), and the task's text about its functions.
    pub(super) fn examples_of(&self, path: &str, original: &str) -> Extracted {
        let current;
        let source = if original.trim().is_empty() {
            current = tools::files::text_of(self.env.workspace, path).unwrap_or_default();
            current.as_str()
        } else {
            original
        };
        for_file(self.task, source)
    }
}
