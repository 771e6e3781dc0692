//! Lab C graders, acts 3-8 (three admission-controller replicas; `docs/labs.md`, "Lab C").
//!
//! Acts 1-2 are lab B's (graded in [`super`]). Each rule is a function named after what it
//! holds:
//!
//! | act | rule | holds | code |
//! |---|---|---|---|
//! | 3 | [`scale_is_the_plans`] | the scale's before/after and the Deployment's replicas | `ha-plan.json` (1 → 3) | value-mismatch |
//! | 3 | [`three_distinct_ready_replicas`] | three replicas, distinct names and UIDs, each `Ready`, `Running` | the plan's 3 | value-mismatch, uid-mismatch |
//! | 3 | [`every_ready_replica_is_a_ready_endpoint`] | `kyverno-svc`'s ready endpoints | one per replica, by pod name and address | value-mismatch |
//! | 3 | [`lease_holder_is_a_replica`] | the Lease `kyverno`'s holder | one of the replicas | value-mismatch |
//! | 3 | [`registration_is_act2s`] | the registration after the scale | act 2's, unchanged | registration-changed |
//! | 3 | [`wait_is_ordered_inside_the_act`] | the scale, then the three conditions, then the first request | each other | times-inconsistent |
//! | 3 | [`baseline_waves_were_parallel`] | `waves × wave_size` violating pods, each wave's requests in flight together | the counts; at least one request per replica in flight at one instant ([`most_in_flight`]) | value-mismatch, times-inconsistent |
//! | 3 | [`baseline_outcomes_are_healthy`] | every violating pod an explicit deny from act 2's webhook, good and control stored, the existing pod the good one | the policy | outcome-unexpected, deny-other-webhook, value-mismatch |
//! | 3 | [`replica_counts_cover_the_requests`] | Kyverno's per-replica pod request counters | one row per replica; no counter goes down; together they moved by at least the target requests | value-mismatch |
//! | 3 | [`act3_facts_are_the_raw_reads`] | the Deployment, Lease, pods, endpoints, the healer's scale, each counter, the wait's times | the raw records they were derived from (`ready-wait`: each time is the first check its condition held); each read timed between its record and the next ([`read_between_its_raw_record_and_the_next`]); the metrics window between the counters' reads | raw-mismatch, observation-missing, times-inconsistent |
//! | 4 | `investigation_against_its_plan` ([`super`]) | node and Deployment UIDs | act 1, `freeze-plan.json` | uid-mismatch |
//! | 4 | [`leader_is_the_lease_holder`] | the leader's pod | the Lease's holder, read before and after (unchanged) | value-mismatch |
//! | 4 | [`processes_are_act3s_replicas`] | leader + followers | act 3's replica UIDs, each once; PIDs and start times distinct; none stopped | value-mismatch, uid-mismatch, process-still-stopped |
//! | 4 | [`act4_facts_are_the_raw_reads`] | both Lease reads, each process | raw `lease-before`/`lease-after`, each `cri-container:<pod>` (restart count = the container's attempt) | raw-mismatch, observation-missing |
//! | 5 | [`frozen_replica_is_act4s_leader`] | the role, pod and process frozen | act 4's leader | value-mismatch, identity-changed |
//! | 5 | [`lease_before_names_the_frozen_leader`] | the Lease read right before the freeze | the frozen pod | value-mismatch |
//! | 6 | [`follower_is_not_the_lease_holder`], [`frozen_follower_is_its_latest_process`] | the follower frozen | not the holder before; one of act 3's pods; its process act 5's after the resume (if act 5 froze it) or act 4's | value-mismatch, uid-mismatch, identity-changed |
//! | 6 | `freeze::policy_switched_to_ignore` | the stored policy, the registration, a violating pod under Ignore | act 2's UID, `policy-ignore.json` (`stored_policy_is_the_applied_input`), raw `policy-stored`; act 2's registration switched to Ignore; explicit deny before the freeze | uid-mismatch, value-mismatch, raw-mismatch, registration-changed |
//! | 6 | [`lease_holder_unchanged_by_a_follower_freeze`] | every Lease sample and the read after | the holder before | value-mismatch |
//! | 5, 6 | every freeze's rules, lab B's too (`freeze::freeze_rules`) | the freeze window and ledger, the process state, the registration read during the freeze, the requests after the resume and the first deny, the restart count and container after | the healer's deadline, `T` during only, raw `fault-ledger-resumed`; present, its snapshot the claim, the act's failurePolicy, act 2's (act 6: act 6's) registration, its scope, `timeout_seconds`, read inside the freeze; each after the resume a violating pod, the last the first explicit deny from the policy's webhook, timed from the resume; restart count never down, up exactly when the container is new, the same container the same process | times-inconsistent, value-mismatch, process-still-stopped, raw-mismatch, registration-missing, registration-changed, registration-claim-contradicted, registration-scope, not-confirmed, outside-window, restart-contradicted, identity-changed |
//! | 5, 6 | [`freeze_waves_lie_inside_the_freeze`] | `waves × wave_size` violating pods (≥ 18), one control pod per wave | sent after the freeze, answered before the resume, each wave with one request per replica in flight at once ([`most_in_flight`]); violating pods in the target namespace | value-mismatch, times-inconsistent |
//! | 5, 6 | [`freeze_outcomes_are_timeout_or_deny`] | each wave request | met the frozen replica (Fail: `webhook-timeout`, never admitted; Ignore: stored) after `timeoutSeconds`, or denied by the policy's webhook; control stored | outcome-unexpected, timeout-too-fast, timeout-too-slow, deny-other-webhook |
//! | 5, 6 | [`samples_cover_the_freeze`] | the Lease and EndpointSlice samples | one about each second from the freeze to the resume, no gap over three periods | observation-missing |
//! | 5, 6 | [`frozen_replica_after_is_the_same_pod`] | the frozen replica after the settle | its pod and UID, its container's pod | value-mismatch, uid-mismatch |
//! | 5, 6 | [`restart_counts_are_the_containers_attempts`] | the frozen replica's restart counts, `identity_after` | CRI's `attempt` in raw `cri-container-before`/`-after`; a CRI answer is not dropped | raw-mismatch |
//! | 5, 6 | [`replica_rows_are_act3s_replicas`] | each replica's counter | one row per act 3 replica; down only for the frozen replica that restarted | value-mismatch |
//! | 5, 6 | [`freeze_run_is_its_raw_reads`] | the Leases before/after, every sample, the frozen pod and container after, the counters, the settle | raw `lease-before`/`lease-after`, `freeze-samples`, `pods-after`, `cri-container-after`, `replica-metrics-*`, `settle-wait` ([`settle_is_its_checks`]) | raw-mismatch, observation-missing, times-inconsistent |
//! | 5, 6 | `existing_pod_survives_since` ([`super`]) | act 3's pod | same name, UID, `Running`, restart count never down | pod-replaced, pod-not-running, restart-contradicted |
//! | 7 | `recovery.json`, `freeze::recovered_under_ignore` | the policy UID, the Ignore registration, the deny | act 2's UID, act 6's registration unchanged, its scope; the last probe an explicit deny from it | uid-mismatch, registration-changed, registration-scope, outcome-unexpected, observation-missing |
//! | 7 | [`scaled_back_to_the_original_count`], [`replicas_left_are_act3s_pods`] | the scale back, the Deployment, the replicas left | the original count, act 3's attempt; act 1's Deployment; each Ready replica one of act 3's pods (name, UID, address), `Running`; the Lease's holder one of them | value-mismatch, uid-mismatch |
//! | 7 | [`deny_probes_are_violating_pods_one_after_another`], [`wait_spans_the_act_until_the_existing_pod`] | the probes, `waited_ms` | violating target pods after the scale back, one at a time; the act's start to the existing pod's read | value-mismatch, times-inconsistent |
//! | 7 | [`act7_facts_are_the_raw_reads`] | `replicas_before`, the heal, the Lease, the policy UID, the registration | raw `deployment-before`, `scale-attempt-heal`, `lease`, `policy`, `webhook-configuration` | raw-mismatch, observation-missing |
//! | 8 | `act8` | each word of `report.json`, the digests | `rules::c::report_expectations`; 05/06/07 | report-contradicted, digest-mismatch |

use std::collections::BTreeSet;

use super::freeze::{self, Freeze};
use super::{
    Code, G, SameRegistration, registration_equals, violating_pod_never_admitted_under_fail,
};
use crate::evidence::Outcome;
use crate::facts::{self, c::*};
use crate::inputs::{self, Context};

/// Replicas lab C runs (`ha-plan.json` `replicas`).
const REPLICAS: u32 = inputs::HaReplicas::VALUE;

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
    scale_is_the_plans(g, s, &f);
    three_distinct_ready_replicas(g, s, &f);
    every_ready_replica_is_a_ready_endpoint(g, s, &f);
    lease_holder_is_a_replica(g, s, &f.lease, &f.replicas);
    registration_is_act2s(g, s, &f);
    wait_is_ordered_inside_the_act(g, s, &f);
    baseline_waves_were_parallel(g, s, &f);
    baseline_outcomes_are_healthy(g, s, &f);
    replica_counts_cover_the_requests(g, s, &f);
    if let Some(ev) = g.evidence(3) {
        act3_facts_are_the_raw_reads(g, s, &ev, &f);
    }
}

