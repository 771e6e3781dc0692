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

use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::b::{
    Act4Facts, Act5Facts, Act6Facts, Act7Facts, FreezeRun, FreezeWindow, ProcessIdentity, Resumer,
};
use crate::facts::{self, Act2Facts, Act3Facts, PodObservation, WebhookFacts};
use crate::faults::freeze::{self, AttemptFiles, FreezeTarget, UndoneBy};
use crate::inputs;
use crate::labs::common::{
    self, ActRecorder, ActSummary, CONTROL_NAMESPACE, Env, TARGET_NAMESPACE, Ui, describe,
    describe_indented, finish, live_context, read_facts, read_input, to_value, until_explicit_deny,
    wait_for_webhook, webhook_facts,
};
use crate::messages::act as m;
use crate::probe::{self, PodKind};
use crate::wait::{Check, Wait, WaitError};
use crate::workdir::Workdir;

pub use crate::rules::b::{DENY_AFTER_RESUME_BOUND, WATCHDOG_GRACE, report_expectations};

/// The short freeze of act 6, seconds: long enough for requests to run into the 3 s timeout,
/// shorter than Kyverno's 10 s lease renew deadline.
pub const ACT6_RESUME_AFTER_SEC: u64 = 10;
/// The controller's main container name in its pod.
const CONTAINER: &str = "kyverno";

/// Lab B's own acts' runners, by act number (acts 1-3 are `common`'s; see
/// [`crate::labs::runner`]).
pub(crate) static RUNNERS: &[(u8, super::Runner)] = &[
    (4, |env, _| Box::pin(act4(env))),
    (5, |env, _| Box::pin(act5(env))),
    (6, |env, _| Box::pin(act6(env))),
    (7, |env, _| Box::pin(act7(env))),
    (8, |env, _| Box::pin(act8(env))),
];

/// Where fault attempts live in the work directory.
pub fn faults_dir(workdir: &Workdir) -> PathBuf {
    crate::faults::attempt::faults_root(workdir.root())
}

/// The newest freeze attempt of act `act` started by this process (its id ends with our pid).
pub(crate) fn own_attempt(env: &Env, act: u8) -> Option<AttemptFiles> {
    let prefix = format!("freeze-{act:02}-");
    let suffix = format!("-{}", std::process::id());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(faults_dir(&env.workdir))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(&suffix))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|dir| AttemptFiles { dir })
}

/// The newest ended freeze of the process `(pid, start_time_ticks)` among the attempts under
/// `faults`: `(attempt directory, how long it lasted, when it ended)`, from each attempt's
/// `plan.json` (the target), `ledger.json` (`stop_sent_at`, `resumed_at`) or else the healer's
/// report (`resume.sent_at`). Attempts that cannot be read are skipped.
fn previous_freeze(
    faults: &std::path::Path,
    pid: i32,
    start_time_ticks: u64,
) -> Option<(PathBuf, Duration, chrono::DateTime<chrono::Utc>)> {
    let entries = std::fs::read_dir(faults).ok()?;
    entries
        .filter_map(|e| e.ok().map(|e| AttemptFiles { dir: e.path() }))
        .filter_map(|files| {
            let plan: freeze::FreezePlan = crate::faults::records::read_json(&files.plan()).ok()?;
            if plan.target.pid != pid || plan.target.start_time_ticks != start_time_ticks {
                return None;
            }
            let ledger: Option<freeze::FreezeLedger> =
                crate::faults::records::read_json(&files.ledger()).ok();
            let report = files.read_report();
            let stopped = ledger
                .as_ref()
                .and_then(|l| l.stop_sent_at.clone())
                .or_else(|| report.as_ref().and_then(|r| r.stop_sent_at.clone()))?;
            let resumed = ledger
                .as_ref()
                .and_then(|l| l.resumed_at.clone())
                .or_else(|| {
                    report
                        .as_ref()
                        .and_then(|r| r.resume.as_ref())
                        .map(|c| c.sent_at.clone())
                })?;
            let (from, to) = (
                facts::parse_rfc3339(&stopped)?,
                facts::parse_rfc3339(&resumed)?,
            );
            Some((files.dir, (to - from).to_std().ok()?, to))
        })
        .max_by_key(|(_, _, ended)| *ended)
}

