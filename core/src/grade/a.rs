//! Lab A graders, acts 4-8 (graceful scale-down: the webhook registration may disappear).

#[cfg(doc)]
use super::Code;
use super::witness::fact_is_derived_from_raw_record;
use super::{Code::*, G, Meant, fields_are, policy_uid, request_is_the_pod_meant};
use serde_json::Value;

use crate::classify::parse_call_failure;
use crate::derive;
use crate::evidence::{Evidence, Outcome, RequestRecord};
use crate::facts::{self, a::*};
use crate::inputs::{self, Context};
use crate::rules;

pub(crate) fn act4(g: &mut G) {
    let Some(f) = g.facts::<Act4Facts>(4) else {
        return;
    };
    let s = "evidence/04.json facts";
    let ctx = Context {
        node_uid: Some(f.node_uid.clone()),
        deployment_uid: Some(f.deployment.uid.clone()),
        ..g.report_context(3..=3)
    };
    g.input::<inputs::ScalePlan>(&ctx);
    let (fd, pods) = (&f.deployment, &f.pods);
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        let d = &a1.controller_deployment;
        let uids = [
            ("node_uid", &a1.node.uid, &f.node_uid),
            ("deployment.uid", &d.uid, &fd.uid),
        ];
        fields_are(g, UidMismatch, s, uids);
        // The Deployment, its pods and its Lease are act 1's controller's: its name and
        // namespace, pods named `<deployment>-<replicaset hash>-<suffix>`.
        let found = (Some(fd.namespace.as_str()), fd.name.as_str());
        let act1 = (d.namespace.as_deref(), d.name.as_str());
        fields_are(g, ValueMismatch, s, [("deployment.name", act1, found)]);
        for (i, p) in pods.iter().enumerate() {
            let pod = (p.namespace.as_str(), p.name.as_str());
            super::pod_of_the_deployment(g, format!("{s}.pods[{i}].name"), pod, d);
        }
        let ns = Some(f.lease.namespace.as_str());
        let rows = [("lease.namespace", d.namespace.as_deref(), ns)];
        fields_are(g, ValueMismatch, s, rows);
    }
    let rows = [("deployment.replicas", &1u32, &fd.replicas)];
    fields_are(g, ValueMismatch, s, rows);
    let none = pods.is_empty();
    g.check(!none, ValueMismatch, format!("{s}.pods"), || {
        "no controller pod recorded".into()
    });
    for (i, p) in pods.iter().enumerate() {
        let ok = p.exists && p.uid.as_deref().is_some_and(super::is_uid);
        g.check(ok, UidMismatch, format!("{s}.pods[{i}].uid"), || {
            format!("expected the pod's UID, found {:?}", p.uid)
        });
        super::witness::pod_observation_agrees_with_itself(g, &format!("{s}.pods[{i}]"), p);
    }
    let holder = f.lease.holder.as_deref();
    let ok = holder.is_some_and(|h| pods.iter().any(|p| p.name == h));
    g.check(ok, ValueMismatch, format!("{s}.lease.holder"), || {
        format!("the Lease holder {holder:?} is none of the recorded pods")
    });
    if let Some(ev) = g.evidence(4) {
        super::witness::investigation_is_the_raw_reads(g, &ev, &f);
    }
}

/// The `webhooks[]` entries named `name` of a raw ValidatingWebhookConfiguration list.
fn listed_webhooks<'v>(list: &'v Value, name: &'v str) -> impl Iterator<Item = &'v Value> {
    let items = list["items"].as_array().into_iter().flatten();
    let hooks = items.flat_map(|cfg| cfg["webhooks"].as_array()).flatten();
    hooks.filter(move |w| w["name"] == name)
}

/// Where the raw list of webhook configurations holds the policy's webhook (the registration
/// stayed), that entry is act 2's registration: the same failurePolicy, timeoutSeconds, client
/// config (service namespace, name, path, port), selectors, rules and sideEffects, read verbatim
/// (camelCase). Flags [`Code::RegistrationChanged`].
fn listed_policy_webhook_equals_act2(g: &mut G, s: &str, list: &Value, a2: &facts::WebhookFacts) {
    const NULL: &Value = &Value::Null;
    for w in listed_webhooks(list, &a2.name) {
        let f = |k: &str| w.get(k).unwrap_or(NULL);
        let listed = (
            f("failurePolicy").as_str(),
            f("timeoutSeconds").as_u64(),
            super::raw_service(w),
            f("namespaceSelector"),
            f("rules"),
            f("sideEffects").as_str(),
        );
        let recorded = (
            Some(a2.failure_policy.as_str()),
            Some(u64::from(a2.timeout_seconds)),
            super::fact_service(a2),
            &a2.namespace_selector,
            &a2.rules,
            Some(a2.side_effects.as_str()),
        );
        let (sub, name) = (format!("{s}.webhook_configurations"), &a2.name);
        g.check(listed == recorded, RegistrationChanged, &sub, || {
            format!("the listed webhook {name:?} is {listed:?}; act 2 recorded {recorded:?}")
        });
        super::registration_scope(g, &sub, name, &super::Scope::of_raw(w));
    }
}

