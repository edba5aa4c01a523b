//! Signals to the headless front ends while a `run` command runs (the review's M6), and
//! what a command leaves behind after its call (M3), through the real binary: `exec` and
//! `eval` stop at once on SIGINT, SIGTERM, SIGHUP and SIGQUIT, kill the command's tree, end the log
//! with `session_ended: aborted` and exit 3; a double fork that cleared its environment
//! and called `setsid` does not outlive the call.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use handoff::demo::server::{Script, ScriptedServer};
use handoff::protocol::{Event, Outcome};

use crate::agent::support::{config, one_command, procs, read_log, repo, write_config};

const BIN: &str = env!("CARGO_BIN_EXE_handoff");

/// How long a stopped front end may take to exit (the command it waits for runs 47 s).
const PROMPT: Duration = Duration::from_secs(3);

/// The last event of a log, which must be complete (every line parses).
fn last_event(log: &Path) -> Event {
    read_log(log).pop().expect("the log holds events")
}

/// How `child` ended within `limit` of the signal: its exit code, or why there is none
/// (it died of a signal, or still ran and was killed).
async fn exit_within(child: &mut tokio::process::Child, limit: Duration) -> Result<i32, String> {
    use std::os::unix::process::ExitStatusExt as _;
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) => status
            .code()
            .ok_or_else(|| format!("handoff died of signal {:?}", status.signal())),
        Ok(Err(e)) => Err(format!("cannot wait for handoff: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            Err(format!("handoff still ran {limit:?} after the signal"))
        }
    }
}

/// `handoff exec` on `repo` with its own config and data homes under `home`, silent.
fn spawn_exec(
    home: &Path,
    cfg: &Path,
    repo: &Path,
    log: &Path,
    task: &str,
) -> tokio::process::Child {
    tokio::process::Command::new(BIN)
        .arg("exec")
        .arg("--repo")
        .arg(repo)
        .arg("--config")
        .arg(cfg)
        .arg("--log")
        .arg(log)
        .arg(task)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn exec")
}

async fn servers_for(command: &str) -> (ScriptedServer, ScriptedServer) {
    let j = ScriptedServer::start(one_command(command))
        .await
        .expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    (j, s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_stops_on_sigint_sigterm_sighup_and_sigquit_and_kills_the_command() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
    ] {
        let (j, s) = servers_for("sleep 47").await;
        let home = tempfile::tempdir().expect("home");
        let cfg = write_config(home.path(), &config(&j, &s));
        let dir = repo(&[("notes.txt", "hi\n")]);
        let log = home.path().join("s.jsonl");
        let mut child = spawn_exec(home.path(), &cfg, dir.path(), &log, "sleep a while");
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).expect("pid");
        let sleeper = procs::wait_for_descendant(pid, "sleep 47", Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("{name}: the command never started"));
        // SAFETY: kill(2) on the handoff this test started.
        unsafe {
            libc::kill(pid, signal);
        }
        let sent = Instant::now();
        let code = exit_within(&mut child, PROMPT).await;
        let took = sent.elapsed();
        let orphaned = procs::alive(sleeper);
        procs::kill_all(&[sleeper]);
        assert_eq!(code, Ok(3), "{name}: an aborted session exits 3");
        assert!(!orphaned, "{name}: `sleep 47` outlived handoff");
        match last_event(&log) {
            Event::SessionEnded { outcome, .. } => {
                assert_eq!(outcome, Outcome::Aborted, "{name}")
            }
            other => panic!("{name}: the log ends with {other:?}, not session_ended"),
        }
        assert!(took < PROMPT, "{name}: took {took:?}");
    }
}

