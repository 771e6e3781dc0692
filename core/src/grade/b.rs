//! Lab B graders, acts 4-8 (freeze the controller process; failurePolicy Fail vs Ignore).

use super::freeze::{self, Freeze};
use super::{G, Meant, request_is_the_pod_meant};
use crate::evidence::Outcome;
use crate::facts::b::*;
use crate::inputs;

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
    freeze::investigated_process_runs(g, s, &f.identity, &f.process_state);
    if let Some(ev) = g.evidence(4) {
        super::witness::identity_is_the_cri_container(g, &ev, &f);
    }
}

/// Lab B's own rules of one freeze run (`v`, `Freeze::of_b`; the rules of every freeze run in
/// [`freeze::freeze_act`]): the process frozen, the three requests lab B sends during the
/// freeze, and the existing pod.
fn freeze_run(g: &mut G, v: &Freeze<'_>, run: &FreezeRun) {
    // Act 5 freezes the process act 4 identified. Act 6 freezes the process found after act 5:
    // Kyverno may have restarted after the first freeze (a 20 s stop outlasts its 12 s leader
    // Lease), which is observed and recorded, not a defect.
    let after5 = (v.act == 6).then(|| g.facts::<Act5Facts>(5)?.identity_after);
    let after5 = after5.flatten();
    let expected = after5.or_else(|| g.facts::<Act4Facts>(4).map(|a4| a4.identity));
    freeze::frozen_process_is_the_expected_one(g, v, expected);
    requests_during_freeze_show_the_failure_policy(g, v, run);
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
        let timed = Some((v.timeout_seconds, v.ignore));
        freeze::target_pod(g, &sub, r, label, &[v.met], v.hook, timed);
        g.within(&sub, "sent_at", &r.sent_at, &w.frozen_at, &w.resumed_at);
        let answered = &r.answered_at;
        g.within(&sub, "answered_at", answered, &w.frozen_at, &w.resumed_at);
    }
    let (sub, sent) = (format!("{s}.control"), &run.control.sent_at);
    g.request(&sub, &run.control, &[Outcome::Stored]);
    request_is_the_pod_meant(g, &sub, &run.control, Meant::CONTROL);
    g.within(&sub, "sent_at", sent, &w.frozen_at, &w.resumed_at);
}

/// Acts 5 and 6, one grader ([`freeze::freeze_act`]).
pub(crate) fn freeze_acts(g: &mut G) {
    freeze::freeze_act(g, |a, r, h| Freeze::of_b(a, r, h), freeze_run);
}

pub(crate) fn act7(g: &mut G) {
    let Some(f) = g.facts::<Act7Facts>(7) else {
        return;
    };
    let (policy_uid, bad) = (&f.policy_uid, &f.healthy_bad);
    freeze::recovered_under_ignore::<inputs::Recovery, FreezeRun>(g, policy_uid, &f.webhook, bad);
    super::existing_pod_survives(g, "evidence/07.json facts.existing", &f.existing);
}

pub(crate) fn act8(g: &mut G) {
    super::report_claims_are_the_evidence_words::<inputs::ReportB, _>(g, |g| {
        let (a3, a5, a6, a7) = (g.facts(3), g.facts(5), g.facts(6), g.facts(7));
        Some(crate::rules::b::report_expectations(&a3?, &a5?, &a6?, &a7?))
    });
}
