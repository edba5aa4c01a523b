//! Writing logs: a plain synchronous [`LogWriter`], and [`spawn_writer`], which gives it a
//! task of its own so a live session never waits on the disk except where it asks to.
//!
//! One owner per file, fed over a bounded channel: lines never interleave, and a slow disk
//! pushes back on the producer instead of growing a queue without bound.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, oneshot};

use super::{Header, LogError};
use crate::protocol::Stamped;

/// Appends events to one log file; the file (and its parent directories) appear with the
/// first event, so a session that never starts leaves nothing behind.
///
/// Every line is written whole and flushed to the OS at once; the file is synced to disk at
/// durability points ([`Event::is_durability_point`](crate::protocol::Event::is_durability_point))
/// and on [`LogWriter::sync`]. After a failed write the next line starts on a fresh line, so
/// one torn line cannot swallow the following event.
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    header: Header,
    file: Option<BufWriter<File>>,
    line: Vec<u8>,
    torn: bool,
}

impl LogWriter {
    /// A writer for a new log at `path`. Nothing touches the disk until the first event.
    pub fn new(path: impl Into<PathBuf>, config_digest: impl Into<String>) -> LogWriter {
        LogWriter {
            path: path.into(),
            header: Header::current(config_digest),
            file: None,
            line: Vec::with_capacity(256),
            torn: false,
        }
    }

