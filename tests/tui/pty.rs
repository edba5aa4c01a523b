//! handoff in a real pty a test owns: handoff is the session leader on the slave with the
//! pty as its controlling terminal, as under a login shell; the test types into the master
//! and keeps everything handoff writes to the terminal.

use std::ffi::OsStr;
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::agent::support::procs;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// The binary these tests run: `HANDOFF_TEST_BIN` when set (to show that a test fails
/// against another build), else [`BIN`].
pub fn bin() -> PathBuf {
    std::env::var_os("HANDOFF_TEST_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from)
}

/// A pty pair, 100x30, before anything runs on it.
pub struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
    /// The slave's name, `/dev/pts/N`.
    pub path: PathBuf,
}

impl Pty {
    pub fn open() -> Pty {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 30,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty fills two descriptors; the name and termios arguments are null
        // and the window size is a local.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty");
        // SAFETY: fresh descriptors from openpty, owned here.
        let (master, slave) = unsafe {
            (
                std::fs::File::from_raw_fd(master),
                OwnedFd::from_raw_fd(slave),
            )
        };
        let path = std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd()))
            .expect("the slave's name");
        Pty {
            master,
            slave,
            path,
        }
    }
}

/// What `handoff run` is started with.
pub struct RunArgs<'a> {
    pub repo: &'a Path,
    pub config: &'a Path,
    pub log: &'a Path,
    pub task: &'a str,
    /// The config and data dirs point into it, so no user file is read or written.
    pub home: &'a Path,
}

/// handoff running on a pty: its input, and what it has written so far.
pub struct Handoff {
    shell: Child,
    input: std::fs::File,
    seen: Arc<Mutex<Vec<u8>>>,
    /// While set, nothing is read from the terminal, as from one that has stopped.
    paused: Arc<AtomicBool>,
    reader: JoinHandle<()>,
}

/// What is left when handoff has ended.
pub struct Finished {
    /// handoff's exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// Everything written to the terminal, escape sequences included.
    pub screen: String,
}

impl Handoff {
    /// `bin run --repo … --config … --log … TASK` on `pty`.
    pub fn run(pty: Pty, bin: &Path, args: &RunArgs<'_>) -> Handoff {
        let argv: [&OsStr; 8] = [
            "run".as_ref(),
            "--repo".as_ref(),
            args.repo.as_os_str(),
            "--config".as_ref(),
            args.config.as_os_str(),
            "--log".as_ref(),
            args.log.as_os_str(),
            args.task.as_ref(),
        ];
        Handoff::spawn(pty, bin, &argv, args.home)
    }

    /// Starts `bin argv…` as the session leader of `pty` (`setsid -c` makes the pty its
    /// controlling terminal); `sh` stays in between, so handoff is not this test's child.
    /// The config and data dirs point into `home`, so no user file is read or written.
    pub fn spawn(pty: Pty, bin: &Path, argv: &[&OsStr], home: &Path) -> Handoff {
        let Pty { master, slave, .. } = pty;
        let stdio = || -> Stdio { Stdio::from(slave.try_clone().expect("dup")) };
        let shell = std::process::Command::new("sh")
            .arg("-c")
            .arg("setsid -w -c \"$@\"; exit $?")
            .arg("sh")
            .arg(bin)
            .args(argv)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("HANDOFF_CONFIG")
            .env("TERM", "xterm-256color")
            .stdin(stdio())
            .stdout(stdio())
            .stderr(stdio())
            .spawn()
            .expect("spawn");
        drop(slave);
        let input = master.try_clone().expect("dup master");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let paused = Arc::new(AtomicBool::new(false));
        let pause = Arc::clone(&paused);
        let reader = std::thread::spawn(move || {
            let mut master = master;
            let mut buf = [0u8; 4096];
            loop {
                while pause.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let Ok(n) = master.read(&mut buf) else { break };
                if n == 0 {
                    break;
                }
                if let Ok(mut seen) = sink.lock() {
                    seen.extend_from_slice(&buf[..n]);
                }
            }
        });
        Handoff {
            shell,
            input,
            seen,
            paused,
            reader,
        }
    }

    /// The `sh` that started handoff (handoff is a descendant).
    pub fn shell_pid(&self) -> i32 {
        i32::try_from(self.shell.id()).expect("pid")
    }

    /// The handoff process, once it runs.
    pub fn handoff_pid(&self, bin: &Path) -> Option<i32> {
        let bin = bin.to_string_lossy();
        procs::descendants(self.shell_pid())
            .into_iter()
            .find(|&p| procs::cmdline(p).starts_with(&*bin))
    }

    /// Stops (`true`) or resumes reading what handoff writes: once the pty's buffers are
    /// full, handoff's writes to its terminal block.
    pub fn pause_reading(&self, paused: bool) {
        self.paused.store(paused, Ordering::SeqCst);
    }

    /// Sets the terminal's size, as a resized window does (handoff gets SIGWINCH).
    pub fn resize(&self, cols: u16, rows: u16) {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ on the pty's master, which this owns, with a local size.
        let rc = unsafe { libc::ioctl(self.input.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(rc, 0, "TIOCSWINSZ");
    }

    /// Types `keys` as the operator would.
    pub fn press(&mut self, keys: &[u8]) {
        self.input.write_all(keys).expect("type into the pty");
    }

    /// Waits for handoff to end (it must be ending or gone, and nothing it started may
    /// still hold the pty) and returns what it left.
    pub async fn finish(self) -> Finished {
        let Handoff {
            mut shell,
            input,
            seen,
            paused,
            reader,
        } = self;
        paused.store(false, Ordering::SeqCst);
        let status = tokio::task::spawn_blocking(move || shell.wait())
            .await
            .expect("join")
            .expect("wait");
        drop(input);
        let _ = tokio::task::spawn_blocking(move || reader.join()).await;
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        Finished {
            code: status.code(),
            screen: String::from_utf8_lossy(&seen).into_owned(),
        }
    }
}
