//! No capabilities for a command: the bounding, ambient, inheritable, permitted and
//! effective sets are emptied and `no_new_privs` is set before exec.
//!
//! As root, a command that keeps its capabilities can make device nodes, change any file's
//! owner and mode, set the immutable flag, rename the host or renice handoff; emptying the
//! bounding set also means an exec of a setuid-root program (or by uid 0) gains nothing
//! back. Dropping the bounding set needs `CAP_SETPCAP`: an unprivileged user outside a user
//! namespace has no capabilities to drop and the step is a no-op for it.

/// Registers the drop on `cmd`; it runs after the namespace and mount steps (which need
/// `CAP_SYS_ADMIN`) and before Landlock and seccomp.
#[cfg(target_os = "linux")]
pub fn drop_all(cmd: &mut tokio::process::Command) {
    // SAFETY: between fork and exec the closure only makes system calls on stack values.
    unsafe {
        cmd.pre_exec(|| {
            drop_now();
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub fn drop_all(_cmd: &mut tokio::process::Command) {}

/// The drop itself; failures are ignored because each step only removes what the process
/// holds (an unprivileged process has nothing to remove), and `/proc/self/status` of the
/// command is what the tests check.
#[cfg(target_os = "linux")]
fn drop_now() {
    /// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
    const VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl and capset with integer arguments or pointers to stack values that
    // outlive the calls.
    unsafe {
        // Capability numbers stop well below 64; EINVAL past the last is ignored.
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let empty = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &header as *const Header, empty.as_ptr());
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    }
}