const CALL_FAILURES: [Outcome; 4] = [
    Outcome::WebhookTimeout,
    Outcome::ConnectionRefused,
    Outcome::NoEndpoints,
    Outcome::DnsError,
];

/// Lab A act 5, rule by rule (the row "A 5" of the table in [`super`]).
pub(crate) fn act5(g: &mut G) {
    let Some(f) = g.facts::<Act5Facts>(5) else {
        return;
    };
    let s = "evidence/05.json facts";
    watcher_armed_for_the_planned_restore(g, s, &f);
    let gone = pods_gone_after_the_scale_down(g, s, &f);
    policy_and_its_listed_registration_are_act2s(g, s, &f);
    let checked = &f.registrations_checked_at;
    g.times_ordered(&format!("{s}.registrations_checked_at"), &gone, checked);
    violating_request_inside_the_fault(g, s, &f, &gone);
    let sub = format!("{s}.control");
    g.request(&sub, &f.control, &[Outcome::Stored]);
    request_is_the_pod_meant(g, &sub, &f.control, Meant::CONTROL);
    super::existing_pod_survives(g, &format!("{s}.existing"), &f.existing);
    // The evidence the facts were read from ([`G::facts`] checked it), for its raw records.
    let doc = g.input.evidence.get(&5).and_then(|d| d.as_ref().ok());
    if let Some(ev) = doc.and_then(|d| d.evidence().ok()) {
        act5_facts_are_their_raw_records(g, s, &ev, &f);
    }
}

/// Act 5's facts are what [`crate::derive`] derives from the raw records they were made from
/// ([`fact_is_derived_from_raw_record`]): `scaled_at` from the healer's answer to the scale to 0
/// (raw `scale-down`: its `answered_at`, [`crate::derive::scale_down`]); the watcher from its ready
/// answer (raw `watcher-ready`: its PID, arming time and deadline, [`crate::derive::watcher`]; what
/// it was armed with and its fault directory taken as recorded, held by
/// [`watcher_armed_for_the_planned_restore`]); the policy's presence from its read (raw `policy`:
/// whether it found one, its UID, [`crate::derive::policy_presence`]; the read's time taken as
/// recorded). Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`].
fn act5_facts_are_their_raw_records(g: &mut G, s: &str, ev: &Evidence, f: &Act5Facts) {
    let (w, p, fact) = (&f.watcher, &f.policy, |k: &str| format!("{s}.{k}"));
    let (after, replicas, dir) = (w.restore_after_sec, w.original_replicas, &w.fault_dir);
    let ready = |raw: &Value| derive::watcher(raw, after, replicas, dir.clone());
    let read = |raw: &Value| derive::policy_presence(raw, p.at.clone());
    let (down, at) = (derive::scale_down, &f.scaled_at);
    let sources = derive::SCALE_DOWN_SOURCES;
    fact_is_derived_from_raw_record(g, ev, "scale-down", &fact("scaled_at"), at, down, sources);
    let sources = derive::WATCHER_SOURCES;
    fact_is_derived_from_raw_record(g, ev, "watcher-ready", &fact("watcher"), w, ready, sources);
    let sources = derive::POLICY_PRESENCE_SOURCES;
    fact_is_derived_from_raw_record(g, ev, "policy", &fact("policy"), p, read, sources);
}

/// The recovery watcher was armed before the scale-down, for the planned restore (55 s, back
/// to 1 replica), and its deadline is its arming time + `restore_after_sec` (it computes one
/// from the other, [`super::bounds::DERIVED_MS_TOLERANCE`]).
fn watcher_armed_for_the_planned_restore(g: &mut G, s: &str, f: &Act5Facts) {
    let w = &f.watcher;
    g.times_ordered(&format!("{s}.watcher.armed_at"), &w.armed_at, &f.scaled_at);
    let rows = [
        ("watcher.restore_after_sec", &55u32, &w.restore_after_sec),
        ("watcher.original_replicas", &1u32, &w.original_replicas),
    ];
    fields_are(g, ValueMismatch, s, rows);
    // The watcher's deadline is its arming time + restore_after_sec (it computes one from the
    // other), to the millisecond.
    let measured = ms_between(Some(w.armed_at.as_str()), w.deadline_at.as_deref());
    let after = i64::from(w.restore_after_sec) * 1000;
    let tolerance = super::bounds::DERIVED_MS_TOLERANCE;
    let ok = measured.is_some_and(|m| (m - after).abs() <= tolerance);
    let sub = format!("{s}.watcher.deadline_at");
    g.check(ok, TimesInconsistent, sub, || {
        let (armed, after, deadline) = (&w.armed_at, w.restore_after_sec, &w.deadline_at);
        format!("armed at {armed:?} with restore_after_sec {after}, deadline {deadline:?}")
    });
}

/// The controller pods were seen gone after the scale-down; returns when (the scale-down's time
/// when they were not seen gone, which is flagged [`Code::NotConfirmed`]).
fn pods_gone_after_the_scale_down(g: &mut G, s: &str, f: &Act5Facts) -> String {
    let sub = format!("{s}.pods_gone_at");
    let Some(t) = &f.pods_gone_at else {
        g.check(false, NotConfirmed, sub, || {
            "the controller pods were not seen gone".into()
        });
        return f.scaled_at.clone();
    };
    g.times_ordered(&sub, &f.scaled_at, t);
    t.clone()
}

