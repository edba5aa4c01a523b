//! A command cannot answer the TUI's approval prompt (the review's C2): in `handoff run` in a
//! real pty, the junior's first `run` leaves a child behind that types `y` and Enter into
//! its terminal with `TIOCSTI` every half second, through fd 0, `/dev/tty` and the pty's
//! own path (`/dev/pts/N`, as a child that looked it up would). The test approves that
//! `run` with its own `y`. The junior's next call, a `write_file`, must then wait for the
//! operator: for several seconds nothing is written and the log has no decision, and when
//! the test answers `n`, the log records that refusal, by the operator. Because the child
//! is killed when its call ends, the test also asserts that none of the keys it typed while
//! it lived reached the terminal.
//!
//! Before the fix the child's `y` approved the write within a second, logged as the
//! operator's. `HANDOFF_TEST_BIN` runs the test against another build of handoff (so the
//! config below uses only keys every build knows). The child writes `tiocsti.txt`: per
//! target, how many bytes it pushed and what refused the rest; the test prints it.
//!
//! Skips with a message when python3 or setsid is missing, or when this kernel refuses
//! `TIOCSTI` to this process anyway (`dev.tty.legacy_tiocsti = 0` without `CAP_SYS_ADMIN`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use serde_json::{Value, json};

use super::pty::{Handoff, Pty, RunArgs, bin};
use crate::agent::support::{finish, procs, repo, servers, write_done};

/// How long the write must stay unanswered while the child types.
const HOLD: Duration = Duration::from_secs(4);

/// The child: leaves the command's process group (as the review's child did, so a group
/// kill misses it), then for 10 s pushes `y` and Enter into every terminal it can name.
const INJECTOR: &str = r#"
import fcntl, os, sys, termios, time
try:
    os.setpgid(0, 0)
except OSError:
    pass
targets = [("fd 0", None), ("/dev/tty", "/dev/tty"), (sys.argv[1], sys.argv[1])]
tally = {name: [0, 0, set()] for name, _ in targets}

def push(name, path):
    t = tally[name]
    try:
        fd = 0 if path is None else os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except OSError as e:
        t[1] += 2
        t[2].add("open: " + e.strerror)
        return
    for c in b"y\r":
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
            t[0] += 1
        except OSError as e:
            t[1] += 1
            t[2].add("ioctl: " + e.strerror)
    if path is not None:
        os.close(fd)

def record():
    ok = sum(t[0] for t in tally.values())
    with open("tiocsti.tmp", "w") as f:
        f.write("ioctl succeeded: %s\n" % ("yes" if ok else "no"))
        for name, (pushed, refused, why) in tally.items():
            f.write("%s: %d pushed, %d refused %s\n" % (name, pushed, refused, sorted(why)))
    os.replace("tiocsti.tmp", "tiocsti.txt")

end = time.time() + 10
while True:
    for name, path in targets:
        push(name, path)
    record()
    if time.time() > end:
        break
    time.sleep(0.5)
"#;

/// Whether this kernel lets this process use `TIOCSTI` at all: `dev.tty.legacy_tiocsti`
/// (Linux 6.2+; older kernels always allow it on the caller's own terminal), or
/// `CAP_SYS_ADMIN`, which bypasses that switch.
fn tiocsti_available() -> Result<(), String> {
    let legacy = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti");
    if !matches!(legacy.as_deref().map(str::trim), Ok("0")) {
        return Ok(());
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    // CAP_SYS_ADMIN is capability 21 (linux/capability.h).
    if cap_eff & (1 << 21) != 0 {
        return Ok(());
    }
    Err(
        "dev.tty.legacy_tiocsti = 0 and no CAP_SYS_ADMIN: TIOCSTI is refused on this kernel, \
         so no command could type into the TUI"
            .into(),
    )
}

fn has(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The log's events so far as JSON (another build's events need not parse as ours);
/// a line still being written is skipped.
fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn find<'a>(events: &'a [Value], kind: &str, call_id: &str) -> Option<&'a Value> {
    events
        .iter()
        .find(|e| e["type"] == kind && e["call_id"] == call_id)
}

