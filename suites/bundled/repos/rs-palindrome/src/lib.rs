/// True when `s` reads the same backwards, ignoring case and anything not alphanumeric.
pub fn is_palindrome(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    chars.iter().eq(chars.iter().rev())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases() {
        assert!(is_palindrome("racecar"));
        assert!(is_palindrome("A man, a plan, a canal: Panama"));
        assert!(!is_palindrome("rust"));
    }
}
