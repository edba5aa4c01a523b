//! The junior's first reply as k candidates (`agent.candidates`, `code` protocol).
//!
//! The first candidate is the reply the judge just watched, sampled as the endpoint is
//! configured; the other k − 1 (by default only when that reply fails one of its examples
//! or writes no code that can be placed: `agent.candidates_when`) answer the same messages
//! at `agent.retry_temperature`,
//! watched by no one (their tokens are in the log's cost events, not in B_t's token
//! terms). Every candidate that is an edit runs, from memory, on the task's examples and
//! on inputs derived from them ([`crate::agent::examples::probe`]); they are grouped by
//! what they returned and the one the evidence ranks first is placed
//! ([`crate::code::agreement`]). B's token terms stay those of the first reply: the
//! candidate placed is a choice of the harness, and its examples are judged after the edit
//! like any other. The agreement is a step fact of that edit (`candidates_agree` /
//! `candidates_split`).
//!
//! Only the first reply of a session is drawn k times: that is the decision point where a
//! session without a check decides to hand off, and later replies are resamples of a
//! failed check already.

use super::code_moves::CodeMove;
use super::observers::Unwatched;
use super::{Next, Session};
use crate::agent::examples::{module_of, probe};
use crate::agent::tools;
use crate::agent::turn::{self, TokenLimit, TurnEnd};
use crate::code::agreement::{self, Agreement, Behaviour};
use crate::code::place::Placed;
use crate::config::CandidatesWhen;
use crate::llm::types::ChatRequest;
use crate::protocol::{Actor, CandidateRun, Event, Outcome, SignalKind};

/// One drawn reply: its text, its tokens, the temperature it was drawn at.
struct Drawn {
    text: String,
    tokens: u64,
    temperature: f32,
}

