//! An error and its causes as one line, each cause said once.
//!
//! Many error types put their cause in their own message (`cannot read config {path}:
//! {source}`) *and* return it from `source()`, so anyhow's `{:#}` prints it twice
//! (`…: No such file or directory (os error 2): No such file or directory (os error 2)`).
//! Rather than rely on every variant of every error type choosing one of the two, the one
//! place that prints a chain for a person drops a cause whose text the message before it
//! already ends with. A cause that says something new is always kept.

/// `err` and its causes joined by `": "`, skipping a cause its predecessor already ends with.
pub fn once(err: &anyhow::Error) -> String {
    join(err.chain().map(|e| e.to_string()))
}

/// The messages of a chain, outermost first, joined with each repeated tail dropped.
fn join(messages: impl IntoIterator<Item = String>) -> String {
    let mut out = String::new();
    let mut last = String::new();
    for message in messages {
        let message = message.trim().to_string();
        if message.is_empty() || last.ends_with(&message) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&message);
        last = message;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read config x.toml: {source}")]
    struct Embeds {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_holds_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone (os error 2)");
        let err = anyhow::Error::new(Embeds { source: io }).context("loading the configuration");
        assert_eq!(
            once(&err),
            "loading the configuration: cannot read config x.toml: gone (os error 2)"
        );
    }

    #[test]
    fn causes_that_say_something_new_are_all_kept() {
        let err = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(once(&err), "outer: middle: inner");
    }
}
