//! Lab B, acts 4-8: freeze the one Kyverno admission-controller process (SIGSTOP through a
//! pidfd, resumed by an independent healer), compare failurePolicy Fail and Ignore, confirm
//! recovery by a deny, and check the student's report.
//!
//! What is relied on (and observed, never assumed): during a freeze the API server's call to the
//! webhook runs into `timeoutSeconds` (3 s) — Fail rejects the request with `context deadline
//! exceeded`, Ignore admits it (k8s.io/apiserver v0.35
//! `pkg/admission/plugin/webhook/validating/dispatcher.go`, `callHook`). After a 20 s freeze
//! Kyverno may have lost its 12 s leader Lease and exit, and the kubelet restarts it (kyverno
//! v1.19.1 `cmd/kyverno/main.go`, leader election): the acts wait, bounded and with progress, for
//! the first explicit deny and keep every intermediate outcome and the container's restart count.
//!
//! Acts 5 and 6 are the freeze steps' ([`crate::steps::freeze`]), lab B giving its part
//! ([`OneReplica`]): the one replica, one request of each kind during the freeze.

use std::time::Duration;

use crate::acts::Target;
use crate::cluster;
use crate::error::LabError;
use crate::evidence::Lab;
use crate::facts::a::LeaseFacts;
use crate::facts::b::{Act4Facts, Act7Facts, FreezeRun, ProcessIdentity};
use crate::facts::{self, Act3Facts, PodObservation};
use crate::inputs;
use crate::labs::common::{
    self, ActRecorder, ActSummary, Env, TARGET_NAMESPACE, Ui, describe, existing_line,
    existing_vs_act3_line, finish, read_facts, read_live, request_tag, uid_of, wait_for_webhook,
    webhook_facts, with_admission,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::steps::freeze::{
    self, FreezeAct, Frozen, Registration, Shape, first_deny_line, window_lines,
};
pub use crate::steps::investigate::{Investigation, investigate};
use crate::steps::observe::leader_lease;
use crate::steps::samples::Samples;
use crate::steps::settle::container_after;
use crate::steps::traffic::{OneEach, one_of_each};
use crate::workdir::Workdir;

pub use crate::rules::b::{DENY_AFTER_RESUME_BOUND, WATCHDOG_GRACE, report_expectations};

/// Lab B's own acts' runners, by act number (acts 1-3 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (4, |env, lab| Box::pin(act4(env, lab))),
    (5, |env, lab| Box::pin(freeze::act5::<OneReplica>(env, lab))),
    (6, |env, lab| Box::pin(freeze::act6::<OneReplica>(env, lab))),
    (7, |env, lab| Box::pin(act7(env, lab))),
    (8, |env, lab| {
        Box::pin(common::act8::<inputs::ReportB>(env, lab, false, act8_words))
    }),
];

/// Act 4: investigation only; nothing is frozen.
pub(crate) async fn act4(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let (cluster, ctx, _plan, loaded) = read_live::<inputs::FreezePlan>(env).await?;
    let mut cri = env.cri().await?;
    let mut rec = ActRecorder::begin(&env.workdir, lab, 4)?.with_input(&loaded);
    ui.step(m::INVESTIGATING_PROCESS);
    let inv = investigate(&cluster, &mut cri).await?;
    rec.raw("cri-container", &inv.container);
    rec.raw("cri-runtime", cri.runtime_version().await.ok());
    let mark = cluster.lab_mark().await.map_err(|e| e.to_string());
    rec.raw("lab-mark", mark);
    let facts = Act4Facts {
        node_uid: ctx.node_uid.clone().unwrap_or_default(),
        deployment_uid: ctx.deployment_uid.clone().unwrap_or_default(),
        pod_name: inv.pod_name.clone(),
        pod_namespace: cluster::KYVERNO_NAMESPACE.into(),
        container_name: inv.container.container_name.clone(),
        identity: inv.identity.clone(),
        restart_count: inv.restart_count,
        process_state: inv.state.to_string(),
        investigated_at: facts::now_rfc3339(),
    };
    let (pid, ticks) = (facts.identity.pid, facts.identity.pid_start_time_ticks);
    let state = &facts.process_state;
    let lines = vec![
        ui.text(m::pod_uid(&facts.pod_name, &facts.identity.pod_uid)),
        ui.text(m::container(&facts.identity.container_id)),
        ui.text(m::process(pid, ticks, state, facts.restart_count)),
    ];
    rec.complete(facts, lines)
}

