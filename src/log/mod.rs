//! Durable session logs: the writer, the reader, the header. Persistence only — what is
//! read back out of logs (reports, calibration, replay) is `analysis`.
//!
//! A log is JSONL: a [`Header`] line, then one [`Stamped`](crate::protocol::Stamped) event per
//! line. Logged sessions are the raw material of calibration and scoring, so the writer
//! must survive crashes (append, flush per event, sync at step and session ends) and the
//! reader must survive what crashes leave behind (a torn last line, a corrupt line, a file
//! from a newer version) without giving up on the rest of a corpus.

pub mod reader;
pub(crate) mod writer;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use reader::{LogReader, ReadWarning, log_files};
pub use writer::{LogHandle, LogWriter, spawn_writer};

/// The log format version this build writes and the newest it reads; it follows the event
/// schema version, since a log line *is* an event.
pub const LOG_VERSION: u32 = crate::protocol::SCHEMA_VERSION;

/// The first line of every log: enough to refuse a file this build cannot read, and to tell
/// which configuration produced the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub v: u32,
    /// Version of the `handoff` crate that wrote the log.
    pub handoff: String,
    /// SHA-256 of the effective configuration (see `Config::digest`).
    pub config_digest: String,
}

impl Header {
    /// The header this build writes.
    pub fn current(config_digest: impl Into<String>) -> Header {
        Header {
            v: LOG_VERSION,
            handoff: env!("CARGO_PKG_VERSION").to_string(),
            config_digest: config_digest.into(),
        }
    }
}

/// Why a log could not be written, or a file could not be read at all.
///
/// Line-level damage inside a readable file is not an error but a [`ReadWarning`].
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot create its directory {dir}: {source}")]
    Dir {
        path: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot encode an event: {source}")]
    Encode {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path}: no log header on line 1 ({detail}); is this a handoff session log?")]
    NoHeader { path: PathBuf, detail: String },
    #[error(
        "{path}: log format version {found} is newer than this build reads (up to {supported}); upgrade handoff"
    )]
    UnknownVersion {
        path: PathBuf,
        found: u64,
        supported: u32,
    },
    #[error("{path}: log format version 0 does not exist")]
    InvalidVersion { path: PathBuf },
    #[error("{path}: the log writer has stopped")]
    WriterGone { path: PathBuf },
}

impl LogError {
    /// The error as the event the session shows and logs: logging never fails a session, it
    /// only warns.
    pub fn to_warning(&self) -> crate::protocol::Event {
        crate::protocol::Event::Warning {
            kind: "log_write".to_string(),
            message: self.to_string(),
        }
    }
}
