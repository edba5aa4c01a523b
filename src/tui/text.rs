//! Styled text kept as data, turned into ratatui lines only for what is on screen.
//!
//! Spans carry a [`Tone`] instead of a finished style, so toggles such as the surprise
//! tint change the look of a 100k-token transcript without rebuilding it: the tone is
//! mapped to a style only for the few rows that are drawn.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::protocol::Actor;

/// Longest line kept before a hard break, so a stream without newlines cannot make one
/// line (and the cost of wrapping it) grow without bound.
pub const MAX_LINE_WIDTH: usize = 1024;

/// What a piece of text is, which decides how it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Text,
    /// Model text with the chosen token's surprise bucket (0 = unsurprising … 3 = very).
    Surprise(u8),
    Speaker(Actor),
    ToolName,
    Ok,
    Err,
    Dim,
    Escalation,
    Question,
    Answer,
    Warn,
    Key,
}

/// The surprise bucket of a token from its logprob; the edges are in nats of −log p
/// (0.7 ≈ p 0.5, 1.6 ≈ p 0.2, 3.0 ≈ p 0.05), so a tint means "the junior hesitated here".
pub fn surprise_bucket(logprob: Option<f64>) -> u8 {
    match logprob {
        Some(lp) if lp.is_finite() => {
            let s = -lp;
            if s < 0.7 {
                0
            } else if s < 1.6 {
                1
            } else if s < 3.0 {
                2
            } else {
                3
            }
        }
        _ => 0,
    }
}

/// The style of a tone; `tint` switches the surprise colouring on.
pub fn style_of(tone: Tone, tint: bool) -> Style {
    match tone {
        Tone::Text => Style::default(),
        Tone::Surprise(b) if tint => match b {
            0 => Style::default(),
            1 => Style::default().fg(Color::Yellow),
            2 => Style::default().fg(Color::LightRed),
            _ => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        },
        Tone::Surprise(_) => Style::default(),
        Tone::Speaker(Actor::Junior) => Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
        Tone::Speaker(Actor::Senior) => Style::default()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD),
        Tone::ToolName => Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD),
        Tone::Ok => Style::default().fg(Color::Green),
        Tone::Err => Style::default().fg(Color::Red),
        Tone::Dim => Style::default().fg(Color::DarkGray),
        Tone::Escalation => Style::default()
            .fg(Color::LightRed)
            .add_modifier(Modifier::BOLD),
        Tone::Question => Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
        Tone::Answer => Style::default().fg(Color::Green),
        Tone::Warn => Style::default().fg(Color::Yellow),
        Tone::Key => Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    }
}

/// A run of text with one tone.
#[derive(Debug, Clone, PartialEq)]
pub struct TSpan {
    pub text: String,
    pub tone: Tone,
}

/// A logical line (before wrapping) with its display width kept up to date.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TLine {
    pub spans: Vec<TSpan>,
    pub width: usize,
}

impl TLine {
    /// An empty line, to be filled by [`TLine::push`].
    pub fn new() -> Self {
        TLine::default()
    }

    /// A line of one tone.
    pub fn of(text: impl Into<String>, tone: Tone) -> Self {
        let mut line = TLine::new();
        line.push(&text.into(), tone);
        line
    }

    /// Builder form of [`TLine::push`].
    pub fn with(mut self, text: &str, tone: Tone) -> Self {
        self.push(text, tone);
        self
    }

    /// Appends text (no newlines expected), merging with the last span when the tone is
    /// the same so a token stream does not become one span per token.
    pub fn push(&mut self, text: &str, tone: Tone) {
        if text.is_empty() {
            return;
        }
        let clean = sanitize(text);
        self.width += display_width(&clean);
        match self.spans.last_mut() {
            Some(last) if last.tone == tone => last.text.push_str(&clean),
            _ => self.spans.push(TSpan { text: clean, tone }),
        }
    }

