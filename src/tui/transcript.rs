//! The transcript pane: what the models said and did, in order.
//!
//! Text is appended token by token to the last line of the current speech, so the cost of
//! an event does not grow with the session. Drawing walks the entries backwards and wraps
//! only the rows that will be visible, which keeps a frame of a very long session cheap.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::keys::{KeyHint, KeyOutcome, hint, is_char};
use super::notes::note_of;
use super::text::{MAX_LINE_WIDTH, TLine, Tone, display_width, ellipsize, surprise_bucket};
use crate::protocol::{Actor, Event};

/// Lines of tool output shown when tool calls are expanded.
const TOOL_OUTPUT_LINES: usize = 12;
/// Columns of tool arguments shown when expanded (a `write_file` carries a whole file).
const ARGS_SHOWN: usize = 2000;
/// Lines of a patch or a written file shown when tool calls are expanded.
const CHANGE_LINES_SHOWN: usize = 40;
/// Rows moved by PgUp/PgDn.
const PAGE: usize = 10;

/// One tool call with what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub step: u32,
    pub actor: Actor,
    pub call_id: String,
    pub name: String,
    /// Arguments as compact JSON.
    pub arguments: String,
    /// `(approved, by)` once decided.
    pub approval: Option<(bool, String)>,
    /// `(ok, output)` once it ran.
    pub result: Option<(bool, String)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Entry {
    /// A model's streamed text; the first line starts with the speaker.
    Speech {
        lines: Vec<TLine>,
    },
    Tool(ToolEntry),
    Note(TLine),
}

/// The transcript's state: entries, view toggles and scroll position.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    entries: Vec<Entry>,
    speaking: Option<Actor>,
    /// Tint tokens by surprise.
    pub tint: bool,
    /// Show tool arguments and outputs instead of one folded line per call.
    pub expand_tools: bool,
    /// Rows scrolled back from the tail; 0 follows the stream.
    pub scroll_back: usize,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript {
            entries: Vec::new(),
            speaking: None,
            tint: true,
            expand_tools: false,
            scroll_back: 0,
        }
    }
}

