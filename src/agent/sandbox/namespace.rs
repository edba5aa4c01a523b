//! Private namespaces for a command: a mount namespace with the view of [`super::mounts`]
//! (the world read-only, the writable roots `nosuid,nodev`, `.git` and the protected files
//! read-only), a PID namespace that dies with the command ([`super::nsinit`]) with its own
//! `/proc`, IPC and host name, and with `agent.network = false` an empty network namespace.
//!
//! As root (or with `CAP_SYS_ADMIN`) they are made directly. Otherwise handoff first makes
//! a user namespace in which the user's own uid and gid map to themselves, so files keep
//! their owner as the command sees them (files of other users show as the overflow uid,
//! `nobody`), and gains there the right to make the others; the command still runs as the
//! user, with no capability. Which of these the kernel allows is probed once per process
//! ([`plan`]), from the most to the least complete; what could not be made is reported by
//! the session's note and by `handoff doctor`, and the layers that do not need namespaces
//! (Landlock, seccomp, the change detector of [`crate::agent::gitguard`]) still apply.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::Policy;
use super::mounts::View;

/// Which namespaces this process can give a command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plan {
    /// Any namespace at all (a mount namespace, and a network namespace when wanted).
    pub mount: bool,
    /// Made inside a user namespace (handoff is not privileged).
    pub user: bool,
    /// A PID namespace with its own `/proc`.
    pub pid: bool,
    /// The read-only world with the writable roots bound back.
    pub world: bool,
}

/// The plan, probed once by starting `sh -c :` under each candidate in turn.
pub fn plan() -> Plan {
    static PLAN: OnceLock<Plan> = OnceLock::new();
    *PLAN.get_or_init(probe)
}

/// Whether any namespace can be made here.
pub fn available() -> bool {
    plan().mount
}

#[cfg(target_os = "linux")]
fn probe() -> Plan {
    for user in [false, true] {
        let base = Plan {
            mount: true,
            user,
            pid: false,
            world: false,
        };
        if !works(base) {
            continue;
        }
        for (pid, world) in [(true, true), (true, false), (false, true)] {
            let candidate = Plan { pid, world, ..base };
            if works(candidate) {
                return candidate;
            }
        }
        return base;
    }
    Plan::default()
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Plan {
    Plan::default()
}

/// Whether `sh -c :` starts and exits 0 under `plan`, with the temp dir as writable root.
#[cfg(target_os = "linux")]
fn works(plan: Plan) -> bool {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(":")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let policy = Policy {
        writable: vec![std::env::temp_dir()],
        ..Policy::default()
    };
    register(&mut cmd, plan, &policy);
    cmd.status().is_ok_and(|s| s.success())
}

/// What [`apply`] registered for a command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// `.git` is read-only.
    pub git: bool,
    /// The protected files are read-only.
    pub files: bool,
    /// An empty network namespace.
    pub network: bool,
    /// A PID namespace that dies with the command, with its own `/proc`.
    pub pid: bool,
    /// Everything outside the writable roots is read-only, metadata included.
    pub world: bool,
    /// Inside a user namespace.
    pub user: bool,
}

/// A path to bind-mount read-only, with the flags its remount must keep (a remount that
/// drops a locked nosuid/nodev/noexec is refused).
#[cfg(target_os = "linux")]
fn read_only_target(path: &std::path::Path, want_dir_ok: bool) -> Option<(CString, libc::c_ulong)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() || !(meta.is_file() || (want_dir_ok && meta.is_dir())) {
        return None;
    }
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let kept = mount_flags(&c);
    Some((c, kept))
}

/// A writable root to bind back: it exists and is no symlink (a bind would follow it).
#[cfg(target_os = "linux")]
fn writable_target(path: &std::path::Path) -> Option<CString> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return None;
    }
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// Registers the namespace steps for `cmd` and says what they will apply. A failure in the
/// child fails the spawn: a sandbox that was promised is never silently dropped.
#[cfg(target_os = "linux")]
pub fn apply(cmd: &mut tokio::process::Command, policy: &Policy) -> Applied {
    register(cmd.as_std_mut(), plan(), policy)
}

#[cfg(target_os = "linux")]
fn register(cmd: &mut std::process::Command, plan: Plan, policy: &Policy) -> Applied {
    use std::os::unix::process::CommandExt as _;
    if !plan.mount {
        return Applied::default();
    }
    let mut read_only: Vec<(CString, libc::c_ulong)> = Vec::new();
    let git = policy
        .read_only
        .as_deref()
        .and_then(|p| read_only_target(p, true));
    let has_git = git.is_some();
    read_only.extend(git);
    let before = read_only.len();
    read_only.extend(
        policy
            .read_only_files
            .iter()
            .filter_map(|p| read_only_target(p, false)),
    );
    let has_files = read_only.len() > before;
    let view = View {
        world: plan.world,
        writable: policy
            .writable
            .iter()
            .filter_map(|p| writable_target(p))
            .collect(),
        read_only,
        proc: plan.pid,
    };
    let net = !policy.network;
    let mut flags = libc::CLONE_NEWNS;
    if net {
        flags |= libc::CLONE_NEWNET;
    }
    if plan.pid {
        flags |= libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    }
    let maps = plan.user.then(user_maps);
    // SAFETY: the closure runs between fork and exec and only makes system calls on
    // memory prepared in the parent (the view's and the maps' CStrings, owned by it).
    unsafe {
        cmd.pre_exec(move || {
            if let Some(maps) = &maps {
                enter_user_namespace(maps)?;
            }
            if libc::unshare(flags) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            private_mounts()?;
            if plan.pid {
                super::nsinit::enter()?;
            }
            view.make()
        });
    }
    Applied {
        git: has_git,
        files: has_files,
        network: net,
        pid: plan.pid,
        world: plan.world,
        user: plan.user,
    }
}

#[cfg(not(target_os = "linux"))]
pub fn apply(_cmd: &mut tokio::process::Command, _policy: &Policy) -> Applied {
    Applied::default()
}

/// The contents of `uid_map` and `gid_map`: the user's ids mapped to themselves.
#[cfg(target_os = "linux")]
fn user_maps() -> [CString; 2] {
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let line = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
    [line(uid), line(gid)]
}

/// `unshare(CLONE_NEWUSER)` and the id maps (setgroups must be denied before an
/// unprivileged process may write its gid map).
#[cfg(target_os = "linux")]
fn enter_user_namespace(maps: &[CString; 2]) -> std::io::Result<()> {
    // SAFETY: unshare with a constant flag.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    write_proc(c"/proc/self/setgroups", b"deny")?;
    write_proc(c"/proc/self/uid_map", maps[0].as_bytes())?;
    write_proc(c"/proc/self/gid_map", maps[1].as_bytes())
}

#[cfg(target_os = "linux")]
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open, write and close on a NUL-terminated path and a borrowed buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(n).ok() != Some(data.len()) {
            return Err(err);
        }
    }
    Ok(())
}

/// Makes every mount of the new namespace private, so the bind mounts made next do not
/// propagate back to the user's namespace.
#[cfg(target_os = "linux")]
fn private_mounts() -> std::io::Result<()> {
    // SAFETY: mount(2) with constant, NUL-terminated arguments.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn mount_flags(path: &CString) -> libc::c_ulong {
    // SAFETY: statvfs writes into the zeroed struct it is given; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let mut out = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            out |= ms_flag;
        }
    }
    out
}
