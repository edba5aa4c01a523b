//! A file change a tool call carries (`apply_patch`'s patch, `write_file`'s content), as
//! coloured lines for the transcript and the approval prompt, instead of its JSON with
//! `\n` escapes.
//!
//! The screen may import only the protocol, so it classifies the lines of what the model
//! wrote with the protocol's [`diffline`], the classifier `handoff diff` renders with too;
//! nothing here is applied or judged.

use super::text::{TLine, Tone};
use crate::protocol::diffline::{self, LineKind};

/// The change in a call's arguments as lines, at most `max` (then a line saying how many
/// more); `None` for calls that change no file or whose arguments are not as expected.
pub fn change_lines(name: &str, arguments: &str, max: usize) -> Option<Vec<TLine>> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let path = args.get("path").and_then(serde_json::Value::as_str);
    let (title, body): (String, Vec<TLine>) = match name {
        "apply_patch" => {
            let patch = args.get("patch").and_then(serde_json::Value::as_str)?;
            let title = path.map_or_else(|| "patch".to_string(), |p| format!("patch {p}"));
            (title, patch.lines().map(patch_line).collect())
        }
        "write_file" => {
            let content = args.get("content").and_then(serde_json::Value::as_str)?;
            let title = format!("write {}", path.unwrap_or("?"));
            let body = content
                .lines()
                .map(|l| TLine::of(format!("+{l}"), Tone::Ok))
                .collect();
            (title, body)
        }
        _ => return None,
    };
    let (added, removed) = body
        .iter()
        .fold((0, 0), |(a, r), l| match kind(&l.plain()) {
            Some(LineKind::Added) => (a + 1, r),
            Some(LineKind::Removed) => (a, r + 1),
            _ => (a, r),
        });
    let mut out = vec![TLine::of(
        format!("{title}  +{added} -{removed}"),
        Tone::ToolName,
    )];
    let more = body.len().saturating_sub(max);
    out.extend(body.into_iter().take(max));
    if more > 0 {
        out.push(TLine::of(format!("… {more} more lines"), Tone::Dim));
    }
    Some(out)
}

/// What a line of a call's change is; `None` for a `---`/`+++` path line.
fn kind(l: &str) -> Option<LineKind> {
    (!diffline::is_path_line(l)).then(|| diffline::classify(l))
}

/// One line of a unified diff, toned by what it is.
fn patch_line(l: &str) -> TLine {
    let tone = match kind(l) {
        None | Some(LineKind::Hunk) => Tone::Dim,
        Some(LineKind::Added) => Tone::Ok,
        Some(LineKind::Removed) => Tone::Err,
        Some(LineKind::File | LineKind::Context | LineKind::Note) => Tone::Text,
    };
    TLine::of(l.to_string(), tone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[TLine]) -> Vec<String> {
        lines.iter().map(TLine::plain).collect()
    }

    #[test]
    fn a_patch_becomes_its_lines_with_a_count_and_a_write_its_content() {
        let args = serde_json::json!({
            "path": "a.py",
            "patch": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
        });
        let lines = change_lines("apply_patch", &args.to_string(), 10).expect("a patch");
        assert_eq!(
            plain(&lines),
            [
                "patch a.py  +1 -1",
                "--- a/a.py",
                "+++ b/a.py",
                "@@ -1 +1 @@",
                "-x = 1",
                "+x = 2"
            ]
        );
        assert_eq!(lines[4].spans[0].tone, Tone::Err);
        assert_eq!(lines[5].spans[0].tone, Tone::Ok);
        let w = serde_json::json!({"path": "n.txt", "content": "a\nb\nc\n"});
        let lines = change_lines("write_file", &w.to_string(), 2).expect("a write");
        assert_eq!(
            plain(&lines),
            ["write n.txt  +3 -0", "+a", "+b", "… 1 more lines"]
        );
        assert!(change_lines("run", r#"{"command":"ls"}"#, 5).is_none());
        assert!(change_lines("apply_patch", "not json", 5).is_none());
    }
}
