//! Graders on evidence recorded by a real lab run (`fixtures/recorded/`, see its README): every act
//! a recording has passes as recorded, and the kinds of tampering the graders exist for are caught
//! in it too. The acts of the registry a recording does not have (added after it was recorded) are
//! the generated fixture's: [`recordings_cover_acts_1_to_k_and_the_generated_fixture_the_rest`].

mod common;

use common::recorded::Recording;
use lab::evidence::Lab;
use lab::grade::{self, Code, GradeInput};
use lab::text::Lang;
use lab::workdir::Workdir;
use serde_json::{Value, json};

const RUN_B: &str = "recorded/b-20261129T153816Z";
const RUN_A: &str = "recorded/a-20261130T194643Z";

fn load(
    mutate: impl FnOnce(&mut std::collections::BTreeMap<String, Value>),
) -> (tempfile::TempDir, GradeInput) {
    Recording::open(RUN_B).copy_with(mutate)
}

/// The rule for recordings: a recording holds acts 1..=K (its evidence files say which), the tests
/// of a recording grade and render those, and every act of the registry after K is covered by
/// the generated fixture (`fixtures/<lab>/pass/`, where it must pass). On the recording itself
/// the tool says such an act was not run yet (`evidence-missing`, "run the act first"), never
/// pass. Prints what each recording does not cover.
#[test]
fn recordings_cover_acts_1_to_k_and_the_generated_fixture_the_rest() {
    let recordings = Recording::all();
    assert!(recordings.len() >= 3, "{recordings:?}");
    for rec in &recordings {
        let uncovered = rec.uncovered();
        println!(
            "{}: lab {}, acts 1..={} of {}; not covered (the generated fixture's): {uncovered:?}",
            rec.name(),
            rec.lab,
            rec.acts.len(),
            lab::acts::count(rec.lab)
        );
        let pass_dir = common::fixtures_dir().join(rec.lab.as_str()).join("pass");
        let pass = GradeInput::load(&Workdir::new(&pass_dir), rec.lab);
        let on_recording = grade::grade_all(rec.lab, &rec.grade_input());
        for act in uncovered {
            let f = grade::grade(rec.lab, act, &pass);
            assert!(
                f.passed(),
                "act {act}, not in {}, must pass in the generated fixture: {}",
                rec.name(),
                lab::messages::findings(Lang::En, &f)
            );
            let f = &on_recording[usize::from(act) - 1];
            assert_eq!(f.act, act);
            assert!(
                f.has(Code::EvidenceMissing) && !f.passed(),
                "{}: act {act} must be not run yet: {}",
                rec.name(),
                lab::messages::findings(Lang::En, f)
            );
        }
    }
    // What the tool says on a work directory without its last act (a student who has not run it
    // yet, as on a recording older than the registry): that act alone, as not run yet.
    for lab in [Lab::A, Lab::B] {
        let mut files = common::read_tree(&common::fixtures_dir().join(lab.as_str()).join("pass"));
        let last = lab::acts::count(lab);
        assert!(files.remove(&format!("evidence/{last:02}.json")).is_some());
        let tmp = tempfile::tempdir().unwrap();
        common::write_tree(tmp.path(), &files);
        let gi = GradeInput::load(&Workdir::new(tmp.path()), lab);
        for f in grade::grade_all(lab, &gi) {
            if f.act == last {
                let missing: Vec<_> = f.findings.iter().map(|x| x.code).collect();
                assert_eq!(missing, [Code::EvidenceMissing], "lab {lab} act {last}");
                assert!(
                    lab::messages::findings(Lang::En, &f).contains("run the act first"),
                    "{}",
                    lab::messages::findings(Lang::En, &f)
                );
                assert!(
                    lab::messages::findings(Lang::Ja, &f).contains("先に act を実行してください"),
                    "{}",
                    lab::messages::findings(Lang::Ja, &f)
                );
            } else {
                assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
            }
        }
    }
}

const RUN_C: &str = "recorded/c-20261201T234822Z";

