//! Checkpoints as a user handles them: commits under `refs/handoff/`, secrets and ignored
//! files kept out of the object database, per-step diffs, guarded restores, pruning.

use std::time::{Duration, SystemTime};

use git2::{ObjectType, Oid, Repository};
use handoff::diffview::FileChange;
use handoff::repo::{PrunePolicy, Repo, RepoError};
use pretty_assertions::assert_eq;

use super::{commit_all, read, write};

fn fixture() -> (tempfile::TempDir, Repository) {
    let dir = tempfile::tempdir().expect("tempdir");
    let git = Repository::init(dir.path()).expect("init");
    write(dir.path(), ".gitignore", ".env\ntarget/\n");
    write(dir.path(), "src/lib.rs", "pub fn one() -> u32 { 1 }\n");
    commit_all(&git, "base");
    (dir, git)
}

fn blob_stored(git: &Repository, content: &str) -> bool {
    let oid = Oid::hash_object(ObjectType::Blob, content.as_bytes()).expect("hash");
    git.odb().expect("odb").exists(oid)
}

#[test]
fn checkpoints_are_commits_chained_from_head_outside_branches() {
    let (dir, git) = fixture();
    let root = dir.path();
    let head = git.head().expect("head").target().expect("oid");
    let repo = Repo::open(root).expect("open");
    let t0 = repo.checkpoint("s1", 0).expect("cp 0");
    write(root, "src/lib.rs", "pub fn one() -> u32 { 2 }\n");
    let t1 = repo.checkpoint("s1", 1).expect("cp 1");
    let t2 = repo.checkpoint("s1", 2).expect("cp 2 (no change)");
    assert_eq!(t1, t2, "an unchanged work tree has the same tree id");
    assert_ne!(t0, t1);

    let commit = |n: u32| {
        let r = git
            .find_reference(&format!("refs/handoff/s1/{n}"))
            .expect("ref");
        assert_eq!(
            r.peel(ObjectType::Any).expect("peel").kind(),
            Some(ObjectType::Commit),
            "a checkpoint ref names a commit, which every git GUI can show"
        );
        r.peel_to_commit().expect("commit")
    };
    assert_eq!(commit(0).parent_id(0).expect("parent"), head);
    assert_eq!(commit(1).parent_id(0).expect("parent"), commit(0).id());
    assert_eq!(commit(2).parent_id(0).expect("parent"), commit(1).id());
    assert_eq!(commit(1).tree_id().to_string(), t1);
    // Retaking a step's checkpoint chains to the step before, not to itself.
    repo.checkpoint("s1", 2).expect("cp 2 again");
    assert_eq!(commit(2).parent_id(0).expect("parent"), commit(1).id());

    assert_eq!(git.head().expect("head").target(), Some(head));
    let branches = git.branches(None).expect("branches").count();
    assert_eq!(branches, 1);
}

#[test]
fn ignored_and_secret_named_untracked_files_never_reach_the_object_database() {
    let (dir, git) = fixture();
    let root = dir.path();
    write(root, ".env", "API_KEY=ignored-secret-1\n");
    write(root, ".env.local", "API_KEY=unignored-secret-2\n");
    write(root, "deploy/id_ed25519", "PRIVATE unignored-secret-3\n");
    write(root, "target/out.bin", "build output 4\n");
    write(root, ".env.example", "API_KEY=\n");
    write(root, "notes.txt", "captured 5\n");
    let repo = Repo::open(root).expect("open");
    repo.checkpoint("s", 0).expect("cp");
    for content in [
        "API_KEY=ignored-secret-1\n",
        "API_KEY=unignored-secret-2\n",
        "PRIVATE unignored-secret-3\n",
        "build output 4\n",
    ] {
        assert!(!blob_stored(&git, content), "{content:?} was stored");
    }
    assert!(blob_stored(&git, "captured 5\n"));
    assert!(
        blob_stored(&git, "API_KEY=\n"),
        "templates are ordinary files"
    );

    // A file captured while not ignored leaves the next checkpoint once it is ignored.
    write(root, "scratch.log", "log\n");
    let with_log = repo.checkpoint("s", 1).expect("cp");
    write(root, ".gitignore", ".env\ntarget/\n*.log\n");
    let without = repo.checkpoint("s", 2).expect("cp");
    let d = repo.checkpoint_diff("s", Some(2)).expect("diff");
    assert_ne!(with_log, without);
    assert!(
        d.diff
            .files
            .iter()
            .any(|f| f.path == "scratch.log" && f.change == FileChange::Deleted),
        "{}",
        d.diff.text()
    );

    // What the user tracks is captured whatever its name.
    std::fs::write(root.join(".gitignore"), "target/\n").expect("write");
    write(root, ".env", "TRACKED=tracked-secret-6\n");
    commit_all(&git, "base");
    repo.checkpoint("s", 3).expect("cp");
    assert!(blob_stored(&git, "TRACKED=tracked-secret-6\n"));
}

