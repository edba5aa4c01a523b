//! The approval prompt: a tool call waits for the operator's yes or no.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::intent::Action;
use super::keys::{KeyHint, KeyOutcome, hint, is_char};
use super::question::hint_line;
use super::text::{Tone, ellipsize, style_of};
use crate::protocol::Command;

/// A tool call waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPrompt {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
}

impl ApprovalPrompt {
    /// Takes y/n only, so the operator can still scroll the transcript to judge the call.
    pub fn handle_key(&self, key: &KeyEvent) -> KeyOutcome {
        let approved = if is_char(key, 'y') || key.code == KeyCode::Enter {
            true
        } else if is_char(key, 'n') {
            false
        } else {
            return KeyOutcome::Ignored;
        };
        KeyOutcome::Consumed(vec![Action::Agent(Command::Approve {
            call_id: self.call_id.clone(),
            approved,
        })])
    }

    /// Shown first in the status bar while a call waits, so the operator sees how to answer.
    pub fn hints(&self) -> Vec<KeyHint> {
        vec![hint("y/Enter", "approve"), hint("n", "refuse")]
    }

    /// Draws the prompt along the bottom of `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let height = 4.min(area.height);
        let rect = Rect {
            x: area.x,
            y: area.y + area.height.saturating_sub(height),
            width: area.width,
            height,
        };
        let room = (rect.width as usize).saturating_sub(4);
        let lines = vec![
            Line::styled(
                ellipsize(&format!("{} {}", self.name, self.arguments), room),
                style_of(Tone::ToolName, true),
            ),
            hint_line(&self.hints()),
        ];
        let block = Block::default()
            .borders(Borders::ALL)
            .title(" Approve this tool call? ")
            .border_style(style_of(Tone::Question, true));
        Clear.render(rect, buf);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block)
            .render(rect, buf);
    }
}
