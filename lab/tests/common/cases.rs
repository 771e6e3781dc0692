//! The flagged cases of the grading fixtures, as rows: name, act graded, the finding code the
//! grader must report, why, and the mutation of the passing files ([`super::fixtures::generate`]
//! writes each case's changed files and `case.json`).

use lab::facts;
use serde_json::{Value, json};

use super::fixtures::{
    Answer, FAIL_HOOK, FAILED_OPEN_0, Files, Kind, bad_pod, control_pod, status_body, ts, uid,
};
use lab::acts::{self, Target};
use lab::digest::digest_value;
use lab::evidence::Lab;

/// A mutation of the passing files.
pub type Mutation = Box<dyn Fn(&mut Files)>;

/// One flagged case: a mutation of the passing tree, the act whose grader must catch it, the code.
pub struct Case {
    /// Directory name.
    pub name: String,
    /// The act graded.
    pub act: u8,
    /// The finding code that must be reported.
    pub expect: &'static str,
    /// Why it must be flagged.
    pub why: String,
    /// The mutation.
    pub mutate: Mutation,
}

/// Cases as rows `name, act, expect, why, mutation;` (see [`Case`]).
macro_rules! cases {
    ($($name:expr, $act:expr, $expect:literal, $why:expr, $mutate:expr;)*) => {
        vec![$(Case { name: $name.into(), act: $act, expect: $expect, why: $why.into(), mutate: $mutate },)*]
    };
}

fn facts_mut(files: &mut Files, act: u8) -> &mut Value {
    &mut files.get_mut(&format!("evidence/{act:02}.json")).unwrap()["facts"]
}

/// Sets act `act`'s facts at the JSON pointer `ptr` to `v`.
fn set(act: u8, ptr: impl Into<String>, v: Value) -> Mutation {
    let ptr = ptr.into();
    Box::new(move |f| *facts_mut(f, act).pointer_mut(&ptr).unwrap() = v.clone())
}

/// Changes the request record (or any value) at `ptr` of act `act`'s facts with `edit`.
fn edit(act: u8, ptr: &'static str, edit: fn(&mut Value)) -> Mutation {
    Box::new(move |f| edit(facts_mut(f, act).pointer_mut(ptr).unwrap()))
}

/// Sets `key` of the input file `file` to `v`; `refresh`: the evidence then records the file's
/// new digest, so only the intended finding shows.
fn set_input(file: &'static str, key: &'static str, v: Value, refresh: bool) -> Mutation {
    Box::new(move |f| {
        f.get_mut(file).unwrap()[key] = v.clone();
        if refresh {
            refresh_input_digests(f);
        }
    })
}

/// Any other mutation.
fn with(m: fn(&mut Files)) -> Mutation {
    Box::new(m)
}

/// Re-records the digests of inputs in evidence `inputs` maps (after an input was mutated on
/// purpose, so only the intended finding shows).
fn refresh_input_digests(files: &mut Files) {
    let inputs: Files = (files.iter().filter(|(k, _)| !k.starts_with("evidence/")))
        .map(|(k, v)| (k.clone(), json!(digest_value(v))))
        .collect();
    for (_, v) in files.iter_mut().filter(|(k, _)| k.starts_with("evidence/")) {
        let m = v.get_mut("inputs").and_then(|m| m.as_object_mut());
        for (name, d) in m.into_iter().flatten() {
            if let Some(now) = inputs.get(name) {
                *d = now.clone();
            }
        }
    }
}

fn set_answer_already_exists(r: &mut Value) {
    let m = format!("pods \"{}\" already exists", r["name"].as_str().unwrap());
    r["http_status"] = json!(409);
    r["reason"] = json!("AlreadyExists");
    r["message"] = json!(m);
    r["raw_response"] = status_body(409, "AlreadyExists", &m);
    r["outcome"] = json!("explicit-deny");
}

