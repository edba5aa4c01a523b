//! `agent.protected`: which files the check depends on, as globs, and how one compiles.
//!
//! A session's label is the check's exit status, and a junior that rewrites the test
//! instead of the code would make a fake success the calibration then learns from. The
//! globs here name the files no tool may change; the agent enforces them
//! ([`crate::agent::protect`]). They live beside the config because the config validates
//! them and the same compile rule must hold for validation and use.
//!
//! A glob without `/` matches a file's name at any depth (`test_*.py` is every
//! `test_*.py` in the tree, as in `.gitignore`); one with `/` matches the whole path from
//! the repository root (`tests/**`, `**/tests/*.rs`). `*` and `?` never cross a `/`.

use globset::{Glob, GlobBuilder, GlobMatcher};

/// The globs protected when `agent.protected` is not set, besides the files the check
/// command names: the usual homes of tests in Python, Go and Rust projects.
pub const DEFAULT_PROTECTED: [&str; 5] = [
    "tests/**",
    "test_*.py",
    "*_test.py",
    "*_test.go",
    "**/tests/*.rs",
];

/// Why a pattern in `agent.protected` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobProblem {
    #[error("holds an empty pattern")]
    Empty,
    #[error("must hold paths relative to the repository, not `{0}`")]
    NotRelative(String),
    #[error("`{pattern}` is not a glob: {message}")]
    Syntax { pattern: String, message: String },
}

/// One compiled pattern and whether it matches names (no `/`) or whole paths.
#[derive(Debug, Clone)]
pub struct ProtectedGlob {
    matcher: GlobMatcher,
    name_only: bool,
}

impl ProtectedGlob {
    /// Compiles one pattern of `agent.protected`.
    pub fn new(pattern: &str) -> Result<ProtectedGlob, GlobProblem> {
        let p = pattern.trim();
        if p.is_empty() {
            return Err(GlobProblem::Empty);
        }
        if p.starts_with('/') || p.split('/').any(|part| part == "..") {
            return Err(GlobProblem::NotRelative(p.to_string()));
        }
        let p = p.strip_prefix("./").unwrap_or(p);
        let glob: Glob = GlobBuilder::new(p)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| GlobProblem::Syntax {
                pattern: p.to_string(),
                message: e.kind().to_string(),
            })?;
        Ok(ProtectedGlob {
            matcher: glob.compile_matcher(),
            name_only: !p.contains('/'),
        })
    }

    /// Whether `rel` (a repository path with `/` separators) is matched.
    pub fn matches(&self, rel: &str) -> bool {
        if self.name_only {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(rel)
        }
    }
}

/// The patterns in force: `agent.protected` as written, or the defaults when it is unset.
pub fn patterns(configured: Option<&[String]>) -> Vec<String> {
    match configured {
        Some(list) => list.to_vec(),
        None => DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
    }
}

/// Checks every pattern of `agent.protected` (for the config's validation).
pub fn validate(patterns: &[String]) -> Result<(), GlobProblem> {
    for p in patterns {
        ProtectedGlob::new(p)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(rel: &str) -> bool {
        DEFAULT_PROTECTED
            .iter()
            .map(|p| ProtectedGlob::new(p).expect("default compiles"))
            .any(|g| g.matches(rel))
    }

    #[test]
    fn the_defaults_cover_the_usual_test_files_and_nothing_else() {
        for rel in [
            "tests/test_x.py",
            "tests/unit/deep/case.rs",
            "test_shout.py",
            "pkg/test_shout.py",
            "shout_test.py",
            "cmd/tool/main_test.go",
            "crates/core/tests/it.rs",
            "tests/integration.rs",
        ] {
            assert!(any(rel), "{rel} should be protected");
        }
        for rel in [
            "shout.py",
            "src/lib.rs",
            "src/tests.rs",
            "testing/helpers.py",
            "main.go",
            "crates/core/tests/data/fixture.txt",
            "contest.py",
            "my_tests/x.rs",
        ] {
            assert!(!any(rel), "{rel} should not be protected");
        }
    }

    #[test]
    fn patterns_with_a_slash_match_from_the_root() {
        let g = ProtectedGlob::new("tests/*.py").expect("glob");
        assert!(g.matches("tests/a.py"));
        assert!(!g.matches("sub/tests/a.py"));
        assert!(!g.matches("tests/deep/a.py"), "* does not cross /");
        let g = ProtectedGlob::new("./spec/run.sh").expect("glob");
        assert!(g.matches("spec/run.sh"));
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        assert_eq!(ProtectedGlob::new(" ").err(), Some(GlobProblem::Empty));
        assert!(matches!(
            ProtectedGlob::new("/etc/passwd"),
            Err(GlobProblem::NotRelative(_))
        ));
        assert!(matches!(
            ProtectedGlob::new("../x"),
            Err(GlobProblem::NotRelative(_))
        ));
        assert!(matches!(
            ProtectedGlob::new("tests/[a"),
            Err(GlobProblem::Syntax { .. })
        ));
        assert_eq!(patterns(Some(&[])), Vec::<String>::new());
        assert_eq!(patterns(None).len(), DEFAULT_PROTECTED.len());
    }
}