/// The real lab C run (acts 1-8) passes as recorded, and what its acts are about is caught when
/// changed: a violating pod of a wave admitted, a replica's counter that does not match its raw
/// lines, the leader swapped with a follower in act 4, a request that timed out against the
/// frozen leader recorded as stored, the Lease moving during a follower's freeze, a report word
/// other than the evidence's.
#[test]
fn recorded_lab_c_passes_and_its_replica_facts_are_held() {
    let rec = Recording::open(RUN_C);
    assert_eq!(rec.lab, Lab::C);
    let (_tmp, gi) = rec.copy_with(|_| {});
    for f in rec.grade(&gi) {
        assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
    }
    let graded = |act: u8, change: &dyn Fn(&mut Value)| {
        let (_tmp, gi) = rec.copy_with(|files| {
            let ev = files.get_mut(&format!("evidence/{act:02}.json")).unwrap();
            change(&mut ev["facts"]);
        });
        grade::grade(Lab::C, act, &gi)
    };
    let codes = |f: &lab::grade::Findings| f.findings.iter().map(|x| x.code).collect::<Vec<_>>();
    let f = graded(3, &|f| f["bad"][4]["outcome"] = json!("stored"));
    assert!(codes(&f).contains(&Code::OutcomeUnexpected), "{f:?}");
    let f = graded(3, &|f| f["replica_requests"][1]["after"] = json!(3));
    assert!(codes(&f).contains(&Code::RawMismatch), "{f:?}");
    let f = graded(4, &|f| {
        let leader = f["leader"].clone();
        f["leader"] = f["followers"][0].clone();
        f["followers"][0] = leader;
    });
    assert!(codes(&f).contains(&Code::ValueMismatch), "{f:?}");
    // Act 5's first timed-out request (wave 1) said to be stored, and, with the audit and
    // metrics records deleted, turned wholly into another request's explicit deny: its raw record
    // (`request:frozen-bad`) still says what the API answered.
    let f = graded(5, &|f| {
        let bad = f["bad"].as_array_mut().unwrap();
        let r = bad
            .iter_mut()
            .find(|r| r["outcome"] == "webhook-timeout")
            .unwrap();
        r["outcome"] = json!("stored");
    });
    assert!(!f.passed(), "{f:?}");
    let f = graded(5, &|f| {
        let deny = f["bad"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["outcome"] == "explicit-deny")
            .unwrap()
            .clone();
        let r = f["bad"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["outcome"] == "webhook-timeout")
            .unwrap();
        for k in [
            "outcome",
            "http_status",
            "message",
            "reason",
            "raw_response",
        ] {
            r[k] = deny[k].clone();
        }
        let o = f.as_object_mut().unwrap();
        o.remove("admission_audit");
        o.remove("admission_metrics");
    });
    assert!(codes(&f).contains(&Code::RawMismatch), "{f:?}");
    // Act 6: a read during the follower's freeze naming another holder.
    let f = graded(6, &|f| {
        f["lease_samples"][3]["holder"] = json!("kyverno-admission-controller-elsewhere");
    });
    assert!(codes(&f).contains(&Code::ValueMismatch), "{f:?}");
    // Act 8: the report claims the Lease was kept.
    let (_tmp, gi) = rec.copy_with(|files| {
        files.get_mut("report.json").unwrap()["lease"] = json!("kept");
    });
    let f = grade::grade(Lab::C, 8, &gi);
    assert!(codes(&f).contains(&Code::ReportContradicted), "{f:?}");
}

#[test]
fn recorded_lab_b_passes_every_act() {
    let rec = Recording::open(RUN_B);
    let (_tmp, gi) = load(|_| {});
    for f in rec.grade(&gi) {
        assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
    }
}

#[test]
fn recorded_lab_a_passes_every_act_including_failed_calls_during_recovery() {
    let rec = Recording::open(RUN_A);
    let files = rec.files();
    // The point of this run: act 6 has answers naming a failed call to the policy's webhook,
    // other than timeouts, and the API server's calling_webhook_error count moved for them.
    let ev6 = files["evidence/06.json"].to_string();
    assert!(
        ev6.contains("failed calling webhook") && ev6.contains("calling_webhook_error"),
        "the fixture must keep act 6's failed calls during recovery"
    );
    let (_tmp, gi) = rec.copy_with(|_| {});
    for f in rec.grade(&gi) {
        assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
    }
}

#[test]
fn recorded_timeouts_took_at_least_timeout_seconds() {
    // The observation itself, from the real run: both target requests under Fail timed out after
    // at least timeoutSeconds (3 s) and were not stored; the control request was stored.
    let files = Recording::open(RUN_B).files();
    let f5 = &files["evidence/05.json"]["facts"];
    let (lo, hi) = grade::bounds::timeout_window_ms(3);
    for k in ["target_good", "target_bad"] {
        assert_eq!(f5[k]["outcome"], "webhook-timeout", "{k}");
        let ms = f5[k]["elapsed_ms"].as_u64().unwrap();
        assert!(lo <= ms && ms < hi, "{k}: {ms}");
        assert_eq!(f5[k]["get"]["exists"], false, "{k}");
        assert!(
            f5[k]["message"]
                .as_str()
                .unwrap()
                .contains("context deadline exceeded"),
            "{k}"
        );
    }
    assert_eq!(f5["control"]["outcome"], "stored");
}

fn flagged(
    act: u8,
    code: Code,
    mutate: impl FnOnce(&mut std::collections::BTreeMap<String, Value>),
) {
    let (_tmp, gi) = load(mutate);
    let f = grade::grade(Lab::B, act, &gi);
    assert!(
        f.has(code),
        "expected {code:?}: {}",
        lab::messages::findings(Lang::En, &f)
    );
}