/// The healer scaled from the plan's original count to its three, and the Deployment says three.
fn scale_is_the_plans(g: &mut G, s: &str, f: &Act3Facts) {
    let original = inputs::OriginalReplicas::VALUE;
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.scale.replicas_before"),
        original,
        f.scale.replicas_before,
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.scale.replicas"),
        REPLICAS,
        f.scale.replicas,
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.deployment.replicas"),
        REPLICAS,
        f.deployment.replicas,
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.deployment.ready_replicas"),
        REPLICAS,
        f.deployment.ready_replicas,
    );
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        g.expect_eq(
            Code::UidMismatch,
            format!("{s}.deployment.uid"),
            a1.controller_deployment.uid.as_str(),
            f.deployment.uid.as_str(),
        );
    }
}

/// Three replicas, each its own pod (distinct names and UIDs), `Ready` and `Running`.
fn three_distinct_ready_replicas(g: &mut G, s: &str, f: &Act3Facts) {
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.replicas"),
        REPLICAS as usize,
        f.replicas.len(),
    );
    let names: BTreeSet<&str> = f.replicas.iter().map(|r| r.pod.name.as_str()).collect();
    let uids: BTreeSet<&str> = f
        .replicas
        .iter()
        .filter_map(|r| r.pod.uid.as_deref())
        .collect();
    g.check(
        names.len() == f.replicas.len() && uids.len() == f.replicas.len(),
        Code::UidMismatch,
        format!("{s}.replicas"),
        || format!("expected distinct pods, found names {names:?} and UIDs {uids:?}"),
    );
    for (i, r) in f.replicas.iter().enumerate() {
        g.check(
            r.ready && r.pod.exists && r.pod.phase.as_deref() == Some("Running"),
            Code::ValueMismatch,
            format!("{s}.replicas[{i}]"),
            || {
                format!(
                    "expected a Ready, Running pod, found ready={} phase={:?}",
                    r.ready, r.pod.phase
                )
            },
        );
    }
}

/// Every replica is a ready endpoint of `kyverno-svc` (by pod name and address), and there is
/// no ready endpoint that is not one of them: the API server dials these addresses itself.
fn every_ready_replica_is_a_ready_endpoint(g: &mut G, s: &str, f: &Act3Facts) {
    let ready: BTreeSet<(Option<&str>, &str)> = f
        .endpoints
        .iter()
        .filter(|e| e.ready)
        .map(|e| (e.pod.as_deref(), e.address.as_str()))
        .collect();
    let replicas: BTreeSet<(Option<&str>, &str)> = f
        .replicas
        .iter()
        .map(|r| (Some(r.pod.name.as_str()), r.pod_ip.as_deref().unwrap_or("")))
        .collect();
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.endpoints"),
        replicas,
        ready,
    );
}

/// The Lease's holder is one of the replicas (a pod name: Kyverno's identity).
fn lease_holder_is_a_replica(
    g: &mut G,
    s: &str,
    lease: &facts::a::LeaseFacts,
    replicas: &[ReplicaFacts],
) {
    let holder = lease.holder.as_deref().unwrap_or("");
    g.check(
        replicas.iter().any(|r| r.pod.name == holder),
        Code::ValueMismatch,
        format!("{s}.lease.holder"),
        || format!("expected one of the replicas, found {:?}", lease.holder),
    );
}

/// Scaling does not touch the registration: it is act 2's.
fn registration_is_act2s(g: &mut G, s: &str, f: &Act3Facts) {
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        registration_equals(
            g,
            &format!("{s}.webhook"),
            &f.webhook,
            &a2.webhook,
            SameRegistration::Identical,
        );
    }
}

/// The scale, then the three conditions of the wait, then the first baseline request.
fn wait_is_ordered_inside_the_act(g: &mut G, s: &str, f: &Act3Facts) {
    let w = &f.wait;
    for (what, at) in [
        ("ready_pods_at", &w.ready_pods_at),
        ("ready_endpoints_at", &w.ready_endpoints_at),
        ("registration_at", &w.registration_at),
    ] {
        g.times_ordered(&format!("{s}.wait.{what}"), &f.scale.scaled_at, at);
        if let Some(first) = f.bad.first() {
            g.times_ordered(&format!("{s}.bad[0].sent_at"), at, &first.sent_at);
        }
    }
}

/// `waves × wave_size` violating pods, and in each wave at least as many requests as there are
/// replicas were in flight at once ([`most_in_flight`]): the API server opens a connection per
/// concurrent call, sequential calls reuse one and reach one replica (`docs/lab-c.md`). (Not
/// "every request sent before any answer": on a loaded host a task of the wave may start after a
/// fast deny of another, seen in 2 of 5 runs on 2026-12-01 with the load average at 9.)
fn baseline_waves_were_parallel(g: &mut G, s: &str, f: &Act3Facts) {
    let size = f.wave_size as usize;
    g.check(
        f.waves >= 2 && size >= REPLICAS as usize && f.bad.len() == f.waves as usize * size,
        Code::ValueMismatch,
        format!("{s}.bad"),
        || {
            format!(
                "expected at least 2 waves of at least {REPLICAS} requests ({} × {size}), found {} requests",
                f.waves,
                f.bad.len()
            )
        },
    );
    if size == 0 {
        return;
    }
    for (w, wave) in f.bad.chunks(size).enumerate() {
        waves_had_requests_in_flight_at_once(g, &format!("{s}.bad (wave {w})"), wave);
    }
}

/// The most requests of `wave` in flight at one instant: each request spans `[sent_at,
/// answered_at]`; `None` when a time does not parse.
pub(super) fn most_in_flight(wave: &[crate::evidence::RequestRecord]) -> Option<usize> {
    let mut edges = Vec::new();
    for r in wave {
        let (a, b) = (
            facts::parse_rfc3339(&r.sent_at)?,
            facts::parse_rfc3339(&r.answered_at)?,
        );
        // A send at the same millisecond as another's answer counts as overlapping.
        edges.push((a, 0i32));
        edges.push((b, 1i32));
    }
    edges.sort();
    let (mut now, mut most) = (0usize, 0usize);
    for (_, kind) in edges {
        if kind == 0 {
            now += 1;
            most = most.max(now);
        } else {
            now = now.saturating_sub(1);
        }
    }
    Some(most)
}

/// At least one request per replica of `wave` was in flight at once ([`most_in_flight`]).
/// Flags times-inconsistent.
pub(super) fn waves_had_requests_in_flight_at_once(
    g: &mut G,
    subject: &str,
    wave: &[crate::evidence::RequestRecord],
) {
    let most = most_in_flight(wave);
    g.check(
        most.is_some_and(|m| m >= REPLICAS as usize),
        Code::TimesInconsistent,
        subject,
        || {
            format!(
                "at most {most:?} of the wave's {} requests were in flight at once; a parallel wave has at least {REPLICAS}",
                wave.len()
            )
        },
    );
}

/// A healthy cluster with three replicas: every violating pod explicitly denied by act 2's
/// webhook and not stored; the labelled target pod and the control pod stored; the existing pod
/// is the good pod, `Running`.
fn baseline_outcomes_are_healthy(g: &mut G, s: &str, f: &Act3Facts) {
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    for (i, r) in f.bad.iter().enumerate() {
        let sub = format!("{s}.bad[{i}]");
        g.request(&sub, r, &[Outcome::ExplicitDeny]);
        violating_pod_never_admitted_under_fail(g, &sub, r);
        if let Some(h) = &hook {
            g.named_webhook(&sub, r, h);
        }
        g.expect_eq(
            Code::ValueMismatch,
            format!("{sub}.namespace"),
            "kca-webhook-target",
            r.namespace.as_str(),
        );
    }
    g.request(&format!("{s}.good"), &f.good, &[Outcome::Stored]);
    g.request(&format!("{s}.control"), &f.control, &[Outcome::Stored]);
    // Real creates, never server dry-run: a dry-run would store nothing to compare.
    for (sub, r) in f
        .bad
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("bad[{i}]"), r))
        .chain([
            ("good".to_owned(), &f.good),
            ("control".to_owned(), &f.control),
        ])
    {
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.{sub}.dry_run"),
            false,
            r.dry_run,
        );
    }
    for (sub, r, ns, label) in [
        ("good", &f.good, "kca-webhook-target", true),
        ("control", &f.control, "kca-webhook-control", false),
    ] {
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.{sub}.namespace"),
            ns,
            r.namespace.as_str(),
        );
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.{sub}.labels"),
            label,
            super::has_env_label(r),
        );
    }
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.existing.name"),
        (f.good.name.as_str(), f.good.namespace.as_str()),
        (f.existing.name.as_str(), f.existing.namespace.as_str()),
    );
    g.times_ordered(&format!("{s}.existing.at"), &f.good.get.at, &f.existing.at);
    if let Some(uid) = f.good.get.uid.clone() {
        g.existing(&format!("{s}.existing"), &f.existing, &uid);
    }
}

