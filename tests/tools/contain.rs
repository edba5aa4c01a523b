//! What a `run` command may no longer do (the review's escapes, with real processes), and
//! the file tools against a command that races them.

use std::path::Path;
use std::time::Duration;

use handoff::agent::sandbox::{self, SandboxStatus};
use serde_json::json;

use super::{call, read, workspace_with, write};

fn landlock() -> bool {
    matches!(sandbox::status(), SandboxStatus::Available { .. })
}

fn git_init(root: &Path) {
    let repo = git2::Repository::init(root).expect("git init");
    drop(repo);
    write(root, "notes.txt", "hi\n");
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for this purpose (it runs nothing); so is a missing process.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next().map(str::to_string))
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

#[tokio::test]
async fn git_stays_read_only_or_its_change_is_reported() {
    let repo = tempfile::tempdir().expect("repo");
    git_init(repo.path());
    let config_before = read(repo.path(), ".git/config");
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    let out = call(
        &ws,
        "run",
        json!({"command": "git config core.fsmonitor 'touch /tmp/pwned'; mkdir -p .git/hooks; printf '#!/bin/sh\\n' > .git/hooks/pre-commit; rm -rf .git; echo tried"}),
    )
    .await;
    if sandbox::namespace::available() {
        assert_eq!(read(repo.path(), ".git/config"), config_before, "{out:?}");
        assert!(!repo.path().join(".git/hooks/pre-commit").exists());
        assert!(
            repo.path().join(".git/HEAD").exists(),
            "rm -rf .git went through"
        );
    } else {
        assert!(!out.ok, "a changed .git is a failed call: {out:?}");
        assert!(out.output.contains(".git"), "{}", out.output);
    }
    // Writes to the work tree itself still work.
    let out = call(&ws, "run", json!({"command": "echo ok > inside.txt"})).await;
    assert!(out.ok, "{out:?}");
    assert_eq!(read(repo.path(), "inside.txt"), "ok\n");
}

#[tokio::test]
async fn a_git_change_is_reported_even_without_a_sandbox() {
    let repo = tempfile::tempdir().expect("repo");
    git_init(repo.path());
    let ws = workspace_with(repo.path(), |c| c.sandbox = false);
    let out = call(
        &ws,
        "run",
        json!({"command": "git config alias.st '!touch /tmp/x'"}),
    )
    .await;
    assert!(!out.ok, "{out:?}");
    assert!(
        out.output.contains(".git/config was changed"),
        "{}",
        out.output
    );
}

#[tokio::test]
async fn no_network_and_no_local_sockets_by_default() {
    let repo = tempfile::tempdir().expect("repo");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let sockdir = tempfile::tempdir().expect("sockdir");
    let sock = sockdir.path().join("agent.sock");
    let _unix = std::os::unix::net::UnixListener::bind(&sock).expect("unix listen");
    let probe = format!(
        "python3 -c \"import socket\nfor fam, addr in [(socket.AF_INET, ('127.0.0.1', {port})), (socket.AF_UNIX, '{}'), (socket.AF_UNIX, '\\0handoff-test-abstract')]:\n try:\n  s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(2); s.connect(addr); print('connected', fam)\n except OSError as e:\n  print('refused', fam, e)\"",
        sock.display()
    );
    use std::os::linux::net::SocketAddrExt as _;
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(
        &std::os::unix::net::SocketAddr::from_abstract_name(b"handoff-test-abstract")
            .expect("abstract"),
    )
    .ok();
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    let out = call(&ws, "run", json!({"command": probe})).await;
    if out.output.contains("No such file") || out.output.contains("not found") {
        eprintln!("skipped: no python3");
        return;
    }
    assert!(!out.output.contains("connected"), "{}", out.output);
    assert_eq!(out.output.matches("refused").count(), 3, "{}", out.output);
    // With the network on, the same command connects.
    let ws = workspace_with(repo.path(), |c| {
        c.sandbox = true;
        c.network = true;
    });
    let out = call(&ws, "run", json!({"command": probe})).await;
    assert!(
        out.output.contains(&format!("connected {}", libc::AF_INET)),
        "{}",
        out.output
    );
    drop(abstract_listener);
}

