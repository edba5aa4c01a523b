//! Checkpoints: snapshot, diff, restore, on repositories with and without commits, without
//! touching the user's index, HEAD or branches.

use std::path::Path;

use git2::Repository;
use handoff::repo::Repo;
use pretty_assertions::assert_eq;

use super::{commit_all, read, write};

fn index_bytes(root: &Path) -> Option<Vec<u8>> {
    std::fs::read(root.join(".git/index")).ok()
}

#[test]
fn checkpoints_diff_and_restore_without_touching_index_or_branches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let git = Repository::init(root).expect("init");
    write(root, ".gitignore", "target/\n");
    write(root, "src/lib.rs", "pub fn one() -> u32 { 1 }\n");
    write(root, "README", "readme\n");
    commit_all(&git, "first");
    let head_before = git.head().expect("head").target().expect("oid").to_string();
    let index_before = index_bytes(root);

    let repo = Repo::open(&root.join("src")).expect("open from a subdirectory");
    assert_eq!(repo.head().as_deref(), Some(head_before.as_str()));
    let t0 = repo.checkpoint("s1", 0).expect("checkpoint 0");
    assert_eq!(repo.checkpoint_tree("s1", 0).expect("ref"), t0);
    // Same content, same tree: the no-diff signal.
    let t0b = repo.checkpoint("s1", 1).expect("checkpoint 1");
    assert!(!repo.changed(&t0, &t0b));

    write(root, "src/lib.rs", "pub fn one() -> u32 { 2 }\n");
    write(root, "src/new.rs", "// new\n");
    write(root, "target/junk.o", "ignored");
    std::fs::remove_file(root.join("README")).expect("rm");
    let t2 = repo.checkpoint("s1", 2).expect("checkpoint 2");
    assert!(repo.changed(&t0, &t2));

    let diff = repo.diff(&t0, &t2).expect("diff");
    assert!(
        diff.contains("diff --git a/src/lib.rs b/src/lib.rs"),
        "{diff}"
    );
    assert!(
        diff.contains("-pub fn one() -> u32 { 1 }\n+pub fn one() -> u32 { 2 }\n"),
        "{diff}"
    );
    assert!(diff.contains("+++ b/src/new.rs"), "{diff}");
    assert!(diff.contains("deleted file mode"), "{diff}");
    assert!(
        !diff.contains("junk"),
        "ignored files are not in checkpoints: {diff}"
    );
    let stat = repo.diff_stat(&t0, &t2).expect("stat");
    assert_eq!(
        (stat.files_changed, stat.insertions, stat.deletions),
        (3, 2, 2)
    );
    assert!(stat.text.contains("src/lib.rs"), "{}", stat.text);

    // The user's index, HEAD and branches are as they were.
    assert_eq!(index_bytes(root), index_before);
    assert_eq!(
        git.head().expect("head").target().expect("oid").to_string(),
        head_before
    );
    let branches: Vec<String> = git
        .branches(None)
        .expect("branches")
        .flatten()
        .filter_map(|(b, _)| b.name().ok().flatten().map(str::to_string))
        .collect();
    assert_eq!(branches.len(), 1, "{branches:?}");

    let before_restore = repo.restore(&t0).expect("restore");
    assert_eq!(before_restore, t2, "restore returns the tree it replaced");
    assert_eq!(read(root, "src/lib.rs"), "pub fn one() -> u32 { 1 }\n");
    assert_eq!(read(root, "README"), "readme\n");
    assert!(!root.join("src/new.rs").exists());
    assert_eq!(
        read(root, "target/junk.o"),
        "ignored",
        "ignored files survive a restore"
    );
    assert_eq!(repo.snapshot().expect("snapshot"), t0);
    assert_eq!(index_bytes(root), index_before);

    // And forward again.
    repo.restore(&t2).expect("restore forward");
    assert_eq!(repo.snapshot().expect("snapshot"), t2);

    repo.keep("s1", "before-restore", &before_restore)
        .expect("keep");
    assert_eq!(repo.checkpoint_tree("s1", 0).expect("ref"), t0);
    assert_eq!(repo.remove_checkpoints("s1").expect("remove"), 4);
    assert!(repo.checkpoint_tree("s1", 0).is_err());
    assert_eq!(repo.remove_checkpoints("s1").expect("remove again"), 0);
}