fn facts(files: &mut std::collections::BTreeMap<String, Value>, act: u8) -> &mut Value {
    &mut files.get_mut(&format!("evidence/{act:02}.json")).unwrap()["facts"]
}

/// Lab A's recorded run with act `act`'s facts changed by `mutate`: act `act`'s grade flags
/// `code` on a subject containing `subject`.
fn flagged_lab_a(act: u8, code: Code, subject: &str, mutate: &dyn Fn(&mut Value)) {
    let (_tmp, gi) = Recording::open(RUN_A).copy_with(|f| mutate(facts(f, act)));
    let g = grade::grade(Lab::A, act, &gi);
    assert!(
        g.findings
            .iter()
            .any(|x| x.code == code && x.subject.contains(subject)),
        "expected {code:?} on {subject}: {}",
        lab::messages::findings(Lang::En, &g)
    );
}

#[test]
fn tampering_with_the_recorded_run_is_caught() {
    flagged(5, Code::TimeoutTooFast, |f| {
        let r = &mut facts(f, 5)["target_bad"];
        let sent = lab::facts::parse_rfc3339(r["sent_at"].as_str().unwrap()).unwrap();
        r["elapsed_ms"] = json!(200);
        r["answered_at"] = json!(lab::facts::format_rfc3339(
            sent + chrono::Duration::milliseconds(200)
        ));
    });
    flagged(5, Code::PodReplaced, |f| {
        facts(f, 5)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef")
    });
    flagged(3, Code::StoredWithoutUid, |f| {
        facts(f, 3)["good"]["get"]["uid"] = Value::Null
    });
    flagged(3, Code::DenyWithoutMarker, |f| {
        let r = &mut facts(f, 3)["bad"];
        let m = "admission webhook \"images.example.com\" denied the request: no";
        r["message"] = json!(m);
        r["raw_response"]["message"] = json!(m);
    });
    flagged(6, Code::OutcomeContradictsAnswer, |f| {
        facts(f, 6)["target_bad"]["outcome"] = json!("explicit-deny")
    });
    flagged(8, Code::DigestMismatch, |f| {
        facts(f, 7)["existing"]["phase"] = json!("Running ")
    });
    flagged(1, Code::FactsInvalid, |f| *facts(f, 1) = json!({}));
    // A record's raw answer and GET against the record itself (every request of every act):
    // the GET that says stored / not stored was answered before the request was (act 3's deny,
    // act 5's timeout, act 6's Ignore store) ...
    for (act, req) in [(3, "bad"), (5, "target_good"), (6, "target_bad")] {
        flagged(act, Code::TimesInconsistent, |f| {
            let r = &mut facts(f, act)[req];
            let answered = lab::facts::parse_rfc3339(r["answered_at"].as_str().unwrap()).unwrap();
            r["get"]["at"] = json!(lab::facts::format_rfc3339(
                answered - chrono::Duration::milliseconds(5)
            ));
        });
    }
    // The process after the fault in the same container as the frozen one must be the frozen
    // process (acts 5 and 6).
    for act in [5, 6] {
        flagged(act, Code::IdentityChanged, |f| {
            facts(f, act)["identity_after"]["pid"] = json!(9999)
        });
        flagged(act, Code::IdentityChanged, |f| {
            facts(f, act)["identity_after"]["pid_start_time_ticks"] = json!(1)
        });
    }
    // ... a refusal whose Status body says Success, or another reason than the record's.
    flagged(3, Code::RawMismatch, |f| {
        facts(f, 3)["bad"]["raw_response"]["status"] = json!("Success")
    });
    flagged(5, Code::RawMismatch, |f| {
        facts(f, 5)["target_good"]["raw_response"]["reason"] = json!("Timeout")
    });
}

