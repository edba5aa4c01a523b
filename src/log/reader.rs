//! Reading logs back: one line at a time in constant memory, tolerant of what a crash or a
//! bad disk leaves behind, strict about what it does not understand.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Header, LOG_VERSION, LogError};
use crate::protocol::Stamped;

/// What was wrong with a line that was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// A line in the middle that is not a known event.
    Malformed,
    /// The last line has no newline and does not parse: the writer was cut off mid-line.
    Torn,
    /// Reading failed; the rest of the file is skipped.
    Unreadable,
}

/// A line that was skipped, and where. Reading goes on after it (except `Unreadable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadWarning {
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    pub damage: Damage,
    pub detail: String,
}

impl fmt::Display for ReadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.damage {
            Damage::Malformed => "skipped a malformed line",
            Damage::Torn => "skipped a torn last line (the writer was cut off)",
            Damage::Unreadable => "stopped reading",
        };
        write!(
            f,
            "{}:{}: {what}: {}",
            self.path.display(),
            self.line,
            self.detail
        )
    }
}

/// The events of one log, in order, after its header was checked.
///
/// Yields `Err(ReadWarning)` for each skipped line, so the caller decides how loudly to
/// say so; a damaged line never ends the iteration.
#[derive(Debug)]
pub struct LogReader<R> {
    path: PathBuf,
    input: R,
    header: Header,
    line: usize,
    buf: Vec<u8>,
    done: bool,
}

/// Longest line read, in bytes. Events are far smaller (tool output and arguments are
/// capped before they are logged); a longer line is skipped as malformed, so `/dev/zero`
/// renamed `x.jsonl` or a corrupt file cannot fill memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Largest tick a log may claim. Ticks count the junior's output tokens, and readers that
/// rebuild a session tick by tick (`calibrate`, `replay`) allocate up to the largest one,
/// so a forged `"tick": 1e15` must not reach them: 2²² tokens is far past any token budget
/// a session runs with (8,192 by default), and bounds a session's trajectory to ~100 MB.
pub const MAX_TICK: u64 = 1 << 22;

/// The bytes of a log file: as written, or gzip-compressed (`*.jsonl.gz`, the form the
/// real corpus under `data/real/` is committed in), so `report`, `calibrate` and `replay`
/// read either without unpacking.
#[derive(Debug)]
pub enum LogInput {
    Plain(BufReader<File>),
    Gzip(BufReader<flate2::read::MultiGzDecoder<File>>),
}

impl std::io::Read for LogInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            LogInput::Plain(r) => r.read(buf),
            LogInput::Gzip(r) => r.read(buf),
        }
    }
}

impl BufRead for LogInput {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        match self {
            LogInput::Plain(r) => r.fill_buf(),
            LogInput::Gzip(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            LogInput::Plain(r) => r.consume(amount),
            LogInput::Gzip(r) => r.consume(amount),
        }
    }
}

impl LogReader<LogInput> {
    /// Opens a log (gzip when the name ends in `.gz`); anything but a regular file (a FIFO,
    /// a device) is refused, and the open itself cannot block on a FIFO.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let io = |source| LogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(io(std::io::Error::other(
                "not a regular file (a FIFO, socket or device); refused",
            )));
        }
        let input = if path.extension().is_some_and(|e| e == "gz") {
            LogInput::Gzip(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
        } else {
            LogInput::Plain(BufReader::new(file))
        };
        LogReader::new(path, input)
    }
}

/// A session log by its name: `*.jsonl`, or `*.jsonl.gz`.
fn is_log_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".jsonl") || n.ends_with(".jsonl.gz"))
}

/// Reads one line into `buf` (cleared first), keeping at most `cap` bytes of it; the rest
/// of an overlong line is consumed and dropped. Returns the bytes consumed and whether the
/// line was cut.
fn read_line_capped<R: BufRead>(
    input: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<(usize, bool)> {
    buf.clear();
    let mut consumed = 0usize;
    let mut cut = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed, cut));
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(buf.len());
        if chunk.len() > room {
            cut = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        consumed += n;
        input.consume(n);
        if done {
            return Ok((consumed, cut));
        }
    }
}

