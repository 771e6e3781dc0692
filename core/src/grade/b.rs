//! Lab B graders, acts 4-8 (freeze the controller process; failurePolicy Fail vs Ignore).

use super::freeze::{self, Freeze};
use super::{Code::*, G, Meant, policy_uid, request_is_the_pod_meant};
use crate::evidence::Outcome;
use crate::facts::{self, b::*};
use crate::inputs::{self, Context};

pub(crate) fn act4(g: &mut G) {
    let Some(f) = g.facts::<Act4Facts>(4) else {
        return;
    };
    let s = "evidence/04.json facts";
    let (node, deployment) = (&f.node_uid, &f.deployment_uid);
    let a1 = super::investigation_against_its_plan::<inputs::FreezePlan>(g, s, node, deployment);
    if let Some(a1) = a1 {
        // The frozen process's pod is one of act 1's Deployment's pods: in its namespace,
        // named `<deployment>-<replicaset hash>-<suffix>`.
        let pod = (f.pod_namespace.as_str(), f.pod_name.as_str());
        super::pod_of_the_deployment(g, format!("{s}.pod_name"), pod, &a1.controller_deployment);
    }
    let (id, sub) = (&f.identity, format!("{s}.identity"));
    g.check(id.pid > 1, ValueMismatch, format!("{sub}.pid"), || {
        format!("expected a PID > 1, found {}", id.pid)
    });
    let (ok, at) = (
        id.pid_start_time_ticks > 0,
        format!("{sub}.pid_start_time_ticks"),
    );
    g.check(ok, ValueMismatch, at, || {
        "expected the start time from /proc/<pid>/stat, found 0".into()
    });
    let (ok, at) = (!id.container_id.is_empty(), format!("{sub}.container_id"));
    g.check(ok, ValueMismatch, at, || {
        "expected the CRI container ID, found nothing".into()
    });
    let (ok, at) = (super::is_uid(&id.pod_uid), format!("{sub}.pod_uid"));
    g.check(ok, UidMismatch, at, || {
        format!("expected a pod UID, found {:?}", id.pod_uid)
    });
    let (state, at) = (&f.process_state, format!("{s}.process_state"));
    g.check(state != "T", ProcessStillStopped, &at, || {
        "act 4 only investigates; the process was found stopped".into()
    });
    super::witness::process_state_is_a_proc_state(g, &at, state);
    if let Some(ev) = g.evidence(4) {
        super::witness::identity_is_the_cri_container(g, &ev, &f);
    }
}

/// Checks one freeze run (`v`, `Freeze::of_b`: under Ignore in act 6, with the registration the
/// act relies on): the rules of every freeze, labs B and C (`super::freeze`), the three requests
/// lab B sends during the freeze, and the existing pod.
fn freeze_run(g: &mut G, v: Freeze<'_>, run: &FreezeRun) {
    let act = v.act;
    // Act 5 freezes the process act 4 identified. Act 6 freezes the process found after act 5:
    // Kyverno may have restarted after the first freeze (a 20 s stop outlasts its 12 s leader
    // Lease), which is observed and recorded, not a defect.
    let after5 = (act == 6).then(|| g.facts::<Act5Facts>(5)?.identity_after);
    let after5 = after5.flatten();
    let expected = after5.or_else(|| g.facts::<Act4Facts>(4).map(|a4| a4.identity));
    freeze::frozen_process_is_the_expected_one(g, &v, expected);
    freeze::freeze_rules(g, &v);
    requests_during_freeze_show_the_failure_policy(g, &v, run);
    super::existing_pod_survives(g, &format!("{}.existing", v.s), &run.existing);
}

/// During the freeze the target requests (a labelled and a violating pod, in the target
/// namespace) show the failure policy: time out after T under Fail, stored after waiting T under
/// Ignore, naming the registration's webhook; the control request is stored; all are sent and
/// answered inside the freeze.
fn requests_during_freeze_show_the_failure_policy(g: &mut G, v: &Freeze<'_>, run: &FreezeRun) {
    let (s, w) = (&v.s, &run.freeze);
    for (name, r, label) in [
        ("target_good", &run.target_good, true),
        ("target_bad", &run.target_bad, false),
    ] {
        let sub = format!("{s}.{name}");
        freeze::request_during_the_freeze(g, v, &sub, r, &[v.met], v.ignore);
        request_is_the_pod_meant(g, &sub, r, Meant::target(label));
        g.within(&sub, "sent_at", &r.sent_at, &w.frozen_at, &w.resumed_at);
        let answered = &r.answered_at;
        g.within(&sub, "answered_at", answered, &w.frozen_at, &w.resumed_at);
    }
    let (sub, sent) = (format!("{s}.control"), &run.control.sent_at);
    g.request(&sub, &run.control, &[Outcome::Stored]);
    request_is_the_pod_meant(g, &sub, &run.control, Meant::CONTROL);
    g.within(&sub, "sent_at", sent, &w.frozen_at, &w.resumed_at);
}

pub(crate) fn act5(g: &mut G) {
    let Some(f) = g.facts::<Act5Facts>(5) else {
        return;
    };
    let hook = g.facts::<facts::Act2Facts>(2).map(|a2| a2.webhook);
    freeze_run(g, Freeze::of_b(5, &f, hook.as_ref()), &f);
}

pub(crate) fn act6(g: &mut G) {
    let Some(f) = g.facts::<Act6Facts>(6) else {
        return;
    };
    freeze::policy_switched_to_ignore(g, &f, &f.run.freeze.frozen_at);
    freeze_run(g, Freeze::of_b(6, &f.run, Some(&f.webhook)), &f.run);
}

pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let s = "evidence/07.json facts";
    let a2 = g.facts::<facts::Act2Facts>(2);
    let uid = a2.as_ref().and_then(policy_uid);
    let ctx = Context {
        policy_uid: uid.clone(),
        ..g.report_context(6..=6)
    };
    g.input::<inputs::Recovery>(&ctx);
    let (a6_webhook, uid) = (g.facts::<Act6Facts>(6).map(|a6| a6.webhook), uid.as_deref());
    let (policy_uid, bad) = (&f.policy_uid, &f.healthy_bad);
    freeze::recovered_under_ignore(g, uid, policy_uid, &f.webhook, bad, a6_webhook);
    if let Some(ev) = g.evidence(7) {
        let (what, fact) = ("webhook-configuration", format!("{s}.webhook"));
        super::witness::registration_is_derived_from(g, &ev, what, &fact, &f.webhook);
    }
    super::existing_pod_survives(g, &format!("{s}.existing"), &f.existing);
}

pub(crate) fn act8(g: &mut G) {
    super::report_claims_are_the_evidence_words::<inputs::ReportB, _>(g, |g| {
        let (a3, a5, a6, a7) = (g.facts(3), g.facts(5), g.facts(6), g.facts(7));
        Some(crate::rules::b::report_expectations(&a3?, &a5?, &a6?, &a7?))
    });
}
