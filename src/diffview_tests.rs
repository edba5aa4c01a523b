//! Golden renderings: the exact lines a person sees for each kind of change.

use super::*;
use pretty_assertions::assert_eq;

/// `kind text` per line, one per row, for whole-value comparison.
fn golden(d: &RenderedDiff) -> String {
    d.lines
        .iter()
        .map(|l| format!("{:<7} {}\n", format!("{:?}", l.kind).to_lowercase(), l.text))
        .collect()
}

#[test]
fn a_sloppy_model_patch_renders_without_being_parsed_strictly() {
    // No `diff --git`, no a/ b/ prefixes, a wrong hunk count, a blank context line
    // without its space.
    let patch = "--- calc.py\n+++ calc.py\n@@ -1,9 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n\n";
    let d = from_patch(patch);
    assert_eq!(
        golden(&d),
        "file    modified calc.py\n\
         hunk    @@ -1,9 +1,2 @@\n\
         context  def add(a, b):\n\
         removed -    return a - b\n\
         added   +    return a + b\n\
         context  \n"
    );
}

#[test]
fn a_git_patch_names_new_deleted_and_renamed_files() {
    let patch = "\
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..2e65efe
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/lib/a.rs b/lib/b.rs
similarity index 90%
rename from lib/a.rs
rename to lib/b.rs
--- a/lib/a.rs
+++ b/lib/b.rs
@@ -1,2 +1,2 @@
 fn f() {}
-fn g() {}
+fn h() {}
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
";
    let d = from_patch(patch);
    assert_eq!(
        golden(&d),
        "file    new file new.txt\n\
         hunk    @@ -0,0 +1 @@\n\
         added   +hello\n\
         file    deleted gone.txt\n\
         hunk    @@ -1 +0,0 @@\n\
         removed -bye\n\
         file    renamed lib/a.rs → lib/b.rs\n\
         hunk    @@ -1,2 +1,2 @@\n\
         context  fn f() {}\n\
         removed -fn g() {}\n\
         added   +fn h() {}\n\
         file    modified logo.png\n\
         note    Binary files a/logo.png and b/logo.png differ\n"
    );
    assert_eq!(
        d.stat(),
        " new.txt             | +1 -0\n \
         gone.txt            | +0 -1\n \
         lib/a.rs → lib/b.rs | +1 -1\n \
         logo.png            | +0 -0\n \
         4 files changed, +2 -2\n"
    );
}

#[test]
fn text_joins_the_lines_as_a_pager_would_show_them() {
    let d = from_patch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(d.text(), "modified f\n@@ -1 +1 @@\n-a\n+b\n");
}
