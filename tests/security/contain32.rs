//! Issue 32's acceptance points that had no test through the binary for one side: a
//! `nobody` command's capabilities inside its user namespace, index flags set where `.git`
//! is writable, and `calibrate` on a forged tick under an address-space cap.

use std::os::unix::process::CommandExt as _;

use super::hostile::{
    CAPABILITY_PROBE, assert_file_handles_refused, assert_no_capabilities, assert_nothing_hidden,
    assert_nothing_made, exec_configured, file_handle_probe, root, users, who,
};
use crate::agent::support::repo;

/// Deliver 1 for a normal user: the user namespace that lets `nobody` make the others
/// gives full capabilities inside it; the command must still start with every set empty,
/// `no_new_privs`, no device node and no file handle (root's side is
/// `hostile::a_root_command_has_no_capabilities_devices_or_file_handles`).
#[tokio::test]
async fn a_nobody_command_has_no_capabilities_in_its_user_namespace() {
    let plan = handoff::agent::sandbox::namespace::plan();
    if !(root() && plan.pid && plan.world) {
        eprintln!("skipped: needs root (to become nobody) and namespaces");
        return;
    }
    let mut command = String::from(CAPABILITY_PROBE);
    command.push_str(
        "mknod blk b 7 0 && echo MKNOD-BLOCK-MADE; mknod chr c 1 3 && echo MKNOD-CHAR-MADE; \
         hostname handoff-hostile && echo HOSTNAME-SET; unshare -r true && echo UNSHARE-DONE; ",
    );
    command.push_str(&file_handle_probe());
    let dir = repo(&[("notes.txt", "hi\n")]);
    let s = exec_configured(&command, dir.path(), Some(65534), true, |_| {}, |_| {}).await;
    assert_no_capabilities(&s.output, "nobody");
    assert_nothing_made(
        &s.output,
        dir.path(),
        &[
            "MKNOD-BLOCK-MADE",
            "MKNOD-CHAR-MADE",
            "HOSTNAME-SET",
            "UNSHARE-DONE",
        ],
        "nobody",
    );
    assert_file_handles_refused(&s.output, "nobody");
}

/// Deliver 4's index flags where they can land (no namespace: `.git` writable, as a
/// normal user without user namespaces would have it): `skip-worktree` and
/// `assume-unchanged` set by a command are cleared after it, the call says so, and the
/// session exits 5 with the summary's `repaired` line; as root and as `nobody`.
#[tokio::test]
async fn index_flags_a_command_sets_are_cleared_reported_and_exit_5() {
    for user in users() {
        let dir = repo(&[("notes.txt", "hi\n"), ("other.txt", "o\n")]);
        let command = "echo edited >> notes.txt; git update-index --skip-worktree notes.txt \
                       && echo FLAG-SET; echo edited >> other.txt; \
                       git update-index --assume-unchanged other.txt && echo FLAG-SET";
        let s = exec_configured(command, dir.path(), user, false, |_| {}, |_| {}).await;
        let who = who(user);
        assert!(
            s.output.contains("FLAG-SET"),
            "{who}: the flags landed: {}",
            s.output
        );
        for path in ["notes.txt", "other.txt"] {
            assert!(
                s.output.contains(&format!(
                    "{path} was hidden from git status (skip-worktree/assume-unchanged); the flag is cleared"
                )),
                "{who}: {path}: {}",
                s.output
            );
        }
        assert_nothing_hidden(dir.path(), who);
        assert_eq!(s.code, Some(5), "{who}: {}", s.stdout);
        assert!(
            s.stdout
                .contains("repaired     1 step(s) changed git metadata"),
            "{who}: {}",
            s.stdout
        );
    }
}

/// Deliver 8: `calibrate` on a log whose tick jumps to 10¹² (as a float) or 10¹⁵ once
/// allocated without bound (6.2 GB in 6 s; aborted with 134 under a cap). Under a 2 GiB
/// address-space limit the binary ends on its own, naming each forged line.
#[test]
fn calibrate_on_a_forged_tick_ends_within_a_memory_cap_and_names_the_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("forged.jsonl");
    let lines = [
        r#"{"v":1,"handoff":"0.1.0","config_digest":"x"}"#,
        r#"{"t_ms":0,"type":"session_started","session_id":"s","task":"t","repo":"/r","junior_model":"j","senior_model":"s","policy":"constant","shadow":true,"config_digest":"x"}"#,
        r#"{"t_ms":1,"type":"belief_updated","tick":1,"belief":0.5,"log_odds":0.0,"threshold":0.1,"policy":"constant","terms":[]}"#,
        r#"{"t_ms":2,"type":"belief_updated","tick":1e12,"belief":0.5,"log_odds":0.0,"threshold":0.1,"policy":"constant","terms":[]}"#,
        r#"{"t_ms":2,"type":"belief_updated","tick":1000000000000000,"belief":0.5,"log_odds":0.0,"threshold":0.1,"policy":"constant","terms":[]}"#,
        r#"{"t_ms":3,"type":"session_ended","outcome":"success","censored":false,"steps":1,"ticks":1,"usd":0.0,"ask":{"tp":0,"fp":0,"fn":0}}"#,
    ];
    std::fs::write(&log, lines.join("\n") + "\n").expect("write");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"));
    cmd.arg("calibrate")
        .arg(&log)
        .stdin(std::process::Stdio::null());
    // SAFETY: one setrlimit call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run handoff");
    let err = String::from_utf8_lossy(&out.stderr);
    // A clean end (the one session cannot be fitted: 3), never a signal or an abort.
    assert!(
        matches!(out.status.code(), Some(0 | 3 | 4)),
        "{:?}: {err}",
        out.status
    );
    assert!(
        err.contains("forged.jsonl:4") && err.contains("forged.jsonl:5"),
        "each forged line is named: {err}"
    );
    assert!(
        err.contains("past the largest a session can reach"),
        "{err}"
    );
}
