//! handoff's own reads of files in the work tree, which the model writes: outside any
//! sandbox, so a FIFO named `packed-refs` would hang handoff's process and a file linked
//! to `/dev/zero` would be read until memory ran out (issue 50, item 9).
//!
//! A file handoff reads itself ([`read_regular`]) is opened with `O_NOFOLLOW` and
//! `O_NONBLOCK`, read only when the open descriptor is a regular file, and at most a cap.
//! Ignore files go through [`crate::ignorewalk`], which reads them the same way; files a
//! library opens on its own (libgit2's `.gitattributes`) are looked at first with
//! [`not_plain`], without opening them.

use std::fs::File;
use std::io::{self, Read as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Largest ignore or attributes file a walk lets a library read (a large monorepo's root
/// `.gitignore` is tens of KB).
pub const MAX_IGNORE_FILE_BYTES: u64 = 4 << 20;

/// Reads the regular file `path`, never following a symlink in its last component and
/// never blocking on a FIFO; refuses anything else, and a file past `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(crate::beneath::not_regular());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!(
            "larger than {limit} bytes; not read"
        )));
    }
    Ok(bytes)
}

/// Whether something is at `path` that a library must not open: not a regular file (a
/// FIFO, a device, a symlink, which git itself does not follow for its own files), or
/// larger than [`MAX_IGNORE_FILE_BYTES`]. Looks without opening.
pub fn not_plain(path: &Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => !meta.file_type().is_file() || meta.len() > MAX_IGNORE_FILE_BYTES,
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("cstring");
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn fifos_links_and_devices_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join("plain"), "x\n").expect("write");
        assert_eq!(read_regular(&root.join("plain"), 10).expect("read"), b"x\n");
        assert!(
            read_regular(&root.join("plain"), 1).is_err(),
            "past the cap"
        );
        mkfifo(&root.join("fifo"));
        assert!(read_regular(&root.join("fifo"), 10).is_err());
        std::os::unix::fs::symlink("/dev/zero", root.join("zero")).expect("symlink");
        assert!(read_regular(&root.join("zero"), 10).is_err());
        std::os::unix::fs::symlink(root.join("plain"), root.join("link")).expect("symlink");
        assert!(
            read_regular(&root.join("link"), 10).is_err(),
            "no link followed"
        );
    }
}
