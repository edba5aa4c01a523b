use rs_parse_bool::parse_bool;

#[test]
fn more_spellings_any_case() {
    assert_eq!(parse_bool("YES"), Some(true));
    assert_eq!(parse_bool("no"), Some(false));
    assert_eq!(parse_bool("1"), Some(true));
    assert_eq!(parse_bool("0"), Some(false));
    assert_eq!(parse_bool("True"), Some(true));
    assert_eq!(parse_bool("on"), None);
}
