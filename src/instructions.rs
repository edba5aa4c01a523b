//! Project instruction files (`AGENTS.md` and the like) read into the junior's and the
//! senior's system prompts, as codex and goose do, within a byte cap.
//!
//! Files are looked for in every directory from the repository root down to the working
//! directory, root first, so a subproject's file can refine the root's; in each directory
//! every configured name that exists is taken, in the configured order. The block is
//! capped: a long file must not crowd out the task and the history of a small model's
//! context window, so what exceeds the cap is cut at a character boundary and the cut is
//! said in the text (the model and the log both see that something was left out).

use std::path::{Path, PathBuf};

/// The file names looked for by default.
pub const DEFAULT_FILES: [&str; 1] = ["AGENTS.md"];
/// Bytes of instruction text put into a prompt by default (codex's default too).
pub const DEFAULT_CAP_BYTES: usize = 32 * 1024;

/// One instruction file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Path relative to the repository root, as shown in the prompt.
    pub path: String,
    pub text: String,
}

/// The prompt block for `files`, at most `cap_bytes` long (the header of each file
/// included); empty when there are none. Pure, so what a prompt holds is testable.
pub fn block(files: &[InstructionFile], cap_bytes: usize) -> String {
    let mut out = String::new();
    for f in files {
        let text = f.text.trim_end();
        if text.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n\n# Project instructions from {}\n\n{text}",
            f.path
        ));
    }
    let out = out.trim_start().to_string();
    if out.len() <= cap_bytes {
        return out;
    }
    let note = |cut: usize| format!("\n\n[instructions cut: {cut} more bytes not shown]");
    // The note's own length depends on the number in it; reserve the longest.
    let reserve = note(out.len()).len();
    let mut end = cap_bytes.saturating_sub(reserve);
    while end > 0 && !out.is_char_boundary(end) {
        end -= 1;
    }
    let cut = out.len() - end;
    format!("{}{}", &out[..end], note(cut))
}

/// `system` with the block appended (unchanged when the block is empty).
pub fn with_instructions(system: &str, block: &str) -> String {
    if block.is_empty() {
        system.to_string()
    } else {
        format!("{}\n\n{block}\n", system.trim_end())
    }
}

/// Reads the instruction files named `names` from `root` down to `cwd` (which must be
/// inside `root`; otherwise only `root` is searched). Unreadable or non-UTF-8 files are
/// returned as errors for the caller to warn about, never silently dropped.
pub fn find(
    root: &Path,
    cwd: &Path,
    names: &[String],
) -> (Vec<InstructionFile>, Vec<(PathBuf, std::io::Error)>) {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut d = root.to_path_buf();
        for part in rel.components() {
            d.push(part);
            dirs.push(d.clone());
        }
    }
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for dir in dirs {
        for name in names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(text) => found.push(InstructionFile {
                    path: path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                    text,
                }),
                Err(e) => errors.push((path, e)),
            }
        }
    }
    (found, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn file(path: &str, text: &str) -> InstructionFile {
        InstructionFile {
            path: path.into(),
            text: text.into(),
        }
    }

    #[test]
    fn files_are_named_and_joined_in_order() {
        let b = block(
            &[
                file("AGENTS.md", "Use tabs.\n"),
                file("sub/AGENTS.md", "Run make test."),
            ],
            DEFAULT_CAP_BYTES,
        );
        assert_eq!(
            b,
            "# Project instructions from AGENTS.md\n\nUse tabs.\n\n\
             # Project instructions from sub/AGENTS.md\n\nRun make test."
        );
        assert_eq!(
            with_instructions("You are the junior.\n", &b),
            format!("You are the junior.\n\n{b}\n")
        );
        assert_eq!(with_instructions("sys", ""), "sys");
        assert_eq!(block(&[file("AGENTS.md", "  \n")], 100), "");
    }

    #[test]
    fn the_cap_holds_cuts_at_a_character_boundary_and_says_so() {
        let long = "é".repeat(500); // 1000 bytes
        let b = block(&[file("AGENTS.md", &long)], 200);
        assert!(b.len() <= 200, "{}", b.len());
        assert!(b.starts_with("# Project instructions from AGENTS.md\n\néé"));
        let cut: usize = b
            .rsplit_once("[instructions cut: ")
            .and_then(|(_, n)| n.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("the cut is stated");
        let whole = block(&[file("AGENTS.md", &long)], usize::MAX);
        let shown = b.find("\n\n[instructions cut").expect("note");
        assert_eq!(shown + cut, whole.len(), "the stated cut is exact");
    }

    #[test]
    fn files_are_found_from_the_root_down_to_the_working_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        std::fs::write(root.join("AGENTS.md"), "root").expect("write");
        std::fs::write(root.join("a/b/AGENTS.md"), "leaf").expect("write");
        std::fs::write(root.join("a/CONVENTIONS.md"), "mid").expect("write");
        std::fs::write(root.join("elsewhere.md"), "no").expect("write");
        let names = vec!["AGENTS.md".to_string(), "CONVENTIONS.md".to_string()];
        let (found, errors) = find(root, &root.join("a/b"), &names);
        assert!(errors.is_empty());
        let got: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (f.path.as_str(), f.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("AGENTS.md", "root"),
                ("a/CONVENTIONS.md", "mid"),
                ("a/b/AGENTS.md", "leaf")
            ]
        );
        let (only_root, _) = find(root, Path::new("/somewhere/else"), &names);
        assert_eq!(only_root.len(), 1);
    }
}
