//! The walls between the crate's floors (ARCHITECTURE.md, "Floors and walls"), kept by reading the source:
//! every `crate::<module>` a file names must sit on its own floor or below, the protocol
//! names nothing of the crate, the TUI only the protocol, and inside every folder, at any
//! depth, the files and subfolders import each other without a cycle. Beside the walls, two
//! budgets of the tree: no source file over 600 lines, and `data/` within its size. Run
//! with `--nocapture` to see the import graph this checks.

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

/// A module's path from the crate root: `["agent", "session", "code_step"]`; the root is `[]`.
type ModPath = Vec<String>;

/// Every module of the library with the file that holds it: `a/b.rs` and `a/b/mod.rs` are
/// `a::b`, `lib.rs` is the root. Test files (`*_tests.rs`, `tests.rs`) are left out: they
/// are declared with `#[path]` or under `#[cfg(test)]`, so their module is not where their
/// file is, and nothing in the product imports them.
fn modules() -> BTreeMap<ModPath, PathBuf> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let Ok(rel) = f.strip_prefix(src()) else {
            continue;
        };
        let mut path: ModPath = rel
            .with_extension("")
            .components()
            .filter_map(|c| c.as_os_str().to_str().map(String::from))
            .collect();
        let last = path.last().cloned().unwrap_or_default();
        if last == "main" && path.len() == 1 || last == "tests" || last.ends_with("_tests") {
            continue;
        }
        if last == "mod" || (last == "lib" && path.len() == 1) {
            path.pop();
        }
        out.insert(path, f);
    }
    out
}