/// A one-task suite whose check would pass.
fn suite(root: &Path) -> std::path::PathBuf {
    let suite = root.join("suite");
    std::fs::create_dir_all(suite.join("repos/t")).expect("mkdir");
    std::fs::write(suite.join("repos/t/notes.txt"), "hi\n").expect("write");
    std::fs::write(
        suite.join("sleepy.toml"),
        "task = \"Sleep a while.\"\nrepo = \"repos/t\"\ncheck = \"true\"\n",
    )
    .expect("task file");
    suite
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_stops_at_once_on_a_signal_and_writes_what_it_has() {
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let (j, s) = servers_for("sleep 47").await;
        let home = tempfile::tempdir().expect("home");
        let cfg = write_config(home.path(), &config(&j, &s));
        let suite = suite(home.path());
        let out = home.path().join("out");
        let mut child = tokio::process::Command::new(BIN)
            .arg("eval")
            .arg(&suite)
            .arg("--config")
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_DATA_HOME", home.path().join("data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn eval");
        let pid = child.id().and_then(|p| i32::try_from(p).ok()).expect("pid");
        let sleeper = procs::wait_for_descendant(pid, "sleep 47", Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("{name}: the command never started"));
        // SAFETY: kill(2) on the handoff this test started.
        unsafe {
            libc::kill(pid, signal);
        }
        let code = exit_within(&mut child, PROMPT).await;
        let orphaned = procs::alive(sleeper);
        procs::kill_all(&[sleeper]);
        assert_eq!(code, Ok(3), "{name}: an interrupted evaluation exits 3");
        assert!(!orphaned, "{name}: `sleep 47` outlived the evaluation");
        let results = std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("{name}: no results.json: {e}"));
        let results: serde_json::Value = serde_json::from_str(&results).expect("results json");
        let run = &results["runs"][0];
        assert!(
            run["error"]
                .as_str()
                .is_some_and(|e| e.contains("interrupted")),
            "{name}: the run is marked interrupted: {run}"
        );
        let log = run["log"].as_str().expect("log path");
        match last_event(Path::new(log)) {
            Event::SessionEnded { outcome, .. } => {
                assert_eq!(outcome, Outcome::Aborted, "{name}")
            }
            other => panic!("{name}: the log ends with {other:?}, not session_ended"),
        }
    }
}

/// Runs `command` in one `exec` session and returns once `exec` has; then nothing the
/// command started may still run in the repository or write `marker`.
async fn nothing_survives(command: &str, marker: &str) {
    let (j, s) = servers_for(command).await;
    let home = tempfile::tempdir().expect("home");
    let cfg = write_config(home.path(), &config(&j, &s));
    let dir = repo(&[("notes.txt", "hi\n")]);
    let log = home.path().join("s.jsonl");
    let status = tokio::process::Command::new(BIN)
        .arg("exec")
        .arg("--repo")
        .arg(dir.path())
        .arg("--config")
        .arg(&cfg)
        .arg("--log")
        .arg(&log)
        .arg("start something")
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .expect("exec");
    assert!(status.success(), "exec: {status:?}");
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("forked"), "the command ran: {text}");
    // The survivor starts writing 1 s in, then every 0.5 s.
    let file = dir.path().join(marker);
    let size = || std::fs::metadata(&file).map_or(0, |m| m.len());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = size();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = size();
    let left = procs::working_in(dir.path());
    let lines: Vec<String> = left.iter().map(|&p| procs::cmdline(p)).collect();
    procs::kill_all(&left);
    assert_eq!(
        lines,
        Vec::<String>::new(),
        "processes outlived the session"
    );
    // A line written while exec was still finishing (a loaded machine can take longer than
    // the survivor's first second) is not survival; writing on after it returned is.
    assert_eq!(
        before, after,
        "something kept writing {marker} after exec returned"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_double_fork_without_environment_does_not_outlive_its_call() {
    // The outer `sh` backgrounds a `setsid sh` and exits (the double fork); `env -i` drops
    // every variable. The pause lets `setsid` take effect before the call ends.
    nothing_survives(
        "env -i sh -c 'setsid sh -c \"sleep 1; while :; do date >> survivor.txt; sleep 0.5; done\" &'; \
         sleep 0.5; echo forked",
        "survivor.txt",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_double_fork_with_setsid_and_an_empty_environment_does_not_outlive_its_call() {
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_err()
    {
        eprintln!("skipped: needs python3");
        return;
    }
    let fork = "python3 -c \"import os\nif os.fork() == 0:\n os.setsid()\n if os.fork() == 0:\n  \
                os.execve('/bin/sh', ['sh', '-c', 'sleep 1; while :; do date >> py_survivor.txt; sleep 0.5; done'], {})\n \
                os._exit(0)\nos.wait()\nprint('forked')\"; sleep 0.5";
    nothing_survives(fork, "py_survivor.txt").await;
}

/// A junior that accepts the connection, reads the request and never answers: the one
/// signal's quit must reach the session while the request is being opened, not only after
/// the idle timeout (600 s here) or at a second signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_signal_ends_an_exec_whose_junior_never_answers() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (accepted, mut first) = tokio::sync::mpsc::channel::<()>(8);
    let holder = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            open.push(sock);
            let _ = accepted.try_send(());
        }
    });
    let (j, s) = servers_for("true").await;
    let mut cfg = config(&j, &s);
    cfg.junior.base_url = format!("http://{addr}/v1");
    cfg.junior.idle_timeout_s = 600.0;
    cfg.junior.max_retries = 0;
    let home = tempfile::tempdir().expect("home");
    let cfg = write_config(home.path(), &cfg);
    let dir = repo(&[("notes.txt", "hi\n")]);
    let log = home.path().join("s.jsonl");
    let mut child = spawn_exec(home.path(), &cfg, dir.path(), &log, "say hello");
    tokio::time::timeout(Duration::from_secs(30), first.recv())
        .await
        .expect("the junior's request never arrived");
    // Let the request's bytes go out: the session now waits for response headers.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = child.id().and_then(|p| i32::try_from(p).ok()).expect("pid");
    // SAFETY: kill(2) on the handoff this test started.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
    let code = exit_within(&mut child, PROMPT).await;
    holder.abort();
    assert_eq!(code, Ok(3), "one SIGINT ends the session as an abort");
    match last_event(&log) {
        Event::SessionEnded { outcome, .. } => assert_eq!(outcome, Outcome::Aborted),
        other => panic!("the log ends with {other:?}, not session_ended"),
    }
}

