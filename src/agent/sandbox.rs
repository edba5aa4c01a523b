//! Landlock for `run`: the command may write only inside the repository, the session's
//! temp dir and `/dev`; reads are not restricted (compilers read system headers, toolchains
//! and caches all over the disk).
//!
//! The ruleset is built in the parent, where allocating and opening the directories is
//! safe; the child only calls `restrict_self` between fork and exec, which on success makes
//! two system calls (`prctl(NO_NEW_PRIVS)` and `landlock_restrict_self`) and nothing else.
//! Where the kernel lacks Landlock the command runs unconfined and [`status`] says so in
//! one line, for the session to show once.

use std::path::PathBuf;
use std::sync::OnceLock;

#[cfg(target_os = "linux")]
use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};

/// The newest Landlock ABI whose write rights this build asks for; older kernels get the
/// subset they know (best effort), which still confines writes of ABI 1 (Linux 5.13).
#[cfg(target_os = "linux")]
const TARGET_ABI: ABI = ABI::V5;

/// Whether the running kernel can sandbox commands.
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

/// Errors building the ruleset.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("landlock: {0}")]
    Ruleset(String),
    #[error("cannot open {path} for the sandbox: {message}")]
    Path { path: String, message: String },
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

/// Makes `cmd`'s child restrict itself to writing beneath `writable` (plus `/dev`).
#[cfg(not(target_os = "linux"))]
pub fn restrict_writes(
    _cmd: &mut tokio::process::Command,
    _writable: &[PathBuf],
) -> Result<(), SandboxError> {
    Err(SandboxError::Ruleset(
        "Landlock exists only on Linux".into(),
    ))
}

/// Makes `cmd`'s child restrict itself to writing beneath `writable` (plus `/dev`).
#[cfg(target_os = "linux")]
pub fn restrict_writes(
    cmd: &mut tokio::process::Command,
    writable: &[PathBuf],
) -> Result<(), SandboxError> {
    let rights = AccessFs::from_write(TARGET_ABI);
    let err = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(rights)
        .map_err(err)?
        .create()
        .map_err(err)?;
    let dev = PathBuf::from("/dev");
    for dir in writable.iter().chain(std::iter::once(&dev)) {
        let fd = PathFd::new(dir).map_err(|e| SandboxError::Path {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(err)?;
    }
    let mut slot = Some(ruleset);
    // SAFETY: the closure runs in the child between fork and exec. It only moves a value out
    // of an Option and calls `restrict_self`, whose success path is two system calls with no
    // allocation or locking; the error is returned as a raw OS error (no allocation).
    unsafe {
        cmd.pre_exec(move || match slot.take() {
            Some(ruleset) => match ruleset.restrict_self() {
                Ok(_) => Ok(()),
                Err(_) => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            },
            None => Ok(()),
        });
    }
    Ok(())
}