/// One counter row per replica; a counter never goes down; where every replica's counter was
/// read, together they moved by at least the target-namespace requests (each reached one
/// replica; Kyverno also counts other pod requests, so not exactly).
fn replica_counts_cover_the_requests(g: &mut G, s: &str, f: &Act3Facts) {
    let rows: BTreeSet<&str> = f.replica_requests.iter().map(|r| r.pod.as_str()).collect();
    let replicas: BTreeSet<&str> = f.replicas.iter().map(|r| r.pod.name.as_str()).collect();
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.replica_requests"),
        replicas,
        rows,
    );
    let mut total = Some(0u64);
    for (i, r) in f.replica_requests.iter().enumerate() {
        match (r.before, r.after) {
            (Some(b), Some(a)) => {
                g.check(a >= b, Code::ValueMismatch, format!("{s}.replica_requests[{i}]"), || {
                    format!("counter went down from {b} to {a}: the replica restarted inside the act")
                });
                total = total.map(|t| t + a.saturating_sub(b));
            }
            _ => total = None,
        }
    }
    if let Some(total) = total {
        let target = f.bad.len() + 1;
        g.check(
            total >= target as u64,
            Code::ValueMismatch,
            format!("{s}.replica_requests"),
            || format!("the replicas counted {total} pod requests, fewer than the {target} target requests"),
        );
    }
}

/// Act 4: the leader and the followers, found through the Lease, CRI and `/proc`.
pub(crate) fn act4(g: &mut G) {
    let Some(f) = g.facts::<Act4Facts>(4) else {
        return;
    };
    let s = "evidence/04.json facts";
    super::investigation_against_its_plan::<inputs::FreezePlanC>(
        g,
        s,
        &f.node_uid,
        &f.deployment_uid,
    );
    leader_is_the_lease_holder(g, s, &f);
    processes_are_act3s_replicas(g, s, &f);
    if let Some(ev) = g.evidence(4) {
        act4_facts_are_the_raw_reads(g, s, &ev, &f);
    }
}

/// The leader is the Lease's holder, and the holder did not change while the processes were
/// read (read before and after).
fn leader_is_the_lease_holder(g: &mut G, s: &str, f: &Act4Facts) {
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.leader.pod_name"),
        f.lease.holder.as_deref(),
        Some(f.leader.pod_name.as_str()),
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.lease_after.holder"),
        f.lease.holder.as_deref(),
        f.lease_after.holder.as_deref(),
    );
    g.times_ordered(
        &format!("{s}.lease_after.at"),
        &f.lease.at,
        &f.lease_after.at,
    );
    g.times_ordered(
        &format!("{s}.investigated_at"),
        &f.lease_after.at,
        &f.investigated_at,
    );
}

/// Leader and followers are act 3's three replicas (by pod UID), each once, each its own live
/// process (distinct PIDs and container IDs, a start time, not stopped).
fn processes_are_act3s_replicas(g: &mut G, s: &str, f: &Act4Facts) {
    let all: Vec<&ReplicaProcess> = std::iter::once(&f.leader).chain(&f.followers).collect();
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let act3: BTreeSet<&str> = a3
            .replicas
            .iter()
            .filter_map(|r| r.pod.uid.as_deref())
            .collect();
        let found: BTreeSet<&str> = all.iter().map(|p| p.identity.pod_uid.as_str()).collect();
        g.check(
            found == act3 && all.len() == act3.len(),
            Code::UidMismatch,
            format!("{s}.followers"),
            || {
                format!(
                    "expected act 3's replicas {act3:?} once each, found {found:?} ({} processes)",
                    all.len()
                )
            },
        );
    }
    let pids: BTreeSet<u32> = all.iter().map(|p| p.identity.pid).collect();
    let containers: BTreeSet<&str> = all
        .iter()
        .map(|p| p.identity.container_id.as_str())
        .collect();
    g.check(
        pids.len() == all.len() && containers.len() == all.len(),
        Code::ValueMismatch,
        format!("{s}.followers"),
        || {
            format!(
                "expected one process per replica, found PIDs {pids:?}, containers {containers:?}"
            )
        },
    );
    for (i, p) in all.iter().enumerate() {
        let sub = if i == 0 {
            format!("{s}.leader")
        } else {
            format!("{s}.followers[{}]", i - 1)
        };
        g.check(
            p.identity.pid > 1
                && p.identity.pid_start_time_ticks > 0
                && !p.identity.container_id.is_empty(),
            Code::ValueMismatch,
            format!("{sub}.identity"),
            || {
                format!(
                    "expected a PID > 1, its start time and a container ID, found {:?}",
                    p.identity
                )
            },
        );
        g.check(
            p.process_state != "T",
            Code::ProcessStillStopped,
            format!("{sub}.process_state"),
            || "act 4 only investigates; the process was found stopped".into(),
        );
        super::witness::process_state_is_a_proc_state(
            g,
            &format!("{sub}.process_state"),
            &p.process_state,
        );
    }
}

/// Act 3's facts are the objects and answers it read (raw records): the Deployment
/// (`deployment`), the Lease (`lease`), each replica (`pods`: the pod, its `Ready` condition,
/// `status.podIP`), the endpoints (`endpoint-slices`), the scale (`scale-up`: the healer's answer;
/// `healer-ready`: its deadline), each replica's counter (`replica-metrics-{before,after}:<pod>`,
/// re-parsed), and the wait's length (between the last condition seen and the first request).
/// Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn act3_facts_are_the_raw_reads(g: &mut G, s: &str, ev: &crate::evidence::Evidence, f: &Act3Facts) {
    use super::witness::{fact_is_derived_from_raw_record, lease_is_derived_from, required_raw};
    fact_is_derived_from_raw_record(
        g,
        ev,
        "deployment",
        &format!("{s}.deployment"),
        &f.deployment,
        crate::derive::deployment,
        crate::derive::DEPLOYMENT_SOURCES,
    );
    lease_is_derived_from(g, ev, "lease", &format!("{s}.lease"), &f.lease);
    if super::witness::raw_record(ev, "lease").is_some() {
        read_between_its_raw_record_and_the_next(
            g,
            &format!("{s}.lease.at"),
            ev,
            "lease",
            &f.lease.at,
        );
    }
    for (i, r) in f.replicas.iter().enumerate() {
        read_between_its_raw_record_and_the_next(
            g,
            &format!("{s}.replicas[{i}].pod.at"),
            ev,
            "pods",
            &r.pod.at,
        );
    }
    if let Some(checks) = required_raw(g, ev, "ready-wait", &format!("{s}.wait")) {
        wait_times_are_its_checks(g, s, f, checks);
    }
    metrics_window_lies_between_the_replica_counters(g, s, ev);
    replicas_are_the_raw_pods(g, s, ev, f);
    if let Some(slices) = required_raw(g, ev, "endpoint-slices", &format!("{s}.endpoints")) {
        let raw = endpoints_of_slices(slices);
        g.check(
            raw == f.endpoints,
            Code::RawMismatch,
            format!("{s}.endpoints"),
            || {
                format!(
                    "recorded {:?}, the raw EndpointSlices say {raw:?}",
                    f.endpoints
                )
            },
        );
    }
    scale_is_the_healers_answers(g, s, ev, f);
    replica_counters_are_the_raw_lines(g, s, ev, &f.replica_requests);
    wait_length_is_the_waits(g, s, f);
}

/// Act 3's replicas are the raw `pods` list: one per pod, each pod observation, its `Ready`
/// condition and `status.podIP` the raw pod's. Flags [`Code::RawMismatch`].
fn replicas_are_the_raw_pods(g: &mut G, s: &str, ev: &crate::evidence::Evidence, f: &Act3Facts) {
    use super::witness::{fact_is_derived_from_raw, required_raw};
    use serde_json::Value;
    if let Some(pods) = required_raw(g, ev, "pods", &format!("{s}.replicas")) {
        let raw: Vec<&Value> = pods
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        g.check(
            raw.len() == f.replicas.len(),
            Code::RawMismatch,
            format!("{s}.replicas"),
            || {
                format!(
                    "{} replicas recorded, the raw list has {}",
                    f.replicas.len(),
                    raw.len()
                )
            },
        );
        for (i, r) in f.replicas.iter().enumerate() {
            let sub = format!("{s}.replicas[{i}]");
            let Some((k, p)) = raw.iter().enumerate().find(|(_, p)| {
                p.pointer("/metadata/name").and_then(Value::as_str) == Some(r.pod.name.as_str())
            }) else {
                g.flag(
                    Code::RawMismatch,
                    sub,
                    format!("pod {} is not in the raw list", r.pod.name),
                );
                continue;
            };
            fact_is_derived_from_raw(
                g,
                &format!("{sub}.pod"),
                &r.pod,
                &format!("{} raw[pods].data[{k}]", super::ev_name(ev.act)),
                crate::derive::pod(p, r.pod.at.clone()),
                crate::derive::POD_SOURCES,
            );
            let ready = p
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
            let ip = p.pointer("/status/podIP").and_then(Value::as_str);
            g.check(
                ready == r.ready && ip == r.pod_ip.as_deref(),
                Code::RawMismatch,
                sub,
                || {
                    format!(
                        "recorded ready={} podIP {:?}, the raw pod says ready={ready} podIP {ip:?}",
                        r.ready, r.pod_ip
                    )
                },
            );
        }
    }
}

