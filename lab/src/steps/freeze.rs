//! [`acts::Fault::Freeze`](crate::acts::Fault::Freeze): the parts of a freeze every target shares
//! (lab B's one replica, lab C's leader and follower): the liveness gap before it, the freeze
//! itself (plan → ledger → detached healer → SIGSTOP), the healer's resume, the requests after it
//! until the first explicit deny, and the outcome turned into facts ([`complete`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::acts::{self, Step, Target};
use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::evidence::{Lab, Outcome, RequestRecord};
use crate::facts::a::LeaseFacts;
use crate::facts::b::{FreezeWindow, ProcessIdentity, Resumer};
use crate::facts::{self, PodObservation};
use crate::faults::freeze::{self, AttemptFiles, FreezeTarget, UndoneBy};
use crate::inputs::{self, StudentInput};
use crate::labs::common::{
    self, ActRecorder, ActSummary, Env, Ui, finish, read_facts, read_live, to_value,
    violating_until_deny, wait_for_webhook,
};
use crate::messages::act as m;
use crate::rules::b::{DENY_AFTER_RESUME_BOUND, WATCHDOG_GRACE};
use crate::steps::investigate::{Investigation, check_fault_preconditions, target_now};
use crate::steps::observe::leader_lease;
use crate::steps::policy::{Head, Switched, open_act6};
use crate::steps::samples::{Sampler, Samples};
use crate::workdir::Workdir;

/// Where fault attempts live in the work directory.
pub fn faults_dir(workdir: &Workdir) -> PathBuf {
    crate::faults::attempt::faults_root(workdir.root())
}

/// The newest freeze attempt of act `act` started by this process (its id ends with our pid).
fn own_attempt(env: &Env, act: u8) -> Option<AttemptFiles> {
    let prefix = format!("freeze-{act:02}-");
    let suffix = format!("-{}", std::process::id());
    let own = |n: &str| n.starts_with(&prefix) && n.ends_with(&suffix);
    let dir = common::last_entry(&faults_dir(&env.workdir), own).ok()??;
    Some(AttemptFiles { dir })
}

/// The newest ended freeze of the process `(pid, start_time_ticks)` among the attempts under
/// `faults`: `(attempt directory, how long it lasted, when it ended)`, from each attempt's
/// `plan.json` (the target), `ledger.json` (`stop_sent_at`, `resumed_at`) or else the healer's
/// report (`resume.sent_at`). Attempts that cannot be read are skipped.
pub(crate) fn previous_freeze(
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
            let stopped = ledger.as_ref().and_then(|l| l.stop_sent_at.clone());
            let stopped = stopped.or_else(|| report.as_ref()?.stop_sent_at.clone())?;
            let resumed = ledger.as_ref().and_then(|l| l.resumed_at.clone());
            let sent = || Some(report.as_ref()?.resume.as_ref()?.sent_at.clone());
            let resumed = resumed.or_else(sent)?;
            let from = facts::parse_rfc3339(&stopped)?;
            let to = facts::parse_rfc3339(&resumed)?;
            Some((files.dir, (to - from).to_std().ok()?, to))
        })
        .max_by_key(|(_, _, ended)| *ended)
}