/// Just enough of a header to tell "not a log" from "a log from the future".
#[derive(Deserialize)]
struct Versioned {
    v: u64,
}

impl<R: BufRead> LogReader<R> {
    /// Reads and checks the header line; `path` only names the source in messages.
    pub fn new(path: &Path, mut input: R) -> Result<Self, LogError> {
        let path = path.to_path_buf();
        let mut buf = Vec::new();
        read_line_capped(&mut input, &mut buf, MAX_LINE_BYTES).map_err(|source| LogError::Io {
            path: path.clone(),
            source,
        })?;
        let no_header = |detail: String| LogError::NoHeader {
            path: path.clone(),
            detail,
        };
        if buf.is_empty() {
            return Err(no_header("the file is empty".into()));
        }
        let versioned: Versioned = serde_json::from_slice(&buf)
            .map_err(|e| no_header(format!("not a header object: {e}")))?;
        if versioned.v > u64::from(LOG_VERSION) {
            return Err(LogError::UnknownVersion {
                path,
                found: versioned.v,
                supported: LOG_VERSION,
            });
        }
        if versioned.v == 0 {
            return Err(LogError::InvalidVersion { path });
        }
        let header: Header = serde_json::from_slice(&buf)
            .map_err(|e| no_header(format!("incomplete header: {e}")))?;
        Ok(LogReader {
            path,
            input,
            header,
            line: 1,
            buf,
            done: false,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn warning(&self, damage: Damage, detail: String) -> ReadWarning {
        ReadWarning {
            path: self.path.clone(),
            line: self.line,
            damage,
            detail,
        }
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<Stamped, ReadWarning>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let read = read_line_capped(&mut self.input, &mut self.buf, MAX_LINE_BYTES);
            self.line += 1;
            match read {
                Ok((0, _)) => {
                    self.done = true;
                    return None;
                }
                Ok((_, true)) => {
                    return Some(Err(self.warning(
                        Damage::Malformed,
                        format!("the line is longer than {MAX_LINE_BYTES} bytes"),
                    )));
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.warning(Damage::Unreadable, e.to_string())));
                }
            }
            let complete = self.buf.last() == Some(&b'\n');
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(match serde_json::from_slice::<Stamped>(&self.buf) {
                Ok(event) if event.event.tick().is_some_and(|t| t > MAX_TICK) => Err(self.warning(
                    Damage::Malformed,
                    format!(
                        "tick {} is past the largest a session can reach ({MAX_TICK}): \
                             the judge's clock counts junior tokens",
                        event.event.tick().unwrap_or_default()
                    ),
                )),
                Ok(event) => Ok(event),
                Err(e) if complete => Err(self.warning(Damage::Malformed, e.to_string())),
                Err(e) => Err(self.warning(Damage::Torn, e.to_string())),
            });
        }
    }
}

