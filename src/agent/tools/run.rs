//! `run`: a shell command in the repository root, with a timeout that kills the whole
//! process group and output capped to its tail (the end of a build or test log is where
//! the error is).
//!
//! stdout and stderr share one pipe so their interleaving is the one the command produced.
//! This is the one place where handoff starts a command the model influenced: `run`, the
//! session's check and eval's checks all come through [`run_shell`]. The command starts as
//! the leader of a new session with stdin from `/dev/null`, so it has no controlling
//! terminal: it cannot open `/dev/tty`, inject keystrokes into the user's shell or the TUI
//! with `TIOCSTI`, or receive the terminal's signals. Its environment is an allow-list
//! ([`crate::agent::sandbox::env`]). On timeout, on cancellation (the loop dropping this
//! future, as when the operator quits or a signal stops the session) and after it exits,
//! its whole tree is killed ([`crate::agent::proctree`]), so no background child outlives
//! the call.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::args::RunArgs;
use super::{OutcomeKind, ToolOutcome, Workspace};
use crate::agent::proctree::{self, Tree};
use crate::agent::sandbox::limits::Caps;
use crate::agent::sandbox::{self, Layers, Policy};

/// How long output is still read after the command ended (for grandchildren's last words).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// A shell command to run.
#[derive(Debug, Clone)]
pub struct ShellCommand {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Bytes of output kept (the tail).
    pub cap_bytes: usize,
    /// The sandbox; `None` runs without one.
    pub sandbox: Option<Policy>,
    /// `TMPDIR` for the command (a directory the sandbox lets it write).
    pub tmpdir: Option<PathBuf>,
    /// The whole environment of the command (see [`sandbox::env::command_env`]).
    pub env: Vec<(OsString, OsString)>,
    /// What the command may use (`agent.max_*`); a command past one is stopped.
    pub caps: Caps,
}

impl ShellCommand {
    /// A command with no sandbox, the allow-listed environment and a 4 KiB output tail.
    pub fn new(command: &str, cwd: &std::path::Path, timeout: Duration) -> ShellCommand {
        ShellCommand {
            command: command.to_string(),
            cwd: cwd.to_path_buf(),
            timeout,
            cap_bytes: 4096,
            sandbox: None,
            tmpdir: None,
            env: sandbox::env::command_env(&[], &[], false),
            caps: Caps::default(),
        }
    }
}

/// What a finished (or killed) command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    /// `None` when the command was killed by a signal (including the timeout).
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The last `cap_bytes` of stdout and stderr combined, as text.
    pub output_tail: String,
    /// Total bytes the command wrote.
    pub total_bytes: u64,
    /// Whether any sandbox layer was applied.
    pub sandboxed: bool,
    /// Which layers were.
    pub layers: Layers,
    /// Why the command was stopped for passing a cap (`stopped: …`), if it was; also the
    /// first line of `output_tail`, so every reader of the output sees it.
    pub stopped: Option<String>,
}

impl CommandResult {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && self.stopped.is_none()
    }
}

/// Errors starting a command (not the command failing).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start `sh`: {0}")]
    Spawn(std::io::Error),
    #[error("cannot set up the sandbox: {0}")]
    Sandbox(String),
}

