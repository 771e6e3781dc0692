//! Lab C, acts 3-8 (`docs/labs.md`, "Lab C"): three admission-controller replicas. Acts 1-2 are
//! lab B's ([`super::common`]).
//!
//! The acts' steps and their parameters (the scale's count and length, the waves, each freeze's
//! target and length) are the registry's ([`crate::acts::LAB_C`]); what lab C shares with labs A
//! and B is a step's runner in [`crate::steps`].
//!
//! Act 3 scales the Deployment to three through the scale attempt (plan → ledger → detached
//! healer → the healer scales on request → it puts the original count back at its deadline, 30
//! min, or at once on `heal`), waits (bounded) for three Ready pods, three ready endpoints of `kyverno-svc` and the registration, records the Lease, then a healthy
//! baseline of violating pods sent in parallel waves: the API server keeps one connection per
//! endpoint it dialled, so only concurrent calls reach more than one replica (`docs/lab-c.md`).
//! Which replica served how many requests is read from each replica's own counter
//! (`kyverno_admission_requests_total`, through the API server's pod proxy).
//!
//! Act 4 reads the Lease `kyverno` (its holder is the leader, Kyverno's identity is the pod
//! name), then each replica's process through CRI and `/proc` ([`crate::steps::investigate`], per pod),
//! then the Lease again; it freezes nothing.
//!
//! Acts 5 and 6 freeze one replica's process with the freeze steps ([`crate::steps::freeze`]: plan
//! → ledger → detached healer → SIGSTOP through a pidfd → SIGCONT by the healer at its deadline): act 5 the leader
//! for 20 s under Fail, act 6 a follower for 10 s after the policy is switched to Ignore. During
//! the freeze the violating pods go out in parallel waves (at least 18,
//! [`lab_core::rules::c::MIN_FREEZE_REQUESTS`]) with a control pod per wave, while the Lease and
//! `kyverno-svc`'s EndpointSlice are read each second ([`sample_each_second`]). After the resume:
//! violating pods until the first explicit deny, then a bounded wait for the frozen replica to
//! settle ([`settle_after_resume`]: restarted or running on, all replicas Ready), its process,
//! the Lease and the existing pod.
//!
//! Act 7 puts the original count back through the heal of act 3's scale attempt (the healer is
//! stood down and the Deployment written back on a live read,
//! [`crate::faults::heal::SCALE_BACK_COMMAND`]), waits for it and for an explicit deny. Act 8
//! checks the report with [`lab_core::rules::c::report_expectations`].

use std::cell::RefCell;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{self, Cluster};
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::a::LeaseFacts;
use crate::facts::b::Resumer;
use crate::facts::c::{
    Act3Facts, Act4Facts, Act5Facts, Act6Facts, Act7Facts, EndpointFacts, EndpointSample,
    LeaseSample, ReadyWait, ReplicaFacts, ReplicaFreezeRun, ReplicaProcess, ReplicaRequests,
    ScaleBackFacts, ScaleUpFacts, TargetAfter,
};
use crate::facts::{self, WebhookFacts};
use crate::faults::scale::{HA_FAULT_KIND, ScaleFault, ScaleTo};
use crate::inputs;
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Env, RUNNING_BOUND, TARGET_NAMESPACE, Ui,
    describe, live_context, read_facts, read_input, to_value,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::steps::freeze::{
    FreezeAct, FreezeSpec, after_resume, await_resume, before_freeze, first_deny, freeze_window,
    settle, start_freeze,
};
use crate::steps::investigate::{
    Investigation, check_fault_preconditions, follower_now, investigate_pod, live_replicas,
    replica_now,
};
use crate::steps::observe::{deployment_facts, lease_facts, pod_observation, policy_webhook};
use crate::steps::policy::{Switched, json_str, open_act6};
use crate::steps::scale::{healer_kubeconfig, restore_after_a_failed_act};
use crate::wait::{Check, Wait, WaitError};

const LAB: Lab = Lab::C;

/// Bound of act 3's wait for three Ready pods, three ready endpoints and the registration: a new
/// replica becomes Ready after its startup probe passes (chart 3.9.1: period 6 s, up to 20
/// failures, so at most 120 s), plus the image already on the node and scheduling.
pub const HA_READY_BOUND: Duration = Duration::from_secs(180);

/// The Service in front of the admission controller (chart 3.9.1).
pub const SERVICE: &str = "kyverno-svc";

/// Kyverno's metrics port on each replica (chart 3.9.1, `metricsService.port`).
const METRICS_PORT: u16 = 8000;

/// Lab C's own acts' runners, by act number (acts 1-2 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (3, |env, _| Box::pin(act3(env))),
    (4, |env, _| Box::pin(act4(env))),
    (5, |env, _| Box::pin(act5(env))),
    (6, |env, _| Box::pin(act6(env))),
    (7, |env, _| Box::pin(act7(env))),
    (8, |env, _| Box::pin(act8(env))),
];

/// The replicas the plan scales to.
fn ha_replicas() -> i32 {
    inputs::HaReplicas::VALUE as i32
}

/// Whether `p`'s `Ready` condition is `True`.
fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn replica_facts(p: &Pod) -> Result<ReplicaFacts, LabError> {
    Ok(ReplicaFacts {
        pod: pod_observation(p)?,
        ready: pod_ready(p),
        pod_ip: p.status.as_ref().and_then(|s| s.pod_ip.clone()),
    })
}

/// `kyverno-svc`'s endpoints, from its EndpointSlices (raw slices returned too).
async fn endpoints(cl: &Cluster) -> Result<(Vec<EndpointFacts>, serde_json::Value), LabError> {
    let slices = cl
        .endpoint_slices(cluster::KYVERNO_NAMESPACE, SERVICE)
        .await?;
    let mut out = Vec::new();
    for s in &slices {
        for e in &s.endpoints {
            out.push(EndpointFacts {
                address: e.addresses.first().cloned().unwrap_or_default(),
                pod: e.target_ref.as_ref().and_then(|r| r.name.clone()),
                ready: e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true),
            });
        }
    }
    out.sort_by(|a, b| a.pod.cmp(&b.pod));
    Ok((out, cluster::to_json(&slices)?))
}

/// Sends `n` violating pods at once (each its own task) and returns their records in send order.
///
/// The tasks are released together by a barrier once all `n` are running: spawned and sent one
/// by one, a loaded machine (load above 9, lab-c.md) let a healthy webhook answer each request
/// before the next task had started, and the wave was not parallel.
async fn parallel_wave(
    cl: &Cluster,
    purpose: &str,
    n: u32,
) -> Result<Vec<RequestRecord>, LabError> {
    let mut set = tokio::task::JoinSet::new();
    let together = std::sync::Arc::new(tokio::sync::Barrier::new(n as usize));
    for i in 0..n {
        let cl = cl.clone();
        let purpose = format!("{purpose}-{i}");
        let together = together.clone();
        set.spawn(async move {
            together.wait().await;
            let r = probe::send_pod(&cl, &purpose, TARGET_NAMESPACE, PodKind::Bad, false).await;
            (i, r)
        });
    }
    let mut out = Vec::new();
    while let Some(joined) = set.join_next().await {
        let (i, r) =
            joined.map_err(|e| LabError::Kube(format!("a parallel request's task: {e}")))?;
        out.push((i, r?));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out.into_iter().map(|(_, r)| r).collect())
}

