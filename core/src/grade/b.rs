//! Lab B graders, acts 4-8 (freeze the controller process; failurePolicy Fail vs Ignore).

use super::{Code, G, act8_facts, bounds, check_webhook, ev_name, has_env_label, policy_uid};
use crate::evidence::Outcome;
use crate::facts::{self, b::*};
use crate::inputs::{self, Context, InputFile};

pub(crate) fn act4(g: &mut G) {
    let Some(f) = g.facts::<Act4Facts>(4) else {
        return;
    };
    let s = "evidence/04.json facts";
    if let Some(a1) = super::investigation_against_its_plan::<inputs::FreezePlan>(
        g,
        s,
        &f.node_uid,
        &f.deployment_uid,
    ) {
        // The frozen process's pod is one of act 1's Deployment's pods: in its namespace,
        // named `<deployment>-<replicaset hash>-<suffix>`.
        let d = &a1.controller_deployment;
        g.check(
            Some(f.pod_namespace.as_str()) == d.namespace.as_deref()
                && f.pod_name.starts_with(&format!("{}-", d.name)),
            Code::ValueMismatch,
            format!("{s}.pod_name"),
            || {
                format!(
                    "pod {}/{} is not a pod of act 1's Deployment {:?}/{}",
                    f.pod_namespace, f.pod_name, d.namespace, d.name
                )
            },
        );
    }
    let id = &f.identity;
    g.check(
        id.pid > 1,
        Code::ValueMismatch,
        format!("{s}.identity.pid"),
        || format!("expected a PID > 1, found {}", id.pid),
    );
    g.check(
        id.pid_start_time_ticks > 0,
        Code::ValueMismatch,
        format!("{s}.identity.pid_start_time_ticks"),
        || "expected the start time from /proc/<pid>/stat, found 0".into(),
    );
    g.check(
        !id.container_id.is_empty(),
        Code::ValueMismatch,
        format!("{s}.identity.container_id"),
        || "expected the CRI container ID, found nothing".into(),
    );
    g.check(
        super::is_uid(&id.pod_uid),
        Code::UidMismatch,
        format!("{s}.identity.pod_uid"),
        || format!("expected a pod UID, found {:?}", id.pod_uid),
    );
    g.check(
        f.process_state != "T",
        Code::ProcessStillStopped,
        format!("{s}.process_state"),
        || "act 4 only investigates; the process was found stopped".into(),
    );
    super::witness::process_state_is_a_proc_state(
        g,
        &format!("{s}.process_state"),
        &f.process_state,
    );
    if let Some(ev) = g.evidence(4) {
        super::witness::identity_is_the_cri_container(g, &ev, &f);
    }
}

/// Checks one freeze run, rule by rule (each a function named after what it holds; the rows
/// "B 5, 6" of the table in [`super`]). `ignore`: failurePolicy Ignore (target requests are
/// stored after the timeout) instead of Fail (they time out); `hook`: the registration the act
/// relies on (act 2's for act 5, act 6's own for act 6).
fn freeze_run(
    g: &mut G,
    act: u8,
    run: &FreezeRun,
    ignore: bool,
    hook: Option<&facts::WebhookFacts>,
) {
    let s = format!("{} facts", ev_name(act));
    frozen_process_is_the_identified_one(g, &s, act, &run.freeze);
    freeze_window_is_the_planned_one(g, &s, act, &run.freeze);
    process_stopped_only_during_freeze(g, &s, &run.freeze);
    registration_during_freeze_is_the_recorded_one(g, &s, run, hook);
    requests_during_freeze_show_the_failure_policy(g, &s, run, ignore, hook);
    requests_after_resume_end_in_the_first_deny(g, &s, run, ignore, hook);
    super::existing_pod_survives(g, &format!("{s}.existing"), &run.existing);
    if let Some(ev) = g.evidence(act) {
        freeze_window_is_the_ledger(g, &s, &ev, &run.freeze, false);
    }
    restart_count_agrees_with_the_container(g, &s, run);
    first_deny_after_resume_is_timed_from_the_resume(g, &s, run);
}

