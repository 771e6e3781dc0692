//! Lab A, acts 4-8: graceful scale-down of the Kyverno admission controller, the webhook
//! registration that disappears with it, the recovery timeline, server-side dry-run, and the report.
//!
//! What is observed, never assumed (`docs/labs.md`, "Lab A"):
//! - act 5: after `kyverno-admission-controller` is scaled to 0 and its pods are gone, whether the
//!   policy's webhook is still in the ValidatingWebhookConfigurations (on Kyverno v1.19.1 the
//!   stopping controller deletes them because the Deployment has 0 replicas:
//!   `pkg/webhooks/server.go` `cleanup`, `pkg/utils/runtime/utils.go` `IsGoingDown`), and what happens to a
//!   violating request then;
//! - act 6: when each recovery step happens (replicas, new pod, Running, Lease, registration,
//!   first explicit deny), each with its own timestamp, a bound that runs out being `not-confirmed`;
//! - act 7: that a server-side dry-run (`dryRun=All`) is validated by the webhook and stores nothing.
//!
//! The fault and its healer are in [`crate::faults::scale`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{self, ADMISSION_DEPLOYMENT, Cluster, KYVERNO_NAMESPACE};
use crate::derive;
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::a::{
    Act4Facts, Act5Facts, Act6Facts, Act7Facts, DryRunEcho, Restorer, StepStatus, TimelineStep,
    WatcherFacts,
};
use crate::facts::{self, Act2Facts, Act3Facts, PodObservation, WebhookFacts};
use crate::faults::scale::{self, RestoreOutcome, ScaleFault};
use crate::inputs::{self, OriginalReplicas, RestoreAfterSec};
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Done, Env, TARGET_NAMESPACE, Ui, describe,
    describe_indented, expect_same, finish, or, progress_each_second, read_facts, read_live,
    to_value, uid_of, with_admission,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::steps::observe::{
    deployment_facts, leader_lease, lease_facts, pod_names, pod_observation, policy_webhook,
    policy_webhook_in, read_lease, webhook_configurations_raw, webhook_names,
};
use crate::steps::scale::{hand_over_or_restore, healer_kubeconfig, runner_restore};
use crate::text::{Lang, Text};
use crate::wait::{Check, WaitError};
use crate::workdir::Workdir;

pub use crate::rules::a::{RECOVERY_BOUND, evidence_words, timeline_in_order};

/// Lab A's lab value.
const LAB: Lab = Lab::A;
/// Bound on waiting for the controller's pods to be gone after the scale to 0 (the chart sets no
/// `terminationGracePeriodSeconds`, so Kubernetes' 30 s default applies; kyverno's
/// `charts/kyverno/values.yaml`).
pub const PODS_GONE_BOUND: Duration = Duration::from_secs(120);
/// Interval between two rounds of recovery observations (pods, Lease, registration, dry-run probe).
pub const RECOVERY_INTERVAL: Duration = Duration::from_millis(500);

/// Lab A's own acts' runners, by act number (acts 1-3 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (4, |env, _| Box::pin(act4(env))),
    (5, |env, _| Box::pin(act5(env))),
    (6, |env, _| Box::pin(act6(env))),
    (7, |env, _| Box::pin(act7(env))),
    (8, |env, _| {
        Box::pin(common::act8::<inputs::ReportA>(env, LAB, true, act8_words))
    }),
];

// ---------------------------------------------------------------------------------------------
// Act 4

pub(crate) async fn act4(env: &Env) -> Result<ActSummary, LabError> {
    let (cl, ctx, _plan, loaded) = read_live::<inputs::ScalePlan>(env).await?;
    let dep = cl.admission_deployment().await?;
    let live_replicas = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let planned = inputs::OriginalReplicas::VALUE as i32;
    let what = format!(
        "spec.replicas of deployment {KYVERNO_NAMESPACE}/{ADMISSION_DEPLOYMENT} (scale-plan.json $.original_replicas)"
    );
    expect_same(what, &planned.to_string(), &live_replicas.to_string())?;
    let mut rec = ActRecorder::begin(&env.workdir, LAB, 4)?.with_input(&loaded);
    let (cl, ui) = (&cl, &env.ui);
    let result = async {
        ui.step(m::INVESTIGATING_DEPLOYMENT);
        let dep = cl.admission_deployment().await?;
        rec.raw("deployment", &dep);
        let pods = cl.admission_pods().await?;
        rec.raw("pods", &pods);
        let lease = read_lease(cl, &mut rec, "lease").await?;
        let facts = Act4Facts {
            node_uid: ctx.node_uid.clone().unwrap_or_default(),
            deployment: deployment_facts(&dep)?,
            pods: pods.iter().map(pod_observation).collect::<Result<_, _>>()?,
            lease,
            investigated_at: facts::now_rfc3339(),
        };
        let d = &facts.deployment;
        let line = m::deployment(&d.namespace, &d.name, &d.uid, d.replicas, d.ready_replicas);
        let pod = |p: &PodObservation| ui.text(m::pod(&p.name, or(&p.uid, "?"), or(&p.phase, "?")));
        let mut lines = vec![ui.text(line)];
        lines.extend(facts.pods.iter().map(pod));
        let l = &facts.lease;
        let secs = l.lease_duration_seconds;
        let duration = secs.map_or("-".into(), |v| v.to_string());
        let (holder, renewed) = (or(&l.holder, "-"), or(&l.renew_time, "-"));
        lines.push(ui.text(m::lease(&l.namespace, &l.name, holder, renewed, &duration)));
        Ok::<_, LabError>((to_value(&facts)?, lines))
    }
    .await;
    finish(rec, serde_json::Value::Null, result)
}