/// Each replica's pod admission counter (`None` with the reason recorded in `raw` when unreadable).
async fn replica_counters(
    cl: &Cluster,
    pods: &[String],
    rec: &mut ActRecorder,
    when: &str,
) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for pod in pods {
        let path = format!(
            "/api/v1/namespaces/{}/pods/{pod}:{METRICS_PORT}/proxy/metrics",
            cluster::KYVERNO_NAMESPACE
        );
        let read = cl.get_text_raw(&path).await;
        let value = match &read {
            Ok((200, text)) => lab_core::metrics::kyverno_pod_requests(text),
            _ => None,
        };
        let kept = match read {
            Ok((status, text)) => serde_json::json!({
                "status": status,
                "lines": text.lines().filter(|l| l.starts_with(lab_core::metrics::KYVERNO_REQUESTS)).collect::<Vec<_>>(),
            }),
            Err(e) => serde_json::json!({"error": e.to_string()}),
        };
        rec.raw(&format!("replica-metrics-{when}:{pod}"), kept);
        out.push(value);
    }
    out
}

/// First times each condition of act 3's wait was seen to hold, and every check whose state
/// differed from the one before (the raw record `ready-wait` the grader re-derives them from).
#[derive(Default)]
struct Seen {
    pods: Option<String>,
    endpoints: Option<String>,
    registration: Option<String>,
    changes: Vec<serde_json::Value>,
}

/// What the wait returns once everything holds.
struct Ready {
    pods: Vec<Pod>,
    endpoints: Vec<EndpointFacts>,
    slices: serde_json::Value,
    webhook: WebhookFacts,
}

/// Appends `state` to a wait's change log with the time `at`, unless it is the last state logged
/// (the log keeps every check whose state differed from the one before: the raw record the
/// graders re-derive a wait's times from).
fn log_change(log: &mut Vec<serde_json::Value>, state: serde_json::Value, at: &str) {
    let last = log.last().map(|l| {
        let mut l = l.clone();
        l.as_object_mut().map(|o| o.remove("at"));
        l
    });
    if last.as_ref() != Some(&state) {
        let mut state = state;
        state["at"] = at.into();
        log.push(state);
    }
}

/// Runs `check` each second until it is done or `bound` runs out, showing `progress(state)` once
/// a second with the seconds waited of `bound` ([`crate::wait::Wait`]: the error says what was
/// waited for and the last state seen).
///
/// Errors: [`LabError::WaitTimedOut`] when `bound` runs out; a check's own error at once.
async fn wait_each_second<T, F, Fut>(
    ui: &Ui,
    what: String,
    bound: Duration,
    progress: fn(&str) -> crate::text::Line,
    check: F,
) -> Result<T, LabError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Check<T, String>, LabError>>,
{
    let mut last_tick = 0;
    Wait::new(what, bound, Duration::from_secs(1))
        .run(
            check,
            |state: &String, elapsed| {
                let secs = elapsed.as_secs();
                if secs > last_tick {
                    last_tick = secs;
                    ui.progress(progress(state), secs, bound.as_secs());
                }
            },
            tokio::time::sleep,
        )
        .await
        .map_err(|e| match e {
            WaitError::TimedOut(t) => t.into(),
            WaitError::Failed(e) => e,
        })
}

/// Waits (bounded, [`HA_READY_BOUND`]) for three Ready pods, three ready endpoints naming them
/// and the policy's registration; returns them and when each first held.
async fn wait_three_ready(cl: &Cluster, ui: &Ui) -> Result<(Ready, Seen, u64), LabError> {
    let n = ha_replicas() as usize;
    let seen = RefCell::new(Seen::default());
    let start = std::time::Instant::now();
    let check = || async {
        let pods: Vec<Pod> = live_replicas(cl).await?;
        let ready: Vec<&Pod> = pods.iter().filter(|p| pod_ready(p)).collect();
        let (eps, slices) = endpoints(cl).await?;
        let ready_eps = eps.iter().filter(|e| e.ready).count();
        let webhook = policy_webhook(cl).await?;
        let now = facts::now_rfc3339();
        let pods_ok = pods.len() == n && ready.len() == n;
        let names: std::collections::BTreeSet<Option<&str>> =
            ready.iter().map(|p| p.metadata.name.as_deref()).collect();
        let eps_ok = ready_eps == n
            && eps
                .iter()
                .filter(|e| e.ready)
                .all(|e| names.contains(&e.pod.as_deref()));
        {
            let mut s = seen.borrow_mut();
            let state = serde_json::json!({
                "pods_listed": pods.len(), "pods_ready": ready.len(), "pods_ok": pods_ok,
                "endpoints_ready": ready_eps, "endpoints_ok": eps_ok,
                "registration": webhook.is_some(),
            });
            log_change(&mut s.changes, state, &now);
            if pods_ok && s.pods.is_none() {
                s.pods = Some(now.clone());
            }
            if eps_ok && s.endpoints.is_none() {
                s.endpoints = Some(now.clone());
            }
            if webhook.is_some() && s.registration.is_none() {
                s.registration = Some(now.clone());
            }
        }
        let state = format!(
            "pods {}/{n} Ready ({} listed), endpoints {ready_eps}/{n} ready, registration {}",
            ready.len(),
            pods.len(),
            if webhook.is_some() {
                "present"
            } else {
                "absent"
            }
        );
        Ok::<_, LabError>(match webhook {
            Some(webhook) if pods_ok && eps_ok => Check::Done(Ready {
                pods,
                endpoints: eps,
                slices,
                webhook,
            }),
            _ => Check::NotYet(state),
        })
    };
    let got = wait_each_second(
        ui,
        format!("{n} Ready admission-controller pods, {n} ready endpoints of {SERVICE} and the registration"),
        HA_READY_BOUND,
        m::waiting_replicas,
        check,
    )
    .await;
    Ok((got?, seen.into_inner(), start.elapsed().as_millis() as u64))
}

/// Act 3: the healer armed, the Deployment scaled to three by it, the bounded wait, the Lease,
/// and the healthy baseline in parallel waves. The three replicas are handed over to the later
/// acts; a failure puts the original count back at once.
pub(crate) async fn act3(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (_plan, loaded) = read_input::<inputs::HaPlan>(&env.workdir, &ctx)?;
    // The registry's scale: how long the healer keeps the three replicas.
    let (_, restore_after_sec) = crate::steps::scale_of(LAB, 3, 0)?;
    // Faults only on a lab-marked cluster.
    let mark = cl.lab_mark().await?;
    let kubeconfig = healer_kubeconfig(&cl)?;
    let mut rec = ActRecorder::begin(&env.workdir, LAB, 3)?.with_audit(env);
    rec.input(&loaded);
    rec.raw("lab-mark", &mark);
    ui.step(m::STARTING_HA_HEALER);
    let original = inputs::OriginalReplicas::VALUE as i32;
    let (mut fault, ready) = ScaleFault::arm_to(
        cl.clone(),
        env.workdir.root(),
        &kubeconfig,
        ctx.deployment_uid.as_deref().unwrap_or_default(),
        original,
        restore_after_sec,
        ScaleTo {
            act: 3,
            kind: HA_FAULT_KIND,
            replicas: ha_replicas(),
        },
    )
    .await?;
    rec.raw("healer-ready", &ready);
    ui.say(m::ha_healer_ready(ready.pid, &ready.deadline_at));
    let mut partial = serde_json::json!({});
    let body = act3_body(
        &cl,
        &ui,
        &mut fault,
        &mut rec,
        &mut partial,
        &ready.deadline_at,
    );
    let result = match common::or_signal(body).await {
        Ok(r) => r,
        Err(sig) => Err(LabError::Interrupted {
            signal: sig.into(),
            act: 3,
            healed:
                "the runner put the original replica count back (see the evidence's runner-restore)"
                    .into(),
        }),
    };
    match result {
        Ok((facts, lines)) => {
            // The three replicas stay for acts 4-7: a later heal leaves them to the healer,
            // except the `heal` command, which puts the original count back.
            if let Err(e) = fault.hand_over() {
                rec.raw("hand-over-record-error", e.to_string());
            }
            rec.complete(facts, lines)
        }
        Err(e) => {
            restore_after_a_failed_act(&mut fault, &mut rec).await;
            rec.interrupt(partial, e.to_string())?;
            Err(e)
        }
    }
}