/// Act 5 freezes the process act 4 identified. Act 6 freezes the process found after act 5:
/// Kyverno may have restarted after the first freeze (a 20 s stop outlasts its 12 s leader
/// Lease), which is observed and recorded, not a defect.
fn frozen_process_is_the_identified_one(g: &mut G, s: &str, act: u8, w: &FreezeWindow) {
    let expected_identity = if act == 6 {
        g.facts::<Act5Facts>(5)
            .and_then(|a5| a5.identity_after)
            .or_else(|| g.facts::<Act4Facts>(4).map(|a4| a4.identity))
    } else {
        g.facts::<Act4Facts>(4).map(|a4| a4.identity)
    };
    if let Some(expected) = expected_identity {
        g.expect_eq(
            Code::IdentityChanged,
            format!("{s}.freeze.identity"),
            &expected,
            &w.identity,
        );
    }
}

/// The freeze's times are ordered (armed ≤ frozen ≤ resumed), act 5 froze for the planned 20 s,
/// and the watchdog resumed at its deadline, `watchdog_armed_at + resume_after_sec`
/// ([`bounds::watchdog_window_ms`]): not before (a shorter freeze than planned), not after the
/// runner's grace. A resume by the runner itself only has the upper bound.
pub(super) fn freeze_window_is_the_planned_one(g: &mut G, s: &str, act: u8, w: &FreezeWindow) {
    g.times_ordered(
        &format!("{s}.freeze.watchdog_armed_at"),
        &w.watchdog_armed_at,
        &w.frozen_at,
    );
    g.times_ordered(
        &format!("{s}.freeze.frozen_at"),
        &w.frozen_at,
        &w.resumed_at,
    );
    if act == 5 {
        g.expect_eq(
            Code::ValueMismatch,
            format!("{s}.freeze.resume_after_sec"),
            &20u32,
            &w.resume_after_sec,
        );
    }
    if let (Some(armed), Some(r)) = (
        facts::parse_rfc3339(&w.watchdog_armed_at),
        facts::parse_rfc3339(&w.resumed_at),
    ) {
        let ms = (r - armed).num_milliseconds();
        let (lo, hi) = bounds::watchdog_window_ms(w.resume_after_sec);
        let lo = if w.resumed_by == Resumer::Watchdog {
            lo
        } else {
            i64::MIN
        };
        g.check(
            lo <= ms && ms <= hi,
            Code::TimesInconsistent,
            format!("{s}.freeze.resumed_at"),
            || {
                format!(
                    "resumed {ms} ms after the watchdog was armed; its {} s deadline allows [{lo}, {hi}] ms (resumed by {:?})",
                    w.resume_after_sec, w.resumed_by
                )
            },
        );
    }
}

/// The process state read during the freeze is the observation that the process was stopped
/// (`T` during, not `T` after): missing is a finding, not a pass.
pub(super) fn process_stopped_only_during_freeze(g: &mut G, s: &str, w: &FreezeWindow) {
    match &w.state_during {
        Some(st) => {
            g.expect_eq(
                Code::ValueMismatch,
                format!("{s}.freeze.state_during"),
                "T",
                st.as_str(),
            );
        }
        None => {
            g.check(
                false,
                Code::ObservationMissing,
                format!("{s}.freeze.state_during"),
                || "the process state was not read during the freeze".into(),
            );
        }
    }
    g.check(
        w.state_after != "T",
        Code::ProcessStillStopped,
        format!("{s}.freeze.state_after"),
        || format!("state after resume is {:?}", w.state_after),
    );
    super::witness::process_state_is_a_proc_state(
        g,
        &format!("{s}.freeze.state_after"),
        &w.state_after,
    );
}

