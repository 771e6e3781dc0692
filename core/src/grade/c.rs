//! Lab C graders, acts 3-8 (three admission-controller replicas; `docs/labs.md`, "Lab C").
//!
//! Acts 1-2 are lab B's (graded in [`super`]). Each rule is a function named after what it
//! holds:
//!
//! | act | rule | holds | code |
//! |---|---|---|---|
//! | 3 | [`scaled_to_distinct_ready_replicas`] | the scale's before/after, the Deployment's replicas, the replicas, distinct names and UIDs, each `Ready`, `Running` | `ha-plan.json` (1 → 3), act 1's Deployment, the registry's count (3) | value-mismatch, uid-mismatch |
//! | 3 | [`every_ready_replica_is_a_ready_endpoint`] | `kyverno-svc`'s ready endpoints | one per replica, by pod name and address | value-mismatch |
//! | 3 | [`lease_holder_is_a_replica`] | the Lease `kyverno`'s holder | one of the replicas | value-mismatch |
//! | 3 | `act3` | the registration after the scale | act 2's, unchanged | registration-changed |
//! | 3 | [`wait_is_its_checks`] | the scale, then the three conditions, then the first request; `waited_ms` | each other; each condition the first check of raw `ready-wait` where it held; the last condition and the first request | times-inconsistent, raw-mismatch, observation-missing |
//! | 3 | [`waves_were_parallel`] | `waves × wave_size` violating pods, each wave's requests in flight together | the counts (at least two waves); at least one request per replica in flight at one instant ([`most_in_flight`]) | value-mismatch, times-inconsistent |
//! | 3 | [`baseline_outcomes_are_healthy`] | every violating pod an explicit deny from act 2's webhook, good and control stored, the existing pod the good one | the policy | outcome-unexpected, deny-other-webhook, value-mismatch |
//! | 3 | [`replica_counts_cover_the_requests`] | Kyverno's per-replica pod request counters | one row per replica, no counter down ([`replica_rows_are_the_replicas`]); together they moved by at least the target requests | value-mismatch |
//! | 3 | [`act3_facts_are_the_raw_reads`] | the Deployment, Lease, pods, endpoints, the healer's scale, each counter | the raw records they were derived from; each read timed between its record and the next ([`read_between_its_raw_record_and_next`]); the metrics window between the counters' reads | raw-mismatch, observation-missing, times-inconsistent |
//! | 4 | `investigation_against_its_plan` ([`super`]) | node and Deployment UIDs | act 1, `freeze-plan.json` | uid-mismatch |
//! | 4 | `act4` | the leader's pod, both Lease reads | the Lease's holder, read before and after (unchanged); raw `lease-before`/`lease-after` | value-mismatch, raw-mismatch, observation-missing |
//! | 4 | [`processes_are_act3s_replicas`] | leader + followers | act 3's replica UIDs, each once; PIDs and start times distinct; each live (`freeze::investigated_process_runs`: `.identity.<field>` each, lab B's rule); each raw `cri-container:<pod>` (restart count = the container's attempt) | value-mismatch, uid-mismatch, process-still-stopped, raw-mismatch, observation-missing |
//! | 5, 6 | [`frozen_replica_is_the_target`] | the role, pod and process frozen; a follower's Lease samples and read after | the registry's target: a leader the Lease's holder before (the first freeze: act 4's leader), a follower not, one of act 3's pods, the Lease unchanged; the process last seen in its pod ([`latest_process_before`]) | value-mismatch, uid-mismatch, identity-changed |
//! | 6 | `freeze::policy_switched_to_ignore` | the stored policy, the registration, a violating pod under Ignore | act 2's UID, `policy-ignore.json` (`stored_policy_is_the_applied_input`), raw `policy-stored`; act 2's registration switched to Ignore; explicit deny before the freeze | uid-mismatch, value-mismatch, raw-mismatch, registration-changed |
//! | 5, 6 | every freeze's rules, lab B's too (`freeze::freeze_rules`) | the freeze window and ledger, the process state, the registration read during the freeze, the requests after the resume and the first deny, the restart count and container after | the healer's deadline, `T` during only, raw `fault-ledger-resumed`; present, its snapshot the claim, the act's failurePolicy, act 2's (act 6: act 6's) registration, its scope, `timeout_seconds`, read inside the freeze; each after the resume a violating pod, the last the first explicit deny from the policy's webhook, timed from the resume; restart count never down, up exactly when the container is new, the same container the same process | times-inconsistent, value-mismatch, process-still-stopped, raw-mismatch, registration-missing, registration-changed, registration-claim-contradicted, registration-scope, not-confirmed, outside-window, restart-contradicted, identity-changed |
//! | 5, 6 | [`freeze_waves_met_the_frozen_replica`] | `waves × wave_size` violating pods (≥ 18), one control pod per wave | sent after the freeze, answered before the resume, each wave with one request per replica in flight at once ([`waves_were_parallel`]); each violating pod a target pod that met the frozen replica (Fail: `webhook-timeout`, never admitted; Ignore: stored) after `timeoutSeconds`, or denied by the policy's webhook; control stored | value-mismatch, times-inconsistent, outcome-unexpected, timeout-too-fast, timeout-too-slow, deny-other-webhook |
//! | 5, 6 | [`samples_cover_the_freeze`] | the Lease and EndpointSlice samples | one about each second from the freeze to the resume, no gap over three periods | observation-missing |
//! | 5, 6 | [`target_after_is_the_frozen_pod`] | the frozen replica after the settle, its restart counts, `identity_after` | its pod and UID, its container's pod; raw `pods-after`, CRI's `attempt` in raw `cri-container-before`/`-after`; a CRI answer is not dropped | value-mismatch, uid-mismatch, raw-mismatch, observation-missing |
//! | 5, 6 | [`replica_rows_are_the_replicas`] | each replica's counter | one row per act 3 replica; down only for the frozen replica that restarted | value-mismatch |
//! | 5, 6 | [`replica_freeze_run`] | the Leases before/after, every sample, the counters, the settle | raw `lease-before`/`lease-after`, `freeze-samples`, `replica-metrics-*`, `settle-wait` ([`settle_is_its_checks`]) | raw-mismatch, observation-missing, times-inconsistent |
//! | 5, 6 | `existing_pod_survives_since` ([`super`]) | act 3's pod | same name, UID, `Running`, restart count never down | pod-replaced, pod-not-running, restart-contradicted |
//! | 7 | `recovery.json`, `freeze::recovered_under_ignore` (lab B's too) | the policy UID, the Ignore registration, the deny | act 2's UID, act 6's registration unchanged, its scope, raw `webhook-configuration`; the last probe an explicit deny from it | uid-mismatch, registration-changed, registration-scope, raw-mismatch, outcome-unexpected, observation-missing |
//! | 7 | [`scaled_back_to_the_original_count`], [`replicas_left_are_act3s_pods`] | the scale back, the Deployment, the replicas left | the original count, act 3's attempt; act 1's Deployment; each Ready replica one of act 3's pods (name, UID, address), `Running`; the Lease's holder one of them | value-mismatch, uid-mismatch |
//! | 7 | [`deny_probes_are_violating_pods_one_after_another`], [`wait_spans_the_act_until_the_existing_pod`] | the probes, `waited_ms` | violating target pods after the scale back, one at a time; the act's start to the existing pod's read | value-mismatch, times-inconsistent |
//! | 7 | [`act7_facts_are_the_raw_reads`] | `replicas_before`, the heal, the Lease, the policy UID | raw `deployment-before`, `scale-attempt-heal`, `lease`, `policy` | raw-mismatch, observation-missing |
//! | 8 | `act8` | each word of `report.json`, the digests | `rules::c::report_expectations`; 05/06/07 | report-contradicted, digest-mismatch |

use std::collections::BTreeSet;

use serde_json::Value;

#[cfg(doc)]
use super::Code;
use super::freeze::{self, Freeze};
use super::witness::{
    fact_is_derived_from_raw, fact_is_derived_from_raw_record, lease_is_derived_from,
    list_is_derived_from_raw, raw_at, raw_record, required_raw, rows_are_derived_from_raw,
};
use super::{
    Code::*, G, SameRegistration, ev_name, fields_are, registration_equals, times_are_ordered,
};
use crate::acts::{self, Target};
use crate::derive;
use crate::evidence::{Evidence, Outcome, RequestRecord};
use crate::facts::{self, a::LeaseFacts, c::*};
use crate::inputs::{self, Context};

/// The pod UIDs of act 3's replicas.
fn replica_uids(a3: &Act3Facts) -> BTreeSet<&str> {
    a3.replicas
        .iter()
        .filter_map(|r| r.pod.uid.as_deref())
        .collect()
}

/// The pod names of act 3's replicas.
fn replica_names(replicas: &[ReplicaFacts]) -> BTreeSet<&str> {
    replicas.iter().map(|r| r.pod.name.as_str()).collect()
}

