//! Heal-on-start: every command that touches the cluster (`heal`, `inspect`, every `act`) first
//! looks for unfinished fault attempts in the work directory and undoes them, and records what it
//! did in the attempt's own `heal.json` ([`HealRecord`]) — the attempt's evidence of how it ended.
//!
//! The caller holds the work-dir lock ([`super::attempt::lock_workdir`]), so no runner of this
//! work directory is alive; an attempt whose recorded runner is still alive is left alone anyway.
//!
//! - **Freeze attempt** (`freeze-*`): if the healer's record shows a SIGSTOP was sent and the
//!   pinned process (PID + start ticks, cgroup naming the container) is still in `T`, it is
//!   resumed through a fresh pidfd (SIGCONT re-sent until the state is no longer `T`, bounded).
//!   A healer that still lives is then sent SIGTERM through a pidfd (it resumes — a no-op now —
//!   and exits, releasing the target lock).
//! - **Scale attempt** (`scale-*`): if the ledger shows a scale-down without a recorded restore and
//!   the recovery watcher did not restore, the replicas are restored when the planned Deployment
//!   (same UID) is still at 0 ([`super::scale::restore_replicas`]). Left alone: an attempt whose
//!   act 5 completed and handed the fault over to act 6 while its watcher still lives (the watcher
//!   or act 6 ends it, and act 6 measures the recovery).
//!
//! The heal acts first and writes after; a `heal.json` that cannot be written is reported in the
//! returned summary (the fault is undone all the same).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::faults::attempt::{
    self, AttemptId, FaultKind, ProcessRef, now_rfc3339, read_json, write_json_atomic,
};
use crate::faults::freeze::{
    AttemptFiles, FreezePlan, HealerReport, PinnedProcess, RESUME_BOUND, ResumeCheck,
};
use crate::faults::scale;
use crate::wait::{Check, Wait, WaitError};

/// Bound on waiting for a signalled healer to exit.
pub const HEALER_EXIT_BOUND: Duration = Duration::from_secs(3);

/// `heal.json`: what a later command did with one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealRecord {
    /// The attempt (its directory name).
    pub attempt: AttemptId,
    /// Its fault.
    pub kind: FaultKind,
    /// The command that healed (`heal`, `inspect`, `act 5`, …).
    pub command: String,
    /// That command's process.
    pub by: ProcessRef,
    /// When, RFC 3339 UTC (ms).
    pub at: String,
    /// `resumed`, `already-running`, `process-gone`, `nothing-signalled` (freeze);
    /// `restored`, `already-restored`, `left-alone`, `deployment-changed`, `nothing-scaled`
    /// (scale); `refused` (a safety check failed: nothing done).
    pub action: String,
    /// The freeze's resume as seen.
    pub resume: Option<ResumeCheck>,
    /// The scale restore's outcome, verbatim.
    pub restore: Option<scale::RestoreOutcome>,
    /// The attempt's healer when it was still alive, and what was done with it.
    pub healer: Option<ProcessRef>,
    /// `sigterm-sent, exited` / `sigterm-sent, still-running` / `gone`.
    pub healer_signalled: Option<String>,
    /// Details.
    pub note: Option<String>,
}

/// What a heal pass did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HealSummary {
    /// One record per attempt that was looked at and settled now.
    pub healed: Vec<HealRecord>,
    /// Attempts left alone because their fault is still owned by a live runner or healer, with why.
    pub live: Vec<String>,
    /// Problems: unreadable attempt files, unreachable cluster, `heal.json` not written.
    pub errors: Vec<String>,
}

impl HealSummary {
    /// Whether a fault was actually undone now (resumed or restored).
    pub fn undid_anything(&self) -> bool {
        self.healed
            .iter()
            .any(|r| r.action == "resumed" || r.action == "restored")
    }

    /// One line per record / live attempt / error, English (maintainers' and evidence text).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.healed {
            out.push(format!("attempt {}: {}", r.attempt, r.action));
        }
        for l in &self.live {
            out.push(format!("left alone: {l}"));
        }
        for e in &self.errors {
            out.push(format!("error: {e}"));
        }
        out
    }
}

