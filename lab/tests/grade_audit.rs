//! The audit cross-checks (`lab::grade::audit`) on fixture evidence: the generated `pass/` work
//! directories carry `facts.admission_audit` for acts 3, 5, 6 and 7 (events as the embedded
//! node's log gives them for the fixtures' requests) and pass every rule; each `flagged/*audit*`
//! case breaks one claim and must be reported under its rule (the finding's subject ends with the
//! rule's name and its detail names both records); evidence without audit, or with audit not
//! configured, gets an `audit-not-observed` note, never a silent pass.

mod common;

use std::collections::BTreeMap;

use lab::audit::FACTS_KEY;
use lab::evidence::Lab;
use lab::grade::{self, Code, Findings, GradeInput};
use lab::text::Lang;
use lab::workdir::Workdir;
use serde_json::{Value, json};

fn pass(lab: Lab) -> BTreeMap<String, Value> {
    common::read_tree(&common::fixtures_dir().join(lab.as_str()).join("pass"))
}

fn grade_tree(lab: Lab, act: u8, files: &BTreeMap<String, Value>) -> Findings {
    let tmp = tempfile::tempdir().unwrap();
    let files: BTreeMap<_, _> = files
        .iter()
        .filter(|(k, _)| k.as_str() != "case.json")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    common::write_tree(tmp.path(), &files);
    grade::grade(lab, act, &GradeInput::load(&Workdir::new(tmp.path()), lab))
}

fn with_case(lab: Lab, case: &str) -> (u8, Findings) {
    let overlay = common::read_tree(
        &common::fixtures_dir()
            .join(lab.as_str())
            .join("flagged")
            .join(case),
    );
    let act = overlay["case.json"]["act"].as_u64().unwrap() as u8;
    let mut files = pass(lab);
    files.extend(overlay);
    (act, grade_tree(lab, act, &files))
}

fn audit_findings(f: &Findings) -> Vec<&lab::grade::Finding> {
    f.findings
        .iter()
        .filter(|x| x.subject.contains(FACTS_KEY))
        .collect()
}

/// The acts whose evidence carries audit events (the registry's `audit` flag).
fn audit_acts(lab: Lab) -> Vec<u8> {
    lab::acts::of(lab)
        .iter()
        .filter(|s| s.audit)
        .map(|s| s.number)
        .collect()
}

#[test]
fn the_passing_fixtures_carry_audit_and_pass_every_audit_rule() {
    for lab in [Lab::A, Lab::B] {
        let files = pass(lab);
        for act in audit_acts(lab) {
            let with = grade_tree(lab, act, &files);
            assert!(
                audit_findings(&with).is_empty()
                    && !with.notes.iter().any(|n| n.code == Code::AuditNotObserved),
                "{lab:?} act {act}: {}",
                lab::messages::findings(Lang::En, &with)
            );
            // The rules ran: more checks than with the audit record removed (a note instead).
            let mut without = files.clone();
            without.get_mut(&format!("evidence/{act:02}.json")).unwrap()["facts"]
                .as_object_mut()
                .unwrap()
                .remove(FACTS_KEY);
            let bare = grade_tree(lab, act, &without);
            assert!(
                with.checks > bare.checks + 2,
                "{lab:?} act {act}: {} vs {}",
                with.checks,
                bare.checks
            );
            let note = bare
                .notes
                .iter()
                .find(|n| n.code == Code::AuditNotObserved)
                .unwrap_or_else(|| panic!("{lab:?} act {act}: no audit note"));
            assert!(
                note.detail.contains("audit not observed"),
                "{}",
                note.detail
            );
        }
    }
}

