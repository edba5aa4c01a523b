//! The walls between the crate's floors (ARCHITECTURE.md, "Floors and walls"), kept by reading the source:
//! every `crate::<module>` a file names must sit on its own floor or below, the protocol
//! names nothing of the crate, the TUI only the protocol, and the files of `agent/` and
//! `competence/` import each other without a cycle. Run with `--nocapture` to see the
//! import graph this checks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Floors from the bottom up; a module may import only from its floor or below.
const FLOORS: &[(&str, u32)] = &[
    ("protocol", 1),
    // How an error chain is printed (each cause once): std and anyhow only.
    ("chain", 1),
    ("code", 2),
    ("competence", 2),
    ("metrics", 2),
    ("llm", 2),
    ("config", 2),
    ("repo", 2),
    // File I/O beneath a directory handle, never through a symlink: the file tools and
    // checkpoint restore both write with it.
    ("beneath", 2),
    // A file the user named, read once, bounded and only if regular: every file argument.
    ("infile", 2),
    // handoff's own reads of the model's tree: regular files only, no link, no blocking.
    ("treefiles", 2),
    // The work tree's .gitignore rules, read by handoff so no library opens them.
    ("ignorewalk", 2),
    // Leaf helpers beside config and repo: diff rendering (repo shows checkpoints with it),
    // exit codes (over protocol outcomes), project instruction files, config presets.
    ("diffview", 2),
    ("exit", 2),
    ("instructions", 2),
    ("presets", 2),
    // Their unit tests, kept beside them in files of their own.
    ("diffview_tests", 2),
    ("presets_tests", 2),
    ("judge", 3),
    ("agent", 4),
    ("router", 4),
    ("log", 4),
    ("tui", 4),
    ("analysis", 5),
    ("sim", 5),
    ("app", 6),
    ("eval", 7),
    ("demo", 7),
    ("cli", 8),
];

/// Walls beyond the floors: (module, what it may import besides itself).
const ONLY: &[(&str, &[&str])] = &[
    ("protocol", &[]),
    ("chain", &[]),
    ("code", &[]),
    ("competence", &["protocol"]),
    ("metrics", &["protocol"]),
    ("tui", &["protocol"]),
    ("log", &["protocol"]),
];