impl Transcript {
    /// Forgets the session's content but keeps the view toggles (a replay seek restarts
    /// the session; the operator's preferences stay).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.speaking = None;
        self.scroll_back = 0;
    }

    /// Everything the transcript shows arrives here, so a live session and a replayed log
    /// read the same; tool calls are filled in by call id as their fate is known, and the
    /// wording of the one-line notes lives in `notes.rs`.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::Token {
                actor,
                text,
                logprob,
                ..
            } => self.push_token(*actor, text, *logprob),
            Event::ToolCalled {
                step,
                actor,
                call_id,
                name,
                arguments,
            } => self.push_tool(ToolEntry {
                step: *step,
                actor: *actor,
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: serde_json::to_string(arguments).unwrap_or_default(),
                approval: None,
                result: None,
            }),
            Event::ApprovalDecided {
                call_id,
                approved,
                by,
                ..
            } => {
                if let Some(t) = self.tool_mut(call_id) {
                    t.approval = Some((*approved, by.clone()));
                }
            }
            Event::ToolResulted {
                call_id,
                ok,
                output,
                ..
            } => {
                if let Some(t) = self.tool_mut(call_id) {
                    t.result = Some((*ok, output.clone()));
                }
            }
            _ => {
                if let Some(line) = note_of(event) {
                    self.push_note(line);
                }
            }
        }
    }

    /// Appends one streamed token of `actor`.
    pub fn push_token(&mut self, actor: Actor, text: &str, logprob: Option<f64>) {
        if self.speaking != Some(actor)
            || !matches!(self.entries.last(), Some(Entry::Speech { .. }))
        {
            let name = match actor {
                Actor::Junior => "junior › ",
                Actor::Senior => "senior › ",
            };
            self.entries.push(Entry::Speech {
                lines: vec![TLine::of(name, Tone::Speaker(actor))],
            });
            self.speaking = Some(actor);
        }
        let Some(Entry::Speech { lines }) = self.entries.last_mut() else {
            return;
        };
        let tone = Tone::Surprise(surprise_bucket(logprob));
        let mut parts = text.split('\n');
        if let Some(first) = parts.next() {
            append(lines, first, tone);
        }
        for part in parts {
            lines.push(TLine::new());
            append(lines, part, tone);
        }
    }

    /// A tool call was proposed.
    pub fn push_tool(&mut self, entry: ToolEntry) {
        self.speaking = None;
        self.entries.push(Entry::Tool(entry));
    }

    /// The most recent tool entry with this call id.
    pub fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolEntry> {
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Tool(t) if t.call_id == call_id => Some(t),
            _ => None,
        })
    }

    /// A one-line note (step separators, escalations, questions, check results, faults).
    pub fn push_note(&mut self, line: TLine) {
        self.speaking = None;
        self.entries.push(Entry::Note(line));
    }

    /// Number of entries, for tests.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True before anything happened.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Transcript keys: scrolling, the tint toggle and folding of tool calls.
    pub fn handle_key(&mut self, key: &KeyEvent) -> KeyOutcome {
        match key.code {
            KeyCode::Up => self.scroll_back += 1,
            KeyCode::Down => self.scroll_back = self.scroll_back.saturating_sub(1),
            KeyCode::PageUp => self.scroll_back += PAGE,
            KeyCode::PageDown => self.scroll_back = self.scroll_back.saturating_sub(PAGE),
            KeyCode::End => self.scroll_back = 0,
            _ if is_char(key, 't') => self.tint = !self.tint,
            _ if is_char(key, 'o') => self.expand_tools = !self.expand_tools,
            _ => return KeyOutcome::Ignored,
        }
        KeyOutcome::done()
    }

    /// The transcript's keys; the wording names what a toggle will do next.
    pub fn hints(&self) -> Vec<KeyHint> {
        vec![
            hint("↑↓ PgUp PgDn End", "scroll"),
            hint("t", if self.tint { "tint off" } else { "tint on" }),
            hint(
                "o",
                if self.expand_tools {
                    "fold tools"
                } else {
                    "expand tools"
                },
            ),
        ]
    }

    /// The rows visible in a viewport of `width`×`height`, oldest first, honouring the
    /// scroll position (clamped to what exists).
    pub fn visible_rows(&self, width: usize, height: usize) -> Vec<Line<'static>> {
        if height == 0 || width == 0 {
            return Vec::new();
        }
        let want = height + self.scroll_back;
        // Collect logical lines from the end until they fill `want` rows.
        let mut tail: Vec<TLine> = Vec::new();
        let mut rows = 0usize;
        'outer: for entry in self.entries.iter().rev() {
            match entry {
                Entry::Speech { lines } => {
                    for line in lines.iter().rev() {
                        rows += line.rows(width);
                        tail.push(line.clone());
                        if rows >= want {
                            break 'outer;
                        }
                    }
                }
                Entry::Tool(t) => {
                    for line in tool_lines(t, self.expand_tools, width).into_iter().rev() {
                        rows += line.rows(width);
                        tail.push(line);
                        if rows >= want {
                            break 'outer;
                        }
                    }
                }
                Entry::Note(line) => {
                    rows += line.rows(width);
                    tail.push(line.clone());
                    if rows >= want {
                        break 'outer;
                    }
                }
            }
        }
        tail.reverse();
        let mut wrapped: Vec<Line<'static>> =
            tail.iter().flat_map(|l| l.wrap(width, self.tint)).collect();
        // Drop the rows scrolled past at the bottom, then keep the last `height`.
        let scroll = self.scroll_back.min(wrapped.len().saturating_sub(height));
        wrapped.truncate(wrapped.len() - scroll);
        let skip = wrapped.len().saturating_sub(height);
        wrapped.drain(..skip);
        wrapped
    }

    /// Draws the pane with its border; the title says when the view is not following.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let title = if self.scroll_back > 0 {
            format!(" Transcript ↑{} (End follows) ", self.scroll_back)
        } else {
            " Transcript ".to_string()
        };
        let block = Block::default().borders(Borders::ALL).title(title);
        let inner = block.inner(area);
        block.render(area, buf);
        let rows = self.visible_rows(inner.width as usize, inner.height as usize);
        Paragraph::new(rows).render(inner, buf);
    }
}

/// Appends a newline-free piece to the last line, breaking lines that grow too long.
fn append(lines: &mut Vec<TLine>, piece: &str, tone: Tone) {
    if piece.is_empty() {
        return;
    }
    if lines.last().is_none_or(|l| l.width >= MAX_LINE_WIDTH) {
        lines.push(TLine::new());
    }
    if let Some(last) = lines.last_mut() {
        last.push(piece, tone);
    }
}