/// Every flagged audit case: the expected code, under the named rule, naming both records.
#[test]
fn each_audit_rule_flags_its_case() {
    let cases: &[(Lab, &str, Code, &str)] = &[
        (
            Lab::B,
            "act3-audit-view-not-from-lines",
            Code::RawMismatch,
            " raw",
        ),
        (
            Lab::B,
            "act5-audit-no-final-event",
            Code::ObservationMissing,
            " final-event",
        ),
        (
            Lab::B,
            "act5-audit-timeout-stored",
            Code::AuditContradicted,
            " timeout-under-fail",
        ),
        (
            Lab::B,
            "act6-audit-stored-without-failed-open",
            Code::AuditContradicted,
            " failed-open",
        ),
        (
            Lab::B,
            "act6-audit-failed-open-other-webhook",
            Code::AuditContradicted,
            " failed-open",
        ),
        (
            Lab::B,
            "act7-audit-deny-code-differs",
            Code::AuditContradicted,
            " explicit-deny",
        ),
        (
            Lab::A,
            "act5-audit-failed-open-while-unregistered",
            Code::AuditContradicted,
            " admitted-without-webhook",
        ),
        (
            Lab::A,
            "act7-audit-dry-run-deny-code-differs",
            Code::AuditContradicted,
            " explicit-deny",
        ),
    ];
    for (lab, case, code, rule) in cases {
        let (act, f) = with_case(*lab, case);
        let hit = f
            .findings
            .iter()
            .find(|x| x.code == *code && x.subject.ends_with(rule));
        let Some(hit) = hit else {
            panic!(
                "{lab:?} {case}: expected {} under{rule}: {}",
                code.as_str(),
                lab::messages::findings(Lang::En, &f)
            )
        };
        assert!(
            hit.subject
                .starts_with(&format!("evidence/{act:02}.json facts.{FACTS_KEY}")),
            "{}",
            hit.subject
        );
        if *code == Code::AuditContradicted {
            // Both records: the request (file, name, outcome) and the audit event (id, path).
            assert!(
                hit.detail
                    .contains(&format!("evidence/{act:02}.json request "))
                    && hit.detail.contains("audit event ")
                    && hit.detail.contains(".lines["),
                "{}",
                hit.detail
            );
        }
    }
}

