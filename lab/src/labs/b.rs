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

use std::time::Duration;

use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::evidence::{Lab, RequestRecord};
use crate::facts::b::{
    Act4Facts, Act5Facts, Act6Facts, Act7Facts, FreezeRun, ProcessIdentity, Resumer,
};
use crate::facts::{self, Act3Facts};
use crate::faults::freeze;
use crate::inputs;
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Env, TARGET_NAMESPACE, Ui, describe,
    describe_indented, finish, live_context, read_facts, read_input, to_value, wait_for_webhook,
    webhook_facts,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::steps::freeze::{
    FreezeAct, FreezeSpec, after_resume, await_resume, before_freeze, first_deny, freeze_window,
    settle, start_freeze,
};
pub use crate::steps::investigate::{Investigation, investigate};
use crate::steps::investigate::{api_restart_count, check_fault_preconditions};
use crate::steps::policy::{Switched, json_str, open_act6};
use crate::wait::{Check, Wait, WaitError};

pub use crate::rules::b::{DENY_AFTER_RESUME_BOUND, WATCHDOG_GRACE, report_expectations};

/// Lab B's own acts' runners, by act number (acts 1-3 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (4, |env, _| Box::pin(act4(env))),
    (5, |env, _| Box::pin(act5(env))),
    (6, |env, _| Box::pin(act6(env))),
    (7, |env, _| Box::pin(act7(env))),
    (8, |env, _| Box::pin(act8(env))),
];

/// Act 4: investigation only; nothing is frozen.
pub(crate) async fn act4(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (_plan, loaded) = read_input::<inputs::FreezePlan>(&env.workdir, &ctx)?;
    let mut cri = env.cri().await?;
    let mut rec = ActRecorder::begin(&env.workdir, Lab::B, 4)?;
    rec.input(&loaded);
    ui.step(m::INVESTIGATING_PROCESS);
    let inv = investigate(&cluster, &mut cri).await?;
    rec.raw("cri-container", &inv.container);
    rec.raw("cri-runtime", cri.runtime_version().await.ok());
    rec.raw(
        "lab-mark",
        cluster.lab_mark().await.map_err(|e| e.to_string()),
    );
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
    let lines = vec![
        ui.text(m::pod_uid(&facts.pod_name, &facts.identity.pod_uid)),
        ui.text(m::container(&facts.identity.container_id)),
        ui.text(m::process(
            facts.identity.pid,
            facts.identity.pid_start_time_ticks,
            &facts.process_state,
            facts.restart_count,
        )),
    ];
    rec.complete(facts, lines)
}

/// Act 5: the freeze under failurePolicy Fail.
pub(crate) async fn act5(env: &Env) -> Result<ActSummary, LabError> {
    // The registry's freeze: for the plan's `resume_after_sec` (the student's freeze-plan.json).
    let (_, resume_after_sec) =
        crate::steps::freeze_of(Lab::B, 5, u64::from(inputs::ResumeAfterSec::VALUE))?;
    let ui = env.ui;
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (plan, loaded) = read_input::<inputs::FreezePlan>(&env.workdir, &ctx)?;
    let mark = check_fault_preconditions(
        &cluster,
        (plan.node_uid.as_str(), plan.deployment_uid.as_str()),
    )
    .await?;
    let act3: Act3Facts = read_facts(&env.workdir, 3)?;
    let act4: Act4Facts = read_facts(&env.workdir, 4)?;
    let healed = crate::faults::heal::recent();
    let mut cri = env.cri().await?;
    let inv = investigate(&cluster, &mut cri).await?;
    if inv.identity != act4.identity {
        return Err(LabError::FaultRefused {
            reason: format!(
                "the admission controller process changed since act 4 (act 4: container {} pid {} starttime {}; now: container {} pid {} starttime {}); reproduce in a fresh lab",
                act4.identity.container_id,
                act4.identity.pid,
                act4.identity.pid_start_time_ticks,
                inv.identity.container_id,
                inv.identity.pid,
                inv.identity.pid_start_time_ticks
            ),
        });
    }
    let webhook_name = cluster::fine_grained_webhook_name("Fail", cluster::POLICY_NAME);
    let mut rec = ActRecorder::begin(&env.workdir, Lab::B, 5)?.with_audit(env);
    rec.input(&loaded);
    rec.raw("lab-mark", &mark);
    rec.raw("healed-earlier-faults", &healed);
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        act: 5,
        resume_after_sec,
        webhook_name,
        existing: &act3.existing,
        tag: "b5",
    };
    let mut partial = serde_json::Value::Null;
    let window = crate::metrics::Window::begin(&cluster).await;
    let outcome = common::or_signal(freeze_run(
        FreezeAct {
            env,
            cluster: &cluster,
            cri: &mut cri,
            rec: &mut rec,
            partial: &mut partial,
        },
        &inv,
        &spec,
    ))
    .await;
    let admission = window.end(&cluster).await;
    let result = settle(env, &spec, outcome, partial, &mut rec);
    match result {
        Ok(run) => {
            let mut lines = run_lines(&ui, &run);
            lines.push(ui.text(crate::metrics::summary_line(&admission)));
            let mut facts = to_value(&run)?;
            admission.attach(&mut facts);
            rec.complete(facts, lines)
        }
        Err((mut facts, e)) => {
            admission.attach(&mut facts);
            finish(rec, Err((facts, e)))
        }
    }
}

