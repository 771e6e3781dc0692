//! The one JSON reader: every student input file and every evidence file is parsed here, once,
//! into the value whose RFC 8785 canonical form [`crate::digest`] hashes.
//!
//! `check`, every act that reads a file, `grade` and `digest` all call [`read_input`],
//! [`read_evidence`] or [`parse`], so they agree on whether a file is valid and on its value.
//! The reader accepts exactly I-JSON (RFC 7493), which RFC 8785 §3.1 requires of its input:
//!
//! - UTF-8 text (RFC 8259 §8.1) without a byte order mark (a BOM is refused, not skipped);
//! - one JSON document, nothing after it but whitespace; no `NaN`/`Infinity` (RFC 8259 §6);
//! - member names unique within each object, compared after unescaping (RFC 7493 §2.3), so
//!   `{"a":1,"a":2}` and `{"a":1,"\u0061":2}` are refused rather than "last one wins";
//! - no lone surrogates (serde_json refuses them) and no Unicode noncharacters (U+FDD0..U+FDEF,
//!   U+xFFFE, U+xFFFF) in names or strings (RFC 7493 §2.1);
//! - every number is an IEEE 754 double (RFC 7493 §2.2), and a number whose value is an integer
//!   lies within ±(2^53−1), the range in which integers are exact. Every double of larger magnitude
//!   is an integer, so this bounds every number. A larger integer (`9007199254740993`) is refused:
//!   as a double it is another number, so its digest would not be the digest of what was written.
//!
//! Numbers are values, not spellings: `3`, `3.0`, `3e0` and `0.3e1` are the same I-JSON number and
//! have the same canonical form (`3`, RFC 8785 §3.2.2.3), so the reader returns them all as the
//! integer `3` (and `-0` as `0`). What it returns is therefore a fixed point of canonicalisation:
//! parsing [`crate::digest::canonical_bytes`] of it gives it back. The typed checks of
//! [`crate::inputs`] (which compare `serde_json::Value`s) then agree with the digest: a file is
//! never refused for `3.0` where the digest calls it the same as `3`.
//!
//! Duplicate names: serde_json keeps the last value and its maintainer prefers that default
//! (serde-rs/json#762: "use their own Map type or Value enum with a Deserialize impl"); the PR
//! adding an option (serde-rs/json#1113) is not merged, and serde_with's `MapPreventDuplicates`
//! covers typed maps, not a `serde_json::Value`. So the reader is that small `DeserializeSeed`
//! over serde_json's own parser (no second JSON parser), wrapped in `serde_path_to_error` for the
//! JSON path. Every problem comes back as a [`JsonProblem`]: JSON path, expected, found (with the
//! line and column).
//!
//! Memory is bounded like the input: besides the read bound ([`crate::files::JSON_BOUND`], 8 MiB)
//! and serde_json's nesting limit (128), a document holds at most [`VALUE_BOUND`] values. Without
//! it 8 MiB of `[[[…]]]` became about 0.8 GB of `Value`s, and two such files aborted `report` under
//! a 1 GB address-space limit (reliability-proofs-4 N8).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::{InputIssue, LabError};

/// The largest integer magnitude kept exact by an IEEE 754 double: 2^53 − 1 (RFC 7493 §2.2).
pub const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;

/// The most JSON values (scalars, arrays and objects, each counted once) one document may hold:
/// 500 000. The largest file of a recorded real run holds 10 975 (lab A's `evidence/06.json`,
/// 462 kB, about 42 bytes a value), so an 8 MiB file of that shape holds about 200 000; the worst
/// case the bound allows (every value a one-element array) is about 80 MB of `Value`s.
pub const VALUE_BOUND: usize = 500_000;

/// Why a JSON text was refused: where, what was expected, what was found.
///
/// `json_path` uses the `$.a.b[0]["c-d"]` notation (`$` is the document root); `found` ends with
/// the line and column where serde_json stopped, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonProblem {
    /// JSON path of the offending value or member, e.g. `$.spec.failurePolicy`.
    pub json_path: String,
    /// What the text must hold there, e.g. `unique member names (RFC 7493 §2.3)`.
    pub expected: String,
    /// What it holds, e.g. `member "failurePolicy" a second time at line 14 column 20`.
    pub found: String,
}

