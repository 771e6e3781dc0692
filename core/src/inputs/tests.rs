//! Unit tests of strict input validation and the generated schemas.

use super::*;
use crate::evidence::Lab;
use serde_json::{Value, json};

/// The answer keys live in xtask (the student binary ships none); the tests read the same file.
#[path = "../../../xtask/src/lab_run/reference.rs"]
mod reference;
use reference::{
    report_a as reference_report_a, report_c as reference_report_c, value as reference,
};

const NODE: &str = "11111111-2222-4333-8444-555555555555";
const DEPLOY: &str = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
const NS_T: &str = "0b6f3c9e-2d4a-4f7e-9c1a-5e8d7b6a4c3f";
const NS_C: &str = "1c7a4dae-3e5b-4a8f-8d2b-6f9e8c7b5d40";
const POLICY_UID: &str = "9f8e7d6c-5b4a-4321-8fed-cba987654321";

fn full_ctx() -> Context {
    let mut ctx = Context {
        node_uid: Some(NODE.into()),
        namespaces: Some(
            [
                ("kca-webhook-target".to_owned(), NS_T.to_owned()),
                ("kca-webhook-control".to_owned(), NS_C.to_owned()),
            ]
            .into(),
        ),
        deployment_uid: Some(DEPLOY.into()),
        policy_uid: Some(POLICY_UID.into()),
        ..Default::default()
    };
    for act in 1..=crate::acts::max_count() {
        ctx.evidence_digests.insert(act, format!("{act:0>64}"));
    }
    ctx
}

fn reference_of(file: InputFile) -> Value {
    match file {
        InputFile::ReportA => reference_report_a(&full_ctx(), false).unwrap(),
        InputFile::ReportC => reference_report_c(
            &full_ctx(),
            &[
                ("leader_freeze", "some-matching-requests-timeout".into()),
                ("lease", "taken-over-during-freeze".into()),
                ("former_leader", "restarted".into()),
                ("follower_freeze_ignore", "some-unvalidated-stored".into()),
                ("registration", "kept".into()),
                ("existing", "same-uid-running".into()),
            ],
        )
        .unwrap(),
        f => reference(f, &full_ctx()).unwrap(),
    }
}

fn only_issue(r: Result<AnyInput, LabError>) -> InputIssue {
    match r {
        Err(LabError::InputInvalid { issues }) => {
            assert_eq!(issues.len(), 1, "{issues:?}");
            issues.into_iter().next().unwrap()
        }
        other => panic!("expected one input issue, got {other:?}"),
    }
}

fn all_issues(r: Result<AnyInput, LabError>) -> Vec<InputIssue> {
    match r {
        Err(LabError::InputInvalid { issues }) => issues,
        other => panic!("expected input issues, got {other:?}"),
    }
}

fn set(v: &mut Value, pointer: &str, new: Value) {
    *v.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = new;
}

/// Every input file of every lab (lab B's, then lab A's and lab C's own).
fn all() -> Vec<InputFile> {
    let mut files = InputFile::all(Lab::B);
    for f in InputFile::all(Lab::A)
        .into_iter()
        .chain(InputFile::all(Lab::C))
    {
        if !files.contains(&f) {
            files.push(f);
        }
    }
    files
}

#[test]
fn reference_inputs_pass_offline_and_with_context() {
    for file in all() {
        let v = reference_of(file);
        validate(file, &v, &Context::default()).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let mut ctx = full_ctx();
        ctx.policy = Some(reference_of(InputFile::Policy));
        validate(file, &v, &ctx).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    }
}

#[test]
fn reference_policy_is_the_course_policy() {
    let expected = json!({
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "kca-webhook-label"},
        "spec": {
            "validationActions": ["Deny"],
            "failurePolicy": "Fail",
            "webhookConfiguration": {"timeoutSeconds": 3},
            "evaluation": {"background": {"enabled": false}},
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kca-webhook-target"}},
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
            },
            "validations": [{"expression": "'environment' in object.metadata.?labels.orValue({})", "message": "KCA_ENVIRONMENT_REQUIRED"}]
        }
    });
    assert_eq!(reference_of(InputFile::Policy), expected);
}

#[test]
fn wrong_constant_names_path_expected_found() {
    let mut v = reference_of(InputFile::Policy);
    set(&mut v, "/spec/validations/0/message", json!("KCA_ENV"));
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.file, "policy.json");
    assert_eq!(i.json_path, "$.spec.validations[0].message");
    assert_eq!(i.expected, "\"KCA_ENVIRONMENT_REQUIRED\"");
    assert_eq!(i.found, "\"KCA_ENV\"");
}