#[test]
fn a_code_that_is_not_the_clients_is_flagged() {
    // Lab B act 3: the labelled pod was stored (201); its audit event says 200.
    let mut files = pass(Lab::B);
    let a = &mut files.get_mut("evidence/03.json").unwrap()["facts"][FACTS_KEY];
    let good = a["requests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["events"][0]["code"] == json!(201))
        .unwrap();
    let mut ev: Value = serde_json::from_str(good["lines"][0].as_str().unwrap()).unwrap();
    ev["responseStatus"]["code"] = json!(200);
    let line = ev.to_string();
    good["events"][0] = serde_json::to_value(lab::audit::parse_line(0, &line).unwrap()).unwrap();
    good["lines"][0] = json!(line);
    let f = grade_tree(Lab::B, 3, &files);
    assert!(
        f.findings
            .iter()
            .any(|x| x.code == Code::AuditContradicted && x.subject.ends_with(" response-code")),
        "{}",
        lab::messages::findings(Lang::En, &f)
    );
}

#[test]
fn a_deny_message_that_is_not_the_clients_is_flagged() {
    // Lab A act 3: the unlabelled pod's deny; its audit event names another webhook.
    let mut files = pass(Lab::A);
    let a = &mut files.get_mut("evidence/03.json").unwrap()["facts"][FACTS_KEY];
    let bad = a["requests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["events"][0]["code"] == json!(400))
        .unwrap();
    let mut ev: Value = serde_json::from_str(bad["lines"][0].as_str().unwrap()).unwrap();
    ev["responseStatus"]["message"] = json!(
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
    );
    let line = ev.to_string();
    bad["events"][0] = serde_json::to_value(lab::audit::parse_line(0, &line).unwrap()).unwrap();
    bad["lines"][0] = json!(line);
    let f = grade_tree(Lab::A, 3, &files);
    let hit = f
        .findings
        .iter()
        .find(|x| x.code == Code::AuditContradicted && x.subject.ends_with(" response-message"));
    assert!(hit.is_some(), "{}", lab::messages::findings(Lang::En, &f));
}

#[test]
fn audit_not_configured_is_a_note_with_the_reason_not_a_pass_or_a_failure() {
    let mut files = pass(Lab::B);
    files.get_mut("evidence/06.json").unwrap()["facts"][FACTS_KEY] = json!({
        "source": "none", "status": "not-configured",
        "reason": "no audit log configured (--audit-log / KCA_AUDIT_LOG): only the embedded backend's API server writes one",
        "log": null, "offset": null,
        "window": ["2026-11-29T10:05:00.000Z", "2026-11-29T10:05:25.000Z"],
        "waited_ms": 0, "requests": []
    });
    let f = grade_tree(Lab::B, 6, &files);
    assert!(audit_findings(&f).is_empty(), "{f:?}");
    let note = f
        .notes
        .iter()
        .find(|n| n.code == Code::AuditNotObserved)
        .expect("a note");
    assert!(note.detail.contains("not-configured"), "{}", note.detail);
    assert!(lab::messages::findings(Lang::En, &f).contains("note [audit-not-observed]"));
}

#[test]
fn the_recorded_runs_predate_audit_and_get_notes_not_failures() {
    for (lab, run) in [
        (Lab::B, "b-20261129T153816Z"),
        (Lab::A, "a-20261130T194643Z"),
    ] {
        let rec = common::recorded::Recording::open(&format!("recorded/{run}"));
        assert_eq!(rec.lab, lab, "{run}");
        let (_tmp, gi) = rec.copy_with(|_| {});
        for f in rec.grade(&gi) {
            assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
            let noted = f.notes.iter().any(|n| n.code == Code::AuditNotObserved);
            assert_eq!(
                noted,
                audit_acts(lab).contains(&f.act),
                "{lab:?} act {}",
                f.act
            );
        }
    }
}

const RUN_AUDIT: &str = "recorded/b-20261130T210502Z";
const IGNORE: &str = "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label";

/// The recorded real lab B run with audit (see its README): every act passes with no audit note,
/// act 5's frozen requests are 500 without failed-open, act 6's are 201 with the failed-open
/// annotation naming the Ignore webhook — as the real log wrote them.
#[test]
fn the_recorded_audit_run_passes_and_shows_the_failed_open_annotations() {
    let rec = common::recorded::Recording::open(RUN_AUDIT);
    let files = rec.files();
    let (_tmp, gi) = rec.copy_with(|_| {});
    for f in rec.grade(&gi) {
        assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
        assert!(
            !f.notes.iter().any(|n| n.code == Code::AuditNotObserved),
            "act {}: {:?}",
            f.act,
            f.notes
        );
    }
    let record = |act: u8| -> lab::audit::AdmissionAudit {
        serde_json::from_value(
            files[&format!("evidence/{act:02}.json")]["facts"][FACTS_KEY].clone(),
        )
        .unwrap()
    };
    let final_of = |a: &lab::audit::AdmissionAudit, part: &str| -> lab::audit::EventView {
        let r = a.requests.iter().find(|r| r.name.contains(part)).unwrap();
        lab::audit::parse_line(0, r.lines.last().unwrap()).unwrap()
    };
    let (five, six) = (record(5), record(6));
    for part in ["-frozen-good-", "-frozen-bad-"] {
        let e = final_of(&five, part);
        assert_eq!((e.stage.as_str(), e.code), ("ResponseComplete", Some(500)));
        assert!(e.failed_open().is_empty());
        let e = final_of(&six, part);
        assert_eq!(e.code, Some(201));
        assert_eq!(
            e.failed_open(),
            vec![(
                "failed-open.validating.webhook.admission.k8s.io/round_0_index_0",
                IGNORE
            )]
        );
    }
}

#[test]
fn the_recorded_audit_run_without_a_failed_open_annotation_is_flagged() {
    let mut files = common::read_tree(&common::fixtures_dir().join(RUN_AUDIT));
    let a = &mut files.get_mut("evidence/06.json").unwrap()["facts"][FACTS_KEY];
    let r = a["requests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["name"].as_str().unwrap().contains("-frozen-good-"))
        .unwrap();
    let mut ev: Value = serde_json::from_str(r["lines"][0].as_str().unwrap()).unwrap();
    ev["annotations"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| !k.starts_with("failed-open."));
    let line = ev.to_string();
    r["events"][0] = serde_json::to_value(lab::audit::parse_line(0, &line).unwrap()).unwrap();
    r["lines"][0] = json!(line);
    let f = grade_tree(Lab::B, 6, &files);
    let hit = f
        .findings
        .iter()
        .find(|x| x.code == Code::AuditContradicted && x.subject.ends_with(" failed-open"));
    let hit = hit.unwrap_or_else(|| panic!("{}", lab::messages::findings(Lang::En, &f)));
    assert!(
        hit.detail.contains("-frozen-good-") && hit.detail.contains("stored"),
        "{}",
        hit.detail
    );
}
