//! Reading a file the user named (`--config`, `exec --answers`, `eval matcher`, `eval
//! merge`, `replay --policy steps=FILE`, a calibration): one bounded read of a regular
//! file, so a path that names a FIFO, a device or a huge file is refused with its kind
//! instead of hanging the start or reading without end.
//!
//! The file is opened with `O_NONBLOCK` (opening a FIFO with no writer returns at once
//! instead of waiting for one) and its kind is read from the open descriptor, so a path
//! swapped between a check and the open cannot slip a FIFO past it. A symlink to a regular
//! file is followed: these are the user's own paths, not the model's tree (files in the
//! tree go through [`crate::beneath`], which follows none). At most `limit` bytes are read,
//! whatever the file's size claims (a file in `/proc` claims 0 and can be endless).

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Why a named file could not be used; each names the file and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A FIFO would block until something writes to it, a device would be read without
    /// end, a directory has no text.
    #[error("{path}: not a regular file ({kind}); give the path of {expected}")]
    NotAFile {
        path: PathBuf,
        kind: &'static str,
        expected: &'static str,
    },
    #[error("{path}: more than {limit} bytes, the most {expected} may have")]
    TooLarge {
        path: PathBuf,
        limit: u64,
        expected: &'static str,
    },
    #[error("{path}: not UTF-8 text; give the path of {expected}")]
    NotText {
        path: PathBuf,
        expected: &'static str,
    },
}

/// Opens `path` for reading without blocking, refusing anything but a regular file (or a
/// link to one). `expected` says what the file should be, for the message ("a TOML file").
pub fn open(path: &Path, expected: &'static str) -> Result<File, InputFileError> {
    let read = |source| InputFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(read)?;
    let kind = file.metadata().map_err(read)?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let kind = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    Err(InputFileError::NotAFile {
        path: path.to_path_buf(),
        kind,
        expected,
    })
}

/// The bytes of the regular file `path`, at most `limit` of them (more is an error, not a
/// silent cut: a half-read config or answers file would mean something else).
pub fn read_bytes(
    path: &Path,
    limit: u64,
    expected: &'static str,
) -> Result<Vec<u8>, InputFileError> {
    let file = open(path, expected)?;
    read_capped(file, path, limit, expected)
}

/// As [`read_bytes`], as UTF-8 text.
pub fn read_text(
    path: &Path,
    limit: u64,
    expected: &'static str,
) -> Result<String, InputFileError> {
    let bytes = read_bytes(path, limit, expected)?;
    String::from_utf8(bytes).map_err(|_| InputFileError::NotText {
        path: path.to_path_buf(),
        expected,
    })
}

/// Reads `input` (already opened from `path`) to its end, refusing it past `limit` bytes;
/// for inputs that are decoded on the way (a gzip stream, whose output is what is capped).
pub fn read_capped(
    input: impl std::io::Read,
    path: &Path,
    limit: u64,
    expected: &'static str,
) -> Result<Vec<u8>, InputFileError> {
    let mut bytes = Vec::new();
    input
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| InputFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputFileError::TooLarge {
            path: path.to_path_buf(),
            limit,
            expected,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_anything_else_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.json");
        std::fs::write(&file, "{}").expect("write");
        assert_eq!(read_text(&file, 10, "a JSON file").expect("read"), "{}");
        let err = read_text(&file, 1, "a JSON file").expect_err("too large");
        assert!(err.to_string().contains("more than 1 bytes"), "{err}");
        let err = read_text(dir.path(), 10, "a JSON file").expect_err("a directory");
        assert!(err.to_string().contains("(a directory)"), "{err}");
        let err = read_text(Path::new("/dev/zero"), 10, "a JSON file").expect_err("device");
        assert!(err.to_string().contains("(a device)"), "{err}");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("cstring");
        // SAFETY: mkfifo on a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_text(&fifo, 10, "a JSON file").expect_err("a FIFO");
        assert!(err.to_string().contains("(a FIFO)"), "{err}");
        std::fs::write(&file, [0xff, 0xfe]).expect("write");
        let err = read_text(&file, 10, "a JSON file").expect_err("not UTF-8");
        assert!(err.to_string().contains("not UTF-8"), "{err}");
    }
}
