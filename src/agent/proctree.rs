//! Ending a command's whole tree, including what left its process group or session.
//!
//! A process group kill is not enough (`setsid`, `setpgid(0, 0)` or a double fork leave the
//! group), so each command carries a marker variable ([`MARKER`], unique per command) and
//! starts as the leader of its own session; at the end of the call a walk over `/proc`
//! finds every process in the command's session, carrying its marker, or descending from
//! one of those, and kills them with SIGKILL, again until a walk finds none (a process
//! forking while it is killed is caught on the next pass).
//!
//! That walk alone misses a process that clears its environment (`env -i`), calls `setsid`
//! and double-forks: nothing names it any more, and its parent is gone. So the binary makes
//! handoff a *child subreaper* ([`adopt_orphans`], `PR_SET_CHILD_SUBREAPER`): an orphan of
//! a command is re-parented to handoff instead of to init, and the walk also takes every
//! child of handoff that sits in another session and is not a live command's leader (an
//! *adopted orphan*), with its descendants; the dead ones are reaped, as init would.
//! That rule is sound because handoff starts processes outside its own session only
//! through [`Tree::spawn`] (every command is the leader of a new session, and a process
//! can never join handoff's session again), and starts no daemon of its own; so a child of
//! handoff in another session is a command's leader or a command's orphan. A program that
//! embeds this library and starts daemons of its own (the test binary starts tmux) does
//! not call [`adopt_orphans`], and keeps the marker walk alone. With several commands at
//! once (`eval --jobs`), an adopted orphan cannot be told apart by command: the first call
//! that ends kills every adopted orphan that no live command still names, a little early
//! for a daemon of a command that is still running.
//!
//! Where a PID namespace can be made ([`crate::agent::sandbox::nsinit`]), it is what
//! really ends a sandboxed command's tree: the kernel kills everything in the namespace
//! when its init exits, which no `setsid` or pid hopping escapes. This walk stays for the
//! rest: commands without the sandbox (`agent.sandbox = false`, an unconfined check),
//! kernels or containers that give no PID namespace, and the namespace's own outer
//! process. A cgroup was not used: it needs a writable, delegated cgroup v2 (rare outside a
//! systemd user session, absent in most containers). The subreaper needs one `prctl` on
//! Linux 3.4+ and changes nothing the command sees.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The environment variable that marks every process a command starts.
pub const MARKER: &str = "HANDOFF_COMMAND_ID";

/// Most walks before giving up on a tree that keeps forking faster than it dies.
const MAX_PASSES: usize = 64;

/// Whether this process adopts orphans ([`adopt_orphans`] succeeded).
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// The commands running now, by leader pid and marker. Spawning and each walk's pass take
/// the lock, so a walk never sees a leader that is not registered yet.
static LIVE: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<(i32, String)>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes this process the subreaper of everything it starts, so a command's orphans are
/// re-parented here and the walk at the end of the call finds them (see the module docs
/// for when this is sound). True when in force; false where the kernel has no subreapers.
pub fn adopt_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(2) with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if rc == 0 {
            ADOPTING.store(true, Ordering::SeqCst);
        }
    }
    ADOPTING.load(Ordering::SeqCst)
}

/// Kills every command tree this process started, at once (the way out on a second
/// signal, just before the process exits): every live command's session, and every
/// descendant of this process outside its own session.
pub fn kill_every_command() {
    let me = own_pid();
    let my_sid = own_sid();
    let leaders: Vec<i32> = live().iter().map(|(leader, _)| *leader).collect();
    for leader in leaders {
        // SAFETY: kill(2) on a live command's session group; no memory involved.
        unsafe {
            libc::kill(-leader, libc::SIGKILL);
        }
    }
    for _ in 0..MAX_PASSES {
        let procs = scan();
        let mine = descendants(&procs, [me].into_iter().collect(), me);
        let alive: Vec<i32> = mine
            .into_iter()
            .filter(|pid| procs.get(pid).is_some_and(|p| !p.zombie && p.sid != my_sid))
            .collect();
        if alive.is_empty() {
            return;
        }
        for pid in alive {
            // SAFETY: kill(2) with a pid read from /proc this pass.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn own_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(0)
}

/// handoff's own executable, as `/proc/PID/exe` names it (read once).
fn own_exe() -> Option<&'static std::path::Path> {
    static EXE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::fs::read_link("/proc/self/exe").ok())
        .as_deref()
}