impl JsonProblem {
    /// The problem as an [`InputIssue`] of the file named `file`.
    pub fn issue(&self, file: &str) -> InputIssue {
        InputIssue {
            file: file.to_owned(),
            json_path: self.json_path.clone(),
            expected: self.expected.clone(),
            found: self.found.clone(),
            mismatch: None,
            ja: None,
        }
    }
}

impl fmt::Display for JsonProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.json_path, self.expected, self.found
        )
    }
}

impl std::error::Error for JsonProblem {}

/// Parses `bytes` as one I-JSON document (see the module docs); numbers come back in their
/// canonical form (`3.0` → `3`, `-0` → `0`).
///
/// Errors: the first problem found, with its JSON path (`$` for encoding and trailing-data
/// problems).
pub fn parse(bytes: &[u8]) -> Result<Value, JsonProblem> {
    let at_root = |expected: &str, found: String| JsonProblem {
        json_path: "$".to_owned(),
        expected: expected.to_owned(),
        found,
    };
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(at_root(
            "JSON text without a byte order mark (RFC 8259 §8.1)",
            "a UTF-8 byte order mark (EF BB BF) at byte 0".to_owned(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = position(bytes, e.valid_up_to());
        at_root(
            "UTF-8 text (RFC 8259 §8.1)",
            format!(
                "bytes that are not UTF-8 at byte {} (line {line} column {column})",
                e.valid_up_to()
            ),
        )
    })?;
    if text.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
        return Err(at_root(
            "a JSON document",
            "no JSON text (the input is empty or only whitespace)".to_owned(),
        ));
    }
    let problem = RefCell::new(None);
    let values = Cell::new(0);
    let mut track = serde_path_to_error::Track::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let result = StrictValue {
        problem: &problem,
        values: &values,
    }
    .deserialize(serde_path_to_error::Deserializer::new(&mut de, &mut track));
    let value = match result {
        Ok(v) => v,
        Err(e) => {
            // A path ending in an unknown segment (`$.a.?`) means "inside `$.a`, before the next
            // member name was read" (e.g. a trailing comma): name the object.
            let path = json_path(&track.path());
            let path = path.trim_end_matches(".?").to_owned();
            return Err(match problem.into_inner() {
                Some(p) => p.into_problem(path, &e),
                None => syntax_problem(path, &e),
            });
        }
    };
    if let Err(e) = de.end() {
        return Err(at_root(
            "one JSON document and nothing after it but whitespace (RFC 8259 §2)",
            format!("more text at line {} column {}", e.line(), e.column()),
        ));
    }
    Ok(value)
}

/// Parses a JSON text (see [`parse`]).
pub fn parse_str(text: &str) -> Result<Value, JsonProblem> {
    parse(text.as_bytes())
}

/// Why a file could not be read as I-JSON.
#[derive(Debug)]
pub enum ReadError {
    /// The file does not exist.
    NotFound,
    /// The file could not be read.
    Io(std::io::Error),
    /// The file's text is not I-JSON.
    Invalid(JsonProblem),
}

/// Reads the regular file at `path` (at most [`crate::files::JSON_BOUND`] bytes; a FIFO, device
/// or directory is refused, [`crate::files::read_regular`]) and parses it with [`parse`].
pub fn read(path: &Path) -> Result<Value, ReadError> {
    let bytes =
        crate::files::read_regular(path, crate::files::JSON_BOUND).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e),
        })?;
    parse(&bytes).map_err(ReadError::Invalid)
}

/// Reads a student input file (or any JSON file a student names, e.g. for `digest`); `name` is the
/// file name used in messages.
///
/// Errors: [`LabError::InputMissing`], [`LabError::Io`], or [`LabError::InputInvalid`] with
/// `name`, the JSON path, expected and found.
pub fn read_input(path: &Path, name: &str) -> Result<Value, LabError> {
    read(path).map_err(|e| match e {
        ReadError::NotFound => LabError::InputMissing {
            path: path.to_path_buf(),
        },
        ReadError::Io(source) => LabError::Io {
            path: path.to_path_buf(),
            source,
        },
        ReadError::Invalid(p) => LabError::InputInvalid {
            issues: vec![p.issue(name)],
        },
    })
}