/// The registration read during the fault is present, its claim agrees with the snapshot, its
/// scope guards the lab's pods, and it is the one the earlier act recorded (act 2 for act 5, act
/// 6's own after the switch): same webhook, failure policy, timeout, path and namespaceSelector;
/// `timeout_seconds` (T, never a constant) is the snapshot's and the recorded registration's.
fn registration_during_freeze_is_the_recorded_one(
    g: &mut G,
    s: &str,
    run: &FreezeRun,
    hook: Option<&facts::WebhookFacts>,
) {
    g.check(
        run.registration_present_during_freeze,
        Code::RegistrationMissing,
        format!("{s}.registration_present_during_freeze"),
        || "the webhook registration must stay during a freeze".into(),
    );
    g.check(
        run.registration_present_during_freeze != run.registration_snapshot.is_null(),
        Code::RegistrationClaimContradicted,
        format!("{s}.registration_snapshot"),
        || {
            format!(
                "present={} but snapshot is {}",
                run.registration_present_during_freeze,
                super::abbreviate(&run.registration_snapshot)
            )
        },
    );
    let snap = &run.registration_snapshot;
    if !snap.is_null() {
        let snap_hook = snapshot_webhook(snap);
        super::registration_scope(
            g,
            &format!("{s}.registration_snapshot"),
            snap_hook.0.unwrap_or(""),
            &super::Scope::of_raw(snap),
        );
        if let Some(h) = hook {
            snapshot_is_the_recorded_registration(g, s, snap, h);
        }
        g.check(
            snap_hook.2 == Some(run.timeout_seconds),
            Code::RegistrationClaimContradicted,
            format!("{s}.timeout_seconds"),
            || {
                format!(
                    "recorded {}, the snapshot read during the freeze says {:?}",
                    run.timeout_seconds, snap_hook.2
                )
            },
        );
    }
    if let Some(h) = hook {
        g.expect_eq(
            Code::RegistrationChanged,
            format!("{s}.timeout_seconds"),
            &h.timeout_seconds,
            &run.timeout_seconds,
        );
    }
}

/// The registration snapshot read during the freeze (raw, camelCase) is `h`, the registration
/// the earlier act recorded: the same name, failure policy, timeout, client config, selectors,
/// match conditions, rules, sideEffects and matchPolicy. Flags [`Code::RegistrationChanged`].
pub(super) fn snapshot_is_the_recorded_registration(
    g: &mut G,
    s: &str,
    snap: &serde_json::Value,
    h: &facts::WebhookFacts,
) {
    let snap_hook = snapshot_webhook(snap);
    const NULL: &serde_json::Value = &serde_json::Value::Null;
    let raw = |k: &str| snap.get(k).unwrap_or(NULL);
    let recorded = (
        (
            h.name.as_str(),
            h.failure_policy.as_str(),
            Some(h.timeout_seconds),
        ),
        h.service.as_ref().map(|x| {
            (
                Some(x.namespace.as_str()),
                Some(x.name.as_str()),
                x.path.as_deref(),
                Some(i64::from(x.port)),
            )
        }),
        (
            &h.namespace_selector,
            &h.object_selector,
            &h.match_conditions,
            &h.rules,
        ),
        (Some(h.side_effects.as_str()), h.match_policy.as_deref()),
    );
    let during = (
        (
            snap_hook.0.unwrap_or(""),
            snap_hook.1.unwrap_or(""),
            snap_hook.2,
        ),
        snap.pointer("/clientConfig/service").map(|x| {
            (
                x.get("namespace").and_then(|v| v.as_str()),
                x.get("name").and_then(|v| v.as_str()),
                x.get("path").and_then(|v| v.as_str()),
                x.get("port").and_then(|v| v.as_i64()),
            )
        }),
        (
            raw("namespaceSelector"),
            raw("objectSelector"),
            raw("matchConditions"),
            raw("rules"),
        ),
        (raw("sideEffects").as_str(), raw("matchPolicy").as_str()),
    );
    g.check(
        recorded == during,
        Code::RegistrationChanged,
        format!("{s}.registration_snapshot"),
        || {
            format!(
                "during the freeze: {}; recorded before: {}",
                super::abbreviate(snap),
                super::abbreviate(&serde_json::to_value(h).unwrap_or_default())
            )
        },
    );
}

