//! The freeze fault: stop exactly one process (Kyverno's admission controller) with SIGSTOP sent
//! through a pidfd, and resume it with SIGCONT at a deadline whatever happens to the runner.
//!
//! **Safety protocol** (`docs/faults.md`; the attempt's
//! vocabulary is in [`super::attempt`]):
//! 1. The caller has checked the lab mark and the plan's node/deployment UIDs, and found the
//!    process through CRI (container ID, pod UID, PID) and `/proc` (start ticks).
//! 2. [`PinnedProcess::open`]: `pidfd_open(pid)`, then the start ticks are read again and must be
//!    the expected ones; `/proc/PID/cgroup` must name the CRI container id
//!    ([`super::process::require_container`], exactly). From then on signals go through a pidfd only.
//! 3. The runner writes the attempt's `plan.json` and `ledger.json` (`armed`) in
//!    `<workdir>/faults/<attempt id>/`, then starts the **healer**, a detached process
//!    (`kca-webhook-lab healer-freeze --attempt-dir DIR`: own session and process group,
//!    stdin a pipe from the runner, stdout/stderr `/dev/null`, its log in `DIR/healer.log`).
//! 4. The healer blocks SIGTERM/SIGHUP/SIGINT (read through a signalfd), lowers its
//!    `oom_score_adj`, opens its **own** pidfd, re-checks start ticks and cgroup, takes the target
//!    lock (`container-<id>`; refused with the holder when another attempt's healer lives), and
//!    answers `ready` in `DIR/healer.json`.
//! 5. The runner asks for the freeze (`stop` on the pipe). The **healer** sends SIGSTOP, confirms
//!    `T`, records `frozen`, and sleeps on the monotonic clock until `stop + resume_after_sec`.
//!    SIGSTOP and SIGCONT come from the same single-threaded process, so they can never be
//!    reordered, however late the runner is. If the pipe closes before `stop` (the runner died),
//!    nothing is signalled.
//! 6. At the deadline, on SIGTERM/SIGHUP/SIGINT, or on `resume` from the runner, the healer sends
//!    SIGCONT and reads `/proc/PID/stat` until the state is no longer `T` (bounded by
//!    [`RESUME_BOUND`], SIGCONT re-sent every 100 ms), records what it saw (`resumed`,
//!    `process-gone`, or `still-stopped`), releases the target lock and exits. It resumes first and
//!    writes after: a record it cannot write (disk full) never delays the SIGCONT.
//! 7. The runner waits for the healer's `resumed` and then reads the state itself; if it is still
//!    `T` it resumes through its own pidfd. It also resumes on its own exit paths ([`Freeze`]'s
//!    `Drop`, errors, signals). A later command heals what both left ([`super::heal`]).
//!
//! Files of one attempt: `plan.json` ([`FreezePlan`], runner), `ledger.json` ([`FreezeLedger`],
//! runner), `healer.json` ([`HealerReport`], healer), `healer.log` (healer), `heal.json` (a later
//! command's heal). No two processes write the same file.

use std::io::{BufRead, Write as _};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde::{Deserialize, Serialize};

use crate::error::LabError;
pub use crate::faults::attempt::AttemptFiles;
use crate::faults::attempt::{self, AttemptId, FaultKind};
use crate::faults::healer::{self, Hardening, HealerLog, log_tail};
use crate::faults::process::{PinnedProcess, ProcessRef, ResumeCheck, require_container};
pub use crate::faults::records::UndoneBy;
use crate::faults::records::{now_rfc3339, read_json, rfc3339, write_json_atomic};
use crate::wait::{Check, TimedOut, Wait, WaitError};

/// Name of the hidden subcommand that runs the freeze healer.
pub const HEALER_SUBCOMMAND: &str = "healer-freeze";
/// Bound on waiting for the healer's `ready` answer.
pub const HEALER_READY_BOUND: Duration = Duration::from_secs(10);
/// Bound on the healer waiting for the runner's `stop` after `ready`.
pub const STOP_REQUEST_BOUND: Duration = Duration::from_secs(30);
/// Bound on waiting for `/proc/PID/stat` to show `T` after SIGSTOP.
pub const STATE_BOUND: Duration = Duration::from_secs(2);
/// Bound on reading the state after SIGCONT until it is no longer `T` (SIGCONT re-sent every
/// 100 ms meanwhile).
pub const RESUME_BOUND: Duration = Duration::from_secs(2);

/// What to freeze and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreezeTarget {
    /// The act planning the fault.
    pub act: u8,
    /// CRI container ID (must appear in `/proc/PID/cgroup`).
    pub container_id: String,
    /// Pod UID.
    pub pod_uid: String,
    /// Host PID.
    pub pid: i32,
    /// Start ticks read when the process was found.
    pub start_time_ticks: u64,
    /// The healer resumes this many seconds after the SIGSTOP.
    pub resume_after_sec: u64,
}