/// The policy object still exists with act 2's UID; the claim about the registration is what
/// the raw list recorded with it shows, and the policy's webhook, when listed, is act 2's.
fn policy_and_its_listed_registration_are_act2s(g: &mut G, s: &str, f: &Act5Facts) {
    let a2 = g.facts::<facts::Act2Facts>(2);
    let sub = format!("{s}.policy.exists");
    g.check(f.policy.exists, ValueMismatch, sub, || {
        "the policy was not found".into()
    });
    if let Some(a2) = &a2 {
        let uid = policy_uid(a2);
        let rows = [("policy.uid", uid.as_deref(), f.policy.uid.as_deref())];
        fields_are(g, UidMismatch, s, rows);
        let (name, claims) = (&a2.webhook.name, f.policy_webhook_present);
        // Whether the raw list holds the webhook (`None`: it is not a List with items).
        let list = &f.webhook_configurations;
        let derived = list["items"]
            .as_array()
            .map(|_| listed_webhooks(list, name).next().is_some());
        let sub = format!("{s}.policy_webhook_present");
        let ok = derived == Some(claims);
        g.check(ok, RegistrationClaimContradicted, sub, || {
            let list = match derived {
                Some(true) => "holds",
                Some(false) => "does not hold",
                None => "is not a List with items and so cannot show",
            };
            format!("claims {claims}, but the raw list {list} webhook {name:?}")
        });
        listed_policy_webhook_equals_act2(g, s, &f.webhook_configurations, &a2.webhook);
    }
}

/// The violating request: admitted when no webhook is registered, a call failure when one is;
/// in the target namespace, unlabelled, sent after the pods were gone and after the registration
/// list its expected outcome rests on was read, answered before the watcher's deadline.
fn violating_request_inside_the_fault(g: &mut G, s: &str, f: &Act5Facts, gone: &str) {
    let sub = format!("{s}.target_bad");
    let expect: &[Outcome] = if f.policy_webhook_present {
        &CALL_FAILURES
    } else {
        &[Outcome::Stored]
    };
    g.request(&sub, &f.target_bad, expect);
    request_is_the_pod_meant(g, &sub, &f.target_bad, Meant::VIOLATING);
    g.times_ordered(&sub, gone, &f.target_bad.sent_at);
    // What the request shows holds only inside the fault: sent after the registration list that
    // its expected outcome rests on was read, answered before the watcher's deadline (when it
    // restores the replicas, unless act 6 did sooner: act 5 hands the fault over at 0 replicas).
    let (sent, answered) = (&f.target_bad.sent_at, &f.target_bad.answered_at);
    g.times_ordered(&format!("{sub}.sent_at"), &f.registrations_checked_at, sent);
    if let Some(deadline) = &f.watcher.deadline_at {
        let t = facts::parse_rfc3339;
        let ok = matches!((t(answered), t(deadline)), (Some(a), Some(d)) if a <= d);
        g.check(ok, OutsideWindow, format!("{sub}.answered_at"), || {
            format!("answered at {answered:?}, after the recovery watcher's deadline {deadline:?} (the replicas may have been restored by then)")
        });
    }
}

/// The recovery's steps after the restore, in the order they happen: each one's name, its record
/// and what its wait looks at, as the beginnings of the state the wait last saw (after the time,
/// `"<time> <state>"`; `lab/src/labs/a.rs` `observe_recovery`).
type Steps<'f> = [(&'static str, &'f TimelineStep, &'static [&'static str]); 5];

/// [`Steps`] of `f`.
fn recovery_steps(f: &Act6Facts) -> Steps<'_> {
    const NO_POD: &[&str] = &["no controller pod", "only pods act 4 saw"];
    const POD: &[&str] = &["pod ", NO_POD[0], NO_POD[1]];
    const NO_HOOK: &[&str] = &["no webhook for the policy"];
    [
        ("pod_created", &f.pod_created, NO_POD),
        ("pod_running", &f.pod_running, POD),
        ("lease_acquired", &f.lease_acquired, &["holder "]),
        ("webhook_registered", &f.webhook_registered, NO_HOOK),
        ("first_explicit_deny", &f.first_explicit_deny, &["probe "]),
    ]
}

fn step(g: &mut G, subject: &str, st: &TimelineStep) -> Option<String> {
    match st.status {
        StepStatus::Confirmed => {
            let ok = st.at.as_deref().and_then(facts::parse_rfc3339).is_some();
            g.check(ok, TimesInconsistent, subject, || {
                format!("confirmed without a valid time: {:?}", st.at)
            });
            st.at.clone()
        }
        StepStatus::NotConfirmed => {
            g.check(false, NotConfirmed, subject, || {
                let seen = st.last_seen.as_deref().unwrap_or("(nothing recorded)");
                format!("waited {} ms; last seen: {seen}", st.waited_ms)
            });
            None
        }
    }
}