#[test]
fn unknown_nested_field_is_rejected() {
    let mut v = reference_of(InputFile::Policy);
    v["spec"]["matchConstraints"]["objectSelector"] = json!({});
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.json_path, "$.spec.matchConstraints.objectSelector");
    assert_eq!(i.found, "field \"objectSelector\"");
    assert!(
        i.expected.starts_with("no field \"objectSelector\""),
        "{}",
        i.expected
    );
}

#[test]
fn unknown_top_level_field_is_rejected() {
    let mut v = reference_of(InputFile::FreezePlan);
    v["comment"] = json!("hi");
    let i = only_issue(validate(InputFile::FreezePlan, &v, &Context::default()));
    assert_eq!(i.json_path, "$.comment");
    assert_eq!(i.found, "field \"comment\"");
}

#[test]
fn extra_label_in_selector_is_rejected_with_quoted_path() {
    let mut v = reference_of(InputFile::Policy);
    v["spec"]["matchConstraints"]["namespaceSelector"]["matchLabels"]["team"] = json!("x");
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(
        i.json_path,
        "$.spec.matchConstraints.namespaceSelector.matchLabels.team"
    );
    let mut v = reference_of(InputFile::Policy);
    set(
        &mut v,
        "/spec/matchConstraints/namespaceSelector/matchLabels/kubernetes.io~1metadata.name",
        json!("kca-webhook-control"),
    );
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(
        i.json_path,
        "$.spec.matchConstraints.namespaceSelector.matchLabels[\"kubernetes.io/metadata.name\"]"
    );
    assert_eq!(i.expected, "\"kca-webhook-target\"");
    assert_eq!(i.found, "\"kca-webhook-control\"");
}

#[test]
fn missing_field_is_named() {
    let mut v = reference_of(InputFile::Policy);
    v["spec"].as_object_mut().unwrap().remove("evaluation");
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.json_path, "$.spec.evaluation");
    assert_eq!(i.expected, "field \"evaluation\"");
    assert_eq!(i.found, "nothing");
}

#[test]
fn number_as_string_is_rejected() {
    let mut v = reference_of(InputFile::Policy);
    set(
        &mut v,
        "/spec/webhookConfiguration/timeoutSeconds",
        json!("3"),
    );
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.json_path, "$.spec.webhookConfiguration.timeoutSeconds");
    assert_eq!(i.expected, "3");
    assert_eq!(i.found, "\"3\"");
}

#[test]
fn extra_array_element_is_rejected() {
    let mut v = reference_of(InputFile::Policy);
    set(&mut v, "/spec/validationActions", json!(["Deny", "Audit"]));
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.json_path, "$.spec.validationActions");
    assert!(i.found.contains('2'), "{i:?}");
    let mut v = reference_of(InputFile::Policy);
    set(
        &mut v,
        "/spec/matchConstraints/resourceRules/0/operations",
        json!([]),
    );
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(
        i.json_path,
        "$.spec.matchConstraints.resourceRules[0].operations"
    );
}

#[test]
fn policy_json_must_be_fail_and_ignore_file_must_be_ignore() {
    let ignore = reference_of(InputFile::PolicyIgnore);
    let i = only_issue(validate(InputFile::Policy, &ignore, &Context::default()));
    assert_eq!(
        (i.json_path.as_str(), i.expected.as_str(), i.found.as_str()),
        ("$.spec.failurePolicy", "\"Fail\"", "\"Ignore\"")
    );
    let fail = reference_of(InputFile::Policy);
    let i = only_issue(validate(
        InputFile::PolicyIgnore,
        &fail,
        &Context::default(),
    ));
    assert_eq!(i.file, "policy-ignore.json");
    assert_eq!(
        (i.expected.as_str(), i.found.as_str()),
        ("\"Ignore\"", "\"Fail\"")
    );
}

#[test]
fn policy_ignore_must_equal_policy_except_failure_policy() {
    // A policy.json that is itself wrong (typo'd message) makes an otherwise correct
    // policy-ignore.json differ: the difference is named.
    let mut policy = reference_of(InputFile::Policy);
    set(&mut policy, "/spec/validations/0/message", json!("OTHER"));
    let ctx = Context {
        policy: Some(policy),
        ..Default::default()
    };
    let i = only_issue(validate(
        InputFile::PolicyIgnore,
        &reference_of(InputFile::PolicyIgnore),
        &ctx,
    ));
    assert_eq!(i.json_path, "$.spec.validations[0].message");
    assert!(i.expected.starts_with("\"OTHER\""), "{i:?}");
    assert_eq!(i.found, "\"KCA_ENVIRONMENT_REQUIRED\"");
}