/// `plan.json`: the attempt as the runner planned it, written before the healer starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezePlan {
    /// The attempt.
    pub attempt: AttemptId,
    /// The act (5 or 6).
    pub act: u8,
    /// CRI container ID of the target.
    pub container_id: String,
    /// Pod UID of the target.
    pub pod_uid: String,
    /// The target process.
    pub target: ProcessRef,
    /// Seconds from SIGSTOP to the healer's SIGCONT.
    pub resume_after_sec: u64,
    /// The runner.
    pub runner: ProcessRef,
    /// When the plan was written, RFC 3339 UTC (ms).
    pub created_at: String,
}

/// `ledger.json`: the runner's record of the attempt, rewritten at each step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeLedger {
    /// The attempt.
    pub attempt: AttemptId,
    /// `armed` (plan written, nothing signalled), `frozen` (the healer confirmed `T`), `resumed`,
    /// or `aborted` (refused before any SIGSTOP).
    pub status: String,
    /// The healer, once started.
    pub healer: Option<ProcessRef>,
    /// When the healer answered ready, RFC 3339 UTC (ms).
    pub healer_ready_at: Option<String>,
    /// When the healer sent SIGSTOP, RFC 3339 UTC (ms).
    pub stop_sent_at: Option<String>,
    /// When the healer confirmed `T`, RFC 3339 UTC (ms).
    pub frozen_at: Option<String>,
    /// When the healer will send SIGCONT, RFC 3339 UTC (ms).
    pub deadline_at: Option<String>,
    /// When the resuming SIGCONT was sent, RFC 3339 UTC (ms).
    pub resumed_at: Option<String>,
    /// Who sent it.
    pub resumed_by: Option<UndoneBy>,
    /// State letter the runner read after the resume (`None` with `process_gone_after_resume`).
    pub state_after_resume: Option<char>,
    /// Whether the process was gone when the resume was checked.
    pub process_gone_after_resume: bool,
    /// Why the runner resumed on an exit path, why the freeze was aborted, or a record that could
    /// not be written.
    pub note: Option<String>,
}

/// `healer.json`: the healer's record, written only by the healer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealerReport {
    /// `ready` (pidfd and target lock held, waiting for `stop`), `frozen`, `resumed`,
    /// `process-gone`, `still-stopped` (SIGCONT did not take within [`RESUME_BOUND`]), `refused`
    /// (identity, cgroup or target lock), or `aborted` (no `stop` came: nothing was signalled).
    pub status: String,
    /// The attempt.
    pub attempt: AttemptId,
    /// The healer itself.
    pub healer: ProcessRef,
    /// The target process.
    pub target: ProcessRef,
    /// What the healer did to protect itself.
    pub hardening: Hardening,
    /// When it answered ready, RFC 3339 UTC (ms).
    pub ready_at: Option<String>,
    /// When it sent SIGSTOP, RFC 3339 UTC (ms).
    pub stop_sent_at: Option<String>,
    /// When it confirmed `T`, RFC 3339 UTC (ms).
    pub frozen_at: Option<String>,
    /// `stop_sent_at + resume_after_sec`, RFC 3339 UTC (ms); the wait itself is monotonic.
    pub deadline_at: Option<String>,
    /// Why it resumed: `deadline`, `SIGTERM`, `SIGHUP`, `SIGINT` or `runner-request`.
    pub woke_by: Option<String>,
    /// The resume as seen.
    pub resume: Option<ResumeCheck>,
    /// How late the SIGCONT was after the deadline, ms (negative: early, on request or signal).
    pub resume_late_ms: Option<i64>,
    /// Details of a refusal, an abort, or records that could not be written.
    pub note: Option<String>,
}

impl AttemptFiles {
    /// The freeze healer's report now (`None`: not written or unreadable).
    pub fn read_report(&self) -> Option<HealerReport> {
        read_json(&self.report()).ok()
    }
}

/// Everything about one resume, as the runner records it in the act's facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRecord {
    /// Who resumed the process.
    pub resumed_by: UndoneBy,
    /// When SIGCONT was sent, RFC 3339 UTC (ms).
    pub resumed_at: String,
    /// State letter the runner read after the resume (`None`: the process was gone).
    pub state_after: Option<char>,
    /// The healer's report as last read (absent if it could not be read).
    pub healer: Option<HealerReport>,
    /// A ledger write that failed after the resume (the resume itself was done first).
    pub record_error: Option<String>,
}

/// A freeze in progress: the runner's pidfd, its healer (and the pipe to it) and the ledger.
/// Dropping it while not resumed resumes the process ([`UndoneBy::RunnerExit`]).
#[derive(Debug)]
pub struct Freeze {
    plan: FreezePlan,
    pinned: PinnedProcess,
    files: AttemptFiles,
    ledger: FreezeLedger,
    healer: Child,
    to_healer: Option<ChildStdin>,
    deadline: Instant,
    resumed: bool,
}

