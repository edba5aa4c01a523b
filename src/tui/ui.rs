//! Drawing: a pure function of [`AppState`].
//!
//! Layout from 80×24 upward: title, transcript beside a right column (Competence above
//! Steps), status and key hints below. Narrower or shorter terminals collapse the right
//! column to a one-line competence summary, so B_t and τ_t are always on screen.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use super::state::{AppState, outcome_name};
use super::status::render_hints;
use super::text::{Tone, ellipsize, style_of};

/// Narrowest terminal that gets the right column.
const WIDE: u16 = 64;
/// Shortest main area that gets the right column.
const TALL: u16 = 10;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, state: &AppState) {
    let area = frame.area();
    render(state, area, frame.buffer_mut());
    if no_color() {
        strip_colour(frame.buffer_mut());
    }
}

/// Whether the user asked for no colour: `NO_COLOR` set and not empty (no-color.org).
/// Read once; the screen does not change its mind mid-session.
fn no_color() -> bool {
    static NO_COLOR: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NO_COLOR.get_or_init(|| std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()))
}

/// Takes every colour out of a drawn screen, keeping bold, reverse and underline, so what
/// colour marked (the selection, the speaker, added and removed lines) is still told apart
/// by the modifiers and the text. One pass at the end, rather than a branch in every widget.
pub fn strip_colour(buf: &mut ratatui::buffer::Buffer) {
    use ratatui::style::Color;
    for cell in &mut buf.content {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

/// Draws the whole screen into a buffer (what [`draw`] does, without a terminal).
pub fn render(state: &AppState, area: Rect, buf: &mut Buffer) {
    if area.width < 20 || area.height < 5 {
        Paragraph::new(vec![
            state.competence.summary_line(),
            Line::raw("terminal too small"),
        ])
        .render(area, buf);
        return;
    }
    let footer = if area.height >= 16 { 3 } else { 1 };
    let [title, main, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(footer),
    ])
    .areas(area);
    render_title(state, title, buf);
    let transcript_area = if area.width >= WIDE && main.height >= TALL {
        let right_w = if area.width >= 120 {
            area.width * 2 / 5
        } else {
            34
        };
        let [left, right] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(right_w)]).areas(main);
        let comp_h = (main.height * 3 / 5).max(10);
        if main.height.saturating_sub(comp_h) >= 5 {
            let [comp, steps] =
                Layout::vertical([Constraint::Length(comp_h), Constraint::Fill(1)]).areas(right);
            state.competence.render(comp, buf);
            state.steps.render(steps, buf, state.models());
        } else {
            state.competence.render(right, buf);
        }
        left
    } else {
        let [summary, rest] =
            Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(main);
        Paragraph::new(state.competence.summary_line()).render(summary, buf);
        rest
    };
    state.transcript.render(transcript_area, buf);
    if let Some(a) = &state.approval {
        a.render(transcript_area, buf);
    }
    if footer == 3 {
        let [l1, l2, l3] = Layout::vertical([Constraint::Length(1); 3]).areas(foot);
        let [costs, time] = state.ledger.lines(state.log_path.as_deref());
        Paragraph::new(costs).render(l1, buf);
        Paragraph::new(time).render(l2, buf);
        render_hints(&state.hints(), l3, buf);
    } else {
        render_hints(&state.hints(), foot, buf);
    }
    // Over the transcript, not the whole screen: the operator answers with B_t, τ_t and
    // the reasons in view.
    if let Some(q) = state.question.as_ref().filter(|q| !q.hidden) {
        q.render(transcript_area, buf);
    }
    if state.confirm_quit {
        render_confirm(area, buf);
    }
    if state.show_help {
        super::help::render(&state.help_sections(), area, buf);
    }
}

fn render_title(state: &AppState, area: Rect, buf: &mut Buffer) {
    let dim = style_of(Tone::Dim, true);
    let mut spans = vec![Span::styled(" handoff ", style_of(Tone::Key, true))];
    if let Some(b) = &state.banner {
        spans.push(Span::styled("│ ", dim));
        spans.push(Span::styled(format!("{b} "), style_of(Tone::Warn, true)));
    }
    let mut flags: Vec<(String, Tone)> = Vec::new();
    if state.replay {
        flags.push(("REPLAY".into(), Tone::Key));
    }
    if state.paused {
        flags.push(("PAUSED".into(), Tone::Warn));
    }
    if state.shadow {
        flags.push(("SHADOW".into(), Tone::Warn));
    }
    if let Some(o) = state.ended {
        flags.push((format!("ENDED {}", outcome_name(o)), Tone::Dim));
    }
    if let Some(n) = &state.notice {
        flags.push((n.clone(), Tone::Dim));
    }
    let flags_w: usize = flags.iter().map(|(f, _)| f.len() + 3).sum();
    let used: usize = spans.iter().map(Span::width).sum();
    if let Some(s) = &state.session {
        let room = (area.width as usize).saturating_sub(used + flags_w + 2);
        if room > 8 {
            spans.push(Span::styled("│ ", dim));
            spans.push(Span::raw(ellipsize(&s.task, room)));
        }
    }
    for (f, tone) in flags {
        spans.push(Span::styled(" │ ", dim));
        spans.push(Span::styled(f, style_of(tone, true)));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn render_confirm(area: Rect, buf: &mut Buffer) {
    let width = area.width.saturating_sub(4).min(52);
    let height = 4.min(area.height);
    let rect = Rect {
        x: area.x + area.width.saturating_sub(width) / 2,
        y: area.y + area.height.saturating_sub(height) / 2,
        width,
        height,
    };
    Clear.render(rect, buf);
    Paragraph::new(vec![
        Line::raw("Stop the session? Its log is flushed either way."),
        Line::from(vec![
            Span::styled("y", style_of(Tone::Key, true)),
            Span::raw(" quit  "),
            Span::styled("n/Esc", style_of(Tone::Key, true)),
            Span::raw(" stay"),
        ]),
    ])
    .wrap(Wrap { trim: false })
    .block(Block::default().borders(Borders::ALL).title(" Quit "))
    .render(rect, buf);
}