/// Before freezing the process `inv` found (`(pid, start_time_ticks)` in its pod) for `next_sec`,
/// waits (with progress) until no liveness probe can fail twice in a row across the freeze, from
/// two facts:
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
    inv: &Investigation,
    faults: &std::path::Path,
    next_sec: u64,
) {
    let next = Duration::from_secs(next_sec);
    let (pid, ticks) = (inv.identity.pid as i32, inv.identity.pid_start_time_ticks);
    if let Some((dir, lasted, ended)) = previous_freeze(faults, pid, ticks) {
        let since = (chrono::Utc::now() - ended).to_std().unwrap_or_default();
        let wait = crate::rules::b::liveness_wait(lasted, since, next);
        if !wait.is_zero() {
            let line = m::liveness_gap(lasted.as_secs(), since.as_secs(), wait.as_secs() + 1);
            ui.step(line);
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
        let failure = match last_liveness_failure(cluster, &inv.pod_name).await {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                let error = serde_json::json!({ "error": e.to_string() });
                rec.raw("liveness-failure-events", error);
                return;
            }
        };
        let since = (chrono::Utc::now() - failure.0).to_std();
        let since = since.unwrap_or_default();
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
    let liveness = |m: &str| m.starts_with("Liveness probe");
    Ok(events
        .iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(pod_name)
                && e.reason.as_deref() == Some("Unhealthy")
                && e.message.as_deref().is_some_and(liveness)
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
        let secs = left.as_secs();
        ui.progress(m::liveness_gap_left(secs + 1), total - secs - 1, total);
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
    }
}

/// What a freeze run needs (lab B's acts 5-6, lab C's acts 5-6).
pub(crate) struct FreezeSpec<'a> {
    /// The lab (the runner's: a lab's table of steps, not its code, names it).
    pub lab: Lab,
    /// The act number.
    pub act: u8,
    /// The healer resumes the process after this many seconds.
    pub resume_after_sec: u64,
    /// The policy's webhook the act's requests go through.
    pub webhook_name: String,
    /// Act 3's existing pod.
    pub existing: &'a PodObservation,
    /// The prefix of the act's request names (`b5`, `c6`, …).
    pub tag: String,
}

/// Adds this runner's attempt of act `act` (its id ends with this process's pid), if it got that
/// far, to the raw data: its plan, its ledger and the healer's report.
fn record_attempt(env: &Env, act: u8, rec: &mut ActRecorder) {
    if let Some(files) = own_attempt(env, act) {
        for (what, name) in [
            ("fault-plan", "plan.json"),
            ("fault-ledger", "ledger.json"),
            ("healer-report", "healer.json"),
        ] {
            // Bounded, without following a symlink, relative to the attempt's directory.
            let bound = crate::files::RECORD_BOUND;
            if let Ok(bytes) = crate::files::read_regular_in(&files.dir, name, bound) {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap_or(text.into());
                rec.raw(what, value);
            }
        }
    }
}

/// Before the freeze: the registration must be there (this lab preserves it), the leader Lease
/// is kept, and the liveness gap is checked ([`liveness_gap`]).
async fn before_freeze(
    env: &Env,
    cluster: &Cluster,
    rec: &mut ActRecorder,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
) -> Result<(), LabError> {
    let (ui, bound) = (env.ui, Duration::from_secs(10));
    let (cfg, _) = wait_for_webhook(cluster, &ui, &spec.webhook_name, bound, |_| true).await?;
    rec.raw("webhook-configuration-before", &cfg);
    if let Some(lease) = leader_lease(cluster).await? {
        rec.raw("leader-lease-before", &lease);
    }
    let (faults, next) = (faults_dir(&env.workdir), spec.resume_after_sec);
    liveness_gap(&ui, rec, cluster, inv, &faults, next).await;
    Ok(())
}