/// During the freeze the target requests (a labelled and a violating pod, in the target
/// namespace) show the failure policy: time out after T under Fail, stored after waiting T under
/// Ignore, naming the registration's webhook; the control request is stored; all are sent and
/// answered inside the freeze.
fn requests_during_freeze_show_the_failure_policy(
    g: &mut G,
    s: &str,
    run: &FreezeRun,
    ignore: bool,
    hook: Option<&facts::WebhookFacts>,
) {
    let w = &run.freeze;
    let t = run.timeout_seconds;
    let target_expect = if ignore {
        Outcome::Stored
    } else {
        Outcome::WebhookTimeout
    };
    for (name, r, label) in [
        ("target_good", &run.target_good, true),
        ("target_bad", &run.target_bad, false),
    ] {
        let sub = format!("{s}.{name}");
        g.request_timed(&sub, r, &[target_expect], t, ignore);
        if !ignore {
            super::violating_pod_never_admitted_under_fail(g, &sub, r);
        }
        if let Some(h) = hook {
            g.named_webhook(&sub, r, h);
        }
        g.expect_eq(
            Code::ValueMismatch,
            format!("{sub}.namespace"),
            "kca-webhook-target",
            r.namespace.as_str(),
        );
        g.expect_eq(
            Code::ValueMismatch,
            format!("{sub}.labels"),
            &label,
            &has_env_label(r),
        );
        g.expect_eq(
            Code::ValueMismatch,
            format!("{sub}.dry_run"),
            &false,
            &r.dry_run,
        );
        g.within(&sub, "sent_at", &r.sent_at, &w.frozen_at, &w.resumed_at);
        g.within(
            &sub,
            "answered_at",
            &r.answered_at,
            &w.frozen_at,
            &w.resumed_at,
        );
    }
    let sub = format!("{s}.control");
    g.request(&sub, &run.control, &[Outcome::Stored]);
    g.expect_eq(
        Code::ValueMismatch,
        format!("{sub}.namespace"),
        "kca-webhook-control",
        run.control.namespace.as_str(),
    );
    g.within(
        &sub,
        "sent_at",
        &run.control.sent_at,
        &w.frozen_at,
        &w.resumed_at,
    );
}

/// After the resume the act sends violating pods until the first explicit deny: intermediate
/// outcomes while Kyverno recovers, each sent after the resume and naming the registration's
/// webhook; under Fail none is admitted (the act's own rule,
/// [`super::violating_pod_never_admitted_under_fail`], whatever the metrics say); the last one is
/// the first explicit deny, itself a violating pod.
fn requests_after_resume_end_in_the_first_deny(
    g: &mut G,
    s: &str,
    run: &FreezeRun,
    ignore: bool,
    hook: Option<&facts::WebhookFacts>,
) {
    let w = &run.freeze;
    for (i, r) in run.after_resume.iter().enumerate() {
        let sub = format!("{s}.after_resume[{i}]");
        g.request(
            &sub,
            r,
            &[
                Outcome::ExplicitDeny,
                Outcome::WebhookTimeout,
                Outcome::ConnectionRefused,
                Outcome::NoEndpoints,
                Outcome::DnsError,
                Outcome::Stored,
                Outcome::OtherError,
            ],
        );
        if !ignore {
            super::violating_pod_never_admitted_under_fail(g, &sub, r);
        }
        violating_pod_in_the_target_namespace(g, &sub, r);
        g.times_ordered(&sub, &w.resumed_at, &r.sent_at);
        if let Some(h) = hook {
            g.named_webhook(&sub, r, h);
        }
    }
    match &run.first_explicit_deny {
        Some(d) => {
            let sub = format!("{s}.first_explicit_deny");
            g.request(&sub, d, &[Outcome::ExplicitDeny]);
            violating_pod_in_the_target_namespace(g, &sub, d);
            if let Some(h) = hook {
                g.named_webhook(&sub, d, h);
            }
            g.expect_eq(
                Code::ValueMismatch,
                format!("{sub}.labels"),
                &false,
                &has_env_label(d),
            );
            g.times_ordered(&sub, &w.resumed_at, &d.sent_at);
            let last = run.after_resume.last().map(|r| r.name.as_str());
            g.expect_eq(
                Code::ValueMismatch,
                format!("{sub}.name"),
                Some(d.name.as_str()),
                last,
            );
        }
        None => {
            g.check(
                false,
                Code::NotConfirmed,
                format!("{s}.first_explicit_deny"),
                || "no explicit deny after resume within the bound".into(),
            );
        }
    }
}

