//! Issue 32's escapes through the real binary: a `handoff exec` session whose scripted
//! junior makes one hostile `run` call, sandbox on, default config. As root (how CI runs)
//! and, where the sandbox differs for a normal user (a user namespace instead of direct
//! namespaces), again as `nobody`.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use handoff::demo::server::Script;

use crate::agent::support::{config, one_command, repo, servers, write_config};

/// The unprivileged user the `as_user` cases run as.
const NOBODY: u32 = 65534;

pub(super) struct Ended {
    pub(super) code: Option<i32>,
    /// The end-of-session summary `exec` prints.
    pub(super) stdout: String,
    pub(super) log: String,
    /// What the `run` calls printed (the log also holds the command's own text).
    pub(super) output: String,
}

/// The outputs of the session's `run` calls, one after the other.
fn run_outputs(log: &str) -> String {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool_resulted" && e["name"] == "run")
        .filter_map(|e| e["output"].as_str().map(str::to_string))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the process runs as root (so the `nobody` cases can be set up).
pub(super) fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether the kernel lets this process make namespaces for commands; the properties
/// below rest on them, so where it cannot the case is skipped with the reason.
fn namespaces(case: &str) -> bool {
    let plan = handoff::agent::sandbox::namespace::plan();
    if !(plan.pid && plan.world) {
        eprintln!("skipped {case}: this kernel gives no PID namespace or read-only view here");
        return false;
    }
    true
}

pub(super) fn give_to_nobody(path: &Path) {
    let ok = std::process::Command::new("chown")
        .arg("-R")
        .arg(format!("{NOBODY}:{NOBODY}"))
        .arg(path)
        .status()
        .expect("chown")
        .success();
    assert!(ok, "chown {}", path.display());
}

/// `handoff exec` in `dir` whose junior runs `command` once; as `user` when given (the
/// repository, config and log are handed to it). `started` sees handoff's pid.
async fn exec(command: &str, dir: &Path, user: Option<u32>, started: impl FnOnce(u32)) -> Ended {
    exec_with(command, dir, user, true, started).await
}

/// Refuses `unshare(2)` to this process and its children with EPERM, as a kernel or
/// container without namespaces would (between fork and exec: two prctl calls).
fn refuse_unshare(cmd: &mut std::process::Command) {
    const LD_NR: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let filter = [
        insn(LD_NR, 0, 0, 0),
        insn(JEQ, 0, 1, libc::SYS_unshare as u32),
        insn(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        insn(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: two prctl calls on a filter owned by the closure, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// As [`exec`]; with `namespaces` false handoff runs where it can make none.
async fn exec_with(
    command: &str,
    dir: &Path,
    user: Option<u32>,
    namespaces: bool,
    started: impl FnOnce(u32),
) -> Ended {
    exec_configured(command, dir, user, namespaces, |_| {}, started).await
}

/// As [`exec_with`], with the test's config changed by `tweak` first.
pub(super) async fn exec_configured(
    command: &str,
    dir: &Path,
    user: Option<u32>,
    namespaces: bool,
    tweak: impl FnOnce(&mut handoff::config::Config),
    started: impl FnOnce(u32),
) -> Ended {
    let (j, s) = servers(one_command(command), Script::new(vec![])).await;
    let work = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(&j, &s);
    tweak(&mut cfg);
    let cfg_path = write_config(work.path(), &cfg);
    let log = work.path().join("s.jsonl");
    let bin = match user {
        Some(_) => super::binary_for_others(),
        None => std::path::PathBuf::from(env!("CARGO_BIN_EXE_handoff")),
    };
    let mut cmd = super::exec_command_of(&bin, dir, &cfg_path, &log, "look around");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = user {
        give_to_nobody(work.path());
        give_to_nobody(dir);
        cmd.uid(uid).gid(uid).env("HOME", work.path());
    }
    if !namespaces {
        refuse_unshare(&mut cmd);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    let child = cmd.spawn().expect("spawn handoff");
    started(child.id().unwrap_or(0));
    let out = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output())
        .await
        .expect("handoff ended")
        .expect("handoff output");
    let log = std::fs::read_to_string(&log)
        .unwrap_or_else(|_| panic!("no log; stderr: {}", String::from_utf8_lossy(&out.stderr)));
    Ended {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        output: run_outputs(&log),
        log,
    }
}

pub(super) fn users() -> Vec<Option<u32>> {
    if root() {
        vec![None, Some(NOBODY)]
    } else {
        vec![None]
    }
}

pub(super) fn who(user: Option<u32>) -> &'static str {
    if user.is_some() {
        "nobody"
    } else {
        "this user"
    }
}

pub(super) fn python() -> bool {
    crate::agent::support::has_python()
}

/// Attacks 1, 2 and 10: as root a command kept every capability, made a block device node
/// in the repository, renamed the host, set the immutable flag, raised its own priority
/// and opened `.git` by file handle.
#[tokio::test]
async fn a_root_command_has_no_capabilities_devices_or_file_handles() {
    if !root() || !namespaces("capabilities") {
        eprintln!("skipped: the capability case needs root");
        return;
    }
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut command = String::from(CAPABILITY_PROBE);
    command.push_str(
        "mknod blk b 7 0 && echo MKNOD-BLOCK-MADE; mknod chr c 1 3 && echo MKNOD-CHAR-MADE; \
         mkfifo fifo && echo FIFO-MADE; hostname handoff-hostile && echo HOSTNAME-SET; \
         chattr +i notes.txt && echo CHATTR-SET; renice -n -5 -p $$ && echo RENICE-RAISED; ",
    );
    command.push_str(&file_handle_probe());
    let dir = repo(&[("notes.txt", "hi\n")]);
    let s = exec(&command, dir.path(), None, |_| {}).await;
    assert!(matches!(s.code, Some(0 | 1)), "{}", s.log);
    assert_no_capabilities(&s.output, "root");
    assert!(
        s.output.contains("FIFO-MADE"),
        "a FIFO is no device: {}",
        s.output
    );
    if s.output.contains("CHATTR-SET") {
        // Put it back, so the temporary repository can be removed.
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(dir.path().join("notes.txt"))
            .status();
    }
    assert_nothing_made(
        &s.output,
        dir.path(),
        &[
            "MKNOD-BLOCK-MADE",
            "MKNOD-CHAR-MADE",
            "HOSTNAME-SET",
            "CHATTR-SET",
            "RENICE-RAISED",
        ],
        "root",
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default(),
        hostname
    );
    assert_file_handles_refused(&s.output, "root");
}

/// A command that prints the capability sets and `no_new_privs` of its own process.
pub(super) const CAPABILITY_PROBE: &str =
    "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status; ";

/// Every capability set empty and `no_new_privs` set, in [`CAPABILITY_PROBE`]'s output.
pub(super) fn assert_no_capabilities(output: &str, who: &str) {
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            output.contains(&format!("{set}:\t0000000000000000")),
            "{who}: {set} not empty: {output}"
        );
    }
    assert!(
        output.contains("NoNewPrivs:\t1"),
        "{who}: no_new_privs: {output}"
    );
}

/// A command that tries `name_to_handle_at(".git")` and `open_by_handle_at` and prints
/// each result with its errno; empty without python3.
pub(super) fn file_handle_probe() -> String {
    if !python() {
        return String::new();
    }
    "python3 -c \"import ctypes,os\nl=ctypes.CDLL(None,use_errno=True)\n\
     b=ctypes.create_string_buffer((128).to_bytes(4,'little'),136)\nm=ctypes.c_int()\n\
     r=l.name_to_handle_at(-100,b'.git',b,ctypes.byref(m),0)\n\
     print('NAME-TO-HANDLE',r,ctypes.get_errno())\n\
     r=l.open_by_handle_at(os.open('.',os.O_RDONLY),b,0)\n\
     print('OPEN-BY-HANDLE',r,ctypes.get_errno())\""
        .to_string()
}

/// Both file-handle calls of [`file_handle_probe`] refused with EPERM (when it ran).
/// None of the probe's success markers in `output`, and no device node left in `dir`.
pub(super) fn assert_nothing_made(
    output: &str,
    dir: &std::path::Path,
    markers: &[&str],
    who: &str,
) {
    for made in markers {
        assert!(!output.contains(made), "{who}: {made}: {output}");
    }
    assert!(
        !dir.join("blk").exists() && !dir.join("chr").exists(),
        "{who}: a device node was made"
    );
}

pub(super) fn assert_file_handles_refused(output: &str, who: &str) {
    if python() {
        assert!(
            output.contains("NAME-TO-HANDLE -1 1") && output.contains("OPEN-BY-HANDLE -1 1"),
            "{who}: file handles are refused (EPERM): {output}"
        );
    }
}

/// Attack 3: `setsid` chains that hop pids (each link starts the next and exits, with a
/// cleared environment) survived the call, the session and handoff.
#[tokio::test]
async fn nothing_a_command_starts_outlives_it_whatever_it_does() {
    if !namespaces("survivors") {
        return;
    }
    for user in users() {
        let dir = repo(&[(
            "hop.sh",
            "PATH=/usr/bin:/bin\necho x >> hops.txt\nsleep 0.2\n\
             /usr/bin/env -i /usr/bin/setsid /bin/sh ./hop.sh &\n",
        )]);
        let command = "for i in 1 2 3 4; do /usr/bin/env -i /usr/bin/setsid /bin/sh ./hop.sh & done; \
                       (setsid sh -c 'while :; do echo y >> daemon.txt; sleep 0.2; done' &); \
                       sleep 1; echo hopping";
        let s = exec(command, dir.path(), user, |_| {}).await;
        assert!(
            s.output.contains("hopping"),
            "{}: the command ran",
            who(user)
        );
        let size = |name: &str| {
            std::fs::metadata(dir.path().join(name))
                .map(|m| m.len())
                .unwrap_or(0)
        };
        let before = (size("hops.txt"), size("daemon.txt"));
        assert!(
            before.0 > 0 && before.1 > 0,
            "{}: the chains started",
            who(user)
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            (size("hops.txt"), size("daemon.txt")),
            before,
            "{}: something the command started still writes after handoff exited",
            who(user)
        );
    }
}

/// Attack 9: `prlimit --pid` of handoff killed it mid-call; `renice` and signals too. The
/// command is told handoff's pid (as an attacker would find it without a PID namespace).
#[tokio::test]
async fn a_command_cannot_change_handoffs_limits_priority_or_signal_it() {
    for user in users() {
        let dir = repo(&[("notes.txt", "hi\n")]);
        // The busy output makes handoff spend CPU time; the verdicts come last, so the
        // output's tail holds them.
        let command = "while [ ! -s pid.txt ]; do sleep 0.05; done; p=$(cat pid.txt); \
                       prlimit --pid \"$p\" --cpu=1:1 2>&1; a=$?; \
                       renice -n 19 -p \"$p\" 2>&1; b=$?; \
                       kill -TERM \"$p\" 2>&1; c=$?; \
                       i=0; while [ $i -lt 20000 ]; do echo busy $i; i=$((i+1)); done; \
                       [ $a -ne 0 ] && echo PRLIMIT-REFUSED; [ $b -ne 0 ] && echo RENICE-REFUSED; \
                       [ $c -ne 0 ] && echo KILL-REFUSED; true";
        let pid_file = dir.path().join("pid.txt");
        let tmp = dir.path().join("pid.tmp");
        let s = exec(command, dir.path(), user, |pid| {
            std::fs::write(&tmp, pid.to_string()).expect("pid");
            std::fs::rename(&tmp, &pid_file).expect("pid");
        })
        .await;
        let who = who(user);
        assert!(
            matches!(s.code, Some(0 | 1)),
            "{who}: handoff ended by {:?}: {}",
            s.code,
            s.log
        );
        assert!(s.log.contains("session_ended"), "{who}: {}", s.log);
        for refused in ["PRLIMIT-REFUSED", "RENICE-REFUSED", "KILL-REFUSED"] {
            assert!(
                s.output.contains(refused),
                "{who}: not {refused}: {}",
                s.output
            );
        }
        if python() {
            // Even its own child, which the same user may trace anywhere else.
            let dir = repo(&[("notes.txt", "hi\n")]);
            let trace = "python3 -c \"import ctypes,subprocess\nl=ctypes.CDLL(None,use_errno=True)\n\
                         c=subprocess.Popen(['sleep','5'])\nr=l.ptrace(16,c.pid,0,0)\n\
                         print('PTRACE-CHILD',r,ctypes.get_errno())\nc.kill()\"";
            let s = exec(trace, dir.path(), user, |_| {}).await;
            assert!(
                s.output.contains("PTRACE-CHILD -1 1"),
                "{who}: ptrace is refused (EPERM): {}",
                s.output
            );
        }
    }
}

/// Attack 4: `chmod 4777`, `chown`, `touch -d` and extended attributes landed on a file
/// outside every writable root. Also Deliver 1's mounts: the work tree `nosuid,nodev`, the
/// world above it read-only and `nosuid`.
#[tokio::test]
async fn the_world_outside_is_read_only_metadata_included() {
    if !namespaces("read-only world") {
        return;
    }
    for user in users() {
        let outside = tempfile::tempdir().expect("outside");
        let target = outside.path().join("victim");
        std::fs::write(&target, "x").expect("victim");
        if user.is_some() {
            give_to_nobody(outside.path());
        }
        let before = std::fs::metadata(&target).expect("meta");
        let t = target.display();
        let mut command = format!(
            "chmod 4777 '{t}' && echo CHMOD-DONE; touch -d 2001-01-01 '{t}' && echo TOUCH-DONE; \
             chown {NOBODY} '{t}' && echo CHOWN-DONE; chmod 0 '{}' && echo CHMOD-DIR-DONE; \
             awk -v d=\"$PWD\" '$5 == d {{ print \"TREE-OPTS\", $6 }} $5 == \"/\" {{ print \"ROOT-OPTS\", $6 }}' /proc/self/mountinfo; ",
            outside.path().display()
        );
        if user.is_none() && python() {
            command.push_str(&format!(
                "python3 -c \"import os\ntry:\n os.setxattr('{t}','user.x',b'1'); print('XATTR-DONE')\n\
                 except OSError as e: print('xattr', e)\""
            ));
        }
        let dir = repo(&[("notes.txt", "hi\n")]);
        let s = exec(&command, dir.path(), user, |_| {}).await;
        let who = who(user);
        for done in [
            "CHMOD-DONE",
            "TOUCH-DONE",
            "CHOWN-DONE",
            "CHMOD-DIR-DONE",
            "XATTR-DONE",
        ] {
            assert!(!s.output.contains(done), "{who}: {done}: {}", s.output);
        }
        // The topmost mount at each point is the one in force (the last line for it).
        let opts = |what: &str| {
            s.output
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix(what))
                .map(|o| o.trim().split(',').map(str::to_string).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let (tree, root) = (opts("TREE-OPTS"), opts("ROOT-OPTS"));
        for (flag, held) in [
            ("nosuid", tree.iter().any(|o| o == "nosuid")),
            ("nodev", tree.iter().any(|o| o == "nodev")),
            ("rw", tree.iter().any(|o| o == "rw")),
        ] {
            assert!(
                held,
                "{who}: the work tree is not {flag}: {tree:?}: {}",
                s.output
            );
        }
        for (flag, held) in [
            ("ro", root.iter().any(|o| o == "ro")),
            ("nosuid", root.iter().any(|o| o == "nosuid")),
        ] {
            assert!(held, "{who}: / is not {flag}: {root:?}");
        }
        let after = std::fs::metadata(&target).expect("meta");
        assert_eq!(after.mode(), before.mode(), "{who}: mode");
        assert_eq!(after.uid(), before.uid(), "{who}: owner");
        assert_eq!(after.mtime(), before.mtime(), "{who}: times");
        let dir_mode = std::fs::metadata(outside.path()).expect("meta").mode();
        assert_ne!(dir_mode & 0o777, 0, "{who}: the outside directory's mode");
    }
}

/// Attack 5: a datagram `socketpair` end `sendto()` a path, or a datagram socket
/// `connect()`ed to it, delivered a file to a listener outside the repository; and an
/// abstract unix socket outside, as root and as `nobody`.
#[tokio::test]
async fn no_datagram_reaches_a_socket_outside() {
    if !python() {
        eprintln!("skipped: needs python3");
        return;
    }
    for user in users() {
        let outside = tempfile::tempdir().expect("outside");
        let path = outside.path().join("listener.sock");
        let listener = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
        if user.is_some() {
            give_to_nobody(outside.path());
        }
        listener.set_nonblocking(true).expect("nonblocking");
        // An abstract stream socket outside too (Deliver 3: no abstract unix sockets).
        use std::os::linux::net::SocketAddrExt as _;
        let name = format!("handoff-hostile-{}", std::process::id());
        let abstract_listener = std::os::unix::net::UnixListener::bind_addr(
            &std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract"),
        )
        .expect("bind abstract");
        abstract_listener
            .set_nonblocking(true)
            .expect("nonblocking");
        let p = path.display();
        let command = format!(
            "python3 -c \"import socket\nfor how in ('pair', 'connect', 'abstract'):\n try:\n  \
             s = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0] if how == 'pair' else socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if how == 'abstract' else socket.SOCK_DGRAM)\n  \
             s.sendto(b'LEAKED', '{p}') if how == 'pair' else (s.connect('\\0{name}'), s.send(b'LEAKED')) if how == 'abstract' else (s.connect('{p}'), s.send(b'LEAKED'))\n  \
             print(how, 'SENT')\n except OSError as e:\n  print(how, 'refused', e)\""
        );
        let dir = repo(&[("notes.txt", "hi\n")]);
        let s = exec(&command, dir.path(), user, |_| {}).await;
        let who = who(user);
        assert!(
            s.output.contains("refused"),
            "{who}: the command ran: {}",
            s.output
        );
        let mut buf = [0u8; 64];
        assert!(
            listener.recv(&mut buf).is_err(),
            "{who}: a datagram reached the listener outside"
        );
        assert!(!s.output.contains(" SENT"), "{who}: {}", s.log);
        assert!(
            s.output.contains("abstract refused"),
            "{who}: the abstract case ran: {}",
            s.output
        );
        assert!(
            abstract_listener.accept().is_err(),
            "{who}: a connection reached the abstract socket outside"
        );
    }
}

/// Attack 8: as root a command read the keys in every process's environment, not only
/// handoff's.
#[tokio::test]
async fn a_command_reads_no_other_process_environment() {
    if !namespaces("environments") {
        return;
    }
    const SECRET: &str = "sk-neighbour-SECRET-77d1";
    // As nobody the neighbour is nobody's own process, whose environment the same user
    // could read anywhere else.
    for user in users() {
        let mut neighbour = std::process::Command::new("sleep");
        neighbour
            .arg("60")
            .env("HANDOFF_TEST_NEIGHBOUR_KEY", SECRET);
        if let Some(uid) = user {
            neighbour.uid(uid).gid(uid);
        }
        let mut neighbour = neighbour.spawn().expect("neighbour");
        let dir = repo(&[("notes.txt", "hi\n")]);
        let s = exec(
            "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a NEIGHBOUR; ls /proc | grep -c '^[0-9]'; echo listed",
            dir.path(),
            user,
            |_| {},
        )
        .await;
        let _ = neighbour.kill();
        let _ = neighbour.wait();
        let who = who(user);
        assert!(
            s.output.contains("listed"),
            "{who}: the command ran: {}",
            s.output
        );
        assert!(
            !s.log.contains(SECRET),
            "{who}: a neighbour's key reached the log"
        );
    }
}

/// Attack 6 and the index flags: a nested `src/.git` and a submodule-style gitfile, each
/// reaching a `core.fsmonitor` payload, ran on the user's next `git status`; a
/// `skip-worktree` flag hid an edit from `git status` and `git diff`.
#[tokio::test]
async fn planted_git_metadata_is_removed_before_the_users_git_sees_it() {
    for user in users() {
        let outside = tempfile::tempdir().expect("outside");
        let marker = outside.path().join("PWNED");
        if user.is_some() {
            give_to_nobody(outside.path());
        }
        let payload = format!("touch {}", marker.display());
        let command = format!(
            "mkdir -p src/.git/objects src/.git/refs lib mod && \
             printf 'ref: refs/heads/main\\n' > src/.git/HEAD && \
             printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"{payload}\"\\n' > src/.git/config && \
             cp -r src/.git mod/copy && printf 'gitdir: ../mod/copy\\n' > lib/.git; \
             echo edited >> notes.txt; git update-index --skip-worktree notes.txt 2>&1; \
             echo edited >> other.txt; git update-index --assume-unchanged other.txt 2>&1; echo planted"
        );
        let dir = repo(&[
            ("notes.txt", "hi\n"),
            ("other.txt", "o\n"),
            ("src/a.txt", "a\n"),
            ("lib/b.txt", "b\n"),
        ]);
        let s = exec(&command, dir.path(), user, |_| {}).await;
        let who = who(user);
        assert!(s.output.contains("planted"), "{who}: the command ran");
        assert!(
            s.output
                .contains("src/.git was planted and has been removed")
                && s.output
                    .contains("lib/.git was planted and has been removed"),
            "{who}: {}",
            s.output
        );
        assert!(!dir.path().join("src/.git").exists(), "{who}: src/.git");
        assert!(!dir.path().join("lib/.git").exists(), "{who}: lib/.git");
        for at in [
            dir.path().to_path_buf(),
            dir.path().join("src"),
            dir.path().join("lib"),
        ] {
            let status = std::process::Command::new("git")
                .args(["-c", "safe.directory=*", "-C"])
                .arg(&at)
                .args(["status", "--porcelain"])
                .output()
                .expect("git status");
            assert!(
                status.status.success(),
                "{who}: git status in {}",
                at.display()
            );
        }
        assert!(!marker.exists(), "{who}: the planted fsmonitor ran");
        // Undone, and the session's exit code and summary say so (exit 5, `repaired`).
        assert_eq!(s.code, Some(5), "{who}: {}", s.stdout);
        assert!(
            s.stdout
                .contains("repaired     1 step(s) changed git metadata"),
            "{who}: {}",
            s.stdout
        );
        assert!(
            s.log.contains("\"git\":[") && s.log.contains("was planted and has been removed"),
            "{who}: the protected_touched event names what was removed: {}",
            s.log
        );
        assert_nothing_hidden(dir.path(), who);
    }
}

/// Where no namespace can be made (`.git` stays writable), a hook and a config line that a
/// command writes into `.git` are undone after it, not only reported, and the summary
/// counts the step among those that tried to change protected files.
#[tokio::test]
async fn without_namespaces_a_hook_written_into_git_is_undone() {
    for user in users() {
        let dir = repo(&[("notes.txt", "hi\n")]);
        let command = "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit && \
                       chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch PWNED' \
                       && echo wrote-hooks";
        let s = exec_with(command, dir.path(), user, false, |_| {}).await;
        let who = who(user);
        assert!(
            s.log.contains("no mount namespace here"),
            "{who}: no namespaces: {}",
            s.log
        );
        assert!(
            s.output.contains("wrote-hooks"),
            "{who}: the writes landed: {}",
            s.output
        );
        assert!(
            s.output.contains("undone: ") && s.output.contains(".git/hooks/pre-commit"),
            "{who}: {}",
            s.output
        );
        assert!(
            !dir.path().join(".git/hooks/pre-commit").exists(),
            "{who}: hook"
        );
        let config = std::fs::read_to_string(dir.path().join(".git/config")).expect("config");
        assert!(!config.contains("fsmonitor"), "{who}: {config}");
        assert!(s.log.contains("\"protected_touched\""), "{who}: {}", s.log);
        assert!(
            s.stdout
                .contains("tried to change protected files (undone)"),
            "{who}: {}",
            s.stdout
        );
        // Issue 32, Deliver 4: the session's exit code and summary say so.
        assert_eq!(s.code, Some(5), "{who}: exit: {}", s.stdout);
        assert!(
            s.stdout
                .contains("repaired     1 step(s) changed git metadata"),
            "{who}: {}",
            s.stdout
        );
    }
}

/// Where `.git` is mounted read-only (as root directly, as `nobody` in a user namespace),
/// the same hook write is refused: nothing lands, nothing needs undoing, and the session
/// exits by its outcome (no check: 0), not 5.
#[tokio::test]
async fn with_namespaces_a_hook_write_is_refused_and_the_exit_stays_the_outcomes() {
    if !namespaces("read-only .git") {
        return;
    }
    for user in users() {
        let dir = repo(&[("notes.txt", "hi\n")]);
        let command = "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit \
                       && echo HOOK-WRITTEN; git config core.fsmonitor 'touch PWNED' \
                       && echo CONFIG-WRITTEN; true";
        let s = exec(command, dir.path(), user, |_| {}).await;
        let who = who(user);
        assert!(
            !s.output.contains("HOOK-WRITTEN") && !s.output.contains("CONFIG-WRITTEN"),
            "{who}: the writes landed: {}",
            s.output
        );
        assert!(
            !dir.path().join(".git/hooks/pre-commit").exists(),
            "{who}: hook"
        );
        assert_eq!(s.code, Some(0), "{who}: {}", s.stdout);
        assert!(!s.stdout.contains("repaired"), "{who}: {}", s.stdout);
    }
}

/// `handoff doctor` says which layers this machine enforces, and as which user: here the
/// namespaces are made directly as root and inside a user namespace for `nobody`.
#[tokio::test]
async fn doctor_names_each_sandbox_layer() {
    let (j, s) = servers(Script::new(vec![]), Script::new(vec![])).await;
    let work = tempfile::tempdir().expect("tempdir");
    let path = write_config(work.path(), &config(&j, &s));
    let (text, line) = crate::agent::support::doctor_line(&path, "sandbox: namespaces:").await;
    for layer in [
        "sandbox: landlock:",
        "sandbox: seccomp:",
        "sandbox: capabilities:",
        "sandbox: caps per command:",
        "sandbox: bubblewrap:",
    ] {
        assert!(text.contains(layer), "{layer}: {text}");
    }
    let plan = handoff::agent::sandbox::namespace::plan();
    if plan.pid && plan.world {
        assert!(
            line.contains("PID with its own /proc") && line.contains("read-only world"),
            "{line}"
        );
    } else {
        eprintln!("this kernel gives no PID namespace or read-only view: {line}");
        assert!(!line.is_empty(), "{text}");
    }
}

/// `notes.txt` and `other.txt` in `dir`'s index carry neither `skip-worktree` (`S`) nor
/// `assume-unchanged` (`h`), as `git ls-files -v` shows them.
pub(super) fn assert_nothing_hidden(dir: &Path, who: &str) {
    let listed = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "-C"])
        .arg(dir)
        .args(["ls-files", "-v", "notes.txt", "other.txt"])
        .output()
        .expect("git ls-files");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.lines().count() == 2 && listed.lines().all(|l| l.starts_with("H ")),
        "{who}: a file is hidden from git status (S: skip-worktree, h: assume-unchanged): {listed}"
    );
}