    /// The plain text, for tests and searches.
    pub fn plain(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    /// Splits the line into rows of at most `width` columns (by character, not word:
    /// streamed code is not prose, and this keeps the row count a cheap function of the
    /// width).
    pub fn wrap(&self, width: usize, tint: bool) -> Vec<Line<'static>> {
        let width = width.max(1);
        if self.width <= width {
            return vec![Line::from(
                self.spans
                    .iter()
                    .map(|s| Span::styled(s.text.clone(), style_of(s.tone, tint)))
                    .collect::<Vec<_>>(),
            )];
        }
        let mut rows = Vec::with_capacity(self.rows(width));
        let mut row: Vec<Span<'static>> = Vec::new();
        let mut used = 0usize;
        for span in &self.spans {
            let style = style_of(span.tone, tint);
            let mut piece = String::new();
            for ch in span.text.chars() {
                let w = char_width(ch);
                if used + w > width && used > 0 {
                    if !piece.is_empty() {
                        row.push(Span::styled(std::mem::take(&mut piece), style));
                    }
                    rows.push(Line::from(std::mem::take(&mut row)));
                    used = 0;
                }
                piece.push(ch);
                used += w;
            }
            if !piece.is_empty() {
                row.push(Span::styled(piece, style));
            }
        }
        if !row.is_empty() || rows.is_empty() {
            rows.push(Line::from(row));
        }
        rows
    }

    /// How many rows [`TLine::wrap`] yields at this width, without building them
    /// (exact for text of one-column characters, an estimate for wide ones).
    pub fn rows(&self, width: usize) -> usize {
        self.width.div_ceil(width.max(1)).max(1)
    }
}

/// Tabs become spaces and other control characters their visible forms
/// ([`crate::protocol::visible`], the same as every text front end): raw, they would move
/// the terminal's cursor behind ratatui's back; dropped, they would hide what the model
/// sent.
fn sanitize(text: &str) -> String {
    use crate::protocol::visible::visible;
    if text.contains('\t') {
        visible(&text.replace('\t', "    ")).into_owned()
    } else {
        visible(text).into_owned()
    }
}

/// Display width of a string as the terminal will draw it.
pub fn display_width(text: &str) -> usize {
    Span::raw(text).width()
}

fn char_width(ch: char) -> usize {
    if ch.is_ascii() {
        return 1;
    }
    let mut buf = [0u8; 4];
    display_width(ch.encode_utf8(&mut buf))
}

/// Cuts a string to at most `max` columns, marking the cut with `…`.
pub fn ellipsize(text: &str, max: usize) -> String {
    if display_width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = char_width(ch);
        if used + w + 1 > max {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn pushes_of_one_tone_merge_and_widths_add_up() {
        let mut l = TLine::new();
        l.push("fn ", Tone::Surprise(0));
        l.push("main", Tone::Surprise(0));
        l.push("()", Tone::Surprise(2));
        assert_eq!(l.spans.len(), 2);
        assert_eq!(l.width, 9);
        assert_eq!(l.plain(), "fn main()");
    }

    #[test]
    fn wrapping_splits_at_the_width_and_keeps_every_character() {
        let l = TLine::new()
            .with("abcdefg", Tone::Text)
            .with("hij", Tone::Err);
        let rows = l.wrap(4, true);
        let text: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        assert_eq!(text, vec!["abcd", "efgh", "ij"]);
        assert_eq!(l.rows(4), 3);
        assert_eq!(rows[1].spans[1].style, style_of(Tone::Err, true));
    }

    #[test]
    fn control_characters_never_reach_the_screen() {
        let l = TLine::of("a\tb\rc\u{7}\u{1b}[8m", Tone::Text);
        assert_eq!(l.plain(), "a    b␍c␇␛[8m");
        assert_eq!(l.width, 13);
    }

    #[test]
    fn surprise_buckets_follow_the_logprob() {
        assert_eq!(surprise_bucket(Some(-0.1)), 0);
        assert_eq!(surprise_bucket(Some(-1.0)), 1);
        assert_eq!(surprise_bucket(Some(-2.0)), 2);
        assert_eq!(surprise_bucket(Some(-9.0)), 3);
        assert_eq!(surprise_bucket(None), 0);
        assert_eq!(surprise_bucket(Some(f64::NAN)), 0);
    }

    #[test]
    fn the_tint_toggle_switches_only_surprise_colours() {
        assert_eq!(style_of(Tone::Surprise(3), false), Style::default());
        assert_ne!(style_of(Tone::Surprise(3), true), Style::default());
        assert_eq!(style_of(Tone::Err, false), style_of(Tone::Err, true));
    }

    #[test]
    fn ellipsize_respects_the_limit() {
        assert_eq!(ellipsize("abcdef", 4), "abc…");
        assert_eq!(ellipsize("abc", 4), "abc");
        assert_eq!(ellipsize("abc", 0), "");
    }
}