fn own_sid() -> i32 {
    // SAFETY: getsid(2) of the calling process; no memory involved.
    unsafe { libc::getsid(0) }
}

/// A fresh marker value for one command.
pub fn new_marker() -> String {
    use rand::Rng as _;
    let n: u64 = rand::rng().random();
    format!("{}-{n:016x}", std::process::id())
}

/// One command's tree; killed when dropped.
pub struct Tree {
    leader: i32,
    marker: String,
    done: bool,
}

impl Tree {
    pub fn new(marker: String) -> Tree {
        Tree {
            leader: 0,
            marker,
            done: false,
        }
    }

    /// Spawns the command (which must make itself the leader of a new session) and
    /// registers it as live, with no walk running in between.
    pub fn spawn(
        &mut self,
        cmd: &mut tokio::process::Command,
    ) -> std::io::Result<tokio::process::Child> {
        let mut live = live();
        let child = cmd.spawn()?;
        if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
            self.leader = pid;
            live.push((pid, self.marker.clone()));
        }
        Ok(child)
    }

    /// Kills the command's session first (fast, covers the usual case), then walks.
    pub fn kill(&mut self) {
        if self.done || self.leader <= 0 {
            return;
        }
        // SAFETY: kill(2) on the session's process group (the leader called setsid, so the
        // group id is its pid, which stays reserved while any member lives).
        unsafe {
            libc::kill(-self.leader, libc::SIGKILL);
        }
        kill_all(self.leader, &self.marker);
    }

    /// What the command's tree uses now: its live tasks (the threads of its session's
    /// processes and of every descendant of its leader, so a PID namespace's whole
    /// content) and their summed resident memory; for the caps of [`crate::agent::sandbox::limits`].
    pub fn usage(&self) -> crate::agent::sandbox::limits::Usage {
        let mut usage = crate::agent::sandbox::limits::Usage::default();
        if self.done || self.leader <= 0 {
            return usage;
        }
        let me = own_pid();
        let procs = scan();
        let roots: HashSet<i32> = procs
            .iter()
            .filter(|(pid, p)| **pid == self.leader || p.sid == self.leader)
            .map(|(pid, _)| *pid)
            .collect();
        // SAFETY: sysconf(3) with a constant name.
        let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let own = own_exe();
        for pid in descendants(&procs, roots, me) {
            let Some(p) = procs.get(&pid).filter(|p| !p.zombie) else {
                continue;
            };
            // Threads count: each takes a pid from the machine-wide pool, as a process does.
            usage.processes += p.threads.max(1) as usize;
            // The PID namespace's outer and init processes are forks of handoff that never
            // exec: their resident pages are handoff's own, shared copy-on-write, and a
            // large handoff (the test binary, `eval --jobs`) would count twice against the
            // command's cap. A command that runs handoff's own binary is not counted either.
            if own.is_some()
                && std::fs::read_link(format!("/proc/{pid}/exe"))
                    .ok()
                    .as_deref()
                    == own
            {
                continue;
            }
            usage.resident_bytes += resident_pages(pid).saturating_mul(page);
        }
        usage
    }

    /// Kills; after this the guard does nothing.
    pub fn finish(&mut self) {
        self.kill();
        if !self.done && self.leader > 0 {
            live().retain(|(leader, _)| *leader != self.leader);
        }
        self.done = true;
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.finish();
    }
}

#[derive(Debug, Clone, Copy)]
struct Proc {
    ppid: i32,
    sid: i32,
    zombie: bool,
    /// Its threads: each one a task with a pid of its own from the machine's pool.
    threads: u32,
}

