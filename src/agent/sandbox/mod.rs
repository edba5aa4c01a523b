//! The sandbox of `run` and of the check: what a command the model wrote may touch.
//!
//! Layers, each applied where the kernel has it and reported by [`Layers`]:
//! - **Landlock** ([`landlock`]): writes only beneath the repository, the session's temp dir
//!   and `agent.writable_roots` (plus a few device files such as `/dev/null`); reads beneath
//!   system directories and `agent.readable_roots` when that key is set; no TCP when
//!   `agent.network = false`; no signals to processes outside the command's own tree and
//!   no abstract unix sockets made outside it (scopes, ABI 6).
//! - **Namespaces** ([`namespace`], made directly as root, inside a user namespace
//!   otherwise): a mount namespace in which everything outside the writable roots is
//!   read-only (metadata included) and `nosuid`, the writable roots `nosuid,nodev`, the
//!   repository's `.git` and the protected files (`agent.protected`) read-only ([`mounts`]);
//!   a PID namespace torn down with the command, with its own `/proc` ([`nsinit`]); with
//!   `agent.network = false` an empty network namespace (no interface is up, not even
//!   loopback).
//! - **No capabilities** ([`caps`]): every capability set emptied, `no_new_privs` set.
//!
//! Landlock cannot make the protected files read-only: its rules only ever *grant* access
//! beneath a path, and a ruleset that grants writes to the repository grants them to every
//! file inside it — there is no rule that takes write access away from a subpath. Leaving
//! the repository out and granting its other files one by one would fail for every file a
//! command creates. So the protected files are read-only only where a mount namespace can
//! be made (a bind mount of each file, as for `.git`); elsewhere, and for files past the
//! mount cap, they are writable by commands and the change is caught after the step
//! ([`crate::agent::protect`]) and undone.
//! - **seccomp** ([`seccomp`]): device nodes, file handles, mounts, namespaces, tracing,
//!   the keyring, terminal injection and changing another process's limits refused; with
//!   `agent.network = false` also `socket()` for every family but netlink and datagram
//!   `socketpair()` (so no pathname unix socket such as `$TMUX` or `$SSH_AUTH_SOCK` can be
//!   reached, which Landlock before ABI 9 cannot stop).
//!
//! Everything is prepared in the parent, where allocating is safe; the child only makes
//! system calls between fork and exec. Where a layer is missing the command still runs and
//! the session's one-line note says what is not enforced.

pub(crate) mod caps;
pub(crate) mod denial;
pub(crate) mod env;
pub(crate) mod landlock;
pub(crate) mod limits;
pub(crate) mod mounts;
pub mod namespace;
pub(crate) mod nsinit;
pub(crate) mod seccomp;

use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether the running kernel can sandbox commands with Landlock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    Available { abi: i32 },
    Unavailable { reason: String },
}

impl SandboxStatus {
    /// The one-line message for the operator.
    pub fn message(&self) -> String {
        match self {
            SandboxStatus::Available { abi } => {
                format!(
                    "run commands are sandboxed with Landlock (ABI {abi}): writes only inside the repository and a temp dir"
                )
            }
            SandboxStatus::Unavailable { reason } => {
                format!("sandbox unavailable ({reason}); run commands are NOT confined")
            }
        }
    }
}

/// Errors building the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("landlock: {0}")]
    Ruleset(String),
    #[error("cannot open {path} for the sandbox: {message}")]
    Path { path: String, message: String },
}

/// What one command is allowed; built by the workspace from `[agent]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// Directories (or files) the command may write beneath.
    pub writable: Vec<PathBuf>,
    /// `Some`: reads only beneath these (plus the writable ones and the system's own
    /// directories); `None`: reads are not restricted.
    pub readable: Option<Vec<PathBuf>>,
    /// The repository's `.git` (directory, or file in a linked worktree), made read-only.
    pub read_only: Option<PathBuf>,
    /// Protected files (`agent.protected`), each bind-mounted read-only where a mount
    /// namespace can be made.
    pub read_only_files: Vec<PathBuf>,
    /// Whether the command may use the network and local sockets.
    pub network: bool,
}