fn floor(module: &str) -> Option<u32> {
    FLOORS.iter().find(|(m, _)| *m == module).map(|(_, f)| *f)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file under `src/` belongs to (`None` for lib.rs and main.rs).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The code of a file without its `#[cfg(test)] mod tests { ... }` tail and comments.
fn product_code(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    code.lines()
        .filter(|l| {
            let t = l.trim_start();
            !t.starts_with("//")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::<name>` in `code`.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
        rest = after;
    }
    out
}

fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let Some(module) = module_of(&f) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).expect("read source");
        let entry = graph.entry(module.clone()).or_default();
        for r in crate_refs(&product_code(&text)) {
            if r != module {
                entry.insert(r);
            }
        }
    }
    graph
}

#[test]
fn every_module_imports_only_its_floor_or_below() {
    let graph = edges();
    let mut problems = Vec::new();
    for (module, deps) in &graph {
        let Some(f) = floor(module) else {
            problems.push(format!("{module}: not on any floor (add it to FLOORS)"));
            continue;
        };
        println!("{module} (floor {f}) -> {deps:?}");
        for d in deps {
            match floor(d) {
                Some(g) if g <= f => {}
                Some(g) => problems.push(format!("{module} (floor {f}) imports {d} (floor {g})")),
                None => problems.push(format!("{module} imports {d}, which is on no floor")),
            }
        }
        if let Some((_, allowed)) = ONLY.iter().find(|(m, _)| m == module) {
            for d in deps {
                if !allowed.contains(&d.as_str()) {
                    problems.push(format!("{module} may import only {allowed:?}, not {d}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "walls broken:\n{}",
        problems.join("\n")
    );
}

/// File-level imports inside one folder: `super::x` and `crate::<folder>::x`.
fn folder_graph(folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = src().join(folder);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter(|f| f.parent() == Some(dir.as_path()))
        .filter_map(|f| f.file_stem()?.to_str().map(str::to_string))
        .filter(|n| n != "mod")
        .collect();
    let mut graph = BTreeMap::new();
    for f in files.iter().filter(|f| f.parent() == Some(dir.as_path())) {
        let Some(name) = f.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if name == "mod" {
            continue;
        }
        let code = product_code(&std::fs::read_to_string(f).expect("read"));
        let mut deps = BTreeSet::new();
        for prefix in ["super::".to_string(), format!("crate::{folder}::")] {
            let mut rest = code.as_str();
            while let Some(i) = rest.find(&prefix) {
                let after = &rest[i + prefix.len()..];
                let mut push = |n: &str| {
                    if names.contains(n) && n != name {
                        deps.insert(n.to_string());
                    }
                };
                if let Some(list) = after.strip_prefix('{') {
                    let end = list.find('}').unwrap_or(list.len());
                    for item in list[..end].split(',') {
                        push(item.trim().split("::").next().unwrap_or(""));
                    }
                } else {
                    let n: String = after
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    push(&n);
                }
                rest = after;
            }
        }
        graph.insert(name.to_string(), deps);
    }
    graph
}

fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, graph, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn agent_and_competence_files_import_each_other_without_a_cycle() {
    for folder in ["agent", "competence"] {
        let graph = folder_graph(folder);
        for (file, deps) in &graph {
            println!("{folder}/{file} -> {deps:?}");
        }
        assert_eq!(cycle(&graph), None, "a cycle in src/{folder}/");
    }
}

/// A file a newcomer can read in one sitting: none in `src/` over 600 lines (tests beside
/// a module live in a file of their own, `#[path = "…_tests.rs"]` or `tests.rs`).
#[test]
fn no_source_file_is_over_600_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).ok()?.lines().count();
            (n > 600).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these along their jobs: {long:?}");
}

/// Every path `handoff::…` that code outside the crate names: `use handoff::…;` statements
/// with their brace groups expanded, and inline `handoff::a::b` paths.
fn paths_named_outside() -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("src/main.rs")];
    for dir in ["tests", "benches", "examples", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out = BTreeSet::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some(i) = rest.find("handoff::") {
            let after = &rest[i + "handoff::".len()..];
            let end = after.find(';').unwrap_or(after.len());
            let is_use = rest[..i].trim_end().ends_with("use");
            if is_use {
                let flat = after[..end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                expand_use("", &flat, &mut out);
            } else {
                let path: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                out.insert(path.trim_end_matches(':').to_string());
            }
            rest = after;
        }
    }
    out
}

/// `a::{b, c::{d}}` under `prefix` into `prefix::a::b`, `prefix::a::c::d`.
fn expand_use(prefix: &str, tree: &str, out: &mut BTreeSet<String>) {
    let join = |p: &str, s: &str| {
        if p.is_empty() {
            s.to_string()
        } else {
            format!("{p}::{s}")
        }
    };
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        // `Name as Alias`: the path is the name.
        let name = tree.split_whitespace().next().unwrap_or(tree);
        out.insert(join(prefix, name.trim_end_matches("::")));
        return;
    };
    let head = join(prefix, tree[..open].trim().trim_end_matches("::"));
    let inner = tree[open + 1..]
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand_use(&head, &inner[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        expand_use(&head, &inner[start..], out);
    }
}

/// Only what the tests, benches and examples reach is public: a `pub mod` that nothing
/// outside the crate names by path is `pub(crate)`, so the compiler's dead-code lint sees
/// everything behind it (items it re-exports stay public through the `pub use`).
#[test]
fn every_public_module_is_named_outside_the_crate() {
    let named = paths_named_outside();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut unused = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Ok(rel) = f.strip_prefix(src()) else {
            continue;
        };
        let rel = rel.with_extension("");
        let mut parent: Vec<String> = rel
            .components()
            .filter_map(|c| c.as_os_str().to_str().map(String::from))
            .collect();
        if parent.last().is_some_and(|l| l == "mod" || l == "lib") {
            parent.pop();
        }
        for line in text.lines() {
            let Some(name) = line
                .trim_start()
                .strip_prefix("pub mod ")
                .and_then(|l| l.strip_suffix(';'))
            else {
                continue;
            };
            let module = parent
                .iter()
                .map(String::as_str)
                .chain([name])
                .collect::<Vec<_>>()
                .join("::");
            let reached = named
                .iter()
                .any(|p| *p == module || p.starts_with(&format!("{module}::")));
            if !reached {
                unused.push(format!("{} ({})", module, f.display()));
            }
        }
    }
    assert!(unused.is_empty(), "make these pub(crate): {unused:#?}");
}