/// Starts one freeze attempt following the safety protocol (module docs) and returns once the
/// healer has confirmed the state `T`.
///
/// Errors: [`LabError::FaultRefused`] when the identity or cgroup check fails, or the healer
/// refuses or does not answer; [`LabError::Busy`] (inside the refusal text) when another attempt's
/// healer holds the target; [`LabError::WaitTimedOut`] when the healer stays silent. Nothing is
/// signalled before the plan, the ledger and the healer are in place.
pub fn freeze(
    program: &Path,
    faults_root: &Path,
    target: &FreezeTarget,
) -> Result<Freeze, LabError> {
    let pinned = PinnedProcess::open(target.pid, target.start_time_ticks)?;
    require_container(target.pid, &target.container_id)?;
    let attempt_id = AttemptId::new(FaultKind::Freeze, target.act);
    let files = AttemptFiles::create(faults_root, &attempt_id)?;
    let (plan, mut ledger) = write_plan_and_ledger(&files, attempt_id, target)?;
    let abort = |ledger: &mut FreezeLedger, e: LabError| {
        ledger.status = "aborted".into();
        ledger.note = Some(e.to_string());
        let _ = write_json_atomic(&files.ledger(), ledger);
        e
    };
    let (mut child, ready) = match start_healer(program, &files) {
        Ok(x) => x,
        Err(e) => return Err(abort(&mut ledger, e)),
    };
    ledger.healer = Some(ready.healer);
    ledger.healer_ready_at = ready.ready_at.clone();
    if let Err(e) = write_json_atomic(&files.ledger(), &ledger) {
        // Nothing is stopped yet: closing the pipe makes the healer abort.
        drop(child.stdin.take());
        let _ = child.wait();
        return Err(abort(&mut ledger, e));
    }
    let mut to_healer = child.stdin.take();
    if let Err(e) = ask(&mut to_healer, "stop") {
        drop(to_healer);
        let _ = child.wait();
        return Err(abort(
            &mut ledger,
            LabError::FaultRefused {
                reason: format!("asking the healer to stop the process: {e}"),
            },
        ));
    }
    let frozen = wait_frozen(&files);
    let mut fz = Freeze {
        deadline: Instant::now() + Duration::from_secs(target.resume_after_sec),
        plan,
        pinned,
        files: files.clone(),
        ledger,
        healer: child,
        to_healer,
        resumed: false,
    };
    let report = match frozen {
        Ok(r) => r,
        Err(t) => {
            // Ask it to resume whatever it did, then give up.
            let _ = fz.resume(
                UndoneBy::RunnerExit,
                Some("the healer did not confirm the freeze in time".into()),
            );
            return Err(t.into());
        }
    };
    fz.record_frozen(report)?;
    Ok(fz)
}

/// Writes the attempt's `plan.json` and its `armed` `ledger.json` (before the healer starts).
fn write_plan_and_ledger(
    files: &AttemptFiles,
    attempt: AttemptId,
    target: &FreezeTarget,
) -> Result<(FreezePlan, FreezeLedger), LabError> {
    let plan = FreezePlan {
        attempt: attempt.clone(),
        act: target.act,
        container_id: target.container_id.clone(),
        pod_uid: target.pod_uid.clone(),
        target: ProcessRef {
            pid: target.pid,
            start_time_ticks: target.start_time_ticks,
        },
        resume_after_sec: target.resume_after_sec,
        runner: ProcessRef::myself(),
        created_at: now_rfc3339(),
    };
    write_json_atomic(&files.plan(), &plan)?;
    let ledger = FreezeLedger {
        attempt,
        status: "armed".into(),
        healer: None,
        healer_ready_at: None,
        stop_sent_at: None,
        frozen_at: None,
        deadline_at: None,
        resumed_at: None,
        resumed_by: None,
        state_after_resume: None,
        process_gone_after_resume: false,
        note: None,
    };
    write_json_atomic(&files.ledger(), &ledger)?;
    Ok((plan, ledger))
}

/// Writes one request line (`stop`, `resume`) on the healer's stdin.
fn ask(to_healer: &mut Option<ChildStdin>, line: &str) -> std::io::Result<()> {
    let p = to_healer
        .as_mut()
        .ok_or_else(|| std::io::Error::other("no pipe to the healer"))?;
    p.write_all(format!("{line}\n").as_bytes())?;
    p.flush()
}

/// Waits (bounded) for the healer's record after `stop`: anything but `ready` (normally
/// `frozen`). The timeout names the healer's log.
fn wait_frozen(files: &AttemptFiles) -> Result<HealerReport, TimedOut<String>> {
    let frozen = Wait::new(
        "the freeze healer's `frozen` record",
        STATE_BOUND + Duration::from_secs(3),
        Duration::from_millis(10),
    )
    .blocking(
        || -> Result<Check<HealerReport, Option<String>>, std::convert::Infallible> {
            Ok(match files.read_report() {
                Some(r) if r.status == "ready" => Check::NotYet(Some(r.status)),
                Some(r) => Check::Done(r),
                None => Check::NotYet(None),
            })
        },
        |_, _| {},
    );
    match frozen {
        Ok(r) => Ok(r),
        Err(WaitError::Failed(never)) => match never {},
        Err(WaitError::TimedOut(t)) => Err(TimedOut {
            last: format!(
                "{:?}; log {}: {}",
                t.last,
                files.log().display(),
                log_tail(&files.log())
            ),
            what: t.what,
            bound: t.bound,
            waited: t.waited,
        }),
    }
}

