//! The words of input problems (`inputs`: the shape check against the JSON Schema and the
//! bound-field checks), kept on each `InputIssue` in both languages.

use crate::error::Source;
use crate::text::Words;

fn w(ja: String, en: String) -> Words {
    Words { ja, en }
}

/// A value as its JSON text (the same in both languages).
pub fn json(text: impl Into<String>) -> Words {
    let t = text.into();
    w(t.clone(), t)
}

/// A member: `field "NAME"`.
pub fn field(name: &str) -> Words {
    w(format!("フィールド {name:?}"), format!("field {name:?}"))
}

/// What `digest` and the input reader take: `a regular file` (not a directory, FIFO or device).
pub fn regular_file() -> Words {
    w("通常のファイル".into(), "a regular file".into())
}

/// No member there: `nothing`.
pub fn nothing() -> Words {
    w("なし".into(), "nothing".into())
}

/// A member the schema does not allow; `allowed` lists the allowed names as JSON strings.
pub fn no_field(name: &str, allowed: &str) -> Words {
    w(
        format!("フィールド {name:?} がないこと (使えるフィールド: {allowed})"),
        format!("no field {name:?} (allowed: {allowed})"),
    )
}

/// An array's length: `N elements`.
pub fn elements(n: u64) -> Words {
    w(
        format!("要素 {n} 個"),
        if n == 1 {
            "1 element".into()
        } else {
            format!("{n} elements")
        },
    )
}

/// The lengths an array may have (`minItems`, `maxItems`).
pub fn length(min: Option<u64>, max: Option<u64>) -> Words {
    let en = |n| elements(n).en;
    match (min, max) {
        (Some(a), Some(b)) if a == b => w(
            format!("要素がちょうど {a} 個"),
            format!("exactly {}", en(a)),
        ),
        (Some(a), Some(b)) => w(format!("要素が {a}〜{b} 個"), format!("{a} to {}", en(b))),
        (Some(a), None) => w(format!("要素が {a} 個以上"), format!("at least {}", en(a))),
        (None, Some(b)) => w(format!("要素が {b} 個以下"), format!("at most {}", en(b))),
        (None, None) => w("別の個数の要素".into(), "another number of elements".into()),
    }
}

/// One of a few values, `values` as JSON texts joined by `, `.
pub fn one_of(values: &str) -> Words {
    w(
        format!("次のいずれか: {values}"),
        format!("one of {values}"),
    )
}

/// A value of the JSON Schema type `ty` (`object`, `array`, `string`, …).
pub fn json_type(ty: Option<&str>) -> Words {
    let (ja, en) = match ty {
        Some("object") => ("JSON オブジェクト", "a JSON object"),
        Some("array") => ("JSON 配列", "a JSON array"),
        Some("string") => ("文字列", "a string"),
        Some("integer") => ("整数", "an integer"),
        Some("number") => ("数値", "a number"),
        Some("boolean") => ("true または false", "true or false"),
        Some("null") => ("null", "null"),
        _ => ("正しい値", "a valid value"),
    };
    w(ja.into(), en.into())
}

/// A Kubernetes UID; `what`: its English words (`inputs::Uid::WHAT`).
pub fn uid(what: &str) -> Words {
    w(
        "UID (metadata.uid と同じ、8-4-4-4-12 桁の小文字 16 進数)".into(),
        what.into(),
    )
}

/// A canonical digest; `what`: its English words (`inputs::Sha256Hex::WHAT`).
pub fn digest(what: &str) -> Words {
    w(
        "正規ダイジェスト (小文字 16 進数 64 文字、kca-webhook-lab digest の出力)".into(),
        what.into(),
    )
}

/// A string matching a regular expression.
pub fn matching(pattern: &str) -> Words {
    w(
        format!("パターン {pattern} に合う文字列"),
        format!("a string matching {pattern}"),
    )
}

/// The right value of a bound field (`expected`, the value itself) and where it comes from.
pub fn bound(expected: &str, source: Source) -> Words {
    let (ja, en) = match source {
        Source::NodeUid => ("実際のノードの UID".to_owned(), "live node uid".to_owned()),
        Source::NamespaceUid(ns) => (
            format!("名前空間 {ns} の実際の UID"),
            format!("live uid of namespace {ns}"),
        ),
        Source::DeploymentUid => (
            "Deployment kyverno-admission-controller の実際の UID".to_owned(),
            "live uid of deployment kyverno-admission-controller".to_owned(),
        ),
        Source::PolicyUid => (
            "evidence/02.json の facts.policy.metadata.uid".to_owned(),
            "facts.policy.metadata.uid of evidence/02.json".to_owned(),
        ),
        Source::Digest(act) => (
            format!("evidence/{act:02}.json の正規ダイジェスト"),
            format!("canonical digest of evidence/{act:02}.json"),
        ),
    };
    w(
        format!("{expected:?} ({ja})"),
        format!("{expected:?} ({en})"),
    )
}

/// A namespace the live cluster must have.
pub fn namespace_on_cluster(ns: &str) -> Words {
    w(
        format!("クラスター上の名前空間 {ns}"),
        format!("a namespace {ns} on the cluster"),
    )
}

/// Nothing on the cluster.
pub fn none() -> Words {
    w("なし".into(), "none".into())
}

/// The value `policy.json` has there (JSON text): `policy-ignore.json` may differ only in
/// `spec.failurePolicy`.
pub fn as_in_policy(expected: &str) -> Words {
    w(
        format!("{expected} (policy.json と同じ。違ってよいのは spec.failurePolicy だけ)"),
        format!("{expected} (as in policy.json; only spec.failurePolicy may differ)"),
    )
}

#[cfg(test)]
mod tests {
    use crate::messages::said;

    /// Every word of an input problem has a Japanese text that is Japanese and an English one,
    /// each naming the same values; a JSON value is the same text in both.
    #[test]
    fn input_problem_words_are_in_both_languages() {
        use crate::error::Source;
        let words = [
            said::field("node_uid"),
            said::nothing(),
            said::no_field("comment", "\"action\""),
            said::elements(2),
            said::length(Some(1), Some(1)),
            said::length(Some(1), Some(3)),
            said::length(Some(1), None),
            said::length(None, Some(3)),
            said::one_of("\"a\", \"b\""),
            said::json_type(Some("object")),
            said::json_type(Some("array")),
            said::json_type(Some("integer")),
            said::json_type(None),
            said::uid("a UID"),
            said::digest("a digest"),
            said::matching("^x$"),
            said::bound("u", Source::NodeUid),
            said::bound("u", Source::NamespaceUid("kca-webhook-target")),
            said::bound("u", Source::DeploymentUid),
            said::bound("u", Source::PolicyUid),
            said::bound("d", Source::Digest(5)),
            said::namespace_on_cluster("kca-webhook-target"),
            said::none(),
            said::as_in_policy("3"),
        ];
        for w in &words {
            assert!(!w.ja.is_ascii() && w.en.is_ascii() && w.ja != w.en, "{w:?}");
            for value in [
                "node_uid",
                "comment",
                "\"a\"",
                "^x$",
                "kca-webhook-target",
                "05",
            ] {
                assert_eq!(w.ja.contains(value), w.en.contains(value), "{value}: {w:?}");
            }
        }
        assert_eq!(said::json("\"x\"").ja, said::json("\"x\"").en);
    }
}