async fn act3_body(
    cl: &Cluster,
    ui: &Ui,
    fault: &mut ScaleFault,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    deadline_at: &str,
) -> Result<(serde_json::Value, Vec<String>), LabError> {
    let scale = scale_up(ui, fault, rec, partial, deadline_at).await?;
    let (ready, seen, waited_ms) = wait_three_ready(cl, ui).await?;
    rec.raw("ready-wait", &seen.changes);
    rec.raw("endpoint-slices", &ready.slices);
    rec.raw("pods", &ready.pods);
    // Derived right after their raw record (the grader holds the read time to it).
    let mut replicas: Vec<ReplicaFacts> = ready
        .pods
        .iter()
        .map(replica_facts)
        .collect::<Result<_, _>>()?;
    replicas.sort_by(|a, b| a.pod.name.cmp(&b.pod.name));
    let dep = cl.admission_deployment().await?;
    rec.raw("deployment", cluster::to_json(&dep)?);
    let lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease", &lease);
    let lease = lease_facts(lease.as_ref())?;
    let pod_names: Vec<String> = replicas.iter().map(|r| r.pod.name.clone()).collect();
    let wait = ReadyWait {
        ready_pods_at: seen.pods.unwrap_or_default(),
        ready_endpoints_at: seen.endpoints.unwrap_or_default(),
        registration_at: seen.registration.unwrap_or_default(),
        waited_ms,
    };

    // The baseline: parallel waves of violating pods, then the good and the control pods.
    let before = replica_counters(cl, &pod_names, rec, "before").await;
    let window = crate::metrics::Window::begin(cl).await;
    let (waves, wave_size) = crate::steps::waves_of(LAB, 3)?;
    ui.step(m::sending_waves(waves, wave_size));
    let mut bad = Vec::new();
    for w in 0..waves {
        let wave = parallel_wave(cl, &format!("c3-bad-w{w}"), wave_size).await?;
        for r in &wave {
            rec.request("bad", r);
        }
        bad.extend(wave);
    }
    ui.step(m::CREATING_GOOD_TARGET);
    let good = probe::send_pod(cl, "c3-good", TARGET_NAMESPACE, PodKind::Good, false).await?;
    rec.request("good", &good);
    let control = probe::send_pod(cl, "c3-control", CONTROL_NAMESPACE, PodKind::Bad, false).await?;
    rec.request("control", &control);
    let admission = window.end(cl).await;
    let after = replica_counters(cl, &pod_names, rec, "after").await;
    admission.attach(partial);
    partial["bad"] = to_value(&bad)?;
    partial["good"] = to_value(&good)?;
    partial["control"] = to_value(&control)?;
    rec.save_progress(partial.clone())?;
    ui.step(m::WAITING_RUNNING);
    let existing = probe::wait_running(
        cl,
        TARGET_NAMESPACE,
        &good.name,
        RUNNING_BOUND,
        |s, phase| ui.progress(m::phase(phase.unwrap_or("?")), s, RUNNING_BOUND.as_secs()),
    )
    .await?;
    let replica_requests = replica_requests(&pod_names, before, after);
    let facts = Act3Facts {
        scale,
        deployment: deployment_facts(&dep)?,
        replicas,
        endpoints: ready.endpoints,
        webhook: ready.webhook,
        lease,
        wait,
        waves,
        wave_size,
        bad,
        good,
        control,
        existing,
        replica_requests,
    };
    let lines = act3_lines(ui, &facts, &admission);
    let mut value = to_value(&facts)?;
    admission.attach(&mut value);
    Ok((value, lines))
}

/// Act 3's first step ([`crate::acts::Fault::Scale`]): the healer asked to scale to three; its
/// answer recorded (`scale-up`) and kept in the partial facts.
async fn scale_up(
    ui: &Ui,
    fault: &mut ScaleFault,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    deadline_at: &str,
) -> Result<ScaleUpFacts, LabError> {
    ui.step(m::scaling_to(
        cluster::ADMISSION_DEPLOYMENT,
        inputs::HaReplicas::VALUE,
    ));
    let up = fault.scale_down().await?;
    rec.raw("scale-up", &up);
    let scale = ScaleUpFacts {
        fault_id: fault.plan().fault_id.clone(),
        replicas_before: up.replicas_before.max(0) as u32,
        replicas: fault.plan().fault_replicas.max(0) as u32,
        scaled_at: up.answered_at.clone(),
        restore_deadline_at: deadline_at.to_owned(),
    };
    partial["scale"] = to_value(&scale)?;
    rec.save_progress(partial.clone())?;
    Ok(scale)
}

/// Each replica's admission counter before and after an act's requests, by pod.
fn replica_requests(
    pods: &[String],
    before: Vec<Option<u64>>,
    after: Vec<Option<u64>>,
) -> Vec<ReplicaRequests> {
    pods.iter()
        .zip(before.into_iter().zip(after))
        .map(|(pod, (before, after))| ReplicaRequests {
            pod: pod.clone(),
            before,
            after,
        })
        .collect()
}

fn act3_lines(ui: &Ui, f: &Act3Facts, admission: &crate::metrics::AdmissionMetrics) -> Vec<String> {
    let mut lines: Vec<String> = f
        .replicas
        .iter()
        .map(|r| {
            ui.text(m::replica(
                &r.pod.name,
                r.pod.uid.as_deref().unwrap_or("?"),
                r.pod_ip.as_deref().unwrap_or("?"),
                r.ready,
            ))
        })
        .collect();
    lines.push(
        ui.text(m::lease_held_by(
            f.lease.holder.as_deref().unwrap_or("?"),
            &f.lease
                .lease_transitions
                .map_or("?".into(), |t| t.to_string()),
        )),
    );
    let denied = f
        .bad
        .iter()
        .filter(|r| r.outcome == Outcome::ExplicitDeny)
        .count();
    lines.push(ui.text(m::waves_outcome(denied, f.bad.len())));
    for r in &f.replica_requests {
        let delta = match (r.before, r.after) {
            (Some(b), Some(a)) => format!("{}", a.saturating_sub(b)),
            _ => "?".into(),
        };
        lines.push(ui.text(m::replica_requests(&r.pod, &delta)));
    }
    lines.push(describe(ui, m::req::GOOD, &f.good));
    lines.push(describe(ui, m::req::CONTROL, &f.control));
    lines.push(ui.text(m::existing(
        &f.existing.name,
        f.existing.uid.as_deref().unwrap_or("?"),
        f.existing.phase.as_deref().unwrap_or("?"),
    )));
    lines.push(ui.text(crate::metrics::summary_line(admission)));
    lines
}

/// Act 4: the Lease, each replica's process (CRI, `/proc`), the Lease again; nothing is frozen.
pub(crate) async fn act4(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (_plan, loaded) = read_input::<inputs::FreezePlanC>(&env.workdir, &ctx)?;
    let mut cri = env.cri().await?;
    let mut rec = ActRecorder::begin(&env.workdir, LAB, 4)?;
    rec.input(&loaded);
    ui.step(m::INVESTIGATING_REPLICAS);
    let result = act4_body(&cl, &mut cri, &ui, &mut rec, &ctx).await;
    common::finish(rec, result.map_err(|e| (serde_json::Value::Null, e)))
}