/// The grader cases (`fixtures/recorded-cases/`, each a few files changed in a recorded run to a
/// shape public bug reports show: issue 11's and issue 24's) are flagged by the act's grader and
/// by `grade all`, with findings naming the evidence file and JSON path (among the acts the run
/// has); the unchanged runs pass (`recorded_lab_b_passes_every_act`, `grade_audit.rs`).
#[test]
fn recorded_cases_are_flagged() {
    let root = common::fixtures_dir().join("recorded-cases");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 38, "{cases:?}");
    for case in cases {
        let overlay = common::read_tree(&case);
        let meta = overlay["case.json"].clone();
        let act = meta["act"].as_u64().unwrap() as u8;
        let base = meta["base"].as_str().unwrap_or(RUN_B);
        let rec = Recording::open(base);
        let (_tmp, gi) = rec.copy_with(|files| {
            for (k, v) in &overlay {
                if k != "case.json" {
                    files.insert(k.clone(), v.clone());
                }
            }
        });
        let f = grade::grade(rec.lab, act, &gi);
        let text = lab::messages::findings(Lang::En, &f);
        for code in meta["expect"].as_array().unwrap() {
            let code = code.as_str().unwrap();
            let hit = f.findings.iter().find(|x| x.code.as_str() == code);
            assert!(hit.is_some(), "{}: expected {code}\n{text}", case.display());
            // On a fact or on the raw answer it was derived from, by file and JSON path.
            let subject = &hit.unwrap().subject;
            let file = format!("evidence/{act:02}.json ");
            let path = subject.strip_prefix(&file).unwrap_or_default();
            assert!(
                path.starts_with("facts.") || path.starts_with("raw["),
                "{}: {text}",
                case.display()
            );
        }
        if let Some(subject) = meta["subject"].as_str() {
            let code = meta["expect"][0].as_str().unwrap();
            let hit = f
                .findings
                .iter()
                .find(|x| x.code.as_str() == code && x.subject == subject);
            assert!(
                hit.is_some(),
                "{}: expected {code} on {subject}\n{text}",
                case.display()
            );
            // The second witness: the record the first contradicts, by file and JSON path.
            if let Some(witness) = meta["witness"].as_str() {
                assert!(
                    hit.unwrap().detail.contains(witness),
                    "{}: {code} on {subject} must name {witness}\n{text}",
                    case.display()
                );
            }
        }
        // The same case seen by a later act (e.g. act 8's words).
        for also in meta["also"].as_array().into_iter().flatten() {
            let act = also["act"].as_u64().unwrap() as u8;
            let f = grade::grade(rec.lab, act, &gi);
            assert!(
                f.findings.iter().any(|x| x.code.as_str() == also["code"]
                    && x.subject == also["subject"].as_str().unwrap()),
                "{}: act {act} expected {also}\n{}",
                case.display(),
                lab::messages::findings(Lang::En, &f)
            );
        }
        assert!(
            rec.grade(&gi).iter().any(|f| !f.passed()),
            "{}",
            case.display()
        );
    }
}

/// The kind of the `b2-object-selector` case, whole: a registration that does not guard the
/// lab's pods as taught, by the API server's matching rules (`lab::admission`), wherever a
/// registration is recorded (act 2's, the snapshot read during act 5's freeze, act 6's Ignore
/// one, act 7's). Each mutation of the real run is flagged `registration-scope`; the unchanged
/// run passes (`recorded_lab_b_passes_every_act`).
#[test]
fn a_registration_that_does_not_guard_the_target_pods_is_flagged_wherever_recorded() {
    type Mutation = fn(&mut Value);
    // (what, the mutation of a registration in facts' snake_case, the same in the raw camelCase)
    let cases: [(&str, Mutation, Mutation); 7] = [
        (
            "the pod rule is for every operation",
            |w| w["rules"][0]["operations"] = json!(["*"]),
            |w| w["rules"][0]["operations"] = json!(["*"]),
        ),
        (
            "the pod rule is cluster-scoped",
            |w| w["rules"][0]["scope"] = json!("Cluster"),
            |w| w["rules"][0]["scope"] = json!("Cluster"),
        ),
        (
            "the pod rule is for UPDATE only",
            |w| w["rules"][0]["operations"] = json!(["UPDATE"]),
            |w| w["rules"][0]["operations"] = json!(["UPDATE"]),
        ),
        (
            "the pod rule is for a subresource only",
            |w| w["rules"][0]["resources"] = json!(["pods/ephemeralcontainers"]),
            |w| w["rules"][0]["resources"] = json!(["pods/ephemeralcontainers"]),
        ),
        (
            "the namespaceSelector leaves the target namespace out",
            |w| {
                w["namespace_selector"]["matchExpressions"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kca-webhook-target"]}))
            },
            |w| {
                w["namespaceSelector"]["matchExpressions"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kca-webhook-target"]}))
            },
        ),
        (
            "the namespaceSelector needs a label the namespace does not have",
            |w| {
                w["namespace_selector"]["matchExpressions"] =
                    json!([{"key": "kca-guarded", "operator": "Exists"}])
            },
            |w| {
                w["namespaceSelector"]["matchExpressions"] =
                    json!([{"key": "kca-guarded", "operator": "Exists"}])
            },
        ),
        (
            "the namespaceSelector also selects the control namespace",
            |w| w["namespace_selector"] = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["kca-webhook-target", "kca-webhook-control"]}]}),
            |w| w["namespaceSelector"] = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["kca-webhook-target", "kca-webhook-control"]}]}),
        ),
    ];
    for (what, snake, camel) in cases {
        for (act, field) in [(2, "webhook"), (6, "webhook"), (7, "webhook")] {
            let (_tmp, gi) = load(|f| snake(&mut facts(f, act)[field]));
            let g = grade::grade(Lab::B, act, &gi);
            assert!(
                g.has(Code::RegistrationScope),
                "act {act} {field}, {what}: {}",
                lab::messages::findings(Lang::En, &g)
            );
        }
        let (_tmp, gi) = load(|f| camel(&mut facts(f, 5)["registration_snapshot"]));
        let g = grade::grade(Lab::B, 5, &gi);
        assert!(
            g.has(Code::RegistrationScope),
            "act 5 registration_snapshot, {what}: {}",
            lab::messages::findings(Lang::En, &g)
        );
    }
}