#[test]
fn tracked_files_that_match_an_ignore_pattern_stay_in_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let git = Repository::init(root).expect("init");
    write(root, "vendored.lock", "v1\n");
    commit_all(&git, "first");
    write(root, ".gitignore", "*.lock\n");
    write(root, "vendored.lock", "v2\n");
    write(root, "fresh.lock", "untracked and ignored\n");
    let repo = Repo::open(root).expect("open");
    let tree = repo.checkpoint("s", 0).expect("cp");
    let t = git
        .find_tree(git2::Oid::from_str(&tree).expect("oid"))
        .expect("tree");
    let names: Vec<String> = t
        .iter()
        .filter_map(|e| e.name().ok().map(str::to_string))
        .collect();
    assert_eq!(
        names,
        vec![".gitignore".to_string(), "vendored.lock".to_string()]
    );
    let blob = t
        .get_name("vendored.lock")
        .expect("entry")
        .to_object(&git)
        .expect("obj");
    assert_eq!(blob.as_blob().expect("blob").content(), b"v2\n");
}

#[test]
fn a_repository_without_commits_can_be_checkpointed_and_restored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    Repository::init(root).expect("init");
    let repo = Repo::open(root).expect("open");
    assert_eq!(repo.head(), None);
    let empty = repo.checkpoint("s", 0).expect("empty checkpoint");
    write(root, "a.txt", "a\n");
    write(root, "d/b.txt", "b\n");
    let t1 = repo.checkpoint("s", 1).expect("checkpoint");
    assert!(repo.changed(&empty, &t1));
    assert!(repo.diff(&empty, &t1).expect("diff").contains("+a\n"));
    assert!(
        !root.join(".git/index").exists(),
        "no index was written for the user"
    );
    repo.restore(&empty).expect("restore");
    assert!(!root.join("a.txt").exists());
    assert!(!root.join("d").exists(), "emptied directories go too");
}

#[test]
fn a_file_and_a_directory_can_swap_places_on_restore() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    Repository::init(root).expect("init");
    let repo = Repo::open(root).expect("open");
    write(root, "x", "file\n");
    let as_file = repo.checkpoint("s", 0).expect("cp");
    std::fs::remove_file(root.join("x")).expect("rm");
    write(root, "x/inner", "nested\n");
    let as_dir = repo.checkpoint("s", 1).expect("cp");
    repo.restore(&as_file).expect("restore file");
    assert_eq!(read(root, "x"), "file\n");
    repo.restore(&as_dir).expect("restore dir");
    assert_eq!(read(root, "x/inner"), "nested\n");
}

#[test]
fn executable_bits_and_bad_names_are_handled() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    Repository::init(root).expect("init");
    let repo = Repo::open(root).expect("open");
    write(root, "run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let exec = repo.checkpoint("s", 0).expect("cp");
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let plain = repo.checkpoint("s", 1).expect("cp");
    assert!(repo.changed(&exec, &plain));
    repo.restore(&exec).expect("restore");
    let mode = std::fs::metadata(root.join("run.sh"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    assert!(repo.checkpoint("bad name..", 0).is_err());
    assert!(repo.diff("not-a-tree", &exec).is_err());
}

#[test]
fn a_directory_outside_any_repository_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Discovery walks up; a temp dir normally sits in no repository. If it does, skip.
    if Repository::discover(dir.path()).is_ok() {
        eprintln!("skipped: the temp dir is inside a git repository");
        return;
    }
    assert!(Repo::open(dir.path()).is_err());
}