/// Lab A act 6, rule by rule (each a function named after what it holds; the row "A 6" of the
/// table in [`super`]).
pub(crate) fn act6(g: &mut G) {
    let Some(f) = g.facts::<Act6Facts>(6) else {
        return;
    };
    let s = "evidence/06.json facts";
    let restored = replicas_restored_after_the_scale_down(g, s, &f);
    let steps = recovery_steps_hold(g, s, &f);
    new_pod_holds_the_lease(g, s, &f, &steps);
    durations_are_their_timestamps(g, s, &f, [&restored, &steps[1], &steps[2]]);
    if let Some(p) = &f.existing {
        super::existing_pod_survives(g, &format!("{s}.existing"), p);
    }
    act6_reads_are_its_raw_records(g, s, &f);
    deleted_configuration_never_returns(g, s, &f);
    admitted_during_scale_down_is_act5s_stored_pod(g, s, &f);
    restored_when_the_restorer_could(g, s, &f);
    if steps[3].is_some() {
        registration_after_recovery_equals_act2(g, s, &f);
    }
    probes_hold(g, s, &f, steps[4].as_deref());
}

/// The replicas were restored when their restorer could restore them, on `replicas_restored.at`
/// ([`super::bounds::CLOCK_SKEW_MS`] of slack). The watcher (act 5's healer) restores when it
/// wakes: its own record (raw `watcher-record`, `healer.json` as act 6 read it) restored them at
/// that time and, woken by its deadline, no sooner than its `deadline_at`; without that record the
/// watcher restores at act 5's `watcher.deadline_at` ([`facts::a::Restorer::Watcher`]), so no
/// sooner. The runner (the tool's own process) restores while it runs an act: act 6's restore
/// (inside act 6's span), or an earlier one its fault ledger records (raw `fault-ledger`: an entry
/// `restored` at that time). Flags [`Code::TimesInconsistent`], naming the record it contradicts.
fn restored_when_the_restorer_could(g: &mut G, s: &str, f: &Act6Facts) {
    let (restored_at, t) = (f.replicas_restored.at.as_deref(), facts::parse_rfc3339);
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    let (sub, shown) = (format!("{s}.replicas_restored.at"), restored_at);
    let shown = shown.unwrap_or("?");
    let text = |v: &Value, k: &str| v[k].as_str().map(str::to_owned);
    match (f.restored_by, restored_at) {
        (Some(facts::a::Restorer::Watcher), Some(at)) => {
            let Some(at) = t(at) else {
                return;
            };
            let record = g.evidence(6).and_then(|ev| {
                let r = super::witness::raw_record(&ev, "watcher-record")?;
                r.is_object().then(|| r.clone())
            });
            let (deadline, witness, theirs) = match &record {
                Some(r) => {
                    let deadline = text(r, "deadline_at").filter(|_| r["woke_by"] == "deadline");
                    let witness = "evidence/06.json raw[watcher-record]";
                    (deadline, witness, text(r, "restored_at"))
                }
                None => {
                    let a5 = g.facts::<Act5Facts>(5);
                    let deadline = a5.and_then(|a5| a5.watcher.deadline_at);
                    (deadline, "evidence/05.json facts.watcher.deadline_at", None)
                }
            };
            let early = deadline.as_deref().and_then(t).filter(|d| at + skew < *d);
            g.check(early.is_none(), TimesInconsistent, sub.clone(), || {
                let deadline = deadline.as_deref().unwrap_or("?");
                format!("restored by the watcher at {shown}, before its deadline {deadline} ({witness}): the watcher restores when its deadline wakes it")
            });
            if let Some(r) = &record {
                let same = theirs.as_deref().and_then(t) == Some(at);
                g.check(same || r["action"] != "restored", TimesInconsistent, sub, || {
                    let theirs = theirs.as_deref().unwrap_or("none");
                    format!("restored by the watcher at {shown}; its record ({witness}) restored at {theirs}")
                });
            }
        }
        (Some(facts::a::Restorer::Runner), at) => {
            let (Some(ev), Some(at)) = (g.evidence(6), at) else {
                return;
            };
            let in_act = t(at).zip(t(&ev.started_at));
            let in_act = in_act.is_some_and(|(a, s)| a + skew >= s);
            let ledger = super::witness::raw_record(&ev, "fault-ledger");
            let entries = ledger.and_then(|l| l["entries"].as_array());
            let mut restores = (entries.into_iter().flatten()).filter(|e| e["event"] == "restored");
            let recorded = restores.any(|e| e["at"] == at || e["detail"]["at"] == at);
            g.check(in_act || recorded, TimesInconsistent, sub, || {
                format!("restored by the runner at {at}, before act 6 began ({}), and no restore of the fault ledger (evidence/06.json raw[fault-ledger]) was at that time", ev.started_at)
            });
        }
        _ => {}
    }
}