/// The inline `mod name {` blocks of `code`: (offset of the `{`, offset of its `}`, name).
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let open = regex::Regex::new(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{").expect("pattern");
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for cap in open.captures_iter(code) {
        let start = cap.get(0).map_or(0, |m| m.end() - 1);
        let mut depth = 0usize;
        let mut end = code.len();
        for (i, &b) in bytes.iter().enumerate().skip(start) {
            // A brace between quotes ('{') is a char, not a block.
            let quoted = i > 0 && bytes[i - 1] == b'\'' && bytes.get(i + 1) == Some(&b'\'');
            match b {
                b'{' if !quoted => depth += 1,
                b'}' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((start, end, cap[1].to_string()));
    }
    out
}

/// Every module path the code of module `at` names through `crate::`, `super::` or
/// `self::` (brace groups expanded), resolved against `at`, an inline `mod x {}` included.
fn named_paths(at: &[String], code: &str) -> Vec<ModPath> {
    let start = regex::Regex::new(r"\b(crate|super|self)::").expect("pattern");
    let inline = inline_modules(code);
    let mut out = Vec::new();
    for m in start.find_iter(code) {
        // Skip a `super::` that continues a path already read (`super::super::x`).
        let before = code[..m.start()].trim_end();
        if before.ends_with("::") {
            continue;
        }
        let rest = &code[m.start()..];
        let mut end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        if rest[end..].starts_with('{') {
            let mut depth = 0;
            for (i, c) in rest[end..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end += i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        let flat = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let mut expanded = BTreeSet::new();
        expand_use("", &flat, &mut expanded);
        let mut here: ModPath = at.to_vec();
        for (open, close, name) in &inline {
            if *open < m.start() && m.start() < *close {
                here.push(name.clone());
            }
        }
        for path in expanded {
            out.push(resolve(&here, &path));
        }
    }
    out
}

/// `path` (`super::a::b`, `crate::x`, `self::y`) as seen from module `at`, from the root.
fn resolve(at: &[String], path: &str) -> ModPath {
    let mut segments = path.split("::").filter(|s| !s.is_empty() && *s != "self");
    let mut base: ModPath = match path.split("::").next() {
        Some("crate") => {
            segments.next();
            Vec::new()
        }
        _ => at.to_vec(),
    };
    let mut out = Vec::new();
    for s in segments {
        if s == "super" && out.is_empty() {
            base.pop();
        } else {
            out.push(s.to_string());
        }
    }
    base.extend(out);
    base
}

/// The longest prefix of `path` that is a module of the crate.
fn module_named(path: &[String], known: &BTreeMap<ModPath, PathBuf>) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| known.contains_key(p))
        .unwrap_or_default()
}

/// For every folder (every module with submodules, the crate root included): which of its
/// direct children imports which. A child that is itself a folder stands for every file
/// under it, so `agent/session/*` importing `agent/step.rs` is the edge `session -> step`.
fn folder_graphs() -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let known = modules();
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for m in known.keys() {
        if let Some((child, parent)) = m.split_last() {
            graphs
                .entry(parent.to_vec())
                .or_default()
                .entry(child.clone())
                .or_default();
        }
    }
    for (m, file) in &known {
        let code = product_code(&std::fs::read_to_string(file).expect("read source"));
        for target in named_paths(m, &code) {
            let target = module_named(&target, &known);
            // The deepest folder holding both: the first place their paths part.
            let common = m.iter().zip(&target).take_while(|(a, b)| a == b).count();
            let (Some(from), Some(to)) = (m.get(common), target.get(common)) else {
                continue; // a module naming itself, an ancestor or a descendant
            };
            graphs
                .entry(m[..common].to_vec())
                .or_default()
                .entry(from.clone())
                .or_default()
                .insert(to.clone());
        }
    }
    graphs
}

#[test]
fn the_import_reader_resolves_super_crate_and_brace_groups() {
    let at: ModPath = ["agent", "session", "code_moves"]
        .map(String::from)
        .to_vec();
    let code = "use super::code_step::{self, Seat};\nuse crate::agent::{step, tools::run};\n\
                fn f() { super::super::turn::go(); }\nmod inner { use super::ends::x; }";
    let got: BTreeSet<String> = named_paths(&at, code)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    for want in [
        "agent::session::code_step",
        "agent::session::code_step::Seat",
        "agent::step",
        "agent::tools::run",
        "agent::turn::go",
        "agent::session::code_moves::ends::x",
    ] {
        assert!(got.contains(want), "{want} not in {got:#?}");
    }
}

/// No two files (or folders) of one folder import each other, at any depth: a circle
/// means neither can be read, tested or moved without the other.
#[test]
fn no_folder_at_any_depth_has_an_import_cycle() {
    let graphs = folder_graphs();
    let mut cycles = Vec::new();
    for (folder, graph) in &graphs {
        let name = if folder.is_empty() {
            "src".to_string()
        } else {
            format!("src/{}", folder.join("/"))
        };
        for (file, deps) in graph {
            println!("{name}/{file} -> {deps:?}");
        }
        if let Some(c) = cycle(graph) {
            cycles.push(format!("{name}: {}", c.join(" -> ")));
        }
    }
    // The reader sees the folders it must: nested ones too, with their imports.
    let session: ModPath = ["agent", "session"].map(String::from).to_vec();
    assert!(
        graphs.len() > 20 && graphs.get(&session).is_some_and(|g| g.len() >= 5),
        "the folder reader found only {:?}",
        graphs.keys().collect::<Vec<_>>()
    );
    assert!(
        graphs
            .values()
            .map(|g| g.values().map(BTreeSet::len).sum::<usize>())
            .sum::<usize>()
            > 100,
        "too few imports found: is the reader broken?"
    );
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
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

/// Bytes of every file under `dir`, per entry directly below it (a file counts for itself).
fn bytes_by_entry(dir: &Path) -> BTreeMap<String, u64> {
    fn total(p: &Path) -> u64 {
        if p.is_dir() {
            std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| total(&e.path()))
                .sum()
        } else {
            std::fs::metadata(p).map_or(0, |m| m.len())
        }
    }
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("read data/").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        out.insert(name, total(&e.path()));
    }
    out
}

/// `data/` stays within 120 MiB of file bytes. On 2026-12-07, after the collections that a
/// rerun superseded left the tree, it held 113.7 MiB (from 121.4 MiB); before this test it
/// had grown 27 MiB in six hours. The budget is that plus room for about one small
/// collection (a live shard pair is 4-5 MiB): the next large one (the operator collections
/// are 7-19 MiB) must first retire one that a newer run superseded, or the corpus must move
/// out of the main history (release assets fetched and checked by sha256), which is the
/// decision this test forces. Files are counted on disk, untracked ones included, so a
/// collection fails here before it is committed.
#[test]
fn data_stays_within_its_budget() {
    const BUDGET_MIB: u64 = 120;
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let top = bytes_by_entry(&data);
    let mut real: Vec<(u64, String)> = bytes_by_entry(&data.join("real"))
        .into_iter()
        .map(|(name, bytes)| (bytes, name))
        .collect();
    real.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = top.values().sum();
    // The count is of the real tree: the calibrations the binary embeds are in it.
    assert!(
        top.get("calibrations").is_some_and(|&b| b > 1000) && real.len() > 10,
        "data/ read wrong: {top:?}"
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let largest: Vec<String> = real
        .iter()
        .take(8)
        .map(|(b, n)| format!("data/real/{n} {:.1} MiB", mib(*b)))
        .collect();
    assert!(
        total <= BUDGET_MIB * 1024 * 1024,
        "data/ holds {:.1} MiB, over its budget of {BUDGET_MIB} MiB; retire a superseded \
         collection (data/real/README.md, \"Removed from the tree\") before adding one. \
         Largest: {largest:#?}",
        mib(total)
    );
}