/// Before freezing `(pid, start_time_ticks)` of pod `pod_name` for `next_sec`, waits (with
/// progress) until no liveness probe can fail twice in a row across the freeze, from two facts:
/// - its previous freeze in this work directory ended so recently that one probe could fail in
///   each freeze ([`crate::rules::b::liveness_wait`]), recorded as `liveness-gap`;
/// - kubelet recorded a liveness failure of the pod (Event `Unhealthy`, "Liveness probe …") whose
///   next probe could fall in the freeze ([`crate::rules::b::liveness_failure_wait`]: e.g. a slow
///   start-up under load), recorded as `liveness-failure-gap`; the Events are read again after
///   each such wait (at most [`LIVENESS_FAILURE_ROUNDS`] waits), as a newer failure restarts it.
///
/// Nothing is recorded when no wait is needed. A student who runs act 6 a few seconds after act
/// 5 would otherwise see kubelet kill Kyverno in the middle of the freeze.
pub(crate) async fn liveness_gap(
    ui: &Ui,
    rec: &mut ActRecorder,
    cluster: &Cluster,
    pod_name: &str,
    faults: &std::path::Path,
    (pid, start_time_ticks): (i32, u64),
    next_sec: u64,
) {
    let next = Duration::from_secs(next_sec);
    if let Some((dir, lasted, ended)) = previous_freeze(faults, pid, start_time_ticks) {
        let since = (chrono::Utc::now() - ended).to_std().unwrap_or_default();
        let wait = crate::rules::b::liveness_wait(lasted, since, next);
        if !wait.is_zero() {
            ui.step(m::liveness_gap(
                lasted.as_secs(),
                since.as_secs(),
                wait.as_secs() + 1,
            ));
            rec.raw(
                "liveness-gap",
                serde_json::json!({
                    "previous_attempt": dir.display().to_string(),
                    "previous_freeze_ms": lasted.as_millis() as u64,
                    "since_previous_resume_ms": since.as_millis() as u64,
                    "next_freeze_sec": next_sec,
                    "waited_ms": wait.as_millis() as u64,
                    "rule": "rules::b::liveness_wait (Kyverno chart liveness probe: period 30 s, timeout 5 s, failureThreshold 2)",
                }),
            );
            count_down(ui, wait).await;
        }
    }
    for _ in 0..LIVENESS_FAILURE_ROUNDS {
        let failure = match last_liveness_failure(cluster, pod_name).await {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                rec.raw(
                    "liveness-failure-events",
                    serde_json::json!({ "error": e.to_string() }),
                );
                return;
            }
        };
        let since = (chrono::Utc::now() - failure.0)
            .to_std()
            .unwrap_or_default();
        let wait = crate::rules::b::liveness_failure_wait(since, next);
        if wait.is_zero() {
            return;
        }
        ui.step(m::liveness_failure_gap(since.as_secs(), wait.as_secs() + 1));
        rec.raw(
            "liveness-failure-gap",
            serde_json::json!({
                "event_time": failure.0.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                "event_message": failure.1,
                "since_failure_ms": since.as_millis() as u64,
                "next_freeze_sec": next_sec,
                "waited_ms": wait.as_millis() as u64,
                "rule": "rules::b::liveness_failure_wait (Kyverno chart liveness probe: period 30 s, timeout 5 s, failureThreshold 2)",
            }),
        );
        count_down(ui, wait).await;
    }
}