/// The freeze of act 4's process ([`freeze::freeze`]: plan, ledger, healer, SIGSTOP confirmed).
fn start_freeze(
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

/// The resume, the healer's job at its deadline ([`freeze::Freeze::wait_for_resume`]), with
/// progress; says who resumed.
async fn await_resume(
    fz: &mut freeze::Freeze,
    ui: &Ui,
    spec: &FreezeSpec<'_>,
) -> Result<freeze::ResumeRecord, LabError> {
    let total = spec.resume_after_sec;
    let progress = |left: i64| {
        if left >= 0 {
            let waited = total.saturating_sub(left as u64);
            ui.progress(m::until_resume(left), waited, total);
        }
    };
    let resume = fz.wait_for_resume(WATCHDOG_GRACE, progress).await?;
    let by = match resume.resumed_by {
        UndoneBy::Healer => m::resumer::HEALER,
        UndoneBy::Runner => m::resumer::RUNNER,
        UndoneBy::RunnerExit => m::resumer::RUNNER_EXIT,
        UndoneBy::LaterCommand => m::resumer::LATER_COMMAND,
    };
    let state = m::process_state(ui.lang(), resume.state_after);
    ui.step(m::resumed(by.get(ui.lang()), &resume.resumed_at, &state));
    Ok(resume)
}

/// After the resume: new violating requests until the first explicit deny, every outcome kept.
async fn after_resume(
    cluster: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    tag: &str,
) -> Result<Vec<RequestRecord>, LabError> {
    ui.step(m::AFTER_RESUME);
    let (name, bound) = (format!("{tag}-after"), DENY_AFTER_RESUME_BOUND);
    violating_until_deny(cluster, ui, rec, (&name, "after-resume"), (bound, bound)).await
}

/// The first explicit deny among the requests after the resume and how long after
/// `resumed_at` it was answered (ms; `None` when no deny came or a time does not parse).
fn first_deny(after: &[RequestRecord], resumed_at: &str) -> (Option<RequestRecord>, Option<u64>) {
    let denied = |r: &&RequestRecord| r.outcome == Outcome::ExplicitDeny;
    let first = after.iter().find(denied).cloned();
    let ms = first.as_ref().and_then(|d| {
        let a = facts::parse_rfc3339(&d.answered_at)?;
        let r = facts::parse_rfc3339(resumed_at)?;
        u64::try_from((a - r).num_milliseconds()).ok()
    });
    (first, ms)
}

/// The freeze window of the act's facts (evidence field names `watchdog_*` are the recorded
/// format's words for the healer).
fn freeze_window(
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
    ledger: &freeze::FreezeLedger,
    state_during: Option<char>,
    resume: &freeze::ResumeRecord,
) -> FreezeWindow {
    let state_after = resume.state_after.map(String::from);
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
        state_after: state_after.unwrap_or_else(|| "gone".into()),
    }
}

/// The registration read while the freeze lasts: whether the policy's webhook was there, the
/// webhook verbatim (`null`: absent), when it was read and its `timeoutSeconds`.
pub(crate) struct Registration {
    /// Whether the webhook was registered.
    pub present: bool,
    /// The webhook as registered, verbatim (`null` when absent).
    pub snapshot: serde_json::Value,
    /// When it was read, RFC 3339 UTC (ms).
    pub checked_at: String,
    /// Its `timeoutSeconds` (10, the API's default, when absent).
    pub timeout_seconds: u32,
}

/// What every freeze run has seen up to the first explicit deny after the resume, whatever its
/// lab: the window, the registration during it, the lab's requests during it, the samples (empty
/// unless the act has `Samples`), the requests after it and the first deny.
pub(crate) struct Frozen<T> {
    /// The freeze window of the act's facts.
    pub freeze: FreezeWindow,
    /// The registration read during the freeze.
    pub registration: Registration,
    /// The lab's requests during the freeze ([`Shape::traffic`]).
    pub traffic: T,
    /// The Lease and endpoint reads while it lasted.
    pub samples: Samples,
    /// The violating requests after the resume, up to the first explicit deny.
    pub after_resume: Vec<RequestRecord>,
    /// That deny.
    pub first_explicit_deny: Option<RequestRecord>,
    /// How long after the resume it was answered, ms.
    pub first_deny_after_resume_ms: Option<u64>,
}

/// What an act that freezes works with (acts 5 and 6): its environment (work dir, output), the
/// cluster, the node's CRI, the evidence recorder, the process and the freeze.
pub(crate) struct FreezeAct<'a> {
    /// The act's environment (work dir, output).
    pub env: &'a Env,
    /// The cluster.
    pub cl: &'a Cluster,
    /// The node's CRI.
    pub cri: &'a mut CriClient,
    /// The act's evidence recorder.
    pub rec: &'a mut ActRecorder,
    /// The frozen process as found before the freeze.
    pub inv: &'a Investigation,
    /// The act's freeze.
    pub spec: &'a FreezeSpec<'a>,
}

