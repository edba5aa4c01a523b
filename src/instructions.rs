//! Project instruction files (`AGENTS.md` and the like) read into the junior's and the
//! senior's system prompts, as codex and goose do, within a byte cap.
//!
//! Files are looked for in every directory from the repository root down to the working
//! directory, root first, so a subproject's file can refine the root's; in each directory
//! every configured name that exists is taken, in the configured order. The block is
//! capped: a long file must not crowd out the task and the history of a small model's
//! context window, so what exceeds the cap is cut at a character boundary and the cut is
//! said in the text (the model and the log both see that something was left out).
//!
//! The repository is the model's to write, so the files are read the way the file tools
//! read ([`crate::beneath`]): relative to a handle on the root, never through a symlink
//! (an `AGENTS.md` linked to `~/.ssh/id_rsa` or `/proc/self/environ` would put a secret
//! into the prompt, past `agent.readable_roots`), only when regular (opened without
//! blocking, so a FIFO cannot hang the start), and at most [`MAX_FILE_BYTES`] of each.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::beneath::{Kind, RootDir};

/// The file names looked for by default.
pub const DEFAULT_FILES: [&str; 1] = ["AGENTS.md"];
/// Bytes of instruction text put into a prompt by default (codex's default too).
pub const DEFAULT_CAP_BYTES: usize = 32 * 1024;

/// Bytes of one instruction file read at most: well past the prompt's cap, so the cut
/// note stays exact for any file a person writes, while `/dev/zero` behind a name cannot
/// be read without end.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// One instruction file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Path relative to the repository root, as shown in the prompt.
    pub path: String,
    pub text: String,
    /// Bytes of the file past [`MAX_FILE_BYTES`], never read; counted in the cut note.
    pub unread: u64,
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
    let unread: u64 = files.iter().map(|f| f.unread).sum();
    if out.len() <= cap_bytes && unread == 0 {
        return out;
    }
    let note = |cut: u64| format!("\n\n[instructions cut: {cut} more bytes not shown]");
    // The note's own length depends on the number in it; reserve the longest.
    let reserve = note(out.len() as u64 + unread).len();
    let mut end = if out.len() + reserve <= cap_bytes {
        out.len()
    } else {
        cap_bytes.saturating_sub(reserve)
    };
    while end > 0 && !out.is_char_boundary(end) {
        end -= 1;
    }
    let cut = (out.len() - end) as u64 + unread;
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
/// inside `root`; otherwise only `root` is searched). Unreadable or non-UTF-8 files, and
/// names that are a symlink, a FIFO or a device, are returned as errors for the caller to
/// warn about, never silently dropped and never followed.
pub fn find(
    root: &Path,
    cwd: &Path,
    names: &[String],
) -> (Vec<InstructionFile>, Vec<(PathBuf, std::io::Error)>) {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    let dir = match RootDir::open(root) {
        Ok(dir) => dir,
        Err(e) => {
            errors.push((root.to_path_buf(), e));
            return (found, errors);
        }
    };
    let mut dirs = vec![PathBuf::new()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut d = PathBuf::new();
        for part in rel.components() {
            d.push(part);
            dirs.push(d.clone());
        }
    }
    for rel_dir in dirs {
        for name in names {
            let rel = rel_dir.join(name);
            match read_one(&dir, &rel) {
                Ok(Some(file)) => found.push(file),
                Ok(None) => {}
                Err(e) => errors.push((root.join(&rel), e)),
            }
        }
    }
    (found, errors)
}

/// The instruction file at `rel`, `None` when there is none (or a directory goes by the
/// name); a symlink or a special file is an error, not followed or opened.
fn read_one(dir: &RootDir, rel: &Path) -> std::io::Result<Option<InstructionFile>> {
    match dir.kind(rel) {
        Ok(Some(Kind::File)) => {}
        Ok(None | Some(Kind::Dir)) => return Ok(None),
        Ok(Some(Kind::Symlink)) => {
            return Err(std::io::Error::other(
                "a symbolic link; instruction files are read only as regular files inside \
                 the repository, never through a link",
            ));
        }
        Ok(Some(Kind::Special)) => return Err(crate::beneath::not_regular()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(e) => return Err(e),
    }
    // Opened beneath the root with no symlink followed and O_NONBLOCK; a swap since the
    // look above is refused here.
    let file = dir.open_read(rel)?;
    let size = file.metadata()?.len();
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    if let Err(e) = std::str::from_utf8(&bytes)
        && size > bytes.len() as u64
        && e.error_len().is_none()
    {
        // The read stopped inside a character: keep the whole ones.
        bytes.truncate(e.valid_up_to());
    }
    let unread = size.saturating_sub(bytes.len() as u64);
    let text = String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))?;
    Ok(Some(InstructionFile {
        path: rel.display().to_string(),
        text,
        unread,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn file(path: &str, text: &str) -> InstructionFile {
        InstructionFile {
            path: path.into(),
            text: text.into(),
            unread: 0,
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

    #[test]
    fn links_fifos_and_devices_are_refused_and_a_long_file_is_read_in_part() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        let secret = dir.path().join("id_rsa");
        std::fs::write(&secret, "SECRET KEY").expect("write");
        std::os::unix::fs::symlink(&secret, root.join("AGENTS.md")).expect("symlink");
        std::os::unix::fs::symlink("/dev/zero", root.join("ZERO.md")).expect("symlink");
        let fifo = std::ffi::CString::new(root.join("sub/AGENTS.md").to_str().expect("utf-8"))
            .expect("cstring");
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::fs::write(root.join("sub/LONG.md"), "é".repeat(200_000)).expect("write");
        let names: Vec<String> = ["AGENTS.md", "ZERO.md", "LONG.md"]
            .map(String::from)
            .to_vec();
        let (found, errors) = find(&root, &root.join("sub"), &names);
        let refused: Vec<String> = errors
            .iter()
            .map(|(p, e)| format!("{} {e}", p.strip_prefix(&root).expect("inside").display()))
            .collect();
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(
            refused[0].starts_with("AGENTS.md a symbolic link"),
            "{refused:?}"
        );
        assert!(
            refused[1].starts_with("ZERO.md a symbolic link"),
            "{refused:?}"
        );
        assert!(
            refused[2].starts_with("sub/AGENTS.md not a regular file"),
            "{refused:?}"
        );
        assert_eq!(found.len(), 1);
        let long = &found[0];
        assert_eq!(long.path, "sub/LONG.md");
        assert_eq!(long.text.len() as u64 + long.unread, 400_000);
        assert!(long.text.len() as u64 <= MAX_FILE_BYTES && long.unread > 0);
        let b = block(&found, DEFAULT_CAP_BYTES);
        assert!(b.len() <= DEFAULT_CAP_BYTES && !b.contains("SECRET"));
        let cut: u64 = b
            .rsplit_once("[instructions cut: ")
            .and_then(|(_, n)| n.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("the cut is stated");
        let shown = b.find("\n\n[instructions cut").expect("note");
        let header = "# Project instructions from sub/LONG.md\n\n".len() as u64;
        assert_eq!(
            shown as u64 + cut,
            header + 400_000,
            "the unread part is counted"
        );
    }
}
