//! Shared setup: temporary repositories, configs pointing at scripted servers, and a way to
//! run one headless session and read back its log.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use handoff::agent::session::Approvals;
use handoff::app::headless::{self, Summary};
use handoff::app::operator::{Answerer, PreparedAnswer};
use handoff::app::wiring;
use handoff::config::{Approval, Config, RouteMode, ThresholdKind};
use handoff::demo::server::{Script, ScriptedServer};
use handoff::protocol::{Event, Stamped};

/// A committed git repository with these files.
pub fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
    }
    let repo = git2::Repository::init(dir.path()).expect("git init");
    let mut index = repo.index().expect("index");
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .expect("add");
    index.write().expect("index write");
    let tree = repo
        .find_tree(index.write_tree().expect("tree"))
        .expect("find tree");
    let sig = git2::Signature::now("test", "test@example.invalid").expect("sig");
    repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
        .expect("commit");
    dir
}

/// Defaults pointed at the two servers; constant threshold so tests do not depend on the DP.
pub fn config(junior: &ScriptedServer, senior: &ScriptedServer) -> Config {
    let mut c = Config::default();
    c.junior.base_url = junior.base_url();
    c.junior.model = "junior-test".into();
    c.junior.max_retries = 2;
    c.senior.base_url = senior.base_url();
    c.senior.model = "senior-test".into();
    c.senior.api_key_env = None;
    c.senior.max_retries = 1;
    c.policy.threshold = ThresholdKind::Constant;
    c.policy.constant = 0.45;
    c.policy.route = RouteMode::Senior;
    c.agent.approval = Approval::Never;
    c.agent.max_steps = 8;
    c
}

pub async fn servers(junior: Script, senior: Script) -> (ScriptedServer, ScriptedServer) {
    let j = ScriptedServer::start(junior).await.expect("junior server");
    let s = ScriptedServer::start(senior).await.expect("senior server");
    (j, s)
}

/// What a finished session left: its summary and every event of its log.
pub struct Ran {
    pub summary: Summary,
    pub events: Vec<Event>,
    #[allow(dead_code)]
    pub log: PathBuf,
}

impl Ran {
    pub fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(Event::kind).collect()
    }
    pub fn count(&self, kind: &str) -> usize {
        self.events.iter().filter(|e| e.kind() == kind).count()
    }
}

pub async fn run(
    config: Config,
    repo: &Path,
    task: &str,
    answers: Vec<PreparedAnswer>,
    approvals: Approvals,
) -> Ran {
    let logs = tempfile::tempdir().expect("tempdir").keep();
    let log = logs.join("session.jsonl");
    let prepared =
        wiring::prepare(config, repo, task, approvals, Some(log.clone())).expect("prepare");
    let summary = headless::run_headless(
        prepared,
        Answerer::Prepared(VecDeque::from(answers)),
        false,
        handoff::app::stop::Stop::never(),
    )
    .await
    .expect("session runs");
    let events = read_log(&log);
    Ran {
        summary,
        events,
        log,
    }
}

/// Every event of a log, asserting the header and that each line parses.
pub fn read_log(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).expect("log exists");
    let mut lines = text.lines();
    let header: serde_json::Value =
        serde_json::from_str(lines.next().expect("header line")).expect("header json");
    assert_eq!(header["v"], 1, "header {header}");
    lines
        .map(|l| {
            serde_json::from_str::<Stamped>(l)
                .expect("every line is an event")
                .event
        })
        .collect()
}

/// Long enough a hesitant run that the built-in prior falls well below τ = 0.45.
pub fn lost() -> String {
    "I am not sure which file this is about or what the format should be, ".repeat(8)
}

/// The one file every scripted repository starts with.
pub const FILES: [(&str, &str); 1] = [("notes.txt", "hello\n")];