#[tokio::test]
async fn a_command_cannot_signal_handoff_or_other_processes() {
    if !landlock() {
        eprintln!("skipped: no Landlock");
        return;
    }
    let repo = tempfile::tempdir().expect("repo");
    let mut bystander = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    let cmd = format!(
        "kill -0 {} && echo signalled-handoff; kill -9 {} && echo killed-bystander; kill -0 $$ && echo own-ok",
        std::process::id(),
        bystander.id()
    );
    let out = call(&ws, "run", json!({"command": cmd})).await;
    let ok = bystander.try_wait().expect("try_wait").is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert!(ok, "the bystander was killed: {}", out.output);
    assert!(!out.output.contains("signalled-handoff"), "{}", out.output);
    assert!(
        out.output.contains("own-ok"),
        "its own tree is reachable: {}",
        out.output
    );
}

#[tokio::test]
async fn dev_shm_and_terminals_are_not_writable() {
    if !landlock() {
        eprintln!("skipped: no Landlock");
        return;
    }
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    let name = format!("/dev/shm/handoff-test-{}", std::process::id());
    let out = call(
        &ws,
        "run",
        json!({"command": format!("echo x > {name}; echo y > /dev/null && echo null-ok")}),
    )
    .await;
    let escaped = Path::new(&name).exists();
    let _ = std::fs::remove_file(&name);
    assert!(!escaped, "{}", out.output);
    assert!(out.output.contains("null-ok"), "{}", out.output);
}

/// A terminal of the user's (here one the test opens, with keystrokes waiting in it) is
/// neither listed nor readable by a command (issue 50, item 15).
#[tokio::test]
async fn another_terminal_cannot_be_read() {
    if !landlock() {
        eprintln!("skipped: no Landlock");
        return;
    }
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname_r on a descriptor this test owns.
    let (master, path) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let path = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        (fd, path)
    };
    let typed = b"typed-secret-4711\n";
    // SAFETY: a write of a byte buffer to the master this test opened.
    let wrote = unsafe { libc::write(master, typed.as_ptr().cast(), typed.len()) };
    assert_eq!(usize::try_from(wrote).ok(), Some(typed.len()));
    assert!(Path::new(&path).exists(), "{path} exists outside");
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |c| c.sandbox = true);
    let out = call(
        &ws,
        "run",
        json!({"command": format!(
            "ls /dev/pts; timeout 3 head -c 40 {path}; test -e {path} && echo still-there"
        )}),
    )
    .await;
    // SAFETY: closing the descriptor this test opened.
    unsafe { libc::close(master) };
    assert!(!out.output.contains("typed-secret"), "{}", out.output);
    assert!(!out.output.contains("still-there"), "{}", out.output);
}

/// The memory cap counts the command's memory, not handoff's: the PID namespace's outer
/// and init processes are forks of handoff that never exec, and their pages (handoff's,
/// shared) once counted against the cap, so a big handoff stopped a small command ("more
/// than 8192 MiB" for a python one-liner, seen in a loaded full test run).
#[tokio::test]
async fn a_large_handoff_does_not_count_against_a_commands_memory_cap() {
    if !landlock() {
        eprintln!("skipped: no Landlock");
        return;
    }
    // 320 MiB resident in this process (every page written), against a cap of 256 MiB.
    let ballast: Vec<u8> = vec![7u8; 320 << 20];
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |c| {
        c.sandbox = true;
        c.max_memory_mib = 256;
    });
    let out = call(
        &ws,
        "run",
        json!({"command": "sleep 0.5; echo small-and-fine"}),
    )
    .await;
    assert!(
        std::hint::black_box(&ballast)
            .iter()
            .step_by(4096)
            .all(|b| *b == 7)
    );
    assert!(out.output.contains("small-and-fine"), "{}", out.output);
    assert!(!out.output.contains("max_memory_mib"), "{}", out.output);
}