/// A request the act sends to see the policy's verdict is a real (not dry-run) create of a pod
/// without the policy's label in the target namespace (`docs/labs.md`, lab B).
pub(super) fn violating_pod_in_the_target_namespace(
    g: &mut G,
    sub: &str,
    r: &crate::evidence::RequestRecord,
) {
    g.expect_eq(
        Code::ValueMismatch,
        format!("{sub}.namespace"),
        crate::rules::common::TARGET_NAMESPACE,
        r.namespace.as_str(),
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{sub}.labels"),
        &false,
        &has_env_label(r),
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{sub}.dry_run"),
        &false,
        &r.dry_run,
    );
}

/// Whether the controller restarted is an observation, recorded either way; what must hold is
/// that the count never goes down and that it agrees with the container seen after the fault
/// (kubelet starts a new container, with a new ID, for every restart). The same container is
/// the same process: the frozen process is the container's main process, which cannot be
/// replaced without the container ending, so the same container ID with another PID, start
/// time or pod contradicts itself.
fn restart_count_agrees_with_the_container(g: &mut G, s: &str, run: &FreezeRun) {
    let w = &run.freeze;
    g.check(
        run.restart_count_after >= run.restart_count_before,
        Code::RestartContradicted,
        format!("{s}.restart_count_after"),
        || {
            format!(
                "expected at least {} (the count before the freeze), found {}",
                run.restart_count_before, run.restart_count_after
            )
        },
    );
    if let Some(after) = &run.identity_after {
        let restarted = run.restart_count_after > run.restart_count_before;
        let new_container = after.container_id != w.identity.container_id;
        g.check(
            restarted == new_container,
            Code::RestartContradicted,
            format!("{s}.identity_after.container_id"),
            || {
                format!(
                    "restart count {} -> {} but container {} -> {}",
                    run.restart_count_before,
                    run.restart_count_after,
                    w.identity.container_id,
                    after.container_id
                )
            },
        );
        g.check(
            new_container || after == &w.identity,
            Code::IdentityChanged,
            format!("{s}.identity_after"),
            || {
                format!(
                    "container {} is the frozen one, but the process after the fault is {} (frozen: {})",
                    after.container_id,
                    super::abbreviate(&serde_json::to_value(after).unwrap_or_default()),
                    super::abbreviate(&serde_json::to_value(&w.identity).unwrap_or_default())
                )
            },
        );
    }
}

/// `first_deny_after_resume_ms` is the difference of its two timestamps
/// ([`bounds::DERIVED_MS_TOLERANCE`]) and inside the act's bounded wait
/// ([`bounds::DENY_AFTER_RESUME_MS`]).
fn first_deny_after_resume_is_timed_from_the_resume(g: &mut G, s: &str, run: &FreezeRun) {
    let w = &run.freeze;
    if let (Some(ms), Some(d)) = (run.first_deny_after_resume_ms, &run.first_explicit_deny) {
        let measured = match (
            facts::parse_rfc3339(&w.resumed_at),
            facts::parse_rfc3339(&d.answered_at),
        ) {
            (Some(r), Some(a)) => Some((a - r).num_milliseconds()),
            _ => None,
        };
        g.check(
            measured.is_some_and(|m| (m - ms as i64).abs() <= bounds::DERIVED_MS_TOLERANCE),
            Code::TimesInconsistent,
            format!("{s}.first_deny_after_resume_ms"),
            || format!("recorded {ms}, timestamps give {measured:?}"),
        );
        g.check(
            measured.is_some_and(|m| (0..=bounds::DENY_AFTER_RESUME_MS as i64).contains(&m)),
            Code::OutsideWindow,
            format!("{s}.first_deny_after_resume_ms"),
            || {
                format!(
                    "first deny {measured:?} ms after resume; the act waits [0, {}] ms (bounds::DENY_AFTER_RESUME_MS)",
                    bounds::DENY_AFTER_RESUME_MS
                )
            },
        );
    }
}