async fn act4_body(
    cl: &Cluster,
    cri: &mut crate::cri::CriClient,
    ui: &Ui,
    rec: &mut ActRecorder,
    ctx: &inputs::Context,
) -> Result<(serde_json::Value, Vec<String>), LabError> {
    let raw_lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease-before", &raw_lease);
    let lease = lease_facts(raw_lease.as_ref())?;
    let pods: Vec<Pod> = live_replicas(cl)
        .await?
        .into_iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect();
    if pods.len() != ha_replicas() as usize {
        return Err(LabError::ClusterMismatch {
            what: "running admission-controller pods (act 3's three replicas; the healer puts one back at its deadline)".into(),
            expected: ha_replicas().to_string(),
            found: pods.len().to_string(),
        });
    }
    let mut leader = None;
    let mut followers = Vec::new();
    for pod in &pods {
        let inv = investigate_pod(pod, cri).await?;
        rec.raw(&format!("cri-container:{}", inv.pod_name), &inv.container);
        let p = ReplicaProcess {
            pod_name: inv.pod_name.clone(),
            identity: inv.identity.clone(),
            restart_count: inv.restart_count,
            process_state: inv.state.to_string(),
        };
        if lease.holder.as_deref() == Some(p.pod_name.as_str()) {
            leader = Some(p);
        } else {
            followers.push(p);
        }
    }
    let raw_after = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease-after", &raw_after);
    let lease_after = lease_facts(raw_after.as_ref())?;
    let leader = leader.ok_or_else(|| LabError::ClusterMismatch {
        what: "the Lease kyverno's holder among the running replicas".into(),
        expected: pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect::<Vec<_>>()
            .join(" or "),
        found: lease.holder.clone().unwrap_or_else(|| "no holder".into()),
    })?;
    let facts = Act4Facts {
        node_uid: ctx.node_uid.clone().unwrap_or_default(),
        deployment_uid: ctx.deployment_uid.clone().unwrap_or_default(),
        lease,
        leader,
        followers,
        lease_after,
        investigated_at: facts::now_rfc3339(),
    };
    let mut lines = vec![
        ui.text(m::lease_held_by(
            facts.lease.holder.as_deref().unwrap_or("?"),
            &facts
                .lease
                .lease_transitions
                .map_or("?".into(), |t| t.to_string()),
        )),
    ];
    for (role, p) in std::iter::once(("leader", &facts.leader))
        .chain(facts.followers.iter().map(|p| ("follower", p)))
    {
        lines.push(ui.text(m::replica_process(
            role,
            &p.pod_name,
            p.identity.pid,
            p.identity.pid_start_time_ticks,
            &p.process_state,
        )));
    }
    Ok((to_value(&facts)?, lines))
}

// ---------------------------------------------------------------------------------------------
// Acts 5-6: one replica frozen.

/// What a replica's freeze needs besides lab B's [`FreezeSpec`].
struct ReplicaSpec<'a> {
    /// `leader` or `follower`.
    role: &'static str,
    /// The Lease as read right before the act started the freeze.
    lease_before: LeaseFacts,
    /// The waves: how many, and how many violating pods each.
    waves: u32,
    wave_size: u32,
    /// Act 3's replicas (their counters are read before and after).
    pods: &'a [String],
}

/// The Lease and EndpointSlice reads of [`sample_each_second`], and their raw answers.
#[derive(Default)]
struct Samples {
    lease: Vec<LeaseSample>,
    endpoints: Vec<EndpointSample>,
    raw: Vec<serde_json::Value>,
}

/// Reads the Lease `kyverno` and `kyverno-svc`'s EndpointSlices about each second
/// ([`lab_core::rules::c::SAMPLE_PERIOD`]) until `stop` says so; every answer is kept raw.
async fn sample_each_second(cl: Cluster, stop: tokio::sync::watch::Receiver<bool>) -> Samples {
    let mut out = Samples::default();
    let mut tick = tokio::time::interval(lab_core::rules::c::SAMPLE_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if *stop.borrow() {
            break;
        }
        let (lease, slices) = tokio::join!(
            cl.lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE),
            endpoints(&cl)
        );
        let at = facts::now_rfc3339();
        match lease.and_then(|l| Ok((lease_facts(l.as_ref())?, l))) {
            Ok((f, l)) => {
                out.raw
                    .push(serde_json::json!({"what": "lease", "at": at, "lease": l}));
                out.lease.push(LeaseSample {
                    at: at.clone(),
                    holder: f.holder,
                    renew_time: f.renew_time,
                    lease_transitions: f.lease_transitions,
                    error: None,
                });
            }
            Err(e) => out.lease.push(LeaseSample {
                at: at.clone(),
                holder: None,
                renew_time: None,
                lease_transitions: None,
                error: Some(e.to_string()),
            }),
        }
        match slices {
            Ok((eps, raw)) => {
                out.raw
                    .push(serde_json::json!({"what": "endpoint-slices", "at": at, "slices": raw}));
                out.endpoints.push(EndpointSample {
                    at,
                    endpoints: eps,
                    error: None,
                });
            }
            Err(e) => out.endpoints.push(EndpointSample {
                at,
                endpoints: vec![],
                error: Some(e.to_string()),
            }),
        }
    }
    out
}

/// What [`waves_during_freeze`] saw: the registration read (configuration and webhook, verbatim)
/// and when, the frozen process's state, the violating and the control records.
struct DuringWaves {
    registration: Option<(serde_json::Value, serde_json::Value)>,
    registration_checked_at: String,
    state: Option<char>,
    bad: Vec<RequestRecord>,
    control: Vec<RequestRecord>,
}

/// During the freeze: the registration, the process state, then `rs.waves` parallel waves of
/// `rs.wave_size` violating pods ([`parallel_wave`]), each sent together with a control pod; each
/// wave's outcome is shown as it ends.
async fn waves_during_freeze(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    spec: &FreezeSpec<'_>,
    rs: &ReplicaSpec<'_>,
    fz: &crate::faults::freeze::Freeze,
) -> Result<DuringWaves, LabError> {
    let (met_word, met) = met_frozen(spec.act);
    let registration = cl.find_webhook(&spec.webhook_name).await?;
    let registration_checked_at = facts::now_rfc3339();
    let state = fz.state()?;
    let mut bad = Vec::new();
    let mut control = Vec::new();
    for w in 0..rs.waves {
        let (bad_name, control_name) = (
            format!("{}-frozen-bad-w{w}", spec.tag),
            format!("{}-frozen-control-w{w}", spec.tag),
        );
        let (wave, ctl) = tokio::join!(
            parallel_wave(cl, &bad_name, rs.wave_size),
            probe::send_pod(cl, &control_name, CONTROL_NAMESPACE, PodKind::Bad, false),
        );
        let (wave, ctl) = (wave?, ctl?);
        for r in &wave {
            rec.request("frozen-bad", r);
        }
        rec.request("frozen-control", &ctl);
        let n_met = wave.iter().filter(|r| r.outcome == met).count();
        let denied = wave
            .iter()
            .filter(|r| r.outcome == Outcome::ExplicitDeny)
            .count();
        ui.say(ui.text(m::freeze_wave(w + 1, n_met, met_word, denied, wave.len())));
        bad.extend(wave);
        control.push(ctl);
    }
    Ok(DuringWaves {
        registration: registration
            .map(|(cfg, wh)| Ok::<_, LabError>((cluster::to_json(&cfg)?, cluster::to_json(&wh)?)))
            .transpose()?,
        registration_checked_at,
        state,
        bad,
        control,
    })
}