/// How many times `liveness_gap` waits for a probe to pass after a recorded failure before it
/// freezes anyway (a container whose probes keep failing is restarted by kubelet whatever the lab
/// does; the freeze's identity checks then refuse the new process).
pub const LIVENESS_FAILURE_ROUNDS: usize = 3;

/// The newest liveness failure kubelet recorded for pod `pod_name` in Kyverno's namespace: the
/// Event's newest time ([`crate::diagnostics::event_row`]) and its message.
async fn last_liveness_failure(
    cluster: &Cluster,
    pod_name: &str,
) -> Result<Option<(chrono::DateTime<chrono::Utc>, String)>, LabError> {
    let events = cluster.events(cluster::KYVERNO_NAMESPACE).await?;
    Ok(events
        .iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod_name)
                && e.reason.as_deref() == Some("Unhealthy")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.starts_with("Liveness probe"))
        })
        .filter_map(|e| {
            let row = crate::diagnostics::event_row(e);
            Some((facts::parse_rfc3339(&row.time)?, row.message))
        })
        .max_by_key(|(t, _)| *t))
}

/// Sleeps `wait` with a progress line counting down to the freeze.
async fn count_down(ui: &Ui, wait: Duration) {
    let t0 = tokio::time::Instant::now();
    let total = wait.as_secs() + 1;
    while t0.elapsed() < wait {
        let left = wait.saturating_sub(t0.elapsed());
        ui.progress(
            m::liveness_gap_left(left.as_secs() + 1),
            total - left.as_secs() - 1,
            total,
        );
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
}

/// The admission controller process as found now: the pod (API), the container (CRI) and the
/// process (`/proc`).
#[derive(Debug, Clone, PartialEq)]
pub struct Investigation {
    /// Pod name.
    pub pod_name: String,
    /// The process identity.
    pub identity: ProcessIdentity,
    /// Restart count of the `kyverno` container (pod status).
    pub restart_count: u32,
    /// kubelet's restart attempt of the container (CRI `metadata.attempt`).
    pub attempt: u32,
    /// `/proc/PID/stat` state letter.
    pub state: char,
    /// The CRI answer, verbatim-ish (typed).
    pub container: crate::cri::ContainerIdentity,
}

/// Finds the admission controller process: exactly one running pod of the Deployment (API),
/// its `kyverno` container through CRI (checked against the pod status's `containerID`), the
/// host PID, and its state and start time from `/proc`.
pub async fn investigate(
    cluster: &Cluster,
    cri: &mut CriClient,
) -> Result<Investigation, LabError> {
    let pods: Vec<_> = cluster
        .admission_pods()
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .collect();
    if pods.len() != 1 {
        return Err(LabError::ClusterMismatch {
            what: "running admission-controller pods".into(),
            expected: "1".into(),
            found: pods.len().to_string(),
        });
    }
    investigate_pod(&pods[0], cri).await
}

/// [`investigate`] for one given pod of the admission controller (lab C reads each replica's):
/// its `kyverno` container through CRI (checked against the pod status's `containerID`), the
/// host PID, and its state and start time from `/proc`.
pub async fn investigate_pod(
    pod: &k8s_openapi::api::core::v1::Pod,
    cri: &mut CriClient,
) -> Result<Investigation, LabError> {
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    let status = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == CONTAINER));
    let mut container = cri.find_admission_container(Some(&pod_uid)).await?;
    // The k3s backend's node runs in a container: its CRI reports PIDs of that container's PID
    // namespace; map to the host PID the pidfd needs (identity elsewhere; see crate::pidmap).
    container.pid = crate::pidmap::cri_pid_to_host(container.pid)?;
    if let Some(api_id) = status.and_then(|s| s.container_id.as_deref()) {
        let api_id = api_id.split_once("://").map(|(_, id)| id).unwrap_or(api_id);
        if api_id != container.container_id {
            return Err(LabError::ClusterMismatch {
                what: "admission-controller container id (pod status vs CRI)".into(),
                expected: api_id.to_owned(),
                found: container.container_id.clone(),
            });
        }
    }
    let stat = crate::faults::process::read_stat(container.pid)?.ok_or_else(|| {
        LabError::FaultRefused {
            reason: format!("process {} reported by CRI is gone", container.pid),
        }
    })?;
    Ok(Investigation {
        pod_name: pod.metadata.name.clone().unwrap_or_default(),
        identity: ProcessIdentity {
            pid: container.pid as u32,
            pid_start_time_ticks: stat.start_time_ticks,
            container_id: container.container_id.clone(),
            pod_uid,
        },
        restart_count: status.map(|s| s.restart_count.max(0) as u32).unwrap_or(0),
        attempt: container.attempt,
        state: stat.state,
        container,
    })
}

