//! How a command's result reaches stdout: one JSON document or text, chosen in one place,
//! and the runtime every async command runs on.

use anyhow::Context;
use serde::Serialize;

/// What a `--json` result looks like on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Indented: a report read by people and by `jq`.
    Document,
    /// One line: a record that follows other JSON lines (`exec --json`) or is piped on.
    Line,
}

/// Runs `future` to its end on a fresh [`runtime`], then leaves the runtime without
/// waiting for its blocking tasks. A file tool the session stopped waiting for when it was
/// stopped (a 33,000-hunk patch takes tens of seconds to place) would otherwise hold the
/// exit for as long as it computes, with the runtime's workers, and so the signal handlers
/// of [`crate::app::stop`], already gone: neither the first signal's exit nor a second
/// signal came before it finished, and its change then landed after `session_ended`.
/// Left behind, it dies with the process a moment later, before it writes anything
/// (a patch writes only once every hunk is placed).
pub fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = runtime()?;
    let out = runtime.block_on(future);
    runtime.shutdown_background();
    Ok(out)
}

/// Prints `value` as JSON when `json` is set, else the text `text` makes (computed only
/// when needed). Text carries its own final newline; its control characters are shown, not
/// obeyed (text such as a report's policy names comes from log files, which are input).
pub fn emit<T: Serialize>(
    json: bool,
    shape: Shape,
    value: &T,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if json {
        let encoded = match shape {
            Shape::Document => serde_json::to_string_pretty(value),
            Shape::Line => serde_json::to_string(value),
        }
        .context("encoding the result as JSON")?;
        println!("{encoded}");
    } else {
        print!("{}", crate::protocol::visible::visible_lines(&text()));
    }
    Ok(())
}

/// The multi-threaded runtime a command's async work runs on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Prints the warnings of a log corpus on stderr, where they are seen even when stdout
/// goes to `jq`.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {}", crate::protocol::visible::visible_lines(w));
    }
}