/// What a violating request that reached the frozen replica ends as in act `act`: under Fail
/// (act 5) a `webhook-timeout`, under Ignore (act 6) `stored` after the timeout.
fn met_frozen(act: u8) -> (&'static str, Outcome) {
    if act == 5 {
        ("webhook-timeout", Outcome::WebhookTimeout)
    } else {
        ("stored", Outcome::Stored)
    }
}

/// The `kyverno` container's restart count, `Ready` and UID of the pod named `name` (`None`:
/// gone).
fn pod_state(pods: &[Pod], name: &str) -> Option<(u32, bool, Option<String>)> {
    let p = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(name))?;
    let restarts = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == "kyverno"))
        .map_or(0, |c| c.restart_count.max(0) as u32);
    Some((restarts, pod_ready(p), p.metadata.uid.clone()))
}

/// After the first explicit deny: waits (bounded, [`lab_core::rules::c::SETTLE_BOUND`]) until
/// every replica is `Ready` and a ready endpoint, the Lease names one of them, and no earlier
/// than the Lease's duration plus its retry after the resume (a replica that lost leadership
/// exits within its renew deadline, Kyverno v1.19 `cmd/kyverno/main.go`; kubelet then restarts
/// it), seen on two reads in a row. Every change of state is kept raw (`settle-wait`).
async fn settle_after_resume(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    target: &str,
    resumed_at: &str,
) -> Result<(Vec<Pod>, serde_json::Value, u64), LabError> {
    let n = ha_replicas() as usize;
    let not_before = facts::parse_rfc3339(resumed_at)
        .map(|r| r + chrono::Duration::seconds(LEASE_DURATION_SEC + LEASE_RETRY_SEC))
        .unwrap_or_else(chrono::Utc::now);
    let changes = RefCell::new(Vec::<serde_json::Value>::new());
    let steady = RefCell::new(0u32);
    let start = std::time::Instant::now();
    let check = || async {
        let pods = live_replicas(cl).await?;
        let (eps, _) = endpoints(cl).await?;
        let lease = cl
            .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
            .await?;
        let holder = lease_facts(lease.as_ref())?.holder;
        let ready = pods.iter().filter(|p| pod_ready(p)).count();
        let ready_eps = eps.iter().filter(|e| e.ready).count();
        let target_state = pod_state(&pods, target);
        let holder_is_replica = pods
            .iter()
            .any(|p| p.metadata.name.is_some() && p.metadata.name == holder);
        let late_enough = chrono::Utc::now() >= not_before;
        let ok = pods.len() == n && ready == n && ready_eps == n && holder_is_replica;
        let state = serde_json::json!({
            "pods_listed": pods.len(), "pods_ready": ready, "endpoints_ready": ready_eps,
            "lease_holder": holder, "target_restart_count": target_state.as_ref().map(|t| t.0),
            "target_ready": target_state.as_ref().map(|t| t.1),
        });
        log_change(&mut changes.borrow_mut(), state, &facts::now_rfc3339());
        let mut steady = steady.borrow_mut();
        *steady = if ok { *steady + 1 } else { 0 };
        let text = format!(
            "pods {ready}/{n} Ready, endpoints {ready_eps}/{n} ready, Lease {}, {target} restarts {}",
            holder.as_deref().unwrap_or("?"),
            target_state.map_or("gone".into(), |t| t.0.to_string())
        );
        Ok::<_, LabError>(if ok && *steady >= 2 && late_enough {
            Check::Done(pods)
        } else {
            Check::NotYet(text)
        })
    };
    let got = wait_each_second(
        ui,
        format!("{n} Ready replicas and ready endpoints after the freeze of {target}"),
        lab_core::rules::c::SETTLE_BOUND,
        m::waiting_settle,
        check,
    )
    .await;
    let changes = serde_json::Value::Array(changes.into_inner());
    rec.raw("settle-wait", &changes);
    Ok((got?, changes, start.elapsed().as_millis() as u64))
}

/// The Lease `kyverno`'s duration, seconds (Kyverno v1.19 `cmd/kyverno/main.go`, leader election
/// of the admission controller; `docs/labs.md`, "Lab C").
const LEASE_DURATION_SEC: i64 = 12;
/// Its retry period, seconds (same source).
const LEASE_RETRY_SEC: i64 = 2;

/// One replica's freeze and everything around it, in named steps: lab B's [`before_freeze`]
/// (registration, Lease, liveness gap), each replica's counter, the freeze ([`start_freeze`]),
/// the sampler ([`sample_each_second`]) beside the waves ([`waves_during_freeze`]), the healer's
/// resume ([`await_resume`]), the first explicit deny ([`after_resume`]), the settle
/// ([`settle_after_resume`]), the frozen replica's process, the counters, Lease and existing pod.
async fn replica_freeze(
    cx: FreezeAct<'_>,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
    rs: &ReplicaSpec<'_>,
) -> Result<ReplicaFreezeRun, LabError> {
    let FreezeAct {
        env,
        cluster: cl,
        cri,
        rec,
        partial,
    } = cx;
    let ui = env.ui;
    before_freeze(env, cl, rec, inv, spec).await?;
    let before = replica_counters(cl, rs.pods, rec, "before").await;
    ui.step(m::freezing_replica(rs.role, &inv.pod_name));
    let mut fz = start_freeze(env, rec, inv, spec)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn(sample_each_second(cl.clone(), stop_rx));
    ui.step(m::during_freeze_waves(rs.waves, rs.wave_size));
    let during = waves_during_freeze(cl, &ui, rec, spec, rs, &fz).await;
    let resume = match during {
        Ok(_) => await_resume(&mut fz, &ui, spec).await,
        Err(_) => Ok(fz.resume(crate::faults::freeze::UndoneBy::Runner, None)?),
    };
    let _ = stop_tx.send(true);
    let samples = sampler
        .await
        .map_err(|e| LabError::Kube(format!("the Lease and EndpointSlice sampler: {e}")))?;
    rec.raw("freeze-samples", &samples.raw);
    let during = during?;
    let resume = resume?;
    let ledger = fz.ledger().clone();
    drop(fz);
    rec.raw("fault-ledger-resumed", &ledger);
    *partial = serde_json::json!({
        "freeze": ledger, "bad": during.bad, "control": during.control,
        "lease_samples": samples.lease, "endpoint_samples": samples.endpoints,
    });
    rec.save_progress(partial.clone())?;
    let after = after_resume(cl, &ui, rec, spec.tag).await?;
    let (first_explicit_deny, first_deny_after_resume_ms) = first_deny(&after, &resume.resumed_at);
    let (target_after, lease_after) =
        target_after(cl, &ui, cri, rec, inv, &resume.resumed_at).await?;
    let after_counts = replica_counters(cl, rs.pods, rec, "after").await;
    let existing = probe::observe_pod(cl, &spec.existing.namespace, &spec.existing.name).await?;
    let replica_requests = replica_requests(rs.pods, before, after_counts);
    let registration_snapshot = during
        .registration
        .as_ref()
        .map(|(_, wh)| wh.clone())
        .unwrap_or(serde_json::Value::Null);
    let timeout_seconds = registration_snapshot
        .get("timeoutSeconds")
        .and_then(|v| v.as_u64())
        .unwrap_or(10) as u32;
    Ok(ReplicaFreezeRun {
        target_role: rs.role.to_owned(),
        target_pod: inv.pod_name.clone(),
        lease_before: rs.lease_before.clone(),
        freeze: freeze_window(inv, spec, &ledger, during.state, &resume),
        registration_present_during_freeze: during.registration.is_some(),
        registration_snapshot,
        registration_checked_at: during.registration_checked_at,
        timeout_seconds,
        waves: rs.waves,
        wave_size: rs.wave_size,
        bad: during.bad,
        control: during.control,
        lease_samples: samples.lease,
        endpoint_samples: samples.endpoints,
        replica_requests,
        after_resume: after,
        first_explicit_deny,
        first_deny_after_resume_ms,
        target_after,
        lease_after,
        existing,
    })
}