/// Act 3's scale is the healer's answers: `scale-up` (replicas before and after, the answer's
/// time) and `healer-ready` (its deadline). Flags [`Code::RawMismatch`].
fn scale_is_the_healers_answers(g: &mut G, s: &str, ev: &crate::evidence::Evidence, f: &Act3Facts) {
    use super::witness::required_raw;
    use serde_json::Value;
    if let Some(up) = required_raw(g, ev, "scale-up", &format!("{s}.scale")) {
        let ok = up["replicas_before"].as_u64() == Some(u64::from(f.scale.replicas_before))
            && up.pointer("/raw/spec/replicas").and_then(Value::as_u64)
                == Some(u64::from(f.scale.replicas))
            && up["answered_at"].as_str() == Some(f.scale.scaled_at.as_str());
        g.check(ok, Code::RawMismatch, format!("{s}.scale"), || {
            format!("recorded {:?}, the healer's answer says {up}", f.scale)
        });
    }
    if let Some(ready) = required_raw(
        g,
        ev,
        "healer-ready",
        &format!("{s}.scale.restore_deadline_at"),
    ) {
        g.check(
            ready["deadline_at"].as_str() == Some(f.scale.restore_deadline_at.as_str()),
            Code::RawMismatch,
            format!("{s}.scale.restore_deadline_at"),
            || {
                format!(
                    "recorded {:?}, the healer's ready answer says {}",
                    f.scale.restore_deadline_at, ready["deadline_at"]
                )
            },
        );
    }
}

/// `kyverno-svc`'s endpoints as the act derives them from its EndpointSlices (raw, verbatim):
/// each endpoint's first address, its pod, `conditions.ready` (absent counts as ready), sorted
/// by pod name.
fn endpoints_of_slices(slices: &serde_json::Value) -> Vec<EndpointFacts> {
    use serde_json::Value;
    let mut raw: Vec<EndpointFacts> = slices
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|sl| sl["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| EndpointFacts {
            address: e
                .pointer("/addresses/0")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            pod: e
                .pointer("/targetRef/name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ready: e
                .pointer("/conditions/ready")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        })
        .collect();
    raw.sort_by(|a, b| a.pod.cmp(&b.pod));
    raw
}

/// Each replica's counter is what its raw `/metrics` lines give
/// (`replica-metrics-{before,after}:<pod>`, re-parsed; `None` when the read failed). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn replica_counters_are_the_raw_lines(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    rows: &[ReplicaRequests],
) {
    use serde_json::Value;
    for (i, r) in rows.iter().enumerate() {
        for (when, recorded) in [("before", r.before), ("after", r.after)] {
            let what = format!("replica-metrics-{when}:{}", r.pod);
            let sub = format!("{s}.replica_requests[{i}].{when}");
            let Some(raw) = super::witness::required_raw(g, ev, &what, &sub) else {
                continue;
            };
            let text: String = raw["lines"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n");
            let parsed = if raw["status"] == 200 {
                crate::metrics::kyverno_pod_requests(&text)
            } else {
                None
            };
            g.check(parsed == recorded, Code::RawMismatch, sub, || {
                format!("recorded {recorded:?}, the raw lines give {parsed:?}")
            });
        }
    }
}

/// The wait's recorded length lies between the last condition it saw (less the clock skew)
/// and the first baseline request (the wait starts right after the scale's answer).
fn wait_length_is_the_waits(g: &mut G, s: &str, f: &Act3Facts) {
    let w = &f.wait;
    let ms = |a: &str, b: &str| {
        Some((facts::parse_rfc3339(b)? - facts::parse_rfc3339(a)?).num_milliseconds())
    };
    let last = [&w.ready_pods_at, &w.ready_endpoints_at, &w.registration_at]
        .into_iter()
        .filter_map(|t| ms(&f.scale.scaled_at, t))
        .max();
    let first = f
        .bad
        .first()
        .and_then(|r| ms(&f.scale.scaled_at, &r.sent_at));
    if let (Some(last), Some(first)) = (last, first) {
        let waited = w.waited_ms as i64;
        g.check(
            waited + super::bounds::STEP_START_SPREAD_MS >= last && waited <= first,
            Code::TimesInconsistent,
            format!("{s}.wait.waited_ms"),
            || format!("{waited} ms waited: the last condition held {last} ms after the scale, the first request went {first} ms after it"),
        );
    }
}

/// Act 4's Leases are the raw reads (`lease-before`, `lease-after`) and each process is the CRI
/// container read for its pod (`cri-container:<pod>`: container ID, PID, pod UID, pod name, and
/// the restart count as the container's `attempt`, [`crate::derive::cri_container`]). Flags [`Code::RawMismatch`] /
/// [`Code::ObservationMissing`].
fn act4_facts_are_the_raw_reads(g: &mut G, s: &str, ev: &crate::evidence::Evidence, f: &Act4Facts) {
    use super::witness::{lease_is_derived_from, required_raw};
    lease_is_derived_from(g, ev, "lease-before", &format!("{s}.lease"), &f.lease);
    lease_is_derived_from(
        g,
        ev,
        "lease-after",
        &format!("{s}.lease_after"),
        &f.lease_after,
    );
    let all = std::iter::once(("leader".to_owned(), &f.leader)).chain(
        f.followers
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("followers[{i}]"), p)),
    );
    for (role, p) in all {
        let sub = format!("{s}.{role}");
        let what = format!("cri-container:{}", p.pod_name);
        if let Some(c) = required_raw(g, ev, &what, &sub) {
            super::witness::fact_is_derived_from_raw(
                g,
                &sub,
                p,
                &format!("{} raw[{what}].data", super::ev_name(ev.act)),
                crate::derive::cri_container(c),
                crate::derive::CRI_PROCESS_SOURCES,
            );
        }
    }
}

/// An observation made from a raw record (the Lease, the pods) is timed between that record and
/// the next raw record the act wrote: the act records the answer, derives the fact, then goes on
/// (`lab/src/labs/c.rs`). Flags [`Code::TimesInconsistent`].
fn read_between_its_raw_record_and_the_next(
    g: &mut G,
    subject: &str,
    ev: &crate::evidence::Evidence,
    what: &str,
    at: &str,
) {
    let time = |r: &serde_json::Value| {
        r.get("at")
            .and_then(|a| a.as_str())
            .and_then(facts::parse_rfc3339)
    };
    let Some(i) = ev
        .raw
        .iter()
        .position(|r| r.get("what").and_then(|w| w.as_str()) == Some(what))
    else {
        return;
    };
    let (Some(from), Some(t)) = (time(&ev.raw[i]), facts::parse_rfc3339(at)) else {
        return;
    };
    let to = ev.raw.get(i + 1).and_then(time);
    g.check(
        from <= t && to.is_none_or(|to| t <= to),
        Code::TimesInconsistent,
        subject,
        || {
            format!(
                "{at} is not between its raw record {what:?} ({from}) and the next one ({to:?})"
            )
        },
    );
}

/// The wait's three times are its checks' (raw `ready-wait`, every check whose state changed):
/// each is the first check where its condition held. Flags [`Code::RawMismatch`].
fn wait_times_are_its_checks(g: &mut G, s: &str, f: &Act3Facts, checks: &serde_json::Value) {
    let first = |flag: &str| {
        checks
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c[flag] == true)
            .and_then(|c| c["at"].as_str())
    };
    for (what, flag, at) in [
        ("ready_pods_at", "pods_ok", &f.wait.ready_pods_at),
        (
            "ready_endpoints_at",
            "endpoints_ok",
            &f.wait.ready_endpoints_at,
        ),
        ("registration_at", "registration", &f.wait.registration_at),
    ] {
        let raw = first(flag);
        g.check(
            raw == Some(at.as_str()),
            Code::RawMismatch,
            format!("{s}.wait.{what}"),
            || {
                format!(
                    "recorded {at:?}, the first check with {flag} in the raw ready-wait is {raw:?}"
                )
            },
        );
    }
}

/// The API server's metrics window (`admission_metrics.before.at`, `.after.at`) lies between the
/// replicas' counters read before the requests and those read after: the act reads Kyverno's
/// counters, opens the window, sends, closes it, reads the counters again. Flags
/// [`Code::TimesInconsistent`].
fn metrics_window_lies_between_the_replica_counters(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
) {
    let at = |r: &serde_json::Value| r.get("at").and_then(|a| a.as_str()).map(str::to_owned);
    let of = |prefix: &str| -> Vec<String> {
        ev.raw
            .iter()
            .filter(|r| {
                r.get("what")
                    .and_then(|w| w.as_str())
                    .is_some_and(|w| w.starts_with(prefix))
            })
            .filter_map(at)
            .collect()
    };
    let m = &ev.facts[crate::evidence::METRICS_KEY];
    let (Some(begin), Some(end)) = (
        m.pointer("/before/at").and_then(|v| v.as_str()),
        m.pointer("/after/at").and_then(|v| v.as_str()),
    ) else {
        return;
    };
    if let Some(last_before) = of("replica-metrics-before:").into_iter().max() {
        g.times_ordered(
            &format!("{s}.admission_metrics.before.at"),
            &last_before,
            begin,
        );
    }
    if let Some(first_after) = of("replica-metrics-after:").into_iter().min() {
        g.times_ordered(
            &format!("{s}.admission_metrics.after.at"),
            end,
            &first_after,
        );
    }
}

