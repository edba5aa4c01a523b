//! A `run` the sandbox refuses is a fault, not evidence: a scripted junior writes outside
//! the repository (as `cargo test` does with `CARGO_TARGET_DIR` elsewhere) through real
//! HTTP and a real sandboxed shell; the judge's `tool_error` stays 0, a `sandbox_denied`
//! fault is logged, and the model's tool result names the setting that allows the path.

use handoff::agent::sandbox::{SandboxStatus, status};
use handoff::agent::session::Approvals;
use handoff::demo::server::Script;
use handoff::protocol::{Event, SignalKind};

use super::support::{FILES, Ran, config, one_command, repo, run, servers};

/// The value of the `tool_error` fact at the end of step 1.
fn tool_error_of_step_one(ran: &Ran) -> Option<f64> {
    ran.events.iter().find_map(|e| match e {
        Event::StepEnded { step: 1, terms, .. } => terms
            .iter()
            .find(|t| t.signal == SignalKind::ToolError)
            .map(|t| t.value),
        _ => None,
    })
}

fn tool_output(ran: &Ran) -> String {
    ran.events
        .iter()
        .find_map(|e| match e {
            Event::ToolResulted { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn faults(ran: &Ran) -> Vec<(String, String)> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            Event::Fault { kind, message, .. } => Some((kind.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

async fn write_outside(sandbox: bool) -> (Ran, std::path::PathBuf, tempfile::TempDir) {
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("target").join("built.txt");
    let command = format!(
        "mkdir -p '{0}' && echo built > '{0}/built.txt'",
        target.parent().expect("parent").display()
    );
    let junior = one_command(&command);
    let (j, s) = servers(junior, Script::new(vec![])).await;
    let mut cfg = config(&j, &s);
    cfg.agent.sandbox = sandbox;
    let dir = repo(&FILES);
    let ran = run(cfg, dir.path(), "build it", vec![], Approvals::Granted).await;
    (ran, target, outside)
}

#[tokio::test]
async fn a_write_the_sandbox_refuses_is_a_fault_not_a_tool_error() {
    let landlock = matches!(status(), SandboxStatus::Available { .. });
    let (ran, target, _outside) = write_outside(true).await;
    if !landlock {
        // Nothing confines the command here: it succeeds, and nothing is called a denial.
        assert!(
            target.exists() && faults(&ran).is_empty(),
            "Landlock is unavailable on this machine ({:?}), so the denial itself could not be \
             tested; the unconfined write must succeed and log no fault",
            status()
        );
    } else {
        assert!(
            !target.exists(),
            "the sandbox let the command write outside"
        );
        assert_eq!(
            tool_error_of_step_one(&ran),
            Some(0.0),
            "a sandbox denial is not the model's tool_error; the tool said: {}",
            tool_output(&ran)
        );
        let faults = faults(&ran);
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert_eq!(faults[0].0, "sandbox_denied");
        let dir = target.parent().expect("parent").display().to_string();
        assert!(
            faults[0].1.contains(&dir),
            "the fault names the path: {}",
            faults[0].1
        );
        let output = tool_output(&ran);
        assert!(
            output.contains("agent.writable_roots") && output.contains(&dir),
            "the model is told the path and the setting: {output}"
        );
    }
}

#[tokio::test]
async fn without_the_sandbox_the_same_write_is_no_denial() {
    let (ran, target, _outside) = write_outside(false).await;
    assert!(
        target.exists(),
        "unconfined, the command writes where it likes"
    );
    assert!(faults(&ran).is_empty(), "{:?}", faults(&ran));
    assert_eq!(tool_error_of_step_one(&ran), Some(0.0));
    assert!(!tool_output(&ran).contains("sandbox denial"));
}