/// Starts the healer and waits (bounded by [`HEALER_READY_BOUND`]) for its `ready`.
fn start_healer(program: &Path, files: &AttemptFiles) -> Result<(Child, HealerReport), LabError> {
    let mut cmd = healer::command(
        program,
        HEALER_SUBCOMMAND,
        &files.dir,
        Stdio::null(),
        Stdio::null(),
    );
    let mut child = cmd.spawn().map_err(|e| LabError::FaultRefused {
        reason: format!("starting the healer {}: {e}", program.display()),
    })?;
    let wait = Wait::new(
        "the freeze healer's ready answer",
        HEALER_READY_BOUND,
        Duration::from_millis(10),
    );
    let answered = wait.blocking(
        || -> Result<Check<HealerReport, String>, LabError> {
            if let Some(report) = files.read_report() {
                if report.status == "ready" {
                    return Ok(Check::Done(report));
                }
                let _ = child.wait();
                return Err(LabError::FaultRefused {
                    reason: format!(
                        "the healer answered {} ({}); log {}: {}",
                        report.status,
                        report.note.unwrap_or_default(),
                        files.log().display(),
                        log_tail(&files.log())
                    ),
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(LabError::FaultRefused {
                    reason: format!(
                        "the healer exited ({status}) before answering ready; log {}: {}",
                        files.log().display(),
                        log_tail(&files.log())
                    ),
                });
            }
            Ok(Check::NotYet(format!(
                "no report at {}",
                files.report().display()
            )))
        },
        |_, _| {},
    );
    match answered {
        Ok(report) => Ok((child, report)),
        Err(WaitError::Failed(e)) => Err(e),
        Err(WaitError::TimedOut(mut t)) => {
            // Ours and not armed: end it through its Child handle (its own PID), never by name.
            let _ = child.kill();
            let _ = child.wait();
            t.last = format!("{}; log: {}", t.last, log_tail(&files.log()));
            Err(t.into())
        }
    }
}

impl Freeze {
    /// Takes the healer's answer to `stop`: `frozen` is recorded in the ledger (`stop_sent_at`,
    /// `frozen_at`, `deadline_at`); anything else, or a ledger that cannot be written, resumes at
    /// once and is the error.
    fn record_frozen(&mut self, report: HealerReport) -> Result<(), LabError> {
        if report.status != "frozen" {
            let log = self.files.log();
            let e = LabError::FaultRefused {
                reason: format!(
                    "the healer answered {} ({}); log {}: {}",
                    report.status,
                    report.note.clone().unwrap_or_default(),
                    log.display(),
                    log_tail(&log)
                ),
            };
            let _ = self.resume(UndoneBy::RunnerExit, Some(e.to_string()));
            return Err(e);
        }
        self.ledger.status = "frozen".into();
        self.ledger.stop_sent_at = report.stop_sent_at.clone();
        self.ledger.frozen_at = report.frozen_at.clone();
        self.ledger.deadline_at = report.deadline_at.clone();
        if let Err(e) = write_json_atomic(&self.files.ledger(), &self.ledger) {
            let _ = self.resume(UndoneBy::RunnerExit, Some(e.to_string()));
            return Err(e);
        }
        Ok(())
    }

    /// The ledger as last written (or as it would have been written).
    pub fn ledger(&self) -> &FreezeLedger {
        &self.ledger
    }

    /// The plan.
    pub fn plan(&self) -> &FreezePlan {
        &self.plan
    }

    /// The attempt's files.
    pub fn files(&self) -> &AttemptFiles {
        &self.files
    }

    /// The pinned process.
    pub fn process(&self) -> &PinnedProcess {
        &self.pinned
    }

    /// The healer's PID.
    pub fn healer_pid(&self) -> u32 {
        self.healer.id()
    }

    /// The pinned process's state now (`None`: gone).
    pub fn state(&self) -> Result<Option<char>, LabError> {
        self.pinned.state()
    }

    /// Whether a resume has been recorded.
    pub fn is_resumed(&self) -> bool {
        self.resumed
    }

    /// Waits for the healer's resume: polls its report until `resumed`, `process-gone` or
    /// `still-stopped`, bounded by the deadline plus `grace`; then reads the state itself and, if
    /// it is still `T` (or the bound ran out), resumes through its own pidfd
    /// ([`UndoneBy::Runner`]). `progress` is called about once a second with the seconds left
    /// until the deadline.
    pub async fn wait_for_resume(
        &mut self,
        grace: Duration,
        mut progress: impl FnMut(i64),
    ) -> Result<ResumeRecord, LabError> {
        let bound = (self.deadline + grace).saturating_duration_since(Instant::now());
        let mut last_tick = Instant::now() - Duration::from_secs(1);
        let deadline = self.deadline;
        let files = self.files.clone();
        let reported = Wait::new("the healer's resume", bound, Duration::from_millis(20))
            .run(
                || {
                    let report = files.read_report();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            match report.filter(|r| {
                                matches!(
                                    r.status.as_str(),
                                    "resumed" | "process-gone" | "still-stopped"
                                )
                            }) {
                                Some(r) => Check::Done(r),
                                None => Check::NotYet(()),
                            },
                        )
                    }
                },
                |_, _| {
                    if last_tick.elapsed() >= Duration::from_secs(1) {
                        last_tick = Instant::now();
                        progress(deadline.saturating_duration_since(last_tick).as_secs() as i64);
                    }
                },
                tokio::time::sleep,
            )
            .await;
        match reported {
            Ok(report) => {
                let state_after = self.pinned.state().ok().flatten();
                if matches!(state_after, Some('T') | Some('t')) {
                    return self.resume(
                        UndoneBy::Runner,
                        Some(format!(
                            "the healer reported {} but the state was still {state_after:?}",
                            report.status
                        )),
                    );
                }
                self.resumed = true;
                self.ledger.status = "resumed".into();
                self.ledger.resumed_by = Some(UndoneBy::Healer);
                self.ledger.resumed_at = report.resume.as_ref().map(|c| c.sent_at.clone());
                self.ledger.state_after_resume = state_after;
                self.ledger.process_gone_after_resume = state_after.is_none();
                let record_error = write_json_atomic(&self.files.ledger(), &self.ledger)
                    .err()
                    .map(|e| e.to_string());
                self.reap(Duration::from_secs(2));
                Ok(ResumeRecord {
                    resumed_by: UndoneBy::Healer,
                    resumed_at: self.ledger.resumed_at.clone().unwrap_or_default(),
                    state_after,
                    healer: Some(report),
                    record_error,
                })
            }
            Err(WaitError::TimedOut(_)) => {
                let note = format!(
                    "the healer had not reported a resume {} ms after its deadline",
                    Instant::now()
                        .saturating_duration_since(self.deadline)
                        .as_millis()
                );
                self.resume(UndoneBy::Runner, Some(note))
            }
            Err(WaitError::Failed(never)) => match never {},
        }
    }

    /// Resumes the process now: asks the healer (`resume` on its pipe), sends SIGCONT through the
    /// runner's own pidfd and reads the state until it is no longer `T` (bounded); records who did
    /// it. The resume comes first; a ledger write that fails is reported in the record, not as an
    /// error. Idempotent: a second call returns the first record's data.
    pub fn resume(&mut self, by: UndoneBy, note: Option<String>) -> Result<ResumeRecord, LabError> {
        if self.resumed {
            return Ok(ResumeRecord {
                resumed_by: self.ledger.resumed_by.unwrap_or(by),
                resumed_at: self.ledger.resumed_at.clone().unwrap_or_default(),
                state_after: self.ledger.state_after_resume,
                healer: self.files.read_report(),
                record_error: None,
            });
        }
        let _ = ask(&mut self.to_healer, "resume");
        let check = self.pinned.resume_until_running(RESUME_BOUND);
        self.resumed = true;
        self.ledger.status = "resumed".into();
        self.ledger.resumed_by = Some(by);
        self.ledger.resumed_at = Some(check.sent_at.clone());
        self.ledger.state_after_resume = check.state_after;
        self.ledger.process_gone_after_resume = check.gone;
        self.ledger.note = match (note, check.signal_result.as_str()) {
            (n, "ok") => n,
            (n, e) => Some(format!(
                "{}SIGCONT: {e}",
                n.map(|n| format!("{n}; ")).unwrap_or_default()
            )),
        };
        let record_error = write_json_atomic(&self.files.ledger(), &self.ledger)
            .err()
            .map(|e| e.to_string());
        Ok(ResumeRecord {
            resumed_by: by,
            resumed_at: check.sent_at,
            state_after: check.state_after,
            healer: self.files.read_report(),
            record_error,
        })
    }

    /// Reaps the healer if it has exited; waits at most `bound`. Returns whether it has exited.
    pub fn reap(&mut self, bound: Duration) -> bool {
        let healer = &mut self.healer;
        Wait::new("the healer to exit", bound, Duration::from_millis(20))
            .blocking(
                || match healer.try_wait() {
                    Ok(Some(_)) => Ok(Check::Done(())),
                    Ok(None) => Ok(Check::NotYet(())),
                    Err(e) => Err(e),
                },
                |_, _| {},
            )
            .is_ok()
    }
}