/// Act 3: three ready replicas, their endpoints and the Lease, then the healthy baseline.
pub(crate) fn act3(g: &mut G) {
    let Some(f) = g.facts::<Act3Facts>(3) else {
        return;
    };
    let ctx = Context {
        node_uid: g.facts::<facts::Act1Facts>(1).map(|a1| a1.node.uid),
        deployment_uid: Some(f.deployment.uid.clone()),
        ..Default::default()
    };
    g.input::<inputs::HaPlan>(&ctx);
    let s = "evidence/03.json facts";
    scaled_to_distinct_ready_replicas(g, s, &f);
    every_ready_replica_is_a_ready_endpoint(g, s, &f);
    lease_holder_is_a_replica(g, s, &f.lease, &f.replicas);
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        // Scaling does not touch the registration: it is act 2's.
        let (sub, same) = (format!("{s}.webhook"), SameRegistration::Identical);
        registration_equals(g, &sub, &f.webhook, &a2.webhook, same);
    }
    // At least two waves of act 3's size.
    let least = 2 * u64::from(f.wave_size);
    waves_were_parallel(g, s, &f.bad, (f.waves, f.wave_size, least));
    baseline_outcomes_are_healthy(g, s, &f);
    replica_counts_cover_the_requests(g, s, &f);
    if let Some(ev) = g.evidence(3) {
        wait_is_its_checks(g, s, &ev, &f);
        act3_facts_are_the_raw_reads(g, s, &ev, &f);
    }
}

/// The healer scaled from the plan's original count to the registry's ([`acts::replicas`]:
/// `ha-plan.json` `replicas`, 3), and act 1's Deployment and its replicas say so: that many, each
/// its own pod (distinct names and UIDs), `Ready` and `Running`.
fn scaled_to_distinct_ready_replicas(g: &mut G, s: &str, f: &Act3Facts) {
    let (original, d) = (inputs::OriginalReplicas::VALUE, &f.deployment);
    let n = acts::replicas(g.lab);
    let rows = [
        ("scale.replicas_before", original, f.scale.replicas_before),
        ("scale.replicas", n, f.scale.replicas),
        ("deployment.replicas", n, d.replicas),
        ("deployment.ready_replicas", n, d.ready_replicas),
        ("replicas", n, f.replicas.len() as u32),
    ];
    fields_are(g, ValueMismatch, s, rows);
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        let act1 = a1.controller_deployment.uid;
        fields_are(g, UidMismatch, s, [("deployment.uid", act1, d.uid.clone())]);
    }
    let (names, uids) = (replica_names(&f.replicas), replica_uids(f));
    let ok = names.len() == f.replicas.len() && uids.len() == f.replicas.len();
    g.check(ok, UidMismatch, format!("{s}.replicas"), || {
        format!("expected distinct pods, found names {names:?} and UIDs {uids:?}")
    });
    for (i, r) in f.replicas.iter().enumerate() {
        let ok = r.ready && r.pod.exists && r.pod.phase.as_deref() == Some("Running");
        g.check(ok, ValueMismatch, format!("{s}.replicas[{i}]"), || {
            let (ready, phase) = (r.ready, &r.pod.phase);
            format!("expected a Ready, Running pod, found ready={ready} phase={phase:?}")
        });
    }
}

/// Every replica is a ready endpoint of `kyverno-svc` (by pod name and address), and there is
/// no ready endpoint that is not one of them: the API server dials these addresses itself.
fn every_ready_replica_is_a_ready_endpoint(g: &mut G, s: &str, f: &Act3Facts) {
    let ready = (f.endpoints.iter().filter(|e| e.ready)).map(|e| (e.pod.as_deref(), &*e.address));
    let ips = f.replicas.iter().map(|r| r.pod_ip.as_deref().unwrap_or(""));
    let names = f.replicas.iter().map(|r| Some(r.pod.name.as_str()));
    let replicas = names.zip(ips);
    let (ready, replicas): (BTreeSet<_>, BTreeSet<_>) = (ready.collect(), replicas.collect());
    g.expect_eq(ValueMismatch, format!("{s}.endpoints"), replicas, ready);
}

/// The Lease's holder is one of the replicas (a pod name: Kyverno's identity).
fn lease_holder_is_a_replica(g: &mut G, s: &str, lease: &LeaseFacts, replicas: &[ReplicaFacts]) {
    let holder = lease.holder.as_deref().unwrap_or("");
    let ok = replicas.iter().any(|r| r.pod.name == holder);
    g.check(ok, ValueMismatch, format!("{s}.lease.holder"), || {
        format!("expected one of the replicas, found {:?}", lease.holder)
    });
}

/// The wait after the scale: each of its three conditions first held after the scale, before the
/// first baseline request, at the first of its checks where it held (raw `ready-wait`, every check
/// whose state changed); its recorded length lies between the last condition (less the clock
/// skew) and the first request (the wait starts right after the scale's answer). Flags
/// [`Code::TimesInconsistent`] / [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn wait_is_its_checks(g: &mut G, s: &str, ev: &Evidence, f: &Act3Facts) {
    let (w, scaled) = (&f.wait, &f.scale.scaled_at);
    let checks = required_raw(g, ev, "ready-wait", &format!("{s}.wait"));
    for (what, flag, at) in [
        ("ready_pods_at", "pods_ok", &w.ready_pods_at),
        ("ready_endpoints_at", "endpoints_ok", &w.ready_endpoints_at),
        ("registration_at", "registration", &w.registration_at),
    ] {
        let sub = format!("{s}.wait.{what}");
        g.times_ordered(&sub, scaled, at);
        if let Some(first) = f.bad.first() {
            g.times_ordered(&format!("{s}.bad[0].sent_at"), at, &first.sent_at);
        }
        if let Some(checks) = checks {
            let mut all = checks.as_array().into_iter().flatten();
            let raw = all.find(|c| c[flag] == true).and_then(|c| c["at"].as_str());
            let ok = raw == Some(at.as_str());
            g.check(ok, RawMismatch, sub, || {
                format!("recorded {at:?}; the first check with {flag} in raw ready-wait is {raw:?}")
            });
        }
    }
    let ms = |t: &String| facts::ms_between(Some(scaled), Some(t));
    let last = [&w.ready_pods_at, &w.ready_endpoints_at, &w.registration_at];
    let last = last.into_iter().filter_map(ms).max();
    let first = f.bad.first().and_then(|r| ms(&r.sent_at));
    if let (Some(last), Some(first)) = (last, first) {
        let waited = w.waited_ms as i64;
        let ok = waited + super::bounds::STEP_START_SPREAD_MS >= last && waited <= first;
        g.check(ok, TimesInconsistent, format!("{s}.wait.waited_ms"), || {
            format!("{waited} ms waited: the last condition held {last} ms after the scale, the first request went {first} ms after it")
        });
    }
}

/// The most requests of `wave` in flight at one instant: each request spans `[sent_at,
/// answered_at]`; `None` when a time does not parse.
fn most_in_flight(wave: &[RequestRecord]) -> Option<usize> {
    let mut edges = Vec::new();
    for r in wave {
        // A send at the same millisecond as another's answer counts as overlapping.
        edges.push((facts::parse_rfc3339(&r.sent_at)?, 0usize));
        edges.push((facts::parse_rfc3339(&r.answered_at)?, 1usize));
    }
    edges.sort();
    let (mut now, mut most) = (0usize, 0usize);
    for (_, answer) in edges {
        // A send adds one request in flight, an answer takes one away.
        now = (now + 1).saturating_sub(2 * answer);
        most = most.max(now);
    }
    Some(most)
}

/// `bad`, the violating pods sent in `w = (waves, size, least)`: `waves` waves of `size` (act
/// 3's baseline, a freeze's), is one record each, at least `least` in all, and in each wave
/// (`s.bad (wave <w>)`) at least one request per replica was in flight at once
/// ([`most_in_flight`]): the API server opens a connection per concurrent call, sequential calls
/// reuse one and reach one replica (`docs/lab-c.md`). (Not "every request sent before any
/// answer": on a loaded host a task of the wave may start after a fast deny of another, seen in 2
/// of 5 runs on 2026-12-01 with the load average at 9.) Flags value-mismatch (the counts),
/// times-inconsistent (a wave).
fn waves_were_parallel(g: &mut G, s: &str, bad: &[RequestRecord], w: (u32, u32, u64)) {
    let ((waves, size, least), n) = (w, bad.len());
    let (replicas, all) = (acts::replicas(g.lab), u64::from(waves) * u64::from(size));
    let ok = all >= least && size >= replicas && n as u64 == all;
    g.check(ok, ValueMismatch, format!("{s}.bad"), || {
        format!("expected waves of at least {replicas} violating pods, at least {least} in all, one record each; found {waves} × {size} and {n} records")
    });
    if size == 0 {
        return;
    }
    for (w, wave) in bad.chunks(size as usize).enumerate() {
        let most = most_in_flight(wave);
        let ok = most.is_some_and(|m| m >= replicas as usize);
        g.check(ok, TimesInconsistent, format!("{s}.bad (wave {w})"), || {
            let n = wave.len();
            format!("at most {most:?} of the wave's {n} requests were in flight at once; a parallel wave has at least {replicas}")
        });
    }
}

