//! The Landlock ruleset of a command: write rules, optional read rules, TCP and scopes.
//!
//! The ruleset is built in the parent; the child only calls `restrict_self` between fork
//! and exec, which on success makes two system calls (`prctl(NO_NEW_PRIVS)` and
//! `landlock_restrict_self`) and nothing else. Older kernels get the subset of rights they
//! know (best effort), which still confines writes from ABI 1 (Linux 5.13).

use std::path::{Path, PathBuf};

use super::{Policy, SandboxError};

/// Device files any build or test may write; the rest of `/dev` (the user's terminals,
/// `/dev/shm`) is not writable.
pub const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Directories every program reads (loader, libraries, toolchains, configuration) when
/// `agent.readable_roots` restricts reads.
pub const SYSTEM_READABLE: [&str; 11] = [
    "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/proc", "/sys", "/dev",
];

#[cfg(not(target_os = "linux"))]
pub fn restrict(_cmd: &mut tokio::process::Command, _policy: &Policy) -> Result<(), SandboxError> {
    Err(SandboxError::Ruleset(
        "Landlock exists only on Linux".into(),
    ))
}

#[cfg(target_os = "linux")]
pub fn restrict(cmd: &mut tokio::process::Command, policy: &Policy) -> Result<(), SandboxError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope,
    };
    let err = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
    // ABI 9 adds connecting to pathname unix sockets to the write rights; without network
    // that is wanted (seccomp covers older kernels), with network it would break ssh-agent.
    let abi = if policy.network { ABI::V8 } else { ABI::V9 };
    let write = AccessFs::from_write(abi);
    let read = AccessFs::from_read(abi);
    let mut handled = write;
    if policy.readable.is_some() {
        handled |= read;
    }
    let mut attr = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(err)?;
    if !policy.network {
        attr = attr
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(err)?;
    }
    let mut scopes: landlock::BitFlags<Scope> = Scope::Signal.into();
    if !policy.network {
        scopes |= Scope::AbstractUnixSocket;
    }
    attr = attr.scope(Scope::from_all(ABI::V6) & scopes).map_err(err)?;
    let file_rights = AccessFs::from_file(abi);
    let mut rules: Vec<PathBeneath<PathFd>> = Vec::new();
    let mut add = |path: &Path, rights: landlock::BitFlags<AccessFs>| -> Result<(), SandboxError> {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            // A system directory this machine does not have (/lib32) grants nothing.
            Err(_) if !path.exists() => return Ok(()),
            Err(e) => {
                return Err(SandboxError::Path {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        let rights = if path.is_dir() {
            rights
        } else {
            rights & file_rights
        };
        rules.push(PathBeneath::new(fd, rights));
        Ok(())
    };
    let both = if policy.readable.is_some() {
        write | read
    } else {
        write
    };
    for dir in &policy.writable {
        add(dir, both)?;
    }
    for dev in DEVICES {
        add(Path::new(dev), both)?;
    }
    if let Some(readable) = &policy.readable {
        let system = SYSTEM_READABLE.iter().map(PathBuf::from);
        for dir in system.chain(readable.iter().cloned()) {
            add(&dir, read)?;
        }
    }
    let ruleset = attr
        .create()
        .map_err(err)?
        .add_rules(rules.into_iter().map(Ok::<_, landlock::RulesetError>))
        .map_err(err)?;
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
