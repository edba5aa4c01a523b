//! The status bar: what the session has cost, per model and per route, how long it has
//! run, how often it escalated, and where its log is.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::keys::KeyHint;
use super::text::{Tone, style_of};
use crate::protocol::{Actor, Event, Route, Stamped};

/// Tokens and money of one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelCost {
    pub model: String,
    pub actor: Option<Actor>,
    pub tokens: u64,
    pub usd: f64,
    /// Some usage was counted locally because the server sent none.
    pub estimated: bool,
}

/// Tokens and money spent while control was with one route.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RouteCost {
    pub tokens: u64,
    pub usd: f64,
}

/// The running totals behind the status bar.
///
/// Cost events do not say which route they served, so spending is attributed to the route
/// in control when it arrives: the junior's own work until an escalation, that route until
/// the senior returns or the operator answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    pub models: Vec<ModelCost>,
    /// Spent with the junior in control.
    pub own: RouteCost,
    pub senior: RouteCost,
    pub operator: RouteCost,
    /// The route in control now, if not the junior.
    pub route_now: Option<Route>,
    pub escalations_senior: u32,
    pub escalations_operator: u32,
    /// Escalations that were only logged (shadow mode).
    pub escalations_shadow: u32,
    pub elapsed_ms: u64,
}

impl Ledger {
    /// The clock follows the events' stamps and never runs back; which route is in control
    /// changes here, so later costs are booked to it (see [`Ledger`]).
    pub fn apply(&mut self, stamped: &Stamped) {
        self.elapsed_ms = self.elapsed_ms.max(stamped.t_ms);
        match &stamped.event {
            Event::CostIncurred {
                actor,
                model,
                input_tokens,
                output_tokens,
                usd,
                estimated,
            } => self.add_cost(
                *actor,
                model,
                input_tokens + output_tokens,
                *usd,
                *estimated,
            ),
            Event::Escalated { route, shadow, .. } => self.count_escalation(*route, *shadow),
            Event::OperatorAnswered {
                deferred_to_senior, ..
            } => self.route_now = deferred_to_senior.then_some(Route::Senior),
            Event::SeniorTookOver { .. } => self.route_now = Some(Route::Senior),
            Event::SeniorReturned { .. } => self.route_now = None,
            _ => {}
        }
    }

    /// A shadow escalation is only counted; a real one also hands control to its route.
    fn count_escalation(&mut self, route: Route, shadow: bool) {
        if shadow {
            self.escalations_shadow += 1;
        } else {
            match route {
                Route::Senior => self.escalations_senior += 1,
                Route::Operator => self.escalations_operator += 1,
            }
            self.route_now = Some(route);
        }
    }

    /// Books one request's tokens and money to its model and to the route in control.
    pub fn add_cost(&mut self, actor: Actor, model: &str, tokens: u64, usd: f64, estimated: bool) {
        let i = match self.models.iter().position(|m| m.model == model) {
            Some(i) => i,
            None => {
                self.models.push(ModelCost {
                    model: model.to_string(),
                    actor: Some(actor),
                    ..ModelCost::default()
                });
                self.models.len() - 1
            }
        };
        let m = &mut self.models[i];
        m.tokens += tokens;
        m.usd += usd;
        m.estimated |= estimated;
        let route = match self.route_now {
            None => &mut self.own,
            Some(Route::Senior) => &mut self.senior,
            Some(Route::Operator) => &mut self.operator,
        };
        route.tokens += tokens;
        route.usd += usd;
    }

    /// All escalations, shadow ones included (they are decisions the judge made).
    pub fn escalations(&self) -> u32 {
        self.escalations_senior + self.escalations_operator + self.escalations_shadow
    }

    /// The two status lines: costs, then time, escalations and log.
    pub fn lines(&self, log_path: Option<&str>) -> [Line<'static>; 2] {
        let dim = style_of(Tone::Dim, true);
        let mut costs: Vec<Span<'static>> = Vec::new();
        for m in &self.models {
            if !costs.is_empty() {
                costs.push(Span::styled(" │ ", dim));
            }
            let tone = m.actor.map_or(Tone::Text, Tone::Speaker);
            costs.push(Span::styled(m.model.clone(), style_of(tone, true)));
            let est = if m.estimated { "~" } else { "" };
            costs.push(Span::raw(format!(
                " {est}{} tok {}",
                tokens(m.tokens),
                money(m.usd)
            )));
        }
        if costs.is_empty() {
            costs.push(Span::styled("no model cost yet", dim));
        }
        costs.push(Span::styled(" │ route ", dim));
        costs.push(Span::raw(format!(
            "own {} · senior {} · operator {}",
            money(self.own.usd),
            money(self.senior.usd),
            money(self.operator.usd)
        )));
        let secs = self.elapsed_ms / 1000;
        let mut second = vec![
            Span::raw(format!("{:02}:{:02}", secs / 60, secs % 60)),
            Span::styled(" │ ", dim),
            Span::raw(format!(
                "escalations {} (senior {}, operator {}",
                self.escalations(),
                self.escalations_senior,
                self.escalations_operator
            )),
        ];
        if self.escalations_shadow > 0 {
            second.push(Span::raw(format!(", shadow {}", self.escalations_shadow)));
        }
        second.push(Span::raw(")"));
        if let Some(path) = log_path {
            second.push(Span::styled(" │ log ", dim));
            second.push(Span::raw(path.to_string()));
        }
        [Line::from(costs), Line::from(second)]
    }
}

/// `1234` → `1.2k`, so token counts stay short.
fn tokens(n: u64) -> String {
    if n >= 10_000 {
        format!("{}k", n / 1000)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

/// Dollars with enough digits for cheap requests; a free local model shows `$0`.
fn money(usd: f64) -> String {
    if usd == 0.0 {
        "$0".to_string()
    } else {
        format!("${usd:.4}")
    }
}

/// Draws key hints on one line, `key what` pairs separated by spaces.
pub fn render_hints(hints: &[KeyHint], area: Rect, buf: &mut Buffer) {
    let mut spans = Vec::new();
    for (i, h) in hints.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw("  "));
        }
        spans.push(Span::styled(h.keys, style_of(Tone::Key, true)));
        spans.push(Span::styled(
            format!(" {}", h.what),
            style_of(Tone::Dim, true),
        ));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn spending_goes_to_the_model_and_to_the_route_in_control() {
        let mut l = Ledger::default();
        l.add_cost(Actor::Junior, "j", 100, 0.0, false);
        l.route_now = Some(Route::Senior);
        l.add_cost(Actor::Senior, "s", 50, 0.02, false);
        l.route_now = Some(Route::Operator);
        l.add_cost(Actor::Senior, "s", 10, 0.01, true);
        assert_eq!(l.models.len(), 2);
        assert_eq!(l.models[1].tokens, 60);
        assert!((l.models[1].usd - 0.03).abs() < 1e-12);
        assert!(l.models[1].estimated);
        assert_eq!(l.own.tokens, 100);
        assert_eq!(l.senior.tokens, 50);
        assert_eq!(l.operator.tokens, 10);
    }

    #[test]
    fn token_counts_are_short() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1234), "1.2k");
        assert_eq!(tokens(123_456), "123k");
    }
}