impl Drop for Freeze {
    fn drop(&mut self) {
        if !self.resumed {
            let _ = self.resume(
                UndoneBy::RunnerExit,
                Some("the runner left the freeze on an error path".into()),
            );
        }
        // Closing the pipe: a healer that has resumed exits; reap it if it already has.
        drop(self.to_healer.take());
        self.reap(Duration::from_millis(500));
    }
}

// ---------------------------------------------------------------------------------------------
// The healer process.

/// Entry point of the detached freeze healer (`kca-webhook-lab healer-freeze --attempt-dir DIR`).
/// `args` are the arguments after the subcommand name (a leading `healer-freeze` is skipped).
/// Returns the exit code: 0 after a resume, when the process was gone, or when no freeze was
/// asked for; 1 when the state stayed `T`; 2 for bad arguments; 3 when it refused.
///
/// It never prints (stdout/stderr may be closed or full): its log is `DIR/healer.log`.
pub fn healer_main(args: &[String]) -> i32 {
    let dir = match healer::attempt_dir_arg(HEALER_SUBCOMMAND, args) {
        Ok(d) => d,
        Err(usage) => {
            let _ = writeln!(std::io::stderr(), "{usage}");
            return 2;
        }
    };
    // Opened once; the healer's records and log go through that fd.
    let (_opened, dir) = match healer::open_attempt_dir(&dir) {
        Ok(o) => o,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "{why}");
            return 3;
        }
    };
    let files = AttemptFiles { dir };
    // Block the signals that end a process politely; they are read through a signalfd below, so
    // SIGTERM/SIGHUP/SIGINT resume first and then exit.
    let mut mask = nix::sys::signal::SigSet::empty();
    for s in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGINT,
    ] {
        mask.add(s);
    }
    let _ = mask.thread_block();
    let sigfd = nix::sys::signalfd::SignalFd::with_flags(
        &mask,
        nix::sys::signalfd::SfdFlags::SFD_NONBLOCK | nix::sys::signalfd::SfdFlags::SFD_CLOEXEC,
    )
    .ok();
    let mut log = HealerLog::open(&files.log());
    let hardening = healer::harden();
    run_healer(&files, &mut log, hardening, sigfd.as_ref())
}