fn set_deny_without_marker(r: &mut Value) {
    let m =
        "admission webhook \"images.example.com\" denied the request: image registry not allowed";
    r["message"] = json!(m);
    r["raw_response"] = status_body(400, "", m);
}

fn stored_without_uid(r: &mut Value) {
    r["get"]["exists"] = json!(false);
    r["get"]["uid"] = Value::Null;
    r["get"]["phase"] = Value::Null;
}

fn answered_fast(r: &mut Value) {
    let sent = facts::parse_rfc3339(r["sent_at"].as_str().unwrap()).unwrap();
    r["elapsed_ms"] = json!(200);
    let answered = sent + chrono::Duration::milliseconds(200);
    r["answered_at"] = json!(facts::format_rfc3339(answered));
}

/// Edits the audit event of the request at `ptr` (a JSON pointer under act `act`'s facts, e.g.
/// `/target_bad`): the verbatim line and its parsed view together, so only the claim changes.
fn audit(act: u8, ptr: &'static str, edit: fn(&mut Value)) -> Mutation {
    Box::new(move |files| {
        let facts = facts_mut(files, act);
        let name = facts.pointer(ptr).unwrap()["name"].clone();
        let reqs = &mut facts[lab::audit::FACTS_KEY]["requests"];
        let reqs = reqs.as_array_mut().unwrap();
        let r = reqs.iter_mut().find(|r| r["name"] == name).unwrap();
        let mut ev: Value = serde_json::from_str(r["lines"][0].as_str().unwrap()).unwrap();
        edit(&mut ev);
        let line = ev.to_string();
        r["events"][0] = serde_json::to_value(lab::audit::parse_line(0, &line).unwrap()).unwrap();
        r["lines"][0] = json!(line);
    })
}

/// Another UID than the passing tree's.
const BEEF: &str = "00000000-0000-4000-8000-00000000beef";

/// Another node's UID.
const OTHER_NODE: &str = "00000000-0000-4000-8000-000000000001";

/// Another policy UID.
const OTHER_POLICY: &str = "00000000-0000-4000-8000-0000000000aa";

/// Cases shared by every lab (acts 1-2: the scope and the policy; act 3 whatever its baseline, one
/// request of each kind or parallel waves).
fn shared_cases() -> Vec<Case> {
    cases! {
        "act1-empty-facts", 1, "facts-invalid", "facts is {}", set(1, "", json!({}));
        "act1-scope-node-uid-differs", 1, "uid-mismatch",
            "scope.json names another node's UID than act 1 observed",
            set_input("scope.json", "node_uid", json!(OTHER_NODE), true);
        "act1-scope-changed-after-act", 1, "input-changed",
            "scope.json edited after act 1 recorded its digest",
            set_input("scope.json", "node_uid", json!(OTHER_NODE), false);
        "act2-policy-without-uid", 2, "stored-without-uid", "the stored policy has no metadata.uid",
            edit(2, "/policy/metadata", |m| { m.as_object_mut().unwrap().remove("uid"); });
        "act2-webhook-ignore", 2, "value-mismatch",
            "the registered webhook's failurePolicy is Ignore while policy.json says Fail",
            set(2, "/webhook/failure_policy", json!("Ignore"));
        "act3-empty-facts", 3, "facts-invalid", "facts is {}", set(3, "", json!({}));
        "act3-stored-without-uid", 3, "stored-without-uid",
            "good is stored, but the GET found nothing", edit(3, "/good", stored_without_uid);
        "act3-existing-new-uid", 3, "pod-replaced", "existing has another UID than the good pod",
            set(3, "/existing/uid", json!(BEEF));
        "act3-interrupted", 3, "evidence-interrupted", "the act was interrupted",
            with(|f| {
                let e = f.get_mut("evidence/03.json").unwrap();
                e["status"] = json!("interrupted");
                e["interruption"] = json!("runner received SIGTERM");
            });
    }
}

