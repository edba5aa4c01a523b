//! The review's escapes that `tests/tools/contain.rs` and `bounds.rs` test in-process,
//! again through the real binary (`handoff exec`, a scripted junior over loopback HTTP, a
//! real shell, the sandbox as configured by default): H2, H4, M1/C3, M4, M5, M9, L1, L6.
//! Going through the binary is what lets them be run against an older build too: each was
//! run against the binary of the reviewed commit and failed there (SECURITY.md).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use handoff::demo::script::{confident, reply};
use handoff::demo::server::{Reply, Script, ScriptedServer};
use serde_json::json;

use crate::agent::support::{config, one_command, repo};

struct Out {
    code: Option<i32>,
    log: String,
    stderr: String,
}

fn calls(calls: Vec<(&str, serde_json::Value)>) -> Script {
    let mut replies: Vec<Reply> = Vec::new();
    for (i, (tool, args)) in calls.into_iter().enumerate() {
        let id = format!("c{i}");
        replies.push(reply(confident("Next."), Some((&id, tool, args))));
    }
    replies.push(reply(
        confident("Done."),
        Some(("cf", "finish", json!({"summary": "done"}))),
    ));
    Script::new(replies)
}

async fn exec_with(
    junior_url: Option<String>,
    script: Script,
    dir: &Path,
    limit: Duration,
    edit: impl FnOnce(&mut handoff::config::Config),
) -> Option<Out> {
    let j = ScriptedServer::start(script).await.expect("junior");
    let s = ScriptedServer::start(Script::new(vec![]))
        .await
        .expect("senior");
    let mut cfg = config(&j, &s);
    if let Some(url) = junior_url {
        cfg.junior.base_url = url;
    }
    cfg.policy.shadow = true;
    cfg.agent.max_steps = 200;
    edit(&mut cfg);
    let work = tempfile::tempdir().expect("tempdir");
    let cfg_path = work.path().join("config.toml");
    std::fs::write(&cfg_path, toml::to_string(&cfg).expect("toml")).expect("config");
    let log = work.path().join("s.jsonl");
    let child = tokio::process::Command::from(super::exec_command(dir, &cfg_path, &log, "probe"))
        .env("XDG_CONFIG_HOME", work.path().join("config"))
        .env("XDG_DATA_HOME", work.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let out = tokio::time::timeout(limit, child.wait_with_output()).await;
    let out = match out {
        Ok(o) => o.expect("wait"),
        Err(_) => return None,
    };
    Some(Out {
        code: out.status.code(),
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

async fn exec_cmd(command: &str, dir: &Path) -> Out {
    exec_with(
        None,
        one_command(command),
        dir,
        Duration::from_secs(60),
        |_| {},
    )
    .await
    .expect("exec finished")
}

/// H2: `run` changes `.git/config` and adds a hook.
#[tokio::test]
async fn probe_h2_git_hooks_and_config() {
    let dir = repo(&[("notes.txt", "hi\n")]);
    let before = std::fs::read_to_string(dir.path().join(".git/config")).expect("config");
    let o = exec_cmd(
        "git config core.fsmonitor 'touch /tmp/probe-fsmonitor'; mkdir -p .git/hooks; \
         printf '#!/bin/sh\\n' > .git/hooks/pre-commit; echo tried",
        dir.path(),
    )
    .await;
    assert!(o.log.contains("tried"), "ran: {}", o.stderr);
    let after = std::fs::read_to_string(dir.path().join(".git/config")).unwrap_or_default();
    let hook = dir.path().join(".git/hooks/pre-commit").exists();
    let reported = o.log.contains(".git/config was changed");
    assert!(
        (after == before && !hook) || reported,
        "H2: .git changed (config changed: {}, hook: {hook}) and nothing reported",
        after != before
    );
}

/// M1 and C3: a TCP connection to loopback and a pathname unix socket (tmux, ssh-agent).
#[tokio::test]
async fn probe_m1_c3_network_and_unix_socket() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let sockdir = tempfile::tempdir().expect("sockdir");
    let sock = sockdir.path().join("agent.sock");
    let _unix = std::os::unix::net::UnixListener::bind(&sock).expect("unix");
    let probe = format!(
        "python3 -c \"import socket\nfor fam, addr in [(socket.AF_INET, ('127.0.0.1', {port})), (socket.AF_UNIX, '{}')]:\n try:\n  s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(2); s.connect(addr); print('connected', int(fam))\n except OSError as e:\n  print('refused', int(fam), e)\"",
        sock.display()
    );
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_cmd(&probe, dir.path()).await;
    assert!(
        o.log.contains("refused") || o.log.contains("connected"),
        "ran: {}",
        o.log
    );
    assert!(
        !o.log.contains("connected 2"),
        "M1: the command connected to a loopback TCP port"
    );
    assert!(
        !o.log.contains("connected 1"),
        "C3: the command connected to a pathname unix socket"
    );
}

/// M9: `run` kills a process of the user that is not its own.
#[tokio::test]
async fn probe_m9_signal_a_bystander() {
    let mut bystander = std::process::Command::new("sleep")
        .arg("61")
        .spawn()
        .expect("sleep");
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_cmd(
        &format!("kill -9 {}; echo sent", bystander.id()),
        dir.path(),
    )
    .await;
    let alive = bystander.try_wait().expect("try_wait").is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert!(o.log.contains("sent"), "ran");
    assert!(alive, "M9: the command killed an unrelated process");
}

/// L6: `/dev/shm` is writable and persists.
#[tokio::test]
async fn probe_l6_dev_shm() {
    let name = format!("/dev/shm/handoff-probe-{}", std::process::id());
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_cmd(&format!("echo x > {name}; echo tried"), dir.path()).await;
    let escaped = Path::new(&name).exists();
    let _ = std::fs::remove_file(&name);
    assert!(o.log.contains("tried"), "ran");
    assert!(!escaped, "L6: the command wrote {name}");
}

/// M5: `read_file` on a FIFO the command made.
#[tokio::test]
async fn probe_m5_read_file_on_a_fifo() {
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_with(
        None,
        calls(vec![
            ("run", json!({"command": "mkfifo pipe.txt"})),
            ("read_file", json!({"path": "pipe.txt"})),
        ]),
        dir.path(),
        Duration::from_secs(25),
        |_| {},
    )
    .await;
    let o = o.expect("M5: exec hung on read_file of a FIFO (killed after 25 s)");
    assert!(matches!(o.code, Some(0 | 1)), "{:?} {}", o.code, o.stderr);
}

/// L1: a new file from `write_file` gets 0666 & ~umask (the test runs with umask 022).
#[tokio::test]
async fn probe_l1_new_file_mode() {
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_with(
        None,
        calls(vec![(
            "write_file",
            json!({"path": "new_module.py", "content": "x = 1\n"}),
        )]),
        dir.path(),
        Duration::from_secs(60),
        |_| {},
    )
    .await
    .expect("finished");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(dir.path().join("new_module.py"))
        .unwrap_or_else(|e| panic!("no file: {e} {}", o.stderr))
        .permissions()
        .mode()
        & 0o777;
    // SAFETY: umask(2) read and restored at once.
    let umask = unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m
    };
    assert_eq!(mode, 0o666 & !umask, "L1: new file mode {mode:o}");
}

/// H4: the file tools race a directory swapped with a symlink out of the repository
/// (the test process swaps, as the review's setsid'd helper did).
#[tokio::test]
async fn probe_h4_swapped_symlink_race() {
    let dir = repo(&[("notes.txt", "hi\n")]);
    let outside = tempfile::tempdir().expect("outside");
    for i in 0..40 {
        std::fs::write(
            outside.path().join(format!("secret_{i}.txt")),
            "SECRET-OUTSIDE\n",
        )
        .expect("secret");
    }
    std::fs::create_dir(dir.path().join("d")).expect("d");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("x")).expect("x");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let d =
            std::ffi::CString::new(dir.path().join("d").as_os_str().as_encoded_bytes()).expect("d");
        let x =
            std::ffi::CString::new(dir.path().join("x").as_os_str().as_encoded_bytes()).expect("x");
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: renameat2 with two NUL-terminated paths.
                unsafe {
                    libc::renameat2(
                        libc::AT_FDCWD,
                        d.as_ptr(),
                        libc::AT_FDCWD,
                        x.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    );
                }
                swaps += 1;
            }
            swaps
        })
    };
    let mut script = Vec::new();
    for i in 0..40 {
        script.push((
            "write_file",
            json!({"path": format!("d/race_{i}.txt"), "content": format!("race {i}\n")}),
        ));
        script.push(("read_file", json!({"path": format!("d/secret_{i}.txt")})));
    }
    let o = exec_with(
        None,
        calls(script),
        dir.path(),
        Duration::from_secs(120),
        |_| {},
    )
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().expect("swapper");
    let o = o.expect("finished");
    let written_outside = std::fs::read_dir(outside.path())
        .expect("outside")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("race_"))
        .count();
    let reads = o.log.matches("SECRET-OUTSIDE").count();
    let tool_calls = o.log.matches("\"tool_called\"").count();
    eprintln!(
        "swaps {swaps}, tool calls {tool_calls}, written outside {written_outside}, secret reads {reads}"
    );
    assert!(
        tool_calls >= 60,
        "the session made the calls: {tool_calls} {}",
        o.stderr
    );
    assert_eq!(
        written_outside, 0,
        "H4: write_file wrote {written_outside} files outside"
    );
    assert_eq!(
        reads, 0,
        "H4: read_file returned the outside secret {reads} times"
    );
}

