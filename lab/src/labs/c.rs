//! Lab C, acts 3-8 (`docs/labs.md`, "Lab C"): three admission-controller replicas; acts 1-2 are
//! [`super::common`]'s. The steps and their parameters (the scale's count and length, the waves,
//! each freeze's target and length) are the registry's ([`crate::acts::LAB_C`]); what lab C
//! shares with labs A and B is a step's runner in [`crate::steps`].
//!
//! - Act 3 scales the Deployment to three through a scale attempt (plan → ledger → detached healer,
//!   which puts the original count back at its deadline, 30 min, or at once on `heal`), waits
//!   (bounded) for three Ready pods, three ready endpoints of `kyverno-svc` and the registration,
//!   records the Lease, then a healthy baseline in parallel waves: the API server keeps one
//!   connection per endpoint it dialled, so only concurrent calls reach more than one replica
//!   (`docs/lab-c.md`). Each replica's own counter (`kyverno_admission_requests_total`, through the
//!   API server's pod proxy) says how many requests it served.
//! - Act 4 reads the Lease `kyverno` (its holder is the leader; Kyverno's identity is the pod
//!   name), each replica's process through CRI and `/proc` ([`crate::steps::investigate`]), then
//!   the Lease again; it freezes nothing.
//! - Acts 5 and 6 freeze one replica ([`crate::steps::freeze`], lab C's part [`Replica`]): the
//!   leader for 20 s under Fail, then a follower for 10 s under Ignore. During the freeze, violating
//!   pods in parallel waves (at least [`lab_core::rules::c::MIN_FREEZE_REQUESTS`]) with a control
//!   pod per wave, the Lease and `kyverno-svc`'s EndpointSlice read each second
//!   ([`crate::steps::samples`]); after the resume, violating pods until the first explicit deny,
//!   the replicas settled ([`crate::steps::settle`]), the frozen process, the Lease, the existing pod.
//! - Act 7 heals act 3's scale attempt ([`crate::steps::restore`]) and waits for the original count
//!   and an explicit deny; act 8 checks the report ([`lab_core::rules::c::report_expectations`]).

use std::cell::RefCell;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::acts::Target;
use crate::cluster::{self, Cluster};
use crate::derive;
use crate::error::LabError;
use crate::evidence::{Lab, Outcome};
use crate::facts::a::LeaseFacts;
use crate::facts::b::ProcessIdentity;
use crate::facts::c::{
    Act3Facts, Act4Facts, Act7Facts, EndpointFacts, EndpointSample, ReadyWait, ReplicaFacts,
    ReplicaFreezeRun, ReplicaProcess,
};
use crate::facts::{self, PodObservation, WebhookFacts};
use crate::faults::scale::{HA_FAULT_KIND, ScaleFault, ScaleTo};
use crate::inputs;
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Done, Env, TARGET_NAMESPACE, Ui, describe,
    existing_line, existing_vs_act3_line, expect_same, log_change, or, read_facts, read_live,
    to_value, wait_each_second, with_admission,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::steps::freeze::{
    self, FreezeAct, Frozen, Registration, Shape, first_deny_line, window_lines,
};
use crate::steps::investigate::{investigate_pod, live_replicas, running_replicas};
use crate::steps::observe::{
    deployment_facts, pod_names, pod_ready, policy_webhook, read_lease, replica_facts,
};
use crate::steps::restore::{scale_back, wait_original_count};
use crate::steps::samples::{SERVICE, Samples, endpoints};
use crate::steps::scale::{hand_over_or_restore, healer_kubeconfig};
use crate::steps::settle::target_after;
use crate::steps::traffic::{
    Waves, met_frozen, parallel_wave, replica_counters, replica_request_lines, replica_requests,
    waves,
};
use crate::wait::Check;
use crate::workdir::Workdir;

/// Bound of act 3's wait for three Ready pods, three ready endpoints and the registration: a new
/// replica becomes Ready after its startup probe passes (chart 3.9.1: period 6 s, up to 20
/// failures, so at most 120 s), plus the image already on the node and scheduling.
pub const HA_READY_BOUND: Duration = Duration::from_secs(180);

