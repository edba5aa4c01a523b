//! Names of files that usually hold credentials, kept out of checkpoints when untracked.
//!
//! A `.gitignore` is the user's statement of what git should not store, and checkpoints
//! honour it. But a fresh `.env` or a private key is often not yet ignored, and a
//! checkpoint would copy it into the object database, where it outlives the file and can
//! leave with a `git push --mirror`. So untracked files with these names are never
//! captured; tracked ones are, because the user already chose to store them. The price:
//! `handoff diff` does not show such a file, and a restore leaves it as it is.

/// Whether a file name (the last path component) looks like it holds a secret.
///
/// `.env` and `.env.<anything>` except the conventional committed templates
/// (`.env.example`, `.env.sample`, `.env.template`, `.env.dist`); `.envrc`; private keys
/// and key stores (`*.pem`, `*.key`, `*.p12`, `*.pfx`, `id_rsa`, `id_dsa`, `id_ecdsa`,
/// `id_ed25519`); and the credential files of common tools (`.netrc`, `.pgpass`,
/// `.npmrc`, `.pypirc`).
pub fn is_secret_name(name: &str) -> bool {
    const EXACT: [&str; 9] = [
        ".env",
        ".envrc",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        ".netrc",
        ".pgpass",
        ".npmrc",
    ];
    const TEMPLATES: [&str; 4] = ["example", "sample", "template", "dist"];
    const KEY_SUFFIXES: [&str; 4] = [".pem", ".key", ".p12", ".pfx"];
    if EXACT.contains(&name) || name == ".pypirc" {
        return true;
    }
    if let Some(variant) = name.strip_prefix(".env.") {
        return !TEMPLATES.contains(&variant);
    }
    KEY_SUFFIXES
        .iter()
        .any(|s| name.len() > s.len() && name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::is_secret_name;

    #[test]
    fn credentials_are_recognised_and_templates_and_public_keys_are_not() {
        for yes in [
            ".env",
            ".env.local",
            ".env.production",
            ".envrc",
            "id_ed25519",
            "server.pem",
            "tls.key",
            ".netrc",
            ".pypirc",
        ] {
            assert!(is_secret_name(yes), "{yes}");
        }
        for no in [
            ".env.example",
            ".env.sample",
            "id_ed25519.pub",
            "keys.rs",
            "README.md",
            ".key",
            "environment.yml",
        ] {
            assert!(!is_secret_name(no), "{no}");
        }
    }
}
