//! The heal: every command that touches the cluster (`heal`, `inspect`, every `act`) first
//! looks for unfinished fault attempts in the work directory and undoes them, and records what it
//! did in the attempt's own `heal.json` ([`HealRecord`]) — the attempt's evidence of how it ended.
//!
//! The heal acts only on what it can prove it owns (`docs/faults.md`, "Ownership"):
//!
//! - The work directory and its `faults/` are trusted ([`crate::workdir::Workdir::check_trusted`]:
//!   real directories of the effective user, writable by no one else); so is each attempt
//!   directory; records are read bounded and without following symlinks
//!   ([`crate::faults::records::read_json`]). The caller holds the work-dir lock
//!   ([`super::attempt::lock_workdir`]), so no runner of this work directory is alive; an attempt
//!   whose recorded runner is still alive is left alone anyway.
//! - A **healer** is signalled only once proven to be this attempt's helper
//!   ([`super::process::prove_healer`]: the lab binary running `healer-freeze --attempt-dir DIR` /
//!   `healer-scale --attempt-dir DIR` for this directory); it is stood down with SIGTERM + SIGCONT
//!   and killed after a bound ([`super::process::stand_down`]), so a stopped healer releases its
//!   target lock too. A process that is not proven is named in the record and never signalled.
//! - **Freeze attempt** (`freeze-*`): when a SIGSTOP was recorded and the pinned target (PID +
//!   start ticks, its cgroup naming the plan's container id exactly) is still `T`, the heal asks
//!   the target lock: free, or held by this attempt's own healer → resumed through a fresh pidfd;
//!   held by another attempt → left alone (`left-alone`, the note says whose: that attempt's healer
//!   resumes it at its deadline).
//! - **Scale attempt** (`scale-*`): the plan must name the lab's Deployment
//!   ([`super::scale::ScalePlan::check_target`]). A live proven healer of an attempt handed over
//!   to the next act (lab A's act 6; lab C's three replicas, acts 4-7) is left alone, except that
//!   the `heal` command puts lab C's original count back; otherwise the healer is stood down
//!   first and the attempt is closed only on a live read of the Deployment (same UID; replicas
//!   restored from the fault's count or found at the original) — never from the ledger alone. Without a cluster it stays open (an error). An
//!   attempt that never asked for a scale-down (no `scaling-down` in the ledger, no scale-down in
//!   the healer's record) is closed as `nothing-scaled`.
//! - A **broken attempt directory** (its `plan.json` missing, unreadable, or naming another
//!   attempt) is set aside: `heal.json` records `set-aside` with the error, once; it blocks
//!   nothing else.
//!
//! - A freeze target still stopped that the heal could not resume (the lock dir refused, its cgroup
//!   unreadable, SIGCONT not taken) leaves the attempt **open**: no `heal.json`, an error naming
//!   what is left and how to resume it by hand, and the next command tries again.
//!
//! The work directory is opened once ([`crate::workdir::Workdir::open`]) and every attempt is
//! read and written through its fd. The heal acts first and writes after; a `heal.json` that
//! cannot be written is reported in the returned summary (the fault is undone all the same, and
//! the attempt, still open, is closed by the next command).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::faults::attempt::AttemptFiles;
use crate::faults::attempt::{self, AttemptId, FaultKind};
use crate::faults::freeze::{
    FreezeLedger, FreezePlan, HEALER_SUBCOMMAND, HealerReport, RESUME_BOUND,
};
use crate::faults::process::{
    PinnedProcess, ProcessRef, ResumeCheck, prove_healer, require_container, stand_down,
};
use crate::faults::records::{now_rfc3339, read_json, write_json_atomic};
use crate::faults::scale;

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
    /// (scale); `refused` (the target is proven not the plan's: nothing done). A target the heal
    /// could not undo gets no record: the attempt stays open ([`HealSummary::errors`]).
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