/// Act 6's reads are the objects it kept verbatim: the previous Lease holder is
/// [`crate::derive::lease`]'s holder of the Lease read before the restore (raw `lease-before`,
/// `null` when there was none), and act 5's admitted pod and act 3's pod are their raw reads
/// (`admitted-during-scale-down`, `existing`). Flags [`Code::RawMismatch`] /
/// [`Code::ObservationMissing`].
fn act6_reads_are_its_raw_records(g: &mut G, s: &str, f: &Act6Facts) {
    let Some(ev) = g.evidence(6) else {
        return;
    };
    let (sub, what) = (format!("{s}.previous_lease_holder"), "lease-before");
    if let Some(l) = super::witness::required_raw(g, &ev, what, &sub) {
        let derived = derive::lease(l, String::new()).map(|l| l.holder);
        let (holder, at) = (&f.previous_lease_holder, super::witness::raw_at(&ev, what));
        let sources = derive::LEASE_HOLDER_SOURCES;
        super::witness::fields_are_derived(g, &sub, holder, &at, derived, sources);
    }
    let reads = [
        ("admitted-during-scale-down", &f.admitted_during_scale_down),
        ("existing", &f.existing),
    ];
    for (what, p) in reads {
        if let Some(p) = p {
            // The fact is named as the raw record, in snake case.
            let sub = format!("{s}.{}", what.replace('-', "_"));
            super::witness::pod_observation_is_its_raw_record(g, &ev, what, &sub, p);
        }
    }
}

/// A webhook configuration act 5 saw deleted does not come back with the same UID (a UID is
/// never reused): when act 5's raw list holds no configuration with act 2's UID, the
/// registration after recovery is in a new configuration object, whose UID is not act 2's.
/// Flags [`Code::UidMismatch`].
fn deleted_configuration_never_returns(g: &mut G, s: &str, f: &Act6Facts) {
    let (Some(w), Some(a2), Some(a5)) = (
        &f.webhook,
        g.facts::<facts::Act2Facts>(2),
        g.facts::<Act5Facts>(5),
    ) else {
        return;
    };
    let Some(old) = a2.webhook.configuration_uid.as_deref() else {
        return;
    };
    let items = a5.webhook_configurations["items"].as_array();
    let listed = items.is_some_and(|items| items.iter().any(|c| c["metadata"]["uid"] == old));
    if !listed {
        let ok = w.configuration_uid.as_deref() != Some(old);
        let sub = format!("{s}.webhook.configuration_uid");
        g.check(ok, UidMismatch, sub, || {
            format!("act 2's configuration {old} was gone in act 5's list, yet act 6 names it")
        });
    }
}

/// Act 5's violating pod, read after the recovery, is the pod act 5 stored: its name,
/// namespace and, when found, the UID act 5's GET found (admission does not remove existing
/// objects, `docs/labs.md` act 6). Flags [`Code::PodReplaced`] and, for an observation that
/// disagrees with itself, [`Code::RawMismatch`].
fn admitted_during_scale_down_is_act5s_stored_pod(g: &mut G, s: &str, f: &Act6Facts) {
    let Some(p) = &f.admitted_during_scale_down else {
        return;
    };
    let sub = format!("{s}.admitted_during_scale_down");
    super::witness::pod_observation_agrees_with_itself(g, &sub, p);
    let Some(a5) = g.facts::<Act5Facts>(5) else {
        return;
    };
    let r = &a5.target_bad;
    let same = (&p.name, &p.namespace) == (&r.name, &r.namespace);
    let ok = same && (!p.exists || p.uid == r.get.uid);
    g.check(ok, PodReplaced, sub, || {
        let (ns, name, uid) = (&r.namespace, &r.name, &r.get.uid);
        let (pns, pname, puid) = (&p.namespace, &p.name, &p.uid);
        format!("{pns}/{pname} uid {puid:?}; act 5 stored {ns}/{name} uid {uid:?}")
    });
}

