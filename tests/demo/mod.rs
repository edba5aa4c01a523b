//! The zero-setup demo, headless: a real session between scripted models on loopback.

use handoff::protocol::{Event, Outcome, Route};

#[tokio::test]
async fn the_headless_demo_passes_its_check_after_asking_the_operator_and_the_senior() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("demo.jsonl");
    let summary = handoff::demo::run::demo(true, Some(log.clone()))
        .await
        .expect("the demo runs")
        .expect("headless returns a summary");
    assert_eq!(summary.outcome, Outcome::Success);
    let routes: Vec<Route> = summary.escalations.iter().map(|e| e.route).collect();
    assert!(routes.contains(&Route::Operator), "{routes:?}");
    assert!(routes.contains(&Route::Senior), "{routes:?}");
    for e in &summary.escalations {
        assert!(e.belief < e.threshold, "{e:?}");
        assert!(!e.shadow);
    }
    assert_eq!(summary.ask.tp, 1, "the operator marked the question needed");
    let events = super::agent::support::read_log(&log);
    let check = events.iter().find_map(|e| match e {
        Event::CheckRan {
            passed, command, ..
        } => Some((*passed, command.clone())),
        _ => None,
    });
    assert_eq!(check, Some((true, "cargo test --quiet".to_string())));
    // The operator's answer reached the junior, and the senior's step changed the file.
    assert!(
        events.iter().any(
            |e| matches!(e, Event::OperatorAnswered { answer, .. } if answer == "stay an error")
        )
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SeniorReturned { .. }))
    );
}

/// A user who exports `CARGO_TARGET_DIR` for every project: the demo's `cargo test` (the
/// scripted `run` and the check) must still pass inside the sandbox, which may not write
/// there. Through the binary, so the variable reaches the session as it would a user's.
#[test]
fn the_demo_passes_with_a_cargo_target_dir_outside_the_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = dir.path().join("shared-target");
    let log = dir.path().join("demo.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_handoff"))
        .args(["demo", "--headless", "--log"])
        .arg(&log)
        .env("CARGO_TARGET_DIR", &shared)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("handoff demo starts");
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let events = super::agent::support::read_log(&log);
    let passed = events
        .iter()
        .any(|e| matches!(e, Event::CheckRan { passed: true, .. }));
    assert!(passed, "the check passed");
    assert!(
        !shared.exists(),
        "nothing was built in the directory the sandbox may not write"
    );
}