fn kill_all(leader: i32, marker: &str) {
    let me = own_pid();
    let my_sid = own_sid();
    let adopting = ADOPTING.load(Ordering::SeqCst);
    let needle = format!("{MARKER}={marker}");
    for _ in 0..MAX_PASSES {
        let live = live();
        let procs = scan();
        let others: Vec<(i32, String)> = live
            .iter()
            .filter(|(l, _)| *l != leader)
            .map(|(l, m)| (*l, format!("{MARKER}={m}")))
            .collect();
        let leaders: HashSet<i32> = live.iter().map(|(l, _)| *l).collect();
        // Adopted orphans: children of handoff in another session that no live command
        // names (see the module docs).
        let orphan = |pid: i32, p: &Proc| {
            adopting
                && p.ppid == me
                && p.sid != my_sid
                && !leaders.contains(&pid)
                && !others
                    .iter()
                    .any(|(l, needle)| p.sid == *l || carries(pid, needle))
        };
        let mut victims: HashSet<i32> = HashSet::new();
        for (&pid, p) in &procs {
            if pid == me {
                continue;
            }
            if p.sid == leader || carries(pid, &needle) || orphan(pid, p) {
                victims.insert(pid);
            }
        }
        // Descendants of any victim (whatever session or environment they chose).
        let victims = descendants(&procs, victims, me);
        let alive: Vec<i32> = victims
            .iter()
            .copied()
            .filter(|pid| procs.get(pid).is_some_and(|p| !p.zombie))
            .collect();
        for &pid in &alive {
            // SAFETY: kill(2) with a pid read from /proc this pass; no memory involved.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        if adopting {
            reap(&procs, &leaders, me, my_sid);
        }
        drop(live);
        if alive.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// `roots` and everything descending from them, never `me`.
fn descendants(procs: &HashMap<i32, Proc>, mut set: HashSet<i32>, me: i32) -> HashSet<i32> {
    loop {
        let before = set.len();
        for (&pid, p) in procs {
            if set.contains(&p.ppid) && pid != me {
                set.insert(pid);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// Collects the exit status of dead adopted orphans, as init would have: never a live
/// command's leader (tokio waits for those), never a child in handoff's own session (some
/// other part of handoff may be waiting for it).
fn reap(procs: &HashMap<i32, Proc>, leaders: &HashSet<i32>, me: i32, my_sid: i32) {
    for (&pid, p) in procs {
        if p.zombie && p.ppid == me && p.sid != my_sid && !leaders.contains(&pid) {
            let mut status = 0;
            // SAFETY: waitpid(2) on one pid, without blocking, into a local integer.
            unsafe {
                libc::waitpid(pid, &mut status, libc::WNOHANG);
            }
        }
    }
}

/// Every process's parent, session and state, from `/proc/PID/stat`.
fn scan() -> HashMap<i32, Proc> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(p) = parse_stat(&stat) {
            out.insert(pid, p);
        }
    }
    out
}

/// `pid (comm) state ppid pgrp session ...`; the command name may hold spaces and parens.
fn parse_stat(stat: &str) -> Option<Proc> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp: i32 = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    // tty_nr … nice (fields 7 to 19), then num_threads; a kernel that lacks it counts 1.
    let threads = fields.nth(13).and_then(|t| t.parse().ok()).unwrap_or(1);
    Some(Proc {
        ppid,
        sid,
        zombie: state == "Z" || state == "X",
        threads,
    })
}

/// The resident pages of `pid` (`/proc/PID/statm`, second field); 0 when it is gone.
fn resident_pages(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn carries(pid: i32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let p = parse_stat("42 (a) b (c)) S 7 42 42 0 -1").expect("parses");
        assert_eq!((p.ppid, p.sid, p.zombie, p.threads), (7, 42, false, 1));
        let full = "1234 (python3) S 1 1234 1234 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 37 0 555";
        let p = parse_stat(full).expect("parses");
        assert_eq!((p.ppid, p.sid, p.threads), (1, 1234, 37));
        assert!(parse_stat("42 (x) Z 1 2 3").is_some_and(|p| p.zombie));
        assert!(parse_stat("garbage").is_none());
    }
}
