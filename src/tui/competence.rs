//! The `Competence` panel: how sure the judge is, where the line is, and why it moved.
//!
//! Keeps the belief and threshold series over ticks, the escalation points, the evidence
//! of the current and last step, and an optional counterfactual trace (replay under another
//! calibration or policy) with the ticks where the two would decide differently.

use std::collections::BTreeMap;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Widget, Wrap};

use super::text::{Tone, style_of};
use crate::protocol::{
    Event, EvidenceTerm, Route, SignalKind, candidates_summary, examples_summary,
};

/// How many signals the "why" line names.
const WHY_TERMS: usize = 3;

/// One point of a counterfactual trace: the belief and threshold another judge would have
/// had at this tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterfactualPoint {
    pub tick: u64,
    pub belief: f64,
    pub threshold: f64,
}

/// A second belief trace to compare with the logged one.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterfactual {
    /// What differs, e.g. `calibration other.json` or `policy myopic`.
    pub label: String,
    /// Sorted by tick.
    pub points: Vec<CounterfactualPoint>,
}

impl Counterfactual {
    /// The counterfactual state in force at `tick` (the last point at or before it).
    fn at(&self, tick: u64) -> Option<&CounterfactualPoint> {
        let i = self.points.partition_point(|p| p.tick <= tick);
        i.checked_sub(1).and_then(|i| self.points.get(i))
    }
}

/// The panel's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Competence {
    pub policy: String,
    /// (tick, B_t) in arrival order.
    belief: Vec<(f64, f64)>,
    /// (tick, τ_t) in arrival order.
    threshold: Vec<(f64, f64)>,
    /// (tick, B_t) where control left the junior (or would have, in shadow mode).
    escalations: Vec<(f64, f64, Route)>,
    /// Latest (B_t, τ_t).
    pub current: Option<(f64, f64)>,
    /// Σ llr per signal in the step under way.
    step_terms: BTreeMap<SignalKind, f64>,
    /// The same for the step that ended last.
    last_step_terms: BTreeMap<SignalKind, f64>,
    /// The judge's own reasons of an escalation in the step under way.
    escalation_why: Vec<(SignalKind, f64)>,
    counterfactual: Option<Counterfactual>,
    /// (tick, counterfactual B_t) where the decisions start to differ.
    differ_marks: Vec<(f64, f64)>,
    /// Ticks at which the logged and counterfactual decisions differ.
    differ_ticks: u64,
    differing: bool,
    /// The last run of the task's examples: (passed, failed, unread). Evidence shown beside
    /// B_t, not (yet) a term of it.
    examples: Option<(u32, u32, u32)>,
    /// "3 of 4 candidates agree", when the junior's first reply was k candidates.
    candidates: Option<String>,
}

impl Competence {
    /// Forgets the session; the counterfactual stays (it belongs to the replay, not to a
    /// position in it) and its comparison restarts.
    pub fn clear(&mut self) {
        let cf = self.counterfactual.take();
        *self = Competence::default();
        self.counterfactual = cf;
    }