/// The layers that were really applied to a command, for its result and the session note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layers {
    /// The Landlock ABI in force, 0 when none.
    pub landlock_abi: i32,
    /// `.git` bind-mounted read-only in a private mount namespace.
    pub read_only_git: bool,
    /// The protected files bind-mounted read-only in the same namespace.
    pub read_only_files: bool,
    /// An empty network namespace.
    pub network_namespace: bool,
    /// The seccomp filter (sockets too when the network is off).
    pub seccomp: bool,
    /// A PID namespace that dies with the command, with its own `/proc`.
    pub pid_namespace: bool,
    /// Everything outside the writable roots read-only, metadata included.
    pub read_only_world: bool,
}

impl Layers {
    /// True when any layer confines the command.
    pub fn any(&self) -> bool {
        self.landlock_abi > 0
            || self.read_only_git
            || self.read_only_files
            || self.network_namespace
            || self.seccomp
            || self.pid_namespace
            || self.read_only_world
    }
}

/// Confines the child of `cmd` to `policy`: registers the `pre_exec` steps in the order
/// they must run (namespaces and mounts first, since Landlock forbids mounting once it is
/// in force and the capability drop takes the right to mount; seccomp last, since it
/// refuses the calls the earlier steps make).
pub fn confine(cmd: &mut tokio::process::Command, policy: &Policy) -> Result<Layers, SandboxError> {
    let mut layers = Layers::default();
    let applied = namespace::apply(cmd, policy);
    layers.read_only_git = applied.git;
    layers.read_only_files = applied.files;
    layers.network_namespace = applied.network;
    layers.pid_namespace = applied.pid;
    layers.read_only_world = applied.world;
    caps::drop_all(cmd);
    if let SandboxStatus::Available { abi } = status() {
        landlock::restrict(cmd, policy)?;
        layers.landlock_abi = abi;
    }
    layers.seccomp = seccomp::install(cmd, policy.network);
    Ok(layers)
}

/// The kernel's Landlock support, probed once per process.
pub fn status() -> SandboxStatus {
    static STATUS: OnceLock<SandboxStatus> = OnceLock::new();
    STATUS.get_or_init(probe).clone()
}

fn probe() -> SandboxStatus {
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: landlock_create_ruleset with a null attribute pointer, size 0 and the
        // VERSION flag only returns the ABI version (or an error); it touches no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        if v >= 1 {
            return SandboxStatus::Available {
                abi: i32::try_from(v).unwrap_or(i32::MAX),
            };
        }
        let err = std::io::Error::last_os_error();
        let reason = match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built into this kernel but not enabled at boot".to_string()
            }
            Some(libc::ENOSYS) => "this kernel has no Landlock (needs Linux 5.13+)".to_string(),
            _ => format!("Landlock probe failed: {err}"),
        };
        SandboxStatus::Unavailable { reason }
    }
    #[cfg(not(target_os = "linux"))]
    {
        SandboxStatus::Unavailable {
            reason: "Landlock exists only on Linux".into(),
        }
    }
}

