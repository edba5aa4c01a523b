use rs_truncate::truncate;

#[test]
fn the_marker_is_three_dots_within_max() {
    assert_eq!(truncate("abcdefgh", 6), "abc...");
    assert_eq!(truncate("héllo wörld", 8), "héllo...");
}
