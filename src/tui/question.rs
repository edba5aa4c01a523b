//! The operator question modal: the judge's one targeted question, answered without
//! leaving the keyboard.
//!
//! The operator picks an option or types an answer, may mark the question as not needed
//! (that mark is the label Ask-F1 is computed from), or lets the senior decide.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::intent::Action;
use super::keys::{KeyHint, KeyOutcome, hint, is_ctrl};
use super::text::{Tone, style_of};
use crate::protocol::{Command, Event};

/// A pending question and the operator's answer in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionModal {
    pub step: u32,
    pub question: String,
    pub options: Vec<String>,
    pub default_assumption: Option<String>,
    pub self_initiated: bool,
    /// The detail the writer says the question is about: the modal names it so the
    /// operator can tell a targeted question from a vague one at a glance.
    pub topic: Option<String>,
    /// Index into the options; `options.len()` is the free-text row.
    pub selected: usize,
    pub text: String,
    /// The operator's "not needed" mark.
    pub not_needed: bool,
    /// Esc hides the modal without answering; `a` brings it back.
    pub hidden: bool,
}

impl QuestionModal {
    /// Opens on the first option (the junior's default is usually listed first), or on
    /// the text row when there are no options.
    pub fn new(
        step: u32,
        question: String,
        options: Vec<String>,
        default_assumption: Option<String>,
        self_initiated: bool,
    ) -> Self {
        QuestionModal {
            step,
            question,
            options,
            default_assumption,
            self_initiated,
            topic: None,
            selected: 0,
            text: String::new(),
            not_needed: false,
            hidden: false,
        }
    }

    /// The modal an `OperatorAsked` opens (none for any other event).
    pub fn asked(event: &Event) -> Option<Self> {
        let Event::OperatorAsked {
            step,
            question,
            options,
            default_assumption,
            self_initiated,
            topic,
        } = event
        else {
            return None;
        };
        let modal = QuestionModal::new(
            *step,
            question.clone(),
            options.clone(),
            default_assumption.clone(),
            *self_initiated,
        );
        Some(modal.about(topic.clone()))
    }

    /// The same modal naming the detail the question is about.
    pub fn about(mut self, topic: Option<String>) -> Self {
        self.topic = topic.filter(|t| !t.trim().is_empty());
        self
    }

    fn on_text_row(&self) -> bool {
        self.selected >= self.options.len()
    }

    fn answer(&self, answer: String) -> KeyOutcome {
        KeyOutcome::Consumed(vec![Action::Agent(Command::Answer {
            answer,
            needed: Some(!self.not_needed),
        })])
    }

    /// Takes every key while visible (it has a text field); the caller closes the modal
    /// when the outcome carries an action.
    pub fn handle_key(&mut self, key: &KeyEvent) -> KeyOutcome {
        if is_ctrl(key, 'd') {
            return KeyOutcome::Consumed(vec![Action::Agent(Command::DeferToSenior)]);
        }
        match key.code {
            KeyCode::Esc => self.hidden = true,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(self.options.len()),
            KeyCode::Tab => self.not_needed = !self.not_needed,
            KeyCode::Enter => {
                if self.on_text_row() {
                    let text = self.text.trim();
                    if !text.is_empty() {
                        return self.answer(text.to_string());
                    }
                } else if let Some(opt) = self.options.get(self.selected) {
                    return self.answer(opt.clone());
                }
            }
            KeyCode::Backspace if self.on_text_row() => {
                self.text.pop();
            }
            KeyCode::Char(c) if self.on_text_row() && !is_ctrl(key, c) => self.text.push(c),
            KeyCode::Char(c) if c.is_ascii_digit() => {
                let n = c.to_digit(10).unwrap_or(0) as usize;
                if (1..=self.options.len()).contains(&n) {
                    self.selected = n - 1;
                }
            }
            _ => {}
        }
        KeyOutcome::done()
    }

    /// The modal's keys, shown inside it and in the status bar.
    pub fn hints(&self) -> Vec<KeyHint> {
        let mut h = vec![hint("↑↓", "pick")];
        if !self.options.is_empty() {
            h.push(hint("1-9", "option"));
        }
        h.extend([
            hint("Enter", "send"),
            hint(
                "Tab",
                if self.not_needed {
                    "mark needed"
                } else {
                    "mark not needed"
                },
            ),
            hint("Ctrl-D", "let the senior decide"),
            hint("Esc", "hide"),
        ]);
        h
    }