/// The frozen replica after the resume (acts 5 and 6): the bounded wait for the replicas to
/// settle ([`settle_after_resume`]), the target's pod, process (CRI, `/proc`), restarts and
/// readiness, then the Lease. Records `pods-after`, `cri-container-after` (or its error) and
/// `lease-after`.
async fn target_after(
    cl: &Cluster,
    ui: &Ui,
    cri: &mut crate::cri::CriClient,
    rec: &mut ActRecorder,
    inv: &Investigation,
    resumed_at: &str,
) -> Result<(TargetAfter, LeaseFacts), LabError> {
    let (pods, _, waited_ms) = settle_after_resume(cl, ui, rec, &inv.pod_name, resumed_at).await?;
    let settled_at = facts::now_rfc3339();
    rec.raw("pods-after", &pods);
    let target_pod = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(inv.pod_name.as_str()));
    let identity_after = match target_pod {
        Some(p) => match investigate_pod(p, cri).await {
            Ok(a) => {
                rec.raw("cri-container-after", &a.container);
                Some(a.identity)
            }
            Err(e) => {
                rec.raw("cri-container-after-error", e.to_string());
                None
            }
        },
        None => None,
    };
    let (restart_after, _, uid_after) =
        pod_state(&pods, &inv.pod_name).unwrap_or((inv.restart_count, false, None));
    let ready_after = target_pod.is_some_and(pod_ready);
    let raw_lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease-after", &raw_lease);
    let lease_after = lease_facts(raw_lease.as_ref())?;
    let target = TargetAfter {
        pod: inv.pod_name.clone(),
        pod_uid_before: inv.identity.pod_uid.clone(),
        pod_uid_after: uid_after,
        restart_count_before: inv.restart_count,
        restart_count_after: restart_after,
        ready_after,
        identity_after,
        holds_lease_after: lease_after.holder.as_deref() == Some(inv.pod_name.as_str()),
        settled_at,
        waited_ms,
    };
    Ok((target, lease_after))
}

/// The summary lines of a replica's freeze.
fn freeze_lines(ui: &Ui, act: u8, run: &ReplicaFreezeRun) -> Vec<String> {
    let (met_word, met) = met_frozen(act);
    let (n_met, denied, other) = lab_core::rules::c::freeze_counts(run, met);
    let takeover = match lab_core::rules::c::takeover(run) {
        Some((holder, at)) => {
            let ms = match (
                facts::parse_rfc3339(&run.freeze.frozen_at),
                facts::parse_rfc3339(at),
            ) {
                (Some(f), Some(a)) => (a - f).num_milliseconds(),
                _ => -1,
            };
            ui.text(m::lease_taken_over(holder, ms))
        }
        None => m::LEASE_KEPT.get(ui.lang()).to_owned(),
    };
    let frozen_ready = run
        .endpoint_samples
        .iter()
        .filter(|s| {
            s.endpoints
                .iter()
                .any(|e| e.pod.as_deref() == Some(run.target_pod.as_str()) && e.ready)
        })
        .count();
    let t = &run.target_after;
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
        ui.text(m::freeze_waves_outcome(
            n_met,
            met_word,
            denied,
            other,
            run.bad.len(),
        )),
    ];
    for r in &run.control {
        lines.push(describe(ui, m::req::CONTROL_FROZEN, r));
    }
    lines.push(ui.text(m::lease_during_freeze(
        run.lease_before.holder.as_deref().unwrap_or("?"),
        &takeover,
    )));
    lines.push(ui.text(m::frozen_endpoint(
        &run.target_pod,
        frozen_ready,
        run.endpoint_samples.len(),
    )));
    for r in &run.replica_requests {
        let delta = match (r.before, r.after) {
            (Some(b), Some(a)) if a >= b => format!("{}", a - b),
            (Some(b), Some(a)) => format!("? ({b} → {a})"),
            _ => "?".into(),
        };
        lines.push(ui.text(m::replica_requests(&r.pod, &delta)));
    }
    lines.push(
        ui.text(m::first_deny_after_resume(
            &run.first_deny_after_resume_ms
                .map(|ms| ms.to_string())
                .unwrap_or_else(|| "-".into()),
            t.restart_count_before,
            t.restart_count_after,
        )),
    );
    lines.push(ui.text(m::replica_after(
        &t.pod,
        t.restart_count_before,
        t.restart_count_after,
        t.pod_uid_after.as_deref() == Some(t.pod_uid_before.as_str()),
        t.holds_lease_after,
    )));
    lines.push(ui.text(m::existing(
        &run.existing.name,
        run.existing.uid.as_deref().unwrap_or("?"),
        run.existing.phase.as_deref().unwrap_or("?"),
    )));
    lines
}

/// Act 5: the leader (act 4's, still the Lease's holder, the same process) frozen for 20 s
/// under Fail.
pub(crate) async fn act5(env: &Env) -> Result<ActSummary, LabError> {
    // The registry's freeze: for the plan's `resume_after_sec` (the student's freeze-plan.json).
    let (_, resume_after_sec) =
        crate::steps::freeze_of(LAB, 5, u64::from(inputs::ResumeAfterSec::VALUE))?;
    let (waves, wave_size) = crate::steps::waves_of(LAB, 5)?;
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (plan, loaded) = read_input::<inputs::FreezePlanC>(&env.workdir, &ctx)?;
    let mark =
        check_fault_preconditions(&cl, (plan.node_uid.as_str(), plan.deployment_uid.as_str()))
            .await?;
    let a3: Act3Facts = read_facts(&env.workdir, 3)?;
    let a4: Act4Facts = read_facts(&env.workdir, 4)?;
    let healed = crate::faults::heal::recent();
    let mut cri = env.cri().await?;
    // The act's span starts before its first read that goes into the evidence (the Lease and
    // the leader's process below): begun after them, a read could fall outside the act by more
    // than the clock skew allowed (55 ms seen on a loaded machine, 2026-12-03). The recorder
    // writes nothing until the act ends, so a refusal below still leaves no evidence.
    let rec = ActRecorder::begin(&env.workdir, LAB, 5)?.with_audit(env);
    let raw_lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    let lease = lease_facts(raw_lease.as_ref())?;
    if lease.holder.as_deref() != Some(a4.leader.pod_name.as_str()) {
        return Err(LabError::FaultRefused {
            reason: format!(
                "the Lease kyverno is held by {:?}, act 4 found the leader {}; act 4 cannot be run again in this work directory: reproduce in a fresh lab (heal first: it puts the original replica count back)",
                lease.holder, a4.leader.pod_name
            ),
        });
    }
    let inv = replica_now(&cl, &mut cri, &a4.leader.pod_name).await?;
    if inv.identity != a4.leader.identity {
        return Err(LabError::FaultRefused {
            reason: format!(
                "the leader's process changed since act 4 (act 4: container {} pid {} starttime {}; now: container {} pid {} starttime {}); reproduce in a fresh lab (heal first: it puts the original replica count back)",
                a4.leader.identity.container_id,
                a4.leader.identity.pid,
                a4.leader.identity.pid_start_time_ticks,
                inv.identity.container_id,
                inv.identity.pid,
                inv.identity.pid_start_time_ticks
            ),
        });
    }
    let mut rec = rec;
    rec.input(&loaded);
    rec.raw("lab-mark", &mark);
    rec.raw("healed-earlier-faults", &healed);
    rec.raw("lease-before", &raw_lease);
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        act: 5,
        resume_after_sec,
        webhook_name: cluster::fine_grained_webhook_name("Fail", cluster::POLICY_NAME),
        existing: &a3.existing,
        tag: "c5",
    };
    let pods: Vec<String> = a3.replicas.iter().map(|r| r.pod.name.clone()).collect();
    let rs = ReplicaSpec {
        role: "leader",
        lease_before: lease,
        waves,
        wave_size,
        pods: &pods,
    };
    run_replica_freeze(env, &cl, &mut cri, rec, &inv, &spec, &rs, None).await
}

