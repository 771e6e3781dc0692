//! A lab C work directory with acts 5-8 for the report page's tests, built from the facts types
//! (`lab::facts::c`) over the generated acts 1-4 (`common::fixtures::pass`). Synthetic, not a
//! recording: the times are the ones a real run would have (the leader frozen 20 s from 201 s,
//! the Lease and the endpoints read each second, the Lease first read taken over 13.2 s after the
//! freeze, the former leader restarted; a follower frozen 10 s under Ignore), the requests have
//! the API server's answers (`common::fixtures::request`, classified by the real classifier).
//! No raw records, audit or API server counters: the page's timeline and key facts do not read
//! them (the acts' grades say so in their findings).

use std::collections::BTreeMap;

use lab::digest::digest_value;
use lab::evidence::{ActStatus, Evidence, Lab, RequestRecord, SCHEMA_VERSION};
use lab::facts::{self, a, b, c};
use lab::inputs::{Context, InputFile};
use serde_json::{Value, json};

use super::common::fixtures::{self as fx, Answer, request, ts};
use super::common::reference;

/// The replicas of `pass(Lab::C)` (act 4's leader, then its followers).
pub const LEADER: &str = fx::CTRL_POD;
pub const FOLLOWER_1: &str = "kyverno-admission-controller-6d9c7b8f5d-b8n3r";
pub const FOLLOWER_2: &str = "kyverno-admission-controller-6d9c7b8f5d-k5v9t";
/// When the leader is frozen (ms after the fixtures' origin) and for how long.
pub const FREEZE_5: i64 = 201_000;
pub const FREEZE_5_MS: i64 = 20_003;
/// The first Lease read that names another holder, after the leader's freeze (13.2 s).
pub const TAKEOVER_READ: i64 = 214_200;
/// When the follower is frozen and for how long.
pub const FREEZE_6: i64 = 272_000;
pub const FREEZE_6_MS: i64 = 10_002;

const FAIL_HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
const IGNORE_HOOK: &str = "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label";
const TARGET: &str = "kca-webhook-target";
const CONTROL: &str = "kca-webhook-control";

fn evidence(act: u8, start: i64, end: i64, inputs: &[(&str, &Value)], facts: Value) -> Value {
    serde_json::to_value(Evidence {
        schema_version: SCHEMA_VERSION,
        lab: Lab::C,
        act,
        status: ActStatus::Completed,
        started_at: ts(start),
        finished_at: ts(end),
        inputs: inputs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), digest_value(v)))
            .collect(),
        facts,
        raw: vec![],
        interruption: None,
        versions: None,
    })
    .unwrap()
}

fn lease(holder: &str, renew: i64, transitions: u32, at: i64) -> a::LeaseFacts {
    a::LeaseFacts {
        namespace: "kyverno".into(),
        name: "kyverno".into(),
        holder: Some(holder.into()),
        acquire_time: Some(if transitions == 0 {
            "2026-11-29T09:58:00.000000Z".into()
        } else {
            ts(213_900)
        }),
        renew_time: Some(ts(renew)),
        lease_duration_seconds: Some(12),
        lease_transitions: Some(transitions),
        at: ts(at),
    }
}

/// One wave: `outcomes` per pod (`true`: it met the frozen replica), sent `at`, answered by the
/// webhook's timeout (3 s) or a deny in tens of ms; then the wave's control pod.
fn wave(
    act: u8,
    w: usize,
    at: i64,
    met: [bool; 6],
    met_answer: &dyn Fn(usize) -> Answer<'static>,
    hook: &'static str,
) -> (Vec<RequestRecord>, RequestRecord) {
    let bad = met
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let sent = at + i as i64 * 2;
            let name = format!("kca-c{act}-bad-w{w}-{i}-10{act}3{w}{i}-c{act}{w}{i}0b");
            if *m {
                request(
                    &name,
                    TARGET,
                    false,
                    false,
                    sent,
                    3_004 + i as u64,
                    met_answer(w * 6 + i),
                )
            } else {
                request(
                    &name,
                    TARGET,
                    false,
                    false,
                    sent,
                    28 + 3 * i as u64,
                    Answer::Deny(hook),
                )
            }
        })
        .collect();
    let control = request(
        &format!("kca-c{act}-control-w{w}-10{act}3{w}9-c{act}{w}c0c"),
        CONTROL,
        false,
        false,
        at + 15,
        24,
        Answer::Stored(format!("c{act}c{w}0000-1111-4222-8333-00000000c0c{w}")),
    );
    (bad, control)
}