/// The act whose evidence is being graded, as its file name's subject.
fn subject(act: u8) -> String {
    format!("{} facts", super::ev_name(act))
}

/// Act 5: the leader frozen for 20 s under Fail.
pub(crate) fn act5(g: &mut G) {
    let Some(f) = g.facts::<Act5Facts>(5) else {
        return;
    };
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    let v = Freeze::of_c(5, &f, false, hook.as_ref());
    frozen_replica_is_act4s_leader(g, &v, &f);
    lease_before_names_the_frozen_leader(g, &v.s, &f);
    replica_freeze_run(g, &v, &f);
}

/// The leader frozen is the one the Lease named right before the freeze.
fn lease_before_names_the_frozen_leader(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.lease_before.holder"),
        Some(run.target_pod.as_str()),
        run.lease_before.holder.as_deref(),
    );
}

/// Act 6: the policy switched to Ignore, a healthy deny, a follower frozen for 10 s.
pub(crate) fn act6(g: &mut G) {
    let Some(f) = g.facts::<Act6Facts>(6) else {
        return;
    };
    freeze::policy_switched_to_ignore(
        g,
        &f.policy_uid_before,
        &f.policy,
        &f.webhook,
        &f.healthy_bad,
        &f.run.freeze.frozen_at,
    );
    let v = Freeze::of_c(6, &f.run, true, Some(&f.webhook));
    let s = &v.s;
    follower_is_not_the_lease_holder(g, s, &f.run);
    frozen_follower_is_its_latest_process(g, &v, &f.run);
    replica_freeze_run(g, &v, &f.run);
    lease_holder_unchanged_by_a_follower_freeze(g, s, &f.run);
}

/// Act 5's frozen replica is the leader act 4 found, with act 4's process identity.
fn frozen_replica_is_act4s_leader(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun) {
    let s = &v.s;
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.target_role"),
        "leader",
        run.target_role.as_str(),
    );
    let Some(a4) = g.facts::<Act4Facts>(4) else {
        return;
    };
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.target_pod"),
        a4.leader.pod_name.as_str(),
        run.target_pod.as_str(),
    );
    freeze::frozen_process_is_the_expected_one(g, v, Some(a4.leader.identity));
}

/// Act 6 froze a follower: a replica that did not hold the Lease when the freeze began, one of
/// act 3's replicas.
fn follower_is_not_the_lease_holder(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.target_role"),
        "follower",
        run.target_role.as_str(),
    );
    g.check(
        run.lease_before.holder.as_deref() != Some(run.target_pod.as_str()),
        Code::ValueMismatch,
        format!("{s}.target_pod"),
        || {
            format!(
                "the frozen pod {} held the Lease when the freeze began",
                run.target_pod
            )
        },
    );
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let uids: BTreeSet<&str> = a3
            .replicas
            .iter()
            .filter_map(|r| r.pod.uid.as_deref())
            .collect();
        g.check(
            uids.contains(run.freeze.identity.pod_uid.as_str()),
            Code::UidMismatch,
            format!("{s}.freeze.identity.pod_uid"),
            || {
                format!(
                    "the frozen pod's UID {} is none of act 3's replicas {uids:?}",
                    run.freeze.identity.pod_uid
                )
            },
        );
    }
}

/// The follower frozen is the process last seen in its pod: act 5's after the resume when it is
/// act 5's frozen replica (which may have restarted), else the one act 4 found. A replica
/// neither froze nor lost the Lease keeps its container between the acts.
fn frozen_follower_is_its_latest_process(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun) {
    let from5 = g
        .facts::<Act5Facts>(5)
        .filter(|a5| a5.target_pod == run.target_pod)
        .and_then(|a5| a5.target_after.identity_after);
    let from4 = g.facts::<Act4Facts>(4).and_then(|a4| {
        a4.followers
            .into_iter()
            .chain([a4.leader])
            .find(|p| p.pod_name == run.target_pod)
            .map(|p| p.identity)
    });
    freeze::frozen_process_is_the_expected_one(g, v, from5.or(from4));
}

/// A follower's freeze leaves the Lease alone: every read during the freeze and the read after
/// name the holder of before.
fn lease_holder_unchanged_by_a_follower_freeze(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    let before = run.lease_before.holder.as_deref();
    for (i, sample) in run.lease_samples.iter().enumerate() {
        if sample.error.is_some() {
            continue;
        }
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.lease_samples[{i}].holder"),
            before,
            sample.holder.as_deref(),
        );
    }
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.lease_after.holder"),
        before,
        run.lease_after.holder.as_deref(),
    );
}

/// The rules both freezes hold: those of every freeze (`freeze::freeze_rules`), then lab C's
/// own: the waves, their outcomes, the samples, the frozen replica after the settle, the
/// replicas' counters, the raw reads and the existing pod.
fn replica_freeze_run(g: &mut G, v: &Freeze<'_>, run: &ReplicaFreezeRun) {
    let s = &v.s;
    freeze::freeze_rules(g, v);
    freeze_waves_lie_inside_the_freeze(g, s, run);
    freeze_outcomes_are_timeout_or_deny(g, s, run, v.hook, v.ignore);
    samples_cover_the_freeze(g, s, run);
    frozen_replica_after_is_the_same_pod(g, s, run);
    if let Some(ev) = g.evidence(v.act) {
        restart_counts_are_the_containers_attempts(g, s, &ev, run);
    }
    replica_rows_are_act3s_replicas(g, s, run);
    g.times_ordered(
        &format!("{s}.lease_before.at"),
        &run.lease_before.at,
        &run.freeze.frozen_at,
    );
    if let Some(ev) = g.evidence(v.act) {
        freeze_run_is_its_raw_reads(g, s, &ev, run);
    }
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        super::existing_pod_survives_since(
            g,
            &format!("{s}.existing"),
            &a3.existing,
            &run.existing,
        );
    }
}

/// `waves × wave_size` violating pods (at least the spec's 18) and one control pod per wave,
/// every one sent after the freeze began and answered before the resume: what they met was the
/// freeze. Flags value-mismatch, times-inconsistent.
fn freeze_waves_lie_inside_the_freeze(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    let least = crate::rules::c::MIN_FREEZE_REQUESTS;
    g.check(
        u64::from(run.waves) * u64::from(run.wave_size) >= u64::from(least)
            && run.bad.len() as u64 == u64::from(run.waves) * u64::from(run.wave_size),
        Code::ValueMismatch,
        format!("{s}.bad"),
        || {
            format!(
                "expected waves of violating pods, at least {least} in all, one record each; found {} × {} and {} records",
                run.waves,
                run.wave_size,
                run.bad.len()
            )
        },
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.control"),
        run.waves as usize,
        run.control.len(),
    );
    if run.wave_size > 0 {
        for (w, wave) in run.bad.chunks(run.wave_size as usize).enumerate() {
            waves_had_requests_in_flight_at_once(g, &format!("{s}.bad (wave {w})"), wave);
        }
    }
    for (i, r) in run.bad.iter().enumerate() {
        let sub = format!("{s}.bad[{i}]");
        g.times_ordered(&format!("{sub}.sent_at"), &run.freeze.frozen_at, &r.sent_at);
        g.times_ordered(
            &format!("{sub}.answered_at"),
            &r.answered_at,
            &run.freeze.resumed_at,
        );
        freeze::violating_pod_in_the_target_namespace(g, &sub, r);
    }
    for (i, r) in run.control.iter().enumerate() {
        let sub = format!("{s}.control[{i}]");
        g.times_ordered(&format!("{sub}.sent_at"), &run.freeze.frozen_at, &r.sent_at);
        g.times_ordered(
            &format!("{sub}.answered_at"),
            &r.answered_at,
            &run.freeze.resumed_at,
        );
    }
}

/// Every violating pod of the waves met the frozen replica (under Fail a `webhook-timeout`, not
/// stored; under Ignore `stored` after the timeout; either after `timeoutSeconds`, not sooner nor
/// much later) or a running one (`explicit-deny` from the policy's webhook); the control pods
/// were stored (outside the selector).
fn freeze_outcomes_are_timeout_or_deny(
    g: &mut G,
    s: &str,
    run: &ReplicaFreezeRun,
    hook: Option<&facts::WebhookFacts>,
    ignore: bool,
) {
    let met = if ignore {
        Outcome::Stored
    } else {
        Outcome::WebhookTimeout
    };
    for (i, r) in run.bad.iter().enumerate() {
        let sub = format!("{s}.bad[{i}]");
        // A request that met the frozen replica waited for the registration's timeout: a
        // `webhook-timeout` under Fail, `stored` after it under Ignore (`bounds::timeout_window_ms`).
        g.request_timed(
            &sub,
            r,
            &[met, Outcome::ExplicitDeny],
            run.timeout_seconds,
            ignore && r.outcome == Outcome::Stored,
        );
        if !ignore {
            violating_pod_never_admitted_under_fail(g, &sub, r);
        }
        if let Some(h) = hook {
            g.named_webhook(&sub, r, h);
        }
    }
    for (i, r) in run.control.iter().enumerate() {
        g.request(&format!("{s}.control[{i}]"), r, &[Outcome::Stored]);
    }
}

