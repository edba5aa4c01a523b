//! The mount view of a command, made in its private mount namespace between fork and exec:
//! the whole tree read-only and `nosuid`, each writable root bound back writable with
//! `nosuid,nodev`, `.git` and the protected files bound read-only on top, an empty
//! `/dev/pts` (no terminal of the user's), and a fresh `/proc` that shows only the
//! command's PID namespace.
//!
//! A read-only mount refuses metadata changes (mode, owner, times, extended attributes)
//! that Landlock does not see, and the writable roots' `nodev` makes a device node planted
//! there unusable even if one could be made. Device files such as `/dev/null` stay
//! writable: a read-only mount does not stop writes to a device, only to files.
//!
//! The recursive read-only step uses `mount_setattr(2)` (Linux 5.12); without it the world
//! stays as it is and the session says so.

use std::ffi::{CStr, CString};
use std::io;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// What to mount, prepared in the parent.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Make everything read-only and bind the writable roots back.
    pub world: bool,
    /// The writable roots (existing directories or files, no symlinks).
    pub writable: Vec<CString>,
    /// Bound read-only on top, with the mount flags their remount must keep.
    pub read_only: Vec<(CString, libc::c_ulong)>,
    /// Mount a fresh `/proc` (the command is in its own PID namespace).
    pub proc: bool,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `mount_setattr(path, AT_RECURSIVE, set, clear)`.
fn set_attr(path: &CStr, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr with a NUL-terminated path and a stack struct of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(i32::try_from(rc).unwrap_or(-1))
}

fn bind(path: &CString) -> io::Result<()> {
    let p = path.as_ptr();
    let null = std::ptr::null();
    // SAFETY: mount(2) with NUL-terminated paths prepared in the parent.
    check(unsafe { libc::mount(p, p, null, libc::MS_BIND | libc::MS_REC, null.cast()) })
}

/// An empty, read-only tmpfs over `/dev/pts`: the user's other terminals (and what is typed
/// into them) are out of sight, for reading as for writing. A command may still open
/// `/dev/ptmx`, but the terminal it gets has no path it can open. A machine without
/// `/dev/pts` has nothing to hide.
fn hide_terminals() -> io::Result<()> {
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // SAFETY: mount(2) with constant, NUL-terminated arguments.
    let rc = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c"/dev/pts".as_ptr(),
            c"tmpfs".as_ptr(),
            flags,
            c"size=4k,mode=0555".as_ptr().cast(),
        )
    };
    match check(rc) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

impl View {
    /// Builds the view in the current (private) mount namespace. Between fork and exec:
    /// system calls only, on memory prepared in the parent.
    pub fn make(&self) -> io::Result<()> {
        if self.world {
            for root in &self.writable {
                bind(root)?;
            }
            set_attr(c"/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)?;
            for root in &self.writable {
                set_attr(
                    root,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    MOUNT_ATTR_RDONLY,
                )?;
            }
        }
        for (path, kept) in &self.read_only {
            bind(path)?;
            let p = path.as_ptr();
            let null = std::ptr::null();
            let ro = libc::MS_BIND
                | libc::MS_REMOUNT
                | libc::MS_RDONLY
                | libc::MS_NOSUID
                | libc::MS_NODEV
                | kept;
            // SAFETY: as in `bind`.
            check(unsafe { libc::mount(null, p, null, ro, null.cast()) })?;
        }
        // The working directory was entered before these mounts, on the mount beneath the
        // writable root's bind; entering it again by name lands on the bind.
        let mut cwd = [0u8; 4096];
        // SAFETY: getcwd into a stack buffer of the size given, chdir to what it wrote.
        unsafe {
            if !libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null() {
                check(libc::chdir(cwd.as_ptr().cast()))?;
            }
        }
        if self.world {
            hide_terminals()?;
        }
        if self.proc {
            let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            // SAFETY: mount(2) with constant, NUL-terminated arguments.
            check(unsafe {
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    flags,
                    std::ptr::null(),
                )
            })?;
        }
        Ok(())
    }
}