fn identity(pod: &str) -> b::ProcessIdentity {
    let (uid, cid, pid) = match pod {
        LEADER => (
            fx::CTRL_POD_UID.to_owned(),
            fx::CONTAINER_ID.to_owned(),
            4242,
        ),
        FOLLOWER_1 => (
            "000000c2-1111-4222-8333-0000000000c2".into(),
            "4a".repeat(32),
            5151,
        ),
        _ => (
            "000000c3-1111-4222-8333-0000000000c3".into(),
            "5b".repeat(32),
            5252,
        ),
    };
    b::ProcessIdentity {
        pid,
        pid_start_time_ticks: 1_234_567 + u64::from(pid),
        container_id: cid,
        pod_uid: uid,
    }
}

fn freeze(pod: &str, frozen: i64, ms: i64, sec: u32) -> b::FreezeWindow {
    b::FreezeWindow {
        identity: identity(pod),
        watchdog_pid: Some(7070 + sec),
        watchdog_armed_at: ts(frozen - 600),
        resume_after_sec: sec,
        frozen_at: ts(frozen),
        state_during: Some("T".into()),
        resumed_at: ts(frozen + ms),
        resumed_by: b::Resumer::Watchdog,
        state_after: "S".into(),
    }
}

/// Endpoint reads each second from `from` to `to`: the three replicas, all ready (the readiness
/// probe, period 10 s × 6 failures, keeps a frozen pod ready for a minute).
fn endpoint_samples(from: i64, to: i64) -> Vec<c::EndpointSample> {
    (from..=to)
        .step_by(1000)
        .map(|at| c::EndpointSample {
            at: ts(at),
            endpoints: [
                (LEADER, "10.88.0.12"),
                (FOLLOWER_1, "10.88.0.21"),
                (FOLLOWER_2, "10.88.0.22"),
            ]
            .into_iter()
            .map(|(p, ip)| c::EndpointFacts {
                address: ip.into(),
                pod: Some(p.into()),
                ready: true,
            })
            .collect(),
            error: None,
        })
        .collect()
}

fn counters(rows: [(&str, u64, u64); 3]) -> Vec<c::ReplicaRequests> {
    rows.iter()
        .map(|(p, b, a)| c::ReplicaRequests {
            pod: (*p).into(),
            before: Some(*b),
            after: Some(*a),
        })
        .collect()
}

fn registration(hook: &str, policy: &str) -> Value {
    json!({"name": hook, "failurePolicy": policy, "timeoutSeconds": 3,
           "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc",
                                        "path": "/vpol/kca-webhook-label", "port": 443}},
           "sideEffects": "NoneOnDryRun"})
}