/// A healthy cluster with three replicas: every violating pod explicitly denied by act 2's
/// webhook and not stored ([`freeze::target_pod`]); the labelled target pod and the control
/// pod stored; all real creates, never server dry-run (a dry-run would store nothing to compare);
/// the existing pod is the good pod, `Running`.
fn baseline_outcomes_are_healthy(g: &mut G, s: &str, f: &Act3Facts) {
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    for (i, r) in f.bad.iter().enumerate() {
        let sub = format!("{s}.bad[{i}]");
        freeze::target_pod(g, &sub, r, false, freeze::DENIED, hook.as_ref(), None);
    }
    let control = super::Meant(Some(super::CONTROL_NAMESPACE), Some(false), Some(false));
    for (sub, r, meant) in [
        ("good", &f.good, super::Meant::target(true)),
        ("control", &f.control, control),
    ] {
        let sub = format!("{s}.{sub}");
        g.request(&sub, r, &[Outcome::Stored]);
        super::request_is_the_pod_meant(g, &sub, r, meant);
    }
    let (good, existing) = (&f.good, &f.existing);
    let names = (
        (&good.name, &good.namespace),
        (&existing.name, &existing.namespace),
    );
    fields_are(g, ValueMismatch, s, [("existing.name", names.0, names.1)]);
    g.times_ordered(&format!("{s}.existing.at"), &good.get.at, &existing.at);
    if let Some(uid) = &good.get.uid {
        g.existing(&format!("{s}.existing"), existing, uid);
    }
}

/// [`replica_rows_are_the_replicas`]; where every replica's counter was read, together they moved
/// by at least the target-namespace requests (each reached one replica; Kyverno also counts other
/// pod requests, so not exactly).
fn replica_counts_cover_the_requests(g: &mut G, s: &str, f: &Act3Facts) {
    replica_rows_are_the_replicas(g, s, &f.replica_requests, Some(&f.replicas), None);
    let moved = f.replica_requests.iter();
    let moved = moved.map(|r| Some(r.after?.saturating_sub(r.before?)));
    if let Some(total) = moved.sum::<Option<u64>>() {
        let (target, sub) = (f.bad.len() + 1, format!("{s}.replica_requests"));
        g.check(total >= target as u64, ValueMismatch, sub, || {
            format!(
                "the replicas counted {total} pod requests, fewer than the {target} target requests"
            )
        });
    }
}

/// One counter row per replica of act 3 (`replicas`, when read), each once; a counter goes down
/// only for the replica that `restarted` (a frozen replica whose restart count went up): Kyverno's
/// counters live in its process. Flags value-mismatch.
fn replica_rows_are_the_replicas(
    g: &mut G,
    s: &str,
    rows: &[ReplicaRequests],
    replicas: Option<&[ReplicaFacts]>,
    restarted: Option<&str>,
) {
    let sub = format!("{s}.replica_requests");
    if let Some(replicas) = replicas {
        let pods: BTreeSet<&str> = rows.iter().map(|r| r.pod.as_str()).collect();
        let names = replica_names(replicas);
        let ok = pods == names && pods.len() == rows.len();
        g.check(ok, ValueMismatch, &sub, || {
            format!("expected one row per act 3 replica {names:?}, found {pods:?}")
        });
    }
    for (i, r) in rows.iter().enumerate() {
        if let (Some(b), Some(a)) = (r.before, r.after) {
            let ok = a >= b || restarted == Some(r.pod.as_str());
            g.check(ok, ValueMismatch, format!("{sub}[{i}]"), || {
                let pod = &r.pod;
                format!("{pod}'s counter went down from {b} to {a}, and it is not a frozen replica that restarted")
            });
        }
    }
}

/// Act 4: the leader and the followers, found through the Lease, CRI and `/proc`.
pub(crate) fn act4(g: &mut G) {
    let Some(f) = g.facts::<Act4Facts>(4) else {
        return;
    };
    let s = "evidence/04.json facts";
    let (node, deployment) = (&f.node_uid, &f.deployment_uid);
    super::investigation_against_its_plan::<inputs::FreezePlanC>(g, s, node, deployment);
    let ev = g.evidence(4);
    // The leader is the Lease's holder, and the holder did not change while the processes were
    // read (read before and after: the raw `lease-before`, `lease-after`).
    if let Some(ev) = &ev {
        lease_is_derived_from(g, ev, "lease-before", &format!("{s}.lease"), &f.lease);
        let after = format!("{s}.lease_after");
        lease_is_derived_from(g, ev, "lease-after", &after, &f.lease_after);
    }
    let (holder, leader) = (f.lease.holder.as_deref(), f.leader.pod_name.as_str());
    let holder_after = f.lease_after.holder.as_deref();
    let rows = [
        ("leader.pod_name", holder, Some(leader)),
        ("lease_after.holder", holder, holder_after),
    ];
    fields_are(g, ValueMismatch, s, rows);
    let (at, after) = (f.lease.at.as_str(), f.lease_after.at.as_str());
    let rows = [
        ("lease_after.at", at, after),
        ("investigated_at", after, f.investigated_at.as_str()),
    ];
    times_are_ordered(g, s, rows);
    processes_are_act3s_replicas(g, s, ev.as_deref(), &f);
}

/// Leader and followers are act 3's three replicas (by pod UID), each once, each its own live
/// process (distinct PIDs and container IDs; [`freeze::investigated_process_runs`]), each the
/// CRI container read for its pod (raw `cri-container:<pod>`: container ID, PID, pod UID, pod
/// name, and the restart count as the container's `attempt`, [`derive::cri_container`]).
fn processes_are_act3s_replicas(g: &mut G, s: &str, ev: Option<&Evidence>, f: &Act4Facts) {
    let all: Vec<&ReplicaProcess> = std::iter::once(&f.leader).chain(&f.followers).collect();
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let act3 = replica_uids(&a3);
        let found: BTreeSet<&str> = all.iter().map(|p| p.identity.pod_uid.as_str()).collect();
        let ok = found == act3 && all.len() == act3.len();
        g.check(ok, UidMismatch, format!("{s}.followers"), || {
            let n = all.len();
            format!("expected act 3's replicas {act3:?} once each, found {found:?} ({n} processes)")
        });
    }
    let pids: BTreeSet<u32> = all.iter().map(|p| p.identity.pid).collect();
    let ids = all.iter().map(|p| p.identity.container_id.as_str());
    let containers: BTreeSet<&str> = ids.collect();
    let ok = pids.len() == all.len() && containers.len() == all.len();
    g.check(ok, ValueMismatch, format!("{s}.followers"), || {
        format!("expected one process per replica, found PIDs {pids:?}, containers {containers:?}")
    });
    for (i, p) in all.iter().enumerate() {
        let sub = match i {
            0 => format!("{s}.leader"),
            _ => format!("{s}.followers[{}]", i - 1),
        };
        freeze::investigated_process_runs(g, &sub, &p.identity, &p.process_state);
        if let Some(ev) = ev {
            let what = format!("cri-container:{}", p.pod_name);
            let (derive, sources) = (derive::cri_container, derive::CRI_PROCESS_SOURCES);
            fact_is_derived_from_raw_record(g, ev, &what, &sub, *p, derive, sources);
        }
    }
}

/// Act 3's facts are the objects and answers it read (raw records): the Deployment
/// (`deployment`), the Lease (`lease`), each replica (`pods`: the pod, its `Ready` condition,
/// `status.podIP`), the endpoints (`endpoint-slices`), the scale (`scale-up`: the healer's
/// answer, [`derive::scale_up`]; `healer-ready`: its deadline), each replica's counter
/// (`replica-metrics-{before,after}:<pod>`, re-parsed), and the metrics window between the
/// counters' reads. Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`] /
/// [`Code::TimesInconsistent`].
fn act3_facts_are_the_raw_reads(g: &mut G, s: &str, ev: &Evidence, f: &Act3Facts) {
    let (fact, sources) = (format!("{s}.deployment"), derive::DEPLOYMENT_SOURCES);
    let d = derive::deployment;
    fact_is_derived_from_raw_record(g, ev, "deployment", &fact, &f.deployment, d, sources);
    lease_is_derived_from(g, ev, "lease", &format!("{s}.lease"), &f.lease);
    read_between_its_raw_record_and_next(g, ev, "lease", &format!("{s}.lease"), &f.lease.at);
    metrics_window_lies_between_the_replica_counters(g, s, ev);
    replicas_are_the_raw_pods(g, s, ev, f);
    let sub = format!("{s}.endpoints");
    if let Some(slices) = required_raw(g, ev, "endpoint-slices", &sub) {
        let derived = derive::located_endpoints(slices);
        let (at, sources) = (raw_at(ev, "endpoint-slices"), derive::ENDPOINT_SOURCES);
        list_is_derived_from_raw(g, &sub, &f.endpoints, &at, derived, sources);
    }
    let (sc, sub) = (&f.scale, format!("{s}.scale"));
    let (id, deadline) = (&sc.fault_id, &sc.restore_deadline_at);
    let up = |raw: &Value| derive::scale_up(raw, id.clone(), deadline.clone());
    fact_is_derived_from_raw_record(g, ev, "scale-up", &sub, sc, up, derive::SCALE_UP_SOURCES);
    let (ready, sources) = (derive::healer_deadline, derive::HEALER_DEADLINE_SOURCES);
    let sub = format!("{sub}.restore_deadline_at");
    fact_is_derived_from_raw_record(g, ev, "healer-ready", &sub, deadline, ready, sources);
    replica_counters_are_the_raw_lines(g, s, ev, &f.replica_requests);
}