/// The flagged cases of `lab`, chosen by its steps in the registry: acts 1-2's for every lab,
/// act 3's by its baseline (sequential or in waves), then those of the lab's fault ([`Kind`]: a
/// scale to 0, freezes of the one replica, freezes of a replica among several).
pub fn cases(lab: Lab) -> Vec<Case> {
    let mut v = shared_cases();
    match acts::baseline(lab, 3) {
        // A sequential baseline (`Baseline { waves: 0 }`): one violating pod, `bad`.
        Some((0, _)) => v.extend(cases! {
            "act3-deny-without-marker", 3, "deny-without-marker",
                "bad is counted as an explicit deny, but another webhook denied it",
                edit(3, "/bad", set_deny_without_marker);
            "act3-already-exists-as-deny", 3, "already-exists-counted-as-deny",
                "a 409 AlreadyExists is recorded as explicit-deny",
                edit(3, "/bad", set_answer_already_exists);
        }),
        Some(_) => v.extend(parallel_baseline_cases(lab)),
        None => {}
    }
    v.extend(match Kind::of(lab).expect("cases of the lab's steps") {
        Kind::ScaleDown => scale_down_cases(),
        Kind::Freeze => freeze_cases(),
        Kind::ReplicaFreeze => replica_freeze_cases(lab),
    });
    v
}