/// The passing lab C work directory's acts 1-4 plus this page's own acts 5-8 and their inputs:
/// a drawing fixture with round times (the timeline tests assert exact spans), without the raw
/// records the graders hold the facts to, so its acts 5-7 do not pass their grades. The graders'
/// own passing fixture (`fixtures/c/pass`, 8/8) is the lab C golden page.
pub fn files() -> BTreeMap<String, Value> {
    let mut files = fx::pass(Lab::C);
    // The generated work directory has its own acts 5-8 (the graders' fixture): this page's are
    // built below, on its acts 1-4 only.
    files.retain(|k, _| {
        !lab::acts::numbers(Lab::C)
            .filter(|&a| a > 4)
            .any(|a| k == &format!("evidence/{a:02}.json"))
            && !["policy-ignore.json", "recovery.json", "report.json"].contains(&k.as_str())
    });
    let existing: facts::PodObservation =
        serde_json::from_value(files["evidence/03.json"]["facts"]["existing"].clone()).unwrap();
    let existing_at = |at: i64| facts::PodObservation {
        at: ts(at),
        ..existing.clone()
    };

    // Act 5: the leader frozen 20 s under Fail; waves at +1 s, +7 s, +13 s.
    let mut bad = Vec::new();
    let mut control = Vec::new();
    let timeout = |_: usize| Answer::Timeout(FAIL_HOOK);
    for (w, (at, met)) in [
        (202_000, [true, false, false, true, false, false]),
        (208_000, [false, true, false, false, true, false]),
        (214_000, [false, false, true, false, false, false]),
    ]
    .into_iter()
    .enumerate()
    {
        let (b, c) = wave(5, w, at, met, &timeout, FAIL_HOOK);
        bad.extend(b);
        control.push(c);
    }
    // The Lease: the leader renewed last at 199.5 s; 12 s after, another replica acquires it
    // (renewing each 2 s); the read at +13.2 s is the first to name it.
    let lease_samples: Vec<c::LeaseSample> = (201_200..=221_200)
        .step_by(1000)
        .map(|at| {
            let (holder, renew, n) = if at < TAKEOVER_READ {
                (LEADER, 199_500, 0)
            } else {
                (FOLLOWER_1, 213_900 + (at - 213_900) / 2000 * 2000, 1)
            };
            c::LeaseSample {
                at: ts(at),
                holder: Some(holder.into()),
                renew_time: Some(ts(renew)),
                lease_transitions: Some(n),
                error: None,
            }
        })
        .collect();
    let resumed5 = FREEZE_5 + FREEZE_5_MS;
    let deny5 = request(
        "kca-c5-after-1-105400-c5a10b",
        TARGET,
        false,
        false,
        resumed5 + 97,
        38,
        Answer::Deny(FAIL_HOOK),
    );
    let a5 = c::ReplicaFreezeRun {
        target_role: "leader".into(),
        target_pod: LEADER.into(),
        lease_before: lease(LEADER, 199_500, 0, FREEZE_5 - 100),
        freeze: freeze(LEADER, FREEZE_5, FREEZE_5_MS, 20),
        registration_present_during_freeze: true,
        registration_snapshot: registration(FAIL_HOOK, "Fail"),
        registration_checked_at: ts(FREEZE_5 + 400),
        timeout_seconds: 3,
        waves: 3,
        wave_size: 6,
        bad,
        control,
        lease_samples,
        endpoint_samples: endpoint_samples(FREEZE_5 + 300, resumed5 + 297),
        // The frozen leader's counter read after the resume: the requests it held were counted
        // when it ran again.
        replica_requests: counters([(LEADER, 15, 20), (FOLLOWER_1, 4, 11), (FOLLOWER_2, 7, 14)]),
        after_resume: vec![deny5.clone()],
        first_explicit_deny: Some(deny5.clone()),
        first_deny_after_resume_ms: Some(135),
        // It lost the Lease while frozen: on resume it exits, kubelet restarts the container.
        target_after: c::TargetAfter {
            pod: LEADER.into(),
            pod_uid_before: fx::CTRL_POD_UID.into(),
            pod_uid_after: Some(fx::CTRL_POD_UID.into()),
            restart_count_before: 0,
            restart_count_after: 1,
            ready_after: true,
            identity_after: Some(b::ProcessIdentity {
                pid: 6161,
                pid_start_time_ticks: 1_299_999,
                container_id: "6c".repeat(32),
                pod_uid: fx::CTRL_POD_UID.into(),
            }),
            holds_lease_after: false,
            settled_at: ts(262_000),
            waited_ms: (262_000 - (resumed5 + 135)) as u64,
        },
        lease_after: lease(FOLLOWER_1, 261_900, 1, 262_100),
        existing: existing_at(262_300),
    };
    files.insert(
        "evidence/05.json".into(),
        evidence(5, 200_000, 262_500, &[], serde_json::to_value(&a5).unwrap()),
    );

    // Act 6: the policy switched to Ignore (lab B's generated act 6 has the same policy and
    // registration), a healthy deny, the follower k5v9t frozen 10 s.
    let b6 = fx::pass(Lab::B)["evidence/06.json"]["facts"].clone();
    let ctx = |files: &BTreeMap<String, Value>| Context {
        node_uid: Some(fx::NODE_UID.into()),
        deployment_uid: Some(fx::DEPLOY_UID.into()),
        policy_uid: Some(fx::POLICY_UID.into()),
        evidence_digests: lab::acts::numbers(Lab::C)
            .filter_map(|a| {
                Some((
                    a,
                    digest_value(files.get(&format!("evidence/{a:02}.json"))?),
                ))
            })
            .collect(),
        ..Default::default()
    };
    let ignore = reference::value(InputFile::PolicyIgnore, &ctx(&files)).unwrap();
    files.insert("policy-ignore.json".into(), ignore.clone());
    let healthy = request(
        "kca-c6-healthy-106271-c6he0b",
        TARGET,
        false,
        false,
        271_000,
        41,
        Answer::Deny(IGNORE_HOOK),
    );
    let mut bad = Vec::new();
    let mut control = Vec::new();
    let stored = |n: usize| Answer::Stored(format!("c6{n:06x}-1111-4222-8333-0000000c6{n:03x}"));
    for (w, (at, met)) in [
        (272_600, [false, true, false, false, false, true]),
        (275_700, [true, false, false, false, false, false]),
        (278_800, [false, false, false, true, false, false]),
    ]
    .into_iter()
    .enumerate()
    {
        let (b, c) = wave(6, w, at, met, &stored, IGNORE_HOOK);
        bad.extend(b);
        control.push(c);
    }
    let resumed6 = FREEZE_6 + FREEZE_6_MS;
    let deny6 = request(
        "kca-c6-after-1-106282-c6a10b",
        TARGET,
        false,
        false,
        resumed6 + 98,
        31,
        Answer::Deny(IGNORE_HOOK),
    );
    let run6 = c::ReplicaFreezeRun {
        target_role: "follower".into(),
        target_pod: FOLLOWER_2.into(),
        lease_before: lease(FOLLOWER_1, 269_900, 1, FREEZE_6 - 100),
        freeze: freeze(FOLLOWER_2, FREEZE_6, FREEZE_6_MS, 10),
        registration_present_during_freeze: true,
        registration_snapshot: registration(IGNORE_HOOK, "Ignore"),
        registration_checked_at: ts(FREEZE_6 + 400),
        timeout_seconds: 3,
        waves: 3,
        wave_size: 6,
        bad,
        control,
        lease_samples: (272_150..=282_150)
            .step_by(1000)
            .map(|at| c::LeaseSample {
                at: ts(at),
                holder: Some(FOLLOWER_1.into()),
                renew_time: Some(ts(269_900 + (at - 269_900) / 2000 * 2000)),
                lease_transitions: Some(1),
                error: None,
            })
            .collect(),
        endpoint_samples: endpoint_samples(FREEZE_6 + 250, resumed6 + 248),
        // The former leader's counter started again at its restart.
        replica_requests: counters([(LEADER, 0, 7), (FOLLOWER_1, 11, 19), (FOLLOWER_2, 14, 18)]),
        after_resume: vec![deny6.clone()],
        first_explicit_deny: Some(deny6.clone()),
        first_deny_after_resume_ms: Some(129),
        target_after: c::TargetAfter {
            pod: FOLLOWER_2.into(),
            pod_uid_before: identity(FOLLOWER_2).pod_uid,
            pod_uid_after: Some(identity(FOLLOWER_2).pod_uid),
            restart_count_before: 0,
            restart_count_after: 0,
            ready_after: true,
            identity_after: Some(identity(FOLLOWER_2)),
            holds_lease_after: false,
            settled_at: ts(283_500),
            waited_ms: (283_500 - (resumed6 + 129)) as u64,
        },
        lease_after: lease(FOLLOWER_1, 283_500, 1, 283_600),
        existing: existing_at(283_800),
    };
    let a6 = c::Act6Facts {
        policy_uid_before: b6["policy_uid_before"].as_str().unwrap().into(),
        policy: b6["policy"].clone(),
        webhook: facts::WebhookFacts {
            observed_at: ts(270_500),
            ..serde_json::from_value(b6["webhook"].clone()).unwrap()
        },
        healthy_bad: healthy,
        run: run6,
    };
    files.insert(
        "evidence/06.json".into(),
        evidence(
            6,
            270_000,
            284_000,
            &[("policy-ignore.json", &ignore)],
            serde_json::to_value(&a6).unwrap(),
        ),
    );

    // Act 7: back to one replica (the leader b8n3r stays), an explicit deny.
    let recovery = reference::value(InputFile::RecoveryC, &ctx(&files)).unwrap();
    files.insert("recovery.json".into(), recovery.clone());
    let deny7 = request(
        "kca-c7-probe-1-107331-c7p10b",
        TARGET,
        false,
        false,
        331_000,
        36,
        Answer::Deny(IGNORE_HOOK),
    );
    let a3: c::Act3Facts =
        serde_json::from_value(files["evidence/03.json"]["facts"].clone()).unwrap();
    let a7 = c::Act7Facts {
        scale_back: c::ScaleBackFacts {
            fault_id: a3.scale.fault_id.clone(),
            action: "restored".into(),
            replicas_before: 3,
            replicas: 1,
            at: ts(300_400),
        },
        deployment: a::DeploymentFacts {
            replicas: 1,
            ready_replicas: 1,
            ..a3.deployment.clone()
        },
        replicas: a3
            .replicas
            .iter()
            .filter(|r| r.pod.name == FOLLOWER_1)
            .map(|r| c::ReplicaFacts {
                pod: facts::PodObservation {
                    at: ts(330_900),
                    ..r.pod.clone()
                },
                ..r.clone()
            })
            .collect(),
        lease: lease(FOLLOWER_1, 329_900, 1, 330_950),
        policy_uid: fx::POLICY_UID.into(),
        webhook: facts::WebhookFacts {
            observed_at: ts(330_800),
            ..a6.webhook.clone()
        },
        deny_probes: vec![deny7.clone()],
        healthy_bad: deny7,
        existing: existing_at(331_200),
        waited_ms: 30_700,
    };
    files.insert(
        "evidence/07.json".into(),
        evidence(
            7,
            300_000,
            331_500,
            &[("recovery.json", &recovery)],
            serde_json::to_value(&a7).unwrap(),
        ),
    );

    // Act 8: the report in the evidence's words, checked.
    let words = lab::rules::c::report_expectations(&a3, &a5, &a6, &a7);
    let ctx8 = ctx(&files);
    let report = reference::report_c(&ctx8, &words).expect("the evidence's words are report words");
    files.insert("report.json".into(), report.clone());
    let digests = ctx8.evidence_digests;
    let checks = fx::report_checks(InputFile::ReportC, &report, &digests);
    let a8 = facts::Act8Facts {
        checks,
        evidence_digests: digests
            .iter()
            .map(|(a, d)| (format!("{a:02}"), d.clone()))
            .collect(),
    };
    files.insert(
        "evidence/08.json".into(),
        evidence(
            8,
            340_000,
            340_200,
            &[("report.json", &report)],
            serde_json::to_value(&a8).unwrap(),
        ),
    );
    files
}
