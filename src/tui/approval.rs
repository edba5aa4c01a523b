//! The approval prompt: a tool call waits for the operator's yes or no.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::intent::Action;
use super::keys::{KeyHint, KeyOutcome, hint, is_char};
use super::question::hint_line;
use super::text::{TLine, Tone, ellipsize, style_of};
use crate::protocol::Command;

/// A tool call waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPrompt {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    /// The file change the call would make (its patch or content), when it makes one:
    /// shown above the question, so a write is judged by what it writes.
    pub change: Vec<TLine>,
}

/// Lines of a change shown in the prompt (the transcript, expanded with `o`, has more).
pub const CHANGE_LINES_SHOWN: usize = 12;

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
        let change_rows = u16::try_from(self.change.len().saturating_sub(1)).unwrap_or(u16::MAX);
        let height = (4 + change_rows)
            .min(area.height.max(4) / 2)
            .max(4)
            .min(area.height);
        let rect = Rect {
            x: area.x,
            y: area.y + area.height.saturating_sub(height),
            width: area.width,
            height,
        };
        let room = (rect.width as usize).saturating_sub(4);
        let mut lines = vec![Line::styled(
            ellipsize(&format!("{} {}", self.name, self.arguments), room),
            style_of(Tone::ToolName, true),
        )];
        // The change, as many lines as fit above the hints.
        let fit = usize::from(height.saturating_sub(4));
        for l in self.change.iter().skip(1).take(fit) {
            let spans: Vec<ratatui::text::Span<'static>> = l
                .spans
                .iter()
                .map(|s| {
                    ratatui::text::Span::styled(ellipsize(&s.text, room), style_of(s.tone, true))
                })
                .collect();
            lines.push(Line::from(spans));
        }
        lines.push(hint_line(&self.hints()));
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