/// Kind 1 of issue 11: each observation is held against the claim and the earlier act it
/// depends on (the table in `lab/src/grade/mod.rs`); one mutation of the real run per
/// cross-check, each flagged with its own code.
#[test]
fn observations_beside_claims_are_cross_checked() {
    // The registration read during the freeze must be act 2's (here: another timeout).
    flagged(5, Code::RegistrationChanged, |f| {
        facts(f, 5)["registration_snapshot"]["timeoutSeconds"] = json!(10)
    });
    // ... and the recorded timeout_seconds must be the snapshot's.
    flagged(5, Code::RegistrationClaimContradicted, |f| {
        facts(f, 5)["registration_snapshot"]["timeoutSeconds"] = json!(10)
    });
    // The registration read during the freeze must not let pods skip the call.
    flagged(5, Code::RegistrationScope, |f| {
        facts(f, 5)["registration_snapshot"]["matchConditions"] =
            json!([{"name": "skip", "expression": "!has(object.metadata.labels.skip)"}])
    });
    // Act 6's Ignore registration must be the same policy's webhook (path).
    flagged(6, Code::RegistrationChanged, |f| {
        facts(f, 6)["webhook"]["service"]["path"] = json!("/vpol/other-policy")
    });
    // Act 7's registration scope.
    flagged(7, Code::RegistrationScope, |f| {
        facts(f, 7)["webhook"]["object_selector"] = json!({"matchLabels": {"kca-checked": "true"}})
    });
    // The process state read during the freeze: missing is a finding, not a pass.
    flagged(5, Code::ObservationMissing, |f| {
        facts(f, 5)["freeze"]["state_during"] = Value::Null
    });
    // ... and it must say stopped (T during, not T after).
    flagged(6, Code::ValueMismatch, |f| {
        facts(f, 6)["freeze"]["state_during"] = json!("S")
    });
    // The deny must come from the policy's webhook recorded in act 2 (an aggregated webhook
    // carrying the same verdict is another registration).
    flagged(3, Code::DenyOtherWebhook, |f| {
        let r = &mut facts(f, 3)["bad"];
        let m = "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED";
        r["message"] = json!(m);
        r["raw_response"]["message"] = json!(m);
    });
    // The first deny after resume in act 6 must come from act 6's (Ignore) webhook, not act 2's.
    flagged(6, Code::DenyOtherWebhook, |f| {
        let r = &mut facts(f, 6)["first_explicit_deny"];
        let m = "admission webhook \"vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED";
        r["message"] = json!(m);
        r["raw_response"]["message"] = json!(m);
    });
    // The watchdog resumed before its deadline (armed + resume_after_sec): a shorter freeze.
    flagged(5, Code::TimesInconsistent, |f| {
        facts(f, 5)["freeze"]["resume_after_sec"] = json!(25)
    });
    // The policy UID across acts (act 7 vs act 2).
    flagged(7, Code::UidMismatch, |f| {
        facts(f, 7)["policy_uid"] = json!("00000000-0000-4000-8000-00000000cafe")
    });
}

/// A bound field of the wrong shape, or an unknown member whose "allowed" list names `node_uid`,
/// is an input-invalid finding, not a UID or digest mismatch: those codes are for a well-formed
/// value that is not the live one or the evidence's.
#[test]
fn a_wrong_shape_is_input_invalid_not_a_mismatch() {
    let (_tmp, gi) = load(|f| {
        let plan = f
            .get_mut("freeze-plan.json")
            .unwrap()
            .as_object_mut()
            .unwrap();
        plan.remove("node_uid");
        plan.insert("comment".into(), json!("x"));
        plan.insert("evidence_sha256".into(), json!("ABC"));
    });
    let f = grade::grade(Lab::B, 4, &gi);
    let text = lab::messages::findings(Lang::En, &f);
    assert!(f.has(Code::InputInvalid), "{text}");
    assert!(
        !f.has(Code::UidMismatch) && !f.has(Code::DigestMismatch),
        "{text}"
    );
    // A well-formed value that is not the live one still is a mismatch.
    flagged(4, Code::UidMismatch, |f| {
        f.get_mut("freeze-plan.json").unwrap()["node_uid"] =
            json!("00000000-0000-4000-8000-00000000cafe")
    });
    flagged(4, Code::DigestMismatch, |f| {
        f.get_mut("freeze-plan.json").unwrap()["evidence_sha256"] = json!("f".repeat(64))
    });
}