/// Reads an evidence file.
///
/// Errors: [`LabError::EvidenceMissing`], [`LabError::Io`], or [`LabError::EvidenceInvalid`]
/// whose detail is the [`JsonProblem`] (JSON path, expected, found).
pub fn read_evidence(path: &Path) -> Result<Value, LabError> {
    read(path).map_err(|e| match e {
        ReadError::NotFound => LabError::EvidenceMissing {
            path: path.to_path_buf(),
        },
        ReadError::Io(source) => LabError::Io {
            path: path.to_path_buf(),
            source,
        },
        ReadError::Invalid(p) => LabError::EvidenceInvalid {
            path: path.to_path_buf(),
            detail: p.to_string(),
        },
    })
}

/// Line and column (1-based, columns in bytes) of byte offset `at`.
fn position(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at.min(bytes.len())];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = at
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    (line, column)
}

/// An I-JSON rule broken inside the document, noted by the visitor (serde's error type cannot
/// carry it); the JSON path and position come from the parser afterwards.
enum Broken {
    /// A member name seen twice in one object.
    DuplicateName(String),
    /// A noncharacter in a member name (`name`) or in a string value (`None`).
    Noncharacter { name: Option<String>, c: char },
    /// A number outside ±(2^53−1), as parsed.
    InexactNumber(String),
    /// The document holds more than [`VALUE_BOUND`] values.
    TooManyValues,
}

impl Broken {
    fn into_problem(self, path: String, e: &serde_json::Error) -> JsonProblem {
        let at = format!("at line {} column {}", e.line(), e.column());
        match self {
            Broken::DuplicateName(name) => JsonProblem {
                json_path: push_key(&path, &name),
                expected: "unique member names in each object (I-JSON, RFC 7493 §2.3)".to_owned(),
                found: format!("member {name:?} a second time {at}"),
            },
            Broken::Noncharacter { name, c } => JsonProblem {
                json_path: match &name {
                    Some(n) => push_key(&path, n),
                    None => path,
                },
                expected: "text without Unicode noncharacters (I-JSON, RFC 7493 §2.1)".to_owned(),
                found: format!(
                    "U+{:04X} in {} {at}",
                    c as u32,
                    if name.is_some() {
                        "a member name"
                    } else {
                        "a string"
                    }
                ),
            },
            Broken::InexactNumber(n) => JsonProblem {
                json_path: path,
                expected: format!(
                    "a number within ±{MAX_EXACT_INTEGER} (2^53−1, exact as an IEEE 754 double; I-JSON, RFC 7493 §2.2)"
                ),
                found: format!("{n} {at}"),
            },
            Broken::TooManyValues => JsonProblem {
                json_path: path,
                expected: format!(
                    "a document of at most {VALUE_BOUND} JSON values (the reader's memory bound)"
                ),
                found: format!("value number {} {at}", VALUE_BOUND + 1),
            },
        }
    }
}

/// A serde_json syntax or encoding error as a problem at `path`.
fn syntax_problem(path: String, e: &serde_json::Error) -> JsonProblem {
    // serde_json says column 0 at the start of a line (nothing read on it yet); columns here are
    // 1-based, like [`position`]'s.
    let (line, column) = (e.line(), e.column().max(1));
    // serde_json's text ends with " at line L column C"; the position is said once, below.
    let text = e.to_string();
    let msg = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m)
        .to_owned();
    // serde_json's words for a surrogate escape that is not half of a pair.
    let surrogate = [
        "lone leading surrogate",
        "unexpected end of hex escape",
        "invalid unicode code point",
    ];
    let expected = if surrogate.iter().any(|s| msg.starts_with(s)) {
        "text without lone surrogates (I-JSON, RFC 7493 §2.1)"
    } else if msg.starts_with("number out of range") {
        "a number within the IEEE 754 double range (I-JSON, RFC 7493 §2.2)"
    } else {
        "a JSON document"
    };
    JsonProblem {
        json_path: path,
        expected: expected.to_owned(),
        found: format!("invalid JSON at line {line} column {column}: {msg}"),
    }
}

/// `DeserializeSeed` building a `serde_json::Value` by the rules in the module docs.
#[derive(Clone, Copy)]
struct StrictValue<'p> {
    problem: &'p RefCell<Option<Broken>>,
    /// Values seen so far in the document (see [`VALUE_BOUND`]).
    values: &'p Cell<usize>,
}