/// A confident junior turn that writes `done.txt`.
pub fn write_done() -> handoff::demo::server::Reply {
    use handoff::demo::script::{confident, reply};
    reply(
        confident("Writing the file."),
        Some((
            "c2",
            "write_file",
            serde_json::json!({"path": "done.txt", "content": "done\n"}),
        )),
    )
}

/// A confident turn that calls `finish`.
pub fn finish() -> handoff::demo::server::Reply {
    use handoff::demo::script::{confident, reply};
    reply(
        confident("Done."),
        Some((
            "c9",
            "finish",
            serde_json::json!({"summary": "wrote done.txt"}),
        )),
    )
}

/// One junior `run` call, then `finish`; the senior is never needed.
pub fn one_command(command: &str) -> handoff::demo::server::Script {
    use handoff::demo::script::{confident, reply};
    handoff::demo::server::Script::new(vec![
        reply(
            confident("Running it."),
            Some(("c1", "run", serde_json::json!({ "command": command }))),
        ),
        reply(
            confident("Done."),
            Some(("c2", "finish", serde_json::json!({"summary": "ran it"}))),
        ),
    ])
}

/// What the test does when it sees an event: send a command, or wait before the next.
#[allow(dead_code)]
pub enum React {
    Send(handoff::protocol::Command),
    Wait(std::time::Duration),
}

/// What a driven session left: its end and every event of its log.
pub struct Driven {
    pub end: handoff::agent::session::SessionEnd,
    pub events: Vec<Event>,
}

impl Driven {
    pub fn count(&self, kind: &str) -> usize {
        self.events.iter().filter(|e| e.kind() == kind).count()
    }
    /// Index of the first event matching `f`.
    pub fn position(&self, f: impl Fn(&Event) -> bool) -> Option<usize> {
        self.events.iter().position(f)
    }
}

/// Runs one session with a test in the operator's seat: `react` sees every event as the
/// session emits it and answers with commands, as the TUI would. Panics when the session
/// does not end within 30 s (a command the session ignored leaves it waiting).
pub async fn drive(
    config: Config,
    repo: &Path,
    task: &str,
    approvals: Approvals,
    mut react: impl FnMut(&Event) -> Vec<React> + Send + 'static,
) -> Driven {
    use handoff::agent::emitter::Emitter;
    use tokio::sync::mpsc;
    let logs = tempfile::tempdir().expect("tempdir").keep();
    let log = logs.join("session.jsonl");
    let prepared =
        wiring::prepare(config, repo, task, approvals, Some(log.clone())).expect("prepare");
    let (log_tx, log_task) = wiring::spawn_log(prepared.log);
    let (op_tx, mut op_rx) = mpsc::channel::<Stamped>(4096);
    let (cmd_tx, cmd_rx) = mpsc::channel(64);
    let operator = tokio::spawn(async move {
        while let Some(s) = op_rx.recv().await {
            for r in react(&s.event) {
                match r {
                    React::Send(c) => {
                        let _ = cmd_tx.send(c).await;
                    }
                    React::Wait(d) => tokio::time::sleep(d).await,
                }
            }
        }
    });
    let emitter = Emitter::new(vec![log_tx, op_tx]);
    let session = handoff::agent::session::run(prepared.setup, emitter, cmd_rx);
    let end = tokio::time::timeout(std::time::Duration::from_secs(30), session)
        .await
        .expect("the session ended")
        .expect("session runs");
    let _ = log_task.await;
    let _ = operator.await;
    Driven {
        end,
        events: read_log(&log),
    }
}