#[test]
fn scope_names_are_not_uids() {
    let mut v = reference_of(InputFile::Scope);
    set(&mut v, "/node_uid", json!("kca-webhook-target"));
    let i = only_issue(validate(InputFile::Scope, &v, &Context::default()));
    assert_eq!(i.json_path, "$.node_uid");
    assert!(i.expected.starts_with("a UID"), "{i:?}");
    assert_eq!(i.found, "\"kca-webhook-target\"");

    // namespaces keyed by UID instead of name: both names missing, both UIDs unknown members.
    let mut v = reference_of(InputFile::Scope);
    v["namespaces"] = json!({ NS_T: "kca-webhook-target", NS_C: "kca-webhook-control" });
    let issues = all_issues(validate(InputFile::Scope, &v, &Context::default()));
    let seen: Vec<(&str, &str)> = issues
        .iter()
        .map(|i| (i.json_path.as_str(), i.found.as_str()))
        .collect();
    let t = format!("$.namespaces[\"{NS_T}\"]");
    let c = format!("$.namespaces[\"{NS_C}\"]");
    let (ft, fc) = (format!("field {NS_T:?}"), format!("field {NS_C:?}"));
    assert_eq!(
        seen,
        [
            ("$.namespaces[\"kca-webhook-target\"]", "nothing"),
            ("$.namespaces[\"kca-webhook-control\"]", "nothing"),
            (t.as_str(), ft.as_str()),
            (c.as_str(), fc.as_str()),
        ]
    );
}

#[test]
fn context_mismatches_are_all_reported() {
    let v = reference_of(InputFile::Scope);
    let mut ctx = full_ctx();
    ctx.node_uid = Some(DEPLOY.into());
    ctx.namespaces
        .as_mut()
        .unwrap()
        .insert("kca-webhook-control".into(), NODE.into());
    match validate(InputFile::Scope, &v, &ctx) {
        Err(LabError::InputInvalid { issues }) => {
            let paths: Vec<_> = issues.iter().map(|i| i.json_path.as_str()).collect();
            assert_eq!(
                paths,
                ["$.node_uid", "$.namespaces[\"kca-webhook-control\"]"]
            );
            assert_eq!(issues[0].found, format!("{NODE:?}"));
            assert!(issues[0].expected.starts_with(&format!("{DEPLOY:?}")));
        }
        other => panic!("{other:?}"),
    }
    // Offline the same file passes: live values are unknown.
    validate(InputFile::Scope, &v, &Context::default()).unwrap();
}

#[test]
fn evidence_digest_must_match_when_known() {
    let v = reference_of(InputFile::ReportB);
    let mut ctx = full_ctx();
    ctx.evidence_digests.insert(6, "f".repeat(64));
    let i = only_issue(validate(InputFile::ReportB, &v, &ctx));
    assert_eq!(i.json_path, "$.ignore_evidence_sha256");
    assert!(i.expected.contains("evidence/06.json"), "{i:?}");

    let mut v = reference_of(InputFile::Recovery);
    set(&mut v, "/ignore_evidence_sha256", json!("ABC"));
    let i = only_issue(validate(InputFile::Recovery, &v, &Context::default()));
    assert!(i.expected.starts_with("a canonical digest"), "{i:?}");

    let v = reference_of(InputFile::Recovery);
    let mut ctx = full_ctx();
    ctx.policy_uid = Some(NS_T.into());
    let i = only_issue(validate(InputFile::Recovery, &v, &ctx));
    assert_eq!(i.json_path, "$.policy_uid");
}

#[test]
fn plan_constants() {
    for (file, pointer, bad) in [
        (InputFile::FreezePlan, "/resume_after_sec", json!(30)),
        (InputFile::FreezePlan, "/signal_identity", json!("pid")),
        (InputFile::FreezePlan, "/preserve_webhook", json!(false)),
        (InputFile::FreezePlan, "/action", json!("freeze")),
        (InputFile::ScalePlan, "/restore_after_sec", json!(60)),
        (InputFile::ScalePlan, "/original_replicas", json!(2)),
        (InputFile::ReportB, "/fail", json!("explicit-deny")),
        (
            InputFile::ReportA,
            "/scale_down",
            json!("registration-gone"),
        ),
    ] {
        let mut v = reference_of(file);
        set(&mut v, pointer, bad.clone());
        let i = only_issue(validate(file, &v, &Context::default()));
        assert_eq!(
            i.json_path,
            format!("${}", pointer.replace('/', ".")),
            "{i:?}"
        );
        assert_eq!(i.found, bad.to_string(), "{i:?}");
    }
}