/// Act 3's replicas are the raw `pods` list: one per pod, each [`derive::replica`] of the raw
/// pod of its name (the pod observation, its `Ready` condition, `status.podIP`), read between
/// that record and the next ([`read_between_its_raw_record_and_next`]). Flags
/// [`Code::RawMismatch`] / [`Code::TimesInconsistent`].
fn replicas_are_the_raw_pods(g: &mut G, s: &str, ev: &Evidence, f: &Act3Facts) {
    let Some(pods) = required_raw(g, ev, "pods", &format!("{s}.replicas")) else {
        return;
    };
    let (n, raw_n) = (f.replicas.len(), pods.as_array().map_or(0, Vec::len));
    g.check(raw_n == n, RawMismatch, format!("{s}.replicas"), || {
        format!("{n} replicas recorded, the raw list has {raw_n}")
    });
    for (i, r) in f.replicas.iter().enumerate() {
        let sub = format!("{s}.replicas[{i}]");
        read_between_its_raw_record_and_next(g, ev, "pods", &format!("{sub}.pod"), &r.pod.at);
        let Some((k, p)) = derive::pod_named(pods, &r.pod.name).map(|k| (k, &pods[k])) else {
            let missing = format!("pod {} is not in the raw list", r.pod.name);
            g.flag(RawMismatch, sub, missing);
            continue;
        };
        let (at, pod) = (format!("{}[{k}]", raw_at(ev, "pods")), format!("{sub}.pod"));
        // The pod's own mapping: a field only `ready` or `pod_ip` reads fails those, not the pod.
        let derived = derive::pod(p, r.pod.at.clone());
        fact_is_derived_from_raw(g, &pod, &r.pod, &at, derived, derive::POD_SOURCES);
        let derived = derive::replica(p, r.pod.at.clone());
        fact_is_derived_from_raw(g, &sub, r, &at, derived, derive::REPLICA_SOURCES);
    }
}

/// Each replica's counter is what its raw `/metrics` lines give
/// (`replica-metrics-{before,after}:<pod>`, re-parsed; `None` when the read failed). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn replica_counters_are_the_raw_lines(g: &mut G, s: &str, ev: &Evidence, rows: &[ReplicaRequests]) {
    for (i, r) in rows.iter().enumerate() {
        for (when, recorded) in [("before", r.before), ("after", r.after)] {
            let what = format!("replica-metrics-{when}:{}", r.pod);
            let sub = format!("{s}.replica_requests[{i}].{when}");
            let Some(raw) = required_raw(g, ev, &what, &sub) else {
                continue;
            };
            let lines = raw["lines"].as_array().into_iter().flatten();
            let lines = lines.filter_map(Value::as_str);
            let text = lines.collect::<Vec<_>>().join("\n");
            let parse = || crate::metrics::kyverno_pod_requests(&text);
            let parsed = (raw["status"] == 200).then(parse).flatten();
            g.check(parsed == recorded, RawMismatch, sub, || {
                format!("recorded {recorded:?}, the raw lines give {parsed:?}")
            });
        }
    }
}

/// An observation `s` made from the raw record `what` (the Lease, the pods) is timed (`at`)
/// between that record and the next raw record the act wrote: the act records the answer,
/// derives the fact, then goes on (`lab/src/labs/c.rs`). Nothing is checked when the act has no
/// such record (the rule that holds the fact to it flags it). Flags times-inconsistent on `s.at`.
fn read_between_its_raw_record_and_next(g: &mut G, ev: &Evidence, what: &str, s: &str, at: &str) {
    let time = |r: &Value| r["at"].as_str().and_then(facts::parse_rfc3339);
    let Some(i) = ev.raw.iter().position(|r| r["what"] == what) else {
        return;
    };
    let (Some(from), Some(t)) = (time(&ev.raw[i]), facts::parse_rfc3339(at)) else {
        return;
    };
    let to = ev.raw.get(i + 1).and_then(time);
    let ok = from <= t && to.is_none_or(|to| t <= to);
    g.check(ok, TimesInconsistent, format!("{s}.at"), || {
        format!("{at} is not between its raw record {what:?} ({from}) and the next one ({to:?})")
    });
}

/// The API server's metrics window (`admission_metrics.before.at`, `.after.at`) lies between the
/// replicas' counters read before the requests and those read after: the act reads Kyverno's
/// counters, opens the window, sends, closes it, reads the counters again. Flags
/// [`Code::TimesInconsistent`].
fn metrics_window_lies_between_the_replica_counters(g: &mut G, s: &str, ev: &Evidence) {
    let of = |prefix: &'static str| {
        let of_kind = move |r: &&Value| r["what"].as_str().is_some_and(|w| w.starts_with(prefix));
        let records = ev.raw.iter().filter(of_kind);
        records.filter_map(|r| r["at"].as_str())
    };
    let m = &ev.facts[crate::evidence::METRICS_KEY];
    let at = |p: &str| m.pointer(p).and_then(Value::as_str);
    let (Some(begin), Some(end)) = (at("/before/at"), at("/after/at")) else {
        return;
    };
    let sub = format!("{s}.admission_metrics");
    if let Some(last_before) = of("replica-metrics-before:").max() {
        g.times_ordered(&format!("{sub}.before.at"), last_before, begin);
    }
    if let Some(first_after) = of("replica-metrics-after:").min() {
        g.times_ordered(&format!("{sub}.after.at"), end, first_after);
    }
}

/// Acts 5 and 6, one grader ([`freeze::freeze_act`]): the registry's target frozen under Fail
/// (lab C: the leader), then under Ignore (a follower).
pub(crate) fn freeze_acts(g: &mut G) {
    freeze::freeze_act(g, |a, r, h| Freeze::of_c(a, r, h), replica_freeze_run);
}

/// The replica frozen is the target the registry names for the act ([`crate::acts::freezes`]),
/// in any order of freezes, and its process the one last seen in its pod
/// ([`latest_process_before`]; the first freeze's leader: act 4's leader, pod and process). A
/// leader is the Lease's holder right before the freeze (after a takeover, another pod than act
/// 4's). A follower is not, is one of act 3's pods, and its freeze leaves the Lease alone: every
/// sample read during it and the read after name the holder of before. Flags value-mismatch,
/// uid-mismatch, identity-changed.
fn frozen_replica_is_the_target(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun, t: Target) {
    let (s, pod, before) = (&v.s, &*run.target_pod, run.lease_before.holder.as_deref());
    let follower = t == Target::Follower;
    let role = if follower { "follower" } else { "leader" };
    let sub = format!("{s}.target_role");
    g.expect_eq(ValueMismatch, sub, role, &*run.target_role);
    if follower {
        let free = before != Some(pod);
        g.check(free, ValueMismatch, format!("{s}.target_pod"), || {
            format!("the frozen pod {pod} held the Lease when the freeze began")
        });
        if let Some(a3) = g.facts::<Act3Facts>(3) {
            let (uids, uid) = (replica_uids(&a3), &run.freeze.identity.pod_uid);
            let sub = format!("{s}.freeze.identity.pod_uid");
            g.check(uids.contains(uid.as_str()), UidMismatch, sub, || {
                format!("the frozen pod's UID {uid} is none of act 3's replicas {uids:?}")
            });
        }
        let read = (run.lease_samples.iter().enumerate()).filter(|(_, x)| x.error.is_none());
        let read = read.map(|(i, x)| (format!("lease_samples[{i}].holder"), &x.holder));
        let reads = read.chain([("lease_after.holder".into(), &run.lease_after.holder)]);
        let rows = reads.map(|(f, h)| (f, before, h.as_deref()));
        fields_are(g, ValueMismatch, s, rows);
    } else {
        let rows = [("lease_before.holder", Some(pod), before)];
        fields_are(g, ValueMismatch, s, rows);
        if acts::freezes(g.lab).iter().all(|(a, _)| *a >= v.act) {
            let a4 = g.facts::<Act4Facts>(4).map(|a4| a4.leader);
            if let Some(leader) = &a4 {
                let sub = format!("{s}.target_pod");
                g.expect_eq(ValueMismatch, sub, leader.pod_name.as_str(), pod);
            }
            return freeze::frozen_process_is_the_expected_one(g, v, a4.map(|p| p.identity));
        }
    }
    let latest = latest_process_before(g, v.act, pod);
    freeze::frozen_process_is_the_expected_one(g, v, latest);
}

/// The process last seen in `pod` before freeze act `act`: after the resume of the latest
/// earlier freeze of that pod (it may have restarted: its `target_after.identity_after`), else the
/// one act 4 found in it (a replica neither froze nor lost the Lease keeps its container between
/// the acts). `None` when neither is readable.
fn latest_process_before(g: &mut G, act: u8, pod: &str) -> Option<facts::b::ProcessIdentity> {
    let freezes = acts::freezes(g.lab).into_iter().rev();
    let mut earlier = freezes.filter(|(a, _)| *a < act);
    // Act 6's facts are its run too (`PolicySwitch` flattens it).
    let after = earlier.find_map(|(a, _)| {
        let run = g.facts::<ReplicaFreezeRun>(a)?;
        (run.target_pod == pod).then_some(run.target_after.identity_after)
    });
    let from4 = g.facts::<Act4Facts>(4).and_then(|a4| {
        let mut all = a4.followers.into_iter().chain([a4.leader]);
        all.find(|p| p.pod_name == pod).map(|p| p.identity)
    });
    after.flatten().or(from4)
}