    /// The panel sees the judge only through its events, so a replay draws what the live
    /// session drew; the policy follows each belief, so a change mid-session shows.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::SessionStarted { policy, .. } => self.policy = policy.clone(),
            Event::StepStarted { .. } => self.on_step_start(),
            Event::BeliefUpdated {
                tick,
                belief,
                threshold,
                policy,
                terms,
                ..
            } => {
                if self.policy != *policy {
                    self.policy = policy.clone();
                }
                self.on_belief(*tick, *belief, *threshold, terms);
            }
            Event::StepEnded {
                tick,
                belief,
                terms,
                ..
            } => self.on_step_end(*tick, *belief, terms),
            Event::Escalated {
                tick,
                route,
                belief,
                threshold,
                why,
                ..
            } => self.on_escalation(*tick, *belief, *threshold, *route, why),
            Event::ExamplesRan {
                passed,
                failed,
                unread,
                ..
            } => self.examples = Some((*passed, *failed, *unread)),
            Event::CandidatesRan {
                groups, candidates, ..
            } => self.candidates = Some(candidates_summary(groups, candidates.len())),
            _ => {}
        }
    }

    /// A new belief: one point of each series, and its evidence counts for the step.
    fn on_belief(&mut self, tick: u64, belief: f64, threshold: f64, terms: &[EvidenceTerm]) {
        let x = tick as f64;
        self.belief.push((x, belief));
        self.threshold.push((x, threshold));
        self.current = Some((belief, threshold));
        self.add_terms(terms);
        self.compare(tick, belief, threshold);
    }

    /// A step ended: its evidence counts for it, and it becomes "the last step".
    fn on_step_end(&mut self, tick: u64, belief: f64, terms: &[EvidenceTerm]) {
        self.add_terms(terms);
        let tau = self.current.map(|(_, t)| t);
        if let Some(tau) = tau {
            let x = tick as f64;
            if self.belief.last() != Some(&(x, belief)) {
                self.belief.push((x, belief));
                self.threshold.push((x, tau));
            }
            self.current = Some((belief, tau));
        }
        self.last_step_terms = std::mem::take(&mut self.step_terms);
    }

    /// A step starts: the "why" starts collecting its evidence afresh.
    fn on_step_start(&mut self) {
        self.step_terms.clear();
        self.escalation_why.clear();
    }

    /// Marks the escalation; its `why` is the judge's statement of what moved the belief
    /// most, so it explains the step until the next one starts.
    fn on_escalation(
        &mut self,
        tick: u64,
        belief: f64,
        threshold: f64,
        route: Route,
        why: &[EvidenceTerm],
    ) {
        self.escalations.push((tick as f64, belief, route));
        self.current = Some((belief, threshold));
        self.escalation_why = why.iter().map(|t| (t.signal, t.llr)).collect();
    }

    /// Sets (or replaces) the counterfactual trace and re-compares it with what has been
    /// seen so far.
    pub fn set_counterfactual(&mut self, cf: Option<Counterfactual>) {
        self.counterfactual = cf;
        self.differ_marks.clear();
        self.differ_ticks = 0;
        self.differing = false;
        let seen: Vec<(f64, f64, f64)> = self
            .belief
            .iter()
            .zip(&self.threshold)
            .map(|(&(x, b), &(_, t))| (x, b, t))
            .collect();
        for (x, b, t) in seen {
            self.compare(x as u64, b, t);
        }
    }

    /// How many logged ticks the counterfactual would have decided differently.
    pub fn differing_ticks(&self) -> u64 {
        self.differ_ticks
    }

    fn compare(&mut self, tick: u64, belief: f64, threshold: f64) {
        let Some(cf) = &self.counterfactual else {
            return;
        };
        let Some(p) = cf.at(tick) else {
            return;
        };
        let differs = (belief < threshold) != (p.belief < p.threshold);
        if differs {
            self.differ_ticks += 1;
            if !self.differing {
                self.differ_marks.push((tick as f64, p.belief));
            }
        }
        self.differing = differs;
    }

    fn add_terms(&mut self, terms: &[EvidenceTerm]) {
        for t in terms {
            *self.step_terms.entry(t.signal).or_insert(0.0) += t.llr;
        }
    }

    /// The signals that moved the belief most: an escalation's own reasons in the step
    /// under way, else this step's evidence (or the last step's, before this one has any),
    /// largest |Σ llr| first.
    pub fn why(&self) -> Vec<(SignalKind, f64)> {
        if !self.escalation_why.is_empty() {
            let mut v = self.escalation_why.clone();
            v.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
            v.truncate(WHY_TERMS);
            return v;
        }
        let source = if self.step_terms.is_empty() {
            &self.last_step_terms
        } else {
            &self.step_terms
        };
        let mut v: Vec<(SignalKind, f64)> = source.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        v.truncate(WHY_TERMS);
        v
    }

    /// `B_t 0.62  τ_t 0.41`, exactly, or dashes before the first belief.
    pub fn values_text(&self) -> String {
        match self.current {
            Some((b, t)) => format!("B_t {b:.2}  τ_t {t:.2}"),
            None => "B_t –  τ_t –".to_string(),
        }
    }

    /// The one-line form used when the panel is collapsed.
    pub fn summary_line(&self) -> Line<'static> {
        let below = self.current.is_some_and(|(b, t)| b < t);
        let tone = if below { Tone::Escalation } else { Tone::Ok };
        let mut spans = vec![
            Span::styled(self.values_text(), style_of(tone, true)),
            Span::styled(format!("  {}", self.policy), style_of(Tone::Dim, true)),
        ];
        if let Some((passed, failed, unread)) = self.examples {
            let tone = if failed == 0 { Tone::Ok } else { Tone::Err };
            spans.push(Span::styled(" · ", style_of(Tone::Dim, true)));
            spans.push(Span::styled(
                examples_summary(passed, failed, unread),
                style_of(tone, true),
            ));
        }
        if let Some(agree) = &self.candidates {
            spans.push(Span::styled(" · ", style_of(Tone::Dim, true)));
            spans.push(Span::styled(agree.clone(), style_of(Tone::Dim, true)));
        }
        Line::from(spans)
    }

    /// Draws the values, the reasons, the counterfactual line if any, and the chart when
    /// there is room for it (the numbers always come first).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let block = Block::default().borders(Borders::ALL).title(" Competence ");
        let inner = block.inner(area);
        block.render(area, buf);
        let mut text = vec![self.summary_line(), self.why_line()];
        if let Some(cf) = &self.counterfactual {
            text.push(self.counterfactual_line(cf));
        }
        let w = (inner.width as usize).max(1);
        let wrapped: usize = text.iter().map(|l| l.width().div_ceil(w).max(1)).sum();
        let text_rows = (wrapped as u16).min(inner.height);
        let [top, chart] =
            Layout::vertical([Constraint::Length(text_rows), Constraint::Fill(1)]).areas(inner);
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .render(top, buf);
        if chart.height >= 4 && chart.width >= 12 {
            self.render_chart(chart, buf);
        }
    }

    fn why_line(&self) -> Line<'static> {
        let why = self.why();
        let mut spans = vec![Span::styled("why ", style_of(Tone::Dim, true))];
        if why.is_empty() {
            spans.push(Span::styled("no evidence yet", style_of(Tone::Dim, true)));
        }
        for (i, (kind, llr)) in why.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", style_of(Tone::Dim, true)));
            }
            let tone = if llr < 0.0 { Tone::Err } else { Tone::Ok };
            spans.push(Span::raw(kind.name().to_string()));
            spans.push(Span::styled(format!(" {llr:+.2}"), style_of(tone, true)));
        }
        Line::from(spans)
    }

    fn counterfactual_line(&self, cf: &Counterfactual) -> Line<'static> {
        let now = self.belief.last().and_then(|&(x, _)| cf.at(x as u64));
        let values = match now {
            Some(p) => format!("B' {:.2}  τ' {:.2}", p.belief, p.threshold),
            None => "B' –  τ' –".to_string(),
        };
        Line::from(vec![
            Span::styled(format!("{} ", cf.label), style_of(Tone::Dim, true)),
            Span::styled(values, Style::default().fg(Color::Magenta)),
            Span::styled(
                format!("  differs at {} ticks", self.differ_ticks),
                style_of(Tone::Warn, true),
            ),
        ])
    }

    fn render_chart(&self, area: Rect, buf: &mut Buffer) {
        // Two points per braille column is all the resolution there is; more only costs time.
        let buckets = (area.width as usize).saturating_mul(2).max(2);
        let belief = decimate(&self.belief, buckets);
        let threshold = decimate(&self.threshold, buckets);
        let esc: Vec<(f64, f64)> = self.escalations.iter().map(|&(x, b, _)| (x, b)).collect();
        let cf_points: Vec<(f64, f64)> = match &self.counterfactual {
            Some(cf) => {
                let upto = self.belief.last().map_or(0.0, |p| p.0);
                let pts: Vec<(f64, f64)> = cf
                    .points
                    .iter()
                    .take_while(|p| p.tick as f64 <= upto)
                    .map(|p| (p.tick as f64, p.belief))
                    .collect();
                decimate(&pts, buckets)
            }
            None => Vec::new(),
        };
        let x_max = self
            .belief
            .last()
            .map_or(1.0, |p| p.0)
            .max(esc.last().map_or(0.0, |p| p.0))
            .max(1.0);
        let mut sets = vec![
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Yellow))
                .data(&threshold),
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Cyan))
                .data(&belief),
        ];
        if !cf_points.is_empty() {
            sets.push(
                Dataset::default()
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(Style::default().fg(Color::Magenta))
                    .data(&cf_points),
            );
            sets.push(
                Dataset::default()
                    .marker(Marker::Custom('◆'))
                    .graph_type(GraphType::Scatter)
                    .style(Style::default().fg(Color::Magenta))
                    .data(&self.differ_marks),
            );
        }
        sets.push(
            Dataset::default()
                .marker(Marker::Custom('▼'))
                .graph_type(GraphType::Scatter)
                .style(Style::default().fg(Color::Red))
                .data(&esc),
        );
        let dim = style_of(Tone::Dim, true);
        Chart::new(sets)
            .legend_position(None)
            .x_axis(
                Axis::default()
                    .bounds([0.0, x_max])
                    .labels(vec![
                        Span::styled("0", dim),
                        Span::styled(format!("{x_max:.0}"), dim),
                    ])
                    .style(dim),
            )
            .y_axis(
                Axis::default()
                    .bounds([0.0, 1.0])
                    .labels(vec![Span::styled("0", dim), Span::styled("1", dim)])
                    .style(dim),
            )
            .render(area, buf);
    }
}

