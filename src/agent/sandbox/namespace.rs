//! Private namespaces for a command where this process may create them: a mount namespace
//! in which `.git` and the protected files are bind-mounted read-only, and an empty
//! network namespace.
//!
//! Creating them needs `CAP_SYS_ADMIN` (handoff running as root, or in a container that
//! grants it); unprivileged user namespaces are not used, because they change what the
//! command sees of file ownership. Where they cannot be created, `.git` stays writable and
//! the change detector ([`crate::agent::gitguard`]) reports what a command did to it, and
//! the network is cut by seccomp and Landlock alone.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::Policy;

/// Whether this process can give a child its own mount and network namespaces; probed once
/// by starting `sh -c :` in them.
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> bool {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(":")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: between fork and exec the closure makes two system calls and touches no
    // memory but their constant arguments.
    unsafe {
        cmd.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            private_mounts()
        });
    }
    cmd.status().is_ok_and(|s| s.success())
}

#[cfg(not(target_os = "linux"))]
fn probe() -> bool {
    false
}

/// Makes every mount of the new namespace private, so the bind mount made next does not
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

/// What [`apply`] registered for a command.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// `.git` is read-only.
    pub git: bool,
    /// The protected files are read-only.
    pub files: bool,
    /// An empty network namespace.
    pub network: bool,
}

/// A path to bind-mount read-only, with the flags its remount must keep (a remount that
/// drops nosuid/nodev is refused).
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

/// Registers the namespace step for `cmd` and says what it will apply. A failure in the
/// child fails the spawn: a sandbox that was promised is never silently dropped.
#[cfg(target_os = "linux")]
pub fn apply(cmd: &mut tokio::process::Command, policy: &Policy) -> Applied {
    if !available() {
        return Applied::default();
    }
    let mut targets: Vec<(CString, libc::c_ulong)> = Vec::new();
    let git = policy
        .read_only
        .as_deref()
        .and_then(|p| read_only_target(p, true));
    let has_git = git.is_some();
    targets.extend(git);
    let before = targets.len();
    targets.extend(
        policy
            .read_only_files
            .iter()
            .filter_map(|p| read_only_target(p, false)),
    );
    let has_files = targets.len() > before;
    let net = !policy.network;
    if targets.is_empty() && !net {
        return Applied::default();
    }
    let mut flags = libc::CLONE_NEWNS;
    if net {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: the closure runs between fork and exec and only makes system calls on
    // memory prepared in the parent (`targets` holds CStrings owned by the closure).
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(flags) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            private_mounts()?;
            for (path, kept) in &targets {
                let p = path.as_ptr();
                let null = std::ptr::null();
                if libc::mount(p, p, null, libc::MS_BIND | libc::MS_REC, null.cast()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let ro = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept;
                if libc::mount(null, p, null, ro, null.cast()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Applied {
        git: has_git,
        files: has_files,
        network: net,
    }
}

#[cfg(not(target_os = "linux"))]
pub fn apply(_cmd: &mut tokio::process::Command, _policy: &Policy) -> Applied {
    Applied::default()
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