/// Checks, before any fault: the lab mark, and the plan's node and deployment UIDs against the
/// live ones. Returns the mark.
pub(crate) async fn check_fault_preconditions(
    cluster: &Cluster,
    (node_uid, deployment_uid): (&str, &str),
) -> Result<cluster::LabMark, LabError> {
    let mark = cluster.lab_mark().await?;
    let node = cluster.node().await?;
    if node.uid != node_uid {
        return Err(LabError::ClusterMismatch {
            what: "node uid (freeze-plan.json $.node_uid)".into(),
            expected: node_uid.to_owned(),
            found: node.uid,
        });
    }
    let dep = cluster.admission_deployment().await?;
    let dep_uid = dep.metadata.uid.unwrap_or_default();
    if dep_uid != deployment_uid {
        return Err(LabError::ClusterMismatch {
            what: "deployment uid (freeze-plan.json $.deployment_uid)".into(),
            expected: deployment_uid.to_owned(),
            found: dep_uid,
        });
    }
    Ok(mark)
}

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

/// What a freeze run needs (lab B's acts 5-6, lab C's acts 5-6).
pub(crate) struct FreezeSpec<'a> {
    /// The act number.
    pub act: u8,
    /// The healer resumes the process after this many seconds.
    pub resume_after_sec: u64,
    /// The policy's webhook the act's requests go through.
    pub webhook_name: String,
    /// Act 3's existing pod.
    pub existing: &'a PodObservation,
    /// The prefix of the act's request names (`b5`, `c6`, …).
    pub tag: &'a str,
}