/// The recovery's steps after the restore, walked once; returns each one's time when confirmed
/// ([`step`]). A confirmed step's `last_seen` is its wait's last check that did not yet see it: a
/// time in `[start, at]` (`start = at − waited_ms`) followed by a state that step waits on
/// ([`Steps`]). Every confirmed step's wait began at that one start
/// ([`super::bounds::STEP_START_SPREAD_MS`] for both); not replicas_restored, whose `at` is the
/// restorer's own record when the replicas were restored before act 6 began (e.g. by the watcher
/// at its deadline), but the restore, the first step, was recorded before any other: its
/// `waited_ms` is no more than any later confirmed step's. Only the orders that must hold
/// (`rules::a::recovery_order`), judged on each step's polling window, not on the two times at
/// which the polls happened to see them. Flags [`Code::TimesInconsistent`] and, for a state no
/// wait looks at, [`Code::ValueMismatch`].
fn recovery_steps_hold(g: &mut G, s: &str, f: &Act6Facts) -> [Option<String>; 5] {
    let (spread, mut starts) = (super::bounds::STEP_START_SPREAD_MS, Vec::new());
    let times = recovery_steps(f).map(|(name, st, expected)| {
        let at = step(g, &format!("{s}.{name}"), st);
        let Some(seen) = st.seen_at() else {
            return at;
        };
        let start = seen - chrono::Duration::milliseconds(st.waited_ms as i64);
        starts.push((name, start, st.waited_ms));
        let (Some(text), sub) = (st.last_seen.as_deref(), format!("{s}.{name}.last_seen")) else {
            return at;
        };
        let earliest = start - chrono::Duration::milliseconds(spread);
        let ok = st
            .last_check_before()
            .is_some_and(|t| t >= earliest && t <= seen);
        g.check(ok, TimesInconsistent, &sub, || {
            let at = &st.at;
            format!("{text:?} is not a check between the wait's start and {at:?}")
        });
        let state = text.split_once(' ').map_or("", |(_, r)| r);
        let ok = expected.iter().any(|p| state.starts_with(p));
        g.check(ok, ValueMismatch, sub, || {
            format!("{state:?} is not a state the {name} wait looks at ({expected:?})")
        });
        at
    });
    let lo = starts.iter().min_by_key(|(_, t, _)| *t);
    let hi = starts.iter().max_by_key(|(_, t, _)| *t);
    if let (Some((lo, lo_at, _)), Some((hi, hi_at, _))) = (lo, hi) {
        let ok = (*hi_at - *lo_at).num_milliseconds() <= spread;
        g.check(ok, TimesInconsistent, format!("{s}.{lo}.waited_ms/{hi}.waited_ms"), || {
            let (hi_at, lo_at) = (facts::format_rfc3339(*hi_at), facts::format_rfc3339(*lo_at));
            format!("at − waited_ms gives the wait's start {hi_at} for {hi} but {lo_at} for {lo} (at most {spread} ms apart)")
        });
    }
    let first_later = starts.iter().map(|(_, _, waited)| *waited).min();
    if let (Some(m), Some(_)) = (first_later, f.replicas_restored.seen_at()) {
        let waited = f.replicas_restored.waited_ms;
        let sub = format!("{s}.replicas_restored.waited_ms");
        g.check(waited <= m, TimesInconsistent, sub, || {
            format!(
                "the restore was recorded after {waited} ms, later than a step it causes ({m} ms)"
            )
        });
    }
    for (na, a, nb, b) in rules::a::recovery_order(f) {
        let why = rules::a::order_contradiction(a, b);
        let sub = format!("{s}.{nb}.at (after {na})");
        g.check(why.is_none(), TimesInconsistent, sub, || {
            why.unwrap_or_default()
        });
    }
    times
}

/// The replicas were restored (confirmed, who restored recorded) after act 5 scaled them down,
/// whoever restored them (the watcher restores at its deadline, or at once on
/// SIGTERM/SIGINT/SIGHUP; the runner or `heal` when they run), and the step is seen at or after
/// the restore itself. Returns the restore's time when confirmed.
fn replicas_restored_after_the_scale_down(g: &mut G, s: &str, f: &Act6Facts) -> Option<String> {
    let restored = step(g, &format!("{s}.replicas_restored"), &f.replicas_restored);
    if restored.is_some() {
        let (ok, sub) = (f.restored_by.is_some(), format!("{s}.restored_by"));
        g.check(ok, ValueMismatch, sub, || {
            "who restored the replicas is not recorded".into()
        });
    }
    let scaled = g
        .facts::<Act5Facts>(5)
        .and_then(|a5| facts::parse_rfc3339(&a5.scaled_at));
    if let (Some(seen), Some(scaled)) = (f.replicas_restored.seen_at(), scaled) {
        g.check(seen >= scaled, TimesInconsistent, format!("{s}.replicas_restored.at"), || {
            let (at, scaled) = (&f.replicas_restored.at, facts::format_rfc3339(scaled));
            format!("the replicas were seen restored at {at:?}, before act 5 scaled them down at {scaled}")
        });
    }
    restored
}

/// The new pod is a pod of act 1's controller Deployment (in its namespace, named
/// `<deployment>-<replicaset hash>-<suffix>`) that agrees with itself, holds the Lease and is none
/// of the pods act 4 recorded; read after it was seen Running (and holding the Lease) it exists,
/// and a pod's phase never goes back to Pending (Pending → Running → Succeeded/Failed).
fn new_pod_holds_the_lease(g: &mut G, s: &str, f: &Act6Facts, steps: &[Option<String>; 5]) {
    let [created, running, lease, ..] = steps;
    let Some(p) = &f.new_pod else {
        if created.is_some() {
            g.check(false, FactsInvalid, format!("{s}.new_pod"), || {
                "pod_created is confirmed but new_pod is missing".into()
            });
        }
        return;
    };
    super::witness::pod_observation_agrees_with_itself(g, &format!("{s}.new_pod"), p);
    // Read at or after the time `x` the step was seen.
    let read = facts::parse_rfc3339(&p.at);
    let seen = |x: &Option<String>| x.as_deref().and_then(facts::parse_rfc3339);
    let read_after = |x: &Option<String>| matches!((seen(x), read), (Some(t), Some(r)) if r >= t);
    let (name, at) = (&p.name, &p.at);
    if read_after(running) || read_after(lease) {
        g.check(p.exists, ValueMismatch, format!("{s}.new_pod.exists"), || {
            format!("the new pod {name} was not found at {at}, after it was seen Running or holding the Lease")
        });
    }
    if read_after(running) {
        let ok = p.exists && p.phase.as_deref() != Some("Pending");
        g.check(ok, ValueMismatch, format!("{s}.new_pod.phase"), || {
            let phase = &p.phase;
            format!("phase {phase:?} at {at}, after pod_running was confirmed at {running:?}")
        });
    }
    if lease.is_some() {
        let holder = f.lease_holder.as_deref();
        let rows = [("lease_holder", Some(name.as_str()), holder)];
        fields_are(g, ValueMismatch, s, rows);
    }
    if let Some(a4) = g.facts::<Act4Facts>(4) {
        let old = a4.pods.iter().any(|o| o.uid.is_some() && o.uid == p.uid);
        g.check(!old, ValueMismatch, format!("{s}.new_pod.uid"), || {
            "the new pod has an old pod's UID".into()
        });
    }
    if let Some(a1) = g.facts::<facts::Act1Facts>(1) {
        let pod = (p.namespace.as_str(), p.name.as_str());
        super::pod_of_the_deployment(g, format!("{s}.new_pod"), pod, &a1.controller_deployment);
    }
}