/// The lines of a tool entry: one when folded, arguments and output when expanded.
fn tool_lines(t: &ToolEntry, expanded: bool, width: usize) -> Vec<TLine> {
    let marker = if expanded { "  ▾ " } else { "  ▸ " };
    let (outcome, tone) = match (&t.approval, &t.result) {
        (Some((false, by)), _) => (format!("  ✗ refused by {by}"), Tone::Err),
        (_, Some((true, out))) => (format!("  ✓ {}", summary(out)), Tone::Ok),
        (_, Some((false, out))) => {
            let first = out.lines().next().unwrap_or("error");
            (format!("  ✗ {}", ellipsize(first, 40)), Tone::Err)
        }
        (_, None) => ("  …".to_string(), Tone::Dim),
    };
    let mut head = TLine::of(marker, Tone::Dim).with(&t.name, Tone::ToolName);
    if !expanded {
        // The folded line fits the pane: the arguments give way to the outcome.
        let used = head.width + display_width(&outcome) + 1;
        let room = width.saturating_sub(used);
        if room >= 8 {
            head.push(" ", Tone::Dim);
            head.push(&ellipsize(&t.arguments, room), Tone::Dim);
        }
    }
    head.push(&outcome, tone);
    let mut lines = vec![head];
    if expanded {
        match super::patchview::change_lines(&t.name, &t.arguments, CHANGE_LINES_SHOWN) {
            // A file change reads as its lines, not as JSON with `\n` escapes.
            Some(change) => {
                for l in change {
                    let mut row = TLine::of("    ", Tone::Dim);
                    for s in l.spans {
                        row.push(&s.text, s.tone);
                    }
                    lines.push(row);
                }
            }
            None => lines.push(
                TLine::of("    args ", Tone::Dim)
                    .with(&ellipsize(&t.arguments, ARGS_SHOWN), Tone::Text),
            ),
        }
        if let Some((ok, out)) = &t.result {
            let tone = if *ok { Tone::Text } else { Tone::Err };
            let all: Vec<&str> = out.lines().collect();
            for l in all.iter().take(TOOL_OUTPUT_LINES) {
                lines.push(TLine::of("    │ ", Tone::Dim).with(l, tone));
            }
            if all.len() > TOOL_OUTPUT_LINES {
                lines.push(TLine::of(
                    format!("    │ … {} more lines", all.len() - TOOL_OUTPUT_LINES),
                    Tone::Dim,
                ));
            }
        }
    }
    lines
}

fn summary(output: &str) -> String {
    let n = output.lines().count();
    match n {
        0 => "no output".to_string(),
        1 => ellipsize(output.trim(), 40),
        _ => format!("{n} lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn tokens_stream_into_lines_with_the_speaker_first() {
        let mut t = Transcript::default();
        for tok in ["Let", " me", " look.\nThen", " fix"] {
            t.push_token(Actor::Junior, tok, Some(-0.1));
        }
        t.push_token(Actor::Senior, "ok", None);
        assert_eq!(
            texts(&t.visible_rows(40, 10)),
            vec!["junior › Let me look.", "Then fix", "senior › ok"]
        );
    }

    #[test]
    fn only_the_tail_is_shown_and_scrolling_moves_back() {
        let mut t = Transcript::default();
        for i in 0..50 {
            t.push_token(Actor::Junior, &format!("line {i}\n"), None);
        }
        let rows = texts(&t.visible_rows(20, 3));
        assert_eq!(rows, vec!["line 48", "line 49", ""]);
        t.scroll_back = 2;
        assert_eq!(
            texts(&t.visible_rows(20, 3)),
            vec!["line 46", "line 47", "line 48"]
        );
        t.scroll_back = 10_000;
        assert_eq!(
            texts(&t.visible_rows(20, 2)),
            vec!["junior › line 0", "line 1"],
            "scrolling past the top clamps"
        );
    }

    #[test]
    fn tool_calls_fold_to_one_line_and_expand_with_their_output() {
        let mut t = Transcript::default();
        t.push_tool(ToolEntry {
            step: 1,
            actor: Actor::Junior,
            call_id: "c1".into(),
            name: "run".into(),
            arguments: r#"{"command":"cargo test"}"#.into(),
            approval: None,
            result: None,
        });
        assert_eq!(
            texts(&t.visible_rows(60, 5)),
            vec![r#"  ▸ run {"command":"cargo test"}  …"#]
        );
        if let Some(e) = t.tool_mut("c1") {
            e.result = Some((false, "test parse ... FAILED\nline2".into()));
        }
        assert_eq!(
            texts(&t.visible_rows(60, 5)),
            vec![r#"  ▸ run {"command":"cargo test"}  ✗ test parse ... FAILED"#]
        );
        t.expand_tools = true;
        assert_eq!(
            texts(&t.visible_rows(60, 5)),
            vec![
                "  ▾ run  ✗ test parse ... FAILED",
                r#"    args {"command":"cargo test"}"#,
                "    │ test parse ... FAILED",
                "    │ line2",
            ]
        );
    }

    #[test]
    fn a_stream_without_newlines_is_broken_into_bounded_lines() {
        let mut t = Transcript::default();
        for _ in 0..3000 {
            t.push_token(Actor::Junior, "x", None);
        }
        let Some(Entry::Speech { lines }) = t.entries.last() else {
            panic!("speech expected");
        };
        assert!(lines.iter().all(|l| l.width <= MAX_LINE_WIDTH));
        assert_eq!(lines.iter().map(|l| l.width).sum::<usize>(), 3000 + 9);
    }
}