/// The attempt directories under `<workdir>/faults/` (sorted), with their kind. Only real
/// directories count (a symlink named like an attempt is not followed).
pub fn attempts(workdir: &Path) -> Result<Vec<(FaultKind, PathBuf)>, LabError> {
    let root = attempt::faults_root(workdir);
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LabError::Io { path: root, source }),
    };
    let mut out: Vec<(FaultKind, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            AttemptId(name).kind().map(|k| (k, e.path()))
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Heals every unfinished attempt of `workdir` (module docs). `cluster` reaches the cluster for
/// scale attempts (`None`: they stay open and are reported as errors). `command` names the
/// caller in the records. A work directory this process cannot trust is not looked into (one
/// error, nothing signalled or written).
pub async fn heal_workdir(
    workdir: &crate::workdir::Workdir,
    cluster: Option<&crate::cluster::Cluster>,
    command: &str,
) -> HealSummary {
    let mut summary = HealSummary::default();
    // Opened once (the trusted walk); every attempt below is read and written through its fd.
    let workdir = match workdir.open(false) {
        Ok(w) => w,
        Err(e) => {
            summary.errors.push(e.to_string());
            return summary;
        }
    };
    if workdir.opened().is_none() {
        return summary;
    }
    let list = match attempts(&workdir.base()) {
        Ok(l) => l,
        Err(e) => {
            summary.errors.push(e.to_string());
            return summary;
        }
    };
    for (kind, dir) in list {
        let shown = workdir.shown_path(&dir);
        if let Err(why) = crate::files::check_trusted_dir(&dir) {
            summary
                .errors
                .push(LabError::UntrustedDir { path: shown, why }.to_string());
            continue;
        }
        if std::fs::symlink_metadata(dir.join("heal.json")).is_ok() {
            continue;
        }
        let result = match kind {
            FaultKind::Freeze => heal_freeze(&dir, command),
            FaultKind::Scale => heal_scale(&dir, cluster, command).await,
        };
        let settled = match result {
            Ok(s) => s,
            Err(Broken(e)) => Settled::Done(Box::new(set_aside(&dir, kind, command, e))),
            Err(Open(e)) => {
                summary.errors.push(format!("{}: {e}", shown.display()));
                continue;
            }
        };
        match settled {
            Settled::Live(why) => summary.live.push(format!("{}: {why}", shown.display())),
            Settled::Done(rec) => {
                // Act first (done above), record after.
                if let Err(e) = write_json_atomic(&dir.join("heal.json"), &rec) {
                    summary.errors.push(format!(
                        "attempt {} was healed ({}) but heal.json could not be written (the next command looks at it again): {}",
                        rec.attempt,
                        rec.action,
                        match e {
                            LabError::Io { path, source } =>
                                format!("{}: {source}", workdir.shown_path(&path).display()),
                            e => e.to_string(),
                        }
                    ));
                }
                summary.healed.push(*rec);
            }
        }
    }
    summary
}

enum Settled {
    Live(String),
    Done(Box<HealRecord>),
}

/// Why an attempt was not settled: its directory is broken (set aside), or it stays open.
enum NotSettled {
    /// The attempt's own files are missing or unreadable: set aside once.
    Broken(LabError),
    /// Something outside the attempt (the cluster) is needed: it stays open, reported.
    Open(LabError),
}
use NotSettled::{Broken, Open};

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

/// The record of a broken attempt directory: `set-aside`, with the error.
fn set_aside(dir: &Path, kind: FaultKind, command: &str, e: LabError) -> HealRecord {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut rec = record(AttemptId(id), kind, command, "set-aside");
    rec.note = Some(format!(
        "set aside: the attempt's files cannot be read, so nothing of it was signalled or scaled: {e}"
    ));
    rec
}

/// The attempt id a directory stands for (its name).
fn dir_attempt(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The healer `candidate` (from the attempt's records) when it still lives: proven to be this
/// attempt's helper (pinned), or the record's words on why it is not and was left alone.
fn healer_of(
    candidate: Option<ProcessRef>,
    subcommand: &str,
    dir: &Path,
    rec: &mut HealRecord,
) -> Option<PinnedProcess> {
    let h = candidate.filter(ProcessRef::is_alive)?;
    rec.healer = Some(h);
    let proven = attempt::lab_program()
        .map_err(|e| e.to_string())
        .and_then(|lab| prove_healer(&h, &lab, subcommand, attempt::ATTEMPT_DIR_FLAG, dir));
    match proven {
        Ok(p) => Some(p),
        Err(why) => {
            rec.healer_signalled = Some(format!("not its healer, not signalled: {why}"));
            None
        }
    }
}

fn heal_freeze(dir: &Path, command: &str) -> Result<Settled, NotSettled> {
    let files = AttemptFiles {
        dir: dir.to_path_buf(),
    };
    let plan: FreezePlan = read_json(&files.plan()).map_err(Broken)?;
    if plan.attempt.0 != dir_attempt(dir) {
        return Err(Broken(LabError::FaultRefused {
            reason: format!(
                "{} names attempt {}, its directory is {}",
                files.plan().display(),
                plan.attempt,
                dir_attempt(dir)
            ),
        }));
    }
    let me = ProcessRef::myself();
    if plan.runner != me && plan.runner.is_alive() {
        return Ok(Settled::Live(format!(
            "its runner pid {} is alive",
            plan.runner.pid
        )));
    }
    let report: Option<HealerReport> = files.read_report();
    let ledger: Option<FreezeLedger> = read_json(&files.ledger()).ok();
    let mut rec = record(plan.attempt.clone(), FaultKind::Freeze, command, "");
    let stop_sent = report.as_ref().is_some_and(|r| r.stop_sent_at.is_some())
        || ledger.as_ref().is_some_and(|l| l.stop_sent_at.is_some());
    let candidate = report
        .as_ref()
        .map(|r| r.healer)
        .or_else(|| ledger.as_ref().and_then(|l| l.healer));
    let healer = healer_of(candidate, HEALER_SUBCOMMAND, dir, &mut rec);
    if !stop_sent {
        rec.action = "nothing-signalled".into();
        rec.note = Some(format!(
            "the healer's record is {:?}: no SIGSTOP was sent",
            report.as_ref().map(|r| r.status.as_str())
        ));
    } else if let Err(left) = resume_if_ours(&plan, healer.as_ref(), &mut rec) {
        if let Some(h) = healer {
            stand_down(&h);
        }
        return Err(Open(LabError::FaultRefused {
            reason: still_stopped(&plan, &left),
        }));
    }
    if let Some(h) = healer {
        rec.healer_signalled = Some(stand_down(&h));
    }
    Ok(Settled::Done(Box::new(rec)))
}

/// What an open freeze attempt leaves, in words: the target still stopped, why the heal could not
/// resume it, that nothing was recorded, and how to resume it by hand.
fn still_stopped(plan: &FreezePlan, why: &str) -> String {
    let pid = plan.target.pid;
    format!(
        "the frozen process pid {pid} (start ticks {}, container {}) is still stopped: {why}. \
         Nothing was recorded: the next command (heal, inspect, act) tries again. To resume it by \
         hand, check that /proc/{pid}/cgroup names {} and /proc/{pid}/stat field 22 is {}, then \
         run `kill -CONT {pid}`",
        plan.target.start_time_ticks,
        plan.container_id,
        plan.container_id,
        plan.target.start_time_ticks
    )
}

/// The freeze's target: resumed only when it is the pinned process in the plan's container, still
/// stopped, and its target lock is free (or provably held by no one: its file cannot be made and
/// does not exist) or held by this attempt's own (proven) healer. `Err` (why) when the target is
/// still stopped and the heal could not resume it: the attempt stays open, nothing is recorded.
fn resume_if_ours(
    plan: &FreezePlan,
    healer: Option<&PinnedProcess>,
    rec: &mut HealRecord,
) -> Result<(), String> {
    let pinned = match PinnedProcess::open(plan.target.pid, plan.target.start_time_ticks) {
        Ok(p) => p,
        Err(_) => {
            rec.action = "process-gone".into();
            return Ok(());
        }
    };
    match require_container(plan.target.pid, &plan.container_id) {
        Ok(()) => {}
        // Proven not the plan's container: not ours, closed as refused.
        Err(e @ LabError::FaultRefused { .. }) => {
            rec.action = "refused".into();
            rec.note = Some(e.to_string());
            return Ok(());
        }
        // Not read (a transient /proc error): nothing proven either way, stays open.
        Err(e) => return Err(format!("its cgroup could not be read: {e}")),
    }
    if !matches!(pinned.state(), Ok(Some('T')) | Ok(Some('t'))) {
        rec.action = "already-running".into();
        return Ok(());
    }
    let key = format!("container-{}", plan.container_id);
    let _lock = match attempt::ask_target(&key, &plan.attempt, "the heal") {
        Ok(Ok(lock)) => Some(lock),
        Ok(Err(held)) => {
            let ours = held.holder.as_ref().is_some_and(|h| {
                h.attempt.as_ref() == Some(&plan.attempt)
                    && healer.is_none_or(|p| p.pid() == h.process.pid)
            });
            if !ours {
                rec.action = "left-alone".into();
                rec.note = Some(format!(
                    "the target is stopped but its lock is held by {}: that attempt's healer resumes it",
                    held.text
                ));
                return Ok(());
            }
            None
        }
        // The lock file cannot be made (no space, read-only) but none exists: no healer holds
        // the target, so it is resumed all the same (undo first). Any other refusal stays open.
        Err(e) if attempt::target_lock_absent(&key) => {
            rec.note = Some(format!(
                "the target lock could not be taken ({e}) and no lock file exists: no healer holds it"
            ));
            None
        }
        Err(e) => return Err(format!("the target lock could not be asked: {e}")),
    };
    let check: ResumeCheck = pinned.resume_until_running(RESUME_BOUND);
    if !check.ended() {
        return Err(format!(
            "SIGCONT was sent but it did not leave the stopped state within {RESUME_BOUND:?}"
        ));
    }
    rec.action = "resumed".into();
    rec.resume = Some(check);
    Ok(())
}

async fn heal_scale(
    dir: &Path,
    cluster: Option<&crate::cluster::Cluster>,
    command: &str,
) -> Result<Settled, NotSettled> {
    let fd = AttemptFiles {
        dir: dir.to_path_buf(),
    };
    let plan = read_scale_plan(&fd)?;
    let attempt = AttemptId(plan.fault_id.clone());
    let me = ProcessRef::myself();
    if let Some(r) = plan.runner
        && r != me
        && r.is_alive()
    {
        return Ok(Settled::Live(format!("its runner pid {} is alive", r.pid)));
    }
    let mut rec = record(attempt.clone(), FaultKind::Scale, command, "");
    let ledger = match fd.read_scale_ledger() {
        Ok(l) => Some(l),
        Err(_) if std::fs::symlink_metadata(fd.ledger()).is_err() => None,
        Err(e) => return Err(Broken(e)),
    };
    let report = fd.read_scale_report().ok().flatten();
    let candidate = report.as_ref().and_then(|w| {
        w.start_time_ticks.map(|t| ProcessRef {
            pid: w.pid as i32,
            start_time_ticks: t,
        })
    });
    let healer = healer_of(candidate, scale::HEALER_SUBCOMMAND, dir, &mut rec);
    let asked_down = ledger
        .as_ref()
        .is_some_and(|l| l.last(scale::LedgerEvent::ScalingDown).is_some())
        || report.as_ref().is_some_and(|w| w.scale_down.is_some());
    let handed_over = ledger
        .as_ref()
        .is_some_and(|l| l.last(scale::LedgerEvent::HandedOver).is_some());
    if let Some(h) = &healer
        && leave_to_the_healer(command, &plan, handed_over)
    {
        return Ok(Settled::Live(format!(
            "{} completed and handed the fault to the next act; its healer (pid {}) restores at {}",
            if plan.fault == scale::HA_FAULT_KIND {
                "act 3"
            } else {
                "act 5"
            },
            h.pid(),
            report
                .as_ref()
                .map(|w| w.deadline_at.as_str())
                .unwrap_or("?")
        )));
    }
    // The healer stands down first (it restores on SIGTERM): the attempt is closed after it
    // exited, on a live read.
    if let Some(h) = &healer {
        rec.healer_signalled = Some(stand_down(h));
    }
    if !asked_down {
        rec.action = "nothing-scaled".into();
        rec.note = Some(if ledger.is_none() {
            "no ledger: the runner stopped before any scale-down".into()
        } else {
            "no scale-down was asked for in this attempt".into()
        });
        return Ok(Settled::Done(Box::new(rec)));
    }
    close_on_live_read(cluster, &plan, rec).await
}

/// Whether a scale attempt whose healer is alive and proven is left to it: only when the act
/// that made the fault handed it over (lab A's act 5 to act 6, lab C's act 3 to acts 4-7). Lab
/// C's three replicas are put back by the `heal` command (the student abandoning the lab) and by
/// act 7 ([`SCALE_BACK_COMMAND`]), before the healer's deadline; every other command leaves them
/// to the later acts. Pure.
pub fn leave_to_the_healer(command: &str, plan: &scale::ScalePlan, handed_over: bool) -> bool {
    let put_back =
        (command == "heal" || command == SCALE_BACK_COMMAND) && plan.fault == scale::HA_FAULT_KIND;
    handed_over && !put_back
}

/// The command name lab C's act 7 heals with: like `heal`, it puts lab C's original replica
/// count back (stands the healer down, then closes the attempt on a live read).
pub const SCALE_BACK_COMMAND: &str = "act 7 (scale back)";

/// A scale attempt's plan, read bounded and required to name the lab's Deployment
/// ([`scale::ScalePlan::check_target`]) and this directory's attempt; otherwise the directory is
/// broken (set aside: nothing is scaled from a plan that names anything else).
fn read_scale_plan(fd: &AttemptFiles) -> Result<scale::ScalePlan, NotSettled> {
    let plan: scale::ScalePlan = read_json(&fd.plan()).map_err(Broken)?;
    plan.check_target().map_err(Broken)?;
    if plan.fault_id != fd.attempt_name() {
        return Err(Broken(LabError::FaultRefused {
            reason: format!(
                "{} names attempt {}, its directory is {}",
                fd.plan().display(),
                plan.fault_id,
                fd.attempt_name()
            ),
        }));
    }
    Ok(plan)
}

/// Closes a scale attempt whose scale-down was asked for, on a live read only: first the
/// Deployment's target lock is asked — held by another attempt's healer, the replicas are that
/// attempt's to restore (`left-alone`; another work dir's live scale-down is never cut short from
/// here, and no cluster is needed to say so); then the lab's Deployment is read and restored when
/// it is at the fault's value ([`scale::restore_replicas`]). Without a cluster it stays open.
async fn close_on_live_read(
    cluster: Option<&crate::cluster::Cluster>,
    plan: &scale::ScalePlan,
    mut rec: HealRecord,
) -> Result<Settled, NotSettled> {
    let attempt = rec.attempt.clone();
    let key = format!("deployment-{}", plan.deployment_uid);
    let _lock = match attempt::ask_target(&key, &attempt, "the heal").map_err(Open)? {
        Ok(lock) => Some(lock),
        Err(held) if held.holder.as_ref().and_then(|h| h.attempt.as_ref()) == Some(&attempt) => {
            None
        }
        Err(held) => {
            rec.action = "left-alone".into();
            rec.note = Some(format!(
                "the deployment's lock is held by {}: that attempt's healer restores it",
                held.text
            ));
            return Ok(Settled::Done(Box::new(rec)));
        }
    };
    let by_hand = format!(
        "nothing was recorded: the next command (heal, inspect, act) tries again; to restore it by hand, check that deployment {ns}/{d} has uid {uid} and {fault} replicas, then run `kubectl -n {ns} scale deployment {d} --replicas={orig}`",
        ns = scale::NAMESPACE,
        d = scale::DEPLOYMENT,
        uid = plan.deployment_uid,
        fault = plan.fault_replicas,
        orig = plan.original_replicas
    );
    let Some(cluster) = cluster else {
        return Err(Open(LabError::NotAvailable {
            what: format!(
                "the cluster, to read deployment {}/{} before closing attempt {attempt} (a scale-down was asked for; it stays open; {by_hand})",
                scale::NAMESPACE,
                scale::DEPLOYMENT
            ),
        }));
    };
    let outcome = scale::restore_replicas(cluster, plan).await.map_err(|e| {
        Open(LabError::FaultRefused {
            reason: format!("the replicas could not be restored ({e}); {by_hand}"),
        })
    })?;
    rec.action = match &outcome {
        scale::RestoreOutcome::Restored { .. } => "restored",
        scale::RestoreOutcome::AlreadyRestored { .. } => "already-restored",
        scale::RestoreOutcome::LeftAlone { .. } => "left-alone",
        scale::RestoreOutcome::DeploymentChanged { .. } => "deployment-changed",
    }
    .into();
    rec.restore = Some(outcome);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::scale::{
        DEPLOYMENT, FAULT_KIND, Ledger, LedgerEntry, LedgerEvent, NAMESPACE, SCHEMA_VERSION,
        ScalePlan,
    };

    /// A scale attempt in a fresh work dir whose ledger says a scale-down was asked for, its
    /// runner and healer gone; `edit` changes the plan before it is written.
    fn scale_attempt(uid: &str, edit: impl FnOnce(&mut ScalePlan)) -> (tempfile::TempDir, PathBuf) {
        let wd = tempfile::tempdir().expect("tempdir");
        let id = AttemptId::new(FaultKind::Scale, 5);
        let files = AttemptFiles::create(&attempt::faults_root(wd.path()), &id).expect("attempt");
        let mut plan = ScalePlan {
            schema_version: SCHEMA_VERSION,
            fault_id: id.0.clone(),
            fault: FAULT_KIND.into(),
            kubeconfig: "/nonexistent/kubeconfig".into(),
            namespace: NAMESPACE.into(),
            deployment: DEPLOYMENT.into(),
            deployment_uid: uid.into(),
            original_replicas: 1,
            restore_after_sec: 55,
            fault_replicas: 0,
            created_at: now_rfc3339(),
            runner: None,
        };
        edit(&mut plan);
        write_json_atomic(&files.plan(), &plan).expect("plan");
        let ledger = Ledger {
            schema_version: SCHEMA_VERSION,
            fault_id: id.0,
            fault: FAULT_KIND.into(),
            entries: vec![LedgerEntry {
                at: now_rfc3339(),
                event: LedgerEvent::ScalingDown,
                by: None,
                detail: serde_json::Value::Null,
            }],
        };
        write_json_atomic(&files.ledger(), &ledger).expect("ledger");
        (wd, files.dir)
    }

    fn heal_without_cluster(workdir: &Path) -> HealSummary {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(heal_workdir(
                &crate::workdir::Workdir::new(workdir),
                None,
                "heal",
            ))
    }

    fn unique_uid() -> String {
        format!(
            "uid-heal-test-{}-{}",
            std::process::id(),
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
        )
    }

    #[test]
    fn heal_puts_lab_c_replicas_back_and_every_other_command_leaves_them() {
        let (_wd, dir) = scale_attempt(&unique_uid(), |p| {
            p.fault = crate::faults::scale::HA_FAULT_KIND.into();
            p.fault_replicas = 3;
        });
        let plan: ScalePlan = read_json(&dir.join("plan.json")).expect("plan");
        assert!(!leave_to_the_healer("heal", &plan, true));
        assert!(leave_to_the_healer("act 4", &plan, true));
        assert!(leave_to_the_healer("inspect", &plan, true));
        assert!(!leave_to_the_healer("act 4", &plan, false));
        // Lab A's scale-down handed over to act 6 stays the healer's, even on `heal`.
        let (_wd, dir) = scale_attempt(&unique_uid(), |_| {});
        let plan: ScalePlan = read_json(&dir.join("plan.json")).expect("plan");
        assert!(leave_to_the_healer("heal", &plan, true));
    }

    #[test]
    fn a_scale_plan_naming_another_deployment_is_set_aside_not_obeyed() {
        for (ns, name) in [("default", DEPLOYMENT), (NAMESPACE, "victim")] {
            let (wd, dir) = scale_attempt(&unique_uid(), |p| {
                p.namespace = ns.into();
                p.deployment = name.into();
            });
            let summary = heal_without_cluster(wd.path());
            assert!(summary.errors.is_empty(), "{:?}", summary.errors);
            assert_eq!(summary.healed.len(), 1, "{summary:?}");
            let rec = &summary.healed[0];
            assert_eq!(rec.action, "set-aside", "{rec:?}");
            let note = rec.note.as_deref().unwrap_or_default();
            assert!(note.contains(&format!("{ns}/{name}")), "{note}");
            assert_eq!(read_heal(&dir).map(|r| r.action), Some("set-aside".into()));
            assert!(rec.restore.is_none() && rec.healer_signalled.is_none());
        }
    }

    #[test]
    fn a_scale_heal_leaves_a_deployment_locked_by_another_attempt_alone() {
        let uid = unique_uid();
        let (wd, dir) = scale_attempt(&uid, |_| {});
        // Another attempt's healer holds the Deployment's target lock (a separate open file: flock
        // refuses it to this process's heal as to any other). Act 6, not 5: an id made in the same
        // millisecond by this process for act 5 would be the attempt's own.
        let other = AttemptId::new(FaultKind::Scale, 6);
        let held = attempt::lock_target(&format!("deployment-{uid}"), &other, "the scale healer")
            .expect("target lock");
        let summary = heal_without_cluster(wd.path());
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        assert_eq!(summary.healed.len(), 1, "{summary:?}");
        let rec = &summary.healed[0];
        assert_eq!(rec.action, "left-alone", "{rec:?}");
        let note = rec.note.as_deref().unwrap_or_default();
        assert!(note.contains(&other.0) && note.contains("lock"), "{note}");
        assert!(rec.restore.is_none(), "{rec:?}");
        assert_eq!(read_heal(&dir).map(|r| r.action), Some("left-alone".into()));
        drop(held);
        // The lock released and no cluster: the attempt is not closed from its files alone.
        let (wd2, dir2) = scale_attempt(&unique_uid(), |_| {});
        let summary = heal_without_cluster(wd2.path());
        assert!(summary.healed.is_empty(), "{summary:?}");
        assert!(
            summary.errors.iter().any(|e| e.contains("stays open")),
            "{:?}",
            summary.errors
        );
        assert!(read_heal(&dir2).is_none());
    }
}