/// Lab C's own acts' runners, by act number (acts 1-2 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (3, |env, lab| Box::pin(act3(env, lab))),
    (4, |env, lab| Box::pin(act4(env, lab))),
    (5, |env, lab| Box::pin(freeze::act5::<Replica>(env, lab))),
    (6, |env, lab| Box::pin(freeze::act6::<Replica>(env, lab))),
    (7, |env, lab| Box::pin(act7(env, lab))),
    (8, |env, lab| {
        Box::pin(common::act8::<inputs::ReportC>(env, lab, false, act8_words))
    }),
];

/// Each replica's facts ([`replica_facts`]), by pod name.
fn replicas_by_name(pods: &[Pod]) -> Result<Vec<ReplicaFacts>, LabError> {
    let mut replicas: Vec<ReplicaFacts> =
        pods.iter().map(replica_facts).collect::<Result<_, _>>()?;
    replicas.sort_by(|a, b| a.pod.name.cmp(&b.pod.name));
    Ok(replicas)
}

/// The first time each condition of act 3's wait held (`n` Ready pods, `n` ready endpoints, the
/// registration), and every check whose state differed from the one before (the raw record
/// `ready-wait` the grader re-derives them from).
#[derive(Default)]
struct Seen {
    first: [Option<String>; 3],
    changes: Vec<serde_json::Value>,
}

/// What act 3's wait returns once everything holds: the pods, the endpoints, the EndpointSlices
/// as read, the registration.
type Ready = (
    Vec<Pod>,
    Vec<EndpointFacts>,
    serde_json::Value,
    WebhookFacts,
);

/// Waits (bounded, [`HA_READY_BOUND`]) for `n` Ready pods (the registry's replicas), `n` ready
/// endpoints naming them and the policy's registration; returns them, when each first held and
/// the milliseconds waited.
async fn wait_all_ready(cl: &Cluster, ui: &Ui, n: usize) -> Result<(Ready, Seen, u64), LabError> {
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
        let named = |e: &EndpointFacts| !e.ready || names.contains(&e.pod.as_deref());
        let eps_ok = ready_eps == n && eps.iter().all(named);
        {
            let mut s = seen.borrow_mut();
            let state = serde_json::json!({
                "pods_listed": pods.len(), "pods_ready": ready.len(), "pods_ok": pods_ok,
                "endpoints_ready": ready_eps, "endpoints_ok": eps_ok,
                "registration": webhook.is_some(),
            });
            log_change(&mut s.changes, state, &now);
            let held = [pods_ok, eps_ok, webhook.is_some()];
            for (at, ok) in s.first.iter_mut().zip(held) {
                *at = at.take().or_else(|| ok.then(|| now.clone()));
            }
        }
        let registration = webhook.as_ref().map_or("absent", |_| "present");
        let state = format!(
            "pods {}/{n} Ready ({} listed), endpoints {ready_eps}/{n} ready, registration {registration}",
            ready.len(),
            pods.len(),
        );
        Ok::<_, LabError>(match webhook {
            Some(webhook) if pods_ok && eps_ok => Check::Done((pods, eps, slices, webhook)),
            _ => Check::NotYet(state),
        })
    };
    let what = format!(
        "{n} Ready admission-controller pods, {n} ready endpoints of {SERVICE} and the registration"
    );
    let got = wait_each_second(ui, what, HA_READY_BOUND, m::waiting_replicas, check).await;
    Ok((got?, seen.into_inner(), start.elapsed().as_millis() as u64))
}