/// Live processes whose command line is `sleep <secs>`.
fn sleepers(secs: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
                && alive(pid)
        })
        .collect()
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_the_call() {
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |c| c.sandbox = false);
    // A setsid'd child and a setpgid child, which leave the process group; and a double
    // fork that also clears its environment, which the walk cannot name in this process
    // (the binary adopts orphans and catches it: tests/security/signals.rs; this test
    // binary starts daemons of its own, tmux, so it does not). The durations only make
    // them findable.
    let cmd = "setsid sleep 6171 & \
               perl -e 'setpgid(0,0); exec \"sleep\", \"6172\"' & \
               env -i sh -c '(setsid sleep 6173 &)'; \
               sleep 1; echo started";
    let out = call(&ws, "run", json!({"command": cmd})).await;
    assert!(out.output.contains("started"), "{}", out.output);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Without adopting orphans (see proctree's docs): the double fork that dropped its
    // marker (6173) escapes the walk.
    for secs in ["6171", "6172"] {
        assert_eq!(
            sleepers(secs),
            Vec::<i32>::new(),
            "`sleep {secs}` outlived its call"
        );
    }
    for pid in sleepers("6173") {
        // SAFETY: kill(2) on a process this test started.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

#[tokio::test]
async fn file_tools_refuse_fifos_instead_of_hanging() {
    let repo = tempfile::tempdir().expect("repo");
    let fifo = repo.path().join("notes.txt");
    crate::agent::support::mkfifo(&fifo);
    let ws = workspace_with(repo.path(), |_| {});
    for (tool, args) in [
        ("read_file", json!({"path": "notes.txt"})),
        ("list_files", json!({"path": "notes.txt"})),
        ("search", json!({"pattern": "x"})),
        (
            "apply_patch",
            json!({"patch": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-a\n+b\n"}),
        ),
    ] {
        let out = tokio::time::timeout(Duration::from_secs(5), call(&ws, tool, args))
            .await
            .unwrap_or_else(|_| panic!("{tool} hung on a FIFO"));
        if tool != "search" {
            assert!(!out.ok, "{tool}: {out:?}");
        }
    }
}

#[tokio::test]
async fn new_files_keep_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |_| {});
    let out = call(
        &ws,
        "write_file",
        json!({"path": "new.py", "content": "x\n"}),
    )
    .await;
    assert!(out.ok, "{out:?}");
    std::fs::write(repo.path().join("reference"), "x").expect("write");
    let mode = |p: &str| {
        std::fs::metadata(repo.path().join(p))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(
        mode("new.py"),
        mode("reference"),
        "as any editor would create it"
    );
}

#[tokio::test]
async fn huge_tool_arguments_are_refused_with_the_limit() {
    let repo = tempfile::tempdir().expect("repo");
    let ws = workspace_with(repo.path(), |c| c.max_argument_bytes = 4096);
    let out = call(
        &ws,
        "write_file",
        json!({"path": "big.txt", "content": "x".repeat(10_000)}),
    )
    .await;
    assert!(!out.ok);
    assert!(
        out.output.contains("agent.max_argument_bytes"),
        "{}",
        out.output
    );
    assert!(!repo.path().join("big.txt").exists());
}

/// The review's race: a command's background child swaps a directory `d` and a symlink
/// `x -> outside` while the model reads and writes `d/...`.
#[tokio::test]
async fn the_file_tools_never_follow_a_swapped_symlink_out() {
    let repo = tempfile::tempdir().expect("repo");
    let outside = tempfile::tempdir().expect("outside");
    write(outside.path(), "secret.txt", "SECRET-OUTSIDE\n");
    write(repo.path(), "d/secret.txt", "inside\n");
    std::os::unix::fs::symlink(outside.path(), repo.path().join("x")).expect("symlink");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let d = std::ffi::CString::new(repo.path().join("d").as_os_str().as_encoded_bytes())
            .expect("cstr");
        let x = std::ffi::CString::new(repo.path().join("x").as_os_str().as_encoded_bytes())
            .expect("cstr");
        std::thread::spawn(move || {
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
            }
        })
    };
    let ws = workspace_with(repo.path(), |_| {});
    let mut escapes = Vec::new();
    for i in 0..200 {
        let name = format!("race_{i}.txt");
        let w = ws.execute_blocking(
            "write_file",
            &json!({"path": format!("d/{name}"), "content": "w\n"}).to_string(),
        );
        if outside.path().join(&name).exists() {
            escapes.push(format!("write {i}: {w:?}"));
        }
        let r = ws.execute_blocking("read_file", &json!({"path": "d/secret.txt"}).to_string());
        if r.output.contains("SECRET-OUTSIDE") {
            escapes.push(format!("read {i}"));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert_eq!(escapes, Vec::<String>::new(), "escapes out of 200 tries");
}