    /// Draws the modal centred in `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let width = area.width.saturating_sub(2).min(78);
        let mut lines: Vec<Line<'static>> = Vec::new();
        lines.push(Line::styled(
            self.question.clone(),
            style_of(Tone::Question, true),
        ));
        if let Some(t) = &self.topic {
            lines.push(Line::styled(
                format!("about: {t}"),
                style_of(Tone::Key, true),
            ));
        }
        if let Some(d) = &self.default_assumption {
            lines.push(Line::styled(
                format!("without an answer the junior assumes: {d}"),
                style_of(Tone::Dim, true),
            ));
        }
        lines.push(Line::raw(""));
        for (i, opt) in self.options.iter().enumerate() {
            let mark = if i == self.selected { "› " } else { "  " };
            let style = if i == self.selected {
                style_of(Tone::Key, true)
            } else {
                style_of(Tone::Text, true)
            };
            lines.push(Line::styled(format!("{mark}{} {opt}", i + 1), style));
        }
        let mark = if self.on_text_row() { "› " } else { "  " };
        let cursor = if self.on_text_row() { "▏" } else { "" };
        lines.push(Line::from(vec![
            Span::styled(
                format!("{mark}answer: "),
                style_of(Tone::Key, self.on_text_row()),
            ),
            Span::raw(format!("{}{cursor}", self.text)),
        ]));
        lines.push(Line::raw(""));
        let check = if self.not_needed { "[x]" } else { "[ ]" };
        lines.push(Line::raw(format!("{check} not needed")));
        lines.push(hint_line(&self.hints()));
        let inner_w = width.saturating_sub(2).max(1) as usize;
        let rows: usize = lines
            .iter()
            .map(|l| l.width().div_ceil(inner_w).max(1))
            .sum();
        let height = (rows as u16 + 2).min(area.height);
        let rect = Rect {
            x: area.x + (area.width.saturating_sub(width)) / 2,
            y: area.y + (area.height.saturating_sub(height)) / 2,
            width,
            height,
        };
        let who = if self.self_initiated {
            "the junior asks"
        } else {
            "the judge asks"
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!(" Operator question · step {} · {who} ", self.step))
            .border_style(style_of(Tone::Question, true));
        Clear.render(rect, buf);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block)
            .render(rect, buf);
    }
}

/// Key hints as one styled line.
pub fn hint_line(hints: &[KeyHint]) -> Line<'static> {
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
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;
    use pretty_assertions::assert_eq;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn modal() -> QuestionModal {
        QuestionModal::new(
            2,
            "Which format?".into(),
            vec!["ISO".into(), "US".into()],
            Some("ISO".into()),
            false,
        )
    }

    #[test]
    fn a_picked_option_is_sent_as_a_needed_answer() {
        let mut m = modal();
        assert_eq!(m.handle_key(&key(KeyCode::Char('2'))), KeyOutcome::done());
        assert_eq!(
            m.handle_key(&key(KeyCode::Enter)),
            KeyOutcome::Consumed(vec![Action::Agent(Command::Answer {
                answer: "US".into(),
                needed: Some(true)
            })])
        );
    }

    #[test]
    fn free_text_with_the_not_needed_mark() {
        let mut m = modal();
        m.handle_key(&key(KeyCode::Down));
        m.handle_key(&key(KeyCode::Down));
        m.handle_key(&key(KeyCode::Down));
        assert_eq!(m.selected, 2, "stops at the text row");
        assert_eq!(
            m.handle_key(&key(KeyCode::Enter)),
            KeyOutcome::done(),
            "empty text is not sent"
        );
        for c in "both!".chars() {
            m.handle_key(&key(KeyCode::Char(c)));
        }
        m.handle_key(&key(KeyCode::Backspace));
        m.handle_key(&key(KeyCode::Tab));
        assert_eq!(
            m.handle_key(&key(KeyCode::Enter)),
            KeyOutcome::Consumed(vec![Action::Agent(Command::Answer {
                answer: "both".into(),
                needed: Some(false)
            })])
        );
    }

    #[test]
    fn ctrl_d_defers_and_esc_hides() {
        let mut m = modal();
        assert_eq!(
            m.handle_key(&KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            KeyOutcome::Consumed(vec![Action::Agent(Command::DeferToSenior)])
        );
        m.handle_key(&key(KeyCode::Esc));
        assert!(m.hidden);
    }
}