/// The log files named by `inputs`: a file as given, a directory as every `*.jsonl` (or
/// `*.jsonl.gz`) file
/// under it (recursively), sorted by path. An input that cannot be read is reported in the
/// second list and the others are still returned: one bad input never aborts a run.
pub fn log_files(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<LogError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for input in inputs {
        match std::fs::metadata(input) {
            Ok(meta) if meta.is_dir() => {
                let mut found = Vec::new();
                walk(input, &mut found, &mut errors);
                found.sort();
                files.extend(found);
            }
            Ok(_) => files.push(input.clone()),
            Err(source) => errors.push(LogError::Io {
                path: input.clone(),
                source,
            }),
        }
    }
    (files, errors)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, errors: &mut Vec<LogError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(source) => {
            errors.push(LogError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(source) => {
                errors.push(LogError::Io {
                    path: dir.to_path_buf(),
                    source,
                });
                continue;
            }
        };
        let path = entry.path();
        // `file_type` does not follow symlinks, so a link cycle cannot loop forever.
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, found, errors),
            Ok(_) if is_log_name(&path) => found.push(path),
            Ok(_) => {}
            Err(source) => errors.push(LogError::Io { path, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(text: &str) -> Result<LogReader<&[u8]>, LogError> {
        LogReader::new(Path::new("mem.jsonl"), text.as_bytes())
    }

    const HEADER: &str = r#"{"v":1,"handoff":"0.1.0","config_digest":"d"}"#;
    const EVENT: &str = r#"{"t_ms":1,"type":"warning","kind":"k","message":"m"}"#;

    #[test]
    fn an_overlong_line_is_cut_and_the_next_one_read() {
        let mut input: &[u8] = b"0123456789\nab\n";
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut input, &mut buf, 4).expect("read"),
            (11, true)
        );
        assert_eq!(buf, b"0123");
        assert_eq!(
            read_line_capped(&mut input, &mut buf, 4).expect("read"),
            (3, false)
        );
        assert_eq!(buf, b"ab\n");
    }

    #[test]
    fn a_gzipped_log_in_a_directory_is_found_and_read_like_a_plain_one() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!("{HEADER}\n{EVENT}\n{EVENT}\n");
        std::fs::write(dir.path().join("a.jsonl"), &text).expect("write");
        let gz = std::fs::File::create(dir.path().join("b.jsonl.gz")).expect("create");
        let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
        enc.write_all(text.as_bytes()).expect("compress");
        enc.finish().expect("finish");
        std::fs::write(dir.path().join("notes.txt.gz"), b"not a log").expect("write");
        let (files, errors) = log_files(&[dir.path().to_path_buf()]);
        assert!(errors.is_empty());
        let names: Vec<_> = files
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        assert_eq!(names, ["a.jsonl", "b.jsonl.gz"]);
        for f in &files {
            let r = LogReader::open(f).expect("open");
            assert_eq!(r.header().config_digest, "d");
            let items: Vec<_> = r.collect();
            assert_eq!(items.len(), 2, "{}", f.display());
            assert!(items.iter().all(Result::is_ok));
        }
    }

    #[test]
    fn a_clean_log_yields_its_events() {
        let text = format!("{HEADER}\n{EVENT}\n\n{EVENT}\n");
        let r = reader(&text).expect("header");
        assert_eq!(r.header().config_digest, "d");
        let items: Vec<_> = r.collect();
        assert_eq!(items.len(), 2);
        assert!(items.iter().all(Result::is_ok));
    }

    #[test]
    fn a_last_line_without_newline_is_fine_when_it_parses_and_torn_when_not() {
        let text = format!("{HEADER}\n{EVENT}");
        let ok: Vec<_> = reader(&text).expect("header").collect();
        assert!(matches!(ok.as_slice(), [Ok(_)]));
        let text = format!("{HEADER}\n{EVENT}\n{{\"t_ms\":2,\"ty");
        let torn: Vec<_> = reader(&text).expect("header").collect();
        match torn.as_slice() {
            [Ok(_), Err(w)] => {
                assert_eq!((w.damage, w.line), (Damage::Torn, 3));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_problems_are_errors() {
        assert!(matches!(reader(""), Err(LogError::NoHeader { .. })));
        assert!(matches!(reader(EVENT), Err(LogError::NoHeader { .. })));
        assert!(matches!(
            reader(r#"{"v":0,"handoff":"x","config_digest":"d"}"#),
            Err(LogError::InvalidVersion { .. })
        ));
        let err = reader(r#"{"v":7,"whatever":true}"#).expect_err("future");
        assert!(matches!(err, LogError::UnknownVersion { found: 7, .. }));
        assert!(err.to_string().contains("version 7"), "{err}");
    }
}
