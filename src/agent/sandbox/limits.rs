//! Caps on what one command may use (`agent.max_write_mib`, `agent.max_processes`,
//! `agent.max_memory_mib`), so a `run` call or the check cannot fill the disk, fork the
//! machine to a halt or take all its memory; a command that passes one is stopped and its
//! result says which cap and which key.
//!
//! How each is enforced, and why:
//! - **Disk written, per file**: `RLIMIT_FSIZE`. A write past the cap is cut at the cap
//!   and the writer gets `SIGXFSZ` (it dies) or, if it ignores the signal, `EFBIG`. It
//!   holds for root too (capabilities do not lift it) and needs no namespace. It bounds
//!   each file, not the sum of many; checkpoints leave out untracked files of the cap's
//!   size or more ([`crate::repo::Repo::set_max_file_bytes`]), so a cut file is not copied
//!   into `.git` either. `RLIMIT_CORE` is 0 besides (a core dump is a write too).
//! - **Processes**: tasks (each process's threads, since each holds a pid) counted by
//!   handoff over the command's tree (its session and every
//!   descendant; where a PID namespace is made, everything in it) every
//!   [`POLL`]; past the cap the whole tree is killed. `RLIMIT_NPROC` was not used: it
//!   counts every process of the real uid on the machine (a normal user's editor and
//!   shells count against it) and root is exempt from it whatever its capabilities. A
//!   cgroup (`pids.max`) was not used: it needs a writable, delegated cgroup v2, which most
//!   containers and many desktops do not give. The price of polling: a fork bomb can start
//!   what it forks within one poll before it is killed.
//! - **Memory**: the resident memory of the same tree, summed at the same poll (but for
//!   processes running handoff's own binary: the PID namespace's outer and init are forks
//!   of handoff whose pages are handoff's), kills the tree past the cap; and `RLIMIT_DATA` at the cap for each process, so a single process
//!   cannot outrun the poll: its allocation past the cap fails (its own "Cannot allocate
//!   memory", `MemoryError`). `RLIMIT_AS` was not used: runtimes that reserve large
//!   address ranges (Go, the JVM, V8) fail under it long before they use the memory.
//!
//! A cap of 0 turns that cap off.

use std::time::Duration;

/// How often the process and memory caps are checked while a command runs.
pub const POLL: Duration = Duration::from_millis(100);

/// `SIGXFSZ`: what a write past `RLIMIT_FSIZE` sends.
const SIGXFSZ: i32 = 25;

/// The caps of one command; 0 is no cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps {
    /// Largest file a command may write, in MiB (`agent.max_write_mib`).
    pub write_mib: u64,
    /// Most tasks (processes and their threads) alive at once in the command's tree
    /// (`agent.max_processes`): a thread takes a pid from the machine's pool as a process
    /// does, so 600 threads under a cap of 20 processes was a fork bomb the cap missed.
    pub processes: u32,
    /// Most resident memory of the tree, in MiB (`agent.max_memory_mib`).
    pub memory_mib: u64,
}

/// What a command's tree uses at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub processes: usize,
    pub resident_bytes: u64,
}

const MIB: u64 = 1024 * 1024;

impl Caps {
    /// Whether a poll is needed at all.
    pub fn polled(&self) -> bool {
        self.processes > 0 || self.memory_mib > 0
    }

    /// The message for a tree that uses more than a cap allows, `None` within them.
    pub fn exceeded(&self, usage: Usage) -> Option<String> {
        if self.processes > 0 && usage.processes > self.processes as usize {
            return Some(format!(
                "stopped: the command ran more than {} processes and threads at once (agent.max_processes); \
                 every process it started was killed",
                self.processes
            ));
        }
        if self.memory_mib > 0 && usage.resident_bytes > self.memory_mib.saturating_mul(MIB) {
            return Some(format!(
                "stopped: the command used more than {} MiB of memory (agent.max_memory_mib); \
                 every process it started was killed",
                self.memory_mib
            ));
        }
        None
    }

    /// The message for a command that ended after a write past the file cap: it died of
    /// `SIGXFSZ` (directly, or a shell reports a child's as 128 + 25), or its output says
    /// a file was too large. `None` otherwise.
    pub fn write_stopped(
        &self,
        signal: Option<i32>,
        code: Option<i32>,
        output: &str,
    ) -> Option<String> {
        if self.write_mib == 0 {
            return None;
        }
        let hit = signal == Some(SIGXFSZ)
            || code == Some(128 + SIGXFSZ)
            || output.contains("File size limit exceeded")
            || output.contains("File too large");
        hit.then(|| {
            format!(
                "stopped: a process wrote a file past {} MiB (agent.max_write_mib); the writer \
                 was stopped and the file cut at that size",
                self.write_mib
            )
        })
    }

    /// The note for a command whose allocation failed, as the per-process memory limit
    /// makes it: said only when the output shows an allocation failure.
    pub fn memory_refused(&self, success: bool, output: &str) -> Option<String> {
        if self.memory_mib == 0 || success {
            return None;
        }
        let failed = [
            "Cannot allocate memory",
            "MemoryError",
            "memory allocation",
            "out of memory",
        ]
        .iter()
        .any(|s| output.contains(s));
        failed.then(|| {
            format!(
                "stopped: a process of the command asked for more than {} MiB of memory \
                 (agent.max_memory_mib) and its allocation was refused",
                self.memory_mib
            )
        })
    }
}

/// Registers the resource limits on `cmd`. Registered after the sandbox's steps, so they
/// bind the command alone, not the namespace's small init and outer processes.
#[cfg(target_os = "linux")]
pub fn apply(cmd: &mut tokio::process::Command, caps: Caps) {
    let bytes = |mib: u64| mib.saturating_mul(MIB);
    let mut limits: Vec<(libc::__rlimit_resource_t, u64)> = vec![(libc::RLIMIT_CORE, 0)];
    if caps.write_mib > 0 {
        limits.push((libc::RLIMIT_FSIZE, bytes(caps.write_mib)));
    }
    if caps.memory_mib > 0 {
        limits.push((libc::RLIMIT_DATA, bytes(caps.memory_mib)));
    }
    // SAFETY: between fork and exec the closure makes setrlimit calls on stack values and
    // reads a vector prepared in the parent.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, value) in &limits {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub fn apply(_cmd: &mut tokio::process::Command, _caps: Caps) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cap_names_its_key_and_zero_is_off() {
        let caps = Caps {
            write_mib: 8,
            processes: 10,
            memory_mib: 64,
        };
        let many = Usage {
            processes: 11,
            resident_bytes: 0,
        };
        assert!(
            caps.exceeded(many)
                .is_some_and(|m| m.contains("agent.max_processes"))
        );
        let big = Usage {
            processes: 1,
            resident_bytes: 65 * MIB,
        };
        assert!(
            caps.exceeded(big)
                .is_some_and(|m| m.contains("agent.max_memory_mib"))
        );
        assert_eq!(
            caps.exceeded(Usage {
                processes: 10,
                resident_bytes: 64 * MIB
            }),
            None
        );
        assert_eq!(Caps::default().exceeded(many), None);
        assert!(caps.write_stopped(Some(25), None, "").is_some());
        assert!(caps.write_stopped(None, Some(153), "").is_some());
        assert_eq!(caps.write_stopped(None, Some(1), "error"), None);
        assert_eq!(Caps::default().write_stopped(Some(25), None, ""), None);
    }
}