/// Lab B's part of its freeze acts (5 and 6, [`crate::steps::freeze::Shape`]): the one replica,
/// one request of each kind during the freeze, the container after it, `facts::b::FreezeRun`.
pub(crate) struct OneReplica;

impl Shape for OneReplica {
    type Plan = inputs::FreezePlan;
    type Act3 = Act3Facts;
    type Act4 = Act4Facts;
    type Traffic = OneEach;
    type Run = FreezeRun;

    fn uids(p: &inputs::FreezePlan) -> (&str, &str) {
        (p.node_uid.as_str(), p.deployment_uid.as_str())
    }

    fn existing(a3: &Act3Facts) -> &PodObservation {
        &a3.existing
    }

    fn act4_target(a4: &Act4Facts, _: Target) -> Option<(&str, &ProcessIdentity)> {
        Some((&a4.pod_name, &a4.identity))
    }

    fn new(
        _: Lab,
        _: u8,
        _: &Act3Facts,
        _: Target,
        _: Option<LeaseFacts>,
    ) -> Result<Self, LabError> {
        Ok(OneReplica)
    }

    async fn traffic(&self, cx: &mut FreezeAct<'_>) -> Result<OneEach, LabError> {
        one_of_each(cx.cl, &cx.env.ui, cx.rec, &cx.spec.tag).await
    }

    fn partial(
        reg: &Registration,
        state: Option<char>,
        t: &OneEach,
        _: Option<&Samples>,
    ) -> serde_json::Value {
        serde_json::json!({
            "registration_present_during_freeze": reg.present,
            "registration_snapshot": reg.snapshot,
            "target_good": t.good, "target_bad": t.bad, "control": t.control,
            "state_during": state.map(String::from),
        })
    }

    /// The existing pod, the container after the resume ([`container_after`]) and the Lease.
    async fn after(self, cx: FreezeAct<'_>, run: Frozen<OneEach>) -> Result<FreezeRun, LabError> {
        let (cl, cri, rec, inv, spec) = (cx.cl, cx.cri, cx.rec, cx.inv, cx.spec);
        let existing =
            probe::observe_pod(cl, &spec.existing.namespace, &spec.existing.name).await?;
        let (identity_after, restart_count_after) = container_after(cl, cri, rec, inv).await?;
        if let Some(lease) = leader_lease(cl).await? {
            rec.raw("leader-lease-after", &lease);
        }
        let reg = run.registration;
        Ok(FreezeRun {
            freeze: run.freeze,
            registration_present_during_freeze: reg.present,
            registration_snapshot: reg.snapshot,
            registration_checked_at: reg.checked_at,
            timeout_seconds: reg.timeout_seconds,
            target_good: run.traffic.good,
            target_bad: run.traffic.bad,
            control: run.traffic.control,
            after_resume: run.after_resume,
            first_explicit_deny: run.first_explicit_deny,
            existing,
            restart_count_before: inv.restart_count,
            restart_count_after,
            first_deny_after_resume_ms: run.first_deny_after_resume_ms,
            identity_after,
        })
    }

    fn lines(ui: &Ui, _: u8, run: &FreezeRun) -> Vec<String> {
        let mut lines = window_lines(ui, &run.freeze, run.registration_present_during_freeze);
        lines.push(describe(ui, m::req::TARGET_GOOD_FROZEN, &run.target_good));
        lines.push(describe(ui, m::req::TARGET_BAD_FROZEN, &run.target_bad));
        lines.push(describe(ui, m::req::CONTROL_FROZEN, &run.control));
        for r in &run.after_resume {
            lines.push(describe(ui, m::req::AFTER_RESUME, r));
        }
        let restarts = (run.restart_count_before, run.restart_count_after);
        let first_deny = run.first_deny_after_resume_ms;
        lines.push(first_deny_line(ui, first_deny, restarts));
        lines.push(existing_line(ui, &run.existing));
        lines
    }

    /// An interrupted act 6 keeps the run's partial facts under `run` (the recorded format).
    fn join_partial(mut head: serde_json::Value, run: serde_json::Value) -> serde_json::Value {
        head["run"] = run;
        head
    }
}