/// Keeps the last `cap` bytes written to it, and counts all of them.
#[derive(Debug, Default)]
struct Tail {
    buf: Vec<u8>,
    cap: usize,
    total: u64,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        self.buf.extend_from_slice(data);
        if self.buf.len() > 2 * self.cap.max(1) {
            let cut = self.buf.len() - self.cap;
            self.buf.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let start = self.buf.len().saturating_sub(self.cap);
        let mut bytes = &self.buf[start..];
        // Do not start in the middle of a UTF-8 character.
        while let [b, rest @ ..] = bytes {
            if start > 0 && (b & 0b1100_0000) == 0b1000_0000 {
                bytes = rest;
            } else {
                break;
            }
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Runs `sh -c command` as described; used by the `run` tool and by the session's check.
pub async fn run_shell(spec: &ShellCommand) -> Result<CommandResult, RunError> {
    let (sender, mut receiver) = tokio::net::unix::pipe::pipe().map_err(RunError::Spawn)?;
    let write_end: OwnedFd = sender.into_blocking_fd().map_err(RunError::Spawn)?;
    let write_end2 = write_end.try_clone().map_err(RunError::Spawn)?;
    let marker = proctree::new_marker();
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_end2))
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env(proctree::MARKER, &marker)
        .kill_on_drop(true);
    if let Some(tmp) = &spec.tmpdir {
        cmd.env("TMPDIR", tmp);
    }
    // SAFETY: between fork and exec the closure makes one system call and allocates nothing.
    // It is registered first, so the session exists before any sandbox step runs.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let layers = match &spec.sandbox {
        Some(policy) => {
            sandbox::confine(&mut cmd, policy).map_err(|e| RunError::Sandbox(e.to_string()))?
        }
        None => Layers::default(),
    };
    sandbox::limits::apply(&mut cmd, spec.caps);
    let mut tree = Tree::new(marker);
    let spawned = tree.spawn(&mut cmd);
    // The builder holds the pipe's write ends; drop it so the reader sees end-of-file.
    drop(cmd);
    let mut child = spawned.map_err(RunError::Spawn)?;

    let tail = Arc::new(Mutex::new(Tail {
        cap: spec.cap_bytes,
        ..Tail::default()
    }));
    let reader_tail = Arc::clone(&tail);
    let mut reader = tokio::spawn(async move {
        let mut chunk = vec![0u8; 8192];
        loop {
            match receiver.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut t) = reader_tail.lock() {
                        t.push(&chunk[..n]);
                    }
                }
            }
        }
    });

    let (status, timed_out, mut stopped) = watch(&mut child, &mut tree, spec).await;
    // Whatever the command left running goes too (it would hold the pipe or the repository).
    tree.finish();
    if tokio::time::timeout(DRAIN_GRACE, &mut reader)
        .await
        .is_err()
    {
        reader.abort();
    }
    let (mut output_tail, total_bytes) = match tail.lock() {
        Ok(t) => (t.text(), t.total),
        Err(_) => (String::new(), 0),
    };
    let (signal, code) = (
        status.and_then(|s| s.signal()),
        status.and_then(|s| s.code()),
    );
    if stopped.is_none() && !timed_out {
        stopped = spec
            .caps
            .write_stopped(signal, code, &output_tail)
            .or_else(|| spec.caps.memory_refused(code == Some(0), &output_tail));
    }
    if let Some(why) = &stopped {
        output_tail = format!("{why}\n{output_tail}");
    }
    Ok(CommandResult {
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        output_tail,
        total_bytes,
        sandboxed: layers.any(),
        layers,
        stopped,
    })
}