pub(crate) fn act5(g: &mut G) {
    let Some(f) = g.facts::<Act5Facts>(5) else {
        return;
    };
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    freeze_run(g, 5, &f, false, hook.as_ref());
}

pub(crate) fn act6(g: &mut G) {
    let Some(f) = g.facts::<Act6Facts>(6) else {
        return;
    };
    let s = "evidence/06.json facts";
    let policy = g.required_input_value(InputFile::Policy);
    g.input::<inputs::PolicyIgnore>(&Context {
        policy,
        ..Default::default()
    });
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        let uid = policy_uid(&a2);
        g.expect_eq(
            Code::UidMismatch,
            format!("{s}.policy_uid_before"),
            uid.as_deref(),
            Some(f.policy_uid_before.as_str()),
        );
        let now = f.policy.pointer("/metadata/uid").and_then(|v| v.as_str());
        g.expect_eq(
            Code::UidMismatch,
            format!("{s}.policy.metadata.uid"),
            uid.as_deref(),
            now,
        );
    }
    let fp = f
        .policy
        .pointer("/spec/failurePolicy")
        .and_then(|v| v.as_str());
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.policy.spec.failurePolicy"),
        Some("Ignore"),
        fp,
    );
    check_webhook(g, &format!("{s}.webhook"), &f.webhook, "Ignore");
    super::stored_policy_is_the_applied_input(
        g,
        &format!("{s}.policy"),
        &f.policy,
        InputFile::PolicyIgnore,
    );
    if let Some(ev) = g.evidence(6) {
        super::witness::stored_policy_is_the_raw_read(g, &ev, &format!("{s}.policy"), &f.policy);
        let what = "webhook-configuration-ignore";
        super::witness::registration_is_derived_from(
            g,
            &ev,
            what,
            &format!("{s}.webhook"),
            &f.webhook,
        );
    }
    g.request(
        &format!("{s}.healthy_bad"),
        &f.healthy_bad,
        &[Outcome::ExplicitDeny],
    );
    violating_pod_in_the_target_namespace(g, &format!("{s}.healthy_bad"), &f.healthy_bad);
    g.times_ordered(
        &format!("{s}.healthy_bad"),
        &f.healthy_bad.answered_at,
        &f.run.freeze.frozen_at,
    );
    g.named_webhook(&format!("{s}.healthy_bad"), &f.healthy_bad, &f.webhook);
    // The Ignore registration is the same policy's webhook as act 2's, switched to Ignore.
    if let Some(a2) = g.facts::<facts::Act2Facts>(2) {
        super::registration_equals(
            g,
            &format!("{s}.webhook"),
            &f.webhook,
            &a2.webhook,
            super::SameRegistration::SwitchedToIgnore,
        );
    }
    freeze_run(g, 6, &f.run, true, Some(&f.webhook));
}

pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let s = "evidence/07.json facts";
    let a2 = g.facts::<facts::Act2Facts>(2);
    let uid = a2.as_ref().and_then(policy_uid);
    let mut ctx = Context {
        policy_uid: uid.clone(),
        ..Default::default()
    };
    ctx.evidence_digests = g.digests().into_iter().filter(|(a, _)| *a == 6).collect();
    if !ctx.evidence_digests.contains_key(&6) {
        g.evidence(6);
    }
    g.input::<inputs::Recovery>(&ctx);
    g.expect_eq(
        Code::UidMismatch,
        format!("{s}.policy_uid"),
        uid.as_deref(),
        Some(f.policy_uid.as_str()),
    );
    g.expect_eq(
        Code::ValueMismatch,
        format!("{s}.webhook.failure_policy"),
        "Ignore",
        f.webhook.failure_policy.as_str(),
    );
    g.request(
        &format!("{s}.healthy_bad"),
        &f.healthy_bad,
        &[Outcome::ExplicitDeny],
    );
    violating_pod_in_the_target_namespace(g, &format!("{s}.healthy_bad"), &f.healthy_bad);
    g.named_webhook(&format!("{s}.healthy_bad"), &f.healthy_bad, &f.webhook);
    super::registration_scope(
        g,
        &format!("{s}.webhook"),
        &f.webhook.name,
        &super::Scope::of_facts(&f.webhook),
    );
    // After the recovery the registration is act 6's Ignore one, unchanged.
    if let Some(a6) = g.facts::<Act6Facts>(6) {
        super::registration_equals(
            g,
            &format!("{s}.webhook"),
            &f.webhook,
            &a6.webhook,
            super::SameRegistration::Identical,
        );
    }
    if let Some(ev) = g.evidence(7) {
        let what = "webhook-configuration";
        super::witness::registration_is_derived_from(
            g,
            &ev,
            what,
            &format!("{s}.webhook"),
            &f.webhook,
        );
    }
    super::existing_pod_survives(g, &format!("{s}.existing"), &f.existing);
}

