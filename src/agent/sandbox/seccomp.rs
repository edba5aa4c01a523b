//! A seccomp filter for every sandboxed command: the system calls a build, a test run or a
//! script never needs, and that a hostile command would use to leave the sandbox.
//!
//! Always refused (EPERM unless said otherwise):
//! - `open_by_handle_at`, `name_to_handle_at`: a file handle opens a file by inode number,
//!   past every bind mount and path rule (the read-only `.git` was bypassed this way).
//! - `mknod`/`mknodat` of a character or block device: a device node inside a writable root
//!   is a door to the disk behind it (FIFOs and sockets stay allowed).
//! - `ptrace`, `process_vm_readv`, `process_vm_writev`: reading or steering another process.
//! - `mount` and the new mount API, `umount2`, `pivot_root`, `unshare`, `setns`,
//!   `clone` with a namespace flag, and `clone3` (ENOSYS, so the C library falls back to
//!   `clone`, whose flags a filter can read): no new view of the file system to escape by.
//! - `sethostname`, `setdomainname`, `kexec_*`, module loading, `bpf`, `swapon`/`swapoff`,
//!   `reboot`, `acct`, `userfaultfd` (a kernel-exploit helper), and the kernel keyring
//!   (`add_key`, `request_key`, `keyctl`), which may hold the user's secrets.
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: typing into a terminal.
//! - `prlimit64` that *sets* another process's limits, and `setpriority` on anyone but the
//!   caller: handoff died of a CPU limit a command set on its parent. Reading limits stays
//!   allowed; `ulimit` and `nice` act on the caller (pid 0) and stay allowed.
//! - `io_uring_setup`: io_uring performs system calls that this filter never sees.
//! - `memfd_create`: an anonymous file's pages are memory that no process's resident set
//!   shows until mapped, so `agent.max_memory_mib` never saw 1.2 GiB of them under a cap of
//!   64 MiB. Builds and test runs do not need it (`/dev/shm` is not writable either).
//! - system calls of another architecture (32-bit `int 0x80`, x32).
//!
//! Without network (`agent.network = false`), also: `socket()` for every family but netlink
//! (no pathname unix socket such as `$TMUX`, `$SSH_AUTH_SOCK` or docker.sock, which
//! Landlock before ABI 9 does not see), and `socketpair()` of datagram sockets: an unbound
//! datagram socket can `sendto()` any path, and a filter cannot read the address. Stream and
//! seqpacket pairs are born connected and refuse an address, so they stay allowed; netlink
//! stays allowed because the C library's name lookup lists interfaces through it.
//!
//! The filter is built in the parent and installed between fork and exec with one `prctl`
//! per step, after the no-new-privileges bit that an unprivileged filter needs.

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod bpf;

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod imp {
    use super::bpf::{Cond, Rule};
    use libc::sock_fprog;

    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const EACCES: u32 = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    /// Every namespace flag `clone` takes.
    const CLONE_NEW: u32 = (libc::CLONE_NEWNS
        | libc::CLONE_NEWCGROUP
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNET) as u32;

    /// Refused whatever their arguments.
    fn always() -> Vec<libc::c_long> {
        let mut out = vec![
            libc::SYS_open_by_handle_at,
            libc::SYS_name_to_handle_at,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_move_mount,
            libc::SYS_open_tree,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_mount_setattr,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_sethostname,
            libc::SYS_setdomainname,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_bpf,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_reboot,
            libc::SYS_acct,
            libc::SYS_userfaultfd,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_keyctl,
            libc::SYS_io_uring_setup,
            libc::SYS_memfd_create,
        ];
        #[cfg(target_arch = "x86_64")]
        out.extend([libc::SYS_iopl, libc::SYS_ioperm]);
        out
    }

    fn nr(n: libc::c_long) -> u32 {
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// The rules of the filter, in order.
    pub fn rules(network: bool) -> Vec<Rule> {
        let mut rules: Vec<Rule> = always()
            .into_iter()
            .map(|n| Rule::new(nr(n), vec![], EPERM))
            .collect();
        let devices = |arg| Cond::MaskedIn {
            arg,
            mask: libc::S_IFMT,
            values: vec![libc::S_IFCHR, libc::S_IFBLK],
        };
        #[cfg(target_arch = "x86_64")]
        rules.push(Rule::new(nr(libc::SYS_mknod), vec![devices(1)], EPERM));
        rules.push(Rule::new(nr(libc::SYS_mknodat), vec![devices(2)], EPERM));
        rules.push(Rule::new(nr(libc::SYS_clone3), vec![], ENOSYS));
        rules.push(Rule::new(
            nr(libc::SYS_clone),
            vec![Cond::AnyBit {
                arg: 0,
                mask: CLONE_NEW,
            }],
            EPERM,
        ));
        let tty_requests = [libc::TIOCSTI, libc::TIOCLINUX].map(|r| r as u32);
        rules.push(Rule::new(
            nr(libc::SYS_ioctl),
            vec![Cond::MaskedIn {
                arg: 1,
                mask: u32::MAX,
                values: tty_requests.to_vec(),
            }],
            EPERM,
        ));
        rules.push(Rule::new(
            nr(libc::SYS_prlimit64),
            vec![Cond::LowNonZero { arg: 0 }, Cond::NonZero64 { arg: 2 }],
            EPERM,
        ));
        rules.push(Rule::new(
            nr(libc::SYS_setpriority),
            vec![Cond::LowNonZero { arg: 1 }],
            EPERM,
        ));
        if !network {
            rules.push(Rule::new(
                nr(libc::SYS_socket),
                vec![Cond::NotEqual {
                    arg: 0,
                    value: libc::AF_NETLINK as u32,
                }],
                EACCES,
            ));
            rules.push(Rule::new(
                nr(libc::SYS_socketpair),
                vec![Cond::MaskedIn {
                    arg: 1,
                    mask: 0xf,
                    values: vec![libc::SOCK_DGRAM as u32],
                }],
                EACCES,
            ));
        }
        rules
    }

    pub fn install(cmd: &mut tokio::process::Command, network: bool) -> bool {
        let Some(filter) = super::bpf::program(&rules(network)) else {
            return false;
        };
        // SAFETY: the closure runs between fork and exec; it makes two prctl calls on the
        // filter the closure owns (allocated in the parent) and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let prog = sock_fprog {
                    len: u16::try_from(filter.len()).unwrap_or(0),
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

/// Installs the filter on `cmd`'s child (the socket rules only when `network` is off);
/// false where this build has no filter for the architecture (the command then runs
/// without it and the session note says so).
pub fn install(cmd: &mut tokio::process::Command, network: bool) -> bool {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        imp::install(cmd, network)
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        let _ = (cmd, network);
        false
    }
}