#[test]
fn report_a_accepts_either_observed_scale_down() {
    let v = reference_report_a(&full_ctx(), true).unwrap();
    assert_eq!(v["scale_down"], "registration-kept");
    validate(InputFile::ReportA, &v, &Context::default()).unwrap();
}

#[test]
fn not_an_object() {
    let i = only_issue(validate(
        InputFile::Recovery,
        &json!([1]),
        &Context::default(),
    ));
    assert_eq!(i.json_path, "$");
    assert_eq!(i.expected, "a JSON object");
    assert_eq!(i.found, "[1]");
    // A struct written as an array of its fields (which serde alone would accept) is refused too.
    let mut v = reference_of(InputFile::Policy);
    v["spec"]["evaluation"] = json!([[false]]);
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(
        (i.json_path.as_str(), i.expected.as_str()),
        ("$.spec.evaluation", "a JSON object")
    );
    let mut v = reference_of(InputFile::Policy);
    v["spec"]["validations"] = json!([[
        "'environment' in object.metadata.?labels.orValue({})",
        "KCA_ENVIRONMENT_REQUIRED"
    ]]);
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(i.json_path, "$.spec.validations[0]");
    // A string where an array belongs.
    let mut v = reference_of(InputFile::Policy);
    v["spec"]["validationActions"] = json!("Deny");
    let i = only_issue(validate(InputFile::Policy, &v, &Context::default()));
    assert_eq!(
        (i.json_path.as_str(), i.expected.as_str(), i.found.as_str()),
        ("$.spec.validationActions", "a JSON array", "\"Deny\"")
    );
}

#[test]
fn input_names() {
    assert_eq!(
        InputFile::from_name(Lab::B, "policy-ignore.json"),
        Some(InputFile::PolicyIgnore)
    );
    assert_eq!(
        InputFile::from_name(Lab::B, "/w/report.json"),
        Some(InputFile::ReportB)
    );
    assert_eq!(
        InputFile::from_name(Lab::A, "report"),
        Some(InputFile::ReportA)
    );
    assert_eq!(InputFile::from_name(Lab::A, "freeze-plan.json"), None);
}