/// How one lab's freeze acts differ from another's (lab B: the one replica; lab C: one of
/// three); everything else is the freeze steps' ([`act5`], [`act6`], [`freeze_run`]): the
/// target from the registry, the plan, the freeze, the resume, the first deny. A lab keeps the
/// requests it sends during the freeze, what it reads before and after it, and how the run
/// becomes its fact type (whose JSON is the evidence's).
pub(crate) trait Shape: Sized {
    /// The lab's freeze plan (`freeze-plan.json`).
    type Plan: StudentInput;
    /// Act 3's facts (the existing pod).
    type Act3: DeserializeOwned;
    /// Act 4's facts (the process act 5 must find again).
    type Act4: DeserializeOwned;
    /// The requests sent during the freeze.
    type Traffic;
    /// The run's facts.
    type Run: Serialize;
    /// The plan's node and deployment UIDs.
    fn uids(plan: &Self::Plan) -> (&str, &str);
    /// Act 3's existing pod.
    fn existing(a3: &Self::Act3) -> &PodObservation;
    /// The process act 4 found that act 5 freezes (`target`, the registry's): its pod's name and
    /// identity; `None` when act 4 found no such replica.
    fn act4_target(a4: &Self::Act4, target: Target) -> Option<(&str, &ProcessIdentity)>;
    /// The lab's part of act `act` of `lab`'s freeze, its target chosen (`lease`: the Lease
    /// read then).
    ///
    /// Errors: [`LabError::Usage`] when the registry's act does not fit the lab.
    fn new(
        lab: Lab,
        act: u8,
        a3: &Self::Act3,
        target: Target,
        lease: Option<LeaseFacts>,
    ) -> Result<Self, LabError>;
    /// Reads right before the freeze.
    async fn before(&mut self, _cx: &mut FreezeAct<'_>) {}
    /// The requests while the process is frozen, each recorded.
    async fn traffic(&self, cx: &mut FreezeAct<'_>) -> Result<Self::Traffic, LabError>;
    /// The partial facts kept if the act is cut short after the requests.
    fn partial(
        reg: &Registration,
        state: Option<char>,
        t: &Self::Traffic,
        samples: Option<&Samples>,
    ) -> serde_json::Value;
    /// After the first deny: what the lab reads, and the run as its facts.
    async fn after(
        self,
        cx: FreezeAct<'_>,
        run: Frozen<Self::Traffic>,
    ) -> Result<Self::Run, LabError>;
    /// The run's summary lines.
    fn lines(ui: &Ui, act: u8, run: &Self::Run) -> Vec<String>;
    /// An interrupted act 6's partial facts: the switch's (`head`) with the run's so far (`run`),
    /// in one object as the completed act's facts are ([`flatten`]) unless the lab's recorded
    /// format says otherwise.
    fn join_partial(head: serde_json::Value, run: serde_json::Value) -> serde_json::Value {
        flatten(head, run)
    }
}

/// Act 6's facts: the run's with the switch's (`head`) beside them, one object (each lab's
/// `Act6Facts` flattens its run).
fn flatten(head: serde_json::Value, mut run: serde_json::Value) -> serde_json::Value {
    if let (serde_json::Value::Object(h), serde_json::Value::Object(r)) = (head, &mut run) {
        r.extend(h);
    }
    run
}

/// The freeze and everything observed around it, in named steps: the state before
/// ([`before_freeze`], the lab's [`Shape::before`]), the freeze ([`start_freeze`]), the samples
/// ([`Sampler`], when the act has `Samples`) beside the registration and the lab's requests
/// ([`Shape::traffic`]), the healer's resume ([`await_resume`]; the runner's at once when the
/// requests failed), the requests until the first deny ([`after_resume`]) and the lab's reads
/// after it ([`Shape::after`]).
async fn freeze_run<S: Shape>(
    mut cx: FreezeAct<'_>,
    partial: &mut serde_json::Value,
    mut shape: S,
) -> Result<S::Run, LabError> {
    let (env, cl, inv, spec) = (cx.env, cx.cl, cx.inv, cx.spec);
    let ui = env.ui;
    before_freeze(env, cl, cx.rec, inv, spec).await?;
    shape.before(&mut cx).await;
    let mut fz = start_freeze(env, cx.rec, inv, spec)?;
    let sampled = acts::steps(spec.lab, spec.act).contains(&Step::Samples);
    let sampler = sampled.then(|| Sampler::start(cl));
    let during = during_freeze(&mut cx, &fz, &shape).await;
    if let Ok((reg, state, traffic)) = &during {
        *partial = S::partial(reg, *state, traffic, None);
        partial["freeze"] = to_value(fz.ledger())?;
        cx.rec.save_progress(partial.clone())?;
    }
    let resume = match &during {
        Ok(_) => await_resume(&mut fz, &ui, spec).await,
        Err(_) => fz.resume(UndoneBy::Runner, None),
    };
    let samples = match sampler {
        Some(s) => s.stop().await?,
        None => Samples::default(),
    };
    if sampled {
        cx.rec.raw("freeze-samples", &samples.raw);
    }
    let (registration, state, traffic) = during?;
    let resume = resume?;
    let ledger = fz.ledger().clone();
    drop(fz);
    cx.rec.raw("fault-ledger-resumed", &ledger);
    *partial = S::partial(&registration, state, &traffic, sampled.then_some(&samples));
    partial["freeze"] = to_value(&ledger)?;
    cx.rec.save_progress(partial.clone())?;
    let after = after_resume(cl, &ui, cx.rec, &spec.tag).await?;
    let (first_explicit_deny, first_deny_after_resume_ms) = first_deny(&after, &resume.resumed_at);
    let run = Frozen {
        freeze: freeze_window(inv, spec, &ledger, state, &resume),
        registration,
        traffic,
        samples,
        after_resume: after,
        first_explicit_deny,
        first_deny_after_resume_ms,
    };
    shape.after(cx, run).await
}

/// During the freeze: the policy's registration, the process state, then the lab's requests.
async fn during_freeze<S: Shape>(
    cx: &mut FreezeAct<'_>,
    fz: &freeze::Freeze,
    shape: &S,
) -> Result<(Registration, Option<char>, S::Traffic), LabError> {
    let found = cx.cl.find_webhook(&cx.spec.webhook_name).await?;
    let checked_at = facts::now_rfc3339();
    let state = fz.state()?;
    let traffic = shape.traffic(cx).await?;
    let wh = found.map(|(_, wh)| wh);
    let snapshot = wh.as_ref().map(cluster::to_json).transpose()?;
    let timeout = wh.as_ref().and_then(|wh| wh.timeout_seconds);
    let registration = Registration {
        present: wh.is_some(),
        snapshot: snapshot.unwrap_or_default(),
        checked_at,
        timeout_seconds: timeout.unwrap_or(10).max(0) as u32,
    };
    Ok((registration, state, traffic))
}

/// Act 5: the process act 4 investigated (the registry's target), frozen under failurePolicy
/// Fail for the plan's `resume_after_sec`; `lab` is the runner's.
pub(crate) async fn act5<S: Shape>(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let (target, resume_after_sec) =
        super::freeze_of(lab, 5, u64::from(inputs::ResumeAfterSec::VALUE))?;
    let (cl, _, plan, loaded) = read_live::<S::Plan>(env).await?;
    let mark = check_fault_preconditions(&cl, S::uids(&plan)).await?;
    let a3: S::Act3 = read_facts(&env.workdir, 3)?;
    let a4: S::Act4 = read_facts(&env.workdir, 4)?;
    let healed = crate::faults::heal::recent();
    let mut cri = env.cri().await?;
    // The act's span starts before its first read that goes into the evidence (the Lease and
    // the process below): begun after them, a read could fall outside the act by more than the
    // clock skew allowed (55 ms seen on a loaded machine, 2026-12-03). The recorder writes
    // nothing until the act ends, so a refusal below still leaves no evidence.
    let mut rec = env.begin_audited(lab, 5)?.with_input(&loaded);
    rec.raw("lab-mark", &mark);
    rec.raw("healed-earlier-faults", &healed);
    let found = S::act4_target(&a4, target).ok_or_else(|| LabError::FaultRefused {
        reason: format!("act 4 found no {target:?} replica to freeze; reproduce in a fresh lab"),
    })?;
    let chosen = target_now(&cl, &mut cri, &mut rec, target, Some(found));
    let (lease, inv) = chosen.await?;
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        lab,
        act: 5,
        resume_after_sec,
        webhook_name: cluster::fine_grained_webhook_name("Fail", cluster::POLICY_NAME),
        existing: S::existing(&a3),
        tag: common::request_tag(lab, 5),
    };
    let shape = S::new(lab, 5, &a3, target, lease)?;
    complete(env, &cl, &mut cri, rec, &inv, &spec, shape, None).await
}

/// Act 6: the policy switched in place to failurePolicy Ignore and a healthy deny
/// ([`open_act6`]), then the registry's target frozen for the registry's length; `lab` is the
/// runner's.
pub(crate) async fn act6<S: Shape>(env: &Env, lab: Lab) -> Result<ActSummary, LabError> {
    let (target, resume_after_sec) = super::freeze_of(lab, 6, 0)?;
    let opened = open_act6::<S::Plan, S::Act3>(env, lab, S::uids).await;
    let Switched {
        cluster: cl,
        mut cri,
        mut rec,
        act3,
        ignore_name,
        head,
    } = match opened {
        Ok(s) => s,
        Err(done) => return done,
    };
    let (lease, inv) = match target_now(&cl, &mut cri, &mut rec, target, None).await {
        Ok(x) => x,
        Err(e) => return finish(rec, head.facts, Err(e)),
    };
    rec.raw("cri-container-before", &inv.container);
    let spec = FreezeSpec {
        lab,
        act: 6,
        resume_after_sec,
        webhook_name: ignore_name,
        existing: S::existing(&act3),
        tag: common::request_tag(lab, 6),
    };
    let shape = match S::new(lab, 6, &act3, target, lease) {
        Ok(s) => s,
        Err(e) => return finish(rec, head.facts, Err(e)),
    };
    complete(env, &cl, &mut cri, rec, &inv, &spec, shape, Some(head)).await
}

/// Runs [`freeze_run`] inside the act's metrics window (`head`'s, else begun now), undoing the
/// freeze on a signal, and completes the act's evidence (with `head`'s facts).
#[allow(clippy::too_many_arguments)]
async fn complete<S: Shape>(
    env: &Env,
    cl: &Cluster,
    cri: &mut CriClient,
    mut rec: ActRecorder,
    inv: &Investigation,
    spec: &FreezeSpec<'_>,
    shape: S,
    head: Option<Head>,
) -> Result<ActSummary, LabError> {
    let ui = env.ui;
    let (head, mut lines, window) = match head {
        Some(h) => (Some(h.facts), h.lines, h.window),
        None => (None, vec![], crate::metrics::Window::begin(cl).await),
    };
    let mut partial = serde_json::Value::Null;
    let cx = FreezeAct {
        env,
        cl,
        cri,
        rec: &mut rec,
        inv,
        spec,
    };
    let run = freeze_run(cx, &mut partial, shape);
    let healed = "the process was resumed by the runner (SIGCONT through its pidfd)";
    let outcome = common::unless_signalled(spec.act, healed, run).await;
    let admission = window.end(cl).await;
    record_attempt(env, spec.act, &mut rec);
    let run = match outcome {
        Ok(run) => run,
        Err(e) => {
            let mut facts = match head {
                Some(h) => S::join_partial(h, partial),
                None => partial,
            };
            admission.attach(&mut facts);
            return finish(rec, facts, Err(e));
        }
    };
    lines.extend(S::lines(&ui, spec.act, &run));
    lines.push(ui.text(crate::metrics::summary_line(&admission)));
    let run = to_value(&run)?;
    let mut facts = match head {
        Some(h) => flatten(h, run),
        None => run,
    };
    admission.attach(&mut facts);
    rec.complete(facts, lines)
}

/// The lines every freeze's summary opens with: its window and who resumed it, and whether the
/// policy's webhook was registered during it.
pub(crate) fn window_lines(ui: &Ui, w: &FreezeWindow, registration_present: bool) -> Vec<String> {
    let by = match w.resumed_by {
        Resumer::Watchdog => m::resumer::HEALER,
        Resumer::Runner => m::resumer::RUNNER,
    };
    let by = by.get(ui.lang());
    let window = m::freeze_window(&w.frozen_at, &w.resumed_at, by, &w.state_after);
    let registration = m::registration_during_freeze(registration_present);
    vec![ui.text(window), ui.text(registration)]
}

/// The line of the first deny after the resume (`-`: none) and the restart counts around it.
pub(crate) fn first_deny_line(ui: &Ui, ms: Option<u64>, restarts: (u32, u32)) -> String {
    let ms = ms.map_or_else(|| "-".into(), |ms| ms.to_string());
    ui.text(m::first_deny_after_resume(&ms, restarts.0, restarts.1))
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
}