/// Polls the log until `kind` for `call_id` is in it.
async fn wait_for(log: &Path, kind: &str, call_id: &str, limit: Duration) -> Option<Value> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(e) = find(&events(log), kind, call_id) {
            return Some(e.clone());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// A config with only keys every build of handoff knows: the two scripted servers, a
/// constant threshold the confident junior stays above, and `approval = "on-write"`.
fn write_config(home: &Path, junior: &str, senior: &str) -> PathBuf {
    let path = home.join("config.toml");
    let text = format!(
        "[junior]\nbase_url = \"{junior}\"\nmodel = \"junior-test\"\nmax_retries = 2\n\n\
         [senior]\nbase_url = \"{senior}\"\nmodel = \"senior-test\"\nmax_retries = 1\n\n\
         [policy]\nthreshold = \"constant\"\nconstant = 0.45\nroute = \"senior\"\n\n\
         [agent]\napproval = \"on-write\"\nmax_steps = 8\n"
    );
    std::fs::write(&path, text).expect("write config");
    path
}

/// What the test saw, gathered before anything is asserted so a failure still cleans up.
#[derive(Debug, Default)]
struct Seen {
    /// The write's decision, when one came before the test answered.
    decided_unasked: Option<Value>,
    written_unasked: bool,
    /// How long after the prompt appeared the unasked decision came.
    after: Option<Duration>,
    /// The write's decision after the test's `n`.
    decided: Option<Value>,
    ended: bool,
    marker: Option<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_child_cannot_approve_a_later_call_by_typing_y() {
    if let Err(why) = tiocsti_available() {
        eprintln!("skipped: {why}");
        return;
    }
    if !has("python3", "--version") || !has("setsid", "--version") {
        eprintln!("skipped: needs python3 and setsid");
        return;
    }
    let bin = bin();
    let pty = Pty::open();
    let dir = repo(&[("notes.txt", "hi\n"), ("inject.py", INJECTOR)]);
    let command = format!(
        "python3 inject.py {} >/dev/null 2>&1 & sleep 1",
        pty.path.display()
    );
    let (j, s) = servers(
        Script::new(vec![
            reply(
                confident("Running it."),
                Some(("c1", "run", json!({ "command": command }))),
            ),
            write_done(),
            finish(),
        ]),
        Script::new(vec![]),
    )
    .await;
    let home = tempfile::tempdir().expect("home");
    let cfg = write_config(home.path(), &j.base_url(), &s.base_url());
    let log = home.path().join("s.jsonl");
    let args = RunArgs {
        repo: dir.path(),
        config: &cfg,
        log: &log,
        task: "write done.txt",
        home: home.path(),
    };
    let mut tui = Handoff::run(pty, &bin, &args);
    let done = dir.path().join("done.txt");
    let mut seen = Seen::default();

    let asked_run = wait_for(&log, "approval_requested", "c1", Duration::from_secs(30)).await;
    let handoff = tui.handoff_pid(&bin);
    if asked_run.is_some() {
        tui.press(b"y");
    }
    let asked_write = match asked_run {
        Some(_) => wait_for(&log, "approval_requested", "c2", Duration::from_secs(30)).await,
        None => None,
    };
    if asked_write.is_some() {
        let start = Instant::now();
        while start.elapsed() < HOLD {
            let now = events(&log);
            if let Some(d) = find(&now, "approval_decided", "c2") {
                seen.decided_unasked = Some(d.clone());
                seen.after = Some(start.elapsed());
                break;
            }
            if done.exists() {
                seen.written_unasked = true;
                seen.after = Some(start.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if seen.decided_unasked.is_none() {
            tui.press(b"n");
            seen.decided = wait_for(&log, "approval_decided", "c2", Duration::from_secs(10)).await;
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) && !seen.ended {
            seen.ended = events(&log).iter().any(|e| e["type"] == "session_ended");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    seen.marker = std::fs::read_to_string(dir.path().join("tiocsti.txt")).ok();

    // Leave: `q` ends an ended session; quit at once (Ctrl-C) otherwise.
    tui.press(if seen.ended { b"q" } else { b"\x03" });
    let start = Instant::now();
    while handoff.is_some_and(procs::alive) && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut leftovers = procs::working_in(dir.path());
    leftovers.extend(handoff);
    procs::kill_all(&leftovers);
    let screen = tui.finish().await.screen;

    let marker = seen
        .marker
        .clone()
        .unwrap_or_else(|| "(no tiocsti.txt)".into());
    eprintln!("the child's TIOCSTI attempts (tiocsti.txt):\n{marker}");
    assert!(
        asked_run.is_some(),
        "no approval was asked for the `run`; the screen:\n{screen}"
    );
    assert!(
        asked_write.is_some(),
        "no approval was asked for the `write_file`; the screen:\n{screen}"
    );
    assert!(
        seen.marker.is_some(),
        "the child never ran, so this run tested nothing"
    );
    if let Some(d) = &seen.decided_unasked {
        panic!(
            "the write was decided {:?} after its prompt with no key from the test \
             (approved by injected keys): {d}\nTIOCSTI: {marker}",
            seen.after.unwrap_or_default()
        );
    }
    assert!(
        !seen.written_unasked,
        "done.txt was written with no approval from the test\nTIOCSTI: {marker}"
    );
    let decided = seen
        .decided
        .unwrap_or_else(|| panic!("the test's `n` was not logged as the write's decision"));
    assert_eq!(
        decided["approved"], false,
        "the operator said no: {decided}"
    );
    assert_eq!(decided["by"], "operator", "{decided}");
    assert!(!done.exists(), "the refused write happened");
    assert!(seen.ended, "the session did not end after the refusal");
    // Today the session kills what a call left behind before the next prompt, so the
    // approval above would hold even if the child could type; the keys it typed while it
    // lived must not have reached handoff's terminal either.
    assert!(
        marker.starts_with("ioctl succeeded: no"),
        "the child typed into handoff's terminal:\n{marker}"
    );
}