/// `leader_takeover_ms` and `lease_after_restore_ms` are the differences of their timestamps
/// ([`super::bounds::DERIVED_MS_TOLERANCE`]); the Lease is taken after the restore and within the
/// act's recovery wait ([`super::bounds::RECOVERY_MS`]). `at`: when the restore, `pod_running`
/// and `lease_acquired` were seen.
fn durations_are_their_timestamps(g: &mut G, s: &str, f: &Act6Facts, at: [&Option<String>; 3]) {
    let [restored, running, lease] = at.map(Option::as_deref);
    let tolerance = super::bounds::DERIVED_MS_TOLERANCE;
    if let Some(measured) = ms_between(running, lease) {
        let recorded = f.leader_takeover_ms.map(|m| m as i64);
        let ok = recorded.is_some_and(|m| (m - measured).abs() <= tolerance);
        let sub = format!("{s}.leader_takeover_ms");
        g.check(ok, TimesInconsistent, sub, || {
            format!("recorded {recorded:?}, timestamps give {measured} ms")
        });
    }
    if let (Some(measured), Some(ms)) = (ms_between(restored, lease), f.lease_after_restore_ms) {
        let sub = format!("{s}.lease_after_restore_ms");
        let ok = (measured - ms as i64).abs() <= tolerance;
        g.check(ok, TimesInconsistent, &sub, || {
            format!("recorded {ms}, timestamps give {measured} ms")
        });
        let hi = super::bounds::RECOVERY_MS as i64;
        g.check((0..=hi).contains(&measured), OutsideWindow, sub, || {
            format!("Lease taken {measured} ms after the restore; the act waits [0, {hi}] ms (bounds::RECOVERY_MS)")
        });
    }
}

/// `to − from` in ms, for two RFC 3339 timestamps; `None` when either is absent or does not parse.
fn ms_between(from: Option<&str>, to: Option<&str>) -> Option<i64> {
    let t = |x: Option<&str>| x.and_then(facts::parse_rfc3339);
    Some((t(to)? - t(from)?).num_milliseconds())
}

/// The registration read after the recovery is act 2's (Kyverno registers the same policy's
/// webhook again; the configuration object may be a new one, so its UID is not compared), read
/// when the step `webhook_registered` saw it.
fn registration_after_recovery_equals_act2(g: &mut G, s: &str, f: &Act6Facts) {
    match (&f.webhook, g.facts::<facts::Act2Facts>(2)) {
        (Some(w), Some(a2)) => {
            let new = super::SameRegistration::NewConfigurationObject;
            super::registration_equals(g, &format!("{s}.webhook"), w, &a2.webhook, new);
            // A configuration object, new or not, has a UID (held across acts by
            // `witness::one_uid_one_object`).
            let uid = w.configuration_uid.as_deref();
            let sub = format!("{s}.webhook.configuration_uid");
            g.check(uid.is_some_and(super::is_uid), UidMismatch, sub, || {
                format!("expected the configuration's UID, found {uid:?}")
            });
            let seen = f.webhook_registered.at.as_deref();
            let rows = [("webhook.observed_at", seen, Some(w.observed_at.as_str()))];
            fields_are(g, TimesInconsistent, s, rows);
        }
        (None, _) => {
            g.check(false, RegistrationMissing, format!("{s}.webhook"), || {
                "registered, but no registration recorded".into()
            });
        }
        _ => {}
    }
}

/// What a deny probe may meet while the webhook recovers.
const PROBE_ANSWERS: [Outcome; 7] = [
    Outcome::ExplicitDeny,
    Outcome::DryRunAdmitted,
    Outcome::WebhookTimeout,
    Outcome::ConnectionRefused,
    Outcome::NoEndpoints,
    Outcome::DnsError,
    Outcome::OtherError,
];

