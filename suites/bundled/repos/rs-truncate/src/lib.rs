/// `s` cut to at most `max` characters, with a marker when something was cut.
pub fn truncate(s: &str, max: usize) -> String {
    todo!()
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