/// The session's one line about what the sandbox enforces on this machine.
pub fn note(policy: &Policy) -> String {
    let landlock = status();
    let mut parts: Vec<String> = Vec::new();
    match &landlock {
        SandboxStatus::Available { abi } => {
            parts.push(format!(
                "run commands are sandboxed with Landlock (ABI {abi}): writes only inside the repository, a temp dir and agent.writable_roots"
            ));
            if *abi < 6 {
                parts.push(
                    "signals to other processes are NOT blocked (needs Landlock ABI 6)".into(),
                );
            }
        }
        SandboxStatus::Unavailable { .. } => parts.push(landlock.message()),
    }
    let plan = namespace::plan();
    let ns = plan.mount;
    parts.push(if plan.pid {
        "each command has its own PID namespace: nothing it starts outlives it, and it sees no other process".into()
    } else {
        "commands share handoff's PID namespace (none can be made here): their trees are killed by a walk over /proc, and they can see other processes".into()
    });
    parts.push(if plan.world {
        "everything outside the writable roots is read-only, metadata included".into()
    } else {
        "metadata (mode, owner, times, xattrs) outside the writable roots is NOT protected (no read-only mount view here)".into()
    });
    if policy.read_only.is_some() {
        parts.push(if ns {
            ".git is read-only".into()
        } else {
            ".git is writable (no mount namespace here); changes are detected and reported".into()
        });
    }
    if !policy.read_only_files.is_empty() {
        let n = policy.read_only_files.len();
        parts.push(if ns {
            format!("{n} protected file(s) are read-only")
        } else {
            format!(
                "{n} protected file(s) are writable by commands (no mount namespace here); changes are undone after each step"
            )
        });
    }
    if policy.network {
        parts.push("network and local sockets are open (agent.network = true)".into());
    } else {
        parts.push(format!(
            "network and local sockets are off ({})",
            if ns {
                "network namespace + seccomp"
            } else {
                "seccomp"
            }
        ));
    }
    parts.push(match policy.readable {
        Some(_) => "reads limited to system dirs, the repository and agent.readable_roots".into(),
        None => "reads are NOT restricted (set agent.readable_roots)".into(),
    });
    parts.join("; ")
}

/// What this machine lets the sandbox enforce, one line per layer, for `handoff doctor`:
/// a layer the kernel lacks is named with what goes unenforced without it.
pub fn doctor_lines() -> Vec<String> {
    let mut out = vec![match status() {
        SandboxStatus::Available { abi } if abi >= 6 => {
            format!("landlock: ABI {abi}: writes confined, signals and abstract sockets scoped")
        }
        SandboxStatus::Available { abi } => format!(
            "landlock: ABI {abi}: writes confined; signals and abstract sockets NOT scoped (needs ABI 6, Linux 6.12)"
        ),
        SandboxStatus::Unavailable { reason } => {
            format!("landlock: unavailable ({reason}); writes are NOT confined")
        }
    }];
    let plan = namespace::plan();
    out.push(if !plan.mount {
        "namespaces: none can be made here (no CAP_SYS_ADMIN and no user namespaces): .git \
         and protected files are writable (changes are undone after each step), metadata \
         outside is NOT protected, command trees are killed by a /proc walk"
            .into()
    } else {
        let how = if plan.user {
            "inside a user namespace"
        } else {
            "directly (privileged)"
        };
        let mut parts = vec!["mount (.git and protected files read-only)".to_string()];
        parts.push(if plan.pid {
            "PID with its own /proc".into()
        } else {
            "no PID namespace (command trees are killed by a /proc walk)".into()
        });
        parts.push(if plan.world {
            "read-only world, metadata included (mount_setattr)".into()
        } else {
            "NO read-only world (needs mount_setattr, Linux 5.12): metadata outside is not protected".into()
        });
        format!("namespaces: made {how}: {}", parts.join(", "))
    });
    out.push(
        if cfg!(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )) {
            "seccomp: device nodes, file handles, mounts, namespaces, tracing, keyring, TIOCSTI, \
             others' limits refused; sockets too without network"
                .into()
        } else {
            "seccomp: no filter for this architecture".into()
        },
    );
    out.push("capabilities: every set emptied, no_new_privs".into());
    // Issue 32 named bubblewrap as the anchor; handoff reaches the same properties with its
    // own namespaces, so whether it is installed changes nothing, and the line says so
    // rather than leave the reader to wonder.
    out.push(match on_path("bwrap") {
        Some(path) => format!(
            "bubblewrap: installed ({}), not used: handoff makes the namespaces itself",
            path.display()
        ),
        None => "bubblewrap: not installed, not needed: handoff makes the namespaces itself".into(),
    });
    out.push(
        "caps per command: files up to agent.max_write_mib (RLIMIT_FSIZE); processes and \
         resident memory of its tree polled against agent.max_processes and \
         agent.max_memory_mib (plus RLIMIT_DATA per process)"
            .into(),
    );
    out
}

/// The first `name` on `$PATH` that is a file, as a shell would find it.
fn on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
