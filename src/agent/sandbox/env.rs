//! The environment of a command: an allow-list, not a deny-list.
//!
//! A deny-list by name misses `OPENAI_KEY`, `GH_PAT` or a `DATABASE_URL` with a password in
//! it, and passes the sockets (`TMUX`, `SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`,
//! `DISPLAY`, `WAYLAND_DISPLAY`) that let a command act outside any sandbox. So a command
//! sees only the variables a shell and the usual toolchains need, plus those the user names
//! in `agent.env_pass`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::denial::normalise;

/// Variables every command keeps when they are set.
pub const ALLOWED: &[&str] = &[
    // The shell and the user.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    // Rust.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_JOBS",
    "CARGO_INCREMENTAL",
    "RUST_BACKTRACE",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GO111MODULE",
    "GOTOOLCHAIN",
    // Python.
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    // JavaScript, Java, Ruby, .NET.
    "NODE_PATH",
    "NVM_DIR",
    "JAVA_HOME",
    "GRADLE_USER_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "DOTNET_ROOT",
    // C and C++ builds.
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "CMAKE_PREFIX_PATH",
    "MAKEFLAGS",
    // Where caches and configuration live; certificates.
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Variables naming a socket or a display a command could use to act outside the sandbox;
/// never passed, even by `agent.env_pass`, unless the network is on.
pub const IPC: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "STY",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
    "KITTY_LISTEN_ON",
];

/// Whether `name` is kept in a command's environment.
pub fn allowed(name: &str, pass: &[String]) -> bool {
    ALLOWED.contains(&name) || name.starts_with("LC_") || pass.iter().any(|p| p == name)
}

/// The variables of this process a command keeps: the allow-list and `pass`, minus
/// `never` (the models' API key variables, whatever the user passes), minus the sockets
/// of [`IPC`] unless the command may use the network (then `pass` can name them).
///
/// Python never writes bytecode caches for a command: it checks a cached `.pyc` against the
/// source's size and its mtime in whole seconds, so an edit made in the same second as the
/// last run that keeps the file's size (`x + 2` → `2 * x`) would be tested as the old code.
/// The harness edits and checks well within a second; the repository also stays free of
/// `__pycache__`.
pub fn command_env(pass: &[String], never: &[String], network: bool) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            k.to_str().is_some_and(|k| {
                allowed(k, pass) && !never.iter().any(|n| n == k) && (network || !IPC.contains(&k))
            })
        })
        .filter(|(k, _)| k != "PYTHONDONTWRITEBYTECODE")
        .collect();
    env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
    env
}

/// Variables naming where a build writes its output, which the sandbox must let it write.
const OUTPUT_DIRS: &[&str] = &["CARGO_TARGET_DIR"];

/// Drops each of [`OUTPUT_DIRS`] whose directory lies outside `writable` (a relative value
/// is taken from `cwd`, the directory commands start in).
///
/// A user who exports `CARGO_TARGET_DIR=~/.cache/target` for every project would otherwise
/// see every `cargo build` a command or the check runs refused by the sandbox, however
/// harmless. Without the variable cargo writes `target/` in the repository, which Rust
/// projects ignore; a user who wants the shared directory adds it to `agent.writable_roots`
/// and the variable is kept.
pub fn writable_outputs(
    env: Vec<(OsString, OsString)>,
    cwd: &Path,
    writable: &[PathBuf],
) -> Vec<(OsString, OsString)> {
    env.into_iter()
        .filter(|(k, v)| {
            if !OUTPUT_DIRS.iter().any(|n| k == n) {
                return true;
            }
            // By name: a symlink at worst drops a variable the sandbox would refuse anyway.
            let dir = normalise(&cwd.join(v));
            writable.iter().any(|w| dir.starts_with(normalise(w)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_dir_outside_the_writable_dirs_is_dropped_one_inside_kept() {
        let env = |v: &str| {
            vec![
                (OsString::from("PATH"), OsString::from("/usr/bin")),
                (OsString::from("CARGO_TARGET_DIR"), OsString::from(v)),
            ]
        };
        let repo = Path::new("/work/repo");
        let writable = vec![repo.to_path_buf(), PathBuf::from("/tmp/session")];
        let kept = |v: &str| {
            writable_outputs(env(v), repo, &writable)
                .iter()
                .any(|(k, _)| k == "CARGO_TARGET_DIR")
        };
        assert!(!kept("/home/u/.cache/target"));
        assert!(!kept("../shared-target"));
        assert!(!kept("/work/repo/../other"));
        assert!(kept("target"));
        assert!(kept("/work/repo/build/target"));
        assert!(kept("/tmp/session/t"));
        // Other variables are never touched.
        assert_eq!(
            writable_outputs(env("/elsewhere"), repo, &writable).len(),
            1
        );
    }

    #[test]
    fn sockets_and_secrets_are_not_on_the_list() {
        for name in IPC {
            assert!(!allowed(name, &[]), "{name}");
        }
        for name in [
            "OPENAI_KEY",
            "GH_PAT",
            "DATABASE_URL",
            "HF_AUTH",
            "MY_API_KEY",
        ] {
            assert!(!allowed(name, &[]), "{name}");
        }
        for name in ["PATH", "HOME", "LC_ALL", "CARGO_HOME", "VIRTUAL_ENV"] {
            assert!(allowed(name, &[]), "{name}");
        }
        assert!(allowed("MY_TOOL_HOME", &["MY_TOOL_HOME".to_string()]));
    }
}