enum Wake {
    Line(String),
    Eof,
    Signal(String),
    Timeout,
}

/// Waits for a line on stdin or a signal, at most `timeout` (stdin ignored when `stdin_open` is
/// false).
fn wait_event(
    stdin: &mut std::io::StdinLock<'_>,
    stdin_open: bool,
    sigfd: Option<&nix::sys::signalfd::SignalFd>,
    timeout: Duration,
) -> Wake {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let stdin_fd = std::io::stdin();
    let mut fds = Vec::new();
    if let Some(s) = sigfd {
        fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
    }
    let stdin_index = fds.len();
    if stdin_open {
        fds.push(PollFd::new(stdin_fd.as_fd(), PollFlags::POLLIN));
    }
    let ms = timeout.as_millis().min(60_000) as u32;
    let t = PollTimeout::try_from(ms).unwrap_or(PollTimeout::NONE);
    match poll(&mut fds, t) {
        Ok(0) => Wake::Timeout,
        Ok(_) => {
            if sigfd.is_some()
                && fds[0]
                    .revents()
                    .is_some_and(|r| r.contains(PollFlags::POLLIN))
            {
                let name = sigfd
                    .and_then(|s| s.read_signal().ok().flatten())
                    .and_then(|i| nix::sys::signal::Signal::try_from(i.ssi_signo as i32).ok())
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|| "a signal".into());
                return Wake::Signal(name);
            }
            if stdin_open
                && fds[stdin_index].revents().is_some_and(|r| {
                    r.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
                })
            {
                let mut line = String::new();
                return match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => Wake::Eof,
                    Ok(_) => Wake::Line(line.trim().to_string()),
                };
            }
            Wake::Timeout
        }
        Err(_) => Wake::Timeout,
    }
}

/// The freeze healer's name in its log.
const WHO: &str = "healer-freeze";

/// The freeze healer's writes of its report: each failure is kept and named in the next write
/// that succeeds (a full disk never delays a signal).
struct ReportWriter<'a> {
    files: &'a AttemptFiles,
    failures: Vec<String>,
}

impl ReportWriter<'_> {
    /// Writes `report`, noting earlier failures in it.
    fn save(&mut self, report: &mut HealerReport, log: &mut HealerLog) {
        if !self.failures.is_empty() {
            report.note = Some(format!(
                "{}earlier records could not be written: {}",
                report
                    .note
                    .as_deref()
                    .map(|n| format!("{n}; "))
                    .unwrap_or_default(),
                self.failures.join("; ")
            ));
        }
        if let Err(e) = write_json_atomic(&self.files.report(), report) {
            log.line(WHO, format!("could not write {}: {e}", report.status));
            self.failures.push(format!("{}: {e}", report.status));
        }
    }

    /// Records a refusal (`refused`, why) and returns the healer's exit code 3.
    fn refuse(&mut self, report: &mut HealerReport, log: &mut HealerLog, why: String) -> i32 {
        log.line(WHO, format!("refusing: {why}"));
        report.status = "refused".into();
        report.note = Some(why);
        let _ = write_json_atomic(&self.files.report(), report);
        3
    }
}

impl HealerReport {
    /// The report of the healer of `plan` before it is ready: `refused` until it is.
    fn refused(plan: &FreezePlan, hardening: Hardening) -> HealerReport {
        HealerReport {
            status: "refused".into(),
            attempt: plan.attempt.clone(),
            healer: ProcessRef::myself(),
            target: plan.target,
            hardening,
            ready_at: None,
            stop_sent_at: None,
            frozen_at: None,
            deadline_at: None,
            woke_by: None,
            resume: None,
            resume_late_ms: None,
            note: None,
        }
    }
}

