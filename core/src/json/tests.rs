use super::*;
use rstest::rstest;
use serde_json::json;

fn refused(text: &[u8]) -> JsonProblem {
    match parse(text) {
        Ok(v) => panic!("accepted {:?} as {v}", String::from_utf8_lossy(text)),
        Err(p) => p,
    }
}

/// Every refusal: the JSON path it names and a fragment of expected and of found.
#[rstest]
#[case::duplicate_name(
    br#"{"spec": {"failurePolicy": "Ignore", "failurePolicy": "Fail"}}"#,
    "$.spec.failurePolicy",
    "unique member names",
    "member \"failurePolicy\" a second time at line 1"
)]
#[case::duplicate_name_after_unescaping(
    br#"{"a": 1, "\u0061": 2}"#,
    "$.a",
    "RFC 7493 §2.3",
    "member \"a\" a second time"
)]
#[case::duplicate_name_in_array_element(
    br#"{"v": [{"x": 1}, {"y": 1, "y": 1}]}"#,
    "$.v[1].y",
    "unique member names",
    "a second time"
)]
#[case::duplicate_name_odd_key(
    br#"{"m": {"kubernetes.io/metadata.name": "a", "kubernetes.io/metadata.name": "a"}}"#,
    "$.m[\"kubernetes.io/metadata.name\"]",
    "unique member names",
    "a second time"
)]
#[case::integer_beyond_2_53(
    br#"{"n": 9007199254740993}"#,
    "$.n",
    "within ±9007199254740991",
    "9007199254740993 at line 1"
)]
#[case::negative_integer_beyond_2_53(
    br#"[-9007199254740992]"#,
    "$[0]",
    "2^53−1",
    "-9007199254740992"
)]
#[case::integer_beyond_u64(
    br#"{"n": 18446744073709551616}"#,
    "$.n",
    "2^53−1",
    "1.8446744073709552e19"
)]
#[case::large_double(br#"{"n": 1e300}"#, "$.n", "2^53−1", "1e300")]
#[case::overflow(
    br#"{"n": 1e400}"#,
    "$.n",
    "IEEE 754 double range",
    "number out of range"
)]
#[case::lone_leading_surrogate(br#"{"s": "\ud800x"}"#, "$.s", "lone surrogates", "line 1")]
#[case::lone_trailing_surrogate(br#"{"s": "\udc00"}"#, "$.s", "lone surrogates", "line 1")]
#[case::noncharacter_escaped(br#"{"s": "a\uffff"}"#, "$.s", "noncharacters", "U+FFFF in a string")]
#[case::noncharacter_raw(
    "{\"s\": \"\u{fdd0}\"}".as_bytes(),
    "$.s",
    "noncharacters",
    "U+FDD0 in a string"
)]
#[case::noncharacter_in_name(
    br#"{"k\ufffe": 1}"#,
    "$[\"k\u{fffe}\"]",
    "noncharacters",
    "a member name"
)]
#[case::byte_order_mark(b"\xEF\xBB\xBF{}", "$", "without a byte order mark", "EF BB BF")]
#[case::not_utf8(b"{\"s\": \"\xff\"}", "$", "UTF-8 text", "at byte 7 (line 1 column 8)")]
#[case::trailing_document(b"{}\n{}", "$", "nothing after it", "line 2 column 1")]
#[case::trailing_garbage(b"{} x", "$", "nothing after it", "line 1 column 4")]
#[case::nan(br#"{"t": NaN}"#, "$.t", "a JSON document", "invalid JSON at line 1")]
#[case::infinity(br#"{"t": -Infinity}"#, "$.t", "a JSON document", "invalid JSON")]
#[case::truncated(b"{\n  \"mode\": \"Ignore\",\n", "$", "a JSON document", "line 3")]
#[case::trailing_comma(br#"{"a": 1,}"#, "$", "a JSON document", "trailing comma")]
#[case::empty(b"", "$", "a JSON document", "empty")]
fn refuses_non_i_json(
    #[case] text: &[u8],
    #[case] path: &str,
    #[case] expected: &str,
    #[case] found: &str,
) {
    let p = refused(text);
    assert_eq!(p.json_path, path, "{p}");
    assert!(p.expected.contains(expected), "{p}");
    assert!(p.found.contains(found), "{p}");
}

