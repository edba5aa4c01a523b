//! What one line of a unified diff is: the single classifier behind every rendering of a
//! change. `diffview` tags the lines of `handoff diff` and the summary with it; the TUI
//! colours a tool call's patch with it. It lives on the ground floor because the screen may
//! import only the protocol, and it is pure (a line in, a kind out), so both agree on every
//! line, sloppy model patches included: nothing here is applied or validated.

use serde::{Deserialize, Serialize};

/// What a rendered line is, so a front end can colour it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Names the file and what happened to it.
    File,
    /// An `@@ -a,b +c,d @@` hunk header.
    Hunk,
    Added,
    Removed,
    Context,
    /// `\ No newline at end of file`, "binary file", and the like.
    Note,
}

/// A `---`/`+++` line: the old or new path of a file section, not a removed or added line.
pub fn is_path_line(line: &str) -> bool {
    line.starts_with("---") || line.starts_with("+++")
}

/// The kind of a body line of a patch (after its file header). A blank line is context,
/// because models drop the space of blank context lines; a line that fits no rule is a note.
pub fn classify(line: &str) -> LineKind {
    match line.chars().next() {
        Some('@') if line.starts_with("@@") => LineKind::Hunk,
        Some('+') => LineKind::Added,
        Some('-') => LineKind::Removed,
        Some(' ') | None => LineKind::Context,
        _ => LineKind::Note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_of_a_patch_has_one_kind() {
        let kinds: Vec<LineKind> = ["@@ -1 +1 @@", "+a", "-b", " c", "", "\\ No newline", "@x"]
            .iter()
            .map(|l| classify(l))
            .collect();
        assert_eq!(
            kinds,
            [
                LineKind::Hunk,
                LineKind::Added,
                LineKind::Removed,
                LineKind::Context,
                LineKind::Context,
                LineKind::Note,
                LineKind::Note
            ]
        );
        assert!(is_path_line("--- a/x") && is_path_line("+++ b/x"));
        assert!(!is_path_line("-x") && !is_path_line("+-- x"));
    }
}
