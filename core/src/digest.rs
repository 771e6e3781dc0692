//! Canonical JSON digest: SHA-256 (lowercase hex) of the RFC 8785 (JCS) canonical form of parsed JSON.
//!
//! The canonical form comes from the `serde_json_canonicalizer` crate (not hand-rolled): object
//! keys sorted by UTF-16 code units, no insignificant whitespace, ECMAScript number formatting
//! (`1.0` → `1`, `1e3` → `1000`, `-0` → `0`), minimal string escapes. The digest therefore differs
//! from `sha256sum` of a file's bytes on purpose: formatting must not change it.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::LabError;

/// The RFC 8785 canonical form of `value`, as UTF-8 bytes.
///
/// Errors only if `value` cannot be represented in I-JSON (e.g. a non-finite number), which a
/// parsed `serde_json::Value` never holds.
pub fn canonical_bytes(value: &serde_json::Value) -> Result<Vec<u8>, serde_json::Error> {
    serde_json_canonicalizer::to_vec(value)
}

/// Canonical digest of a parsed JSON value: lowercase hex SHA-256 of [`canonical_bytes`].
pub fn digest_value(value: &serde_json::Value) -> String {
    // A `Value` always canonicalises; fall back to hashing its plain serialisation would be wrong,
    // so an (impossible) error yields the digest of nothing recognisable instead of panicking.
    match canonical_bytes(value) {
        Ok(bytes) => hex::encode(Sha256::digest(&bytes)),
        Err(e) => format!("error: {e}"),
    }
}

/// Canonical digest of a JSON text, read by the one reader ([`crate::json::parse_str`]: I-JSON
/// only; whitespace, member order and number spelling do not matter).
pub fn digest_str(json: &str) -> Result<String, crate::json::JsonProblem> {
    Ok(digest_value(&crate::json::parse_str(json)?))
}

/// Canonical digest of the JSON file at `path`, read by the one reader ([`crate::json::read_input`]),
/// so `digest` refuses exactly what `check`, the acts and `grade` refuse (duplicate member names,
/// integers beyond ±(2^53−1), a BOM, trailing data, …).
///
/// Errors: [`LabError::InputMissing`] if there is no such file, [`LabError::InputInvalid`] if it
/// is not a regular file (a directory, a FIFO, …, refused by [`crate::files::read_regular`]) or
/// not I-JSON (the file, the JSON path, expected, found) — all bad input, one exit code class —
/// and [`LabError::Io`] if it cannot be read.
pub fn digest_file(path: &Path) -> Result<String, LabError> {
    let name = path.display().to_string();
    let value = crate::json::read_input(path, &name).map_err(|e| match e {
        LabError::Io { source, .. } if source.kind() == std::io::ErrorKind::InvalidInput => {
            let expected = crate::messages::said::regular_file();
            LabError::InputInvalid {
                issues: vec![crate::error::InputIssue {
                    file: name.clone(),
                    json_path: "$".to_owned(),
                    expected: expected.en,
                    found: source.to_string(),
                    mismatch: None,
                    ja: Some((expected.ja, source.to_string())),
                }],
            }
        }
        e => e,
    })?;
    Ok(digest_value(&value))
}

/// Whether `s` looks like a canonical digest: 64 lowercase hex characters.
pub fn is_digest(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn canon(json: &str) -> String {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        String::from_utf8(canonical_bytes(&v).unwrap()).unwrap()
    }

    fn sha_hex(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    #[rstest]
    #[case::key_order(r#"{"b":1,"a":2}"#, r#"{"a":2,"b":1}"#)]
    #[case::nested_key_order(
        r#"{"z":{"y":1,"x":[{"d":0,"c":0}]}}"#,
        r#"{"z":{"x":[{"c":0,"d":0}],"y":1}}"#
    )]
    #[case::whitespace("{ \"a\" :\n\t[ 1 , 2 ] }", r#"{"a":[1,2]}"#)]
    #[case::non_ascii(r#"{"名前":"ポッド","é":"\u00e9"}"#, r#"{"é":"é","名前":"ポッド"}"#)]
    #[case::escapes(
        r#"["\u0041\/\b\f\n\r\t\"\\\u001f\u007f"]"#,
        "[\"A/\\b\\f\\n\\r\\t\\\"\\\\\\u001f\u{7f}\"]"
    )]
    #[case::one_point_zero("[1.0]", "[1]")]
    #[case::exponent("[1e3, 1E-7, 1e21]", "[1000,1e-7,1e+21]")]
    #[case::negative_zero("[-0, -0.0]", "[0,0]")]
    #[case::float("[0.1, 123.456, -2.5e-3]", "[0.1,123.456,-0.0025]")]
    #[case::utf16_key_order(r#"{"\ud83d\ude00":1,"\ufb33":2}"#, "{\"\u{1F600}\":1,\"\u{FB33}\":2}")]
    fn canonical_form(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(canon(input), expected);
    }

    #[test]
    fn rfc8785_digest_vectors() {
        // The digest is the SHA-256 of exactly the canonical bytes.
        let v: serde_json::Value = serde_json::from_str(r#"{ "b": 2, "a": 1 }"#).unwrap();
        assert_eq!(digest_value(&v), sha_hex(br#"{"a":1,"b":2}"#));
        assert_eq!(
            digest_value(&serde_json::json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn formatting_does_not_change_digest() {
        let a = digest_str("{\"a\":[1,2,{\"c\":\"ü\"}],\"b\":true}").unwrap();
        let b =
            digest_str("{\n  \"b\" : true,\n  \"a\" : [ 1.0, 2e0, { \"c\" : \"\\u00fc\" } ]\n}\n")
                .unwrap();
        assert_eq!(a, b);
        assert!(is_digest(&a));
    }

    #[test]
    fn different_values_differ() {
        assert_ne!(
            digest_str(r#"{"a":1}"#).unwrap(),
            digest_str(r#"{"a":"1"}"#).unwrap()
        );
        assert_ne!(
            digest_str(r#"[1,2]"#).unwrap(),
            digest_str(r#"[2,1]"#).unwrap()
        );
    }

    #[test]
    fn digest_differs_from_file_bytes_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let text = "{\n  \"b\": 1,\n  \"a\": 2\n}\n";
        std::fs::write(&path, text).unwrap();
        let canonical = digest_file(&path).unwrap();
        assert_ne!(canonical, sha_hex(text.as_bytes()));
        assert_eq!(canonical, sha_hex(br#"{"a":2,"b":1}"#));
    }

    #[test]
    fn digest_file_rejects_non_json_with_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, "{\n  \"a\": ,\n}").unwrap();
        let err = digest_file(&path).unwrap_err().to_string();
        assert!(err.contains("line 2 column"), "{err}");
        assert!(
            err.contains("x.json: $.a: expected a JSON document"),
            "{err}"
        );
    }
}