/// The freeze and everything observed around it (acts 5 and 6), in named steps: the state before
/// ([`before_freeze`]), the freeze ([`start_freeze`]), the requests during it
/// ([`during_freeze`]), the healer's resume ([`await_resume`]), the requests after it
/// ([`after_resume`]) and the container after it ([`container_after`]).
async fn freeze_run(
    cx: FreezeAct<'_>,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
) -> Result<FreezeRun, LabError> {
    let FreezeAct {
        env,
        cluster,
        cri,
        rec,
        partial,
    } = cx;
    let ui = env.ui;
    before_freeze(env, cluster, rec, inv, spec).await?;
    let mut fz = start_freeze(env, rec, inv, spec)?;
    let ledger = fz.ledger().clone();
    let during = during_freeze(cluster, &ui, rec, spec, &fz).await?;
    *partial = serde_json::json!({
        "freeze": ledger,
        "registration_present_during_freeze": during.registration_present,
        "registration_snapshot": during.registration_snapshot,
        "target_good": during.good, "target_bad": during.bad, "control": during.control,
        "state_during": during.state.map(String::from),
    });
    rec.save_progress(partial.clone())?;
    let resume = await_resume(&mut fz, &ui, spec).await?;
    let ledger = fz.ledger().clone();
    drop(fz);
    rec.raw("fault-ledger-resumed", &ledger);
    let after_resume = after_resume(cluster, &ui, rec, spec.tag).await?;
    let (first_explicit_deny, first_deny_after_resume_ms) =
        first_deny(&after_resume, &resume.resumed_at);
    let existing =
        probe::observe_pod(cluster, &spec.existing.namespace, &spec.existing.name).await?;
    let (identity_after, restart_count_after) = container_after(cluster, cri, rec, inv).await?;
    if let Some(lease) = cluster
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?
    {
        rec.raw("leader-lease-after", &lease);
    }
    Ok(FreezeRun {
        freeze: freeze_window(inv, spec, &ledger, during.state, &resume),
        registration_present_during_freeze: during.registration_present,
        registration_snapshot: during.registration_snapshot,
        registration_checked_at: during.registration_checked_at,
        timeout_seconds: during.timeout_seconds,
        target_good: during.good,
        target_bad: during.bad,
        control: during.control,
        after_resume,
        first_explicit_deny,
        existing,
        restart_count_before: inv.restart_count,
        restart_count_after,
        first_deny_after_resume_ms,
        identity_after,
    })
}

/// What was seen during the freeze.
struct DuringFreeze {
    registration_present: bool,
    registration_snapshot: serde_json::Value,
    registration_checked_at: String,
    timeout_seconds: u32,
    state: Option<char>,
    good: RequestRecord,
    bad: RequestRecord,
    control: RequestRecord,
}

/// During the freeze: the registration, then three requests at once (target good, target bad,
/// control), and the process state.
async fn during_freeze(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    spec: &FreezeSpec<'_>,
    fz: &freeze::Freeze,
) -> Result<DuringFreeze, LabError> {
    ui.step(m::DURING_FREEZE);
    let tag = spec.tag;
    let (p_good, p_bad, p_control) = (
        format!("{tag}-frozen-good"),
        format!("{tag}-frozen-bad"),
        format!("{tag}-frozen-control"),
    );
    let (registration, good, bad, control) = tokio::join!(
        cluster.find_webhook(&spec.webhook_name),
        probe::send_pod(cluster, &p_good, TARGET_NAMESPACE, PodKind::Good, false),
        probe::send_pod(cluster, &p_bad, TARGET_NAMESPACE, PodKind::Bad, false),
        probe::send_pod(cluster, &p_control, CONTROL_NAMESPACE, PodKind::Bad, false),
    );
    let registration_checked_at = facts::now_rfc3339();
    let state = fz.state()?;
    let registration = registration?;
    let (good, bad, control) = (good?, bad?, control?);
    rec.request("frozen-target-good", &good);
    rec.request("frozen-target-bad", &bad);
    rec.request("frozen-control", &control);
    for (label, r) in [
        (m::req::TARGET_GOOD_FROZEN, &good),
        (m::req::TARGET_BAD_FROZEN, &bad),
        (m::req::CONTROL_FROZEN, &control),
    ] {
        ui.say(describe_indented(ui, label, r));
    }
    Ok(DuringFreeze {
        registration_present: registration.is_some(),
        registration_snapshot: registration
            .as_ref()
            .map(|(_, wh)| serde_json::to_value(wh).unwrap_or_default())
            .unwrap_or(serde_json::Value::Null),
        registration_checked_at,
        timeout_seconds: registration
            .as_ref()
            .and_then(|(_, wh)| wh.timeout_seconds)
            .unwrap_or(10)
            .max(0) as u32,
        state,
        good,
        bad,
        control,
    })
}