/// The Lease and the EndpointSlice were read about each second ([`crate::rules::c::SAMPLE_PERIOD`])
/// from the freeze to the resume: the first read within two periods of the freeze, the last
/// within two of the resume, no gap longer than three; every read inside the act's freeze.
fn samples_cover_the_freeze(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    let (Some(frozen), Some(resumed)) = (
        facts::parse_rfc3339(&run.freeze.frozen_at),
        facts::parse_rfc3339(&run.freeze.resumed_at),
    ) else {
        return;
    };
    let period = crate::rules::c::SAMPLE_PERIOD.as_millis() as i64;
    for (what, times) in [
        (
            "lease_samples",
            run.lease_samples
                .iter()
                .map(|x| x.at.as_str())
                .collect::<Vec<_>>(),
        ),
        (
            "endpoint_samples",
            run.endpoint_samples.iter().map(|x| x.at.as_str()).collect(),
        ),
    ] {
        let parsed: Vec<_> = times
            .iter()
            .filter_map(|t| facts::parse_rfc3339(t))
            .collect();
        let mut edges = vec![frozen];
        edges.extend(parsed.iter().copied());
        edges.push(resumed);
        let longest = edges
            .windows(2)
            .map(|w| (w[1] - w[0]).num_milliseconds())
            .max()
            .unwrap_or(i64::MAX);
        let inside = parsed.len() == times.len()
            && parsed.first().is_some_and(|t| *t >= frozen)
            && parsed
                .last()
                .is_some_and(|t| *t <= resumed + chrono::Duration::milliseconds(2 * period));
        g.check(
            !parsed.is_empty() && inside && longest <= 3 * period,
            Code::ObservationMissing,
            format!("{s}.{what}"),
            || {
                format!(
                    "{} reads between the freeze ({}) and the resume ({}), the longest gap {longest} ms; expected one about each {period} ms",
                    times.len(),
                    run.freeze.frozen_at,
                    run.freeze.resumed_at
                )
            },
        );
    }
}

/// `target_after` is the frozen pod (its name and UID before; its UID after its container's
/// pod), read after the first explicit deny (its restart count and container:
/// `freeze::freeze_rules`).
fn frozen_replica_after_is_the_same_pod(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    let t = &run.target_after;
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.target_after.pod"),
        run.target_pod.as_str(),
        t.pod.as_str(),
    );
    g.expect_eq(
        Code::UidMismatch,
        format!("{s}.target_after.pod_uid_before"),
        run.freeze.identity.pod_uid.as_str(),
        t.pod_uid_before.as_str(),
    );
    if let Some(d) = &run.first_explicit_deny {
        g.times_ordered(
            &format!("{s}.target_after.settled_at"),
            &d.answered_at,
            &t.settled_at,
        );
    }
    if let Some(after) = &t.identity_after {
        g.check(
            t.pod_uid_after.as_deref() == Some(after.pod_uid.as_str()),
            Code::UidMismatch,
            format!("{s}.target_after.pod_uid_after"),
            || {
                format!(
                    "the pod's UID after is {:?}, its container's pod {}",
                    t.pod_uid_after, after.pod_uid
                )
            },
        );
    }
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.target_after.holds_lease_after"),
        run.lease_after.holder.as_deref() == Some(t.pod.as_str()),
        t.holds_lease_after,
    );
}

/// The frozen replica's restart counts are its container's restart attempts as CRI answered
/// them (raw `cri-container-before`, `cri-container-after`: kubelet's `attempt` is the restart
/// count, as act 4 holds), and a CRI answer after the resume is not dropped from the facts
/// (`identity_after`). Flags raw-mismatch.
fn restart_counts_are_the_containers_attempts(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    run: &ReplicaFreezeRun,
) {
    use super::witness::raw_record;
    let t = &run.target_after;
    let attempt = |v: &serde_json::Value| v.get("attempt").and_then(|a| a.as_u64());
    if let Some(before) = raw_record(ev, "cri-container-before") {
        g.expect_eq(
            Code::RawMismatch,
            format!("{s}.target_after.restart_count_before"),
            attempt(before),
            Some(u64::from(t.restart_count_before)),
        );
    }
    if let Some(after) = raw_record(ev, "cri-container-after") {
        g.check(
            t.identity_after.is_some(),
            Code::RawMismatch,
            format!("{s}.target_after.identity_after"),
            || {
                "CRI answered after the resume (raw cri-container-after), the facts say it did not"
                    .into()
            },
        );
        g.expect_eq(
            Code::RawMismatch,
            format!("{s}.target_after.restart_count_after"),
            attempt(after),
            Some(u64::from(t.restart_count_after)),
        );
    }
}

/// One counter row per act 3 replica; a counter goes down only where the replica restarted (the
/// frozen replica, whose restart count went up): Kyverno's counters live in its process.
fn replica_rows_are_act3s_replicas(g: &mut G, s: &str, run: &ReplicaFreezeRun) {
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        let rows: BTreeSet<&str> = run
            .replica_requests
            .iter()
            .map(|r| r.pod.as_str())
            .collect();
        let replicas: BTreeSet<&str> = a3.replicas.iter().map(|r| r.pod.name.as_str()).collect();
        g.check(
            rows == replicas && rows.len() == run.replica_requests.len(),
            Code::ValueMismatch,
            format!("{s}.replica_requests"),
            || format!("expected one row per act 3 replica {replicas:?}, found {rows:?}"),
        );
    }
    let restarted = crate::rules::c::restarted(run);
    for (i, r) in run.replica_requests.iter().enumerate() {
        if let (Some(b), Some(a)) = (r.before, r.after) {
            g.check(
                a >= b || (restarted && r.pod == run.target_pod),
                Code::ValueMismatch,
                format!("{s}.replica_requests[{i}]"),
                || format!("{}'s counter went down from {b} to {a}, and it is not the frozen replica that restarted", r.pod),
            );
        }
    }
}

/// A freeze's facts are the reads it recorded raw: the Lease before and after (`lease-before`,
/// `lease-after`), every Lease and EndpointSlice sample (`freeze-samples`, in order; a failed read
/// has no raw answer), the frozen pod after the settle (`pods-after`: UID, restart count,
/// `Ready`), its container (`cri-container-after`: ID, PID, pod, `attempt` = the restart count),
/// each replica's counter, and the settle's length and last state (`settle-wait`). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`] / [`Code::TimesInconsistent`].
fn freeze_run_is_its_raw_reads(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    run: &ReplicaFreezeRun,
) {
    use super::witness::{lease_is_derived_from, raw_record, required_raw};
    let lease_before = format!("{s}.lease_before");
    lease_is_derived_from(g, ev, "lease-before", &lease_before, &run.lease_before);
    lease_is_derived_from(
        g,
        ev,
        "lease-after",
        &format!("{s}.lease_after"),
        &run.lease_after,
    );
    if raw_record(ev, "lease-after").is_some() {
        read_between_its_raw_record_and_the_next(
            g,
            &format!("{s}.lease_after.at"),
            ev,
            "lease-after",
            &run.lease_after.at,
        );
    }
    samples_are_the_raw_samples(g, s, ev, run);
    target_after_is_the_raw_reads(g, s, ev, run);
    replica_counters_are_the_raw_lines(g, s, ev, &run.replica_requests);
    if let Some(checks) = required_raw(g, ev, "settle-wait", &format!("{s}.target_after.waited_ms"))
    {
        settle_is_its_checks(g, s, run, checks);
    }
}

/// Every Lease and EndpointSlice sample of a freeze is its raw answer (`freeze-samples`, in
/// order; a failed read has no raw answer). Flags [`Code::RawMismatch`].
fn samples_are_the_raw_samples(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    run: &ReplicaFreezeRun,
) {
    use super::witness::{required_raw, same_time};
    use serde_json::Value;
    if let Some(samples) = required_raw(g, ev, "freeze-samples", &format!("{s}.lease_samples")) {
        let of = |what: &str| -> Vec<&Value> {
            samples
                .as_array()
                .into_iter()
                .flatten()
                .filter(|x| x["what"] == what)
                .collect()
        };
        let leases = of("lease");
        let read: Vec<&LeaseSample> = run
            .lease_samples
            .iter()
            .filter(|x| x.error.is_none())
            .collect();
        let lease_ok = leases.len() == read.len()
            && leases.iter().zip(&read).all(|(raw, x)| {
                let spec = |k: &str| raw.pointer(&format!("/lease/spec/{k}"));
                same_time(raw["at"].as_str(), Some(x.at.as_str()))
                    && spec("holderIdentity").and_then(Value::as_str) == x.holder.as_deref()
                    && same_time(
                        spec("renewTime").and_then(Value::as_str),
                        x.renew_time.as_deref(),
                    )
                    && spec("leaseTransitions").and_then(Value::as_u64)
                        == x.lease_transitions.map(u64::from)
            });
        g.check(lease_ok, Code::RawMismatch, format!("{s}.lease_samples"), || {
            format!(
                "{} successful reads recorded, the raw samples hold {} Lease answers that do not all agree",
                read.len(),
                leases.len()
            )
        });
        let slices = of("endpoint-slices");
        let read: Vec<&EndpointSample> = run
            .endpoint_samples
            .iter()
            .filter(|x| x.error.is_none())
            .collect();
        let eps_ok = slices.len() == read.len()
            && slices.iter().zip(&read).all(|(raw, x)| {
                same_time(raw["at"].as_str(), Some(x.at.as_str()))
                    && endpoints_of_slices(&raw["slices"]) == x.endpoints
            });
        g.check(eps_ok, Code::RawMismatch, format!("{s}.endpoint_samples"), || {
            format!(
                "{} successful reads recorded, the raw samples hold {} EndpointSlice answers that do not all agree",
                read.len(),
                slices.len()
            )
        });
    }
}

