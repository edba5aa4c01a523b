//! A seccomp filter for commands without network: `socket()` is refused for every address
//! family but netlink, `io_uring_setup` is refused, and system calls of another
//! architecture (32-bit `int 0x80`, x32) are refused.
//!
//! Why `socket()` and not `connect()`: a filter cannot read the address `connect()` is
//! given, and a pathname unix socket (`$TMUX`, `$SSH_AUTH_SOCK`, D-Bus, docker.sock) is
//! a way out of any sandbox that Landlock before ABI 9 does not see. `socketpair()` stays
//! allowed: its two ends only reach each other. Netlink stays allowed because the C
//! library's name lookup opens one to list interfaces. The filter is built in the parent
//! and installed between fork and exec with one `prctl` per step, after the
//! no-new-privileges bit that an unprivileged filter needs.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use libc::{sock_filter, sock_fprog};

    #[cfg(target_arch = "x86_64")]
    const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
    /// System call numbers with this bit set are the x32 ABI on x86_64.
    const X32_BIT: u32 = 0x4000_0000;

    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    /// Offsets into `struct seccomp_data`.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const ARG0: u32 = 16;

    fn stmt(code: u16, k: u32) -> sock_filter {
        sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
        sock_filter { code, jt, jf, k }
    }

    /// The filter program.
    pub fn program() -> Vec<sock_filter> {
        let allow = libc::SECCOMP_RET_ALLOW;
        let eacces = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        vec![
            /* 0 */ stmt(LD_W_ABS, ARCH),
            /* 1 */ jump(JEQ_K, NATIVE_ARCH, 1, 0),
            /* 2 */ stmt(RET_K, eperm),
            /* 3 */ stmt(LD_W_ABS, NR),
            /* 4 */ jump(JGE_K, X32_BIT, 0, 1),
            /* 5 */ stmt(RET_K, eperm),
            /* 6 */ jump(JEQ_K, libc::SYS_io_uring_setup as u32, 0, 1),
            /* 7 */ stmt(RET_K, eperm),
            /* 8 */ jump(JEQ_K, libc::SYS_socket as u32, 0, 3),
            /* 9 */ stmt(LD_W_ABS, ARG0),
            /* 10 */ jump(JEQ_K, libc::AF_NETLINK as u32, 1, 0),
            /* 11 */ stmt(RET_K, eacces),
            /* 12 */ stmt(RET_K, allow),
        ]
    }

    pub fn install(cmd: &mut tokio::process::Command) -> bool {
        let filter = program();
        // SAFETY: the closure runs between fork and exec; it makes two prctl calls on the
        // filter the closure owns (allocated in the parent) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let prog = sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_ptr().cast_mut(),
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const sock_fprog,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        true
    }
}

/// Installs the filter on `cmd`'s child; false where this build has no filter for the
/// architecture (the command then runs without it and the session note says so).
pub fn deny_sockets(cmd: &mut tokio::process::Command) -> bool {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        imp::install(cmd)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        let _ = cmd;
        false
    }
}
