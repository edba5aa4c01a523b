//! Issue 32, attack 7: a link the model planted must not steer `restore`. Step 1 writes
//! `notes/authorized_keys`; step 2 replaces `notes` by a symlink to a directory outside
//! the repository and ignores it. Restoring step 1, and step 0 (the summary's own undo
//! command), then wrote the key through the link. `diff` must not read through a link
//! either: a second link points at a secret outside.

use std::ffi::OsStr;

use handoff::demo::script::{confident, reply};
use handoff::demo::server::Script;
use serde_json::json;

use crate::agent::support::{FILES, bin, config, finish, repo, servers, write_config};

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[tokio::test]
async fn restore_removes_a_planted_link_instead_of_writing_through_it() {
    let outside = tempfile::tempdir().expect("outside");
    let secrets = tempfile::tempdir().expect("secrets");
    let secret = secrets.path().join("secret.txt");
    std::fs::write(&secret, "OUTSIDE-SECRET\n").expect("secret");
    let plant = format!(
        "rm -rf notes && ln -s '{}' notes && printf 'notes\\n' >> .gitignore && \
         ln -s '{}' leak.txt && echo planted",
        outside.path().display(),
        secret.display()
    );
    let junior = Script::new(vec![
        reply(
            confident("Writing."),
            Some((
                "c1",
                "write_file",
                json!({"path": "notes/authorized_keys", "content": "ssh-ed25519 ATTACKER\n"}),
            )),
        ),
        reply(
            confident("Running."),
            Some(("c2", "run", json!({"command": plant}))),
        ),
        finish(),
    ]);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let home = tempfile::tempdir().expect("home");
    let dir = repo(&FILES);
    let root = dir.path();
    let cfg = write_config(home.path(), &config(&j, &s));
    let log = home.path().join("s.jsonl");
    let ran = bin(
        home.path(),
        &[
            os("exec"),
            os("--repo"),
            root.as_os_str(),
            os("--config"),
            cfg.as_os_str(),
            os("--log"),
            log.as_os_str(),
            os("--json"),
            os("plant a link"),
        ],
        None,
        &[],
    )
    .await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        std::fs::symlink_metadata(root.join("notes")).is_ok_and(|m| m.file_type().is_symlink()),
        "the command planted the link"
    );
    let last = ran.stdout.lines().last().expect("summary");
    let summary: serde_json::Value = serde_json::from_str(last).expect("json");
    let session = summary["session"].as_str().expect("session").to_string();
    let diff = bin(
        home.path(),
        &[os("diff"), os(&session), os("--repo"), root.as_os_str()],
        None,
        &[],
    )
    .await;
    assert_eq!(diff.code, Some(0), "diff: {}", diff.stderr);
    assert!(
        diff.stdout.contains("leak.txt") && !diff.stdout.contains("OUTSIDE-SECRET"),
        "diff read through the planted link: {}",
        diff.stdout
    );
    let key = outside.path().join("authorized_keys");
    // Step 0 first (the summary's undo, with the link in place), then step 1, whose file
    // lies beneath the link.
    for step in ["0", "1"] {
        let out = bin(
            home.path(),
            &[
                os("restore"),
                os(&session),
                os(step),
                os("--force"),
                os("--repo"),
                root.as_os_str(),
            ],
            None,
            &[],
        )
        .await;
        assert_eq!(out.code, Some(0), "restore {step}: {}", out.stderr);
        assert!(
            !key.exists(),
            "restore {step} wrote through the planted link"
        );
    }
    let notes = std::fs::symlink_metadata(root.join("notes"));
    assert!(
        notes.is_ok_and(|m| m.is_dir()),
        "restore 1 replaced the planted link by the checkpoint's directory"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes/authorized_keys")).expect("restored"),
        "ssh-ed25519 ATTACKER\n"
    );
    assert!(
        std::fs::read_dir(outside.path())
            .expect("outside")
            .next()
            .is_none(),
        "nothing was written outside"
    );
}
