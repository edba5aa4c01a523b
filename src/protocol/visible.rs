//! Text from outside the process (model tokens, tool arguments, fields of a log file) made
//! harmless for the place a person reads it: a terminal, a spreadsheet, an approval prompt.
//!
//! A terminal obeys what it prints: `ESC ] 2 ;` retitles the window, `ESC [ 2J` clears it,
//! `ESC [ 8m` hides what follows, a carriage return overwrites the line. Every front end
//! that prints such text goes through these functions, so a question to the operator or a
//! command waiting for approval reads the same everywhere, and can hide nothing.
//!
//! Control characters become their Unicode "control pictures" (`␛` for ESC, `␇` for BEL,
//! `␍` for CR), one column each, so the layout stays predictable; C1 controls and the
//! invisible format characters that reorder or hide text (bidi overrides, zero-width
//! spaces) become `\u{…}`. Everything else is left alone.

use std::borrow::Cow;

/// Whether `ch` must not reach a reader as itself.
fn hidden(ch: char) -> bool {
    ch.is_control()
        || matches!(
            ch,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// Appends the visible form of a character [`hidden`] says must not be shown as itself.
fn push_shown(out: &mut String, ch: char) {
    match u32::from(ch) {
        c @ 0x00..=0x1f => {
            // U+2400 CONTROL PICTURES mirrors C0 in order: ␀ … ␟.
            out.push(char::from_u32(0x2400 + c).unwrap_or('\u{fffd}'));
        }
        0x7f => out.push('␡'),
        c => out.push_str(&format!("\\u{{{c:x}}}")),
    }
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if hidden(ch) && !keep(ch) {
            push_shown(&mut out, ch);
        } else {
            out.push(ch);
        }
    }
    Cow::Owned(out)
}

/// One line of text with every control character shown, newlines and tabs included: for
/// a field that must stay on one line (a session id, a CSV cell, a command).
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// Text of many lines with every control character shown except the newline and the
/// tab, which a terminal handles harmlessly: for traces, questions and summaries.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// Runs of whitespace longer than this are shown as a count ([`visible_whole`]).
pub const LONGEST_PLAIN_RUN: usize = 3;

/// Text a person must read whole before saying yes (a command waiting for approval): every
/// control character shown as by [`visible`], and every run of more than
/// [`LONGEST_PLAIN_RUN`] whitespace characters shown as `␠×N` (or `␉×N` for tabs, and the
/// character's code for other whitespace), so 400 spaces cannot push the rest of a command
/// out of sight.
pub fn visible_whole(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if !ch.is_whitespace() {
            if hidden(ch) {
                push_shown(&mut out, ch);
            } else {
                out.push(ch);
            }
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == ch).count();
        if run > LONGEST_PLAIN_RUN {
            match ch {
                ' ' => out.push('␠'),
                _ if hidden(ch) => push_shown(&mut out, ch),
                _ => out.push_str(&format!("\\u{{{:x}}}", u32::from(ch))),
            }
            out.push_str(&format!("×{run}"));
        } else {
            for _ in 0..run {
                if hidden(ch) {
                    push_shown(&mut out, ch);
                } else {
                    out.push(ch);
                }
            }
        }
        i += run;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_pictures_and_plain_text_is_borrowed() {
        assert_eq!(
            visible("\x1b]2;TITLE\x07\x1b[2J\x1b[8mhid\r"),
            "␛]2;TITLE␇␛[2J␛[8mhid␍"
        );
        assert!(matches!(visible("plain text é"), Cow::Borrowed(_)));
        assert_eq!(visible("a\nb\tc\u{7f}\u{9b}"), "a␊b␉c␡\\u{9b}");
        assert_eq!(visible_lines("a\nb\tc\x1b"), "a\nb\tc␛");
        assert_eq!(
            visible("abc\u{202e}def\u{200b}"),
            "abc\\u{202e}def\\u{200b}"
        );
    }

    #[test]
    fn long_runs_of_whitespace_are_counted() {
        let cmd = format!("cargo test --quiet{}; curl x", " ".repeat(400));
        assert_eq!(visible_whole(&cmd), "cargo test --quiet␠×400; curl x");
        assert_eq!(visible_whole("a   b"), "a   b");
        assert_eq!(visible_whole("a\t\t\t\t\tb\nc"), "a␉×5b␊c");
        assert_eq!(
            visible_whole("x\u{3000}\u{3000}\u{3000}\u{3000}y"),
            "x\\u{3000}×4y"
        );
        assert_eq!(visible_whole("\x1b[8m"), "␛[8m");
    }
}