/// Lab C's rules of both freezes (those of every freeze run in [`freeze::freeze_act`]): the
/// registry's target ([`frozen_replica_is_the_target`]), then the waves, their outcomes, the
/// samples, the replicas' counters, the existing pod, and the reads the freeze recorded raw: the
/// Lease before and after (`lease-before`, `lease-after`), every Lease and EndpointSlice sample
/// ([`samples_are_the_raw_samples`]), the frozen pod after the settle
/// ([`target_after_is_the_frozen_pod`]), each replica's counter, and the settle's length and last
/// state (`settle-wait`, [`settle_is_its_checks`]).
fn replica_freeze_run(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun) {
    let s = &v.s;
    let target = acts::freezes(g.lab).into_iter().find(|f| f.0 == v.act);
    let target = target.map_or(Target::Leader, |(_, t)| t);
    frozen_replica_is_the_target(g, v, run, target);
    freeze_waves_met_the_frozen_replica(g, v, run);
    samples_cover_the_freeze(g, s, run);
    a_call_that_met_the_frozen_replica_had_it_as_an_endpoint(g, s, run);
    if let Some(ev) = g.evidence(v.act) {
        target_after_is_the_frozen_pod(g, s, &ev, run);
    }
    let replicas = g.facts::<Act3Facts>(3).map(|a3| a3.replicas);
    let restarted = crate::rules::c::restarted(run).then_some(run.target_pod.as_str());
    replica_rows_are_the_replicas(g, s, &run.replica_requests, replicas.as_deref(), restarted);
    let (lease_at, frozen_at) = (&run.lease_before.at, &run.freeze.frozen_at);
    g.times_ordered(&format!("{s}.lease_before.at"), lease_at, frozen_at);
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let sub = format!("{s}.existing");
        super::existing_pod_survives_since(g, &sub, &a3.existing, &run.existing);
    }
    let Some(ev) = g.evidence(v.act) else {
        return;
    };
    let (before, after) = (&run.lease_before, &run.lease_after);
    lease_is_derived_from(g, &ev, "lease-before", &format!("{s}.lease_before"), before);
    let sub = format!("{s}.lease_after");
    lease_is_derived_from(g, &ev, "lease-after", &sub, after);
    read_between_its_raw_record_and_next(g, &ev, "lease-after", &sub, &after.at);
    samples_are_the_raw_samples(g, s, &ev, run);
    replica_counters_are_the_raw_lines(g, s, &ev, &run.replica_requests);
    let sub = format!("{s}.target_after.waited_ms");
    if let Some(checks) = required_raw(g, &ev, "settle-wait", &sub) {
        settle_is_its_checks(g, s, run, checks);
    }
}

/// A call that ran into the timeout during the freeze (a violating pod timed out, or was stored
/// after the timeout under Ignore) met the frozen replica: the Service sends a call only to a
/// ready endpoint, so the endpoint samples around the call's send (`endpoint_samples`, read each
/// second: the last read at least [`super::bounds::ENDPOINT_SYNC_MS`] before it, kube-proxy's lag,
/// and every read from then until the first read after it) show the frozen pod ready in one of
/// them. Nothing is held when no sample could be read. Flags [`Code::ValueMismatch`] on
/// `endpoint_samples`, naming the request.
fn a_call_that_met_the_frozen_replica_had_it_as_an_endpoint(
    g: &mut G,
    s: &str,
    run: &ReplicaFreezeRun,
) {
    let t = |x: &str| facts::parse_rfc3339(x);
    let read = run.endpoint_samples.iter().filter(|x| x.error.is_none());
    let read: Vec<_> = read.filter_map(|x| Some((t(&x.at)?, x))).collect();
    if read.is_empty() {
        return;
    }
    let pod = Some(run.target_pod.as_str());
    let ready = |x: &&EndpointSample| {
        let mut endpoints = x.endpoints.iter();
        endpoints.any(|e| e.ready && e.pod.as_deref() == pod)
    };
    let lag = chrono::Duration::milliseconds(super::bounds::ENDPOINT_SYNC_MS);
    let seen_ready_around = |sent: chrono::DateTime<chrono::Utc>| {
        let before = read.iter().rposition(|(at, _)| *at + lag <= sent);
        let after = read.iter().position(|(at, _)| *at >= sent);
        let (before, after) = (before.unwrap_or(0), after.unwrap_or(read.len() - 1));
        let around = &read[before..=after.max(before)];
        around.iter().any(|(_, x)| ready(x))
    };
    let long = |r: &RequestRecord| {
        r.outcome == Outcome::WebhookTimeout
            || (r.outcome == Outcome::Stored && r.elapsed_ms >= 1000)
    };
    let met = (run.bad.iter().enumerate())
        .filter(|(_, r)| long(r))
        .find(|(_, r)| t(&r.sent_at).is_some_and(|sent| !seen_ready_around(sent)));
    g.check(met.is_none(), ValueMismatch, format!("{s}.endpoint_samples"), || {
        let (i, r) = met.expect("found");
        let (name, outcome, ms, sent) = (&r.name, r.outcome.as_str(), r.elapsed_ms, &r.sent_at);
        format!("no sample around {sent} shows the frozen pod {} a ready endpoint, yet {s}.bad[{i}] ({name}), sent then, was {outcome} after {ms} ms: a call that runs into the timeout met the frozen replica, and calls go only to ready endpoints", run.target_pod)
    });
}

/// `waves × wave_size` violating pods (at least the spec's 18) and one control pod per wave,
/// every one sent after the freeze began and answered before the resume: what they met was the
/// freeze. Each violating pod, a target pod, met the frozen replica (under Fail a
/// `webhook-timeout`, not stored; under Ignore `stored` after the timeout; either after
/// `timeoutSeconds`, not sooner nor much later: [`freeze::target_pod`]) or a
/// running one (`explicit-deny` from the policy's webhook); the control pods were stored (outside
/// the selector). Flags value-mismatch, times-inconsistent, outcome-unexpected, timeout-too-fast,
/// timeout-too-slow, deny-other-webhook.
fn freeze_waves_met_the_frozen_replica(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun) {
    let (s, least) = (&v.s, crate::rules::c::MIN_FREEZE_REQUESTS);
    let w = (run.waves, run.wave_size, u64::from(least));
    waves_were_parallel(g, s, &run.bad, w);
    let rows = [("control", run.waves as usize, run.control.len())];
    fields_are(g, ValueMismatch, s, rows);
    let (frozen, resumed) = (&run.freeze.frozen_at, &run.freeze.resumed_at);
    let (bad, control) = (run.bad.iter().enumerate(), run.control.iter().enumerate());
    let bad = bad.map(|(i, r)| (format!("{s}.bad[{i}]"), r, true));
    let control = control.map(|(i, r)| (format!("{s}.control[{i}]"), r, false));
    for (sub, r, violating) in bad.chain(control) {
        let rows = [
            ("sent_at", frozen, &r.sent_at),
            ("answered_at", &r.answered_at, resumed),
        ];
        times_are_ordered(g, &sub, rows.map(|(f, a, b)| (f, a.as_str(), b.as_str())));
        if violating {
            let expect = [v.met, Outcome::ExplicitDeny];
            let timed = Some((v.timeout_seconds, v.ignore && r.outcome == Outcome::Stored));
            freeze::target_pod(g, &sub, r, false, &expect, v.hook, timed);
        } else {
            g.request(&sub, r, &[Outcome::Stored]);
        }
    }
}

/// The Lease and the EndpointSlice were read about each second ([`crate::rules::c::SAMPLE_PERIOD`])
/// from the freeze to the resume: the first read within two periods of the freeze, the last
/// within two of the resume, no gap longer than three; every read inside the act's freeze.
fn samples_cover_the_freeze(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    let (frozen_at, resumed_at) = (&run.freeze.frozen_at, &run.freeze.resumed_at);
    let t = facts::parse_rfc3339;
    let (Some(frozen), Some(resumed)) = (t(frozen_at), t(resumed_at)) else {
        return;
    };
    let period = crate::rules::c::SAMPLE_PERIOD.as_millis() as i64;
    let leases: Vec<&str> = run.lease_samples.iter().map(|x| x.at.as_str()).collect();
    let endpoints: Vec<&str> = run.endpoint_samples.iter().map(|x| x.at.as_str()).collect();
    for (what, times) in [("lease_samples", leases), ("endpoint_samples", endpoints)] {
        let parsed: Vec<_> = times.iter().filter_map(|x| t(x)).collect();
        let edges = [&[frozen][..], &parsed, &[resumed]].concat();
        let gaps = edges.windows(2).map(|w| (w[1] - w[0]).num_milliseconds());
        let longest = gaps.max().unwrap_or(i64::MAX);
        let late = resumed + chrono::Duration::milliseconds(2 * period);
        let inside = parsed.len() == times.len()
            && parsed.first().is_some_and(|t| *t >= frozen)
            && parsed.last().is_some_and(|t| *t <= late);
        let ok = !parsed.is_empty() && inside && longest <= 3 * period;
        g.check(ok, ObservationMissing, format!("{s}.{what}"), || {
            let n = times.len();
            format!("{n} reads between the freeze ({frozen_at}) and the resume ({resumed_at}), the longest gap {longest} ms; expected one about each {period} ms")
        });
    }
}

