//! `explain` says what `grade` says: the classifier's table cases (the same cases as
//! `lab/src/classify.rs`'s tests, kept in step: each is first checked against `classify` itself),
//! pasted as kubectl prints them and as a `Status` JSON, must get the class `classify` gives; and
//! every request recorded by a real lab run, explained from its evidence file and JSON path, gets
//! the outcome the evidence recorded and the graders accept.

mod common;

use lab::classify::classify;
use lab::evidence::{GetResult, Lab, Outcome};
use lab::explain::{answer_at, explain, parse_answer};
use lab::text::Lang;
use serde_json::{Value, json};

const HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
const DENY: &str = "denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED";

fn call_failure(cause: &str) -> String {
    format!(
        "Internal error occurred: failed calling webhook \"{HOOK}\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s\": {cause}"
    )
}

/// `(name, status, reason, message, expected)`: the error-answer table of `classify.rs`.
fn table() -> Vec<(&'static str, u16, Option<&'static str>, String, Outcome)> {
    vec![
        ("deny_400", 400, Some(""), format!("admission webhook \"{HOOK}\" {DENY}"), Outcome::ExplicitDeny),
        ("deny_400_no_reason", 400, None, format!("admission webhook \"{HOOK}\" {DENY}"), Outcome::ExplicitDeny),
        ("deny_403", 403, Some("Forbidden"), format!("pods \"bad-7f3a\" is forbidden: admission webhook \"{HOOK}\" {DENY}"), Outcome::ExplicitDeny),
        ("deny_aggregated", 400, None, format!("admission webhook \"vpol.validate.kyverno.svc-fail\" {DENY}"), Outcome::ExplicitDeny),
        ("deny_without_marker", 400, None, "admission webhook \"other.example.com\" denied the request: image not allowed".into(), Outcome::OtherError),
        ("marker_only_in_name", 400, None, format!("admission webhook \"{HOOK}\" denied the request without explanation"), Outcome::OtherError),
        ("timeout", 500, Some("InternalError"), call_failure("context deadline exceeded"), Outcome::WebhookTimeout),
        ("client_timeout", 500, Some("InternalError"), call_failure("net/http: request canceled (Client.Timeout exceeded while awaiting headers)"), Outcome::WebhookTimeout),
        ("dial_timeout", 500, Some("InternalError"), call_failure("dial tcp 10.43.12.7:443: i/o timeout"), Outcome::WebhookTimeout),
        ("refused", 500, Some("InternalError"), call_failure("dial tcp 10.43.12.7:443: connect: connection refused"), Outcome::ConnectionRefused),
        ("dns", 500, Some("InternalError"), "Internal error occurred: failed calling webhook \"x.example\": failed to call webhook: Post \"https://hook.example.invalid:443/x?timeout=3s\": dial tcp: lookup hook.example.invalid on 10.0.0.10:53: no such host".into(), Outcome::DnsError),
        ("no_endpoints", 500, Some("InternalError"), call_failure("no endpoints available for service \"kyverno-svc\""), Outcome::NoEndpoints),
        ("service_missing", 500, Some("InternalError"), call_failure("service \"kyverno-svc\" not found"), Outcome::OtherError),
        ("tls", 500, Some("InternalError"), call_failure("tls: failed to verify certificate: x509: certificate signed by unknown authority"), Outcome::OtherError),
        ("already_exists", 409, Some("AlreadyExists"), "pods \"good-1\" already exists".into(), Outcome::AlreadyExists),
        ("request_timeout", 504, Some("Timeout"), "Timeout: request did not complete within requested timeout".into(), Outcome::OtherError),
        ("dry_run_unsupported", 400, Some("BadRequest"), format!("admission webhook \"{HOOK}\" does not support dry run"), Outcome::OtherError),
        ("internal_other", 500, Some("InternalError"), "Internal error occurred: KCA_ENVIRONMENT_REQUIRED".into(), Outcome::OtherError),
    ]
}

/// How kubectl prints an error answer: `Error from server (Reason): error when creating "pod.yaml": msg`,
/// or `Error from server: msg` when the reason is empty.
fn kubectl(reason: Option<&str>, message: &str) -> String {
    match reason.filter(|r| !r.is_empty()) {
        Some(r) => format!("Error from server ({r}): error when creating \"pod.yaml\": {message}"),
        None => format!("Error from server: error when creating \"pod.yaml\": {message}"),
    }
}