/// Lab A act 5, on its recorded run: the violating request shows "no webhook to fail" only
/// inside the fault, so it must be sent after the registration list it rests on was read and
/// answered before the recovery watcher's deadline; that deadline is the watcher's arming time +
/// `restore_after_sec`. Each mutation is flagged; the unchanged run passes
/// (`recorded_lab_a_passes_every_act_including_failed_calls_during_recovery`).
#[test]
fn lab_a_act_5_request_is_held_to_the_fault_window() {
    let shift = |t: &Value, ms: i64| {
        let t = lab::facts::parse_rfc3339(t.as_str().unwrap()).unwrap();
        json!(lab::facts::format_rfc3339(
            t + chrono::Duration::milliseconds(ms)
        ))
    };
    // The request (and its GET) moved past the watcher's deadline, durations kept.
    flagged_lab_a(5, Code::OutsideWindow, "target_bad.answered_at", &|f| {
        let late = 1000 + {
            let d = lab::facts::parse_rfc3339(f["watcher"]["deadline_at"].as_str().unwrap());
            let s = lab::facts::parse_rfc3339(f["target_bad"]["sent_at"].as_str().unwrap());
            (d.unwrap() - s.unwrap()).num_milliseconds()
        };
        let r = &mut f["target_bad"];
        for k in ["sent_at", "answered_at"] {
            r[k] = shift(&r[k], late);
        }
        r["get"]["at"] = shift(&r["get"]["at"], late);
    });
    // The registration list read after the request was sent.
    flagged_lab_a(5, Code::TimesInconsistent, "target_bad.sent_at", &|f| {
        f["registrations_checked_at"] = shift(&f["target_bad"]["sent_at"], 5)
    });
    // A deadline that is not armed_at + restore_after_sec.
    flagged_lab_a(5, Code::TimesInconsistent, "watcher.deadline_at", &|f| {
        f["watcher"]["deadline_at"] = shift(&f["watcher"]["armed_at"], 30_000)
    });
}

/// Lab A act 7: a server-side dry-run's 201 answer carries the uid the API server gave the object
/// (then not persisted); an echo without one is not the API server's answer.
#[test]
fn lab_a_act_7_dry_run_answer_without_a_uid_is_flagged() {
    let (_tmp, gi) = Recording::open(RUN_A).copy_with(|f| {
        facts(f, 7)["good"]["raw_response"]["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("uid");
    });
    let g = grade::grade(Lab::A, 7, &gi);
    assert!(
        g.findings
            .iter()
            .any(|x| x.code == Code::RawMismatch && x.subject.ends_with("facts.good")),
        "{}",
        lab::messages::findings(Lang::En, &g)
    );
}

/// Lab A act 6, on its recorded run: claims beside the timeline are held against it. The
/// restore comes after act 5's scale-down; every step's wait began at one instant
/// (`at − waited_ms`); the new pod, read after it was seen Running, exists and is not Pending.
#[test]
fn lab_a_act_6_claims_are_held_against_the_timeline() {
    // A restore seen before act 5's scale-down.
    flagged_lab_a(6, Code::TimesInconsistent, "replicas_restored.at", &|f| {
        f["replicas_restored"]["at"] = json!("2026-11-30T19:48:19.000Z")
    });
    flagged_lab_a(6, Code::TimesInconsistent, "pod_running.waited_ms", &|f| {
        f["pod_running"]["waited_ms"] = json!(100)
    });
    flagged_lab_a(6, Code::ValueMismatch, "new_pod.phase", &|f| {
        f["new_pod"]["phase"] = json!("Pending")
    });
    flagged_lab_a(6, Code::ValueMismatch, "new_pod.exists", &|f| {
        f["new_pod"]["exists"] = json!(false)
    });
}

/// One meaning of an explicit deny (`classify::EXPLICIT_DENY_STATUSES`): the real lab B run's act
/// 3 deny rewritten consistently to the newer 403 `Forbidden` form (the answer, its audit event,
/// its raw record, and the API server's rejection counted under `rejection_code="403"`) passes the classifier,
/// the audit rule and the metrics rule alike; the same deny left counted under 400 in the
/// metrics is flagged by the metrics rule.
#[test]
fn a_consistent_403_deny_is_an_explicit_deny_for_every_rule() {
    const HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
    let to_403 = |f: &mut std::collections::BTreeMap<String, Value>, count_as_403: bool| {
        let facts = facts(f, 3);
        let bad = &mut facts["bad"];
        let name = bad["name"].as_str().unwrap().to_owned();
        let message = format!(
            "pods \"{name}\" is forbidden: {}",
            bad["message"].as_str().unwrap()
        );
        bad["http_status"] = json!(403);
        bad["reason"] = json!("Forbidden");
        bad["message"] = json!(message);
        bad["raw_response"]["code"] = json!(403);
        bad["raw_response"]["reason"] = json!("Forbidden");
        bad["raw_response"]["message"] = json!(message);
        for entry in facts["admission_audit"]["requests"].as_array_mut().unwrap() {
            if entry["name"] != json!(name) {
                continue;
            }
            let lines: Vec<String> = entry["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    let mut e: Value = serde_json::from_str(l.as_str().unwrap()).unwrap();
                    e["responseStatus"]["code"] = json!(403);
                    e["responseStatus"]["reason"] = json!("Forbidden");
                    e["responseStatus"]["message"] = json!(message);
                    e.to_string()
                })
                .collect();
            let events: Vec<_> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| lab::audit::parse_line(i, l).unwrap())
                .collect();
            entry["lines"] = json!(lines);
            entry["events"] = serde_json::to_value(events).unwrap();
        }
        // The recorder's raw copy of the request is the same answer.
        let rewritten = facts["bad"].clone();
        let ev = f.get_mut("evidence/03.json").unwrap();
        for r in ev["raw"].as_array_mut().unwrap() {
            if r["data"]["name"] == json!(name) && r["what"] == json!("request:bad") {
                r["data"] = rewritten.clone();
            }
        }
        let facts = &mut ev["facts"];
        // The API server counts the one deny of the act under the code it answered with.
        let m = &mut facts["admission_metrics"];
        let before: Vec<String> = serde_json::from_value(m["before"]["lines"].clone()).unwrap();
        let mut after: Vec<String> = serde_json::from_value(m["after"]["lines"].clone()).unwrap();
        if count_as_403 {
            for (series, code) in [
                (
                    "apiserver_admission_webhook_rejection_count{error_type=\"no_error\"",
                    "rejection_code=\"400\"",
                ),
                (
                    "apiserver_admission_webhook_request_total{code=\"400\"",
                    "code=\"400\"",
                ),
            ] {
                let i = after
                    .iter()
                    .position(|l| l.starts_with(series) && l.contains(HOOK) && l.contains(code))
                    .unwrap();
                let line = after[i].clone();
                let (head, value) = line.rsplit_once(' ').unwrap();
                let v: f64 = value.parse().unwrap();
                after[i] = format!("{head} {}", v - 1.0);
                after.push(format!(
                    "{} 1",
                    head.replace(code, &code.replace("400", "403"))
                ));
            }
        }
        m["after"]["lines"] = json!(after);
        m["deltas"] = serde_json::to_value(lab::metrics::deltas(&before, &after)).unwrap();
    };
    let rec = Recording::open("recorded/b-20261130T210502Z");
    let (_tmp, gi) = rec.copy_with(|f| to_403(f, true));
    let g = grade::grade(Lab::B, 3, &gi);
    assert!(g.passed(), "{}", lab::messages::findings(Lang::En, &g));
    let (_tmp, gi) = rec.copy_with(|f| to_403(f, false));
    let g = grade::grade(Lab::B, 3, &gi);
    assert!(
        g.findings
            .iter()
            .any(|x| x.code == Code::MetricsContradicted && x.subject.ends_with("explicit-deny")),
        "{}",
        lab::messages::findings(Lang::En, &g)
    );
}