/// The container as it is after the resume (CRI), retried briefly: a restarted container may
/// still be starting. The restart count comes from the API (the pod of act 4, or its successor)
/// when CRI does not answer. Returns the identity after (`None`: not seen) and the restart count.
async fn container_after(
    cluster: &Cluster,
    cri: &mut CriClient,
    rec: &mut ActRecorder,
    inv: &Investigation,
) -> Result<(Option<ProcessIdentity>, u32), LabError> {
    let cri = tokio::sync::Mutex::new(cri);
    let after = Wait::new(
        "the admission controller's container through CRI",
        Duration::from_secs(5),
        Duration::from_secs(1),
    )
    .run(
        || async {
            let mut cri = cri.lock().await;
            Ok::<_, std::convert::Infallible>(match investigate(cluster, &mut cri).await {
                Ok(a) => Check::Done(a),
                Err(e) => Check::NotYet(e),
            })
        },
        |_, _| {},
        tokio::time::sleep,
    )
    .await
    .map_err(|e| match e {
        // The last error: what the record keeps when the container never answered.
        WaitError::TimedOut(t) => t.last,
        WaitError::Failed(never) => match never {},
    });
    match after {
        Ok(a) => {
            rec.raw("cri-container-after", &a.container);
            Ok((Some(a.identity.clone()), a.restart_count))
        }
        Err(e) => {
            rec.raw("cri-container-after-error", e.to_string());
            let count = api_restart_count(cluster, &inv.identity.pod_uid)
                .await?
                .unwrap_or(inv.restart_count);
            Ok((None, count))
        }
    }
}

fn run_lines(ui: &Ui, run: &FreezeRun) -> Vec<String> {
    let mut lines = vec![
        ui.text(m::freeze_window(
            &run.freeze.frozen_at,
            &run.freeze.resumed_at,
            match run.freeze.resumed_by {
                Resumer::Watchdog => m::resumer::HEALER,
                Resumer::Runner => m::resumer::RUNNER,
            }
            .get(ui.lang()),
            &run.freeze.state_after,
        )),
        ui.text(m::registration_during_freeze(
            run.registration_present_during_freeze,
        )),
        describe(ui, m::req::TARGET_GOOD_FROZEN, &run.target_good),
        describe(ui, m::req::TARGET_BAD_FROZEN, &run.target_bad),
        describe(ui, m::req::CONTROL_FROZEN, &run.control),
    ];
    for r in &run.after_resume {
        lines.push(describe(ui, m::req::AFTER_RESUME, r));
    }
    lines.push(
        ui.text(m::first_deny_after_resume(
            &run.first_deny_after_resume_ms
                .map(|ms| ms.to_string())
                .unwrap_or_else(|| "-".into()),
            run.restart_count_before,
            run.restart_count_after,
        )),
    );
    lines.push(ui.text(m::existing(
        &run.existing.name,
        run.existing.uid.as_deref().unwrap_or("?"),
        run.existing.phase.as_deref().unwrap_or("?"),
    )));
    lines
}

