//! The steps list: one row per step — number, tool, result, model, belief at its end.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, Widget};

use super::text::{Tone, ellipsize, style_of};
use crate::protocol::{Actor, Event};

/// One step as far as it is known.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub step: u32,
    pub actor: Actor,
    pub tool: Option<String>,
    /// `None` while the step runs.
    pub ok: Option<bool>,
    pub belief: Option<f64>,
    /// Control left the junior during this step.
    pub escalated: bool,
}

/// The list's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Steps {
    pub rows: Vec<StepRow>,
}

impl Steps {
    /// Forgets the session's steps (a new session or a replay seek).
    pub fn clear(&mut self) {
        self.rows.clear();
    }

    /// A row fills in as its step's events arrive; a tool call or end of a step whose start
    /// was not seen (a log cut mid-step) still gets its row.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::StepStarted { step, actor, .. } => self.start(*step, *actor),
            Event::ToolCalled {
                step, actor, name, ..
            } => self.row_mut(*step, *actor).tool = Some(name.clone()),
            Event::StepEnded {
                step,
                actor,
                tool,
                ok,
                belief,
                ..
            } => {
                let row = self.row_mut(*step, *actor);
                // A step the senior took over ends as the senior's.
                row.actor = *actor;
                row.ok = Some(*ok);
                row.belief = Some(*belief);
                if tool.is_some() {
                    row.tool = tool.clone();
                }
            }
            Event::Escalated { step, .. } => {
                if let Some(row) = self.rows.iter_mut().rev().find(|r| r.step == *step) {
                    row.escalated = true;
                }
            }
            _ => {}
        }
    }

    /// A step starts; its result and belief are filled in when it ends.
    pub fn start(&mut self, step: u32, actor: Actor) {
        self.rows.push(StepRow {
            step,
            actor,
            tool: None,
            ok: None,
            belief: None,
            escalated: false,
        });
    }

    /// The row of `step`, created if the start was not seen (a log cut mid-step).
    pub fn row_mut(&mut self, step: u32, actor: Actor) -> &mut StepRow {
        let found = self.rows.iter().rposition(|r| r.step == step);
        let i = match found {
            Some(i) => i,
            None => {
                self.start(step, actor);
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    /// Draws the last rows that fit; `models` names the junior and senior models.
    pub fn render(&self, area: Rect, buf: &mut Buffer, models: (&str, &str)) {
        let block = Block::default().borders(Borders::ALL).title(" Steps ");
        let inner = block.inner(area);
        let visible = (inner.height as usize).saturating_sub(1);
        let skip = self.rows.len().saturating_sub(visible);
        let model_w = (inner.width as usize)
            .saturating_sub(4 + 12 + 4 + 5 + 4)
            .clamp(6, 24);
        let rows = self.rows.iter().skip(skip).map(|r| {
            let (res, tone) = match r.ok {
                None => ("…", Tone::Dim),
                Some(true) => ("ok", Tone::Ok),
                Some(false) => ("err", Tone::Err),
            };
            let model = match r.actor {
                Actor::Junior => models.0,
                Actor::Senior => models.1,
            };
            let belief = r.belief.map_or("–".to_string(), |b| format!("{b:.2}"));
            let mut step = r.step.to_string();
            if r.escalated {
                step.push('▼');
            }
            Row::new(vec![
                Cell::from(step),
                Cell::from(ellipsize(r.tool.as_deref().unwrap_or("–"), 12)),
                Cell::from(res).style(style_of(tone, true)),
                Cell::from(ellipsize(model, model_w)).style(style_of(Tone::Speaker(r.actor), true)),
                Cell::from(belief),
            ])
        });
        let header = Row::new(vec!["#", "tool", "res", "model", "B"])
            .style(Style::default().add_modifier(Modifier::BOLD));
        Table::new(
            rows,
            [
                Constraint::Length(4),
                Constraint::Length(12),
                Constraint::Length(4),
                Constraint::Fill(1),
                Constraint::Length(4),
            ],
        )
        .header(header)
        .block(block)
        .render(area, buf);
    }
}