/// The cases of a lab that freezes its one replica ([`Kind::Freeze`]: lab B), acts 3-8.
fn freeze_cases() -> Vec<Case> {
    cases! {
        "act3-audit-view-not-from-lines", 3, "raw-mismatch",
            "the parsed audit view says code 403 for the denied pod, its verbatim line says 400",
            with(|f| {
                let a = &mut facts_mut(f, 3)[lab::audit::FACTS_KEY];
                for r in a["requests"].as_array_mut().unwrap() {
                    r["events"][0]["code"] = json!(403);
                }
            });
        "act5-audit-timeout-stored", 5, "audit-contradicted",
            "a webhook-timeout under Fail whose audit event says 201 (the API server stored it)",
            audit(5, "/target_bad", |e| e["responseStatus"] = json!({"metadata": {}, "code": 201}));
        "act5-audit-no-final-event", 5, "observation-missing",
            "the frozen request's only audit event is ResponseStarted, no ResponseComplete",
            audit(5, "/target_good", |e| e["stage"] = json!("ResponseStarted"));
        "act6-audit-stored-without-failed-open", 6, "audit-contradicted",
            "a pod stored under Ignore during the freeze whose audit event has no failed-open annotation",
            audit(6, "/target_good", |e| {
                e["annotations"].as_object_mut().unwrap().remove(FAILED_OPEN_0);
            });
        "act6-audit-failed-open-other-webhook", 6, "audit-contradicted",
            "the failed-open annotation names the Fail webhook, not the act's Ignore webhook",
            audit(6, "/target_bad", |e| e["annotations"][FAILED_OPEN_0] = json!(FAIL_HOOK));
        "act7-audit-deny-code-differs", 7, "audit-contradicted",
            "the explicit deny's audit event says 500, the client got 400",
            audit(7, "/healthy_bad", |e| e["responseStatus"]["code"] = json!(500));
        "act4-plan-digest-mismatch", 4, "digest-mismatch",
            "freeze-plan.json evidence_sha256 is not the digest of 03.json",
            set_input("freeze-plan.json", "evidence_sha256", json!("0".repeat(64)), true);
        "act4-empty-facts", 4, "facts-invalid", "facts is {}", set(4, "", json!({}));
        "act5-empty-facts", 5, "facts-invalid", "facts is {}", set(5, "", json!({}));
        "act5-timeout-in-200ms", 5, "timeout-too-fast",
            "a webhook-timeout answered in 0.2 s while timeoutSeconds is 3",
            edit(5, "/target_bad", answered_fast);
        "act5-surviving-pod-new-uid", 5, "pod-replaced", "the 'surviving' pod has a new UID",
            set(5, "/existing/uid", json!(BEEF));
        "act5-control-stored-without-uid", 5, "stored-without-uid",
            "control is stored, but the GET found nothing", edit(5, "/control", stored_without_uid);
        "act5-deny-after-resume-without-marker", 5, "deny-without-marker",
            "the first explicit deny after resume carries no marker",
            edit(5, "/first_explicit_deny", set_deny_without_marker);
        "act5-registration-gone", 5, "registration-missing",
            "the registration must stay during a freeze",
            edit(5, "", |x| {
                x["registration_present_during_freeze"] = json!(false);
                x["registration_snapshot"] = Value::Null;
            });
        "act5-other-process", 5, "identity-changed", "the frozen PID's start time is not act 4's",
            set(5, "/freeze/identity/pid_start_time_ticks", json!(999));
        "act5-restart-same-container", 5, "restart-contradicted",
            "a restart count that went up needs a new container after the freeze",
            set(5, "/restart_count_after", json!(1));
        "act5-new-container-no-restart", 5, "restart-contradicted",
            "a new container after the freeze needs a restart count that went up",
            set(5, "/identity_after/container_id", json!("f".repeat(64)));
        "act6-policy-replaced", 6, "uid-mismatch", "the policy after the switch has another UID",
            set(6, "/policy/metadata/uid", json!(OTHER_POLICY));
        "act6-ignore-stored-in-200ms", 6, "timeout-too-fast",
            "under Ignore the target request was stored without waiting for the timeout",
            edit(6, "/target_good", answered_fast);
        "act6-healthy-already-exists", 6, "already-exists-counted-as-deny",
            "the healthy deny under Ignore is a 409 AlreadyExists",
            edit(6, "/healthy_bad", set_answer_already_exists);
        "act7-recovery-digest-mismatch", 7, "digest-mismatch",
            "recovery.json ignore_evidence_sha256 is not the digest of 06.json",
            set_input("recovery.json", "ignore_evidence_sha256", json!("1".repeat(64)), true);
        "act7-existing-new-uid", 7, "pod-replaced", "the act-3 pod has a new UID",
            set(7, "/existing/uid", json!(BEEF));
        "act8-report-digest-mismatch", 8, "digest-mismatch",
            "report.json fail_evidence_sha256 is not the digest of 05.json",
            set_input("report.json", "fail_evidence_sha256", json!("2".repeat(64)), true);
        "act8-evidence-changed", 8, "digest-mismatch",
            "05.json was edited after the report recorded its digest",
            set(5, "/target_good/elapsed_ms", json!(3013));
    }
}

