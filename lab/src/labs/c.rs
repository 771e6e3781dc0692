//! Lab C, acts 3-4 (`docs/labs.md`, "Lab C"): three admission-controller replicas. Acts 1-2 are
//! lab B's ([`super::common`]); acts 5-8 (the leader's freeze under Fail, a follower's under
//! Ignore, the scale back, the report) are not built yet (issue 28).
//!
//! Act 3 scales the Deployment to three through lab A's scale attempt (plan → ledger → detached
//! healer → the healer scales on request → it puts the original count back at its deadline,
//! [`HA_RESTORE_AFTER_SEC`], or at once on `heal`), waits (bounded) for three Ready pods, three
//! ready endpoints of `kyverno-svc` and the registration, records the Lease, then a healthy
//! baseline of violating pods sent in parallel waves: the API server keeps one connection per
//! endpoint it dialled, so only concurrent calls reach more than one replica (`docs/lab-c.md`).
//! Which replica served how many requests is read from each replica's own counter
//! (`kyverno_admission_requests_total`, through the API server's pod proxy).
//!
//! Act 4 reads the Lease `kyverno` (its holder is the leader, Kyverno's identity is the pod
//! name), then each replica's process through CRI and `/proc` (lab B's investigation, per pod),
//! then the Lease again; it freezes nothing.

use std::cell::RefCell;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{self, Cluster};
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::c::{
    Act3Facts, Act4Facts, EndpointFacts, ReadyWait, ReplicaFacts, ReplicaProcess, ReplicaRequests,
    ScaleUpFacts,
};
use crate::facts::{self, WebhookFacts};
use crate::faults::scale::{HA_FAULT_KIND, ScaleFault, ScaleTo};
use crate::inputs;
use crate::labs::a::{
    deployment_facts, healer_kubeconfig, lease_facts, pod_observation, policy_webhook,
    restore_after_a_failed_act,
};
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Env, RUNNING_BOUND, TARGET_NAMESPACE, Ui,
    describe, live_context, read_input, to_value,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::wait::{Check, Wait, WaitError};

const LAB: Lab = Lab::C;

/// Seconds from the healer's ready answer to its putting back the original count: lab C's acts
/// 3-7 run inside this window (a student writes three input files between them). After it the
/// healer scales back to the original count and the later acts refuse (three replicas gone).
pub const HA_RESTORE_AFTER_SEC: u64 = 1800;

/// Bound of act 3's wait for three Ready pods, three ready endpoints and the registration: a new
/// replica becomes Ready after its startup probe passes (chart 3.9.1: period 6 s, up to 20
/// failures, so at most 120 s), plus the image already on the node and scheduling.
pub const HA_READY_BOUND: Duration = Duration::from_secs(180);

/// The Service in front of the admission controller (chart 3.9.1).
pub const SERVICE: &str = "kyverno-svc";

/// Act 3's baseline: this many parallel waves of violating pods...
pub const BASELINE_WAVES: u32 = 2;
/// ...of this many requests each (twice the replicas: enough to open a connection to each).
pub const BASELINE_WAVE_SIZE: u32 = 6;

/// Kyverno's metrics port on each replica (chart 3.9.1, `metricsService.port`).
const METRICS_PORT: u16 = 8000;

/// Lab C's own acts' runners, by act number (acts 1-2 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (3, |env, _| Box::pin(act3(env))),
    (4, |env, _| Box::pin(act4(env))),
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

/// The admission controller's live pods (not terminating).
async fn live_replicas(cl: &Cluster) -> Result<Vec<Pod>, LabError> {
    Ok(cl
        .admission_pods()
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

fn replica_facts(p: &Pod) -> ReplicaFacts {
    ReplicaFacts {
        pod: pod_observation(p),
        ready: pod_ready(p),
        pod_ip: p.status.as_ref().and_then(|s| s.pod_ip.clone()),
    }
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
async fn parallel_wave(
    cl: &Cluster,
    purpose: &str,
    n: u32,
) -> Result<Vec<RequestRecord>, LabError> {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let cl = cl.clone();
        let purpose = format!("{purpose}-{i}");
        set.spawn(async move {
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
            let changed = s.changes.last().map(|c| {
                let mut c = c.clone();
                c.as_object_mut().map(|o| o.remove("at"));
                c
            }) != Some(state.clone());
            if changed {
                let mut state = state;
                state["at"] = now.clone().into();
                s.changes.push(state);
            }
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
    let mut last_tick = 0;
    let got = Wait::new(
        format!("{n} Ready admission-controller pods, {n} ready endpoints of {SERVICE} and the registration"),
        HA_READY_BOUND,
        Duration::from_secs(1),
    )
    .run(
        check,
        |state: &String, elapsed| {
            let secs = elapsed.as_secs();
            if secs > last_tick {
                last_tick = secs;
                ui.progress(m::waiting_replicas(state), secs, HA_READY_BOUND.as_secs());
            }
        },
        tokio::time::sleep,
    )
    .await;
    match got {
        Ok(ready) => Ok((ready, seen.into_inner(), start.elapsed().as_millis() as u64)),
        Err(WaitError::TimedOut(t)) => Err(t.into()),
        Err(WaitError::Failed(e)) => Err(e),
    }
}

/// Act 3: the healer armed, the Deployment scaled to three by it, the bounded wait, the Lease,
/// and the healthy baseline in parallel waves. The three replicas are handed over to the later
/// acts; a failure puts the original count back at once.
pub(crate) async fn act3(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cl = env.cluster().await?;
    let ctx = live_context(&cl, &env.workdir).await?;
    let (_plan, loaded) = read_input::<inputs::HaPlan>(&env.workdir, &ctx)?;
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
        HA_RESTORE_AFTER_SEC,
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

    let (ready, seen, waited_ms) = wait_three_ready(cl, ui).await?;
    rec.raw("ready-wait", &seen.changes);
    rec.raw("endpoint-slices", &ready.slices);
    rec.raw("pods", &ready.pods);
    // Derived right after their raw record (the grader holds the read time to it).
    let mut replicas: Vec<ReplicaFacts> = ready.pods.iter().map(replica_facts).collect();
    replicas.sort_by(|a, b| a.pod.name.cmp(&b.pod.name));
    let dep = cl.admission_deployment().await?;
    rec.raw("deployment", cluster::to_json(&dep)?);
    let lease = cl
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?;
    rec.raw("lease", &lease);
    let lease = lease_facts(lease.as_ref());
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
    ui.step(m::sending_waves(BASELINE_WAVES, BASELINE_WAVE_SIZE));
    let mut bad = Vec::new();
    for w in 0..BASELINE_WAVES {
        let wave = parallel_wave(cl, &format!("c3-bad-w{w}"), BASELINE_WAVE_SIZE).await?;
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
    let replica_requests: Vec<ReplicaRequests> = pod_names
        .iter()
        .zip(before.into_iter().zip(after))
        .map(|(pod, (before, after))| ReplicaRequests {
            pod: pod.clone(),
            before,
            after,
        })
        .collect();
    let facts = Act3Facts {
        scale,
        deployment: deployment_facts(&dep),
        replicas,
        endpoints: ready.endpoints,
        webhook: ready.webhook,
        lease,
        wait,
        waves: BASELINE_WAVES,
        wave_size: BASELINE_WAVE_SIZE,
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
    let lease = lease_facts(raw_lease.as_ref());
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
        let inv = crate::labs::b::investigate_pod(pod, cri).await?;
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
    let lease_after = lease_facts(raw_after.as_ref());
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