/// Lab C's recorded run changed by `mutate`: act `act`'s grade flags `code` on `subject`,
/// naming `witness` in the detail (when given).
fn flagged_lab_c(
    act: u8,
    code: Code,
    subject: &str,
    witness: Option<&str>,
    mutate: impl FnOnce(&mut std::collections::BTreeMap<String, Value>),
) {
    let (_tmp, gi) = Recording::open(RUN_C).copy_with(mutate);
    let g = grade::grade(Lab::C, act, &gi);
    let hit = g
        .findings
        .iter()
        .find(|x| x.code == code && x.subject == subject);
    let text = lab::messages::findings(Lang::En, &g);
    assert!(hit.is_some(), "expected {code:?} on {subject}: {text}");
    if let Some(w) = witness {
        assert!(hit.unwrap().detail.contains(w), "{w}: {text}");
    }
}

/// The held-back kind of `c5-after-resume-stored-bad` (graders-4): a violating pod stored after
/// the resume while the Fail registration is in force is flagged in lab C as in lab B, by the one
/// rule of every lab (`server::violating_pod_never_stored_under_fail`), naming the registration
/// read; the facts record and its raw copy agree, so only that rule can object.
#[test]
fn a_violating_pod_stored_after_the_resume_under_fail_is_flagged_in_lab_c() {
    flagged_lab_c(
        5,
        Code::AdmittedUnderFail,
        "evidence/05.json facts.after_resume[0]",
        Some("evidence/05.json"),
        |files| {
            let ev = files.get_mut("evidence/05.json").unwrap();
            let f = &mut ev["facts"];
            let mut r = f["control"][0].clone();
            let after = f["after_resume"][0].clone();
            r["name"] = json!("kca-c5-after-stored-bad");
            r["namespace"] = json!("kca-webhook-target");
            r["raw_response"]["metadata"]["name"] = r["name"].clone();
            r["raw_response"]["metadata"]["namespace"] = r["namespace"].clone();
            for k in ["sent_at", "answered_at"] {
                r[k] = after[k].clone();
            }
            r["get"]["at"] = after["get"]["at"].clone();
            f["after_resume"]
                .as_array_mut()
                .unwrap()
                .insert(0, r.clone());
            ev["raw"]
                .as_array_mut()
                .unwrap()
                .push(json!({"at": r["get"]["at"], "what": "request:after-resume", "data": r}));
        },
    );
}

