//! The event wire format: names and round trips.

use super::*;
use pretty_assertions::assert_eq;

#[test]
fn every_variant_round_trips_and_carries_its_tag() {
    for event in Event::samples() {
        let stamped = Stamped {
            t_ms: 7,
            event: event.clone(),
        };
        let line = serde_json::to_string(&stamped).expect("serialize");
        let value: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(value["type"], event.kind(), "tag of {line}");
        assert_eq!(value["t_ms"], 7);
        let back: Stamped = serde_json::from_str(&line).expect("deserialize");
        assert_eq!(back, stamped);
    }
}

#[test]
fn ask_counts_use_the_fn_name_on_the_wire() {
    let v = serde_json::to_value(AskCounts {
        tp: 1,
        fp: 2,
        fn_: 3,
    })
    .expect("serialize");
    assert_eq!(v, serde_json::json!({"tp": 1, "fp": 2, "fn": 3}));
}

#[test]
fn an_unknown_event_type_is_an_error_not_a_panic() {
    let err = serde_json::from_str::<Stamped>(r#"{"t_ms":1,"type":"teleported"}"#);
    assert!(err.is_err());
}