#[test]
fn a_step_diff_names_renames_and_the_session_diff_spans_all_steps() {
    let (dir, git) = fixture();
    let root = dir.path();
    write(root, "dirty.txt", "uncommitted before the session\n");
    let repo = Repo::open(root).expect("open");
    repo.checkpoint("s", 0).expect("cp0");
    std::fs::rename(root.join("src/lib.rs"), root.join("src/core.rs")).expect("mv");
    repo.checkpoint("s", 1).expect("cp1");
    write(root, "src/core.rs", "pub fn one() -> u32 { 3 }\n");
    repo.checkpoint("s", 2).expect("cp2");

    let first = repo.checkpoint_diff("s", Some(0)).expect("diff 0");
    assert_eq!(
        (first.from.as_str(), first.to.as_str()),
        ("HEAD at start", "step 0")
    );
    assert_eq!(first.diff.files.len(), 1);
    assert_eq!(first.diff.files[0].path, "dirty.txt");
    assert_eq!(first.diff.files[0].change, FileChange::Added);

    let moved = repo.checkpoint_diff("s", Some(1)).expect("diff 1");
    assert_eq!(moved.from, "step 0");
    assert_eq!(moved.diff.lines[0].text, "renamed src/lib.rs → src/core.rs");

    let whole = repo.checkpoint_diff("s", None).expect("session diff");
    assert_eq!(
        (whole.from.as_str(), whole.to.as_str()),
        ("step 0", "step 2")
    );
    assert_eq!((whole.stat.insertions, whole.stat.deletions), (1, 1));
    assert!(
        whole.diff.text().contains("+pub fn one() -> u32 { 3 }\n"),
        "{}",
        whole.diff.text()
    );
    // A one-line file whose line changed is no rename by similarity: a deletion and an add.
    let changes: Vec<(&str, &FileChange)> = whole
        .diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), &f.change))
        .collect();
    assert_eq!(
        changes,
        vec![
            ("src/core.rs", &FileChange::Added),
            ("src/lib.rs", &FileChange::Deleted)
        ]
    );
    assert!(
        whole.stat.text.contains("2 files changed"),
        "{}",
        whole.stat.text
    );

    assert!(matches!(
        repo.checkpoint_diff("s", Some(9)),
        Err(RepoError::NoCheckpoint { .. })
    ));
    assert!(matches!(
        repo.checkpoint_diff("nope", None),
        Err(RepoError::NoSession(_))
    ));
    drop(git);
}