/// Runs [`replica_freeze`] inside the act's metrics window, undoing the freeze on a signal, and
/// completes the act's evidence (`head`: act 6's facts before the run, flattened with it).
#[allow(clippy::too_many_arguments)]
async fn run_replica_freeze(
    env: &Env,
    cl: &Cluster,
    cri: &mut crate::cri::CriClient,
    mut rec: ActRecorder,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
    rs: &ReplicaSpec<'_>,
    head: Option<(serde_json::Value, Vec<String>, crate::metrics::Window)>,
) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let mut partial = serde_json::Value::Null;
    let (head, mut lines, window) = match head {
        Some((h, l, w)) => (Some(h), l, w),
        None => (None, vec![], crate::metrics::Window::begin(cl).await),
    };
    let outcome = common::or_signal(replica_freeze(
        FreezeAct {
            env,
            cluster: cl,
            cri,
            rec: &mut rec,
            partial: &mut partial,
        },
        inv,
        spec,
        rs,
    ))
    .await;
    let admission = window.end(cl).await;
    let merge = |mut run: serde_json::Value| {
        if let (Some(serde_json::Value::Object(h)), serde_json::Value::Object(r)) =
            (head.clone(), &mut run)
        {
            for (k, v) in h {
                r.insert(k, v);
            }
        }
        run
    };
    match settle(env, spec, outcome, partial, &mut rec) {
        Ok(run) => {
            lines.extend(freeze_lines(&ui, spec.act, &run));
            lines.push(ui.text(crate::metrics::summary_line(&admission)));
            let mut facts = merge(to_value(&run)?);
            admission.attach(&mut facts);
            rec.complete(facts, lines)
        }
        Err((p, e)) => {
            let mut facts = merge(p);
            admission.attach(&mut facts);
            common::finish(rec, Err((facts, e)))
        }
    }
}

