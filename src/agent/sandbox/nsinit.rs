//! The process layout inside a command's PID namespace, so that nothing the command starts
//! outlives it, whatever it does with `setsid`, double forks or pid reuse.
//!
//! `unshare(CLONE_NEWPID)` only puts the caller's *children* in the new namespace, so the
//! child handoff spawned (the "outer" process) forks twice:
//!
//! ```text
//! handoff ── outer (handoff's namespace) ── init (pid 1) ── command (pid 2, execs sh)
//! ```
//!
//! - *init* reaps every orphan of the namespace and exits as soon as the command (pid 2)
//!   does; the kernel then kills everything left in the namespace. It dies with *outer*
//!   (`PR_SET_PDEATHSIG`), and *outer* is what handoff waits for and kills, so killing the
//!   command's session kills the namespace.
//! - The command is pid 2, not pid 1: a shell that is a namespace's init ignores its own
//!   `kill $$`, and `$$`, `$!` and `kill` keep their usual meaning.
//! - *outer* relays the command's status: its exit code, or the signal that ended it
//!   (passed up from init through a pipe, because init cannot die of a signal it sends
//!   itself).
//!
//! Only raw system calls are made here (`clone` rather than the C library's `fork`, whose
//! fork handlers take locks that another thread of handoff may have held at the first
//! fork), and both waiting processes close every descriptor they do not need, so the pipe
//! on which the standard library learns that exec succeeded is held by the command alone.

use std::io;

/// Forks into the layout above. Returns in the command's process only (as pid 2 of the new
/// namespace); the outer and init processes never return.
///
/// # Safety
/// Call only between fork and exec, after `unshare(CLONE_NEWPID)`.
#[cfg(target_os = "linux")]
pub unsafe fn enter() -> io::Result<()> {
    // SAFETY (whole body): raw system calls on stack values; no allocation, no locks.
    unsafe {
        let mut fds = [0 as libc::c_int; 2];
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let (rd, wr) = (fds[0], fds[1]);
        let init = clone_process();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init > 0 {
            libc::close(wr);
            close_all_but(rd);
            let status = wait_for(init as libc::pid_t);
            let mut signal = 0u8;
            let got = libc::read(rd, (&raw mut signal).cast(), 1);
            relay(status, if got == 1 { signal } else { 0 });
        }
        libc::close(rd);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        let command = clone_process();
        if command < 0 {
            libc::_exit(127);
        }
        if command > 0 {
            close_all_but(wr);
            let status = reap_until(command as libc::pid_t);
            if libc::WIFSIGNALED(status) {
                let signal = u8::try_from(libc::WTERMSIG(status)).unwrap_or(0);
                libc::write(wr, (&raw const signal).cast(), 1);
                libc::_exit(128 + i32::from(signal));
            }
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::close(wr);
        Ok(())
    }
}

/// A plain fork through the raw system call.
#[cfg(target_os = "linux")]
unsafe fn clone_process() -> libc::c_long {
    // SAFETY: clone with SIGCHLD and no stack behaves as fork(2).
    unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) }
}

/// Closes every descriptor from 3 up except `keep`.
#[cfg(target_os = "linux")]
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = u32::try_from(keep).unwrap_or(3);
    // SAFETY: close_range(2) on integer ranges; a kernel without it gets close(2) one by one.
    unsafe {
        let ranges = [(3u32, keep.saturating_sub(1)), (keep + 1, u32::MAX)];
        for (first, last) in ranges {
            if first > last {
                continue;
            }
            if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                for fd in first..last.min(4096) {
                    libc::close(fd as libc::c_int);
                }
            }
        }
    }
}

/// The status of `pid`, waiting through interruptions.
#[cfg(target_os = "linux")]
unsafe fn wait_for(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid into a stack integer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid || (r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted) {
            return status;
        }
    }
}

/// As init: reaps whatever dies until `command` does, and returns its status.
#[cfg(target_os = "linux")]
unsafe fn reap_until(command: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waitpid into a stack integer.
        let r = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if r == command {
            return status;
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return status;
        }
    }
}

/// Ends the outer process the way the command ended.
#[cfg(target_os = "linux")]
unsafe fn relay(status: libc::c_int, signal: u8) -> ! {
    let signal = if signal > 0 {
        i32::from(signal)
    } else if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
    };
    // SAFETY: signal, kill and _exit on integers.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}