/// The review's long patch: 33,000 one-line hunks (about 850 KB) took handoff some 43 s
/// to apply, and a second SIGINT during it did not exit at once. Whatever the first
/// signal waits for, the second one exits 3 within [`PROMPT`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once_during_a_long_patch() {
    use handoff::demo::script::{confident, reply};
    const LINES: usize = 33_000;
    let text: String = (0..LINES).map(|i| format!("line {i}\n")).collect();
    let patch: String = std::iter::once("--- a/big.txt\n+++ b/big.txt\n".to_string())
        .chain((0..LINES).map(|i| {
            let n = i + 1;
            format!("@@ -{n},1 +{n},1 @@\n-line {i}\n+LINE {i}\n")
        }))
        .collect();
    let junior = Script::new(vec![
        reply(
            confident("Patching."),
            Some(("c1", "apply_patch", serde_json::json!({ "patch": patch }))),
        ),
        reply(
            confident("Done."),
            Some(("c2", "finish", serde_json::json!({"summary": "patched"}))),
        ),
    ]);
    let j = ScriptedServer::start(junior).await.expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let home = tempfile::tempdir().expect("home");
    let mut cfg = config(&j, &s);
    cfg.agent.max_argument_bytes = 4 * 1024 * 1024;
    let cfg = write_config(home.path(), &cfg);
    let dir = repo(&[("big.txt", &text)]);
    let log = home.path().join("s.jsonl");
    let mut child = spawn_exec(home.path(), &cfg, dir.path(), &log, "patch it");
    let pid = child.id().and_then(|p| i32::try_from(p).ok()).expect("pid");
    let called = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("\"tool_called\"")) {
        assert!(
            called.elapsed() < Duration::from_secs(60),
            "the patch call never came"
        );
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for signal in [libc::SIGINT, libc::SIGINT] {
        // SAFETY: kill(2) on the handoff this test started (it may have exited already).
        unsafe {
            libc::kill(pid, signal);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let code = exit_within(&mut child, PROMPT).await;
    assert!(
        matches!(code, Ok(3) | Ok(0)),
        "two signals during the patch: {code:?}"
    );
    assert!(
        matches!(last_event(&log), Event::SessionEnded { .. }),
        "the log ends with session_ended"
    );
    // All or nothing: the patch landed whole before the signals, or not at all.
    let now = std::fs::read_to_string(dir.path().join("big.txt")).expect("big.txt");
    let patched: String = (0..LINES).map(|i| format!("LINE {i}\n")).collect();
    assert!(now == text || now == patched, "a partly applied patch");
}