/// The freeze healer's life (see [`healer_main`]), in named steps: read the plan, pin the target
/// and take its lock ([`pin_target`]), answer ready, wait for the runner's `stop`
/// ([`wait_for_stop`]), freeze ([`stop_and_confirm`]), wait for the deadline, a request or a
/// signal ([`wait_for_resume_time`]), resume and record ([`resume_and_record`]).
fn run_healer(
    files: &AttemptFiles,
    log: &mut HealerLog,
    hardening: Hardening,
    sigfd: Option<&nix::sys::signalfd::SignalFd>,
) -> i32 {
    let plan: FreezePlan = match read_json(&files.plan()) {
        Ok(p) => p,
        Err(e) => {
            log.line(WHO, format!("refusing: {e}"));
            return 3;
        }
    };
    let mut report = HealerReport::refused(&plan, hardening);
    let mut writer = ReportWriter {
        files,
        failures: Vec::new(),
    };
    log.line(
        WHO,
        format!(
            "attempt {}: pid {} start ticks {} resume after {} s; hardening {:?}",
            plan.attempt,
            plan.target.pid,
            plan.target.start_time_ticks,
            plan.resume_after_sec,
            report.hardening
        ),
    );
    let (pinned, _target_lock) = match pin_target(&plan) {
        Ok(x) => x,
        Err(why) => return writer.refuse(&mut report, log, why),
    };
    report.status = "ready".into();
    report.ready_at = Some(now_rfc3339());
    if let Err(e) = write_json_atomic(&files.report(), &report) {
        // The runner cannot see a ready answer it cannot read: nothing will be asked of us.
        log.line(WHO, format!("writing ready: {e}"));
        return 3;
    }
    log.line(WHO, "ready; waiting for the runner's stop");
    let stdin = std::io::stdin();
    let mut stdin = stdin.lock();
    if let Err(why) = wait_for_stop(&mut stdin, sigfd) {
        log.line(WHO, format!("aborted: {why}; nothing was signalled"));
        report.status = "aborted".into();
        report.note = Some(why);
        writer.save(&mut report, log);
        return 0;
    }
    let deadline = match stop_and_confirm(&pinned, &plan, &mut report) {
        Ok(d) => d,
        Err(why) => {
            log.line(WHO, &why);
            report.status = "refused".into();
            report.note = Some(why);
            writer.save(&mut report, log);
            return 3;
        }
    };
    report.status = "frozen".into();
    report.frozen_at = Some(now_rfc3339());
    writer.save(&mut report, log);
    log.line(
        WHO,
        format!(
            "frozen; resuming at {}",
            report.deadline_at.as_deref().unwrap_or("")
        ),
    );
    let woke_by = wait_for_resume_time(&mut stdin, sigfd, deadline);
    let code = resume_and_record(&pinned, deadline, woke_by, &mut report);
    writer.save(&mut report, log);
    log.line(
        WHO,
        format!(
            "woke by {}: {} ({:?})",
            report.woke_by.as_deref().unwrap_or("-"),
            report.status,
            report.resume.as_ref().map(|c| c.state_after)
        ),
    );
    code
}

/// The healer's own pin on the target: a pidfd re-checked against the start ticks, the cgroup
/// naming the plan's container exactly, and the target lock (`container-<id>`), held until the
/// healer exits. `Err` says why it refuses.
fn pin_target(plan: &FreezePlan) -> Result<(PinnedProcess, attempt::Lock), String> {
    let pinned = PinnedProcess::open(plan.target.pid, plan.target.start_time_ticks)
        .map_err(|e| e.to_string())?;
    require_container(plan.target.pid, &plan.container_id).map_err(|e| e.to_string())?;
    let lock = attempt::lock_target(
        &format!("container-{}", plan.container_id),
        &plan.attempt,
        "the freeze healer",
    )
    .map_err(|e| e.to_string())?;
    Ok((pinned, lock))
}

/// Waits (bounded by [`STOP_REQUEST_BOUND`]) for the runner's `stop` line. `Err` says why no
/// freeze was asked for (the pipe closed, a signal, the bound): nothing is signalled then.
fn wait_for_stop(
    stdin: &mut std::io::StdinLock<'_>,
    sigfd: Option<&nix::sys::signalfd::SignalFd>,
) -> Result<(), String> {
    let asked = Instant::now();
    loop {
        let left = STOP_REQUEST_BOUND.saturating_sub(asked.elapsed());
        match wait_event(stdin, true, sigfd, left) {
            Wake::Line(l) if l == "stop" => return Ok(()),
            Wake::Line(_) => continue,
            Wake::Eof => {
                return Err("the runner closed the pipe before asking for the freeze".into());
            }
            Wake::Signal(s) => return Err(format!("{s} before the freeze was asked for")),
            Wake::Timeout if left.is_zero() => {
                return Err(format!(
                    "no stop request within {} s",
                    STOP_REQUEST_BOUND.as_secs()
                ));
            }
            Wake::Timeout => continue,
        }
    }
}

/// The freeze: SIGSTOP through the pidfd, the state confirmed `T` within [`STATE_BOUND`];
/// records `stop_sent_at` and `deadline_at` and returns the deadline (`stop + resume_after_sec`)
/// on the monotonic clock. When the state does not become `T`, the process is resumed at once
/// (recorded) and `Err` says why.
fn stop_and_confirm(
    pinned: &PinnedProcess,
    plan: &FreezePlan,
    report: &mut HealerReport,
) -> Result<Instant, String> {
    report.stop_sent_at = Some(now_rfc3339());
    let after = Duration::from_secs(plan.resume_after_sec);
    let deadline = Instant::now() + after;
    report.deadline_at = Some(rfc3339(
        chrono::Utc::now() + chrono::Duration::from_std(after).unwrap_or_default(),
    ));
    let sent = pinned.signal(Signal::STOP);
    let stopped = sent.is_ok()
        && matches!(
            pinned.wait_state(STATE_BOUND, |s| matches!(s, Some('T') | Some('t'))),
            Ok((_, true))
        );
    if stopped {
        return Ok(deadline);
    }
    let check = pinned.resume_until_running(RESUME_BOUND);
    let why = format!(
        "the state did not become T after SIGSTOP ({sent:?}); resumed: {:?}",
        check.state_after
    );
    report.resume = Some(check);
    Err(why)
}

