//! The help overlay (`?`): every key of every component, generated from their hints.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::keys::KeyHint;
use super::text::{Tone, style_of};

/// Draws `sections` (a title and its hints each) centred in `area`, each section's keys
/// flowing on wrapped lines so the whole list fits an 80×24 terminal.
pub fn render(sections: &[(&str, Vec<KeyHint>)], area: Rect, buf: &mut Buffer) {
    let width = area.width.saturating_sub(4).min(72);
    let inner_w = width.saturating_sub(2).max(1) as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut rows = 0usize;
    for (title, hints) in sections {
        lines.push(Line::styled(
            title.to_string(),
            style_of(Tone::Question, true),
        ));
        let mut spans = Vec::new();
        for (i, h) in hints.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", style_of(Tone::Dim, true)));
            }
            spans.push(Span::styled(h.keys, style_of(Tone::Key, true)));
            spans.push(Span::raw(format!(" {}", h.what)));
        }
        let line = Line::from(spans);
        rows += 1 + line.width().div_ceil(inner_w).max(1);
        lines.push(line);
    }
    let height = (rows as u16 + 2).min(area.height);
    let rect = Rect {
        x: area.x + area.width.saturating_sub(width) / 2,
        y: area.y + area.height.saturating_sub(height) / 2,
        width,
        height,
    };
    Clear.render(rect, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Keys (? or Esc closes) "),
        )
        .render(rect, buf);
}