/// The attempt directories under `<workdir>/faults/` (sorted), with their kind.
pub fn attempts(workdir: &Path) -> Result<Vec<(FaultKind, PathBuf)>, LabError> {
    let root = attempt::faults_root(workdir);
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LabError::Io { path: root, source }),
    };
    let mut out: Vec<(FaultKind, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            AttemptId(name).kind().map(|k| (k, p))
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Heals every unfinished attempt of `workdir` (module docs). `cluster` reaches the cluster for
/// scale attempts (`None`: they are reported as errors when one needs a restore). `command`
/// names the caller in the records.
pub async fn heal_workdir(
    workdir: &Path,
    cluster: Option<&crate::cluster::Cluster>,
    command: &str,
) -> HealSummary {
    let mut summary = HealSummary::default();
    let list = match attempts(workdir) {
        Ok(l) => l,
        Err(e) => {
            summary.errors.push(e.to_string());
            return summary;
        }
    };
    for (kind, dir) in list {
        if dir.join("heal.json").exists() {
            continue;
        }
        let result = match kind {
            FaultKind::Freeze => heal_freeze(&dir, command),
            FaultKind::Scale => heal_scale(&dir, cluster, command).await,
        };
        match result {
            Ok(Settled::Live(why)) => summary.live.push(format!("{}: {why}", dir.display())),
            Ok(Settled::Done(rec)) => {
                // Act first (done above), record after.
                if let Err(e) = write_json_atomic(&dir.join("heal.json"), &rec) {
                    summary.errors.push(format!(
                        "attempt {} was healed ({}) but heal.json could not be written: {e}",
                        rec.attempt, rec.action
                    ));
                }
                summary.healed.push(*rec);
            }
            Err(e) => summary.errors.push(format!("{}: {e}", dir.display())),
        }
    }
    summary
}

enum Settled {
    Live(String),
    Done(Box<HealRecord>),
}

fn record(attempt: AttemptId, kind: FaultKind, command: &str, action: &str) -> HealRecord {
    HealRecord {
        attempt,
        kind,
        command: command.to_owned(),
        by: ProcessRef::myself(),
        at: now_rfc3339(),
        action: action.to_owned(),
        resume: None,
        restore: None,
        healer: None,
        healer_signalled: None,
        note: None,
    }
}

/// Sends SIGTERM to a live healer through a pidfd (start ticks re-checked) and waits, bounded,
/// until it has exited.
fn stand_down(healer: &ProcessRef) -> String {
    if !healer.is_alive() {
        return "gone".into();
    }
    match healer.signal(rustix::process::Signal::TERM) {
        Ok(true) => {
            let exited = Wait::new(
                "the healer to exit",
                HEALER_EXIT_BOUND,
                Duration::from_millis(10),
            )
            .blocking(
                || -> Result<Check<(), ()>, std::convert::Infallible> {
                    Ok(if healer.is_alive() {
                        Check::NotYet(())
                    } else {
                        Check::Done(())
                    })
                },
                |_, _| {},
            );
            if let Err(WaitError::TimedOut(t)) = exited {
                format!(
                    "sigterm-sent, still-running after {} ms",
                    t.waited.as_millis()
                )
            } else {
                "sigterm-sent, exited".into()
            }
        }
        Ok(false) => "gone".into(),
        Err(e) => format!("sigterm failed: {e}"),
    }
}

fn heal_freeze(dir: &Path, command: &str) -> Result<Settled, LabError> {
    let files = AttemptFiles {
        dir: dir.to_path_buf(),
    };
    let plan: FreezePlan = read_json(&files.plan())?;
    let me = ProcessRef::myself();
    if plan.runner != me && plan.runner.is_alive() {
        return Ok(Settled::Live(format!(
            "its runner pid {} is alive",
            plan.runner.pid
        )));
    }
    let report: Option<HealerReport> = files.read_report();
    let mut rec = record(plan.attempt.clone(), FaultKind::Freeze, command, "");
    let stop_sent = report.as_ref().is_some_and(|r| r.stop_sent_at.is_some());
    let healer = report
        .as_ref()
        .map(|r| r.healer)
        .filter(ProcessRef::is_alive);
    if !stop_sent {
        rec.action = "nothing-signalled".into();
        rec.note = Some(format!(
            "the healer's record is {:?}: no SIGSTOP was sent",
            report.as_ref().map(|r| r.status.as_str())
        ));
    } else {
        match PinnedProcess::open(plan.target.pid, plan.target.start_ticks) {
            Err(_) => rec.action = "process-gone".into(),
            Ok(pinned) => {
                if let Err(e) = attempt::require_cgroup_names(plan.target.pid, &plan.container_id) {
                    rec.action = "refused".into();
                    rec.note = Some(e.to_string());
                } else if matches!(pinned.state(), Ok(Some('T')) | Ok(Some('t'))) {
                    let check = pinned.resume_until_running(RESUME_BOUND);
                    rec.action = if check.ended() {
                        "resumed"
                    } else {
                        "still-stopped"
                    }
                    .into();
                    rec.resume = Some(check);
                } else {
                    rec.action = "already-running".into();
                }
            }
        }
    }
    if let Some(h) = healer {
        rec.healer = Some(h);
        rec.healer_signalled = Some(stand_down(&h));
    }
    Ok(Settled::Done(Box::new(rec)))
}

async fn heal_scale(
    dir: &Path,
    cluster: Option<&crate::cluster::Cluster>,
    command: &str,
) -> Result<Settled, LabError> {
    let fd = scale::FaultDir(dir.to_path_buf());
    let plan: scale::WatcherPlan = read_json(&fd.plan())?;
    let attempt = AttemptId(plan.fault_id.clone());
    let me = ProcessRef::myself();
    if let Some(r) = plan.runner
        && r != me
        && r.is_alive()
    {
        return Ok(Settled::Live(format!("its runner pid {} is alive", r.pid)));
    }
    let ledger = match fd.read_ledger() {
        Ok(l) => l,
        Err(_) if !fd.ledger().exists() => {
            let mut rec = record(attempt, FaultKind::Scale, command, "nothing-scaled");
            rec.note = Some("no ledger: the runner stopped before any scale-down".into());
            return Ok(Settled::Done(Box::new(rec)));
        }
        Err(e) => return Err(e),
    };
    let watcher = fd.read_watcher()?;
    let watcher_ref = watcher.as_ref().and_then(|w| {
        w.pid_start_ticks.map(|t| ProcessRef {
            pid: w.pid as i32,
            start_ticks: t,
        })
    });
    let watcher_alive = watcher_ref.as_ref().is_some_and(ProcessRef::is_alive);
    // The watcher's finish covers the fault only when it came after the last scale-down: a
    // runner stopped past the deadline may scale down after the watcher found nothing to do.
    let watcher_done = scale::watcher_finished_after_scale_down(&ledger, watcher.as_ref());
    if ledger.last(scale::LedgerEvent::ScalingDown).is_none() {
        let mut rec = record(attempt, FaultKind::Scale, command, "nothing-scaled");
        if let Some(h) = watcher_ref.filter(|_| watcher_alive) {
            rec.healer = Some(h);
            rec.healer_signalled = Some(stand_down(&h));
        }
        return Ok(Settled::Done(Box::new(rec)));
    }
    if !ledger.is_unfinished() || watcher_done {
        if watcher_alive {
            return Ok(Settled::Live(
                "restored; its watcher is finishing".to_string(),
            ));
        }
        let mut rec = record(attempt, FaultKind::Scale, command, "already-restored");
        rec.note = Some(
            if watcher_done {
                "the watcher restored it"
            } else {
                "the runner recorded the restore"
            }
            .into(),
        );
        return Ok(Settled::Done(Box::new(rec)));
    }
    let handed_over = ledger.last(scale::LedgerEvent::HandedOver).is_some();
    if handed_over && watcher_alive {
        return Ok(Settled::Live(format!(
            "act 5 completed and handed the fault to act 6; its watcher (pid {}) restores at {}",
            watcher.as_ref().map(|w| w.pid).unwrap_or_default(),
            watcher
                .as_ref()
                .map(|w| w.deadline_at.as_str())
                .unwrap_or("?")
        )));
    }
    let Some(cluster) = cluster else {
        return Err(LabError::NotAvailable {
            what: format!(
                "the cluster, to restore the replicas of attempt {attempt} (still unfinished)"
            ),
        });
    };
    let outcome = scale::restore_replicas(cluster, &plan).await?;
    let mut rec = record(
        attempt,
        FaultKind::Scale,
        command,
        match &outcome {
            scale::RestoreOutcome::Restored { .. } => "restored",
            scale::RestoreOutcome::AlreadyRestored { .. } => "already-restored",
            scale::RestoreOutcome::LeftAlone { .. } => "left-alone",
            scale::RestoreOutcome::DeploymentChanged { .. } => "deployment-changed",
        },
    );
    rec.restore = Some(outcome);
    if let Some(h) = watcher_ref.filter(|_| watcher_alive) {
        rec.healer = Some(h);
        rec.healer_signalled = Some(stand_down(&h));
    }
    Ok(Settled::Done(Box::new(rec)))
}

/// Reads an attempt's `heal.json` (`None` when it has not been healed by a later command).
pub fn read_heal(dir: &Path) -> Option<HealRecord> {
    read_json(&dir.join("heal.json")).ok()
}

static RECENT: std::sync::Mutex<Vec<HealRecord>> = std::sync::Mutex::new(Vec::new());

/// Keeps what this process healed, for the act's evidence ([`recent`]).
pub fn remember(summary: &HealSummary) {
    if let Ok(mut r) = RECENT.lock() {
        r.extend(summary.healed.iter().cloned());
    }
}

/// What this process healed before its act (for the act's raw evidence).
pub fn recent() -> Vec<HealRecord> {
    RECENT.lock().map(|r| r.clone()).unwrap_or_default()
}