/// Act 6: the same policy switched to failurePolicy Ignore; a healthy deny; a short freeze.
pub(crate) async fn act6(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    // The registry's freeze: the one replica, for its own length (not the plan's).
    let (_, resume_after_sec) = crate::steps::freeze_of(Lab::B, 6, 0)?;
    let opened = open_act6::<inputs::FreezePlan, Act3Facts>(env, Lab::B, |p| {
        (p.node_uid.as_str(), p.deployment_uid.as_str())
    })
    .await;
    let Switched {
        cluster,
        mut cri,
        mut rec,
        mut partial,
        act3,
        policy_uid_before,
        stored,
        ignore_name,
        webhook,
        window,
        healthy_bad,
    } = match opened {
        Ok(s) => s,
        Err(done) => return done,
    };
    let inv = match investigate(&cluster, &mut cri).await {
        Ok(i) => i,
        Err(e) => return finish(rec, Err((partial, e))),
    };
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        act: 6,
        resume_after_sec,
        webhook_name: ignore_name,
        existing: &act3.existing,
        tag: "b6",
    };
    let mut run_partial = serde_json::Value::Null;
    let outcome = common::or_signal(freeze_run(
        FreezeAct {
            env,
            cluster: &cluster,
            cri: &mut cri,
            rec: &mut rec,
            partial: &mut run_partial,
        },
        &inv,
        &spec,
    ))
    .await;
    let admission = window.end(&cluster).await;
    match settle(env, &spec, outcome, run_partial.clone(), &mut rec) {
        Ok(run) => {
            let mut lines = vec![
                ui.text(m::policy_unchanged(&json_str(&stored, "/metadata/uid"))),
                ui.text(m::webhook_failure_policy(
                    &webhook.name,
                    &webhook.failure_policy,
                )),
                describe(&ui, m::req::HEALTHY_BAD_IGNORE, &healthy_bad),
            ];
            lines.extend(run_lines(&ui, &run));
            lines.push(ui.text(crate::metrics::summary_line(&admission)));
            let facts = Act6Facts {
                policy_uid_before,
                policy: stored,
                webhook,
                healthy_bad,
                run,
            };
            let mut facts = to_value(&facts)?;
            admission.attach(&mut facts);
            rec.complete(facts, lines)
        }
        Err((p, e)) => {
            partial["run"] = p;
            admission.attach(&mut partial);
            finish(rec, Err((partial, e)))
        }
    }
}

/// Act 7: recovery is confirmed by a deny of a new-named violating request, not by the resume.
pub(crate) async fn act7(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (_r, loaded) = read_input::<inputs::Recovery>(&env.workdir, &ctx)?;
    let act3: Act3Facts = read_facts(&env.workdir, 3)?;
    let mut rec = ActRecorder::begin(&env.workdir, Lab::B, 7)?.with_audit(env);
    rec.input(&loaded);
    let fail = |e: LabError| (serde_json::Value::Null, e);
    let result = async {
        let policy = cluster.policy(cluster::POLICY_NAME).await.map_err(fail)?;
        rec.raw("policy", &policy);
        let policy_uid = policy
            .as_ref()
            .and_then(|p| p.pointer("/metadata/uid"))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned();
        let name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
        let (cfg, wh) = wait_for_webhook(&cluster, &ui, &name, Duration::from_secs(30), |_| true)
            .await
            .map_err(fail)?;
        rec.raw("webhook-configuration", &cfg);
        let webhook = webhook_facts(&cfg, &wh).map_err(fail)?;
        ui.step(m::SENDING_NEW_VIOLATING);
        let window = crate::metrics::Window::begin(&cluster).await;
        let healthy_bad =
            probe::send_pod(&cluster, "b7-bad", TARGET_NAMESPACE, PodKind::Bad, false)
                .await
                .map_err(fail)?;
        rec.request("healthy-bad", &healthy_bad);
        let admission = window.end(&cluster).await;
        let existing = probe::observe_pod(&cluster, &act3.existing.namespace, &act3.existing.name)
            .await
            .map_err(fail)?;
        let lines = vec![
            ui.text(m::policy_uid(&policy_uid)),
            describe(&ui, m::req::VIOLATING, &healthy_bad),
            ui.text(m::existing_vs_act3(
                &existing.name,
                existing.uid.as_deref().unwrap_or("?"),
                existing.phase.as_deref().unwrap_or("?"),
                act3.existing.uid.as_deref().unwrap_or("?"),
            )),
            ui.text(crate::metrics::summary_line(&admission)),
        ];
        let facts = Act7Facts {
            policy_uid,
            webhook,
            healthy_bad,
            existing,
        };
        let mut facts = to_value(&facts).map_err(fail)?;
        admission.attach(&mut facts);
        Ok((facts, lines))
    }
    .await;
    finish(rec, result)
}

/// Act 8: the report checked against the evidence.
pub(crate) async fn act8(env: &Env) -> Result<ActSummary, LabError> {
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (_report, loaded) = read_input::<inputs::ReportB>(&env.workdir, &ctx)?;
    let act3: Act3Facts = read_facts(&env.workdir, 3)?;
    let act5: Act5Facts = read_facts(&env.workdir, 5)?;
    let act6: Act6Facts = read_facts(&env.workdir, 6)?;
    let act7: Act7Facts = read_facts(&env.workdir, 7)?;
    let mut rec = ActRecorder::begin(&env.workdir, Lab::B, 8)?;
    rec.input(&loaded);
    let facts = common::report_checks(
        env,
        &rec,
        &loaded.value,
        report_expectations(&act3, &act5, &act6, &act7),
        &[
            ("fail_evidence_sha256", 5),
            ("ignore_evidence_sha256", 6),
            ("recovery_evidence_sha256", 7),
        ],
    )?;
    let lines = m::report_summary(env.ui.lang(), &facts.checks);
    rec.complete(facts, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Outcome;

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