/// Every Lease and EndpointSlice sample of a freeze is its raw answer (`freeze-samples`, in
/// order; a failed read has no raw answer): [`derive::lease_sample`] and
/// [`derive::endpoint_sample`] of it ([`rows_are_derived_from_raw`], one check per kind).
/// Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn samples_are_the_raw_samples(g: &mut G, s: &str, ev: &Evidence, run: &ReplicaFreezeRun) {
    let Some(samples) = required_raw(g, ev, "freeze-samples", &format!("{s}.lease_samples")) else {
        return;
    };
    let at = raw_at(ev, "freeze-samples");
    // Each answer of kind `what`, by its place in the list, and what it derives.
    fn derived<T>(samples: &Value, what: &str, derive: fn(&Value) -> T) -> Vec<(String, T)> {
        let answers = samples.as_array().into_iter().flatten().enumerate();
        let of_kind = answers.filter(|(_, x)| x["what"] == what);
        let derive = |(k, x): (usize, &Value)| (format!("[{k}]"), derive(x));
        of_kind.map(derive).collect()
    }
    let read = |field: &str, i: usize| format!("{s}.{field}[{i}]");
    let leases = (run.lease_samples.iter().enumerate()).filter(|(_, x)| x.error.is_none());
    let leases = leases.map(|(i, x)| (read("lease_samples", i), x)).collect();
    let (fact, sources) = (format!("{s}.lease_samples"), derive::LEASE_SAMPLE_SOURCES);
    let raw = derived(samples, "lease", derive::lease_sample);
    rows_are_derived_from_raw(g, &fact, leases, &at, raw, sources);
    let endpoints = (run.endpoint_samples.iter().enumerate()).filter(|(_, x)| x.error.is_none());
    let endpoint = |(i, x)| (read("endpoint_samples", i), x);
    let endpoints = endpoints.map(endpoint).collect();
    let sources = derive::ENDPOINT_SAMPLE_SOURCES;
    let fact = format!("{s}.endpoint_samples");
    let raw = derived(samples, "endpoint-slices", derive::endpoint_sample);
    rows_are_derived_from_raw(g, &fact, endpoints, &at, raw, sources);
}

/// `target_after` is the frozen pod (its name and UID before; its UID after its container's
/// pod; whether it holds the Lease the read after's word), read after the first explicit deny
/// (its restart count and container: `freeze::freeze_rules`), as the act read it raw: the pod
/// `pods-after` ([`derive::pod_after`]: UID, restart count, `Ready`), its container
/// `cri-container-after` ([`derive::container_after`]: ID, PID, pod, `attempt` = the restart
/// count; a CRI answer is not dropped from the facts), and its restart count before the freeze
/// the container's `attempt` in `cri-container-before` (as act 4 holds,
/// [`derive::cri_container`]), each [`fact_is_derived_from_raw`]. Flags value-mismatch,
/// uid-mismatch, times-inconsistent, raw-mismatch, observation-missing.
fn target_after_is_the_frozen_pod(g: &mut G, s: &str, ev: &Evidence, run: &ReplicaFreezeRun) {
    let (t, sub) = (&run.target_after, format!("{s}.target_after"));
    fields_are(g, ValueMismatch, &sub, [("pod", &run.target_pod, &t.pod)]);
    let uids = (&run.freeze.identity.pod_uid, &t.pod_uid_before);
    fields_are(g, UidMismatch, &sub, [("pod_uid_before", uids.0, uids.1)]);
    if let Some(d) = &run.first_explicit_deny {
        g.times_ordered(&format!("{sub}.settled_at"), &d.answered_at, &t.settled_at);
    }
    if let Some(after) = &t.identity_after {
        let ok = t.pod_uid_after.as_deref() == Some(after.pod_uid.as_str());
        g.check(ok, UidMismatch, format!("{sub}.pod_uid_after"), || {
            let (uid, container_pod) = (&t.pod_uid_after, &after.pod_uid);
            format!("the pod's UID after is {uid:?}, its container's pod {container_pod}")
        });
    }
    let holds = run.lease_after.holder.as_deref() == Some(t.pod.as_str());
    let rows = [("holds_lease_after", holds, t.holds_lease_after)];
    fields_are(g, ValueMismatch, &sub, rows);
    if let Some(pods) = required_raw(g, ev, "pods-after", &sub) {
        let at = match derive::pod_named(pods, &t.pod) {
            Some(k) => format!("{}[{k}]", raw_at(ev, "pods-after")),
            None => format!("{} (no pod {})", raw_at(ev, "pods-after"), t.pod),
        };
        let derived = derive::pod_after(pods, &t.pod, t.restart_count_before);
        fact_is_derived_from_raw(g, &sub, t, &at, derived, derive::POD_AFTER_SOURCES);
    }
    let count_is_the_attempt = |g: &mut G, when: &str, n: &u32| {
        let what = format!("cri-container-{when}");
        if let Some(raw) = raw_record(ev, &what) {
            let (fact, at) = (format!("{sub}.restart_count_{when}"), raw_at(ev, &what));
            let attempt = derive::cri_container(raw).map(|c| c.restart_count);
            fact_is_derived_from_raw(g, &fact, n, &at, attempt, derive::RESTART_COUNT_SOURCES);
        }
    };
    count_is_the_attempt(g, "before", &t.restart_count_before);
    let (what, identity) = ("cri-container-after", format!("{sub}.identity_after"));
    if raw_record(ev, what).is_some() {
        g.check(t.identity_after.is_some(), RawMismatch, &identity, || {
            "CRI answered after the resume (raw cri-container-after), the facts say it did not"
                .into()
        });
        // With `identity_after` the count after is the container after's `attempt`, held below.
        if t.identity_after.is_none() {
            count_is_the_attempt(g, "after", &t.restart_count_after);
        }
    }
    if t.identity_after.is_some()
        && let Some(c) = required_raw(g, ev, what, &identity)
    {
        let (derived, sources) = (derive::container_after(c), derive::CONTAINER_AFTER_SOURCES);
        fact_is_derived_from_raw(g, &sub, t, &raw_at(ev, what), derived, sources);
    }
}

/// The settle's length and end are its checks' (raw `settle-wait`, every check whose state
/// changed): it began after the last request after the resume was answered and before its first
/// check, ended (`settled_at`) after its last, and that last state is the frozen replica's
/// recorded restart count and readiness. Flags [`Code::TimesInconsistent`] /
/// [`Code::RawMismatch`].
fn settle_is_its_checks(g: &mut G, s: &str, run: &ReplicaFreezeRun, checks: &Value) {
    let (t, sub) = (&run.target_after, format!("{s}.target_after"));
    let list = checks.as_array().cloned().unwrap_or_default();
    let time = |v: Option<&Value>| v?["at"].as_str().and_then(facts::parse_rfc3339);
    let (first, last) = (time(list.first()), time(list.last()));
    let settled = facts::parse_rfc3339(&t.settled_at);
    // A waited_ms no clock can subtract (beyond chrono's range) gives no start: flagged below.
    let began = settled.and_then(|x| {
        chrono::Duration::try_milliseconds(i64::try_from(t.waited_ms).ok()?)
            .and_then(|d| x.checked_sub_signed(d))
    });
    let waited = format!("{sub}.waited_ms");
    let ok = settled.is_none() || began.is_some();
    g.check(ok, TimesInconsistent, &waited, || {
        format!("{} ms before {} is no time", t.waited_ms, t.settled_at)
    });
    let answered = (run.after_resume.last()).and_then(|r| facts::parse_rfc3339(&r.answered_at));
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    if let (Some(began), Some(first), Some(last), Some(settled), Some(answered)) =
        (began, first, last, settled, answered)
    {
        let ok = began >= answered - skew && began <= first + skew && last <= settled + skew;
        g.check(ok, TimesInconsistent, waited, || {
            let f = facts::format_rfc3339;
            format!(
                "the settle began {} ({} ms before settled_at {}): not between the last answer after the resume ({}) and its first check ({}), or its last check ({}) came after",
                f(began), t.waited_ms, t.settled_at, f(answered), f(first), f(last)
            )
        });
    } else {
        g.check(!list.is_empty(), ObservationMissing, waited, || {
            "the settle recorded no check".into()
        });
    }
    if let Some(l) = list.last() {
        let ok = l["target_restart_count"].as_u64() == Some(u64::from(t.restart_count_after))
            && l["target_ready"].as_bool() == Some(t.ready_after);
        g.check(ok, RawMismatch, sub, || {
            let (r, rd) = (t.restart_count_after, t.ready_after);
            format!("recorded restarts {r} ready {rd}, the settle's last check says {l}")
        });
    }
}

/// Act 7: back to the original count, a new leader if needed, an explicit deny, the existing pod.
pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let s = format!("{} facts", ev_name(7));
    let (policy_uid, bad) = (&f.policy_uid, &f.healthy_bad);
    let recovered = freeze::recovered_under_ignore::<inputs::RecoveryC, ReplicaFreezeRun>;
    let ev = recovered(g, policy_uid, &f.webhook, bad);
    scaled_back_to_the_original_count(g, &s, &f);
    let last = f.deny_probes.last() == Some(&f.healthy_bad);
    g.check(last, ObservationMissing, format!("{s}.deny_probes"), || {
        "the explicit deny is not the last request sent".into()
    });
    lease_holder_is_a_replica(g, &s, &f.lease, &f.replicas);
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        super::existing_pod_survives_since(g, &format!("{s}.existing"), &a3.existing, &f.existing);
    }
    replicas_left_are_act3s_pods(g, &s, &f);
    deny_probes_are_violating_pods_one_after_another(g, &s, &f);
    if let Some(ev) = ev {
        act7_facts_are_the_raw_reads(g, &s, &ev, &f);
        wait_spans_the_act_until_the_existing_pod(g, &s, &ev, &f);
    }
}