/// M4: the junior's server answers 500 with a body that never ends; the session must end
/// (after retries, with a fault) rather than read the body until memory runs out.
#[tokio::test]
async fn probe_m4_endless_error_body() {
    use std::io::Write as _;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            listener.set_nonblocking(true).expect("nonblocking");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok((mut s, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let _ = s.set_nonblocking(false);
                    let mut req = [0u8; 65536];
                    let _ = std::io::Read::read(&mut s, &mut req);
                    let _ = s.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n",
                    );
                    let chunk = format!("{:x}\r\n{}\r\n", 65536, "e".repeat(65536));
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        if s.write_all(chunk.as_bytes()).is_err() {
                            break;
                        }
                    }
                });
            }
        })
    };
    let dir = repo(&[("notes.txt", "hi\n")]);
    let o = exec_with(
        Some(format!("http://{addr}/v1")),
        Script::new(vec![]),
        dir.path(),
        Duration::from_secs(60),
        |c| {
            c.junior.max_retries = 1;
            c.junior.idle_timeout_s = 30.0;
            c.policy.shadow = false;
        },
    )
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = server.join();
    let o = o.expect("M4: exec still reading the endless error body after 60 s");
    assert!(
        matches!(o.code, Some(0..=4)),
        "M4: exec did not end normally: {:?} {}",
        o.code,
        o.stderr.lines().last().unwrap_or("")
    );
}
