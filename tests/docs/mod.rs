//! The docs hold together: every relative link (and its `#anchor`) resolves, and every
//! command the README's first screen tells a new user to type exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files a reader is sent to: the top-level docs, `docs/` and data READMEs.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root().join("docs"), root().join("data")];
    for top in [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "SECURITY.md",
    ] {
        files.push(root().join(top));
    }
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A line that opens or closes a fenced code block (a backtick fence's info string has no
/// backtick, so ```` ```python ```` in prose is inline code, not a fence).
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") && !t.trim_start_matches('`').contains('`')
}

/// Text outside fenced code blocks, line by line, with inline code spans blanked.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if is_fence(line) {
            fenced = !fenced;
            out.push(String::new());
            continue;
        }
        if fenced {
            out.push(String::new());
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                kept.push(' ');
            } else {
                kept.push(if in_code { ' ' } else { c });
            }
        }
        out.push(kept);
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens,
/// `-1`, `-2` … for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").expect("pattern");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).expect("read a doc");
        for (n, line) in prose_lines(&text).iter().enumerate() {
            for cap in link.captures_iter(line) {
                let target = &cap[1];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target, None),
                };
                let dir = file.parent().unwrap_or(Path::new("."));
                let resolved = if path.is_empty() {
                    file.clone()
                } else {
                    dir.join(path)
                };
                let at = format!(
                    "{}:{}: {target}",
                    file.strip_prefix(root()).unwrap_or(&file).display(),
                    n + 1
                );
                if !resolved.exists() {
                    broken.push(format!("{at} (no such file)"));
                    continue;
                }
                if let Some(anchor) = anchor {
                    let body = std::fs::read_to_string(&resolved).unwrap_or_default();
                    if !anchors(&body).contains(anchor) {
                        broken.push(format!("{at} (no heading with that anchor)"));
                    }
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} relative links found: is the scan broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_anchor_rule_is_githubs() {
    let a = anchors(
        "# The junior writes code (`tool_protocol = \"code\"`)\n## Exit codes\n## Exit codes\n",
    );
    assert!(
        a.contains("the-junior-writes-code-tool_protocol--code"),
        "{a:?}"
    );
    assert!(
        a.contains("exit-codes") && a.contains("exit-codes-1"),
        "{a:?}"
    );
}

/// The README up to its command table: what a new user reads first.
fn first_screen() -> String {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README");
    let end = text.find("\n## Commands").expect("a Commands section");
    text[..end].to_string()
}

#[test]
fn the_readme_is_short_and_its_first_screen_commands_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README");
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines; the guide is the place for more"
    );

    let help = Command::new(env!("CARGO_BIN_EXE_handoff"))
        .arg("--help")
        .output()
        .expect("run handoff --help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let listed: BTreeSet<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        listed.contains("demo"),
        "cannot read the command list:\n{help}"
    );

    let mut fenced = false;
    let mut shown = Vec::new();
    let mut scripts = Vec::new();
    for line in first_screen().lines() {
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            continue;
        }
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let w = w.rsplit("$(").next().unwrap_or(w);
            let starts_command =
                w == "handoff" || (w == "--" && i > 0 && words[..i].contains(&"run"));
            if starts_command
                && let Some(sub) = words.get(i + 1)
                && !sub.starts_with('-')
            {
                shown.push(sub.to_string());
            }
            if w.starts_with("tools/") {
                scripts.push(w.trim_end_matches(')').to_string());
            }
        }
    }
    assert!(shown.contains(&"demo".to_string()) && shown.contains(&"exec".to_string()));
    for sub in &shown {
        assert!(
            listed.contains(sub.as_str()),
            "the README's first screen shows `handoff {sub}`, which `handoff --help` does not list"
        );
    }
    for script in &scripts {
        assert!(
            root().join(script).is_file(),
            "the README's first screen runs {script}, which does not exist"
        );
    }
}

/// `data/real/README.md` names every collection the tree holds, in its layout blocks (an
/// indented line that starts with `NAME/`), and names none that is not there: a collection
/// that left the tree is listed under "Removed from the tree" instead.
#[test]
fn the_data_readme_lists_exactly_the_collections_in_the_tree() {
    let real = root().join("data/real");
    let text = std::fs::read_to_string(real.join("README.md")).expect("data/real/README.md");
    let layout = text
        .split("\n## Removed from the tree")
        .next()
        .unwrap_or(&text);
    let listed: BTreeSet<String> = layout
        .lines()
        .filter(|l| l.starts_with("    "))
        .filter_map(|l| {
            let word = l.split_whitespace().next()?;
            let name = word.strip_suffix('/')?;
            (!name.contains(['{', '*', '/'])).then(|| name.to_string())
        })
        .collect();
    let present: BTreeSet<String> = std::fs::read_dir(&real)
        .expect("data/real")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(present.len() > 10, "data/real read wrong: {present:?}");
    let unlisted: Vec<_> = present.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&present).collect();
    assert!(
        unlisted.is_empty() && gone.is_empty(),
        "data/real/README.md does not list {unlisted:?}; it lists {gone:?}, which are not in the tree"
    );
}

/// The paragraph of `docs/judge.md` on the built-in prior names every step fact with the
/// weight `Calibration::prior()` gives it when present (`repeated_action`: at 1, 2 and 3
/// earlier repeats), as `name −0.25`, with a true minus sign.
#[test]
fn the_judge_page_states_the_priors_step_weights() {
    use handoff::competence::Calibration;
    use handoff::protocol::SignalKind;
    let text = std::fs::read_to_string(root().join("docs/judge.md")).expect("judge.md");
    let start = text
        .find("**The default is a prior, not a fit.**")
        .expect("the prior's paragraph");
    let paragraph = &text[start..start + text[start..].find("\n\n").unwrap_or(0)];
    let paragraph = paragraph.replace('`', "").replace('\n', " ");
    let weight = |llr: f64| {
        let w = format!("{:.2}", llr.abs());
        let w = w.trim_end_matches('0').trim_end_matches('.');
        format!("{}{w}", if llr < 0.0 { '−' } else { '+' })
    };
    let prior = Calibration::prior();
    let mut missing = Vec::new();
    let steps: Vec<SignalKind> = SignalKind::ALL
        .into_iter()
        .filter(|s| !s.is_token_signal())
        .collect();
    assert!(steps.len() >= 10, "{steps:?}");
    for signal in steps {
        let likelihood = &prior.signals[&signal];
        if signal == SignalKind::RepeatedAction {
            for n in 1..=3 {
                let w = weight(likelihood.llr(f64::from(n)));
                if !paragraph.contains(&w) {
                    missing.push(format!("repeated_action at {n}: {w}"));
                }
            }
            continue;
        }
        let said = format!("{} {}", signal.name(), weight(likelihood.llr(1.0)));
        if !paragraph.contains(&said) {
            missing.push(said);
        }
    }
    assert!(
        missing.is_empty(),
        "docs/judge.md's prior paragraph should say {missing:?}"
    );
}