/// The replicas' counters account for the act's calls (`server::
/// replica_counters_account_for_the_calls`): one more request counted by a replica than the act
/// sent to the webhook, in facts and in the replica's raw counter line alike, is flagged.
#[test]
fn a_replica_counter_that_counted_a_call_nobody_sent_is_flagged() {
    flagged_lab_c(
        3,
        Code::ValueMismatch,
        "evidence/03.json facts.replica_requests",
        None,
        |files| {
            let ev = files.get_mut("evidence/03.json").unwrap();
            let row = &mut ev["facts"]["replica_requests"][0];
            let pod = row["pod"].as_str().unwrap().to_owned();
            let after = row["after"].as_u64().unwrap();
            row["after"] = json!(after + 1);
            let what = format!("replica-metrics-after:{pod}");
            let raw = ev["raw"].as_array_mut().unwrap();
            let rec = raw.iter_mut().find(|r| r["what"] == what.as_str()).unwrap();
            let lines = rec["data"]["lines"].as_array_mut().unwrap();
            let last = lines.last_mut().unwrap();
            let (head, n) = last.as_str().unwrap().rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            *last = json!(format!("{head} {}", n + 1));
        },
    );
}

/// Lowers replica row `row`'s counter after act 6 by `by`, in the facts and in its raw counter
/// line alike (a consistent rewrite of that one witness).
fn lower_act6_counter(files: &mut std::collections::BTreeMap<String, Value>, row: usize, by: u64) {
    let ev = files.get_mut("evidence/06.json").unwrap();
    let row = &mut ev["facts"]["replica_requests"][row];
    let pod = row["pod"].as_str().unwrap().to_owned();
    let after = row["after"].as_u64().unwrap();
    row["after"] = json!(after - by);
    let what = format!("replica-metrics-after:{pod}");
    let raw = ev["raw"].as_array_mut().unwrap();
    let rec = raw.iter_mut().find(|r| r["what"] == what.as_str()).unwrap();
    let lines = rec["data"]["lines"].as_array_mut().unwrap();
    let line = lines
        .iter_mut()
        .find(|l| {
            let l = l.as_str().unwrap();
            l.contains("resource_kind=\"Pod\"") && l.contains("request_allowed=\"false\"")
        })
        .unwrap();
    let (head, n) = line.as_str().unwrap().rsplit_once(' ').unwrap();
    let n: u64 = n.parse().unwrap();
    *line = json!(format!("{head} {}", n - by));
}

/// The counters are read after act 6's healthy deny (the CI run of 2026-12-02 16:28 UTC: all 18
/// wave requests denied, counters +19 against 20 explicit denies in the act): the healthy deny,
/// answered before the `replica-metrics-before:*` reads, is not demanded of the counters'
/// difference. The recorded act 6 has 16 wave denies and 1 after the resume between the reads,
/// and its counters moved by 19; the frozen follower's (row 1, +2 after its resume) lowered by 2,
/// they account for exactly those 17, and the live replicas' +17 still for the 16 denies answered
/// while the follower was frozen.
#[test]
fn a_deny_answered_before_the_counters_were_read_is_not_demanded_of_them() {
    let (_tmp, gi) = Recording::open(RUN_C).copy_with(|files| lower_act6_counter(files, 1, 2));
    let g = grade::grade(Lab::C, 6, &gi);
    let text = lab::messages::findings(Lang::En, &g);
    assert!(
        !g.findings
            .iter()
            .any(|x| x.subject == "evidence/06.json facts.replica_requests"),
        "{text}"
    );
}

/// One answered call between the reads that no replica counted is flagged
/// (`server::replica_counters_account_for_the_calls`, its lower bound).
#[test]
fn an_answered_call_no_replica_counted_is_flagged() {
    flagged_lab_c(
        6,
        Code::ValueMismatch,
        "evidence/06.json facts.replica_requests",
        None,
        |files| lower_act6_counter(files, 0, 3),
    );
}

/// Acts follow each other (`server::acts_follow_each_other`): an act that started before the
/// act before it finished is flagged on its `started_at`, naming that act.
#[test]
fn an_act_started_before_the_previous_one_finished_is_flagged() {
    flagged_lab_c(
        4,
        Code::TimesInconsistent,
        "evidence/04.json started_at",
        Some("evidence/03.json"),
        |files| {
            let ev3 = files.get_mut("evidence/03.json").unwrap();
            ev3["finished_at"] = json!("2026-12-02T23:59:00.000Z");
        },
    );
}