impl StrictValue<'_> {
    fn refuse<E: de::Error>(&self, broken: Broken) -> E {
        let text = match &broken {
            Broken::DuplicateName(n) => format!("duplicate member name {n:?}"),
            Broken::Noncharacter { c, .. } => format!("noncharacter U+{:04X}", *c as u32),
            Broken::InexactNumber(n) => format!("number {n} beyond ±(2^53−1)"),
            Broken::TooManyValues => format!("more than {VALUE_BOUND} values"),
        };
        self.problem.borrow_mut().get_or_insert(broken);
        E::custom(text)
    }

    fn string<E: de::Error>(&self, s: &str, name: Option<&str>) -> Result<(), E> {
        match s.chars().find(|c| is_noncharacter(*c)) {
            Some(c) => Err(self.refuse(Broken::Noncharacter {
                name: name.map(str::to_owned),
                c,
            })),
            None => Ok(()),
        }
    }
}

/// Unicode noncharacters: U+FDD0..=U+FDEF and the last two code points of every plane.
fn is_noncharacter(c: char) -> bool {
    let n = c as u32;
    (0xFDD0..=0xFDEF).contains(&n) || n & 0xFFFE == 0xFFFE
}

impl<'de> DeserializeSeed<'de> for StrictValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        // Counted before the value is built, so a refused document never grows past the bound.
        let n = self.values.get() + 1;
        self.values.set(n);
        if n > VALUE_BOUND {
            return Err(self.refuse(Broken::TooManyValues));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an I-JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        if v > MAX_EXACT_INTEGER {
            return Err(self.refuse(Broken::InexactNumber(v.to_string())));
        }
        Ok(Value::from(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        if v.unsigned_abs() > MAX_EXACT_INTEGER {
            return Err(self.refuse(Broken::InexactNumber(v.to_string())));
        }
        Ok(if v >= 0 {
            Value::from(v as u64)
        } else {
            Value::from(v)
        })
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // serde_json never yields a non-finite double (`1e400` is its own error).
        if v.abs() > MAX_EXACT_INTEGER as f64 || !v.is_finite() {
            return Err(self.refuse(Broken::InexactNumber(format!("{v:e}"))));
        }
        if v.fract() == 0.0 {
            // An integral double within ±(2^53−1) converts exactly; `-0.0` becomes `0`.
            return Ok(if v >= 0.0 {
                Value::from(v as u64)
            } else {
                Value::from(v as i64)
            });
        }
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.string(v, None)?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.string(&v, None)?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            self.string(&name, Some(&name))?;
            if out.contains_key(&name) {
                return Err(self.refuse(Broken::DuplicateName(name)));
            }
            let v = map.next_value_seed(self)?;
            out.insert(name, v);
        }
        Ok(Value::Object(out))
    }
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with(|c: char| c.is_ascii_digit())
}

/// `base` followed by member `key`: `$.a` for a plain name, `$["kubernetes.io/name"]` (the name as a
/// JSON string) otherwise.
pub fn push_key(base: &str, key: &str) -> String {
    if is_plain_key(key) {
        format!("{base}.{key}")
    } else {
        let quoted = serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}"));
        format!("{base}[{quoted}]")
    }
}

/// The value at `path` in `value`, for the member paths [`push_key`] writes (`$.a`,
/// `$.a["kca-webhook-target"]`, `$.a.b`); `None` when a member is missing or the path has another
/// form (array indices are not read).
pub fn value_at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut rest = path.strip_prefix('$')?;
    let mut v = value;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            v = v.get(&r[..end])?;
            rest = &r[end..];
        } else {
            let r = rest.strip_prefix('[')?;
            // A quoted member name: the JSON string up to its closing quote, then `]`.
            let mut de = serde_json::Deserializer::from_str(r).into_iter::<String>();
            let key = de.next()?.ok()?;
            let r = r[de.byte_offset()..].strip_prefix(']')?;
            v = v.get(key.as_str())?;
            rest = r;
        }
    }
    Some(v)
}

/// A `serde_path_to_error` path in `$.a.b[0]` notation.
pub fn json_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut s = "$".to_owned();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => s.push_str(&format!("[{index}]")),
            Segment::Map { key } => s = push_key(&s, key),
            Segment::Enum { variant } => s = push_key(&s, variant),
            Segment::Unknown => s.push_str(".?"),
        }
    }
    s
}

#[cfg(test)]
mod tests;
