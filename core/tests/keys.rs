//! Property tests of the key encoding against an independent statement of IndexedDB's order:
//! comparing encodings must equal comparing keys, and decoding must give back the key exactly.

use std::cmp::Ordering;

use objstore_db_core::{Key, KeyRange};
use proptest::prelude::*;

fn any_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("NaN is not a key", |f| !f.is_nan()),
        Just(0.0),
        Just(-0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        (-5i32..5).prop_map(f64::from),
    ]
}

fn any_key() -> impl Strategy<Value = Key> {
    let leaf = prop_oneof![
        any_number().prop_map(Key::Number),
        any_number().prop_map(Key::Date),
        // Small alphabets make shared prefixes and embedded NULs common.
        "[a-c\u{0}\u{7f}\u{e9}\u{1F600}]{0,6}".prop_map(Key::String),
        any::<String>().prop_map(Key::String),
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..6)
            .prop_map(Key::Binary),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| proptest::collection::vec(inner, 0..4).prop_map(Key::Array))
}

/// IndexedDB's order as the spec states it, written independently of the library's `Ord`.
fn reference_order(a: &Key, b: &Key) -> Ordering {
    fn rank(k: &Key) -> u8 {
        match k {
            Key::Number(_) => 0,
            Key::Date(_) => 1,
            Key::String(_) => 2,
            Key::Binary(_) => 3,
            Key::Array(_) => 4,
        }
    }
    match (a, b) {
        (Key::Number(x), Key::Number(y)) | (Key::Date(x), Key::Date(y)) => x.partial_cmp(y).unwrap(),
        (Key::String(x), Key::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Key::Binary(x), Key::Binary(y)) => x.cmp(y),
        (Key::Array(x), Key::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                match reference_order(p, q) {
                    Ordering::Equal => continue,
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Structural equality with floats compared bit for bit (after folding -0 into 0).
fn identical(a: &Key, b: &Key) -> bool {
    let bits = |f: f64| if f == 0.0 { 0u64 } else { f.to_bits() };
    match (a, b) {
        (Key::Number(x), Key::Number(y)) | (Key::Date(x), Key::Date(y)) => bits(*x) == bits(*y),
        (Key::String(x), Key::String(y)) => x == y,
        (Key::Binary(x), Key::Binary(y)) => x == y,
        (Key::Array(x), Key::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q)),
        _ => false,
    }
}

fn has_infinity(k: &Key) -> bool {
    match k {
        Key::Number(f) | Key::Date(f) => f.is_infinite(),
        Key::Array(items) => items.iter().any(has_infinity),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn comparing_encodings_equals_comparing_keys(a in any_key(), b in any_key()) {
        let expected = reference_order(&a, &b);
        prop_assert_eq!(a.encode().unwrap().cmp(&b.encode().unwrap()), expected);
        prop_assert_eq!(a.cmp(&b), expected);
    }

    #[test]
    fn decoding_an_encoding_gives_back_the_key_exactly(k in any_key()) {
        let decoded = Key::decode(&k.encode().unwrap()).unwrap();
        prop_assert!(identical(&decoded, &k), "{:?} came back as {:?}", k, decoded);
    }

    #[test]
    fn no_encoding_is_a_prefix_of_another(a in any_key(), b in any_key()) {
        let (x, y) = (a.encode().unwrap(), b.encode().unwrap());
        prop_assert!(x == y || !y.starts_with(&x));
    }

    #[test]
    fn json_round_trip_is_exact_for_finite_keys(k in any_key().prop_filter("JSON has no infinity", |k| !has_infinity(k))) {
        let back = Key::from_json(&k.to_json()).unwrap();
        prop_assert!(identical(&back, &k), "{:?} came back as {:?}", k, back);
    }

    #[test]
    fn a_starts_range_holds_exactly_the_strings_with_that_prefix(s in "[ab\u{0}\u{ff}]{0,5}", p in "[ab\u{0}\u{ff}]{0,3}") {
        let range = KeyRange::starts(p.as_str()).to_bytes().unwrap();
        let encoded = Key::from(s.as_str()).encode().unwrap();
        prop_assert_eq!(range.low <= encoded && encoded < range.high, s.starts_with(&p));
    }
}

#[test]
fn nan_null_booleans_and_objects_are_not_keys() {
    use serde_json::json;
    assert!(Key::Number(f64::NAN).encode().unwrap_err().to_string().contains("NaN is not a valid key"));
    for (value, reason) in [
        (json!(null), "null"),
        (json!(false), "boolean"),
        (json!({"x": 1}), "an object is not a valid key"),
        (json!({"$date": "soon"}), "$date must be a number"),
        (json!({"$binary": "xyz"}), "$binary must be a string of hex digit pairs"),
    ] {
        let err = Key::from_json(&value).unwrap_err();
        assert!(err.to_string().contains(reason), "{value}: {err}");
    }
    assert_eq!(Key::from_json(&json!({"$date": 5})).unwrap(), Key::Date(5.0));
    assert_eq!(Key::from_json(&json!({"$binary": "00ff"})).unwrap(), Key::Binary(vec![0, 255]));
}