/// The probes act 6 recorded, walked once. Each is a server dry-run of a violating pod (no label,
/// the target namespace) whose record agrees with itself ([`G::request`]) and whose deny or call
/// failure names the policy's own webhook as act 2 recorded it (Kyverno re-registers the same
/// one), sent after the previous probe was answered. Once a probe's answer shows the API server
/// called the policy's webhook (a deny or a failed call), the registration is in force: the Fail
/// registration is never removed again in act 6, so no later violating probe is admitted
/// ([`super::violating_pod_never_admitted_under_fail`]). The probes are the requests act 6 kept
/// verbatim, one raw `request:*` record per probe (`request:deny-probe-dry-run`), the same names
/// in the same order: a probe left out of the facts is one the raw records still hold
/// ([`Code::RawMismatch`]). The step `first_explicit_deny`, confirmed at `denied`, is the last
/// probe, an explicit deny answered at that time.
fn probes_hold(g: &mut G, s: &str, f: &Act6Facts, denied: Option<&str>) {
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    let failed = |r: &RequestRecord| r.message.as_deref().and_then(parse_call_failure).is_some();
    let (mut previous, mut called) = (None::<&RequestRecord>, false);
    for (i, r) in f.deny_probes.iter().enumerate() {
        let sub = format!("{s}.deny_probes[{i}]");
        if let Some(h) = &hook {
            g.named_webhook(&sub, r, h);
        }
        g.request(&sub, r, &PROBE_ANSWERS);
        request_is_the_pod_meant(g, &sub, r, Meant::PROBE);
        if let Some(p) = previous {
            g.times_ordered(&format!("{sub}.sent_at"), &p.answered_at, &r.sent_at);
        }
        previous = Some(r);
        called |= r.outcome == Outcome::ExplicitDeny || failed(r);
        if called {
            super::violating_pod_never_admitted_under_fail(g, &sub, r);
        }
    }
    if let Some(ev) = g.evidence(6) {
        let probe = |r: &&Value| r["what"] == "request:deny-probe-dry-run";
        let probes = ev.raw.iter().filter(probe);
        let raw: Vec<&str> = probes.filter_map(|r| r["data"]["name"].as_str()).collect();
        let recorded: Vec<&str> = f.deny_probes.iter().map(|p| p.name.as_str()).collect();
        let sub = format!("{s}.deny_probes");
        g.check(raw == recorded, RawMismatch, sub, || {
            format!("recorded probes {recorded:?}; the raw requests are {raw:?}")
        });
    }
    if let Some(d) = denied {
        let last = f.deny_probes.last();
        let ok = last.is_some_and(|r| r.outcome == Outcome::ExplicitDeny && r.answered_at == d);
        let sub = format!("{s}.first_explicit_deny");
        g.check(ok, ValueMismatch, sub, || {
            let last = last.map(|r| (r.outcome.as_str(), r.answered_at.as_str()));
            format!("confirmed at {d}, but the last probe is {last:?}")
        });
    }
}

pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let s = "evidence/07.json facts";
    // Two server dry-runs: the labelled pod admitted, the violating one denied.
    let runs = [
        (&f.good, "good", Outcome::DryRunAdmitted, true),
        (&f.bad, "bad", Outcome::ExplicitDeny, false),
    ];
    for (r, sub, expect, labelled) in runs {
        let sub = format!("{s}.{sub}");
        g.request(&sub, r, &[expect]);
        request_is_the_pod_meant(g, &sub, r, Meant::dry_run(labelled));
    }
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        g.named_webhook(&format!("{s}.bad"), &f.bad, &a2.webhook);
    }
    let e = &f.good_response;
    let echoed = [
        ("kind", "Pod", &e.kind),
        ("name", f.good.name.as_str(), &e.name),
        ("namespace", f.good.namespace.as_str(), &e.namespace),
    ];
    let sub = format!("{s}.good_response");
    let rows = echoed.map(|(key, sent, echo)| (key, sent, echo.as_str()));
    fields_are(g, RawMismatch, &sub, rows);
    let rows = [("labels", &f.good.labels, &e.labels)];
    fields_are(g, RawMismatch, &sub, rows);
    let raw_labels = f.good.raw_response.pointer("/metadata/labels");
    let raw_labels: Option<std::collections::BTreeMap<String, String>> =
        raw_labels.and_then(|l| serde_json::from_value(l.clone()).ok());
    let rows = [("labels (raw)", Some(&e.labels), raw_labels.as_ref())];
    fields_are(g, RawMismatch, &sub, rows);
    let effects = f.side_effects.as_str();
    let ok = matches!(effects, "None" | "NoneOnDryRun");
    g.check(ok, ValueMismatch, format!("{s}.side_effects"), || {
        format!("expected None or NoneOnDryRun, found {effects:?}")
    });
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        let (act2, named) = (a2.webhook.name.as_str(), f.webhook_name.as_str());
        fields_are(g, ValueMismatch, s, [("webhook_name", act2, named)]);
        // The sideEffects the dry-run relied on are the registration's (act 2's).
        let effects = [("side_effects", a2.webhook.side_effects.as_str(), effects)];
        fields_are(g, RegistrationChanged, s, effects);
    }
}

pub(crate) fn act8(g: &mut G) {
    // `rules::a::evidence_words`: all six recovery steps confirmed, no cause seen after its
    // effect, the dry-run echo, the policy UID, …
    super::report_claims_are_the_evidence_words::<inputs::ReportA, _>(g, |g| {
        let (f2, f3, f5) = (g.facts(2), g.facts(3), g.facts(5));
        let (f6, f7) = (g.facts(6), g.facts(7));
        Some(rules::a::evidence_words(&f2?, &f3?, &f5?, &f6?, &f7?))
    });
}