#[test]
fn explain_gives_the_classifiers_class_for_every_table_case() {
    let no_get = GetResult {
        exists: false,
        uid: None,
        phase: None,
        at: String::new(),
    };
    for (name, status, reason, message, expected) in table() {
        // The table is the classifier's: if a rule of classify.rs changes, this line says so.
        assert_eq!(
            classify(
                status,
                reason,
                Some(&message),
                &no_get,
                false,
                lab::probe::MARKERS
            ),
            expected,
            "{name}: the classifier no longer gives this class; update this table with classify.rs's"
        );
        for lab in [Lab::A, Lab::B] {
            let pasted = parse_answer(&kubectl(reason, &message)).unwrap();
            assert_eq!(
                explain(&pasted, lab, Lang::En).outcome,
                expected,
                "{name}: kubectl text"
            );
            let status_json = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "code": status, "reason": reason.unwrap_or(""), "message": message});
            let from_json = parse_answer(&status_json.to_string()).unwrap();
            assert_eq!(
                explain(&from_json, lab, Lang::Ja).outcome,
                expected,
                "{name}: Status JSON"
            );
        }
    }
}

#[test]
fn explain_names_the_rule_and_the_lab_meaning() {
    let a = parse_answer(&kubectl(
        Some("InternalError"),
        &call_failure("context deadline exceeded"),
    ))
    .unwrap();
    let e = explain(&a, Lab::B, Lang::En);
    assert_eq!(e.rule.0, 4);
    assert!(e.lines[0] == "outcome: webhook-timeout", "{:?}", e.lines);
    assert!(e.lines[2].contains("frozen process"), "{:?}", e.lines);
    let ja = explain(&a, Lab::B, Lang::Ja);
    assert!(ja.lines[2].contains("凍結"), "{:?}", ja.lines);
    // Japanese labels and rule names; the outcome stays the evidence's word.
    assert_eq!(ja.lines[0], "判定結果: webhook-timeout", "{:?}", ja.lines);
    assert!(
        ja.lines[1].starts_with("判定規則: 4 (`failed calling webhook` + その原因)"),
        "{:?}",
        ja.lines
    );
    let other = explain(
        &parse_answer("Error from server: something odd").unwrap(),
        Lab::B,
        Lang::Ja,
    );
    assert_eq!(other.rule, (5, "anything else"));
    assert!(
        other.lines[1].starts_with("判定規則: 5 (上の規則のどれにも当たらないもの)"),
        "{:?}",
        other.lines
    );
    // A pasted success is not `stored` without the GET, and explain says why.
    let ok = parse_answer("pod/kca-x created").unwrap();
    let e = explain(&ok, Lab::A, Lang::En);
    assert_eq!(e.outcome, Outcome::OtherError);
    assert!(
        e.lines.iter().any(|l| l.contains("follow-up GET")),
        "{:?}",
        e.lines
    );
    assert!(parse_answer("   ").is_err());
}

#[test]
fn explain_on_recorded_evidence_agrees_with_grade() {
    let rec = common::recorded::Recording::open("recorded/b-20261129T153816Z");
    let dir = rec.dir.clone();
    assert!(rec.grade(&rec.grade_input()).iter().all(|f| f.passed()));
    let mut n = 0;
    // The acts that send requests (those whose evidence keeps their audit events).
    for act in lab::acts::of(Lab::B)
        .iter()
        .filter(|s| s.audit && rec.acts.contains(&s.number))
        .map(|s| s.number)
    {
        let path = dir.join(format!("evidence/{act:02}.json"));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut ptrs = Vec::new();
        fn walk(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if m.contains_key("http_status") {
                        out.push(at.clone());
                    }
                    for (k, x) in m {
                        walk(x, format!("{at}/{k}"), out);
                    }
                }
                Value::Array(a) => a
                    .iter()
                    .enumerate()
                    .for_each(|(i, x)| walk(x, format!("{at}/{i}"), out)),
                _ => {}
            }
        }
        walk(&v["facts"], "/facts".into(), &mut ptrs);
        for p in ptrs {
            let a = answer_at(&path, &p).unwrap();
            let e = explain(&a, Lab::B, Lang::En);
            assert_eq!(
                Some(e.outcome.as_str()),
                a.recorded.as_deref(),
                "{} {p}",
                path.display()
            );
            n += 1;
        }
    }
    // act 3: good, bad; acts 5 and 6: target good/bad, control, after_resume[0], first_explicit_deny
    // (+ healthy_bad in act 6); act 7: healthy_bad.
    assert_eq!(n, 14, "requests found in the recorded run");
    // The dotted form reaches the same request.
    let p = dir.join("evidence/05.json");
    assert_eq!(
        answer_at(&p, "facts.target_bad").unwrap(),
        answer_at(&p, "/facts/target_bad").unwrap()
    );
    assert!(
        answer_at(&p, "/facts/nothing")
            .unwrap_err()
            .to_string()
            .contains("/facts/nothing")
    );
    // The graders' form, `name[i]`, reaches a request in a list (every lab C request is one).
    assert_eq!(
        answer_at(&p, "facts.after_resume[0]").unwrap(),
        answer_at(&p, "/facts/after_resume/0").unwrap()
    );
}