// ---------------------------------------------------------------------------------------------
// Act 5

/// Act 5: the healer armed, the admission controller scaled to 0 by it, and what the cluster
/// does meanwhile (pods, policy, registration, requests); the fault is handed over to act 6.
pub(crate) async fn act5(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    // The plan again, against the live cluster now: node and deployment UIDs, act 3's digest.
    let (cl, ctx, _plan, loaded) = read_live::<inputs::ScalePlan>(env).await?;
    // Faults only on a lab-marked cluster.
    let mark = cl.lab_mark().await?;
    let f2: Act2Facts = read_facts(&env.workdir, 2)?;
    let f3: Act3Facts = read_facts(&env.workdir, 3)?;
    let kubeconfig = healer_kubeconfig(&cl)?;
    // Every command healed first (`run_act`): what is left unfinished is owned by a live healer
    // of a completed act 5, so act 6 (which records the recovery) is the act that can run.
    let unfinished = scale::unfinished_faults(env.workdir.root())?;
    if !unfinished.is_empty() {
        let dirs = unfinished.iter().map(|u| u.dir.display().to_string());
        return Err(LabError::FaultRefused {
            reason: format!(
                "an earlier scale-down is still owned by its healer ({}); act 6 restores it and records the recovery",
                dirs.collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let mut rec = env.begin_audited(LAB, 5)?.with_input(&loaded);
    rec.raw("lab-mark", &mark);

    ui.step(m::STARTING_SCALE_HEALER);
    let uid = ctx.deployment_uid.as_deref().unwrap_or_default();
    let (original, after) = (OriginalReplicas::VALUE, RestoreAfterSec::VALUE);
    let (root, replicas, secs) = (env.workdir.root(), original as i32, after as u64);
    let armed = ScaleFault::arm(cl.clone(), root, &kubeconfig, uid, replicas, secs);
    let (mut fault, ready) = armed.await?;
    // Evidence labels keep the recorded format's words (`watcher-ready`, facts `watcher`).
    let raw_ready = to_value(&ready)?;
    rec.raw("watcher-ready", &raw_ready);
    // The watcher as the fact records it: derived from the raw answer (the grader re-derives it),
    // with what the healer was armed with and where its files are.
    let dir = Some(fault.files().dir.display().to_string());
    let watcher = cluster::derived(derive::watcher(&raw_ready, after, original, dir))?;
    let (pid, armed_at, deadline_at) = (ready.pid, &ready.armed_at, &ready.deadline_at);
    ui.say(m::scale_healer_ready(pid, armed_at, deadline_at));
    let mut partial = serde_json::json!({"watcher": watcher});
    let (cl, ui) = (&cl, &ui);
    let body = async {
        ui.step(m::scaling_to_zero(cluster::ADMISSION_DEPLOYMENT));
        let raw_down = to_value(&fault.scale_down().await?)?;
        rec.raw("scale-down", &raw_down);
        let scaled_at = cluster::derived(derive::scale_down(&raw_down))?;
        partial["scaled_at"] = scaled_at.clone().into();
        rec.save_progress(partial.clone())?;

        let pods_gone_at = wait_pods_gone(cl, ui, &fault, &mut rec).await?;
        ui.say(m::pods_gone(&pods_gone_at));
        partial["pods_gone_at"] = pods_gone_at.clone().into();

        let head = (watcher, scaled_at, pods_gone_at);
        at_zero(cl, ui, &mut rec, &mut partial, (&f2, &f3), head).await
    };
    let healed = "the runner restored the replicas (see the evidence's runner-restore)";
    let result = common::unless_signalled(5, healed, body).await;
    // The fault stays on for act 6: a later heal leaves it to act 6 and the healer.
    hand_over_or_restore(fault, rec, partial, result).await
}

/// Act 5: waits (bounded) until no controller pod is left; returns when. Pods while the
/// replicas are no longer 0 are not going away: the fault is over (the healer restores at its
/// deadline, e.g. when this act was stopped past it), so the wait ends at once with what was seen.
async fn wait_pods_gone(
    cl: &Cluster,
    ui: &Ui,
    fault: &ScaleFault,
    rec: &mut ActRecorder,
) -> Result<String, LabError> {
    let plan = fault.plan().clone();
    let healer_files = fault.files().clone();
    let left = std::cell::RefCell::new(Vec::new());
    let check = || async {
        let pods = cl.admission_pods().await?;
        if pods.is_empty() {
            return Ok::<_, LabError>(Check::Done(facts::now_rfc3339()));
        }
        let read = scale::read_scale(cl).await?;
        let replicas = read.and_then(|s| s.spec?.replicas).unwrap_or(0);
        if replicas != scale::FAULT_REPLICAS {
            let by = match healer_files.read_scale_report() {
                Ok(Some(w)) if w.restored_at.is_some() => {
                    let (at, deadline) = (or(&w.restored_at, "-"), &w.deadline_at);
                    format!("restored by the healer at {at} (its deadline {deadline})")
                }
                _ => "not restored by this lab's healer".to_owned(),
            };
            return Err(LabError::ClusterMismatch {
                what: format!(
                    "spec.replicas of deployment {}/{} while act 5 waited for its pods to be gone",
                    plan.namespace, plan.deployment
                ),
                expected: format!("{} (act 5's scale-down)", scale::FAULT_REPLICAS),
                found: format!("{replicas}, {by}; the scale-down is over before act 5 observed it"),
            });
        }
        let state = pods
            .iter()
            .map(|p| {
                let name = p.metadata.name.as_deref().unwrap_or("?");
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                let ending =
                    (p.metadata.deletion_timestamp.as_ref()).map_or("", |_| " (terminating)");
                format!("{name} {}{ending}", phase.unwrap_or("?"))
            })
            .collect::<Vec<_>>()
            .join(", ");
        *left.borrow_mut() = pods;
        Ok(Check::NotYet(state))
    };
    let what = "the admission controller's pods to be gone".to_owned();
    let every = (PODS_GONE_BOUND, Duration::from_millis(250));
    let progress = |state: &String| m::waiting_pods_gone(state);
    let gone = common::wait_with_progress(ui, what, every, progress, check).await;
    if let Err(WaitError::TimedOut(_)) = gone {
        // The pods the last check saw.
        rec.raw("pods-left", left.into_inner());
    }
    gone.map_err(LabError::from)
}

/// Act 5 at zero replicas, its pods gone: the policy object and the full list of
/// ValidatingWebhookConfigurations, raw (whether the policy's webhook is in it, when it was read),
/// then a fresh violating request in the target namespace and one in the control namespace (the
/// admission metrics window around them is kept in `partial`) and act 3's pod; returns the act's
/// facts, `head` (the watcher, when scaled and when the pods were gone) first, with the metrics
/// `partial` holds, and its summary lines.
async fn at_zero(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    (f2, f3): (&Act2Facts, &Act3Facts),
    (watcher, scaled_at, pods_gone_at): (WatcherFacts, String, String),
) -> Done {
    let policy = cl.policy(cluster::POLICY_NAME).await?;
    let raw_policy = to_value(&policy)?;
    rec.raw("policy", &raw_policy);
    let policy = cluster::derived(derive::policy_presence(&raw_policy, facts::now_rfc3339()))?;
    let policy_uid_2 = uid_of(Some(&f2.policy)).unwrap_or("");
    // The full list of ValidatingWebhookConfigurations, raw.
    let configs = webhook_configurations_raw(cl).await?;
    let registrations_checked_at = facts::now_rfc3339();
    rec.raw("validatingwebhookconfigurations", &configs);
    let present = policy_webhook_in(&configs);
    partial["policy"] = to_value(&policy)?;
    partial["webhook_configurations"] = configs.clone();
    partial["policy_webhook_present"] = present.into();
    partial["registrations_checked_at"] = registrations_checked_at.clone().into();
    rec.save_progress(partial.clone())?;
    let uid = or(&policy.uid, "-");
    let same = policy.uid.as_deref() == Some(policy_uid_2);
    ui.say(m::policy_now(ui.lang(), policy.exists, uid, same));
    let names = webhook_names(&configs).join(", ");
    ui.say(m::registration_now(ui.lang(), present, &names));

    ui.step(m::CREATING_BAD_TARGET);
    let window = crate::metrics::Window::begin(cl).await;
    let target_bad =
        probe::send_pod(cl, "a5-target-bad", TARGET_NAMESPACE, PodKind::Bad, false).await?;
    rec.request("target-bad", &target_bad);
    ui.say(describe_indented(ui, m::req::TARGET_BAD, &target_bad));
    partial["target_bad"] = to_value(&target_bad)?;
    rec.save_progress(partial.clone())?;
    ui.step(m::CREATING_BAD_CONTROL);
    let control = probe::send_pod(cl, "a5-control", CONTROL_NAMESPACE, PodKind::Bad, false).await?;
    rec.request("control", &control);
    ui.say(describe_indented(ui, m::req::CONTROL, &control));
    partial["control"] = to_value(&control)?;
    let admission = window.end(cl).await;
    admission.attach(partial);
    rec.save_progress(partial.clone())?;
    // The existing pod of act 3.
    let existing = probe::observe_pod(cl, &f3.existing.namespace, &f3.existing.name).await?;
    rec.raw("existing", &existing);
    let facts = Act5Facts {
        watcher,
        scaled_at,
        pods_gone_at: Some(pods_gone_at),
        policy,
        webhook_configurations: configs,
        policy_webhook_present: present,
        registrations_checked_at,
        target_bad,
        control,
        existing,
    };
    let p = &facts.existing;
    let kept = if present {
        "registration-kept"
    } else {
        "registration-absent"
    };
    let policy = m::policy_exists(facts.policy.exists, or(&facts.policy.uid, "-"));
    let lines = vec![
        ui.text(m::scaled(&facts.scaled_at, or(&facts.pods_gone_at, "-"))),
        ui.text(policy),
        ui.text(m::policy_webhook_registered(present, kept)),
        describe(ui, m::req::TARGET_BAD, &facts.target_bad),
        describe(ui, m::req::CONTROL, &facts.control),
        ui.text(m::existing(&p.name, or(&p.uid, "-"), or(&p.phase, "-"))),
        ui.text(m::stays_at_zero(or(&facts.watcher.deadline_at, "-"))),
    ];
    let mut value = to_value(&facts)?;
    crate::metrics::carry(partial, &mut value);
    Ok((value, lines))
}

// ---------------------------------------------------------------------------------------------
// Act 6

/// A step of the recovery timeline in act 6's facts: its field's name, its label, the field.
type TimelineField = (&'static str, Text, fn(&Act6Facts) -> &TimelineStep);

/// Steps 2-6 of the recovery timeline in their order (as [`RecoverySeen::tracks`] holds them).
const STEPS: [TimelineField; 5] = [
    ("pod_created", m::step::POD_CREATED, |f| &f.pod_created),
    ("pod_running", m::step::POD_RUNNING, |f| &f.pod_running),
    ("lease_acquired", m::step::LEASE_ACQUIRED, |f| {
        &f.lease_acquired
    }),
    ("webhook_registered", m::step::WEBHOOK_REGISTERED, |f| {
        &f.webhook_registered
    }),
    ("first_explicit_deny", m::step::FIRST_DENY, |f| {
        &f.first_explicit_deny
    }),
];

/// One timeline step being waited for.
#[derive(Debug, Clone, Default)]
struct Track {
    at: Option<String>,
    last_seen: Option<String>,
    waited_ms: u64,
}

impl Track {
    /// One check of a step not yet confirmed (a confirmed one keeps its record): `Ok(at)`
    /// confirms it at `at` (waited since `t0`); `Err(state)` records the state seen, prefixed
    /// with the time of the check (for a confirmed step, it happened between that time and `at`).
    fn saw(&mut self, check: Result<String, String>, t0: Instant) {
        match check {
            _ if self.done() => {}
            Ok(at) => (self.at, self.waited_ms) = (Some(at), t0.elapsed().as_millis() as u64),
            Err(state) => self.last_seen = Some(format!("{} {state}", facts::now_rfc3339())),
        }
    }
    fn done(&self) -> bool {
        self.at.is_some()
    }
    /// The step as recorded: confirmed at `at`, or not confirmed with the last state seen
    /// (`nothing seen` when none) and the time waited until now.
    fn step(&self, t0: Instant) -> TimelineStep {
        let (status, waited_ms) = match self.at {
            Some(_) => (StepStatus::Confirmed, self.waited_ms),
            None => (StepStatus::NotConfirmed, t0.elapsed().as_millis() as u64),
        };
        let nothing = self.at.is_none().then(|| "nothing seen".to_owned());
        TimelineStep {
            status,
            at: self.at.clone(),
            last_seen: self.last_seen.clone().or(nothing),
            waited_ms,
        }
    }
}

/// Milliseconds from `a` to `b` ([`facts::ms_between`]); `None` when `b` is earlier.
fn ms_between(a: Option<&str>, b: Option<&str>) -> Option<u64> {
    u64::try_from(facts::ms_between(a, b)?).ok()
}

/// Finds the fault directory act 5 used (from its facts, else the newest `scale-*`).
fn fault_dir_of(env: &Env, f5: &Act5Facts) -> Result<PathBuf, LabError> {
    if let Some(d) = &f5.watcher.fault_dir {
        return Ok(PathBuf::from(d));
    }
    let root = crate::faults::attempt::faults_root(env.workdir.root());
    let last = common::last_entry(&root, |n| n.starts_with("scale-"));
    last.map_err(LabError::io(&root))?
        .ok_or_else(|| LabError::EvidenceInvalid {
            path: env.workdir.evidence_path(5),
            detail: format!("no scale-down fault directory under {}", root.display()),
        })
}

/// Act 6's recovery timeline, in three named phases: [`restore_replicas`] (step 1, the runner
/// restores unless the healer already did), [`observe_recovery`] (steps 2-6 in rounds until all
/// are confirmed or [`RECOVERY_BOUND`] runs out), then what admission left behind (act 5's admitted
/// pod, act 3's pod) and the summary lines ([`act6_lines`]).
pub(crate) async fn act6(env: &Env) -> Result<ActSummary, LabError> {
    let cl = env.cluster().await?;
    let f3: Act3Facts = read_facts(&env.workdir, 3)?;
    let f4: Act4Facts = read_facts(&env.workdir, 4)?;
    let f5: Act5Facts = read_facts(&env.workdir, 5)?;
    let mut fault = ScaleFault::open(cl.clone(), &fault_dir_of(env, &f5)?)?;
    let mut rec = env.begin_audited(LAB, 6)?;
    let mut partial = serde_json::Value::Null;
    let (cl, ui) = (&cl, &env.ui);
    let body = async {
        let t0 = Instant::now();
        let old_uids: BTreeSet<String> = f4.pods.iter().filter_map(|p| p.uid.clone()).collect();
        let previous_lease_holder = read_lease(cl, &mut rec, "lease-before").await?.holder;

        let (restored, restored_by, outcome) =
            restore_replicas(ui, &mut fault, &mut rec, t0).await?;
        partial = serde_json::json!({"replicas_restored": restored.at, "restored_by": restored_by});
        rec.save_progress(partial.clone())?;

        let seen = observe_recovery(cl, ui, &mut rec, &mut partial, &old_uids, t0).await?;

        // Admission does not remove existing objects: act 5's admitted pod and act 3's pod.
        let admitted =
            probe::observe_pod(cl, &f5.target_bad.namespace, &f5.target_bad.name).await?;
        rec.raw("admitted-during-scale-down", &admitted);
        let existing = probe::observe_pod(cl, &f3.existing.namespace, &f3.existing.name).await?;
        rec.raw("existing", &existing);

        let restored = restored.step(t0);
        let [created, running, lease, registered, denied] =
            seen.tracks.each_ref().map(|t| t.step(t0));
        let facts = Act6Facts {
            leader_takeover_ms: ms_between(running.at.as_deref(), lease.at.as_deref()),
            lease_after_restore_ms: ms_between(restored.at.as_deref(), lease.at.as_deref()),
            replicas_restored: restored,
            restored_by,
            pod_created: created,
            new_pod: seen.new_pod,
            pod_running: running,
            previous_lease_holder,
            lease_acquired: lease,
            lease_holder: seen.lease_holder,
            webhook_registered: registered,
            webhook: seen.webhook,
            first_explicit_deny: denied,
            deny_probes: seen.probes,
            admitted_during_scale_down: Some(admitted),
            existing: Some(existing),
        };
        // When act 6 itself restored the replicas, the first check's window starts at that restore.
        let restored_by_act6 = matches!(outcome, RestoreOutcome::Restored { .. });
        let acquired = seen.lease_acquire_time.as_deref();
        let lines = act6_lines(ui, &facts, &f5, acquired, restored_by_act6);
        let mut facts = to_value(&facts)?;
        crate::metrics::carry(&partial, &mut facts);
        Ok((facts, lines))
    };
    let healed = "the runner restored the replicas (see the evidence's runner-restore-on-exit)";
    let result = common::unless_signalled(6, healed, body).await;
    // Whatever happened, the fault must not outlive the act (the healer is the safety net too).
    if result.is_err() {
        runner_restore(&mut fault, &mut rec, "runner-restore-on-exit").await;
    }
    rec.raw("fault-ledger", fault.ledger());
    let report = fault.files().read_scale_report().ok().flatten();
    rec.raw("watcher-record", report);
    finish(rec, partial, result)
}

/// Act 6, step 1: the runner restores the original replicas unless the healer (or someone else)
/// already did. Returns the step's track, who restored, and the fault's restore outcome.
///
/// Errors: [`LabError::FaultRefused`] when someone else set another replica count (left alone);
/// [`LabError::ClusterMismatch`] when the Deployment is no longer the planned one (UID).
async fn restore_replicas(
    ui: &Ui,
    fault: &mut ScaleFault,
    rec: &mut ActRecorder,
    t0: Instant,
) -> Result<(Track, Option<Restorer>, RestoreOutcome), LabError> {
    ui.step(m::RESTORING_REPLICAS);
    let mut restored = Track::default();
    let outcome = fault.restore(scale::UndoneBy::Runner).await?;
    rec.raw("restore", &outcome);
    let restored_by = match &outcome {
        RestoreOutcome::Restored { at, .. } => {
            restored.saw(Ok(at.clone()), t0);
            Some(Restorer::Runner)
        }
        RestoreOutcome::AlreadyRestored { at } => match fault.restored_by()? {
            Some((who, when)) => {
                // Restored before act 6 looked: `at` is the restorer's own record, and there was
                // no check without it (no `last_seen`).
                restored.saw(Ok(when), t0);
                Some(match who {
                    scale::UndoneBy::Healer => Restorer::Watcher,
                    scale::UndoneBy::Runner
                    | scale::UndoneBy::RunnerExit
                    | scale::UndoneBy::LaterCommand => Restorer::Runner,
                })
            }
            None => {
                restored.saw(Ok(at.clone()), t0);
                // A note, not a check without the step: it does not begin with a time, so it
                // is no `last_check_before` (the step happened at or before `at`).
                restored.last_seen = Some(format!(
                    "restored by someone outside the lab tool: replicas already at the original value at {at}"
                ));
                None
            }
        },
        RestoreOutcome::LeftAlone { replicas, at } => {
            return Err(LabError::FaultRefused {
                reason: format!(
                    "the deployment has {replicas} replicas (set by someone else) at {at}; not touched"
                ),
            });
        }
        RestoreOutcome::DeploymentChanged { uid, at } => {
            return Err(LabError::ClusterMismatch {
                what: format!("deployment {KYVERNO_NAMESPACE}/{ADMISSION_DEPLOYMENT} at {at}"),
                expected: format!("uid {}", fault.plan().deployment_uid),
                found: uid.clone().unwrap_or_else(|| "no such deployment".into()),
            });
        }
    };
    let who = |lang| m::restorer(lang, restored_by);
    let line = m::replicas_restored(or(&restored.at, "-"), who(Lang::Ja), who(Lang::En));
    ui.say(line);
    Ok((restored, restored_by, outcome))
}

/// What act 6 saw of steps 2-6 ([`observe_recovery`]).
#[derive(Default)]
struct RecoverySeen {
    /// Steps 2-6 in the order of [`STEPS`]: created, running, Lease, registered, denied.
    tracks: [Track; 5],
    new_pod: Option<PodObservation>,
    lease_holder: Option<String>,
    /// The Lease's own `acquireTime` (written by the new leader) when it was first seen held.
    lease_acquire_time: Option<String>,
    webhook: Option<WebhookFacts>,
    probes: Vec<RequestRecord>,
}

/// Act 6, steps 2-6, observed in rounds ([`observe_round`]) every [`RECOVERY_INTERVAL`] until all
/// are confirmed or [`RECOVERY_BOUND`] runs out (a step not reached is `not-confirmed` with the
/// last state seen). The API server's admission metrics around the rounds go to `partial`; the
/// probes are recorded as requests.
async fn observe_recovery(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    old_uids: &BTreeSet<String>,
    t0: Instant,
) -> Result<RecoverySeen, LabError> {
    ui.step(m::OBSERVING_RECOVERY);
    let mut seen = RecoverySeen::default();
    let mut progress = progress_each_second(ui, RECOVERY_BOUND, |s: &RecoverySeen| {
        let done = |t: &Track| if t.done() { "✓" } else { "…" };
        let [c, r, l, g, d] = s.tracks.each_ref().map(done);
        m::recovery_progress(c, r, l, g, d)
    });
    let window = crate::metrics::Window::begin(cl).await;
    loop {
        observe_round(cl, rec, &mut seen, old_uids, t0).await?;
        if seen.tracks.iter().all(Track::done) || t0.elapsed() >= RECOVERY_BOUND {
            break;
        }
        progress(&seen, t0.elapsed());
        tokio::time::sleep(RECOVERY_INTERVAL).await;
    }
    let admission = window.end(cl).await;
    admission.attach(partial);
    for r in &seen.probes {
        rec.request("deny-probe-dry-run", r);
    }
    Ok(seen)
}

/// One round of steps 2-6, each checked until confirmed ([`Track::saw`]): the newest controller
/// pod act 4 did not see, created and Running; the leader Lease held by it (Kyverno's identity is
/// the pod name; kyverno v1.19.1 `cmd/kyverno/main.go`, leader election); the policy's webhook
/// registered again; the first explicit deny of a server-side dry-run probe (nothing is stored).
async fn observe_round(
    cl: &Cluster,
    rec: &mut ActRecorder,
    seen: &mut RecoverySeen,
    old_uids: &BTreeSet<String>,
    t0: Instant,
) -> Result<(), LabError> {
    let [created, running, lease, registered, denied] = &mut seen.tracks;
    let pods = cl.admission_pods().await?;
    let new = |p: &&Pod| (p.metadata.uid.as_ref()).is_some_and(|u| !old_uids.contains(u));
    let created_at = |p: &&Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if let Some(p) = pods.iter().filter(new).max_by_key(created_at) {
        let obs = pod_observation(p)?;
        created.saw(Ok(obs.at.clone()), t0);
        let phase = or(&obs.phase, "?");
        let up = (phase == "Running").then(|| obs.at.clone());
        let up = up.ok_or_else(|| format!("pod {} phase {phase}", obs.name));
        running.saw(up, t0);
        if seen.new_pod.as_ref().map(|n| &n.uid) != Some(&obs.uid) {
            rec.raw("new-pod", p);
        }
        seen.new_pod = Some(obs);
    } else {
        let state = if pods.is_empty() {
            "no controller pod".to_owned()
        } else {
            format!("only pods act 4 saw: {}", pod_names(&pods).join(", "))
        };
        created.saw(Err(state.clone()), t0);
        running.saw(Err(state), t0);
    }
    let l = leader_lease(cl).await?;
    let spec = l.as_ref().and_then(|l| l.spec.as_ref());
    let holder = spec.and_then(|s| s.holder_identity.clone());
    match (&seen.new_pod, holder) {
        (Some(p), Some(h)) if !p.name.is_empty() && h.starts_with(&p.name) => {
            if !lease.done() {
                rec.raw("lease-acquired", &l);
                seen.lease_acquire_time = lease_facts(l.as_ref())?.acquire_time;
            }
            lease.saw(Ok(facts::now_rfc3339()), t0);
            seen.lease_holder = Some(h);
        }
        _ => {
            let lf = lease_facts(l.as_ref())?;
            let (holder, renewed) = (or(&lf.holder, "-"), or(&lf.renew_time, "-"));
            lease.saw(Err(format!("holder {holder} renewTime {renewed}")), t0);
        }
    }
    if !registered.done() {
        // Only read while not registered: `webhook` is the registration that confirmed the step.
        seen.webhook = policy_webhook(cl).await?;
        let at = seen.webhook.as_ref().map(|wh| wh.observed_at.clone());
        let absent = "no webhook for the policy in any ValidatingWebhookConfiguration";
        registered.saw(at.ok_or_else(|| absent.into()), t0);
    }
    if !denied.done() {
        let r = probe::send_pod(cl, "a6-probe", TARGET_NAMESPACE, PodKind::Bad, true).await?;
        let deny = (r.outcome == Outcome::ExplicitDeny).then(|| r.answered_at.clone());
        let deny = deny.ok_or_else(|| format!("probe {}: {}", r.name, r.outcome.as_str()));
        denied.saw(deny, t0);
        seen.probes.push(r);
    }
    Ok(())
}

/// Act 6's summary lines: each step's time (or `not-confirmed` with the last state seen), who
/// restored, the leader takeover, and the pod admitted during the scale-down.
fn act6_lines(
    ui: &Ui,
    facts: &Act6Facts,
    f5: &Act5Facts,
    acquired: Option<&str>,
    restored_by_act6: bool,
) -> Vec<String> {
    let lang = ui.lang();
    let show = |label: Text, s: &TimelineStep| {
        let (at, seen) = (s.at.as_deref().unwrap_or("-"), s.last_seen.as_deref());
        if s.status == StepStatus::Confirmed {
            m::step_confirmed(lang, label, at, seen)
        } else {
            m::step_not_confirmed(lang, label, s.waited_ms, seen.unwrap_or("-"))
        }
    };
    let ms = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    let admitted = facts.admitted_during_scale_down.as_ref();
    let exists = admitted.is_some_and(|p| p.exists);
    let uid = admitted.and_then(|p| p.uid.as_deref()).unwrap_or("-");
    let takeover = ms(facts.leader_takeover_ms);
    let after_restore = ms(facts.lease_after_restore_ms);
    let who = |lang| m::restorer(lang, facts.restored_by);
    let restored = show(m::step::REPLICAS_RESTORED, &facts.replicas_restored);
    let [created, running, lease, registered, deny] =
        STEPS.map(|(_, l, step)| show(l, step(facts)));
    let holder = or(&facts.lease_holder, "-");
    let mut lines = vec![
        ui.text(m::by(&restored, who(Lang::Ja), who(Lang::En))),
        created,
        running,
        ui.text(m::lease_holder(&lease, holder, acquired.unwrap_or("-"))),
        registered,
        ui.text(m::probes(&deny, facts.deny_probes.len())),
        ui.text(m::takeover(&takeover, &after_restore)),
        ui.text(m::admitted_pod(&f5.target_bad.name, exists, uid)),
    ];
    // A step already reached at the first check has no earlier check: when the replicas were
    // restored before act 6 started (by the healer), its time is when act 6 first looked, not
    // when it happened.
    let first_check: Vec<&str> = (STEPS.iter())
        .filter(|(_, _, step)| step(facts).status == StepStatus::Confirmed)
        .filter(|(_, _, step)| step(facts).last_seen.is_none())
        .map(|(name, _, _)| *name)
        .collect();
    // When act 6 itself restored the replicas, the first check's window starts at that restore.
    if !first_check.is_empty() && !restored_by_act6 {
        lines.push(ui.text(m::already_reached(&first_check.join(", "))));
    }
    lines
}

// ---------------------------------------------------------------------------------------------
// Act 7

pub(crate) async fn act7(env: &Env) -> Result<ActSummary, LabError> {
    let cl = env.cluster().await?;
    let mut rec = env.begin_audited(LAB, 7)?;
    let (cl, ui) = (&cl, &env.ui);
    let result = async {
        let absent = || LabError::ClusterMismatch {
            what: "the policy's webhook registration".into(),
            expected: "registered (act 6 saw it return)".into(),
            found: "absent".into(),
        };
        let wh = policy_webhook(cl).await?.ok_or_else(absent)?;
        rec.raw("webhook", &wh);
        ui.step(m::DRY_RUN_GOOD);
        let window = crate::metrics::Window::begin(cl).await;
        let good = probe::send_pod(cl, "a7-good", TARGET_NAMESPACE, PodKind::Good, true).await?;
        rec.request("good-dry-run", &good);
        ui.say(describe_indented(ui, m::req::GOOD_DRY_RUN, &good));
        ui.step(m::DRY_RUN_BAD);
        let bad = probe::send_pod(cl, "a7-bad", TARGET_NAMESPACE, PodKind::Bad, true).await?;
        rec.request("bad-dry-run", &bad);
        let admission = window.end(cl).await;
        ui.say(describe_indented(ui, m::req::BAD_DRY_RUN, &bad));
        let facts = Act7Facts {
            good_response: dry_run_echo(&good.raw_response),
            good,
            bad,
            side_effects: wh.side_effects.clone(),
            webhook_name: wh.name.clone(),
        };
        let e = &facts.good_response;
        let labels = format!("{:?}", e.labels);
        let lines = vec![
            describe(ui, m::req::GOOD_DRY_RUN, &facts.good),
            ui.text(m::good_response(&e.kind, &e.name, &e.namespace, &labels)),
            describe(ui, m::req::BAD_DRY_RUN, &facts.bad),
            ui.text(m::side_effects(&facts.webhook_name, &facts.side_effects)),
        ];
        with_admission(ui, &facts, &admission, lines)
    }
    .await;
    finish(rec, serde_json::Value::Null, result)
}

/// What act 7's dry-run answer `body` echoes of the pod (kind, name, namespace, labels; empty
/// when absent), as act 7 records it (and the fixtures' act 7 with it).
pub fn dry_run_echo(body: &serde_json::Value) -> DryRunEcho {
    let s = |p: &str| crate::steps::policy::json_str(body, p);
    DryRunEcho {
        kind: s("/kind"),
        name: s("/metadata/name"),
        namespace: s("/metadata/namespace"),
        labels: body
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value::<BTreeMap<String, String>>(l.clone()).ok())
            .unwrap_or_default(),
    }
}

// ---------------------------------------------------------------------------------------------
// Act 8

/// Act 8's words: what acts 2, 3 and 5-7 support ([`evidence_words`]); `report.json` is checked
/// against them and its digests against 05/06/07 by [`common::act8`].
fn act8_words(w: &Workdir) -> Result<Vec<(&'static str, String)>, LabError> {
    let (f2, f3) = (read_facts(w, 2)?, read_facts(w, 3)?);
    let (f5, f6, f7) = (read_facts(w, 5)?, read_facts(w, 6)?, read_facts(w, 7)?);
    let words = evidence_words(&f2, &f3, &f5, &f6, &f7);
    Ok(words.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_webhook_is_found_by_name_in_the_raw_list() {
        let list = serde_json::json!({
            "kind": "ValidatingWebhookConfigurationList",
            "items": [
                {"metadata": {"name": "kyverno-cleanup-validating-webhook-cfg"}, "webhooks": [{"name": "kyverno-cleanup-controller.kyverno.svc"}]},
                {"metadata": {"name": "kyverno-resource-validating-webhook-cfg"}, "webhooks": [
                    {"name": "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label"}
                ]}
            ]
        });
        assert!(policy_webhook_in(&list));
        assert_eq!(
            webhook_names(&list),
            vec![
                "kyverno-cleanup-validating-webhook-cfg/kyverno-cleanup-controller.kyverno.svc",
                "kyverno-resource-validating-webhook-cfg/vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label"
            ]
        );
        let gone = serde_json::json!({"items": [
            {"metadata": {"name": "kyverno-cleanup-validating-webhook-cfg"}, "webhooks": [{"name": "kyverno-cleanup-controller.kyverno.svc"}]}
        ]});
        assert!(!policy_webhook_in(&gone));
        assert!(!policy_webhook_in(&serde_json::json!({"items": []})));
    }

    /// The order of the six steps is `rules::a`'s (its tests); act 6 measures between them.
    #[test]
    fn ms_between_steps_is_none_when_the_later_is_earlier() {
        let (t16, t32) = (
            Some("2026-11-29T15:00:16.000Z"),
            Some("2026-11-29T15:00:32.000Z"),
        );
        assert_eq!(ms_between(t16, t32), Some(16_000));
        assert_eq!(ms_between(t32, t16), None);
    }

    #[test]
    fn dry_run_echo_reads_the_returned_object() {
        let body = serde_json::json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": {"environment": "lab"}, "uid": "u"}});
        let e = dry_run_echo(&body);
        assert_eq!(e.kind, "Pod");
        assert_eq!(e.name, "p");
        assert_eq!(e.namespace, "ns");
        assert_eq!(e.labels.get("environment").map(String::as_str), Some("lab"));
        let status = serde_json::json!({"kind": "Status", "message": "denied"});
        assert_eq!(dry_run_echo(&status).kind, "Status");
        assert!(dry_run_echo(&status).labels.is_empty());
    }
}