/// The cases of a lab that scales the admission controller to 0 ([`Kind::ScaleDown`]: lab A),
/// acts 4-8.
fn scale_down_cases() -> Vec<Case> {
    cases! {
        "act5-audit-failed-open-while-unregistered", 5, "audit-contradicted",
            "the violating pod admitted with no registration carries a failed-open annotation (it would have been a failed call, not an absent webhook)",
            audit(5, "/target_bad", |e| e["annotations"][FAILED_OPEN_0] = json!(FAIL_HOOK));
        "act7-audit-dry-run-deny-code-differs", 7, "audit-contradicted",
            "the dry-run deny's audit event says 201, the client got 400",
            audit(7, "/bad", |e| e["responseStatus"] = json!({"metadata": {}, "code": 201}));
        "act4-plan-digest-mismatch", 4, "digest-mismatch",
            "scale-plan.json evidence_sha256 is not the digest of 03.json",
            set_input("scale-plan.json", "evidence_sha256", json!("0".repeat(64)), true);
        "act4-lease-holder-unknown", 4, "value-mismatch", "the Lease holder is not a recorded pod",
            set(4, "/lease/holder", json!("someone-else"));
        "act5-empty-facts", 5, "facts-invalid", "facts is {}", set(5, "", json!({}));
        "act5-claim-contradicts-raw-list", 5, "registration-claim-contradicted",
            "claims the webhook is present while the raw list is empty",
            set(5, "/policy_webhook_present", json!(true));
        "act5-admitted-without-uid", 5, "stored-without-uid",
            "the admitted violating request is 'stored' but the GET found nothing",
            edit(5, "/target_bad", stored_without_uid);
        "act5-surviving-pod-new-uid", 5, "pod-replaced", "the 'surviving' pod has a new UID",
            set(5, "/existing/uid", json!(BEEF));
        "act5-scaled-at-not-the-scale-down-answer", 5, "raw-mismatch",
            "scaled_at is not the answered_at of the healer's scale-down answer (raw scale-down)",
            set(5, "/scaled_at", json!(ts(240_100)));
        "act5-watcher-not-the-ready-answer", 5, "raw-mismatch",
            "the watcher's PID is not the one of the healer's ready answer (raw watcher-ready)",
            set(5, "/watcher/pid", json!(6162));
        "act5-policy-not-the-raw-read", 5, "raw-mismatch",
            "the policy is recorded absent while its read returned it (raw policy)",
            set(5, "/policy/exists", json!(false));
        "act6-lease-not-confirmed", 6, "not-confirmed", "the Lease wait ran out",
            set(6, "/lease_acquired", json!({"status": "not-confirmed", "at": null,
                "last_seen": "holder kyverno-admission-controller-6d9c7b8f5d-x2k4p", "waited_ms": 60000}));
        "act6-deny-before-registration", 6, "times-inconsistent",
            "the first deny is dated before the webhook was registered",
            set(6, "/webhook_registered/at", json!(ts(320_000)));
        "act6-probe-not-dry-run", 6, "value-mismatch", "a recovery probe was not a server dry-run",
            set(6, "/deny_probes/1/dry_run", json!(false));
        "act7-dry-run-found-by-get", 7, "rejected-but-stored",
            "dry-run-admitted, but the GET found the object",
            edit(7, "/good/get", |g| {
                g["exists"] = json!(true);
                g["uid"] = json!("f1f2f3f4-bbbb-4ccc-8ddd-eeeeeeeeeeee");
            });
        "act7-deny-without-marker", 7, "deny-without-marker", "the dry-run deny carries no marker",
            edit(7, "/bad", set_deny_without_marker);
        "act8-report-says-kept", 8, "report-contradicted",
            "report says registration-kept while 05.json shows it absent",
            set_input("report.json", "scale_down", json!("registration-kept"), true);
        "act8-report-digest-mismatch", 8, "digest-mismatch",
            "report.json dry_run_evidence_sha256 is not the digest of 07.json",
            set_input("report.json", "dry_run_evidence_sha256", json!("3".repeat(64)), true);
    }
}

/// A count in words, as the cases' names and reasons say it (`two`), a numeral past ten.
fn word(n: u32) -> String {
    let words = "zero one two three four five six seven eight nine ten";
    let w = words.split(' ').nth(n as usize);
    w.map_or(n.to_string(), str::to_owned)
}

