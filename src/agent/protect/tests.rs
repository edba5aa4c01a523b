use std::os::unix::fs::PermissionsExt as _;

use super::*;

fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, RootDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    let root = dir.path().canonicalize().expect("canonical");
    let handle = RootDir::open(&root).expect("root handle");
    (dir, root, handle)
}

const FILES: [(&str, &str); 5] = [
    ("shout.py", "def shout(t):\n    return t\n"),
    ("test_shout.py", "assert shout('a') == 'A!'\n"),
    ("tests/test_more.py", "pass\n"),
    ("tests/data/case.txt", "x\n"),
    ("check.sh", "python3 test_shout.py\n"),
];

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read")
}

#[test]
fn the_default_set_holds_the_test_files_and_what_the_check_names() {
    let (_d, root, _h) = tree(&FILES);
    let p = Protected::capture(&root, None, Some("sh check.sh")).expect("capture");
    assert_eq!(
        p.paths().collect::<Vec<_>>(),
        vec![
            "check.sh",
            "test_shout.py",
            "tests/data/case.txt",
            "tests/test_more.py"
        ]
    );
    let none = Protected::capture(&root, Some(&[]), Some("sh check.sh")).expect("capture");
    assert!(
        none.is_empty(),
        "an empty list protects nothing, not even the check's files"
    );
    let own = Protected::capture(&root, Some(&["*.py".to_string()]), None).expect("capture");
    assert_eq!(own.len(), 3);
}

#[test]
fn an_unchanged_tree_needs_no_restore() {
    let (_d, root, h) = tree(&FILES);
    let p = Protected::capture(&root, None, None).expect("capture");
    assert_eq!(p.changed(&h), Vec::<String>::new());
    // Same bytes written again (a new inode, new times) is not a change.
    std::fs::write(root.join("test_shout.py"), FILES[1].1).expect("write");
    assert!(p.restore(&h, &root).is_empty());
}

#[test]
fn rewrites_deletions_renames_and_mode_changes_are_found_and_undone() {
    let (_d, root, h) = tree(&FILES);
    let p = Protected::capture(&root, None, None).expect("capture");
    std::fs::write(root.join("test_shout.py"), "print('HI!')\n").expect("rewrite");
    std::fs::rename(root.join("tests/test_more.py"), root.join("moved.py")).expect("mv");
    std::fs::remove_file(root.join("tests/data/case.txt")).expect("rm");
    assert_eq!(
        p.changed(&h),
        vec!["test_shout.py", "tests/data/case.txt", "tests/test_more.py"]
    );
    let r = p.restore(&h, &root);
    assert_eq!(r.failed, Vec::<String>::new());
    assert_eq!(r.restored.len(), 3);
    assert_eq!(read(&root, "test_shout.py"), FILES[1].1);
    assert_eq!(read(&root, "tests/test_more.py"), "pass\n");
    assert_eq!(read(&root, "tests/data/case.txt"), "x\n");
    // The renamed copy is the junior's own file now and stays.
    assert!(root.join("moved.py").exists());
    let file = root.join("test_shout.py");
    let before = std::fs::metadata(&file).expect("meta").permissions().mode();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_eq!(p.restore(&h, &root).restored, vec!["test_shout.py"]);
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(
        mode & 0o7777,
        before & 0o7777,
        "the start's permission bits are back"
    );
}

#[test]
fn a_directory_or_a_link_in_the_way_is_cleared_never_followed() {
    let (_d, root, h) = tree(&FILES);
    let outside = tempfile::tempdir().expect("outside");
    let p = Protected::capture(&root, None, None).expect("capture");
    std::fs::remove_file(root.join("test_shout.py")).expect("rm");
    std::fs::create_dir(root.join("test_shout.py")).expect("mkdir");
    std::fs::write(root.join("test_shout.py/__main__.py"), "pass\n").expect("write");
    std::fs::remove_dir_all(root.join("tests")).expect("rm tests");
    std::os::unix::fs::symlink(outside.path(), root.join("tests")).expect("symlink");
    let r = p.restore(&h, &root);
    assert_eq!(r.failed, Vec::<String>::new());
    assert_eq!(read(&root, "test_shout.py"), FILES[1].1);
    assert_eq!(read(&root, "tests/test_more.py"), "pass\n");
    assert!(
        !std::fs::symlink_metadata(root.join("tests"))
            .expect("tests")
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("outside").count(),
        0,
        "nothing was written through the link"
    );
}

#[test]
fn new_files_that_match_a_glob_are_not_protected() {
    let (_d, root, h) = tree(&FILES);
    let p = Protected::capture(&root, None, None).expect("capture");
    std::fs::write(root.join("test_new.py"), "pass\n").expect("write");
    assert!(!p.contains(Path::new("test_new.py")));
    assert!(p.contains(Path::new("tests/test_more.py")));
    assert!(p.restore(&h, &root).is_empty());
    assert!(root.join("test_new.py").exists());
}

#[test]
fn the_check_names_files_and_directories_inside_the_repository_only() {
    let (_d, root, _h) = tree(&FILES);
    let n = named::named_by(
        "cd . && python3 -m pytest -q 'shout.py' tests/data $HOME/x /etc/passwd ../x .",
        &root,
    );
    assert_eq!(n.files, vec!["shout.py"]);
    assert_eq!(n.dirs, vec!["tests/data"]);
    assert!(n.covers("tests/data/case.txt") && !n.covers("tests/database.txt"));
}