/// Act 5: the freeze under failurePolicy Fail.
pub(crate) async fn act5(env: &Env) -> Result<ActSummary, LabError> {
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
        resume_after_sec: u64::from(inputs::ResumeAfterSec::VALUE),
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

/// Turns the outcome of a freeze run (maybe cut short by a signal) into facts or partial facts,
/// adding the ledger and the healer's report to the raw data.
pub(crate) fn settle<T>(
    env: &Env,
    spec: &FreezeSpec<'_>,
    outcome: Result<Result<T, LabError>, &'static str>,
    partial: serde_json::Value,
    rec: &mut ActRecorder,
) -> Result<T, (serde_json::Value, LabError)> {
    // This runner's attempt (its id ends with this process's pid), if it got that far.
    if let Some(files) = own_attempt(env, spec.act) {
        for (what, name) in [
            ("fault-plan", "plan.json"),
            ("fault-ledger", "ledger.json"),
            ("healer-report", "healer.json"),
        ] {
            // Bounded, without following a symlink, relative to the attempt's directory.
            let bound = crate::files::RECORD_BOUND;
            if let Ok(bytes) = crate::files::read_regular_in(&files.dir, name, bound) {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                rec.raw(
                    what,
                    serde_json::from_str::<serde_json::Value>(&text).unwrap_or(text.into()),
                );
            }
        }
    }
    match outcome {
        Ok(Ok(run)) => Ok(run),
        Ok(Err(e)) => Err((partial, e)),
        Err(signal) => Err((
            partial,
            LabError::Interrupted {
                signal: signal.into(),
                act: spec.act,
                healed: "the process was resumed by the runner (SIGCONT through its pidfd)".into(),
            },
        )),
    }
}

/// What an act that freezes works with (acts 5 and 6): its environment (work dir, output), the
/// cluster, the node's CRI, the evidence recorder, and the partial facts kept if the act is
/// interrupted.
pub(crate) struct FreezeAct<'a> {
    /// The act's environment (work dir, output).
    pub env: &'a Env,
    /// The cluster.
    pub cluster: &'a Cluster,
    /// The node's CRI.
    pub cri: &'a mut CriClient,
    /// The act's evidence recorder.
    pub rec: &'a mut ActRecorder,
    /// The partial facts kept if the act is cut short.
    pub partial: &'a mut serde_json::Value,
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
    let first_explicit_deny = after_resume
        .iter()
        .find(|r| r.outcome == Outcome::ExplicitDeny)
        .cloned();
    let first_deny_after_resume_ms = first_explicit_deny.as_ref().and_then(|d| {
        let a = facts::parse_rfc3339(&d.answered_at)?;
        let r = facts::parse_rfc3339(&resume.resumed_at)?;
        u64::try_from((a - r).num_milliseconds()).ok()
    });
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

/// Before the freeze: the registration must be there (this lab preserves it), the leader Lease
/// is kept, and the liveness gap is checked ([`liveness_gap`]).
pub(crate) async fn before_freeze(
    env: &Env,
    cluster: &Cluster,
    rec: &mut ActRecorder,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
) -> Result<(), LabError> {
    let ui = env.ui;
    let (cfg, _) = wait_for_webhook(
        cluster,
        &ui,
        &spec.webhook_name,
        Duration::from_secs(10),
        |_| true,
    )
    .await?;
    rec.raw("webhook-configuration-before", &cfg);
    if let Some(lease) = cluster
        .lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await?
    {
        rec.raw("leader-lease-before", &lease);
    }
    liveness_gap(
        &ui,
        rec,
        cluster,
        &inv.pod_name,
        &faults_dir(&env.workdir),
        (inv.identity.pid as i32, inv.identity.pid_start_time_ticks),
        spec.resume_after_sec,
    )
    .await;
    Ok(())
}

/// The freeze of act 4's process ([`freeze::freeze`]: plan, ledger, healer, SIGSTOP confirmed).
pub(crate) fn start_freeze(
    env: &Env,
    rec: &mut ActRecorder,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
) -> Result<freeze::Freeze, LabError> {
    let ui = env.ui;
    let program = crate::faults::attempt::lab_program()?;
    let target = FreezeTarget {
        act: spec.act,
        container_id: inv.identity.container_id.clone(),
        pod_uid: inv.identity.pod_uid.clone(),
        pid: inv.identity.pid as i32,
        start_time_ticks: inv.identity.pid_start_time_ticks,
        resume_after_sec: spec.resume_after_sec,
    };
    ui.step(m::starting_healer(target.pid, spec.resume_after_sec));
    let fz = freeze::freeze(&program, &faults_dir(&env.workdir), &target)?;
    rec.raw("fault-ledger-frozen", fz.ledger());
    ui.step(m::frozen(fz.ledger().frozen_at.as_deref().unwrap_or("")));
    Ok(fz)
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

/// The resume, the healer's job at its deadline ([`freeze::Freeze::wait_for_resume`]), with
/// progress; says who resumed.
pub(crate) async fn await_resume(
    fz: &mut freeze::Freeze,
    ui: &Ui,
    spec: &FreezeSpec<'_>,
) -> Result<freeze::ResumeRecord, LabError> {
    let resume = fz
        .wait_for_resume(WATCHDOG_GRACE, |left| {
            if left >= 0 {
                ui.progress(
                    m::until_resume(left),
                    spec.resume_after_sec.saturating_sub(left as u64),
                    spec.resume_after_sec,
                );
            }
        })
        .await?;
    let by = match resume.resumed_by {
        UndoneBy::Healer => m::resumer::HEALER,
        UndoneBy::Runner => m::resumer::RUNNER,
        UndoneBy::RunnerExit => m::resumer::RUNNER_EXIT,
        UndoneBy::LaterCommand => m::resumer::LATER_COMMAND,
    };
    ui.step(m::resumed(
        by.get(ui.lang()),
        &resume.resumed_at,
        &m::process_state(ui.lang(), resume.state_after),
    ));
    Ok(resume)
}

/// After the resume: new violating requests until the first explicit deny, every outcome kept.
pub(crate) async fn after_resume(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    tag: &str,
) -> Result<Vec<RequestRecord>, LabError> {
    ui.step(m::AFTER_RESUME);
    let after_resume = until_explicit_deny(
        cluster,
        &format!("{tag}-after"),
        TARGET_NAMESPACE,
        false,
        DENY_AFTER_RESUME_BOUND,
        |r, s| {
            ui.progress(
                describe(ui, m::req::VIOLATING, r),
                s,
                DENY_AFTER_RESUME_BOUND.as_secs(),
            )
        },
    )
    .await?;
    for r in &after_resume {
        rec.request("after-resume", r);
    }
    Ok(after_resume)
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

/// The freeze window of the act's facts (evidence field names `watchdog_*` are the recorded
/// format's words for the healer).
pub(crate) fn freeze_window(
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
    ledger: &freeze::FreezeLedger,
    state_during: Option<char>,
    resume: &freeze::ResumeRecord,
) -> FreezeWindow {
    FreezeWindow {
        identity: inv.identity.clone(),
        watchdog_pid: ledger.healer.map(|h| h.pid as u32),
        watchdog_armed_at: ledger.healer_ready_at.clone().unwrap_or_default(),
        resume_after_sec: spec.resume_after_sec as u32,
        frozen_at: ledger.frozen_at.clone().unwrap_or_default(),
        state_during: state_during.map(String::from),
        resumed_at: resume.resumed_at.clone(),
        resumed_by: match resume.resumed_by {
            UndoneBy::Healer => Resumer::Watchdog,
            _ => Resumer::Runner,
        },
        state_after: resume
            .state_after
            .map(String::from)
            .unwrap_or_else(|| "gone".into()),
    }
}

/// The `kyverno` container's restart count in the admission-controller pod with UID `pod_uid`,
/// read from the API (`None` when that pod is gone).
async fn api_restart_count(cluster: &Cluster, pod_uid: &str) -> Result<Option<u32>, LabError> {
    let pods = cluster.admission_pods().await?;
    Ok(pods
        .iter()
        .find(|p| p.metadata.uid.as_deref() == Some(pod_uid))
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == CONTAINER))
        .map(|c| c.restart_count.max(0) as u32))
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

/// The string at JSON pointer `at` in `v` (empty when absent or not a string).
pub(crate) fn json_str(v: &serde_json::Value, at: &str) -> String {
    v.pointer(at)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The live ValidatingPolicy of the lab, required to have act 2's UID (act 6 updates it in place).
pub(crate) async fn policy_with_uid(
    cluster: &Cluster,
    uid_before: &str,
) -> Result<Option<serde_json::Value>, LabError> {
    let live = cluster.policy(cluster::POLICY_NAME).await?;
    let live_uid = live
        .as_ref()
        .and_then(|p| p.pointer("/metadata/uid"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if live_uid != uid_before {
        return Err(LabError::ClusterMismatch {
            what: format!("uid of ValidatingPolicy {}", cluster::POLICY_NAME),
            expected: uid_before.to_owned(),
            found: live_uid.to_owned(),
        });
    }
    Ok(live)
}

/// Act 6, step 1: the policy updated to `failurePolicy: Ignore` in place (same UID), and its
/// fine-grained Ignore webhook registered. Returns the stored policy, the webhook's name and
/// facts; `partial` keeps what was seen.
pub(crate) async fn update_to_ignore(
    env: &Env,
    cluster: &Cluster,
    rec: &mut ActRecorder,
    policy: &serde_json::Value,
    uid_before: &str,
    partial: &mut serde_json::Value,
) -> Result<(serde_json::Value, String, WebhookFacts), LabError> {
    let ui = env.ui;
    ui.step(m::UPDATING_TO_IGNORE);
    let stored = cluster.replace_policy_spec(policy).await?;
    rec.raw("policy-stored", &stored);
    partial["policy"] = stored.clone();
    let stored_uid = stored
        .pointer("/metadata/uid")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    if stored_uid != uid_before {
        return Err(LabError::ClusterMismatch {
            what: "policy uid after the update".into(),
            expected: uid_before.to_owned(),
            found: stored_uid.to_owned(),
        });
    }
    let ignore_name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
    let (cfg, wh) = wait_for_webhook(cluster, &ui, &ignore_name, env.registration_bound, |wh| {
        wh.failure_policy.as_deref() == Some("Ignore")
    })
    .await?;
    rec.raw("webhook-configuration-ignore", &cfg);
    let webhook = webhook_facts(&cfg, &wh);
    partial["webhook"] = to_value(&webhook)?;
    ui.step(m::webhook_registered(
        &webhook.name,
        &webhook.failure_policy,
        &webhook.timeout_seconds.to_string(),
    ));
    Ok((stored, ignore_name, webhook))
}

/// Act 6, step 2: with a healthy webhook under Ignore, violating requests until an explicit deny
/// (every outcome kept). Returns the last one, the deny; none within the bound is an error.
pub(crate) async fn healthy_deny_under_ignore(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    partial: &mut serde_json::Value,
    tag: &str,
) -> Result<RequestRecord, LabError> {
    ui.step(m::HEALTHY_DENY_IGNORE);
    let healthy = until_explicit_deny(
        cluster,
        &format!("{tag}-healthy-bad"),
        TARGET_NAMESPACE,
        false,
        common::ANSWER_BOUND,
        |r, s| {
            ui.progress(
                describe(ui, m::req::VIOLATING, r),
                s,
                common::ANSWER_BOUND.as_secs(),
            )
        },
    )
    .await?;
    for r in &healthy {
        rec.request("healthy-bad", r);
    }
    let healthy_bad = healthy
        .last()
        .cloned()
        .expect("until_explicit_deny sends at least one request");
    partial["healthy_bad"] = to_value(&healthy_bad)?;
    if healthy_bad.outcome != Outcome::ExplicitDeny {
        return Err(LabError::WaitTimedOut {
            what: "an explicit deny under Ignore with a healthy webhook".into(),
            waited_ms: common::ANSWER_BOUND.as_millis() as u64,
            last_state: healthy_bad.outcome.as_str().into(),
        });
    }
    Ok(healthy_bad)
}

/// Act 6: the same policy switched to failurePolicy Ignore; a healthy deny; a short freeze.
pub(crate) async fn act6(env: &Env) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let cluster = env.cluster().await?;
    let ctx = live_context(&cluster, &env.workdir).await?;
    let (_pi, loaded) = read_input::<inputs::PolicyIgnore>(&env.workdir, &ctx)?;
    let (plan, plan_loaded) = read_input::<inputs::FreezePlan>(&env.workdir, &ctx)?;
    let mark = check_fault_preconditions(
        &cluster,
        (plan.node_uid.as_str(), plan.deployment_uid.as_str()),
    )
    .await?;
    let act2: Act2Facts = read_facts(&env.workdir, 2)?;
    let act3: Act3Facts = read_facts(&env.workdir, 3)?;
    let policy_uid_before = json_str(&act2.policy, "/metadata/uid");
    let live = policy_with_uid(&cluster, &policy_uid_before).await?;
    let healed = crate::faults::heal::recent();
    let mut cri = env.cri().await?;
    let mut rec = ActRecorder::begin(&env.workdir, Lab::B, 6)?.with_audit(env);
    rec.input(&loaded);
    rec.input(&plan_loaded);
    rec.raw("lab-mark", &mark);
    rec.raw("healed-earlier-faults", &healed);
    rec.raw("policy-before", &live);

    let mut partial = serde_json::json!({"policy_uid_before": policy_uid_before});
    let (stored, ignore_name, webhook) = match update_to_ignore(
        env,
        &cluster,
        &mut rec,
        &loaded.value,
        &policy_uid_before,
        &mut partial,
    )
    .await
    {
        Ok(x) => x,
        Err(e) => return finish(rec, Err((partial, e))),
    };
    let window = crate::metrics::Window::begin(&cluster).await;
    let healthy_bad =
        match healthy_deny_under_ignore(&cluster, &ui, &mut rec, &mut partial, "b6").await {
            Ok(h) => h,
            Err(e) => return finish(rec, Err((partial, e))),
        };
    rec.save_progress(partial.clone())?;

    let inv = match investigate(&cluster, &mut cri).await {
        Ok(i) => i,
        Err(e) => return finish(rec, Err((partial, e))),
    };
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        act: 6,
        resume_after_sec: ACT6_RESUME_AFTER_SEC,
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
        let webhook = webhook_facts(&cfg, &wh);
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

    /// Writes one freeze attempt's plan and ledger under `faults`.
    fn attempt(faults: &std::path::Path, id: &str, pid: i32, stopped: &str, resumed: Option<&str>) {
        let dir = faults.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let me = serde_json::json!({"pid": 1, "start_ticks": 1});
        let plan = serde_json::json!({
            "attempt": id, "act": 5, "container_id": "c", "pod_uid": "u",
            "target": {"pid": pid, "start_ticks": 42}, "resume_after_sec": 20,
            "runner": me, "created_at": stopped,
        });
        let ledger = serde_json::json!({
            "attempt": id, "status": if resumed.is_some() { "resumed" } else { "frozen" },
            "healer": me, "healer_ready_at": stopped, "stop_sent_at": stopped,
            "frozen_at": stopped, "deadline_at": null, "resumed_at": resumed,
            "resumed_by": null, "state_after_resume": null,
            "process_gone_after_resume": false, "note": null,
        });
        let files = AttemptFiles { dir };
        std::fs::write(files.plan(), plan.to_string()).unwrap();
        std::fs::write(files.ledger(), ledger.to_string()).unwrap();
    }

    #[test]
    fn the_previous_freeze_is_the_newest_ended_one_of_the_same_process() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path();
        attempt(
            f,
            "freeze-05-a",
            7,
            "2026-12-01T04:00:00.000Z",
            Some("2026-12-01T04:00:20.000Z"),
        );
        attempt(
            f,
            "freeze-06-b",
            7,
            "2026-12-01T04:00:21.000Z",
            Some("2026-12-01T04:00:31.000Z"),
        );
        // Another process (pid 8) and a freeze that has not ended: not it.
        attempt(
            f,
            "freeze-05-c",
            8,
            "2026-12-01T04:01:00.000Z",
            Some("2026-12-01T04:01:20.000Z"),
        );
        attempt(f, "freeze-05-d", 7, "2026-12-01T04:02:00.000Z", None);
        let (dir, lasted, ended) = previous_freeze(f, 7, 42).unwrap();
        assert!(dir.ends_with("freeze-06-b"), "{dir:?}");
        assert_eq!(lasted, Duration::from_secs(10));
        assert_eq!(facts::format_rfc3339(ended), "2026-12-01T04:00:31.000Z");
        assert!(
            previous_freeze(f, 7, 43).is_none(),
            "another start time is another process"
        );
    }

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