/// Act 3: the healer armed, the Deployment scaled to three by it, the bounded wait, the Lease,
/// and the healthy baseline in parallel waves. The three replicas are handed over to the later
/// acts; a failure puts the original count back at once.
pub(crate) async fn act3(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let (cl, ctx, _plan, loaded) = read_live::<inputs::HaPlan>(env).await?;
    // The registry's scale: how long the healer keeps the three replicas.
    let (_, after) = crate::steps::scale_of(lab, 3, 0)?;
    // Faults only on a lab-marked cluster.
    let mark = cl.lab_mark().await?;
    let kubeconfig = healer_kubeconfig(&cl)?;
    let mut rec = env.begin_audited(lab, 3)?.with_input(&loaded);
    rec.raw("lab-mark", &mark);
    ui.step(m::starting_ha_healer(crate::acts::replicas(lab)));
    let original = inputs::OriginalReplicas::VALUE as i32;
    let to = ScaleTo {
        act: 3,
        kind: HA_FAULT_KIND,
        replicas: crate::acts::replicas(lab) as i32,
    };
    let uid = ctx.deployment_uid.as_deref().unwrap_or_default();
    let root = env.workdir.root();
    let armed = ScaleFault::arm_to(cl.clone(), root, &kubeconfig, uid, original, after, to);
    let (mut fault, ready) = armed.await?;
    let raw_ready = to_value(&ready)?;
    rec.raw("healer-ready", &raw_ready);
    // The deadline as the fact records it: derived from the raw answer (the grader re-derives it).
    let deadline = cluster::derived(derive::healer_deadline(&raw_ready))?;
    ui.say(m::ha_healer_ready(ready.pid, &deadline));
    let mut partial = serde_json::json!({});
    let body = act3_body(lab, &cl, &ui, &mut fault, &mut rec, &mut partial, &deadline);
    let healed =
        "the runner put the original replica count back (see the evidence's runner-restore)";
    let result = common::unless_signalled(3, healed, body).await;
    // The three replicas stay for acts 4-7: a later heal leaves them to the healer, except the
    // `heal` command, which puts the original count back.
    hand_over_or_restore(fault, rec, partial, result).await
}

