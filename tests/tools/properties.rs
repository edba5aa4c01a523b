//! Properties: the patch engine inverts real diffs, and no path resolves outside the root.
//! Case counts are modest here; `--features stress` multiplies them.

use std::os::unix::fs::symlink;
use std::path::Path;

use handoff::agent::confine::{Access, Confinement};
use handoff::agent::tools::OutcomeKind;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use super::{workspace, write};

fn config(n: u32) -> Config {
    let cases = if cfg!(feature = "stress") { n * 40 } else { n };
    Config {
        failure_persistence: None,
        ..Config::with_cases(cases)
    }
}

/// Text from a tiny alphabet, so lines repeat and placement has to choose among matches.
fn text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "c", "", "  x", "}"]),
            0..40,
        ),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline)| {
            let mut s = lines.join("\n");
            if final_newline && !s.is_empty() {
                s.push('\n');
            }
            s
        })
}

fn git_diff(old: &str, new: &str, context: u32) -> String {
    let mut opts = git2::DiffOptions::new();
    opts.context_lines(context);
    let mut patch = git2::Patch::from_buffers(
        old.as_bytes(),
        Some(Path::new("f.txt")),
        new.as_bytes(),
        Some(Path::new("f.txt")),
        Some(&mut opts),
    )
    .expect("diff");
    let buf = patch.to_buf().expect("buf");
    buf.as_str().expect("utf-8").to_string()
}

#[test]
fn applying_a_git_diff_turns_the_old_text_into_the_new() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut runner = TestRunner::new(config(200));
    runner
        .run(&(text(), text(), 0u32..4), |(old, new, context)| {
            prop_assume!(old != new);
            let dir = tempfile::tempdir().expect("tempdir");
            write(dir.path(), "f.txt", &old);
            let patch = git_diff(&old, &new, context);
            let ws = workspace(dir.path());
            let args = serde_json::json!({"patch": patch}).to_string();
            let out = runtime.block_on(ws.execute("apply_patch", &args));
            prop_assert!(out.ok, "{patch}\n{}", out.output);
            let got = std::fs::read_to_string(dir.path().join("f.txt")).expect("read");
            prop_assert_eq!(got, new, "{}", patch);
            Ok(())
        })
        .expect("property");
}

#[test]
fn a_patch_against_the_wrong_text_is_rejected_and_changes_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut runner = TestRunner::new(config(100));
    runner
        .run(&(text(), text(), text()), |(old, new, other)| {
            prop_assume!(old != new);
            let dir = tempfile::tempdir().expect("tempdir");
            write(dir.path(), "f.txt", &other);
            let patch = git_diff(&old, &new, 3);
            let ws = workspace(dir.path());
            let args = serde_json::json!({"patch": patch}).to_string();
            let out = runtime.block_on(ws.execute("apply_patch", &args));
            let got = std::fs::read_to_string(dir.path().join("f.txt")).expect("read");
            if out.ok {
                // It may fit the other text too; then the change is a real application.
                prop_assert_eq!(out.kind, OutcomeKind::Ok);
            } else {
                prop_assert_eq!(out.kind, OutcomeKind::PatchRejected, "{}", out.output);
                prop_assert_eq!(got, other);
            }
            Ok(())
        })
        .expect("property");
}

#[test]
fn no_path_resolves_outside_the_root_or_writes_into_git() {
    let repo = tempfile::tempdir().expect("repo");
    let out = tempfile::tempdir().expect("outside");
    let root = repo.path().canonicalize().expect("canon");
    write(&root, "src/lib.rs", "");
    write(&root, ".git/HEAD", "");
    symlink(out.path(), root.join("out")).expect("link");
    symlink("..", root.join("src/parent")).expect("link");
    symlink("../..", root.join("src/grandparent")).expect("link");
    symlink(root.join(".git"), root.join("g")).expect("link");
    symlink(root.join("loop"), root.join("loop")).expect("link");
    let confine = Confinement::new(&root).expect("confine");
    let component = prop::sample::select(vec![
        "..",
        ".",
        "src",
        "lib.rs",
        "out",
        "parent",
        "grandparent",
        ".git",
        ".GIT",
        "g",
        "loop",
        "new",
        "",
        "．．",
        "..\\",
    ]);
    let path = (any::<bool>(), prop::collection::vec(component, 1..8)).prop_map(
        move |(absolute, parts)| {
            let rel = parts.join("/");
            if absolute {
                format!("{}/{rel}", "/tmp")
            } else {
                rel
            }
        },
    );
    let mut runner = TestRunner::new(config(2000));
    runner
        .run(&(path, any::<bool>()), |(path, write_access)| {
            let access = if write_access {
                Access::Write
            } else {
                Access::Read
            };
            if let Ok(resolved) = confine.resolve(&path, access) {
                prop_assert!(
                    resolved.abs.starts_with(&root),
                    "{path} -> {:?}",
                    resolved.abs
                );
                if let Ok(canonical) = resolved.abs.canonicalize() {
                    prop_assert!(canonical.starts_with(&root), "{path} -> {canonical:?}");
                }
                if write_access {
                    let inside_git = resolved
                        .rel
                        .components()
                        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"));
                    prop_assert!(!inside_git, "{path} -> {:?}", resolved.rel);
                }
            }
            Ok(())
        })
        .expect("property");
}
