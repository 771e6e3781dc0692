//! [`acts::Fault::Freeze`](crate::acts::Fault::Freeze): the parts of a freeze every target shares
//! (lab B's one replica, lab C's leader and follower): the liveness gap before it, the freeze
//! itself (plan → ledger → detached healer → SIGSTOP), the healer's resume, the requests after it
//! until the first explicit deny, and the outcome turned into facts ([`settle`]).

use std::path::PathBuf;
use std::time::Duration;

use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::evidence::{Outcome, RequestRecord};
use crate::facts::b::{FreezeWindow, Resumer};
use crate::facts::{self, PodObservation};
use crate::faults::freeze::{self, AttemptFiles, FreezeTarget, UndoneBy};
use crate::labs::common::{
    ActRecorder, Env, TARGET_NAMESPACE, Ui, describe, until_explicit_deny, wait_for_webhook,
};
use crate::messages::act as m;
use crate::rules::b::{DENY_AFTER_RESUME_BOUND, WATCHDOG_GRACE};
use crate::steps::investigate::Investigation;
use crate::workdir::Workdir;

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

/// The first explicit deny among the requests after the resume and how long after
/// `resumed_at` it was answered (ms; `None` when no deny came or a time does not parse).
pub(crate) fn first_deny(
    after: &[RequestRecord],
    resumed_at: &str,
) -> (Option<RequestRecord>, Option<u64>) {
    let first = after
        .iter()
        .find(|r| r.outcome == Outcome::ExplicitDeny)
        .cloned();
    let ms = first.as_ref().and_then(|d| {
        let a = facts::parse_rfc3339(&d.answered_at)?;
        let r = facts::parse_rfc3339(resumed_at)?;
        u64::try_from((a - r).num_milliseconds()).ok()
    });
    (first, ms)
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