/// The replicas left after the scale back are act 3's pods (a scale-down deletes pods, it
/// creates none): each by name, UID and address (act 3's `podIP`), existing and `Running`; the
/// Deployment is act 1's with that many ready.
fn replicas_left_are_act3s_pods(g: &mut G, s: &str, f: &Act7Facts) {
    let d = &f.deployment;
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        let a1 = &a1.controller_deployment;
        let act1 = (a1.namespace.as_deref(), a1.name.as_str(), a1.uid.as_str());
        let found = (Some(d.namespace.as_str()), d.name.as_str(), d.uid.as_str());
        fields_are(g, UidMismatch, s, [("deployment", act1, found)]);
    }
    let ready = f.replicas.iter().filter(|r| r.ready).count() as u32;
    let rows = [("deployment.ready_replicas", ready, d.ready_replicas)];
    fields_are(g, ValueMismatch, s, rows);
    let a3 = g.facts::<Act3Facts>(3);
    for (i, r) in f.replicas.iter().enumerate() {
        let (sub, p) = (format!("{s}.replicas[{i}]"), &r.pod);
        let running = p.exists && p.phase.as_deref() == Some("Running");
        g.check(running, ValueMismatch, format!("{sub}.pod"), || {
            let (exists, phase) = (p.exists, &p.phase);
            format!("expected a Running pod, found exists={exists} phase={phase:?}")
        });
        let addressed = !r.ready || r.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty());
        g.check(addressed, ValueMismatch, format!("{sub}.pod_ip"), || {
            "a Ready pod without status.podIP".into()
        });
        let Some(a3) = &a3 else {
            continue;
        };
        let same = (a3.replicas.iter())
            .find(|x| x.pod.name == p.name && x.pod.uid == p.uid && x.pod.namespace == p.namespace);
        g.check(same.is_some(), UidMismatch, format!("{sub}.pod"), || {
            format!("{} ({:?}) is none of act 3's replicas", p.name, p.uid)
        });
        // A pod keeps its address as long as its sandbox: kubelet makes a new sandbox only for
        // one that died, which no act causes (a freeze stops the container's process only).
        if let Some(x) = same {
            let (was, is) = (x.pod_ip.as_deref(), r.pod_ip.as_deref());
            g.expect_eq(ValueMismatch, format!("{sub}.pod_ip"), was, is);
        }
    }
}

/// Act 7's probes are violating pods of the target namespace (real creates), sent after the
/// scale back, each after the previous one's answer (`until_explicit_deny` sends one at a time).
fn deny_probes_are_violating_pods_one_after_another(g: &mut G, s: &str, f: &Act7Facts) {
    let mut after = &f.scale_back.at;
    for (i, r) in f.deny_probes.iter().enumerate() {
        let sub = format!("{s}.deny_probes[{i}]");
        super::request_is_the_pod_meant(g, &sub, r, super::Meant::target(false));
        g.times_ordered(&format!("{sub}.sent_at"), after, &r.sent_at);
        after = &r.answered_at;
    }
}

/// `waited_ms` is the act's own span from its start to the existing pod's read (the act times its
/// body from the start and reads the existing pod last). Flags [`Code::TimesInconsistent`].
fn wait_spans_the_act_until_the_existing_pod(g: &mut G, s: &str, ev: &Evidence, f: &Act7Facts) {
    let ms = |t: &str| facts::ms_between(Some(&ev.started_at), Some(t));
    let (Some(to_read), Some(to_end)) = (ms(&f.existing.at), ms(&ev.finished_at)) else {
        return;
    };
    let (skew, waited) = (super::bounds::CLOCK_SKEW_MS as i64, f.waited_ms as i64);
    let ok = to_read - skew <= waited && waited <= to_end + skew;
    g.check(ok, TimesInconsistent, format!("{s}.waited_ms"), || {
        format!("{waited} ms: the act's start to the existing pod's read is {to_read} ms, to its end {to_end} ms")
    });
}

/// Act 7's facts are the reads it recorded raw: the Deployment before the scale back
/// (`deployment-before`: `replicas_before` its `spec.replicas`, [`derive::deployment`]; and the
/// Deployment recorded after the wait by its UID, a rule across two reads, not a derivation: the
/// read after the wait keeps no raw record of its own), the heal's record of act 3's attempt
/// (`scale-attempt-heal`: the attempt, its action and time), the Lease (`lease`) and the policy
/// (`policy`: its UID; the registration: `freeze::recovered_under_ignore`). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn act7_facts_are_the_raw_reads(g: &mut G, s: &str, ev: &Evidence, f: &Act7Facts) {
    let (b, sub) = (&f.scale_back, format!("{s}.scale_back"));
    let replicas = |raw: &Value| derive::deployment(raw).map(|d| d.replicas);
    let (n, sources) = (&b.replicas_before, derive::REPLICAS_SOURCES);
    let before = format!("{sub}.replicas_before");
    fact_is_derived_from_raw_record(g, ev, "deployment-before", &before, n, replicas, sources);
    let (raw, uid) = (raw_record(ev, "deployment-before"), &f.deployment.uid);
    let raw = raw.map(|d| &d["metadata"]["uid"]);
    if let Some(raw) = raw.filter(|raw| *raw != uid.as_str()) {
        let at = raw_at(ev, "deployment-before");
        let why = format!("recorded {uid:?}; {at}.metadata.uid is {raw}");
        g.flag(RawMismatch, format!("{s}.deployment.uid"), why);
    }
    let heal = |raw: &Value| derive::scale_back(raw, b.replicas_before, b.replicas);
    let sources = derive::SCALE_BACK_SOURCES;
    fact_is_derived_from_raw_record(g, ev, "scale-attempt-heal", &sub, b, heal, sources);
    lease_is_derived_from(g, ev, "lease", &format!("{s}.lease"), &f.lease);
    read_between_its_raw_record_and_next(g, ev, "lease", &format!("{s}.lease"), &f.lease.at);
    let (sub, sources) = (format!("{s}.policy_uid"), derive::POLICY_UID_SOURCES);
    let uid = &f.policy_uid;
    fact_is_derived_from_raw_record(g, ev, "policy", &sub, uid, derive::policy_uid, sources);
}

/// The scale back wrote the original count over act 3's three, and the wait ended with the
/// Deployment and its live replicas at that count, each `Ready`.
fn scaled_back_to_the_original_count(g: &mut G, s: &str, f: &Act7Facts) {
    let (original, b) = (inputs::OriginalReplicas::VALUE, &f.scale_back);
    let rows = [("scale_back.replicas", original, b.replicas)];
    fields_are(g, ValueMismatch, s, rows);
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let (id, back) = (a3.scale.fault_id.as_str(), b.fault_id.as_str());
        g.expect_eq(ValueMismatch, format!("{s}.scale_back.fault_id"), id, back);
    }
    let rows = [("deployment.replicas", original, f.deployment.replicas)];
    fields_are(g, ValueMismatch, s, rows);
    let ok = f.replicas.len() as u32 == original && f.replicas.iter().all(|r| r.ready);
    g.check(ok, ValueMismatch, format!("{s}.replicas"), || {
        let found: Vec<_> = f.replicas.iter().map(|r| (&r.pod.name, r.ready)).collect();
        format!("expected {original} Ready replica(s), found {found:?}")
    });
    let sent = &f.healthy_bad.sent_at;
    g.times_ordered(&format!("{s}.healthy_bad.sent_at"), &b.at, sent);
}

/// Act 8: the report, each word held against the one rule act 8 uses
/// ([`crate::rules::c::report_expectations`]).
pub(crate) fn act8(g: &mut G) {
    super::report_claims_are_the_evidence_words::<inputs::ReportC, _>(g, |g| {
        let (a3, a5, a6, a7) = (g.facts(3), g.facts(5), g.facts(6), g.facts(7));
        Some(crate::rules::c::report_expectations(&a3?, &a5?, &a6?, &a7?))
    });
}

#[cfg(test)]
mod tests {
    //! The target rules hold whatever order the registry freezes the replicas in: a follower
    //! frozen first (in act 5) is held to act 4's process, a leader frozen after a takeover to
    //! the Lease's holder and its latest process. (A reviewer proved both wrong on 2026-12-04:
    //! the follower rule read act 5's own `identity_after`, the leader rule act 4's leader.)
    use super::*;
    use crate::evidence::Lab;
    use crate::grade::{EvidenceDoc, Finding, GradeInput};

    /// A wave of requests sent and answered at these milliseconds of 2026-12-01T23:29:31.
    fn wave(spans: &[(u32, u32)]) -> Vec<RequestRecord> {
        let at = |ms: &u32| format!("2026-12-01T23:29:31.{ms:03}Z");
        (spans.iter().enumerate())
            .map(|(i, (sent, answered))| {
                serde_json::from_value(serde_json::json!({
                    "name": format!("kca-c3-bad-w0-{i}"), "namespace": "kca-webhook-target",
                    "labels": {}, "dry_run": false, "sent_at": at(sent), "answered_at": at(answered),
                    "elapsed_ms": 10, "http_status": 400, "reason": null, "message": null,
                    "outcome": "explicit-deny", "raw_response": {},
                    "get": {"exists": false, "uid": null, "phase": null, "at": at(answered)}
                }))
                .expect("a request record")
            })
            .collect()
    }

