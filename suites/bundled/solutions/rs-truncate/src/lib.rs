/// `s` cut to at most `max` characters, with a marker when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    const MARKER: &str = "...";
    if s.chars().count() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(MARKER.len());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(MARKER);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_kept() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcde", 5), "abcde");
    }
}