/// The frozen pod after the settle is the raw `pods-after` (UID, restart count, `Ready`) and its
/// container the raw `cri-container-after` (ID, PID, pod, `attempt` = the restart count). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn target_after_is_the_raw_reads(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    run: &ReplicaFreezeRun,
) {
    use super::witness::required_raw;
    use serde_json::Value;
    let t = &run.target_after;
    if let Some(pods) = required_raw(g, ev, "pods-after", &format!("{s}.target_after")) {
        let pod =
            pods.as_array().into_iter().flatten().find(|p| {
                p.pointer("/metadata/name").and_then(Value::as_str) == Some(t.pod.as_str())
            });
        let uid = pod
            .and_then(|p| p.pointer("/metadata/uid"))
            .and_then(Value::as_str);
        let restarts = pod
            .and_then(|p| p.pointer("/status/containerStatuses"))
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["name"] == "kyverno"))
            .and_then(|c| c["restartCount"].as_u64())
            .unwrap_or(u64::from(t.restart_count_before));
        let ready = pod
            .and_then(|p| p.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        g.check(
            uid == t.pod_uid_after.as_deref()
                && restarts == u64::from(t.restart_count_after)
                && ready == t.ready_after,
            Code::RawMismatch,
            format!("{s}.target_after"),
            || {
                format!(
                    "recorded uid {:?}, restarts {}, ready {}; the raw pods say {uid:?}, {restarts}, {ready}",
                    t.pod_uid_after, t.restart_count_after, t.ready_after
                )
            },
        );
    }
    if let Some(after) = &t.identity_after
        && let Some(c) = required_raw(
            g,
            ev,
            "cri-container-after",
            &format!("{s}.target_after.identity_after"),
        )
    {
        let ok = c["container_id"].as_str() == Some(after.container_id.as_str())
            && c["pid"].as_u64() == Some(u64::from(after.pid))
            && c["pod_uid"].as_str() == Some(after.pod_uid.as_str())
            && c["pod_name"].as_str() == Some(t.pod.as_str())
            && c["attempt"].as_u64() == Some(u64::from(t.restart_count_after));
        g.check(
            ok,
            Code::RawMismatch,
            format!("{s}.target_after.identity_after"),
            || {
                format!(
                    "recorded {after:?} (restarts {}), the raw CRI container says {c}",
                    t.restart_count_after
                )
            },
        );
    }
}

/// The settle's length and end are its checks' (raw `settle-wait`, every check whose state
/// changed): it began after the last request after the resume was answered and before its first
/// check, ended (`settled_at`) after its last, and that last state is the frozen replica's
/// recorded restart count and readiness. Flags [`Code::TimesInconsistent`] /
/// [`Code::RawMismatch`].
fn settle_is_its_checks(g: &mut G, s: &str, run: &ReplicaFreezeRun, checks: &serde_json::Value) {
    let t = &run.target_after;
    let list = checks.as_array().cloned().unwrap_or_default();
    let time = |v: Option<&serde_json::Value>| {
        v.and_then(|c| c["at"].as_str())
            .and_then(facts::parse_rfc3339)
    };
    let (first, last) = (time(list.first()), time(list.last()));
    let settled = facts::parse_rfc3339(&t.settled_at);
    // A waited_ms no clock can subtract (beyond chrono's range) gives no start: flagged below.
    let began = settled.and_then(|x| {
        chrono::Duration::try_milliseconds(i64::try_from(t.waited_ms).ok()?)
            .and_then(|d| x.checked_sub_signed(d))
    });
    g.check(
        settled.is_none() || began.is_some(),
        Code::TimesInconsistent,
        format!("{s}.target_after.waited_ms"),
        || format!("{} ms before {} is no time", t.waited_ms, t.settled_at),
    );
    let answered = run
        .after_resume
        .last()
        .and_then(|r| facts::parse_rfc3339(&r.answered_at));
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    if let (Some(began), Some(first), Some(last), Some(settled), Some(answered)) =
        (began, first, last, settled, answered)
    {
        g.check(
            began >= answered - skew && began <= first + skew && last <= settled + skew,
            Code::TimesInconsistent,
            format!("{s}.target_after.waited_ms"),
            || {
                format!(
                    "the settle began {} ({} ms before settled_at {}): not between the last answer after the resume ({}) and its first check ({}), or its last check ({}) came after",
                    facts::format_rfc3339(began),
                    t.waited_ms,
                    t.settled_at,
                    facts::format_rfc3339(answered),
                    facts::format_rfc3339(first),
                    facts::format_rfc3339(last)
                )
            },
        );
    } else {
        g.check(
            !list.is_empty(),
            Code::ObservationMissing,
            format!("{s}.target_after.waited_ms"),
            || "the settle recorded no check".into(),
        );
    }
    if let Some(l) = list.last() {
        g.check(
            l["target_restart_count"].as_u64() == Some(u64::from(t.restart_count_after))
                && l["target_ready"].as_bool() == Some(t.ready_after),
            Code::RawMismatch,
            format!("{s}.target_after"),
            || {
                format!(
                    "recorded restarts {} ready {}, the settle's last check says {l}",
                    t.restart_count_after, t.ready_after
                )
            },
        );
    }
}

/// Act 7: back to the original count, a new leader if needed, an explicit deny, the existing pod.
pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let s = subject(7);
    let a2 = g.facts::<facts::Act2Facts>(2);
    let uid = a2.as_ref().and_then(super::policy_uid);
    let mut ctx = Context {
        policy_uid: uid.clone(),
        ..Default::default()
    };
    ctx.evidence_digests = g.digests().into_iter().filter(|(a, _)| *a == 6).collect();
    g.input::<inputs::RecoveryC>(&ctx);
    let a6_webhook = g.facts::<Act6Facts>(6).map(|a6| a6.webhook);
    freeze::recovered_under_ignore(
        g,
        uid.as_deref(),
        &f.policy_uid,
        &f.webhook,
        &f.healthy_bad,
        a6_webhook,
    );
    scaled_back_to_the_original_count(g, &s, &f);
    g.check(
        f.deny_probes.last() == Some(&f.healthy_bad),
        Code::ObservationMissing,
        format!("{s}.deny_probes"),
        || "the explicit deny is not the last request sent".into(),
    );
    lease_holder_is_a_replica(g, &s, &f.lease, &f.replicas);
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        super::existing_pod_survives_since(g, &format!("{s}.existing"), &a3.existing, &f.existing);
    }
    replicas_left_are_act3s_pods(g, &s, &f);
    deny_probes_are_violating_pods_one_after_another(g, &s, &f);
    if let Some(ev) = g.evidence(7) {
        act7_facts_are_the_raw_reads(g, &s, &ev, &f);
        wait_spans_the_act_until_the_existing_pod(g, &s, &ev, &f);
    }
}

/// The replicas left after the scale back are act 3's pods (a scale-down deletes pods, it
/// creates none): each by name, UID and address (act 3's `podIP`), existing and `Running`; the
/// Deployment is act 1's with that many ready.
fn replicas_left_are_act3s_pods(g: &mut G, s: &str, f: &Act7Facts) {
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        let d = &a1.controller_deployment;
        g.expect_eq(
            Code::UidMismatch,
            format!("{s}.deployment"),
            (d.namespace.as_deref(), d.name.as_str(), d.uid.as_str()),
            (
                Some(f.deployment.namespace.as_str()),
                f.deployment.name.as_str(),
                f.deployment.uid.as_str(),
            ),
        );
    }
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.deployment.ready_replicas"),
        f.replicas.iter().filter(|r| r.ready).count() as u32,
        f.deployment.ready_replicas,
    );
    let a3 = g.facts::<Act3Facts>(3);
    for (i, r) in f.replicas.iter().enumerate() {
        let sub = format!("{s}.replicas[{i}]");
        g.check(
            r.pod.exists && r.pod.phase.as_deref() == Some("Running"),
            Code::ValueMismatch,
            format!("{sub}.pod"),
            || {
                format!(
                    "expected a Running pod, found exists={} phase={:?}",
                    r.pod.exists, r.pod.phase
                )
            },
        );
        g.check(
            !r.ready || r.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty()),
            Code::ValueMismatch,
            format!("{sub}.pod_ip"),
            || "a Ready pod without status.podIP".into(),
        );
        if let Some(a3) = &a3 {
            let same = a3.replicas.iter().find(|x| {
                x.pod.name == r.pod.name
                    && x.pod.uid == r.pod.uid
                    && x.pod.namespace == r.pod.namespace
            });
            g.check(
                same.is_some(),
                Code::UidMismatch,
                format!("{sub}.pod"),
                || {
                    format!(
                        "{} ({:?}) is none of act 3's replicas",
                        r.pod.name, r.pod.uid
                    )
                },
            );
            // A pod keeps its address as long as its sandbox: kubelet makes a new sandbox only for
            // one that died, which no act causes (a freeze stops the container's process only).
            if let Some(x) = same {
                g.expect_eq(
                    Code::ValueMismatch,
                    format!("{sub}.pod_ip"),
                    x.pod_ip.as_deref(),
                    r.pod_ip.as_deref(),
                );
            }
        }
    }
}