/// Waits for the command until it exits, times out or passes a process or memory cap
/// (checked every [`sandbox::limits::POLL`]); kills its tree in the last two cases.
/// Returns its status, whether it timed out, and why it was stopped.
async fn watch(
    child: &mut tokio::process::Child,
    tree: &mut Tree,
    spec: &ShellCommand,
) -> (Option<std::process::ExitStatus>, bool, Option<String>) {
    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut poll = tokio::time::interval(sandbox::limits::POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A cap counts as passed on two polls in a row: one reading of /proc can catch a pid
    // between two owners (seen once in a loaded full test run, never alone), and a tree
    // that really holds too much still holds it a poll later.
    let mut strikes = 0u8;
    loop {
        tokio::select! {
            status = child.wait() => return (status.ok(), false, None),
            () = tokio::time::sleep_until(deadline) => {
                tree.kill();
                return (child.wait().await.ok(), true, None);
            }
            _ = poll.tick(), if spec.caps.polled() => {
                match spec.caps.exceeded(tree.usage()) {
                    Some(why) if strikes >= 1 => {
                        tree.kill();
                        return (child.wait().await.ok(), false, Some(why));
                    }
                    Some(_) => strikes += 1,
                    None => strikes = 0,
                }
            }
        }
    }
}

/// What a command did to git metadata, found and undone by [`GitGuard::finish`].
#[derive(Debug, Default)]
pub(crate) struct GitFound {
    /// Changes to the repository's `.git` (where no read-only mount could be made), with
    /// what was undone and what could not be.
    pub git_changes: Vec<String>,
    /// Git metadata planted in the work tree (removed) or index flags (cleared).
    pub planted: Vec<String>,
}

impl GitFound {
    /// Every line of what was found (the `protected_touched` event's `git` lines).
    pub fn lines(&self) -> Vec<String> {
        self.git_changes
            .iter()
            .chain(&self.planted)
            .cloned()
            .collect()
    }
}

/// The git watches of one command, `run`'s and the check's alike: `.git` fingerprinted
/// before and put back after, planted `.git` entries and index flags removed.
pub(crate) struct GitGuard {
    before: crate::agent::gitguard::GitState,
    watch: crate::agent::gitnest::Watch,
}

impl GitGuard {
    pub fn start(ws: &Workspace) -> GitGuard {
        GitGuard {
            before: ws.git_state(),
            watch: crate::agent::gitnest::Watch::start(ws.root(), ws.limits().max_tree_entries),
        }
    }

    /// Undoes what the command did to git metadata and says what that was.
    pub fn finish(self, ws: &Workspace) -> GitFound {
        let after = ws.git_state();
        let mut git_changes = self.before.changes(&after);
        // Where .git could not be mounted read-only the change landed: put it back now,
        // before the user's next `git` can run a planted hook or config line.
        let (undone, not_undone) = if git_changes.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            self.before.undo(&after, ws.root())
        };
        if !undone.is_empty() {
            git_changes.push(format!("undone: {}", undone.join(", ")));
        }
        if !not_undone.is_empty() {
            git_changes.push(format!(
                "NOT undone (put back by hand before running git): {}",
                not_undone.join(", ")
            ));
        }
        let planted = self.watch.finish(ws.root());
        GitFound {
            git_changes,
            planted,
        }
    }
}

/// The `run` tool.
pub async fn run(ws: &Workspace, args: &RunArgs) -> ToolOutcome {
    if args.command.trim().is_empty() || args.command.contains('\0') {
        return ToolOutcome::failed(
            OutcomeKind::BadArguments,
            "error: bad arguments for run: `command` must be a non-empty shell command without NUL bytes".into(),
        );
    }
    let limits = ws.limits();
    let timeout = args
        .timeout_s
        .map(|s| Duration::from_secs(s.max(1)).min(limits.command_timeout))
        .unwrap_or(limits.command_timeout);
    let spec = ws.shell(&args.command, timeout, limits.output_cap_bytes);
    let guard = GitGuard::start(ws);
    let result = run_shell(&spec).await;
    let GitFound {
        git_changes,
        planted,
    } = guard.finish(ws);
    // The step's record turns these into the `protected_touched` event's `git` lines: the
    // summary says so and the session exits 5 (`crate::exit`).
    ws.note_git_repairs(&git_changes);
    ws.note_git_repairs(&planted);
    match result {
        Ok(result) => {
            let mut out = outcome(&result, timeout, limits.output_cap_bytes);
            if let Some(denial) = denial(&result, &spec) {
                let message = denial.message();
                out.output = format!("{message}\n{}", out.output);
                out.kind = OutcomeKind::SandboxDenied;
                out.fault = Some(message);
            }
            // Hooks and config run code on the user's next `git`; the model must not touch
            // them, and the user must hear of it. A nested .git, a gitfile or a hidden index
            // entry runs code on (or hides work from) it too: undone already, and said.
            for (what, lines, sep) in [
                (
                    "changed the repository's .git, which commands must not touch",
                    &git_changes,
                    ", ",
                ),
                (
                    "left git metadata in the work tree, which commands must not do",
                    &planted,
                    "; ",
                ),
            ] {
                if !lines.is_empty() {
                    out.output = format!(
                        "error: the command {what}: {}\n{}",
                        lines.join(sep),
                        out.output
                    );
                    out.ok = false;
                    out.kind = OutcomeKind::ToolError;
                }
            }
            out
        }
        Err(e) => ToolOutcome::failed(OutcomeKind::ToolError, format!("error: {e}")),
    }
}