/// Accepted texts and the value they are read as (numbers in canonical form).
#[rstest]
#[case::integer("[3]", json!([3]))]
#[case::point_zero("[3.0]", json!([3]))]
#[case::exponent("[3e0]", json!([3]))]
#[case::fraction_exponent("[0.3e1]", json!([3]))]
#[case::negative_zero("[-0, -0.0]", json!([0, 0]))]
#[case::negative("[-3.0]", json!([-3]))]
#[case::fraction("[0.5, -2.5e-3]", json!([0.5, -0.0025]))]
#[case::max_exact("[9007199254740991, -9007199254740991]", json!([9007199254740991u64, -9007199254740991i64]))]
#[case::surrogate_pair(r#"["\ud83d\ude00"]"#, json!(["\u{1F600}"]))]
#[case::same_name_in_sibling_objects(r#"[{"a":1},{"a":2}]"#, json!([{"a":1},{"a":2}]))]
#[case::same_name_nested(r#"{"a":{"a":1}}"#, json!({"a":{"a":1}}))]
#[case::whitespace_around(" \n{\"a\" : 1}\n\t", json!({"a": 1}))]
fn accepts_i_json(#[case] text: &str, #[case] value: Value) {
    assert_eq!(parse_str(text).unwrap(), value);
}

#[test]
fn the_value_read_is_a_fixed_point_of_canonicalisation() {
    let text =
        r#"{"b": [1.0, 3e0, -0, 0.1, 1e-7, 123.456], "a": {"é": "\u00e9", "n": null, "t": true}}"#;
    let v = parse_str(text).unwrap();
    let canonical = crate::digest::canonical_bytes(&v).unwrap();
    assert_eq!(parse(&canonical).unwrap(), v);
    // And the digest of the spellings agrees with the digest of the plain value.
    assert_eq!(
        crate::digest::digest_value(&v),
        crate::digest::digest_value(
            &json!({"a": {"é": "é", "n": null, "t": true}, "b": [1, 3, 0, 0.1, 1e-7, 123.456]})
        )
    );
}

#[test]
fn read_input_and_read_evidence_name_file_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("policy.json");
    std::fs::write(
        &p,
        r#"{"spec":{"failurePolicy":"Ignore","failurePolicy":"Fail"}}"#,
    )
    .unwrap();
    let e = read_input(&p, "policy.json").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("policy.json: $.spec.failurePolicy: expected unique member names"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);
    let e = read_evidence(&p).unwrap_err();
    assert!(
        matches!(&e, LabError::EvidenceInvalid { detail, .. } if detail.starts_with("$.spec.failurePolicy: expected unique")),
        "{e}"
    );
    assert!(matches!(
        read_input(&dir.path().join("none.json"), "none.json"),
        Err(LabError::InputMissing { .. })
    ));
    assert!(matches!(
        read_evidence(&dir.path().join("01.json")),
        Err(LabError::EvidenceMissing { .. })
    ));
}

#[test]
fn value_at_reads_the_paths_push_key_writes() {
    let v = serde_json::json!({"a": {"kca-webhook-target": "u1", "b": {"c": 3}}, "d": "x"});
    let target = push_key(&push_key("$", "a"), "kca-webhook-target");
    assert_eq!(target, "$.a[\"kca-webhook-target\"]");
    assert_eq!(value_at(&v, &target), Some(&serde_json::json!("u1")));
    assert_eq!(value_at(&v, "$.a.b.c"), Some(&serde_json::json!(3)));
    assert_eq!(value_at(&v, "$.d"), Some(&serde_json::json!("x")));
    assert_eq!(value_at(&v, "$"), Some(&v));
    assert_eq!(value_at(&v, "$.missing"), None);
    assert_eq!(value_at(&v, "$.a[\"nope\"]"), None);
    assert_eq!(value_at(&v, "a"), None, "not a path");
}

/// `[0,0,…]` holding `n` values in all (the array itself and `n − 1` zeros).
fn flat_array_of(n: usize) -> Vec<u8> {
    let mut text = b"[".to_vec();
    text.extend(std::iter::repeat_n(&b"0,"[..], n - 1).flatten());
    *text.last_mut().unwrap() = b']';
    text
}

#[test]
fn a_document_of_exactly_the_value_bound_is_read() {
    let v = parse(&flat_array_of(VALUE_BOUND)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), VALUE_BOUND - 1);
}

#[test]
fn one_value_past_the_bound_is_refused_with_its_path() {
    let p = refused(&flat_array_of(VALUE_BOUND + 1));
    assert_eq!(p.json_path, format!("$[{}]", VALUE_BOUND - 1), "{p}");
    assert!(p.expected.contains("at most 500000 JSON values"), "{p}");
    assert!(p.found.contains("value number 500001 at line 1"), "{p}");
}

/// reliability-proofs-4 N8: 8 MiB of 126-deep `[[…[]…]]` blocks, which used to become about
/// 0.8 GB of values, is refused (inside the read bound, so the file size alone let it through).
#[test]
fn deep_blocks_filling_the_read_bound_are_refused_by_the_value_bound() {
    let block = format!("{}{}", "[".repeat(126), "]".repeat(126));
    let blocks = (crate::files::JSON_BOUND as usize - 2) / (block.len() + 1);
    let text = format!("[{}]", vec![block; blocks].join(","));
    assert!(text.len() as u64 <= crate::files::JSON_BOUND);
    let p = refused(text.as_bytes());
    assert!(p.expected.contains("memory bound"), "{p}");
}