/// Act 7's probes are violating pods of the target namespace (real creates), sent after the
/// scale back, each after the previous one's answer (`until_explicit_deny` sends one at a time).
fn deny_probes_are_violating_pods_one_after_another(g: &mut G, s: &str, f: &Act7Facts) {
    let mut after = f.scale_back.at.clone();
    for (i, r) in f.deny_probes.iter().enumerate() {
        let sub = format!("{s}.deny_probes[{i}]");
        freeze::violating_pod_in_the_target_namespace(g, &sub, r);
        g.times_ordered(&format!("{sub}.sent_at"), &after, &r.sent_at);
        after = r.answered_at.clone();
    }
}

/// `waited_ms` is the act's own span from its start to the existing pod's read (the act times its
/// body from the start and reads the existing pod last). Flags [`Code::TimesInconsistent`].
fn wait_spans_the_act_until_the_existing_pod(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    f: &Act7Facts,
) {
    let (Some(start), Some(end), Some(read)) = (
        facts::parse_rfc3339(&ev.started_at),
        facts::parse_rfc3339(&ev.finished_at),
        facts::parse_rfc3339(&f.existing.at),
    ) else {
        return;
    };
    let skew = super::bounds::CLOCK_SKEW_MS as i64;
    let waited = f.waited_ms as i64;
    let (lo, hi) = (
        (read - start).num_milliseconds() - skew,
        (end - start).num_milliseconds() + skew,
    );
    g.check(
        lo <= waited && waited <= hi,
        Code::TimesInconsistent,
        format!("{s}.waited_ms"),
        || format!("{waited} ms: the act's start to the existing pod's read is {} ms, to its end {} ms", lo + skew, hi - skew),
    );
}

/// Act 7's facts are the reads it recorded raw: the Deployment before the scale back
/// (`deployment-before`: `replicas_before`), the heal's record of act 3's attempt
/// (`scale-attempt-heal`: the attempt, its action and time), the Lease (`lease`), the policy
/// (`policy`: its UID) and the registration (`webhook-configuration`). Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn act7_facts_are_the_raw_reads(g: &mut G, s: &str, ev: &crate::evidence::Evidence, f: &Act7Facts) {
    use super::witness::{
        lease_is_derived_from, raw_record, registration_is_derived_from, required_raw,
    };
    let b = &f.scale_back;
    if let Some(d) = required_raw(
        g,
        ev,
        "deployment-before",
        &format!("{s}.scale_back.replicas_before"),
    ) {
        g.check(
            d.pointer("/spec/replicas").and_then(|v| v.as_u64())
                == Some(u64::from(b.replicas_before))
                && d.pointer("/metadata/uid").and_then(|v| v.as_str())
                    == Some(f.deployment.uid.as_str()),
            Code::RawMismatch,
            format!("{s}.scale_back.replicas_before"),
            || {
                format!(
                    "recorded {} replicas before, the raw Deployment says {:?}",
                    b.replicas_before,
                    d.pointer("/spec/replicas")
                )
            },
        );
    }
    if let Some(h) = required_raw(g, ev, "scale-attempt-heal", &format!("{s}.scale_back")) {
        g.check(
            h["attempt"].as_str() == Some(b.fault_id.as_str())
                && h["action"].as_str() == Some(b.action.as_str())
                && h["at"].as_str() == Some(b.at.as_str()),
            Code::RawMismatch,
            format!("{s}.scale_back"),
            || format!("recorded {b:?}, the heal's record says {h}"),
        );
    }
    lease_is_derived_from(g, ev, "lease", &format!("{s}.lease"), &f.lease);
    if raw_record(ev, "lease").is_some() {
        read_between_its_raw_record_and_the_next(
            g,
            &format!("{s}.lease.at"),
            ev,
            "lease",
            &f.lease.at,
        );
    }
    if let Some(p) = required_raw(g, ev, "policy", &format!("{s}.policy_uid")) {
        g.expect_eq(
            Code::RawMismatch,
            format!("{s}.policy_uid"),
            p.pointer("/metadata/uid").and_then(|v| v.as_str()),
            Some(f.policy_uid.as_str()),
        );
    }
    let webhook = format!("{s}.webhook");
    registration_is_derived_from(g, ev, "webhook-configuration", &webhook, &f.webhook);
}

/// The scale back wrote the original count over act 3's three, and the wait ended with the
/// Deployment and its live replicas at that count, each `Ready`.
fn scaled_back_to_the_original_count(g: &mut G, s: &str, f: &Act7Facts) {
    let original = inputs::OriginalReplicas::VALUE;
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.scale_back.replicas"),
        original,
        f.scale_back.replicas,
    );
    if let Some(a3) = g.facts::<Act3Facts>(3) {
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.scale_back.fault_id"),
            a3.scale.fault_id.as_str(),
            f.scale_back.fault_id.as_str(),
        );
    }
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.deployment.replicas"),
        original,
        f.deployment.replicas,
    );
    g.check(
        f.replicas.len() as u32 == original && f.replicas.iter().all(|r| r.ready),
        Code::ValueMismatch,
        format!("{s}.replicas"),
        || {
            format!(
                "expected {original} Ready replica(s), found {:?}",
                f.replicas
                    .iter()
                    .map(|r| (&r.pod.name, r.ready))
                    .collect::<Vec<_>>()
            )
        },
    );
    g.times_ordered(
        &format!("{s}.healthy_bad.sent_at"),
        &f.scale_back.at,
        &f.healthy_bad.sent_at,
    );
}

/// Act 8: the report, each word held against the one rule act 8 uses
/// ([`crate::rules::c::report_expectations`]).
pub(crate) fn act8(g: &mut G) {
    super::act8_facts(g);
    let ctx = g.report_context(5..=7);
    g.input::<inputs::ReportC>(&ctx);
    let report = g.required_input_value(inputs::InputFile::ReportC);
    let (Some(report), Some(a3), Some(a5), Some(a6), Some(a7)) = (
        report,
        g.facts::<Act3Facts>(3),
        g.facts::<Act5Facts>(5),
        g.facts::<Act6Facts>(6),
        g.facts::<Act7Facts>(7),
    ) else {
        return;
    };
    for (field, expected) in crate::rules::c::report_expectations(&a3, &a5, &a6, &a7) {
        super::report_claim(g, &report, field, &expected);
    }
}

#[cfg(test)]
mod in_flight_tests {
    use super::most_in_flight;
    use crate::evidence::RequestRecord;

    fn wave(spans: &[(&str, &str)]) -> Vec<RequestRecord> {
        spans
            .iter()
            .enumerate()
            .map(|(i, (sent, answered))| {
                serde_json::from_value(serde_json::json!({
                    "name": format!("kca-c3-bad-w0-{i}"), "namespace": "kca-webhook-target",
                    "labels": {}, "dry_run": false, "sent_at": sent, "answered_at": answered,
                    "elapsed_ms": 10, "http_status": 400, "reason": null, "message": null,
                    "outcome": "explicit-deny", "raw_response": {},
                    "get": {"exists": false, "uid": null, "phase": null, "at": answered}
                }))
                .expect("a request record")
            })
            .collect()
    }

    /// Wave 0 of act 3 in the run of 2026-12-01 23:28 UTC (load average 9): the first request
    /// was answered before the others were sent, yet five were in flight together.
    #[test]
    fn a_wave_with_one_early_answer_still_had_five_in_flight() {
        let w = wave(&[
            ("2026-12-01T23:29:31.732Z", "2026-12-01T23:29:31.749Z"),
            ("2026-12-01T23:29:31.752Z", "2026-12-01T23:29:31.763Z"),
            ("2026-12-01T23:29:31.754Z", "2026-12-01T23:29:31.774Z"),
            ("2026-12-01T23:29:31.754Z", "2026-12-01T23:29:31.812Z"),
            ("2026-12-01T23:29:31.762Z", "2026-12-01T23:29:31.775Z"),
            ("2026-12-01T23:29:31.762Z", "2026-12-01T23:29:31.815Z"),
        ]);
        assert_eq!(most_in_flight(&w), Some(5));
    }

    #[test]
    fn a_sequential_wave_has_one_in_flight() {
        let w = wave(&[
            ("2026-12-01T23:29:31.700Z", "2026-12-01T23:29:31.710Z"),
            ("2026-12-01T23:29:31.711Z", "2026-12-01T23:29:31.720Z"),
            ("2026-12-01T23:29:31.721Z", "2026-12-01T23:29:31.730Z"),
        ]);
        assert_eq!(most_in_flight(&w), Some(1));
    }

    #[test]
    fn an_unparsable_time_gives_no_count() {
        let w = wave(&[("yesterday", "2026-12-01T23:29:31.710Z")]);
        assert_eq!(most_in_flight(&w), None);
    }
}
