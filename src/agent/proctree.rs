//! Ending a command's whole tree, including what left its process group or session.
//!
//! A process group kill is not enough (`setsid`, `setpgid(0, 0)` or a double fork leave the
//! group), so each command carries a marker variable ([`MARKER`], unique per command) and
//! starts as the leader of its own session; at the end of the call a walk over `/proc`
//! finds every process in the command's session, carrying its marker, or descending from
//! one of those, and kills them with SIGKILL, again until a walk finds none (a process
//! forking while it is killed is caught on the next pass). Known gap: a process that
//! clears its environment, calls `setsid` and double-forks escapes the walk.
//!
//! Not used: a cgroup (a writable, delegated cgroup v2 is rare outside a systemd user
//! session), a child subreaper (it would make handoff the parent of every daemon any
//! library it calls starts, which it could not tell apart from a command's orphans) and a
//! PID namespace (the command's `$$` and `$!` would no longer be the pids the rest of the
//! system sees, and a shell that is a namespace's init ignores its own `kill $$`).

use std::collections::{HashMap, HashSet};

/// The environment variable that marks every process a command starts.
pub const MARKER: &str = "HANDOFF_COMMAND_ID";

/// Most walks before giving up on a tree that keeps forking faster than it dies.
const MAX_PASSES: usize = 64;

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

    /// The spawned command's pid (the leader of its own session).
    pub fn started(&mut self, leader: i32) {
        self.leader = leader;
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

    /// Kills; after this the guard does nothing.
    pub fn finish(&mut self) {
        self.kill();
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
}

fn kill_all(leader: i32, marker: &str) {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let needle = format!("{MARKER}={marker}");
    for _ in 0..MAX_PASSES {
        let procs = scan();
        let mut victims: HashSet<i32> = HashSet::new();
        for (&pid, p) in &procs {
            if pid == me {
                continue;
            }
            if p.sid == leader || carries(pid, &needle) {
                victims.insert(pid);
            }
        }
        // Descendants of any victim (whatever session or environment they chose).
        loop {
            let before = victims.len();
            for (&pid, p) in &procs {
                if victims.contains(&p.ppid) && pid != me {
                    victims.insert(pid);
                }
            }
            if victims.len() == before {
                break;
            }
        }
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
        if alive.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
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
    Some(Proc {
        ppid,
        sid,
        zombie: state == "Z" || state == "X",
    })
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
        assert_eq!((p.ppid, p.sid, p.zombie), (7, 42, false));
        assert!(parse_stat("42 (x) Z 1 2 3").is_some_and(|p| p.zombie));
        assert!(parse_stat("garbage").is_none());
    }
}