    /// A writer whose file exists now, with its header written: a front end creates its
    /// log before the session starts, so a log that cannot be written (the file exists, the
    /// directory is not writable) stops the session before it touches the repository,
    /// instead of leaving a session nobody can read back. Refuses an existing file.
    pub fn create(
        path: impl Into<PathBuf>,
        config_digest: impl Into<String>,
    ) -> Result<LogWriter, LogError> {
        let mut writer = LogWriter::new(path, config_digest);
        writer.open()?;
        Ok(writer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> LogError {
        LogError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Creates the file and writes the header. Refuses an existing file: appending a second
    /// header to someone else's log would corrupt it, and truncating would lose it.
    fn open(&mut self) -> Result<(), LogError> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| LogError::Dir {
                path: self.path.clone(),
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        let mut file = BufWriter::new(file);
        let header = serde_json::to_vec(&self.header).map_err(|source| LogError::Encode {
            path: self.path.clone(),
            source,
        })?;
        file.write_all(&header)
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.flush())
            .map_err(|e| self.io(e))?;
        self.file = Some(file);
        Ok(())
    }

    /// Appends one event as one line and flushes it; syncs to disk at durability points.
    pub fn append(&mut self, event: &Stamped) -> Result<(), LogError> {
        self.line.clear();
        if self.torn {
            self.line.push(b'\n');
        }
        serde_json::to_writer(&mut self.line, event).map_err(|source| LogError::Encode {
            path: self.path.clone(),
            source,
        })?;
        self.line.push(b'\n');
        if self.file.is_none() {
            self.open()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        let written = file.write_all(&self.line).and_then(|()| file.flush());
        if let Err(e) = written {
            self.torn = true;
            return Err(self.io(e));
        }
        self.torn = false;
        if event.event.is_durability_point() {
            self.sync()?;
        }
        Ok(())
    }

    /// Flushes and syncs everything written so far to disk. A no-op before the first event.
    pub fn sync(&mut self) -> Result<(), LogError> {
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        let synced = file.flush().and_then(|()| file.get_ref().sync_data());
        synced.map_err(|e| self.io(e))
    }

    /// Syncs and closes the file.
    pub fn close(mut self) -> Result<(), LogError> {
        self.sync()
    }
}

enum Message {
    Event(Box<Stamped>),
    /// Sync, then answer with the write errors since the last answer.
    Flush(oneshot::Sender<Vec<LogError>>),
}

/// The producer side of a log owned by a writer task. Cheap to clone.
///
/// Sending never fails the session: a write error is kept by the task and handed back by
/// the next [`LogHandle::flush`] or [`LogHandle::close`], for the caller to show as an
/// `Event::Warning` (see [`LogError::to_warning`]).
#[derive(Debug, Clone)]
pub struct LogHandle {
    tx: mpsc::Sender<Message>,
    path: PathBuf,
}

/// Hands `writer` to a task of its own (on tokio's blocking pool, since file I/O blocks) fed
/// by a channel of `capacity` events. Must be called within a tokio runtime. The task ends
/// when every handle is dropped or closed, syncing the file first. Drop the handles before
/// the runtime: dropping a runtime waits for its blocking tasks, and this one waits for
/// its handles.
pub fn spawn_writer(writer: LogWriter, capacity: usize) -> LogHandle {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let path = writer.path().to_path_buf();
    tokio::task::spawn_blocking(move || run(writer, rx));
    LogHandle { tx, path }
}

/// Errors kept for the next flush; beyond this many only the count of later ones grows, so
/// a dead disk cannot fill memory with copies of one error.
const KEPT_ERRORS: usize = 8;

fn run(mut writer: LogWriter, mut rx: mpsc::Receiver<Message>) {
    let mut errors: Vec<LogError> = Vec::new();
    let keep = |errors: &mut Vec<LogError>, e: LogError| {
        if errors.len() < KEPT_ERRORS {
            errors.push(e);
        }
    };
    while let Some(message) = rx.blocking_recv() {
        match message {
            Message::Event(event) => {
                if let Err(e) = writer.append(&event) {
                    keep(&mut errors, e);
                }
            }
            Message::Flush(ack) => {
                if let Err(e) = writer.sync() {
                    keep(&mut errors, e);
                }
                // The requester may have given up waiting; nothing to do then.
                let _ = ack.send(std::mem::take(&mut errors));
            }
        }
    }
    // Every handle is gone: no one is left to hear about a last error.
    let _ = writer.close();
}

impl LogHandle {
    /// Queues one event, waiting for room when the writer is behind. Fails only when the
    /// writer task is gone (a panic in it, or the runtime shutting down).
    pub async fn send(&self, event: Stamped) -> Result<(), LogError> {
        self.tx
            .send(Message::Event(Box::new(event)))
            .await
            .map_err(|_| self.gone())
    }

    /// Returns once every event sent before it is written and synced to disk, with the
    /// write errors since the previous flush (empty when all went well).
    pub async fn flush(&self) -> Result<Vec<LogError>, LogError> {
        let (ack, answer) = oneshot::channel();
        self.tx
            .send(Message::Flush(ack))
            .await
            .map_err(|_| self.gone())?;
        answer.await.map_err(|_| self.gone())
    }

    /// Flushes, then lets go of this handle; the task closes the file when the last handle
    /// is gone.
    pub async fn close(self) -> Result<Vec<LogError>, LogError> {
        self.flush().await
    }

    fn gone(&self) -> LogError {
        LogError::WriterGone {
            path: self.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Event, Outcome};

    fn warning(n: u64) -> Stamped {
        Stamped {
            t_ms: n,
            event: Event::Warning {
                kind: "k".into(),
                message: format!("m{n}"),
            },
        }
    }

    #[test]
    fn nothing_is_created_before_the_first_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/s.jsonl");
        let writer = LogWriter::new(&path, "d");
        writer.close().expect("close");
        assert!(!path.exists());
        assert!(!dir.path().join("a").exists());
    }

    #[test]
    fn the_first_event_creates_parents_and_writes_the_header_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a/b/s.jsonl");
        let mut writer = LogWriter::new(&path, "digest");
        writer.append(&warning(1)).expect("append");
        // Flushed per event: visible to another reader before close.
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let header: Header = serde_json::from_str(lines[0]).expect("header");
        assert_eq!(header, Header::current("digest"));
        let back: Stamped = serde_json::from_str(lines[1]).expect("event");
        assert_eq!(back, warning(1));
    }

    #[test]
    fn an_existing_file_is_never_appended_to_or_truncated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "precious\n").expect("write");
        let mut writer = LogWriter::new(&path, "d");
        let err = writer.append(&warning(1)).expect_err("exists");
        assert!(matches!(err, LogError::Io { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "precious\n");
        assert!(matches!(err.to_warning(), Event::Warning { .. }));
    }

    #[tokio::test]
    async fn the_task_writes_in_order_and_acknowledges_flushes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.jsonl");
        let handle = spawn_writer(LogWriter::new(&path, "d"), 2);
        let other = handle.clone();
        for n in 0..20 {
            if n % 2 == 0 { &handle } else { &other }
                .send(warning(n))
                .await
                .expect("send");
        }
        let end = Stamped {
            t_ms: 99,
            event: Event::SessionEnded {
                outcome: Outcome::Success,
                censored: false,
                steps: 0,
                ticks: 0,
                usd: 0.0,
                ask: Default::default(),
            },
        };
        handle.send(end).await.expect("send");
        assert!(handle.flush().await.expect("flush").is_empty());
        // After the acknowledgement every event is on disk, in order.
        let text = std::fs::read_to_string(&path).expect("read");
        let t: Vec<u64> = text
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Stamped>(l).expect("event").t_ms)
            .collect();
        let mut want: Vec<u64> = (0..20).collect();
        want.push(99);
        assert_eq!(t, want);
        assert!(other.close().await.expect("close").is_empty());
    }

    #[tokio::test]
    async fn a_write_error_comes_back_from_flush_and_the_session_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A directory where the file should be: every open fails.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).expect("mkdir");
        let handle = spawn_writer(LogWriter::new(&path, "d"), 4);
        for n in 0..20 {
            handle.send(warning(n)).await.expect("send never fails");
        }
        let errors = handle.flush().await.expect("flush answered");
        assert_eq!(errors.len(), KEPT_ERRORS);
        assert!(errors[0].to_string().contains("taken"), "{}", errors[0]);
        // Reported once, not again.
        assert!(handle.flush().await.expect("flush").is_empty());
    }
}