#[test]
fn restore_refuses_over_changes_no_checkpoint_holds_unless_forced() {
    let (dir, _git) = fixture();
    let root = dir.path();
    let repo = Repo::open(root).expect("open");
    repo.checkpoint("s", 0).expect("cp0");
    write(root, "src/lib.rs", "pub fn one() -> u32 { 2 }\n");
    repo.checkpoint("s", 1).expect("cp1");

    // The work tree equals step 1: going back and forth needs no force.
    let back = repo.restore_checkpoint("s", 0, false).expect("restore 0");
    assert_eq!((back.files_changed, back.saved_as.clone()), (1, None));
    assert_eq!(read(root, "src/lib.rs"), "pub fn one() -> u32 { 1 }\n");
    repo.restore_checkpoint("s", 1, false).expect("restore 1");
    assert_eq!(read(root, "src/lib.rs"), "pub fn one() -> u32 { 2 }\n");

    // The user edits after the session: refused, and nothing is touched.
    write(root, "src/lib.rs", "pub fn one() -> u32 { 42 } // mine\n");
    match repo.restore_checkpoint("s", 0, false) {
        Err(RepoError::Uncommitted { files, .. }) => assert_eq!(files, vec!["src/lib.rs"]),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        read(root, "src/lib.rs"),
        "pub fn one() -> u32 { 42 } // mine\n"
    );

    // Forced: restored, and the user's edit is kept as a checkpoint of its own.
    let forced = repo.restore_checkpoint("s", 0, true).expect("forced");
    assert_eq!(read(root, "src/lib.rs"), "pub fn one() -> u32 { 1 }\n");
    let name = forced.saved_as.expect("saved");
    assert!(name.starts_with("before-restore-"), "{name}");
    let sessions = repo.list_sessions().expect("list");
    let kept = sessions[0]
        .checkpoints
        .iter()
        .find(|c| c.name == name)
        .expect("kept checkpoint listed");
    assert_eq!(kept.step, None);
    repo.restore(&kept.tree).expect("undo the restore");
    assert_eq!(
        read(root, "src/lib.rs"),
        "pub fn one() -> u32 { 42 } // mine\n"
    );
}

#[test]
fn sessions_are_listed_newest_first_and_pruned_by_count_and_age() {
    let (dir, git) = fixture();
    let root = dir.path();
    let repo = Repo::open(root).expect("open");
    for s in ["a", "b", "c"] {
        repo.checkpoint(s, 0).expect("cp");
        repo.checkpoint(s, 1).expect("cp");
    }
    // An older-format session: a ref straight at a tree, no date.
    let tree = git.head().expect("head").peel_to_tree().expect("tree").id();
    git.reference("refs/handoff/legacy/0", tree, true, "old format")
        .expect("tree ref");
    let listed = repo.list_sessions().expect("list");
    let names: Vec<&str> = listed.iter().map(|s| s.session.as_str()).collect();
    assert_eq!(names.len(), 4);
    assert_eq!(names[3], "legacy", "undated sessions sort last: {names:?}");
    assert_eq!(listed[0].last_step(), Some(1));
    assert_eq!(listed[3].newest(), None);
    assert_eq!(
        repo.checkpoint_tree("legacy", 0).expect("tree ref read"),
        tree.to_string()
    );

    let by_count = repo
        .prune(
            PrunePolicy {
                max_age: None,
                max_count: Some(2),
            },
            SystemTime::now(),
        )
        .expect("prune");
    assert_eq!(by_count.kept, 2);
    assert_eq!(by_count.removed.len(), 2);
    assert_eq!(by_count.removed[0], "legacy", "oldest first");
    assert_eq!(by_count.refs_deleted, 3);
    assert_eq!(repo.list_sessions().expect("list").len(), 2);

    // A day later, a one-hour age limit removes the rest; a week's limit keeps them.
    let later = SystemTime::now() + Duration::from_secs(24 * 3600);
    let week = PrunePolicy {
        max_age: Some(Duration::from_secs(7 * 24 * 3600)),
        max_count: None,
    };
    assert_eq!(repo.prune(week, later).expect("prune").kept, 2);
    let hour = PrunePolicy {
        max_age: Some(Duration::from_secs(3600)),
        max_count: None,
    };
    let by_age = repo.prune(hour, later).expect("prune");
    assert_eq!((by_age.removed.len(), by_age.kept), (2, 0));
    assert!(repo.list_sessions().expect("list").is_empty());
    assert_eq!(PrunePolicy::default().max_count, Some(50));
}

#[test]
fn outside_a_repository_the_error_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    if Repository::discover(dir.path()).is_ok() {
        eprintln!("skipped: the temp dir is inside a git repository");
        return;
    }
    let err = Repo::open(dir.path()).expect_err("no repository");
    assert!(matches!(err, RepoError::NotARepository(_)), "{err:?}");
    assert!(
        err.to_string().contains("is not inside a git repository"),
        "{err}"
    );
}