/// Act 3's cases of a baseline in parallel waves (`bad` is a list), with the replicas of the
/// lab's scale up when it has one.
fn parallel_baseline_cases(lab: Lab) -> Vec<Case> {
    let mut v = cases! {
        "act3c-deny-without-marker", 3, "deny-without-marker",
            "a violating pod of a wave is counted as an explicit deny, but another webhook denied it",
            edit(3, "/bad/0", set_deny_without_marker);
        "act3c-already-exists-as-deny", 3, "already-exists-counted-as-deny",
            "a 409 AlreadyExists in a wave is recorded as explicit-deny",
            edit(3, "/bad/3", set_answer_already_exists);
        "act3c-a-violating-pod-admitted-in-a-wave", 3, "outcome-unexpected",
            "a violating pod of the parallel baseline was stored: a replica admitted it without the policy's verdict",
            edit(3, "/bad/7", |r| {
                let name = r["name"].as_str().unwrap().to_owned();
                *r = json!(bad_pod(&name, 154_003, 41, Answer::Stored(uid(0xbad7))));
            });
    };
    let n = acts::replicas(lab);
    if n > 1 {
        let ready = n - 1;
        let noun = if ready == 1 { "replica" } else { "replicas" };
        let (ready_w, n_w) = (word(ready), word(n));
        v.extend(cases! {
            format!("act3c-{ready_w}-{noun}-ready"), 3, "value-mismatch",
                format!("only {ready_w} of the {n_w} replicas were Ready when the baseline was sent"),
                set(3, format!("/replicas/{ready}/ready"), json!(false));
        });
    }
    v
}