impl Session<'_> {
    /// The reply to act on: `first` itself unless this is the junior's first reply under
    /// `agent.candidates` > 1, when the candidate the evidence ranks first. `Err` carries
    /// how the session goes on when the operator quit or forced a hand-off while they were
    /// drawn.
    pub(super) async fn first_candidates(
        &mut self,
        req: &ChatRequest,
        first: String,
        first_tokens: u64,
    ) -> Result<String, Next> {
        let k = self.config().agent.candidates;
        let Some(code) = self.code.as_mut() else {
            return Ok(first);
        };
        if k <= 1 || code.junior.drawn || code.junior.resampler.is_some() {
            return Ok(first);
        }
        code.junior.drawn = true;
        if self.config().agent.candidates_when == CandidatesWhen::FirstFails
            && !self.first_fails(&first).await
        {
            return Ok(first);
        }
        let temperature = self.config().agent.retry_temperature;
        let mut drawn = vec![Drawn {
            text: first,
            tokens: first_tokens,
            temperature: self.junior.config().temperature,
        }];
        let client = self.junior.sampling_at(temperature);
        for _ in 1..k {
            let mut count = Unwatched::default();
            let limit = TokenLimit::of(&client, Actor::Junior, None);
            let end = turn::stream_turn(
                &self.emitter,
                &mut self.inbox,
                &client,
                Actor::Junior,
                req,
                &mut count,
                limit,
            )
            .await;
            match end {
                TurnEnd::Done { text, .. } => drawn.push(Drawn {
                    text,
                    tokens: count.tokens,
                    temperature,
                }),
                TurnEnd::Quit => return Err(Next::End(Outcome::Aborted)),
                TurnEnd::Escalate(reason) => return Err(self.escalate(reason).await),
                // The endpoint is gone for now: compare what was drawn.
                TurnEnd::Failed => break,
            }
        }
        let chosen = self.compare(&drawn).await;
        Ok(drawn.swap_remove(chosen).text)
    }

    /// Whether the first reply gives a reason to draw more: it writes no code that can be
    /// placed, or its code fails an example the task states. A task with no example to
    /// run gives none (there is nothing to rank the candidates by but their agreement).
    async fn first_fails(&mut self, first: &str) -> bool {
        let has_check = self.config().agent.check.is_some();
        let CodeMove::Edit(placed) = self.read_code_reply(first, has_check) else {
            return true;
        };
        let edits = vec![Some(placed)];
        let Some((path, module, current, examples)) = self.probe_target(&edits) else {
            return false;
        };
        let source = edits
            .iter()
            .flatten()
            .flatten()
            .find(|p| p.path == path)
            .map_or(current, |p| p.content.clone());
        match probe(self.env.workspace, &module, &path, &[source], &examples).await {
            Ok(p) => p
                .behaviours
                .first()
                .is_none_or(|b| b.examples_failed > 0 || b.examples_passed == 0),
            Err(_) => true,
        }
    }

    /// Runs the candidates, logs what they did, remembers the agreement for the step's
    /// facts, and returns the one to place.
    async fn compare(&mut self, drawn: &[Drawn]) -> usize {
        let has_check = self.config().agent.check.is_some();
        let edits: Vec<Option<Vec<Placed>>> = drawn
            .iter()
            .map(|d| match self.read_code_reply(&d.text, has_check) {
                CodeMove::Edit(placed) => Some(placed),
                _ => None,
            })
            .collect();
        let target = self.probe_target(&edits);
        let (file, probes, behaviours, note) = match target {
            None => (
                String::new(),
                Vec::new(),
                Vec::new(),
                Some("no candidate wrote a Python file with examples to run".to_string()),
            ),
            Some((path, module, current, examples)) => {
                let sources: Vec<String> = edits
                    .iter()
                    .map(|e| {
                        e.as_ref()
                            .and_then(|placed| placed.iter().find(|p| p.path == path))
                            .map_or_else(|| current.clone(), |p| p.content.clone())
                    })
                    .collect();
                let ws = self.env.workspace;
                match probe(ws, &module, &path, &sources, &examples).await {
                    Ok(p) => (path, p.probes, p.behaviours, None),
                    Err(why) => (path, Vec::new(), Vec::new(), Some(why)),
                }
            }
        };
        let ran: Vec<Option<&Behaviour>> = edits
            .iter()
            .enumerate()
            .map(|(i, e)| e.as_ref().and_then(|_| behaviours.get(i)))
            .collect();
        let agreement = agreement::agree(&ran);
        self.log_candidates(drawn, &ran, &agreement, file, probes, note)
            .await;
        if let Some(code) = self.code.as_mut() {
            code.junior.agreement = if agreement.agree() {
                Some(SignalKind::CandidatesAgree)
            } else if agreement.split() {
                Some(SignalKind::CandidatesSplit)
            } else {
                None
            };
        }
        agreement.chosen
    }

    /// The Python file the candidates are run as: the first one a candidate writes that
    /// states examples, with its module, its text now and its examples.
    fn probe_target(
        &self,
        edits: &[Option<Vec<Placed>>],
    ) -> Option<(String, String, String, Vec<crate::code::examples::Example>)> {
        let ws = self.env.workspace;
        edits.iter().flatten().flatten().find_map(|p| {
            let module = module_of(&p.path)?;
            let current = tools::files::text_of(ws, &p.path).unwrap_or_default();
            let examples = self.examples_of(&p.path, &current).examples;
            (!examples.is_empty()).then(|| (p.path.clone(), module, current, examples))
        })
    }

    async fn log_candidates(
        &self,
        drawn: &[Drawn],
        ran: &[Option<&Behaviour>],
        agreement: &Agreement,
        file: String,
        probes: Vec<String>,
        note: Option<String>,
    ) {
        let as_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let candidates = drawn
            .iter()
            .zip(ran)
            .zip(&agreement.group)
            .map(|((d, b), g)| CandidateRun {
                temperature: d.temperature,
                tokens: d.tokens,
                group: g.map(as_u32),
                examples_passed: b.map_or(0, |b| b.examples_passed),
                examples_failed: b.map_or(0, |b| b.examples_failed),
                note: match b {
                    None => Some("wrote no code that could be placed".into()),
                    Some(b) => b.note.clone(),
                },
            })
            .collect();
        self.emitter
            .emit(Event::CandidatesRan {
                step: self.step,
                file,
                probes,
                candidates,
                groups: agreement.sizes.clone(),
                chosen: as_u32(agreement.chosen),
                note,
            })
            .await;
    }

    /// The agreement fact of the junior's first candidates, once, for the step that
    /// placed the chosen one.
    pub(super) fn take_agreement(&mut self) -> Option<SignalKind> {
        self.code.as_mut()?.junior.agreement.take()
    }
}