/// The sandbox denial behind a failed command, when Landlock confined it and its output
/// names a refused path outside the writable roots ([`sandbox::denial`]).
fn denial(result: &CommandResult, spec: &ShellCommand) -> Option<sandbox::denial::Denial> {
    let policy = spec.sandbox.as_ref()?;
    if result.success() || result.timed_out || result.layers.landlock_abi == 0 {
        return None;
    }
    sandbox::denial::find(&result.output_tail, &policy.writable, &spec.cwd)
}

/// A `run` result's exit code and whether it timed out, read back from the head line
/// [`outcome`] writes (`exit code: N`, `timed out after …`): the test-run rule judges what
/// the model was shown. `(None, false)`: killed, or not a `run` result.
pub(crate) fn exit_status_of(output: &str) -> (Option<i32>, bool) {
    let first = output.lines().next().unwrap_or("");
    if first.starts_with("timed out after ") {
        return (None, true);
    }
    let code = first
        .strip_prefix("exit code: ")
        .and_then(|c| c.trim().parse().ok());
    (code, false)
}

fn outcome(result: &CommandResult, timeout: Duration, cap: usize) -> ToolOutcome {
    let mut head = match (result.timed_out, result.exit_code) {
        _ if result.stopped.is_some() => String::new(),
        (true, _) => format!(
            "timed out after {}s; the command and its children were killed\n",
            timeout.as_secs()
        ),
        (false, Some(code)) => format!("exit code: {code}\n"),
        (false, None) => match result.signal {
            Some(signal) => format!("killed by signal {signal}\n"),
            None => "ended without an exit status\n".to_string(),
        },
    };
    if result.total_bytes > cap as u64 {
        head.push_str(&format!(
            "[output was {} bytes; showing the last {}]\n",
            result.total_bytes,
            result.output_tail.len()
        ));
    }
    if result.total_bytes == 0 {
        head.push_str("(no output)");
    }
    let output = format!("{head}{}", result.output_tail);
    ToolOutcome {
        ok: result.success(),
        output,
        kind: if result.timed_out {
            OutcomeKind::TimedOut
        } else if result.success() {
            OutcomeKind::Ok
        } else {
            OutcomeKind::ToolError
        },
        writes: true,
        protected: Vec::new(),
        fault: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_status_reads_back_from_the_head_line_outcome_writes() {
        let result = |exit_code, timed_out| CommandResult {
            exit_code,
            signal: None,
            timed_out,
            output_tail: "exit code: 9 is printed by the command\n".into(),
            total_bytes: 40,
            sandboxed: false,
            layers: Layers::default(),
            stopped: None,
        };
        let t = Duration::from_secs(5);
        let out = |r: &CommandResult| outcome(r, t, 4096).output;
        assert_eq!(
            exit_status_of(&out(&result(Some(1), false))),
            (Some(1), false)
        );
        assert_eq!(
            exit_status_of(&out(&result(Some(0), false))),
            (Some(0), false)
        );
        assert_eq!(exit_status_of(&out(&result(None, true))), (None, true));
        assert_eq!(exit_status_of(&out(&result(None, false))), (None, false));
        assert_eq!(exit_status_of("no head line"), (None, false));
    }

    #[test]
    fn the_tail_keeps_the_end_and_counts_everything() {
        let mut t = Tail {
            cap: 10,
            ..Tail::default()
        };
        for i in 0..100u8 {
            t.push(&[b'a' + (i % 26)]);
        }
        assert_eq!(t.total, 100);
        let expected: String = (90..100u8).map(|i| (b'a' + (i % 26)) as char).collect();
        assert_eq!(t.text(), expected);
    }

    #[test]
    fn the_tail_never_starts_inside_a_character() {
        let mut t = Tail {
            cap: 4,
            ..Tail::default()
        };
        t.push("ééé".as_bytes()); // 6 bytes; the last 4 are `é` + `é`
        assert_eq!(t.text(), "éé");
        t.push(b"x"); // last 4 bytes start inside the second `é`
        assert_eq!(t.text(), "éx");
    }
}