/// What one run of the real binary left.
#[allow(dead_code)]
pub struct Bin {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the `handoff` binary with `args`, `stdin` as its input (closed when `None`) and
/// `env` on top of the test's environment, with the config and data dirs pointed at
/// `home` so no user file is read or written.
#[allow(dead_code)]
pub async fn bin(
    home: &Path,
    args: &[&std::ffi::OsStr],
    stdin: Option<&str>,
    env: &[(&str, &str)],
) -> Bin {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.args(args)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("HANDOFF_CONFIG")
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run handoff");
    if let Some(text) = stdin {
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(text.as_bytes()).await.expect("write stdin");
    }
    let out = child.wait_with_output().await.expect("handoff ran");
    Bin {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes `cfg` as a config file in `dir`.
#[allow(dead_code)]
/// Whether `python3` runs here (tests of Python tasks skip without it).
pub fn has_python() -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_ok_and(|s| s.success())
}

/// Every event of a JSONL session log, as JSON (the header line left out).
pub fn log_events(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .expect("the log")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e.get("type").is_some())
        .collect()
}

pub fn write_config(dir: &Path, cfg: &Config) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, toml::to_string(cfg).expect("config to toml")).expect("write config");
    path
}

/// `handoff doctor --config CONFIG` through the binary: its whole text and the first line
/// that starts with `prefix` (empty when none does).
#[allow(dead_code)]
pub async fn doctor_line(config: &Path, prefix: &str) -> (String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("doctor")
        .arg("--config")
        .arg(config)
        .output()
        .await
        .expect("run doctor");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_default()
        .to_string();
    (text, line)
}

/// Processes of this machine, read from `/proc`: for tests that look for what a command
/// left running.
#[allow(dead_code)]
pub mod procs {
    use std::time::{Duration, Instant};

    /// `(ppid, state)` of a process, from `/proc/PID/stat`.
    fn stat(pid: i32) -> Option<(i32, String)> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut fields = s[s.rfind(')')? + 1..].split_whitespace();
        let state = fields.next()?.to_string();
        let ppid = fields.next()?.parse().ok()?;
        Some((ppid, state))
    }

    fn all() -> Vec<i32> {
        std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Running (not a zombie, not gone).
    pub fn alive(pid: i32) -> bool {
        stat(pid).is_some_and(|(_, state)| state != "Z" && state != "X")
    }

    /// The command line, arguments joined by spaces.
    pub fn cmdline(pid: i32) -> String {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .split('\0')
                    .filter(|a| !a.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }

    /// Every live descendant of `root`.
    pub fn descendants(root: i32) -> Vec<i32> {
        let parents: Vec<(i32, i32)> = all()
            .into_iter()
            .filter(|&p| alive(p))
            .filter_map(|p| stat(p).map(|(ppid, _)| (p, ppid)))
            .collect();
        let mut out = vec![root];
        loop {
            let before = out.len();
            for &(pid, ppid) in &parents {
                if out.contains(&ppid) && !out.contains(&pid) {
                    out.push(pid);
                }
            }
            if out.len() == before {
                break;
            }
        }
        out.retain(|&p| p != root);
        out
    }

    /// Live processes whose working directory is `dir` (what a command left in a repository).
    pub fn working_in(dir: &std::path::Path) -> Vec<i32> {
        let Ok(dir) = dir.canonicalize() else {
            return Vec::new();
        };
        all()
            .into_iter()
            .filter(|&p| alive(p))
            .filter(|&p| std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|c| c == dir))
            .collect()
    }

    /// The first descendant of `root` whose command line is `line`, waiting up to `limit`.
    pub async fn wait_for_descendant(root: i32, line: &str, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(pid) = descendants(root).into_iter().find(|&p| cmdline(p) == line) {
                return Some(pid);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// SIGKILLs what a test found still running, so a failed test leaves nothing behind.
    pub fn kill_all(pids: &[i32]) {
        for &pid in pids {
            // SAFETY: kill(2) on a process the test itself caused to start.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The stdout of a `handoff` run that must have succeeded (its stderr is the failure
/// message otherwise).
pub fn succeeded(output: std::process::Output) -> Vec<u8> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The JSON document a successful `handoff … --json` run printed.
pub fn json_of(output: std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&succeeded(output)).expect("json")
}

/// Makes a FIFO at `path`: opening it for reading blocks until a writer comes, which is what
/// the bad-input tests check nothing does.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("cstr");
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {}",
        path.display()
    );
}