/// Act 6: the policy switched to Ignore (same UID), a healthy deny, then a follower (a replica
/// the Lease does not name now) frozen for 10 s.
pub(crate) async fn act6(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    // The registry's freeze (a follower, for its own length) and waves.
    let (_, resume_after_sec) = crate::steps::freeze_of(LAB, 6, 0)?;
    let (waves, wave_size) = crate::steps::waves_of(LAB, 6)?;
    let opened = open_act6::<inputs::FreezePlanC, Act3Facts>(env, LAB, |p| {
        (p.node_uid.as_str(), p.deployment_uid.as_str())
    })
    .await;
    let Switched {
        cluster: cl,
        mut cri,
        mut rec,
        partial,
        act3: a3,
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
    let chosen = follower_now(&cl, &mut cri, &mut rec).await;
    let (lease, inv) = match chosen {
        Ok(x) => x,
        Err(e) => return common::finish(rec, Err((partial, e))),
    };
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        act: 6,
        resume_after_sec,
        webhook_name: ignore_name,
        existing: &a3.existing,
        tag: "c6",
    };
    let pods: Vec<String> = a3.replicas.iter().map(|r| r.pod.name.clone()).collect();
    let rs = ReplicaSpec {
        role: "follower",
        lease_before: lease,
        waves,
        wave_size,
        pods: &pods,
    };
    let lines = vec![
        ui.text(m::policy_unchanged(&json_str(&stored, "/metadata/uid"))),
        ui.text(m::webhook_failure_policy(
            &webhook.name,
            &webhook.failure_policy,
        )),
        describe(&ui, m::req::HEALTHY_BAD_IGNORE, &healthy_bad),
    ];
    let head = serde_json::json!({
        "policy_uid_before": policy_uid_before,
        "policy": stored,
        "webhook": to_value(&webhook)?,
        "healthy_bad": to_value(&healthy_bad)?,
    });
    run_replica_freeze(
        env,
        &cl,
        &mut cri,
        rec,
        &inv,
        &spec,
        &rs,
        Some((head, lines, window)),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Act 7: back to the original count.

/// Act 7: act 3's scale attempt healed (its healer stood down, the original count written back
/// on a live read), then a bounded wait for the original count of Ready replicas and the
/// registration, violating pods until an explicit deny, and the existing pod.
pub(crate) async fn act7(env: &Env) -> Result<ActSummary, LabError> {
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (_r, loaded) = read_input::<inputs::RecoveryC>(&env.workdir, &ctx)?;
    let a3: Act3Facts = read_facts(&env.workdir, 3)?;
    let mut rec = ActRecorder::begin(&env.workdir, LAB, 7)?.with_audit(env);
    rec.input(&loaded);
    let mut partial = serde_json::Value::Null;
    let result = common::or_signal(act7_body(env, &cl, &mut rec, &mut partial, &a3)).await;
    let result = match result {
        Ok(r) => r,
        Err(sig) => Err(LabError::Interrupted {
            signal: sig.into(),
            act: 7,
            healed: "the scale back is the heal's: run `heal` to finish it".into(),
        }),
    };
    match result {
        Ok((facts, lines)) => rec.complete(facts, lines),
        Err(e) => common::finish(rec, Err((partial, e))),
    }
}

async fn act7_body(
    env: &Env,
    cl: &Cluster,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    a3: &Act3Facts,
) -> Result<(serde_json::Value, Vec<String>), LabError> {
    let ui = env.ui;
    let t0 = std::time::Instant::now();
    let scale_back = scale_back(env, cl, rec, a3).await?;
    *partial = serde_json::json!({ "scale_back": to_value(&scale_back)? });
    rec.save_progress(partial.clone())?;
    let (pods, dep, webhook_cfg) = wait_original_count(cl, &ui, rec).await?;
    let dep_facts = deployment_facts(&dep)?;
    let mut replicas: Vec<ReplicaFacts> =
        pods.iter().map(replica_facts).collect::<Result<_, _>>()?;
    replicas.sort_by(|a, b| a.pod.name.cmp(&b.pod.name));
    let raw_lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease", &raw_lease);
    let lease = lease_facts(raw_lease.as_ref())?;
    let policy = cl.policy(cluster::POLICY_NAME).await?;
    rec.raw("policy", &policy);
    let policy_uid = policy
        .as_ref()
        .and_then(|p| p.pointer("/metadata/uid"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let (cfg, wh) = webhook_cfg;
    rec.raw("webhook-configuration", &cfg);
    let webhook = common::webhook_facts(&cfg, &wh)?;
    let window = crate::metrics::Window::begin(cl).await;
    ui.step(m::SENDING_NEW_VIOLATING);
    let bound = lab_core::rules::c::SCALE_BACK_BOUND.saturating_sub(t0.elapsed());
    let probes = common::until_explicit_deny(
        cl,
        "c7-bad",
        TARGET_NAMESPACE,
        false,
        bound.max(common::ANSWER_BOUND),
        |r, s| ui.progress(describe(&ui, m::req::VIOLATING, r), s, bound.as_secs()),
    )
    .await?;
    for r in &probes {
        rec.request("deny-probe", r);
    }
    let admission = window.end(cl).await;
    let healthy_bad = probes
        .last()
        .cloned()
        .expect("until_explicit_deny sends at least one request");
    let existing = probe::observe_pod(cl, &a3.existing.namespace, &a3.existing.name).await?;
    let facts = Act7Facts {
        scale_back,
        deployment: dep_facts,
        replicas,
        lease,
        policy_uid,
        webhook,
        deny_probes: probes,
        healthy_bad,
        existing,
        waited_ms: t0.elapsed().as_millis() as u64,
    };
    let lines = act7_lines(&ui, &facts, a3, &admission);
    let mut value = to_value(&facts)?;
    admission.attach(&mut value);
    Ok((value, lines))
}

/// Act 7's first step ([`crate::acts::Step::Restore`]): act 3's scale attempt healed (its healer
/// stood down, the original count written back on a live read), read back from the attempt's
/// heal record. Records the Deployment before, the heal's summary and record.
///
/// Errors: [`LabError::FaultRefused`] when the heal did not close act 3's attempt.
async fn scale_back(
    env: &Env,
    cl: &Cluster,
    rec: &mut ActRecorder,
    a3: &Act3Facts,
) -> Result<ScaleBackFacts, LabError> {
    let ui = env.ui;
    let dep_before = cl.admission_deployment().await?;
    rec.raw("deployment-before", cluster::to_json(&dep_before)?);
    let replicas_before = deployment_facts(&dep_before)?.replicas;
    ui.step(m::SCALING_BACK);
    let summary = crate::faults::heal::heal_workdir(
        &env.workdir,
        Some(cl),
        crate::faults::heal::SCALE_BACK_COMMAND,
    )
    .await;
    rec.raw("scale-back-heal", &summary.healed);
    if !summary.errors.is_empty() {
        rec.raw("scale-back-errors", &summary.errors);
    }
    let dir = crate::faults::attempt::faults_root(env.workdir.root()).join(&a3.scale.fault_id);
    let record = crate::faults::heal::read_heal(&dir).ok_or_else(|| LabError::FaultRefused {
        reason: format!(
            "act 3's scale attempt {} was not closed by the heal: {}",
            a3.scale.fault_id,
            summary
                .errors
                .iter()
                .chain(&summary.live)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ),
    })?;
    rec.raw("scale-attempt-heal", &record);
    let scale_back = ScaleBackFacts {
        fault_id: a3.scale.fault_id.clone(),
        action: record.action.clone(),
        replicas_before,
        replicas: inputs::OriginalReplicas::VALUE,
        at: record.at.clone(),
    };
    Ok(scale_back)
}

/// Act 7's summary lines.
fn act7_lines(
    ui: &Ui,
    facts: &Act7Facts,
    a3: &Act3Facts,
    admission: &crate::metrics::AdmissionMetrics,
) -> Vec<String> {
    let mut lines = vec![ui.text(m::scaled_back(
        &facts.scale_back.action,
        facts.scale_back.replicas_before,
        facts.deployment.replicas,
        facts.replicas.len(),
    ))];
    lines.push(
        ui.text(m::lease_held_by(
            facts.lease.holder.as_deref().unwrap_or("?"),
            &facts
                .lease
                .lease_transitions
                .map_or("?".into(), |t| t.to_string()),
        )),
    );
    lines.push(ui.text(m::policy_uid(&facts.policy_uid)));
    lines.push(describe(ui, m::req::VIOLATING, &facts.healthy_bad));
    lines.push(ui.text(m::existing_vs_act3(
        &facts.existing.name,
        facts.existing.uid.as_deref().unwrap_or("?"),
        facts.existing.phase.as_deref().unwrap_or("?"),
        a3.existing.uid.as_deref().unwrap_or("?"),
    )));
    lines.push(ui.text(crate::metrics::summary_line(admission)));
    lines
}

/// Waits (bounded, [`lab_core::rules::c::SCALE_BACK_BOUND`]) until the Deployment asks for the
/// original count, that many live replicas are `Ready` (the others gone), one of them holds the
/// Lease (a leader scaled away keeps naming itself until the Lease expires, 12 s, and another
/// takes it), and the policy's Ignore webhook is registered. Every change of state is kept raw
/// (`scale-back-wait`).
#[allow(clippy::type_complexity)]
async fn wait_original_count(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
) -> Result<
    (
        Vec<Pod>,
        k8s_openapi::api::apps::v1::Deployment,
        (
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhook,
        ),
    ),
    LabError,
> {
    let n = inputs::OriginalReplicas::VALUE as usize;
    let name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
    let changes = RefCell::new(Vec::<serde_json::Value>::new());
    let check = || async {
        let dep = cl.admission_deployment().await?;
        let all = cl.admission_pods().await?;
        let live: Vec<Pod> = all
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .cloned()
            .collect();
        let ready = live.iter().filter(|p| pod_ready(p)).count();
        let webhook = cl.find_webhook(&name).await?;
        let lease = cl
            .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
            .await?;
        let holder = lease_facts(lease.as_ref())?.holder;
        let leads = live
            .iter()
            .any(|p| p.metadata.name.is_some() && p.metadata.name == holder);
        let wanted = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) as usize;
        let state = serde_json::json!({
            "spec_replicas": wanted, "pods_listed": all.len(), "pods_live": live.len(),
            "pods_ready": ready, "registration": webhook.is_some(), "lease_holder": holder,
        });
        log_change(&mut changes.borrow_mut(), state, &facts::now_rfc3339());
        let text = format!(
            "spec.replicas {wanted}, pods {} ({} live, {ready} Ready), registration {}, Lease {}",
            all.len(),
            live.len(),
            if webhook.is_some() {
                "present"
            } else {
                "absent"
            },
            holder.as_deref().unwrap_or("?")
        );
        Ok::<_, LabError>(match webhook {
            Some(w) if wanted == n && all.len() == n && live.len() == n && ready == n && leads => {
                Check::Done((live, dep, w))
            }
            _ => Check::NotYet(text),
        })
    };
    let got = wait_each_second(
        ui,
        format!("{n} Ready admission-controller replica(s) and the Ignore registration"),
        lab_core::rules::c::SCALE_BACK_BOUND,
        m::waiting_scale_back,
        check,
    )
    .await;
    rec.raw("scale-back-wait", changes.into_inner());
    got
}

// ---------------------------------------------------------------------------------------------
// Act 8: the report.

/// Act 8: the report checked against the evidence, word by word with the rule the grader uses
/// ([`lab_core::rules::c::report_expectations`]), and the digests of 05/06/07.
pub(crate) async fn act8(env: &Env) -> Result<ActSummary, LabError> {
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (_report, loaded) = read_input::<inputs::ReportC>(&env.workdir, &ctx)?;
    let a3: Act3Facts = read_facts(&env.workdir, 3)?;
    let a5: Act5Facts = read_facts(&env.workdir, 5)?;
    let a6: Act6Facts = read_facts(&env.workdir, 6)?;
    let a7: Act7Facts = read_facts(&env.workdir, 7)?;
    let mut rec = ActRecorder::begin(&env.workdir, LAB, 8)?;
    rec.input(&loaded);
    let words = lab_core::rules::c::report_expectations(&a3, &a5, &a6, &a7);
    let digests = [
        ("leader_freeze_evidence_sha256", 5u8),
        ("follower_freeze_evidence_sha256", 6),
        ("recovery_evidence_sha256", 7),
    ];
    let facts = common::report_checks(env, &rec, &loaded.value, words, &digests)?;
    let lines = m::report_summary(env.ui.lang(), &facts.checks);
    rec.complete(facts, lines)
}