    /// Wave 0 of act 3 in the run of 2026-12-01 23:28 UTC (load average 9): the first request
    /// was answered before the others were sent, yet five were in flight together; a sequential
    /// wave has one in flight; an unparsable time gives no count.
    #[test]
    fn most_in_flight_counts_overlapping_spans() {
        let early = [
            (732, 749),
            (752, 763),
            (754, 774),
            (754, 812),
            (762, 775),
            (762, 815),
        ];
        assert_eq!(most_in_flight(&wave(&early)), Some(5));
        let w = wave(&[(700, 710), (711, 720), (721, 730)]);
        assert_eq!(most_in_flight(&w), Some(1));
        let mut w = wave(&[(0, 710)]);
        w[0].sent_at = "yesterday".into();
        assert_eq!(most_in_flight(&w), None);
    }

    /// Acts 4-6 of `lab/tests/fixtures/c/pass` and the inputs they recorded, with `edit` applied to the facts
    /// of act `act` (act 4's facts given to read). Graders read no files: the test embeds them.
    fn c_pass(act: u8, edit: impl FnOnce(&mut Value, &Value)) -> GradeInput {
        macro_rules! pass {
            ($file:literal) => {
                include_str!(concat!("../../../lab/tests/fixtures/c/pass/", $file))
            };
        }
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap();
        let (a4, a5) = (pass!("evidence/04.json"), pass!("evidence/05.json"));
        let mut acts = [a4, a5, pass!("evidence/06.json")].map(parse);
        let a4 = acts[0]["facts"].clone();
        edit(&mut acts[usize::from(act - 4)]["facts"], &a4);
        let mut gi = GradeInput::default();
        for (n, v) in (4..).zip(acts) {
            gi.evidence.insert(n, Ok(EvidenceDoc::new(v)));
        }
        for (file, text) in [
            (inputs::InputFile::PolicyIgnore, pass!("policy-ignore.json")),
            (inputs::InputFile::FreezePlanC, pass!("freeze-plan.json")),
        ] {
            gi.inputs.insert(file, Ok(parse(text)));
        }
        gi
    }

    /// The findings of the target rule ([`frozen_replica_is_the_target`]) on the replica act
    /// `act` of `input` froze, taken as `t`, whose subject ends with `only` (`""`: all).
    fn target_rule(input: &GradeInput, act: u8, t: Target, only: &str) -> Vec<Finding> {
        let mut g = G::new(Lab::C, act, input);
        let run = g.facts::<ReplicaFreezeRun>(act).unwrap();
        let v = Freeze::of_c(act, &run, None);
        frozen_replica_is_the_target(&mut g, &v, &run, t);
        let found = g.finish().findings.into_iter();
        found.filter(|f| f.subject.ends_with(only)).collect()
    }

    /// Each row: c/pass edited, the act and role the rule holds its frozen replica as, the
    /// findings looked at, and the one code flagged (or none).
    #[test]
    fn the_target_rules_hold_in_any_order_of_freezes() {
        // Act 6 freezes the Lease's holder after act 5's takeover, as the leader: the process act
        // 4 found in that pod (`act4s`), or the former leader's.
        let second = |act4s: bool| {
            c_pass(6, move |f, a4| {
                let holder = f["lease_before"]["holder"].clone();
                let p = a4["followers"].as_array().unwrap().iter();
                let p = p.clone().find(|p| p["pod_name"] == holder).unwrap().clone();
                f["target_role"] = "leader".into();
                f["target_pod"] = holder;
                let former = &a4["leader"];
                f["freeze"]["identity"] = if act4s { &p } else { former }["identity"].clone();
            })
        };
        // Act 5 as a follower frozen first: another process frozen, the one seen after the resume.
        let other = c_pass(5, |f, _| {
            f["freeze"]["identity"] = f["target_after"]["identity_after"].clone();
        });
        let (follower, leader, identity) = (Target::Follower, Target::Leader, "freeze.identity");
        for (input, act, t, only, flagged) in [
            // c/pass act 5: act 4's process frozen, restarted after the resume.
            (c_pass(5, |_, _| {}), 5, follower, identity, None),
            (other, 5, follower, identity, Some(IdentityChanged)),
            (second(true), 6, leader, "", None),
            (second(false), 6, leader, "", Some(IdentityChanged)),
        ] {
            let found = target_rule(&input, act, t, only);
            let codes: Vec<_> = found.iter().map(|f| f.code).collect();
            assert_eq!(codes, Vec::from_iter(flagged), "{found:#?}");
        }
    }

    /// The count after the resume is the raw `cri-container-after`'s `attempt` also when the facts
    /// lack `identity_after` (held with that identity otherwise): a reviewer found it unheld in
    /// that case after the merge that compares it once (2026-12-05). The CRI answer is moved, so
    /// that only it, not the pod read after, contradicts the count.
    #[test]
    fn the_count_after_is_the_raw_attempt_without_identity_after() {
        for (bump, flagged) in [(0, vec![RawMismatch]), (1, vec![RawMismatch, RawMismatch])] {
            let mut input = c_pass(5, |f, _| f["target_after"]["identity_after"] = Value::Null);
            let mut v = input.evidence[&5].as_ref().unwrap().value().clone();
            let mut raw = v["raw"].as_array_mut().unwrap().iter_mut();
            let cri = raw.find(|r| r["what"] == "cri-container-after").unwrap();
            let attempt = cri["data"]["attempt"].as_u64().unwrap();
            cri["data"]["attempt"] = (attempt + bump).into();
            input.evidence.insert(5, Ok(EvidenceDoc::new(v)));
            let mut g = G::new(Lab::C, 5, &input);
            let (run, ev) = (
                g.facts::<ReplicaFreezeRun>(5).unwrap(),
                g.evidence(5).unwrap(),
            );
            target_after_is_the_frozen_pod(&mut g, "evidence/05.json facts", &ev, &run);
            let found = g.finish().findings;
            let after = ["identity_after", "restart_count_after"];
            let on = found
                .iter()
                .filter(|f| after.iter().any(|a| f.subject.ends_with(a)));
            let codes: Vec<_> = on.map(|f| f.code).collect();
            assert_eq!(codes, flagged, "{found:#?}");
        }
    }

    /// Act 4's process rule ([`freeze::investigated_process_runs`], lab B's, held for each of lab
    /// C's replicas since 2026-12-05): each field that cannot be a live process is flagged at its
    /// own path, and c/pass itself is not.
    #[test]
    fn each_replicas_process_is_live() {
        let leader = "evidence/04.json facts.leader.identity";
        for (field, value, code) in [
            ("", Value::Null, None),
            ("pid", 1.into(), Some(ValueMismatch)),
            ("pid_start_time_ticks", 0.into(), Some(ValueMismatch)),
            ("container_id", "".into(), Some(ValueMismatch)),
            ("pod_uid", "pod".into(), Some(UidMismatch)),
        ] {
            let input = c_pass(4, |f, _| {
                if !field.is_empty() {
                    f["leader"]["identity"][field] = value.clone();
                }
            });
            let found = crate::grade::grade(Lab::C, 4, &input).findings;
            let subject = format!("{leader}.{field}");
            // The rule's codes only (the raw CRI answer contradicts an edited field too).
            let on = found.iter().filter(|f| f.subject == subject);
            let ours = on.filter(|f| matches!(f.code, ValueMismatch | UidMismatch));
            let codes: Vec<_> = ours.map(|f| f.code).collect();
            assert_eq!(codes, Vec::from_iter(code), "{found:#?}");
        }
    }

    /// A raw field only `ready` reads (the Ready condition's status, a boolean where the API
    /// sends a string) fails the replica's facts, not its pod's: the pod is derived by its own
    /// mapping ([`derive::pod`]). A reviewer found `replicas[1].pod` flagged too (2026-12-04).
    #[test]
    fn a_mistyped_ready_status_fails_the_replica_not_its_pod() {
        let text = include_str!("../../../lab/tests/fixtures/c/pass/evidence/03.json");
        let mut v: Value = serde_json::from_str(text).unwrap();
        let raw = v["raw"].as_array_mut().unwrap();
        let pods = raw.iter_mut().find(|r| r["what"] == "pods").unwrap();
        let conditions = pods["data"][1]["status"]["conditions"].as_array_mut();
        let mut conditions = conditions.into_iter().flatten();
        let ready = conditions.find(|c| c["type"] == "Ready").unwrap();
        ready["status"] = Value::Bool(true);
        let mut gi = GradeInput::default();
        gi.evidence.insert(3, Ok(EvidenceDoc::new(v)));
        let found = crate::grade::grade(Lab::C, 3, &gi).findings;
        let subjects = found.iter().map(|f| f.subject.as_str());
        let on_replica: Vec<&str> = subjects.filter(|s| s.contains("replicas[1]")).collect();
        let replica = vec!["evidence/03.json facts.replicas[1]"];
        assert_eq!(on_replica, replica, "{found:#?}");
    }
}