pub(crate) fn act8(g: &mut G) {
    act8_facts(g);
    let ctx = g.report_context(5..=7);
    g.input::<inputs::ReportB>(&ctx);
    // Each claim of the report must be what the evidence shows, decided by the one rule act 8
    // also uses (`rules::b::report_expectations`), so the act and its grader cannot disagree.
    let report = g.required_input_value(InputFile::ReportB);
    let (Some(report), Some(a3), Some(a5), Some(a6), Some(a7)) = (
        report,
        g.facts::<facts::Act3Facts>(3),
        g.facts::<Act5Facts>(5),
        g.facts::<Act6Facts>(6),
        g.facts::<Act7Facts>(7),
    ) else {
        return;
    };
    for (field, expected) in crate::rules::b::report_expectations(&a3, &a5, &a6, &a7) {
        super::report_claim(g, &report, field, &expected);
    }
}

/// (name, failurePolicy, timeoutSeconds, service path) of a webhook entry read verbatim from a
/// ValidatingWebhookConfiguration (the freeze's `registration_snapshot`).
fn snapshot_webhook(
    v: &serde_json::Value,
) -> (Option<&str>, Option<&str>, Option<u32>, Option<&str>) {
    (
        v.get("name").and_then(|x| x.as_str()),
        v.get("failurePolicy").and_then(|x| x.as_str()),
        v.get("timeoutSeconds")
            .and_then(|x| x.as_u64())
            .and_then(|x| u32::try_from(x).ok()),
        v.pointer("/clientConfig/service/path")
            .and_then(|x| x.as_str()),
    )
}

/// The freeze window is the fault ledger the runner kept after the resume (raw
/// `fault-ledger-resumed`, [`crate::evidence`]'s raw records): `frozen_at`, `resumed_at` and the
/// process state after the resume (the ledger's `state_after_resume`; `gone` when it has none)
/// are the ledger's. Flags raw-mismatch; without the record, observation-missing when `required`
/// (lab C, which always kept it), else nothing (lab B's generated fixture has no raw records).
pub(super) fn freeze_window_is_the_ledger(
    g: &mut G,
    s: &str,
    ev: &crate::evidence::Evidence,
    w: &FreezeWindow,
    required: bool,
) {
    let subject = format!("{s}.freeze");
    let ledger = if required {
        super::witness::required_raw(g, ev, "fault-ledger-resumed", &subject)
    } else {
        super::witness::raw_record(ev, "fault-ledger-resumed")
    };
    let Some(l) = ledger else {
        return;
    };
    let text = |k: &str| l.get(k).and_then(|v| v.as_str());
    for (field, recorded, found) in [
        ("frozen_at", text("frozen_at"), w.frozen_at.as_str()),
        ("resumed_at", text("resumed_at"), w.resumed_at.as_str()),
        (
            "state_after",
            Some(text("state_after_resume").unwrap_or("gone")),
            w.state_after.as_str(),
        ),
    ] {
        g.check(
            recorded == Some(found),
            Code::RawMismatch,
            format!("{subject}.{field}"),
            || {
                format!(
                    "the fault ledger kept after the resume says {recorded:?}, the facts {found:?}"
                )
            },
        );
    }
}