/// Waits on the monotonic clock until `deadline`; the runner's fate does not matter (its pipe
/// closing only stops the healer reading it). A `resume` from the runner or a polite signal ends
/// the freeze early. Returns why it woke: `deadline`, `runner-request` or the signal's name.
fn wait_for_resume_time(
    stdin: &mut std::io::StdinLock<'_>,
    sigfd: Option<&nix::sys::signalfd::SignalFd>,
    deadline: Instant,
) -> String {
    let mut stdin_open = true;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return "deadline".into();
        }
        match wait_event(stdin, stdin_open, sigfd, left) {
            Wake::Line(l) if l == "resume" => return "runner-request".into(),
            Wake::Line(_) | Wake::Timeout => {}
            Wake::Eof => stdin_open = false,
            Wake::Signal(s) => return s,
        }
    }
}

/// Resumes first and records after: SIGCONT until the state is no longer `T` (bounded by
/// [`RESUME_BOUND`]), then `woke_by`, how late the SIGCONT was and the status (`resumed`,
/// `process-gone`, `still-stopped`) in the report. Returns the exit code (0 ended, 1 still `T`).
fn resume_and_record(
    pinned: &PinnedProcess,
    deadline: Instant,
    woke_by: String,
    report: &mut HealerReport,
) -> i32 {
    let check = pinned.resume_until_running(RESUME_BOUND);
    let now = Instant::now();
    let late = now.saturating_duration_since(deadline).as_millis() as i64
        - deadline.saturating_duration_since(now).as_millis() as i64;
    report.woke_by = Some(woke_by);
    report.resume_late_ms = Some(late);
    report.status = if check.gone {
        "process-gone".into()
    } else if check.ended() {
        "resumed".into()
    } else {
        "still-stopped".into()
    };
    let code = if check.ended() { 0 } else { 1 };
    report.resume = Some(check);
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::process::read_stat;
    use std::process::Command;

    struct Sleeper(Child);
    impl Sleeper {
        fn start() -> Sleeper {
            Sleeper(Command::new("sleep").arg("60").spawn().unwrap())
        }
        fn pid(&self) -> i32 {
            self.0.id() as i32
        }
    }
    impl Drop for Sleeper {
        fn drop(&mut self) {
            // Our own child, by its handle.
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn pidfd_stop_and_continue_a_real_process() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let p = PinnedProcess::open(s.pid(), st.start_time_ticks).unwrap();
        p.signal(Signal::STOP).unwrap();
        let (state, ok) = p.wait_state(STATE_BOUND, |s| s == Some('T')).unwrap();
        assert!(ok, "state after SIGSTOP: {state:?}");
        assert_eq!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
        let check = p.resume_until_running(RESUME_BOUND);
        assert_eq!(check.state_before, Some('T'));
        assert!(check.ended(), "{check:?}");
        assert_eq!(check.signal_result, "ok");
        assert_ne!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
    }

    #[test]
    fn wrong_start_time_is_refused() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let err = PinnedProcess::open(s.pid(), st.start_time_ticks + 1).unwrap_err();
        assert!(matches!(err, LabError::FaultRefused { .. }), "{err}");
        assert!(err.to_string().contains("another process"), "{err}");
    }

    #[test]
    fn signal_to_a_reaped_process_fails_instead_of_reaching_another() {
        let mut s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let p = PinnedProcess::open(s.pid(), st.start_time_ticks).unwrap();
        s.0.kill().unwrap();
        s.0.wait().unwrap();
        let err = p.signal(Signal::STOP).unwrap_err();
        assert!(
            err.to_string().contains("No such process") || err.to_string().contains("ESRCH"),
            "{err}"
        );
        assert_eq!(p.state().unwrap(), None);
        let check = p.resume_until_running(Duration::from_millis(50));
        assert!(check.gone && check.ended(), "{check:?}");
    }

    #[test]
    fn healer_args_are_checked() {
        assert_eq!(healer_main(&["1".into()]), 2);
        assert_eq!(healer_main(&["--attempt-dir".into()]), 2);
    }

    #[test]
    fn a_freeze_is_refused_when_the_cgroup_does_not_name_the_container() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let target = FreezeTarget {
            act: 5,
            container_id: "0123456789abcdef-not-this-process".into(),
            pod_uid: "u".into(),
            pid: s.pid(),
            start_time_ticks: st.start_time_ticks,
            resume_after_sec: 1,
        };
        let err = freeze(Path::new("/nonexistent"), dir.path(), &target).unwrap_err();
        assert!(err.to_string().contains("does not name container"), "{err}");
        assert_ne!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
        // Nothing was planned: the refusal comes before any file.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