async fn act3_body(
    lab: Lab,
    cl: &Cluster,
    ui: &Ui,
    fault: &mut ScaleFault,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    deadline_at: &str,
) -> Done {
    // The scale: the healer asked for the plan's replicas (the registry's), its answer recorded
    // (`scale-up`), derived and kept in the partial facts.
    let to = fault.plan().fault_replicas.max(0) as u32;
    ui.step(m::scaling_to(cluster::ADMISSION_DEPLOYMENT, to));
    let up = to_value(&fault.scale_down().await?)?;
    rec.raw("scale-up", &up);
    let (id, deadline) = (fault.plan().fault_id.clone(), deadline_at.to_owned());
    let scale = cluster::derived(derive::scale_up(&up, id, deadline))?;
    partial["scale"] = to_value(&scale)?;
    rec.save_progress(partial.clone())?;
    let n = crate::acts::replicas(lab) as usize;
    let ((pods, endpoints, slices, webhook), seen, waited_ms) = wait_all_ready(cl, ui, n).await?;
    rec.raw("ready-wait", &seen.changes);
    rec.raw("endpoint-slices", &slices);
    rec.raw("pods", &pods);
    // Derived right after their raw record (the grader holds the read time to it).
    let replicas = replicas_by_name(&pods)?;
    let dep = cl.admission_deployment().await?;
    rec.raw("deployment", cluster::to_json(&dep)?);
    let lease = read_lease(cl, rec, "lease").await?;
    let pod_names: Vec<String> = replicas.iter().map(|r| r.pod.name.clone()).collect();
    let [ready_pods_at, ready_endpoints_at, registration_at] =
        seen.first.map(Option::unwrap_or_default);
    let wait = ReadyWait {
        ready_pods_at,
        ready_endpoints_at,
        registration_at,
        waited_ms,
    };

    // The baseline: parallel waves of violating pods, then the good and the control pods.
    let before = replica_counters(cl, &pod_names, rec, "before").await;
    let window = crate::metrics::Window::begin(cl).await;
    let (waves, wave_size) = crate::steps::waves_of(lab, 3)?;
    let tag = common::request_tag(lab, 3);
    ui.step(m::sending_waves(waves, wave_size));
    let mut bad = Vec::new();
    for w in 0..waves {
        let wave = parallel_wave(cl, &format!("{tag}-bad-w{w}"), wave_size).await?;
        for r in &wave {
            rec.request("bad", r);
        }
        bad.extend(wave);
    }
    ui.step(m::CREATING_GOOD_TARGET);
    let (good_name, control_name) = (format!("{tag}-good"), format!("{tag}-control"));
    let good = probe::send_pod(cl, &good_name, TARGET_NAMESPACE, PodKind::Good, false).await?;
    rec.request("good", &good);
    let control =
        probe::send_pod(cl, &control_name, CONTROL_NAMESPACE, PodKind::Bad, false).await?;
    rec.request("control", &control);
    let admission = window.end(cl).await;
    let after = replica_counters(cl, &pod_names, rec, "after").await;
    admission.attach(partial);
    partial["bad"] = to_value(&bad)?;
    partial["good"] = to_value(&good)?;
    partial["control"] = to_value(&control)?;
    rec.save_progress(partial.clone())?;
    let existing = common::wait_running(cl, ui, &good.name).await?;
    let replica_requests = replica_requests(&pod_names, before, after);
    let facts = Act3Facts {
        scale,
        deployment: deployment_facts(&dep)?,
        replicas,
        endpoints,
        webhook,
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
    with_admission(ui, &facts, &admission, act3_lines(ui, &facts))
}

fn act3_lines(ui: &Ui, f: &Act3Facts) -> Vec<String> {
    let mut lines = Vec::new();
    for r in &f.replicas {
        let (uid, ip) = (or(&r.pod.uid, "?"), or(&r.pod_ip, "?"));
        lines.push(ui.text(m::replica(&r.pod.name, uid, ip, r.ready)));
    }
    lines.push(lease_line(ui, &f.lease));
    let denied = f.bad.iter().filter(|r| r.outcome == Outcome::ExplicitDeny);
    lines.push(ui.text(m::waves_outcome(denied.count(), f.bad.len())));
    lines.extend(replica_request_lines(ui, &f.replica_requests));
    lines.push(describe(ui, m::req::GOOD, &f.good));
    lines.push(describe(ui, m::req::CONTROL, &f.control));
    lines.push(existing_line(ui, &f.existing));
    lines
}

/// The line of who holds the Lease `kyverno` and its transitions (`?`: unknown).
fn lease_line(ui: &Ui, lease: &LeaseFacts) -> String {
    let transitions = lease.lease_transitions;
    let transitions = transitions.map_or("?".into(), |t| t.to_string());
    ui.text(m::lease_held_by(or(&lease.holder, "?"), &transitions))
}

/// Act 4: the Lease, each replica's process (CRI, `/proc`), the Lease again; nothing is frozen.
pub(crate) async fn act4(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let (cl, ctx, _plan, loaded) = read_live::<inputs::FreezePlanC>(env).await?;
    let mut cri = env.cri().await?;
    let mut rec = ActRecorder::begin(&env.workdir, lab, 4)?.with_input(&loaded);
    let replicas = crate::acts::replicas(lab) as usize;
    ui.step(m::investigating_replicas(replicas));
    let (cl, cri, ui) = (&cl, &mut cri, &ui);
    let result = async {
        let lease = read_lease(cl, &mut rec, "lease-before").await?;
        let pods = running_replicas(cl).await?;
        let what = "running admission-controller pods (act 3's replicas; the healer puts the original count back at its deadline)";
        expect_same(what, &replicas.to_string(), &pods.len().to_string())?;
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
        let lease_after = read_lease(cl, &mut rec, "lease-after").await?;
        let leader = leader.ok_or_else(|| LabError::ClusterMismatch {
            what: "the Lease kyverno's holder among the running replicas".into(),
            expected: pod_names(&pods).join(" or "),
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
        let mut lines = vec![lease_line(ui, &facts.lease)];
        for (role, p) in std::iter::once(("leader", &facts.leader))
            .chain(facts.followers.iter().map(|p| ("follower", p)))
        {
            let (pid, ticks) = (p.identity.pid, p.identity.pid_start_time_ticks);
            let process = m::replica_process(role, &p.pod_name, pid, ticks, &p.process_state);
            lines.push(ui.text(process));
        }
        Ok::<_, LabError>((to_value(&facts)?, lines))
    }
    .await;
    common::finish(rec, serde_json::Value::Null, result)
}

// ---------------------------------------------------------------------------------------------
// Acts 5-6: one replica frozen.

/// Lab C's part of its freeze acts (5 and 6, [`crate::steps::freeze::Shape`]): one replica of
/// three, each replica's counter around it, waves of violating pods during the freeze, the
/// replicas settled after it, `facts::c::ReplicaFreezeRun`.
pub(crate) struct Replica {
    /// `leader` or `follower`.
    role: &'static str,
    /// The Lease as read right before the act started the freeze.
    lease_before: LeaseFacts,
    /// The registry's waves: how many, and how many violating pods each.
    waves: (u32, u32),
    /// Act 3's replicas (their counters are read before and after).
    pods: Vec<String>,
    /// Their counters before the freeze.
    counts_before: Vec<Option<u64>>,
}

impl Shape for Replica {
    type Plan = inputs::FreezePlanC;
    type Act3 = Act3Facts;
    type Act4 = Act4Facts;
    type Traffic = Waves;
    type Run = ReplicaFreezeRun;

    fn uids(p: &inputs::FreezePlanC) -> (&str, &str) {
        (p.node_uid.as_str(), p.deployment_uid.as_str())
    }

    fn existing(a3: &Act3Facts) -> &PodObservation {
        &a3.existing
    }

    /// The leader act 4 found, or its first follower by pod name (as `follower_now` chooses).
    fn act4_target(a4: &Act4Facts, target: Target) -> Option<(&str, &ProcessIdentity)> {
        let p = match target {
            Target::Follower => a4.followers.iter().min_by_key(|&p| &p.pod_name)?,
            _ => &a4.leader,
        };
        Some((&p.pod_name, &p.identity))
    }

    fn new(
        lab: Lab,
        act: u8,
        a3: &Act3Facts,
        target: Target,
        lease: Option<LeaseFacts>,
    ) -> Result<Self, LabError> {
        let lease_before = lease.ok_or_else(|| {
            LabError::Usage(format!("act {act} of lab c freezes the one replica"))
        })?;
        Ok(Replica {
            role: role(target),
            lease_before,
            waves: crate::steps::waves_of(lab, act)?,
            pods: a3.replicas.iter().map(|r| r.pod.name.clone()).collect(),
            counts_before: vec![],
        })
    }

    async fn before(&mut self, cx: &mut FreezeAct<'_>) {
        self.counts_before = replica_counters(cx.cl, &self.pods, cx.rec, "before").await;
        let line = m::freezing_replica(self.role, &cx.inv.pod_name);
        cx.env.ui.step(line);
    }

    async fn traffic(&self, cx: &mut FreezeAct<'_>) -> Result<Waves, LabError> {
        let act = (cx.spec.act, cx.spec.tag.as_str());
        waves(cx.cl, &cx.env.ui, cx.rec, act, self.waves).await
    }

    fn partial(
        _: &Registration,
        _: Option<char>,
        t: &Waves,
        samples: Option<&Samples>,
    ) -> serde_json::Value {
        let mut p = serde_json::json!({"bad": t.bad, "control": t.control});
        if let Some(s) = samples {
            p["lease_samples"] = serde_json::json!(s.lease);
            p["endpoint_samples"] = serde_json::json!(s.endpoints);
        }
        p
    }

    /// The replicas settled and the target after it ([`target_after`]), the counters, the
    /// existing pod.
    async fn after(
        self,
        cx: FreezeAct<'_>,
        run: Frozen<Waves>,
    ) -> Result<ReplicaFreezeRun, LabError> {
        let (env, cl, cri, rec, inv, spec) = (cx.env, cx.cl, cx.cri, cx.rec, cx.inv, cx.spec);
        let resumed_at = &run.freeze.resumed_at;
        let (target_after, lease_after) =
            target_after(cl, &env.ui, cri, rec, inv, (resumed_at, self.pods.len())).await?;
        let counts_after = replica_counters(cl, &self.pods, rec, "after").await;
        let existing =
            probe::observe_pod(cl, &spec.existing.namespace, &spec.existing.name).await?;
        let reg = run.registration;
        Ok(ReplicaFreezeRun {
            target_role: self.role.to_owned(),
            target_pod: inv.pod_name.clone(),
            lease_before: self.lease_before,
            freeze: run.freeze,
            registration_present_during_freeze: reg.present,
            registration_snapshot: reg.snapshot,
            registration_checked_at: reg.checked_at,
            timeout_seconds: reg.timeout_seconds,
            waves: self.waves.0,
            wave_size: self.waves.1,
            bad: run.traffic.bad,
            control: run.traffic.control,
            lease_samples: run.samples.lease,
            endpoint_samples: run.samples.endpoints,
            replica_requests: replica_requests(&self.pods, self.counts_before, counts_after),
            after_resume: run.after_resume,
            first_explicit_deny: run.first_explicit_deny,
            first_deny_after_resume_ms: run.first_deny_after_resume_ms,
            target_after,
            lease_after,
            existing,
        })
    }

    fn lines(ui: &Ui, act: u8, run: &ReplicaFreezeRun) -> Vec<String> {
        let (met_word, met) = met_frozen(act);
        let (n_met, denied, other) = lab_core::rules::c::freeze_counts(run, met);
        let mut lines = window_lines(ui, &run.freeze, run.registration_present_during_freeze);
        let waves = m::freeze_waves_outcome(n_met, met_word, denied, other, run.bad.len());
        lines.push(ui.text(waves));
        for r in &run.control {
            lines.push(describe(ui, m::req::CONTROL_FROZEN, r));
        }
        let holder = run.lease_before.holder.as_deref().unwrap_or("?");
        lines.push(ui.text(m::lease_during_freeze(holder, &takeover_words(ui, run))));
        let target = Some(run.target_pod.as_str());
        let up = |e: &EndpointFacts| e.pod.as_deref() == target && e.ready;
        let ready = |s: &&EndpointSample| s.endpoints.iter().any(up);
        let frozen_ready = run.endpoint_samples.iter().filter(ready).count();
        let samples = run.endpoint_samples.len();
        lines.push(ui.text(m::frozen_endpoint(&run.target_pod, frozen_ready, samples)));
        lines.extend(replica_request_lines(ui, &run.replica_requests));
        let t = &run.target_after;
        let restarts = (t.restart_count_before, t.restart_count_after);
        let first_deny = run.first_deny_after_resume_ms;
        lines.push(first_deny_line(ui, first_deny, restarts));
        let same_pod = t.pod_uid_after.as_deref() == Some(t.pod_uid_before.as_str());
        let (before, after) = restarts;
        let replica = m::replica_after(&t.pod, before, after, same_pod, t.holds_lease_after);
        lines.push(ui.text(replica));
        lines.push(existing_line(ui, &run.existing));
        lines
    }
}

/// The word for the replica `target` names, as `target_role` records it: `leader`, else
/// `follower`.
pub fn role(target: Target) -> &'static str {
    match target {
        Target::Leader => "leader",
        _ => "follower",
    }
}

/// The words of a takeover of the Lease during the freeze: who took it and how long after the
/// freeze began (ms), or that it was kept.
fn takeover_words(ui: &Ui, run: &ReplicaFreezeRun) -> String {
    match lab_core::rules::c::takeover(run) {
        Some((holder, at)) => {
            let ms = facts::ms_between(Some(&run.freeze.frozen_at), Some(at));
            ui.text(m::lease_taken_over(holder, ms.unwrap_or(-1)))
        }
        None => m::LEASE_KEPT.get(ui.lang()).to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Act 7: back to the original count.

/// Act 7: act 3's scale attempt healed (its healer stood down, the original count written back
/// on a live read), then a bounded wait for the original count of Ready replicas and the
/// registration, violating pods until an explicit deny, and the existing pod.
pub(crate) async fn act7(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let (cl, _, _r, loaded) = read_live::<inputs::RecoveryC>(env).await?;
    let a3: Act3Facts = read_facts(&env.workdir, 3)?;
    let mut rec = env.begin_audited(lab, 7)?.with_input(&loaded);
    let mut partial = serde_json::Value::Null;
    let healed = "the scale back is the heal's: run `heal` to finish it";
    let (cl, ui) = (&cl, &env.ui);
    let body = async {
        let t0 = std::time::Instant::now();
        let scale_back = scale_back(env, cl, &mut rec, &a3).await?;
        partial = serde_json::json!({ "scale_back": to_value(&scale_back)? });
        rec.save_progress(partial.clone())?;
        let (pods, dep, (cfg, wh)) = wait_original_count(cl, ui, &mut rec).await?;
        let dep_facts = deployment_facts(&dep)?;
        let replicas = replicas_by_name(&pods)?;
        let lease = read_lease(cl, &mut rec, "lease").await?;
        let policy = to_value(&cl.policy(cluster::POLICY_NAME).await?)?;
        rec.raw("policy", &policy);
        let policy_uid = cluster::derived(derive::policy_uid(&policy))?.unwrap_or_default();
        rec.raw("webhook-configuration", &cfg);
        let webhook = common::webhook_facts(&cfg, &wh)?;
        let window = crate::metrics::Window::begin(cl).await;
        ui.step(m::SENDING_NEW_VIOLATING);
        let bound = lab_core::rules::c::SCALE_BACK_BOUND.saturating_sub(t0.elapsed());
        let name = format!("{}-bad", common::request_tag(lab, 7));
        let bounds = (bound.max(common::ANSWER_BOUND), bound);
        let probes =
            common::violating_until_deny(cl, ui, &mut rec, (&name, "deny-probe"), bounds).await?;
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
        // The summary lines.
        let b = &facts.scale_back;
        let (replicas, ready) = (facts.deployment.replicas, facts.replicas.len());
        let scaled = m::scaled_back(&b.action, b.replicas_before, replicas, ready);
        let lines = vec![
            ui.text(scaled),
            lease_line(ui, &facts.lease),
            ui.text(m::policy_uid(&facts.policy_uid)),
            describe(ui, m::req::VIOLATING, &facts.healthy_bad),
            existing_vs_act3_line(ui, &facts.existing, &a3.existing),
        ];
        with_admission(ui, &facts, &admission, lines)
    };
    let result = common::unless_signalled(7, healed, body).await;
    common::finish(rec, partial, result)
}

// ---------------------------------------------------------------------------------------------
// Act 8: the report.

/// Act 8's words: what acts 3 and 5-7 support, with the rule the grader uses
/// ([`lab_core::rules::c::report_expectations`]); `report.json` is checked against them and its
/// digests against 05/06/07 by [`common::act8`].
fn act8_words(w: &Workdir) -> Result<Vec<(&'static str, String)>, LabError> {
    let (a3, a5) = (read_facts(w, 3)?, read_facts(w, 5)?);
    let (a6, a7) = (read_facts(w, 6)?, read_facts(w, 7)?);
    Ok(lab_core::rules::c::report_expectations(&a3, &a5, &a6, &a7))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Act 5 freezes the registry's target as act 4 found it: the Lease's holder, or the first
    /// follower by pod name (the order `follower_now` picks in), read from the generated fixture.
    #[test]
    fn act4_target_is_the_leader_or_the_first_follower_by_name() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/c/pass/evidence/04.json"
        );
        let ev: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .expect("c/pass act 4 evidence");
        let mut a4: Act4Facts = serde_json::from_value(ev["facts"].clone()).unwrap();
        a4.followers.reverse();
        let (leader, _) = Replica::act4_target(&a4, Target::Leader).unwrap();
        assert_eq!(leader, a4.leader.pod_name);
        let (follower, id) = Replica::act4_target(&a4, Target::Follower).unwrap();
        let mut names: Vec<&str> = a4.followers.iter().map(|p| p.pod_name.as_str()).collect();
        names.sort();
        assert_eq!(follower, names[0]);
        assert_ne!(follower, leader);
        let first = a4
            .followers
            .iter()
            .find(|p| p.pod_name == follower)
            .unwrap();
        assert_eq!(id, &first.identity);
        a4.followers.clear();
        assert!(Replica::act4_target(&a4, Target::Follower).is_none());
    }
}