/// Act 7: recovery is confirmed by a deny of a new-named violating request, not by the resume.
pub(crate) async fn act7(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let (cluster, _, _r, loaded) = read_live::<inputs::Recovery>(env).await?;
    let act3: Act3Facts = read_facts(&env.workdir, 3)?;
    let mut rec = env.begin_audited(lab, 7)?.with_input(&loaded);
    let (ui, cluster) = (&env.ui, &cluster);
    let result = async {
        let policy = cluster.policy(cluster::POLICY_NAME).await?;
        rec.raw("policy", &policy);
        let policy_uid = uid_of(policy.as_ref()).unwrap_or_default().to_owned();
        let name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
        let bound = Duration::from_secs(30);
        let (cfg, wh) = wait_for_webhook(cluster, ui, &name, bound, |_| true).await?;
        rec.raw("webhook-configuration", &cfg);
        let webhook = webhook_facts(&cfg, &wh)?;
        ui.step(m::SENDING_NEW_VIOLATING);
        let window = crate::metrics::Window::begin(cluster).await;
        let bad_name = format!("{}-bad", request_tag(lab, 7));
        let healthy_bad =
            probe::send_pod(cluster, &bad_name, TARGET_NAMESPACE, PodKind::Bad, false).await?;
        rec.request("healthy-bad", &healthy_bad);
        let admission = window.end(cluster).await;
        let (namespace, name) = (&act3.existing.namespace, &act3.existing.name);
        let existing = probe::observe_pod(cluster, namespace, name).await?;
        let lines = vec![
            ui.text(m::policy_uid(&policy_uid)),
            describe(ui, m::req::VIOLATING, &healthy_bad),
            existing_vs_act3_line(ui, &existing, &act3.existing),
        ];
        let facts = Act7Facts {
            policy_uid,
            webhook,
            healthy_bad,
            existing,
        };
        with_admission(ui, &facts, &admission, lines)
    }
    .await;
    finish(rec, serde_json::Value::Null, result)
}

/// Act 8's words: what acts 3 and 5-7 support ([`report_expectations`]); `report.json` is checked
/// against them and its digests against 05/06/07 by [`common::act8`].
fn act8_words(w: &Workdir) -> Result<Vec<(&'static str, String)>, LabError> {
    let (a3, a5) = (read_facts(w, 3)?, read_facts(w, 5)?);
    let (a6, a7) = (read_facts(w, 6)?, read_facts(w, 7)?);
    Ok(report_expectations(&a3, &a5, &a6, &a7))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Outcome;
    use crate::facts::b::{Act5Facts, Act6Facts};

    fn facts<T: serde::de::DeserializeOwned>(text: &str) -> T {
        let ev: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::from_value(ev["facts"].clone()).unwrap()
    }

    fn fixture() -> (Act3Facts, Act5Facts, Act6Facts, Act7Facts) {
        (
            facts(include_str!("../../tests/fixtures/b/pass/evidence/03.json")),
            facts(include_str!("../../tests/fixtures/b/pass/evidence/05.json")),
            facts(include_str!("../../tests/fixtures/b/pass/evidence/06.json")),
            facts(include_str!("../../tests/fixtures/b/pass/evidence/07.json")),
        )
    }

    #[test]
    fn passing_evidence_supports_the_reference_report() {
        let (a3, a5, a6, a7) = fixture();
        let got = report_expectations(&a3, &a5, &a6, &a7);
        assert_eq!(
            got,
            vec![
                ("fail", "matching-requests-timeout".to_owned()),
                ("ignore", "unvalidated-request-stored".to_owned()),
                ("healthy_ignore", "explicit-deny".to_owned()),
                ("control", "outside-selector".to_owned()),
                ("existing", "same-uid-running".to_owned()),
            ]
        );
    }

    #[test]
    fn other_observations_are_described_not_mapped_to_the_reference_words() {
        let (a3, mut a5, mut a6, mut a7) = fixture();
        a5.target_good.outcome = Outcome::Stored;
        a6.run.target_bad.outcome = Outcome::WebhookTimeout;
        a5.control.outcome = Outcome::ExplicitDeny;
        a7.existing.uid = Some("00000000-0000-0000-0000-000000000000".into());
        let got: std::collections::BTreeMap<_, _> = report_expectations(&a3, &a5, &a6, &a7)
            .into_iter()
            .collect();
        assert_eq!(got["fail"], "target-good:stored,target-bad:webhook-timeout");
        assert_eq!(got["ignore"], "target-bad:webhook-timeout");
        assert_eq!(got["control"], "control:explicit-deny");
        assert!(
            got["existing"].starts_with("uid:00000000-"),
            "{}",
            got["existing"]
        );
    }
}