fn walk<'a>(v: &'a Value, out: &mut Vec<&'a serde_json::Map<String, Value>>) {
    match v {
        Value::Object(m) => {
            out.push(m);
            m.values().for_each(|c| walk(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| walk(c, out)),
        _ => {}
    }
}

#[test]
fn schemas_are_closed_and_carry_constants() {
    for file in all() {
        let s = schema(file);
        let mut objects = Vec::new();
        walk(&s, &mut objects);
        let object_schemas: Vec<_> = objects
            .iter()
            .filter(|m| m.get("type") == Some(&json!("object")) && m.contains_key("properties"))
            .collect();
        assert!(!object_schemas.is_empty(), "{file:?}");
        for m in object_schemas {
            assert_eq!(
                m.get("additionalProperties"),
                Some(&json!(false)),
                "{file:?}: {m:?}"
            );
        }
        assert!(
            s["title"].as_str().unwrap().starts_with(file.file_name()),
            "{file:?}"
        );
    }
    let policy = schema(InputFile::Policy).to_string();
    assert!(
        policy.contains(r#""const":"KCA_ENVIRONMENT_REQUIRED""#),
        "{policy}"
    );
    assert!(policy.contains(r#""const":"Fail""#));
    let ignore = schema(InputFile::PolicyIgnore).to_string();
    assert!(ignore.contains(r#""const":"Ignore""#));
    let plan = schema(InputFile::FreezePlan).to_string();
    assert!(
        plan.contains(r#""const":20"#) && plan.contains(r#""const":true"#),
        "{plan}"
    );
    let report = schema(InputFile::ReportA).to_string();
    assert!(
        report.contains(r#""enum":["registration-absent","registration-kept"]"#),
        "{report}"
    );
}

/// `InputFile::bound_fields` (what the missing-input hint lists) names exactly the fields the
/// validation binds: a context in which every live value and digest differs from the reference
/// file's flags those paths and no other, each naming the same source.
#[test]
fn bound_fields_are_the_validated_bindings() {
    let other = |s: &str| s.replace(|c: char| c.is_ascii_hexdigit(), "0");
    for file in all() {
        let v = reference_of(file);
        let mut ctx = full_ctx();
        ctx.node_uid = ctx.node_uid.map(|u| other(&u));
        ctx.deployment_uid = ctx.deployment_uid.map(|u| other(&u));
        ctx.policy_uid = ctx.policy_uid.map(|u| other(&u));
        ctx.namespaces = ctx
            .namespaces
            .map(|m| m.into_iter().map(|(k, u)| (k, other(&u))).collect());
        for d in ctx.evidence_digests.values_mut() {
            *d = "f".repeat(64);
        }
        let issues = match validate(file, &v, &ctx) {
            Err(LabError::InputInvalid { issues }) => issues,
            Ok(_) => Vec::new(),
            Err(e) => panic!("{file:?}: {e}"),
        };
        let flagged: Vec<&str> = issues.iter().map(|i| i.json_path.as_str()).collect();
        let listed: Vec<&str> = file.bound_fields().iter().map(|(p, _)| *p).collect();
        assert_eq!(flagged, listed, "{file:?}");
        for ((_, source), issue) in file.bound_fields().iter().zip(&issues) {
            let says = match source {
                Source::NodeUid => "live node uid".to_owned(),
                Source::NamespaceUid(ns) => format!("live uid of namespace {ns}"),
                Source::DeploymentUid => "deployment kyverno-admission-controller".to_owned(),
                Source::PolicyUid => "evidence/02.json".to_owned(),
                Source::Digest(act) => format!("evidence/{act:02}.json"),
            };
            assert!(
                issue.expected.contains(&says),
                "{file:?}: {issue:?} vs {says}"
            );
        }
    }
}

/// A file with many problems at many depths gets every one of them in one answer (a student fixes
/// them in one round), each with its JSON path, expected and found, in the order the schema
/// declares the fields; serde alone stops at the first.
#[test]
fn every_problem_of_a_file_is_reported_at_once() {
    let mut v = reference_of(InputFile::Policy);
    v.as_object_mut().unwrap().remove("kind");
    v["metadata"]["labels"] = json!({});
    let spec = v["spec"].as_object_mut().unwrap();
    spec.remove("evaluation");
    spec.insert("failurePolicy".into(), json!("Ignore"));
    spec.insert("validationActions".into(), json!(["Deny", "Audit"]));
    set(
        &mut v,
        "/spec/webhookConfiguration/timeoutSeconds",
        json!("3"),
    );
    set(
        &mut v,
        "/spec/matchConstraints/resourceRules/0/operations",
        json!([]),
    );
    set(&mut v, "/spec/validations/0", json!(["x", "y"]));
    let issues = all_issues(validate(InputFile::Policy, &v, &Context::default()));
    let seen: Vec<[&str; 3]> = issues
        .iter()
        .map(|i| [i.json_path.as_str(), i.expected.as_str(), i.found.as_str()])
        .collect();
    assert_eq!(
        seen,
        [
            ["$.kind", "field \"kind\"", "nothing"],
            [
                "$.metadata.labels",
                "no field \"labels\" (allowed: \"name\")",
                "field \"labels\""
            ],
            [
                "$.spec.validationActions",
                "exactly 1 element",
                "2 elements"
            ],
            ["$.spec.failurePolicy", "\"Fail\"", "\"Ignore\""],
            ["$.spec.webhookConfiguration.timeoutSeconds", "3", "\"3\""],
            ["$.spec.evaluation", "field \"evaluation\"", "nothing"],
            [
                "$.spec.matchConstraints.resourceRules[0].operations",
                "exactly 1 element",
                "0 elements"
            ],
            ["$.spec.validations[0]", "a JSON object", "[\"x\",\"y\"]"],
        ],
        "{issues:#?}"
    );
    assert!(issues.iter().all(|i| i.file == "policy.json"));
}

/// Shape and context problems come in the same answer; a value whose shape is wrong is named once
/// (by the shape check), not a second time as a wrong live value.
#[test]
fn shape_and_context_problems_together_each_place_once() {
    let mut v = reference_of(InputFile::FreezePlan);
    v.as_object_mut().unwrap().remove("action");
    set(
        &mut v,
        "/deployment_uid",
        json!("kyverno-admission-controller"),
    );
    let mut ctx = full_ctx();
    ctx.node_uid = Some(DEPLOY.into());
    let issues = all_issues(validate(InputFile::FreezePlan, &v, &ctx));
    let paths: Vec<&str> = issues.iter().map(|i| i.json_path.as_str()).collect();
    assert_eq!(
        paths,
        ["$.action", "$.deployment_uid", "$.node_uid"],
        "{issues:#?}"
    );
    assert!(issues[1].expected.starts_with("a UID"), "{issues:#?}");
    assert!(issues[2].expected.contains("live node uid"), "{issues:#?}");
}

/// Every schema the tool publishes is a valid JSON Schema (the shape check compiles them).
#[test]
fn schemas_are_valid_json_schemas() {
    for file in all() {
        let s = schema(file);
        assert!(jsonschema::meta::is_valid(&s), "{file:?}");
        jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    }
}

/// Wrong versions of each reference file: every member removed, every value replaced by values of
/// other kinds, an unknown member added to every object.
fn mutations(v: &Value) -> Vec<Value> {
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            Value::Object(m) => m.iter().for_each(|(k, c)| {
                pointers(
                    c,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                )
            }),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
            _ => {}
        }
    }
    let mut at = Vec::new();
    pointers(v, String::new(), &mut at);
    let mut out = Vec::new();
    for p in &at {
        for other in [
            json!("x"),
            json!(3),
            json!(20.5),
            json!(true),
            json!(null),
            json!([]),
            json!({}),
            json!(["x"]),
            json!([{}]),
            json!("0b6f3c9e-2d4a-4f7e-9c1a-5e8d7b6a4c3F"),
        ] {
            let mut m = v.clone();
            *m.pointer_mut(p).unwrap() = other;
            out.push(m);
        }
        let mut m = v.clone();
        if let Some((parent, last)) = p.rsplit_once('/') {
            match m.pointer_mut(parent).unwrap() {
                Value::Object(o) => {
                    o.remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                Value::Array(a) => {
                    a.remove(last.parse::<usize>().unwrap());
                }
                _ => unreachable!(),
            }
            out.push(m);
        }
        let mut m = v.clone();
        if let Some(o) = m.pointer_mut(p).unwrap().as_object_mut() {
            o.insert("extra".into(), json!(1));
            out.push(m);
        }
    }
    out
}

/// The shape check (JSON Schema) and the types (serde) accept exactly the same files: over every
/// mutation of every reference file, the schema finds a problem exactly when serde refuses the
/// file. So reporting the schema's problems loses none of serde's, and serde's own error, kept as
/// a backstop in `parse`, is never the only one.
#[test]
fn shape_and_types_agree() {
    fn typed(file: InputFile, v: &Value) -> bool {
        match file {
            InputFile::Scope => serde_json::from_value::<Scope>(v.clone()).is_ok(),
            InputFile::Policy => serde_json::from_value::<Policy>(v.clone()).is_ok(),
            InputFile::FreezePlan => serde_json::from_value::<FreezePlan>(v.clone()).is_ok(),
            InputFile::PolicyIgnore => serde_json::from_value::<PolicyIgnore>(v.clone()).is_ok(),
            InputFile::Recovery => serde_json::from_value::<Recovery>(v.clone()).is_ok(),
            InputFile::ReportB => serde_json::from_value::<ReportB>(v.clone()).is_ok(),
            InputFile::ScalePlan => serde_json::from_value::<ScalePlan>(v.clone()).is_ok(),
            InputFile::ReportA => serde_json::from_value::<ReportA>(v.clone()).is_ok(),
            InputFile::HaPlan => serde_json::from_value::<HaPlan>(v.clone()).is_ok(),
            InputFile::FreezePlanC => serde_json::from_value::<FreezePlanC>(v.clone()).is_ok(),
            InputFile::RecoveryC => serde_json::from_value::<RecoveryC>(v.clone()).is_ok(),
            InputFile::ReportC => serde_json::from_value::<ReportC>(v.clone()).is_ok(),
        }
    }
    let mut checked = 0;
    for file in all() {
        let s = schema(file);
        for m in mutations(&reference_of(file)) {
            let problems = shape::issues(file, &s, &m);
            assert_eq!(
                problems.is_empty(),
                typed(file, &m),
                "{file:?}: schema says {problems:?} for {m}"
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} mutations");
}