/// The cases of a lab that scales up and freezes a replica by its role ([`Kind::ReplicaFreeze`]:
/// lab C), acts 4-8: each freeze's by what it freezes (a leader that loses the Lease and restarts,
/// a follower that leaves it where it is).
fn replica_freeze_cases(lab: Lab) -> Vec<Case> {
    // The replica each act freezes ([`Target`]), and what the reasons call it.
    let freezes = acts::freezes(lab);
    let frozen = |act| freezes.iter().find(|(n, _)| *n == act).map(|(_, t)| *t);
    let role = |act| match frozen(act) {
        Some(t) if t != Target::One => lab::labs::c::role(t),
        _ => "replica",
    };
    let (r5, r6) = (role(5), role(6));
    let mut v = cases! {
        "act4c-leader-is-not-the-lease-holder", 4, "value-mismatch",
            "the replica recorded as the leader is not the Lease kyverno's holder",
            edit(4, "", |a4| {
                let follower = a4["followers"][0].clone();
                a4["followers"][0] = a4["leader"].clone();
                a4["leader"] = follower;
            });
        "act5c-empty-facts", 5, "facts-invalid", "facts is {}", set(5, "", json!({}));
        "act5c-timed-out-but-stored", 5, "rejected-but-stored",
            format!("a wave's request that met the frozen {r5} timed out under Fail, yet its follow-up GET found the pod"),
            edit(5, "/bad/2/get", |g| {
                g["exists"] = json!(true);
                g["uid"] = json!("00000000-0000-4000-8000-0000000005b2");
                g["phase"] = json!("Pending");
            });
        "act5c-timeout-in-200ms", 5, "timeout-too-fast",
            "a webhook-timeout of a wave answered in 0.2 s while timeoutSeconds is 3",
            edit(5, "/bad/8", answered_fast);
        "act5c-control-denied", 5, "outcome-unexpected",
            "a control pod, outside the webhook's namespaceSelector, was denied during the freeze",
            edit(5, "/control/1", |r| {
                let name = r["name"].as_str().unwrap().to_owned();
                let sent = facts::parse_rfc3339(r["sent_at"].as_str().unwrap()).unwrap();
                let sent = (sent - facts::parse_rfc3339(&ts(0)).unwrap()).num_milliseconds();
                *r = json!(control_pod(&name, sent, 14, Answer::Deny(FAIL_HOOK)));
            });
        "act5c-lease-samples-missing", 5, "observation-missing",
            "the Lease was not read for 5 s of the freeze (a gap longer than three sample periods)",
            edit(5, "/lease_samples", |s| {
                s.as_array_mut().unwrap().drain(6..10);
            });
        "act6c-ignore-stored-in-200ms", 6, "timeout-too-fast",
            format!("under Ignore a request that met the frozen {r6} was stored without waiting for the timeout"),
            edit(6, "/bad/0", answered_fast);
        "act6c-policy-replaced", 6, "uid-mismatch", "the policy after the switch has another UID",
            set(6, "/policy/metadata/uid", json!(OTHER_POLICY));
        // Acts 7-8: the scale back and the report.
        "act7c-two-replicas-left", 7, "value-mismatch",
            "two replicas are left after the scale back to the original one",
            with(|f| {
                let kept = f["evidence/07.json"]["facts"]["replicas"][0].clone();
                let replicas = f["evidence/03.json"]["facts"]["replicas"].as_array().unwrap();
                let other = replicas.iter().find(|r| r["pod"]["name"] != kept["pod"]["name"]);
                let mut other = other.unwrap().clone();
                other["pod"]["at"] = kept["pod"]["at"].clone();
                facts_mut(f, 7)["replicas"].as_array_mut().unwrap().push(other);
            });
        "act7c-recovery-digest-mismatch", 7, "digest-mismatch",
            "recovery.json ignore_evidence_sha256 is not the digest of 06.json",
            set_input("recovery.json", "ignore_evidence_sha256", json!("1".repeat(64)), true);
        "act7c-existing-new-uid", 7, "pod-replaced",
            "act 3's pod has a new UID after the scale back", set(7, "/existing/uid", json!(BEEF));
        "act8c-report-digest-mismatch", 8, "digest-mismatch",
            "report.json leader_freeze_evidence_sha256 is not the digest of 05.json",
            set_input("report.json", "leader_freeze_evidence_sha256", json!("2".repeat(64)), true);
        "act8c-evidence-changed", 8, "digest-mismatch",
            "06.json was edited after the report recorded its digest",
            set(6, "/bad/0/elapsed_ms", json!(3014));
    };
    // The leader's cases on the lab's first freeze when it freezes the leader (its process is act
    // 4's, it loses the Lease to a follower and restarts, the report must say the Lease moved);
    // the follower's on every follower freeze.
    if frozen(5) == Some(Target::Leader) {
        v.extend(cases! {
            "act5c-target-is-not-act4s-leader", 5, "value-mismatch",
                "the replica frozen as the leader is a follower of act 4",
                with(|f| {
                    let name = f["evidence/04.json"]["facts"]["followers"][0]["pod_name"].clone();
                    facts_mut(f, 5)["target_pod"] = name;
                });
            "act5c-restart-same-container", 5, "restart-contradicted",
                "the former leader's restart count went up, but its container after the settle is the frozen one",
                edit(5, "", |x| x["target_after"]["identity_after"] = x["freeze"]["identity"].clone());
            "act8c-report-lease-kept", 8, "report-contradicted",
                "report says the Lease was kept while act 5's samples show a follower took it during the freeze",
                set_input("report.json", "lease", json!("kept"), true);
        });
    }
    for (act, _) in freezes.iter().filter(|(_, t)| *t == Target::Follower) {
        v.extend(follower_freeze_cases(*act));
    }
    v
}

/// The cases of act `act` frozen as a follower (lab C: act 6; a lab may freeze a follower first):
/// the Lease stays where it is, the process is the one last seen in its pod (act 4's here).
fn follower_freeze_cases(act: u8) -> Vec<Case> {
    let lease_moved: Mutation = Box::new(move |f| {
        // Act 4's leader, or its first follower when the leader still holds the Lease.
        let a4 = &f["evidence/04.json"]["facts"];
        let leader = a4["leader"]["pod_name"].clone();
        let follower = a4["followers"][0]["pod_name"].clone();
        let run = facts_mut(f, act);
        let held = run["lease_before"]["holder"] == leader;
        run["lease_samples"][4]["holder"] = if held { follower } else { leader };
    });
    cases! {
        format!("act{act}c-lease-moved-during-follower-freeze"), act, "value-mismatch",
            "a follower's freeze, yet a Lease read during it names another holder", lease_moved;
        format!("act{act}c-follower-other-process"), act, "identity-changed",
            "the frozen follower's process is not the one act 4 found in its pod",
            set(act, "/freeze/identity/pid_start_time_ticks", json!(999));
    }
}