/// Keeps the shape of a long series in about `buckets` points: each group of consecutive
/// points becomes its minimum and maximum (in order), so dips that triggered escalations
/// survive the thinning.
pub fn decimate(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    if points.len() <= buckets.saturating_mul(2) || buckets == 0 {
        return points.to_vec();
    }
    let size = points.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(buckets * 2);
    for chunk in points.chunks(size) {
        let mut lo = chunk[0];
        let mut hi = chunk[0];
        for &p in chunk {
            if p.1 < lo.1 {
                lo = p;
            }
            if p.1 > hi.1 {
                hi = p;
            }
        }
        if lo.0 <= hi.0 {
            out.push(lo);
            out.push(hi);
        } else {
            out.push(hi);
            out.push(lo);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn term(signal: SignalKind, llr: f64) -> EvidenceTerm {
        EvidenceTerm {
            signal,
            value: 1.0,
            llr,
        }
    }

    #[test]
    fn values_are_printed_in_the_documented_form() {
        let mut c = Competence::default();
        assert_eq!(c.values_text(), "B_t –  τ_t –");
        c.on_belief(3, 0.6234, 0.409, &[]);
        assert_eq!(c.values_text(), "B_t 0.62  τ_t 0.41");
    }

    #[test]
    fn why_names_the_largest_movers_of_the_step() {
        let mut c = Competence::default();
        c.on_step_start();
        c.on_belief(1, 0.7, 0.4, &[term(SignalKind::Entropy, -0.1)]);
        c.on_belief(
            2,
            0.6,
            0.4,
            &[
                term(SignalKind::Entropy, -0.2),
                term(SignalKind::Margin, 0.05),
            ],
        );
        c.on_step_end(2, 0.4, &[term(SignalKind::ToolError, -0.9)]);
        let why = c.why();
        assert_eq!(why[0].0, SignalKind::ToolError);
        assert_eq!(why[1].0, SignalKind::Entropy);
        assert!((why[1].1 + 0.3).abs() < 1e-12);
        // A new step with no evidence yet still explains the last one.
        c.on_step_start();
        assert_eq!(c.why()[0].0, SignalKind::ToolError);
        c.on_belief(3, 0.4, 0.4, &[term(SignalKind::Surprise, 0.2)]);
        assert_eq!(c.why(), vec![(SignalKind::Surprise, 0.2)]);
        // An escalation's own reasons win until the next step.
        c.on_escalation(
            3,
            0.3,
            0.4,
            Route::Senior,
            &[term(SignalKind::NoDiff, -0.7)],
        );
        assert_eq!(c.why(), vec![(SignalKind::NoDiff, -0.7)]);
        c.on_step_start();
        assert_eq!(c.why()[0].0, SignalKind::ToolError, "back to the last step");
    }

    #[test]
    fn decimation_keeps_extremes_and_bounds_the_size() {
        let mut pts: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, 0.8)).collect();
        pts[5_000].1 = 0.05;
        let d = decimate(&pts, 50);
        assert!(d.len() <= 100, "{}", d.len());
        assert!(d.iter().any(|p| p.1 == 0.05), "the dip survives");
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0), "x stays ordered");
    }

    #[test]
    fn counterfactual_decisions_are_compared_tick_by_tick() {
        let mut c = Competence::default();
        c.on_belief(1, 0.8, 0.4, &[]);
        c.on_belief(2, 0.5, 0.4, &[]);
        c.on_belief(3, 0.3, 0.4, &[]);
        let cf = Counterfactual {
            label: "policy myopic".into(),
            points: vec![
                CounterfactualPoint {
                    tick: 1,
                    belief: 0.8,
                    threshold: 0.4,
                },
                CounterfactualPoint {
                    tick: 2,
                    belief: 0.35,
                    threshold: 0.4,
                },
            ],
        };
        c.set_counterfactual(Some(cf));
        // tick 2: live continues, cf escalates → differ; tick 3: both escalate (cf holds tick 2).
        assert_eq!(c.differing_ticks(), 1);
        assert_eq!(c.differ_marks, vec![(2.0, 0.35)]);
        c.on_belief(4, 0.9, 0.4, &[]);
        assert_eq!(c.differing_ticks(), 2);
        assert_eq!(
            c.differ_marks.len(),
            2,
            "a new disagreement span gets its own mark"
        );
    }
}
