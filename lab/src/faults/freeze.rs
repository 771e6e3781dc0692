//! The freeze fault: stop exactly one process (Kyverno's admission controller) with SIGSTOP sent
//! through a pidfd, and make sure it is resumed with SIGCONT at a deadline whatever happens to the
//! runner.
//!
//! **Safety protocol** (`../shared/design/architecture.md`, "Faults, safely"):
//! 1. The caller has checked the lab mark and the plan's node/deployment UIDs, and found the
//!    process through CRI (container ID, pod UID, PID) and `/proc` (start time).
//! 2. [`PinnedProcess::open`]: `pidfd_open(pid)`, then the start time is read again and must be
//!    the expected one. From then on signals go through the pidfd only, so they can never reach a
//!    process that reused the PID (`pidfd_send_signal` answers `ESRCH` once the process is gone).
//! 3. A fault ledger entry ([`FreezeLedger`], a JSON file) is written before anything is signalled.
//! 4. The watchdog is started as an independent detached process (new session and process group,
//!    stdio to a log file): `kca-webhook-lab watchdog-freeze PID STARTTIME RESUME_AFTER_SEC LEDGER`.
//!    It opens its **own** pidfd, re-checks the start time, answers "ready" by writing its report
//!    file ([`WatchdogReport`], `status: ready`), sleeps until `ready_at + RESUME_AFTER_SEC`, then
//!    sends SIGCONT through its pidfd, checks `/proc/PID/stat` is no longer `T` and records who
//!    resumed and when. Nothing the runner does (exit, panic, SIGKILL) stops it.
//! 5. Only after the ready answer does the runner send SIGSTOP through its pidfd and confirm the
//!    state `T`. The runner also resumes on its own exit paths ([`Freeze`]'s `Drop`, errors,
//!    Ctrl-C); every resume is recorded with who sent it.
//!
//! Files, next to each other: `<faults dir>/<name>.json` (the runner's ledger),
//! `<name>.watchdog.json` (the watchdog's report), `<name>.watchdog.log` (its stdout/stderr).

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// Name of the hidden subcommand that runs the watchdog.
pub const WATCHDOG_SUBCOMMAND: &str = "watchdog-freeze";
/// Environment variable naming the `kca-webhook-lab` binary to re-exec for the watchdog
/// (set by `xtask` and the tests, whose own executable is not the lab tool).
pub const LAB_BIN_ENV: &str = "KCA_WEBHOOK_LAB_BIN";
/// The lab tool's binary name.
pub const LAB_BIN_NAME: &str = "kca-webhook-lab";
/// Bound on waiting for the watchdog's ready answer.
pub const WATCHDOG_READY_BOUND: Duration = Duration::from_secs(10);
/// Bound on waiting for `/proc/PID/stat` to show the expected state after a signal.
pub const STATE_BOUND: Duration = Duration::from_secs(2);

/// Who sent the SIGCONT that resumed the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResumedBy {
    /// The detached watchdog, at its deadline.
    Watchdog,
    /// The runner, on its normal path (the watchdog did not resume within its bound).
    Runner,
    /// The runner, on an error or interruption path (error, panic, Ctrl-C, SIGTERM).
    RunnerExit,
    /// A later run of the tool that found the fault unfinished in the ledger.
    LaterRun,
}

/// A process's `/proc/PID/stat` fields the freeze relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcStat {
    /// State letter (`R`, `S`, `D`, `T` stopped, `t`, `Z`, …), field 3.
    pub state: char,
    /// Start time in clock ticks since boot, field 22 (`procfs` `Stat::starttime`).
    pub starttime: u64,
}

/// Reads `/proc/PID/stat` (state and start time). `None` when there is no such process.
pub fn read_stat(pid: i32) -> Result<Option<ProcStat>, LabError> {
    let proc_path = PathBuf::from(format!("/proc/{pid}/stat"));
    let process = match procfs::process::Process::new(pid) {
        Ok(p) => p,
        Err(procfs::ProcError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(fault_io(&proc_path, e)),
    };
    match process.stat() {
        Ok(s) => Ok(Some(ProcStat {
            state: s.state,
            starttime: s.starttime,
        })),
        Err(procfs::ProcError::NotFound(_)) => Ok(None),
        Err(e) => Err(fault_io(&proc_path, e)),
    }
}

fn fault_io(path: &Path, e: procfs::ProcError) -> LabError {
    LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    }
}

/// The state letter of the process `pid` **if** it is still the process started at `starttime`;
/// `None` when it is gone (exited, or the PID now belongs to another process).
pub fn state_if_same(pid: i32, starttime: u64) -> Result<Option<char>, LabError> {
    Ok(read_stat(pid)?
        .filter(|s| s.starttime == starttime)
        .map(|s| s.state))
}

/// A process pinned by a pidfd whose start time was re-checked after opening it.
#[derive(Debug)]
pub struct PinnedProcess {
    pid: i32,
    starttime: u64,
    fd: OwnedFd,
}

impl PinnedProcess {
    /// `pidfd_open(pid)`, then re-reads `/proc/PID/stat` and requires `starttime` to equal
    /// `expected_starttime` (the value read when the process was found).
    ///
    /// Errors: [`LabError::FaultRefused`] when the process is gone, or its start time differs
    /// (the PID now names another process).
    pub fn open(pid: i32, expected_starttime: u64) -> Result<PinnedProcess, LabError> {
        let rpid = Pid::from_raw(pid).ok_or_else(|| LabError::FaultRefused {
            reason: format!("pid {pid} is not a valid process id"),
        })?;
        let fd = pidfd_open(rpid, PidfdFlags::empty()).map_err(|e| LabError::FaultRefused {
            reason: format!("pidfd_open({pid}): {e}"),
        })?;
        match read_stat(pid)? {
            None => Err(LabError::FaultRefused {
                reason: format!("process {pid} is gone"),
            }),
            Some(s) if s.starttime != expected_starttime => Err(LabError::FaultRefused {
                reason: format!(
                    "process {pid} start time is {} clock ticks, expected {expected_starttime}: the pid names another process",
                    s.starttime
                ),
            }),
            Some(_) => Ok(PinnedProcess {
                pid,
                starttime: expected_starttime,
                fd,
            }),
        }
    }

    /// The pinned PID.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The pinned process's start time (clock ticks since boot).
    pub fn starttime(&self) -> u64 {
        self.starttime
    }

    /// Sends `signal` through the pidfd. `ESRCH` (the process is gone) is an error naming it.
    pub fn signal(&self, signal: Signal) -> Result<(), LabError> {
        pidfd_send_signal(&self.fd, signal).map_err(|e| LabError::FaultRefused {
            reason: format!("pidfd_send_signal({}, {signal:?}): {e}", self.pid),
        })
    }

    /// The current state letter, or `None` when the pinned process is gone.
    pub fn state(&self) -> Result<Option<char>, LabError> {
        state_if_same(self.pid, self.starttime)
    }

    /// Waits (bounded by `bound`, polling every 10 ms) until `want(state)` holds; returns the last
    /// state seen (`None`: gone) and whether `want` held.
    pub fn wait_state(
        &self,
        bound: Duration,
        want: impl Fn(Option<char>) -> bool,
    ) -> Result<(Option<char>, bool), LabError> {
        let start = Instant::now();
        loop {
            let s = self.state()?;
            if want(s) {
                return Ok((s, true));
            }
            if start.elapsed() >= bound {
                return Ok((s, false));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The runner's fault ledger entry for one freeze (`<faults dir>/<name>.json`), written before the
/// first signal and updated at each step. A later run reads it to heal an unfinished fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreezeLedger {
    /// Always `freeze-one-controller-process`.
    pub action: String,
    /// The act that planned the fault (5 or 6).
    pub act: u8,
    /// `armed` (ledger written, nothing signalled yet), `frozen`, `resumed`, or `aborted`
    /// (refused before any SIGSTOP).
    pub status: String,
    /// CRI container ID of the target.
    pub container_id: String,
    /// Pod UID of the target.
    pub pod_uid: String,
    /// Host PID of the target.
    pub pid: i32,
    /// Its start time, clock ticks since boot (`/proc/PID/stat` field 22).
    pub pid_starttime: u64,
    /// The watchdog's deadline after its ready answer, seconds.
    pub resume_after_sec: u64,
    /// When the ledger entry was first written, RFC 3339 UTC (ms).
    pub created_at: String,
    /// PID of the watchdog process (the runner started it).
    pub watchdog_pid: Option<u32>,
    /// The watchdog's report file.
    pub watchdog_report: PathBuf,
    /// The watchdog's log file.
    pub watchdog_log: PathBuf,
    /// When the watchdog answered ready, RFC 3339 UTC (ms).
    pub watchdog_ready_at: Option<String>,
    /// When the watchdog will send SIGCONT, RFC 3339 UTC (ms).
    pub watchdog_deadline_at: Option<String>,
    /// When SIGSTOP was sent, RFC 3339 UTC (ms).
    pub stop_sent_at: Option<String>,
    /// When the state `T` was confirmed, RFC 3339 UTC (ms).
    pub frozen_at: Option<String>,
    /// When the resuming SIGCONT was sent, RFC 3339 UTC (ms).
    pub resumed_at: Option<String>,
    /// Who sent it.
    pub resumed_by: Option<ResumedBy>,
    /// State letter seen after the resume (`None` with `process_gone_after_resume`).
    pub state_after_resume: Option<char>,
    /// Whether the process was gone when the resume was checked.
    pub process_gone_after_resume: bool,
    /// Why the runner resumed on an exit path, or why the freeze was aborted.
    pub note: Option<String>,
}

impl FreezeLedger {
    /// Reads a ledger file.
    pub fn read(path: &Path) -> Result<FreezeLedger, LabError> {
        read_json(path)
    }

    fn write(&self, path: &Path) -> Result<(), LabError> {
        write_json_atomic(path, self)
    }
}

/// The watchdog's report (`<name>.watchdog.json`), written only by the watchdog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchdogReport {
    /// `ready` (pidfd held, waiting), `resumed` (SIGCONT sent at the deadline), `process-gone`
    /// (the process had exited by the deadline), or `refused` (start time did not match: no pidfd kept).
    pub status: String,
    /// The watchdog's own PID.
    pub watchdog_pid: u32,
    /// Target PID.
    pub pid: i32,
    /// Target start time it checked (clock ticks since boot).
    pub pid_starttime: u64,
    /// When it answered ready, RFC 3339 UTC (ms).
    pub ready_at: Option<String>,
    /// Its deadline (`ready_at + resume_after_sec`), RFC 3339 UTC (ms).
    pub deadline_at: Option<String>,
    /// When it sent SIGCONT, RFC 3339 UTC (ms).
    pub resume_sent_at: Option<String>,
    /// State letter just before SIGCONT (`T` means the freeze was still on and the watchdog ended it).
    pub state_before_resume: Option<char>,
    /// State letter after SIGCONT (must not be `T`).
    pub state_after_resume: Option<char>,
    /// The `pidfd_send_signal` result, `ok` or the error.
    pub signal_result: Option<String>,
    /// Details of a refusal or error.
    pub note: Option<String>,
}

/// Everything about one resume, as the runner records it in the act's facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRecord {
    /// Who resumed the process.
    pub resumed_by: ResumedBy,
    /// When SIGCONT was sent, RFC 3339 UTC (ms).
    pub resumed_at: String,
    /// State letter seen after the resume (`None`: the process was gone).
    pub state_after: Option<char>,
    /// The watchdog's report as last read (absent if it could not be read).
    pub watchdog: Option<WatchdogReport>,
}

/// Paths of one freeze's files, derived from the ledger path `<dir>/<name>.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreezeFiles {
    /// The runner's ledger.
    pub ledger: PathBuf,
    /// The watchdog's report.
    pub report: PathBuf,
    /// The watchdog's stdout/stderr.
    pub log: PathBuf,
}

impl FreezeFiles {
    /// `<dir>/<name>.json`, `<dir>/<name>.watchdog.json`, `<dir>/<name>.watchdog.log`.
    pub fn new(dir: &Path, name: &str) -> FreezeFiles {
        FreezeFiles::for_ledger(&dir.join(format!("{name}.json")))
    }

    /// The files belonging to ledger `ledger` (which ends in `.json`).
    pub fn for_ledger(ledger: &Path) -> FreezeFiles {
        let stem = ledger.to_string_lossy();
        let base = stem.strip_suffix(".json").unwrap_or(&stem).to_owned();
        FreezeFiles {
            ledger: ledger.to_path_buf(),
            report: PathBuf::from(format!("{base}.watchdog.json")),
            log: PathBuf::from(format!("{base}.watchdog.log")),
        }
    }
}

/// Where the `kca-webhook-lab` binary is, for re-executing it as the watchdog:
/// `$KCA_WEBHOOK_LAB_BIN` when set; else the current executable when it is `kca-webhook-lab`;
/// else a `kca-webhook-lab` next to the current executable or one directory up (a test binary in
/// `target/debug/deps/` finds `target/debug/kca-webhook-lab`).
///
/// Errors: [`LabError::NotAvailable`] naming the places looked at.
pub fn lab_program() -> Result<PathBuf, LabError> {
    if let Some(p) = std::env::var_os(LAB_BIN_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(LabError::NotAvailable {
                what: format!("{LAB_BIN_ENV}={} is not a file", p.display()),
            })
        };
    }
    let exe = std::env::current_exe().map_err(LabError::io("/proc/self/exe"))?;
    if exe.file_name().and_then(|n| n.to_str()) == Some(LAB_BIN_NAME) {
        return Ok(exe);
    }
    let mut looked = Vec::new();
    for dir in exe
        .parent()
        .into_iter()
        .flat_map(|d| [Some(d), d.parent()])
        .flatten()
    {
        let candidate = dir.join(LAB_BIN_NAME);
        if candidate.is_file() {
            return Ok(candidate);
        }
        looked.push(candidate.display().to_string());
    }
    Err(LabError::NotAvailable {
        what: format!(
            "the {LAB_BIN_NAME} binary for the watchdog (set {LAB_BIN_ENV}; looked at {})",
            looked.join(", ")
        ),
    })
}

/// A watchdog process the runner started and whose ready answer it received.
#[derive(Debug)]
pub struct Watchdog {
    child: Child,
    files: FreezeFiles,
    ready: WatchdogReport,
}

impl Watchdog {
    /// Starts `program watchdog-freeze PID STARTTIME RESUME_AFTER_SEC LEDGER` detached (new session
    /// and process group via `setsid`, stdin from /dev/null, stdout/stderr appended to the log
    /// file) and waits up to [`WATCHDOG_READY_BOUND`] for its report to say `ready`.
    ///
    /// Errors: [`LabError::FaultRefused`] when it refuses (start time mismatch) or exits or stays
    /// silent; the text includes the tail of its log.
    pub fn start(
        program: &Path,
        files: &FreezeFiles,
        pid: i32,
        starttime: u64,
        resume_after_sec: u64,
    ) -> Result<Watchdog, LabError> {
        if let Some(dir) = files.ledger.parent() {
            std::fs::create_dir_all(dir).map_err(LabError::io(dir))?;
        }
        // A stale report from an earlier attempt must not be taken for this watchdog's answer.
        match std::fs::remove_file(&files.report) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(LabError::Io {
                    path: files.report.clone(),
                    source: e,
                });
            }
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&files.log)
            .map_err(LabError::io(&files.log))?;
        let log2 = log.try_clone().map_err(LabError::io(&files.log))?;
        let mut cmd = Command::new(program);
        cmd.arg(WATCHDOG_SUBCOMMAND)
            .arg(pid.to_string())
            .arg(starttime.to_string())
            .arg(resume_after_sec.to_string())
            .arg(&files.ledger)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        // SAFETY: setsid(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::setsid()
                    .map(|_| ())
                    .map_err(std::io::Error::from)
            });
        }
        let mut child = cmd.spawn().map_err(|e| LabError::FaultRefused {
            reason: format!("starting the watchdog {}: {e}", program.display()),
        })?;
        let start = Instant::now();
        loop {
            if let Ok(report) = read_json::<WatchdogReport>(&files.report) {
                match report.status.as_str() {
                    "ready" => {
                        return Ok(Watchdog {
                            child,
                            files: files.clone(),
                            ready: report,
                        });
                    }
                    _ => {
                        let _ = child.wait();
                        return Err(LabError::FaultRefused {
                            reason: format!(
                                "the watchdog answered {} ({}); log {}: {}",
                                report.status,
                                report.note.unwrap_or_default(),
                                files.log.display(),
                                log_tail(&files.log)
                            ),
                        });
                    }
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(LabError::FaultRefused {
                    reason: format!(
                        "the watchdog exited ({status}) before answering ready; log {}: {}",
                        files.log.display(),
                        log_tail(&files.log)
                    ),
                });
            }
            if start.elapsed() >= WATCHDOG_READY_BOUND {
                // We started it, so we may end it (by its own PID, through the Child handle).
                let _ = child.kill();
                let _ = child.wait();
                return Err(LabError::WaitTimedOut {
                    what: "the freeze watchdog's ready answer".into(),
                    waited_ms: start.elapsed().as_millis() as u64,
                    last_state: format!(
                        "no report at {}; log: {}",
                        files.report.display(),
                        log_tail(&files.log)
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The watchdog's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its ready answer.
    pub fn ready(&self) -> &WatchdogReport {
        &self.ready
    }

    /// Its report as it is now (`None` when unreadable).
    pub fn report(&self) -> Option<WatchdogReport> {
        read_json(&self.files.report).ok()
    }

    /// Reaps the watchdog if it has exited (it exits right after resuming); waits at most `bound`.
    /// Returns whether it has exited.
    pub fn reap(&mut self, bound: Duration) -> bool {
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return true,
                Ok(None) if start.elapsed() < bound => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => return false,
            }
        }
    }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// What to freeze and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreezeTarget {
    /// The act planning the fault.
    pub act: u8,
    /// CRI container ID.
    pub container_id: String,
    /// Pod UID.
    pub pod_uid: String,
    /// Host PID.
    pub pid: i32,
    /// Start time read when the process was found (clock ticks since boot).
    pub starttime: u64,
    /// The watchdog resumes this many seconds after its ready answer.
    pub resume_after_sec: u64,
}

/// A freeze in progress: the pinned process, its watchdog and the ledger. Dropping it while the
/// process is still stopped resumes it (recorded as [`ResumedBy::RunnerExit`]).
#[derive(Debug)]
pub struct Freeze {
    pinned: PinnedProcess,
    watchdog: Watchdog,
    files: FreezeFiles,
    ledger: FreezeLedger,
    resumed: bool,
}

/// Puts one process in the stopped state following the safety protocol (module docs): pidfd and
/// start-time re-check, ledger entry, watchdog ready, then SIGSTOP and confirmation of `T`.
///
/// Errors: [`LabError::FaultRefused`] when the identity check fails, the watchdog does not answer
/// ready, or the state `T` is not confirmed within [`STATE_BOUND`] (then the process is resumed
/// before returning). Nothing is signalled before the ledger and the watchdog are in place.
pub fn freeze(
    program: &Path,
    files: &FreezeFiles,
    target: &FreezeTarget,
) -> Result<Freeze, LabError> {
    let pinned = PinnedProcess::open(target.pid, target.starttime)?;
    if let Some(existing) = FreezeLedger::read(&files.ledger)
        .ok()
        .filter(|l| l.status == "frozen")
    {
        return Err(LabError::FaultRefused {
            reason: format!(
                "{} records an unfinished freeze of pid {}; it must be healed first",
                files.ledger.display(),
                existing.pid
            ),
        });
    }
    let mut ledger = FreezeLedger {
        action: "freeze-one-controller-process".into(),
        act: target.act,
        status: "armed".into(),
        container_id: target.container_id.clone(),
        pod_uid: target.pod_uid.clone(),
        pid: target.pid,
        pid_starttime: target.starttime,
        resume_after_sec: target.resume_after_sec,
        created_at: now_rfc3339(),
        watchdog_pid: None,
        watchdog_report: files.report.clone(),
        watchdog_log: files.log.clone(),
        watchdog_ready_at: None,
        watchdog_deadline_at: None,
        stop_sent_at: None,
        frozen_at: None,
        resumed_at: None,
        resumed_by: None,
        state_after_resume: None,
        process_gone_after_resume: false,
        note: None,
    };
    ledger.write(&files.ledger)?;
    let watchdog = match Watchdog::start(
        program,
        files,
        target.pid,
        target.starttime,
        target.resume_after_sec,
    ) {
        Ok(w) => w,
        Err(e) => {
            ledger.status = "aborted".into();
            ledger.note = Some(e.to_string());
            ledger.write(&files.ledger)?;
            return Err(e);
        }
    };
    ledger.watchdog_pid = Some(watchdog.pid());
    ledger.watchdog_ready_at = watchdog.ready().ready_at.clone();
    ledger.watchdog_deadline_at = watchdog.ready().deadline_at.clone();
    ledger.write(&files.ledger)?;

    ledger.stop_sent_at = Some(now_rfc3339());
    ledger.status = "frozen".into();
    ledger.write(&files.ledger)?;
    let mut freeze = Freeze {
        pinned,
        watchdog,
        files: files.clone(),
        ledger,
        resumed: false,
    };
    freeze.pinned.signal(Signal::STOP)?;
    let (state, ok) = freeze.pinned.wait_state(STATE_BOUND, |s| s == Some('T'))?;
    if !ok {
        let e = LabError::FaultRefused {
            reason: format!(
                "process {} did not reach state T after SIGSTOP (state {state:?})",
                target.pid
            ),
        };
        freeze.resume(ResumedBy::RunnerExit, Some(e.to_string()))?;
        return Err(e);
    }
    freeze.ledger.frozen_at = Some(now_rfc3339());
    freeze.ledger.write(&freeze.files.ledger)?;
    Ok(freeze)
}

impl Freeze {
    /// The ledger as last written.
    pub fn ledger(&self) -> &FreezeLedger {
        &self.ledger
    }

    /// The files of this freeze.
    pub fn files(&self) -> &FreezeFiles {
        &self.files
    }

    /// The pinned process.
    pub fn process(&self) -> &PinnedProcess {
        &self.pinned
    }

    /// The pinned process's state now (`None`: gone).
    pub fn state(&self) -> Result<Option<char>, LabError> {
        self.pinned.state()
    }

    /// Whether a resume has been recorded.
    pub fn is_resumed(&self) -> bool {
        self.resumed
    }

    /// Waits for the watchdog to resume the process: polls its report until `resumed` or
    /// `process-gone`, bounded by the deadline plus `grace`. If the bound runs out, the runner
    /// resumes the process itself ([`ResumedBy::Runner`]). `progress` is called about once a
    /// second with the seconds left until the watchdog's deadline.
    pub async fn wait_for_watchdog(
        &mut self,
        grace: Duration,
        mut progress: impl FnMut(i64),
    ) -> Result<ResumeRecord, LabError> {
        let deadline = self
            .watchdog
            .ready()
            .deadline_at
            .as_deref()
            .and_then(|d| chrono::DateTime::parse_from_rfc3339(d).ok())
            .map(|d| d.with_timezone(&chrono::Utc))
            .unwrap_or_else(chrono::Utc::now);
        let bound = deadline + chrono::Duration::from_std(grace).unwrap_or_default();
        let mut last_tick = Instant::now() - Duration::from_secs(1);
        loop {
            if let Some(report) = self
                .watchdog
                .report()
                .filter(|r| r.status == "resumed" || r.status == "process-gone")
            {
                let state_after = self.pinned.state()?;
                self.resumed = true;
                self.ledger.status = "resumed".into();
                self.ledger.resumed_by = Some(ResumedBy::Watchdog);
                self.ledger.resumed_at = report.resume_sent_at.clone();
                self.ledger.state_after_resume = state_after.or(report.state_after_resume);
                self.ledger.process_gone_after_resume = state_after.is_none();
                self.ledger.write(&self.files.ledger)?;
                self.watchdog.reap(Duration::from_secs(2));
                return Ok(ResumeRecord {
                    resumed_by: ResumedBy::Watchdog,
                    resumed_at: report.resume_sent_at.clone().unwrap_or_default(),
                    state_after,
                    watchdog: Some(report),
                });
            }
            let now = chrono::Utc::now();
            if now >= bound {
                let note = format!(
                    "the watchdog had not reported a resume {} ms after its deadline",
                    (now - deadline).num_milliseconds()
                );
                return self.resume(ResumedBy::Runner, Some(note));
            }
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                progress((deadline - now).num_seconds());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Resumes the process now (SIGCONT through the runner's pidfd), checks the state and records
    /// who did it. Idempotent: a second call returns the first record's data.
    pub fn resume(
        &mut self,
        by: ResumedBy,
        note: Option<String>,
    ) -> Result<ResumeRecord, LabError> {
        if self.resumed {
            return Ok(ResumeRecord {
                resumed_by: self.ledger.resumed_by.unwrap_or(by),
                resumed_at: self.ledger.resumed_at.clone().unwrap_or_default(),
                state_after: self.ledger.state_after_resume,
                watchdog: self.watchdog.report(),
            });
        }
        let at = now_rfc3339();
        let sent = self.pinned.signal(Signal::CONT);
        let (state_after, _) = self.pinned.wait_state(STATE_BOUND, |s| s != Some('T'))?;
        self.resumed = true;
        self.ledger.status = "resumed".into();
        self.ledger.resumed_by = Some(by);
        self.ledger.resumed_at = Some(at.clone());
        self.ledger.state_after_resume = state_after;
        self.ledger.process_gone_after_resume = state_after.is_none();
        self.ledger.note = match (note, &sent) {
            (n, Ok(())) => n,
            (n, Err(e)) => Some(format!(
                "{}SIGCONT: {e}",
                n.map(|n| format!("{n}; ")).unwrap_or_default()
            )),
        };
        self.ledger.write(&self.files.ledger)?;
        Ok(ResumeRecord {
            resumed_by: by,
            resumed_at: at,
            state_after,
            watchdog: self.watchdog.report(),
        })
    }
}

impl Drop for Freeze {
    fn drop(&mut self) {
        if !self.resumed {
            let _ = self.resume(
                ResumedBy::RunnerExit,
                Some("the runner left the freeze on an error path".into()),
            );
        }
        // Reap the watchdog if it is already done, so no zombie stays behind; otherwise it lives on
        // (detached) and resumes at its deadline, which is harmless once the process runs.
        self.watchdog.reap(Duration::ZERO);
    }
}

/// Finds ledgers under `dir` whose freeze is unfinished (`frozen` with no resume) and resumes the
/// process if it is still the same one and still stopped (through a fresh pidfd; never by bare
/// PID). Returns the ledgers it looked at that needed healing, updated.
pub fn heal_unfinished(dir: &Path) -> Result<Vec<FreezeLedger>, LabError> {
    let mut healed = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(healed),
        Err(e) => {
            return Err(LabError::Io {
                path: dir.to_path_buf(),
                source: e,
            });
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.ends_with(".json") && !name.ends_with(".watchdog.json")
        })
        .collect();
    paths.sort();
    for path in paths {
        let Ok(mut ledger) = FreezeLedger::read(&path) else {
            continue;
        };
        if ledger.status != "frozen" {
            continue;
        }
        // The watchdog may have resumed it already: its report says so.
        let files = FreezeFiles::for_ledger(&path);
        if let Some(r) = read_json::<WatchdogReport>(&files.report)
            .ok()
            .filter(|r| r.status == "resumed")
        {
            ledger.status = "resumed".into();
            ledger.resumed_by = Some(ResumedBy::Watchdog);
            ledger.resumed_at = r.resume_sent_at.clone();
            ledger.state_after_resume = r.state_after_resume;
        } else {
            match PinnedProcess::open(ledger.pid, ledger.pid_starttime) {
                Ok(p) => {
                    let at = now_rfc3339();
                    let sent = p.signal(Signal::CONT);
                    let (state, _) = p.wait_state(STATE_BOUND, |s| s != Some('T'))?;
                    ledger.status = "resumed".into();
                    ledger.resumed_by = Some(ResumedBy::LaterRun);
                    ledger.resumed_at = Some(at);
                    ledger.state_after_resume = state;
                    ledger.process_gone_after_resume = state.is_none();
                    ledger.note = sent.err().map(|e| e.to_string());
                }
                Err(_) => {
                    ledger.status = "resumed".into();
                    ledger.process_gone_after_resume = true;
                    ledger.note = Some("the process was gone when a later run looked".into());
                }
            }
        }
        ledger.write(&path)?;
        healed.push(ledger);
    }
    Ok(healed)
}

/// Entry point of the detached freeze watchdog (`kca-webhook-lab watchdog-freeze PID STARTTIME
/// RESUME_AFTER_SEC LEDGER`). `args` are the arguments after the subcommand name (a leading
/// `watchdog-freeze` is accepted and skipped). Returns the exit code: 0 after a resume or when
/// the process was already gone, 2 for bad arguments, 3 when it refused (identity mismatch),
/// 1 for other errors.
pub fn watchdog_main(args: &[String]) -> i32 {
    let args = match args.first() {
        Some(a) if a == WATCHDOG_SUBCOMMAND => &args[1..],
        _ => args,
    };
    let [pid, starttime, resume_after, ledger] = args else {
        eprintln!(
            "usage: {LAB_BIN_NAME} {WATCHDOG_SUBCOMMAND} PID STARTTIME RESUME_AFTER_SEC LEDGER"
        );
        return 2;
    };
    let (Ok(pid), Ok(starttime), Ok(resume_after)) = (
        pid.parse::<i32>(),
        starttime.parse::<u64>(),
        resume_after.parse::<u64>(),
    ) else {
        eprintln!(
            "watchdog-freeze: PID, STARTTIME and RESUME_AFTER_SEC must be integers, got {args:?}"
        );
        return 2;
    };
    let files = FreezeFiles::for_ledger(Path::new(ledger));
    match run_watchdog(&files, pid, starttime, Duration::from_secs(resume_after)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{} watchdog-freeze: {e}", now_rfc3339());
            1
        }
    }
}

fn run_watchdog(
    files: &FreezeFiles,
    pid: i32,
    starttime: u64,
    resume_after: Duration,
) -> Result<i32, LabError> {
    let me = std::process::id();
    let mut report = WatchdogReport {
        status: "refused".into(),
        watchdog_pid: me,
        pid,
        pid_starttime: starttime,
        ready_at: None,
        deadline_at: None,
        resume_sent_at: None,
        state_before_resume: None,
        state_after_resume: None,
        signal_result: None,
        note: None,
    };
    eprintln!(
        "{} watchdog-freeze {me}: pid {pid} starttime {starttime} resume after {resume_after:?}",
        now_rfc3339()
    );
    let pinned = match PinnedProcess::open(pid, starttime) {
        Ok(p) => p,
        Err(e) => {
            report.note = Some(e.to_string());
            write_json_atomic(&files.report, &report)?;
            eprintln!("{} refused: {e}", now_rfc3339());
            return Ok(3);
        }
    };
    let ready = chrono::Utc::now();
    let ready_mono = Instant::now();
    report.status = "ready".into();
    report.ready_at = Some(fmt_time(ready));
    report.deadline_at = Some(fmt_time(
        ready + chrono::Duration::from_std(resume_after).unwrap_or_default(),
    ));
    write_json_atomic(&files.report, &report)?;
    eprintln!(
        "{} ready; deadline {}",
        now_rfc3339(),
        report.deadline_at.as_deref().unwrap_or("")
    );

    // Sleep on the monotonic clock until the deadline. The runner's fate does not matter here.
    while let Some(left) = resume_after
        .checked_sub(ready_mono.elapsed())
        .filter(|d| !d.is_zero())
    {
        std::thread::sleep(left.min(Duration::from_millis(200)));
    }

    report.state_before_resume = pinned.state()?;
    report.resume_sent_at = Some(now_rfc3339());
    let sent = pinned.signal(Signal::CONT);
    report.signal_result = Some(match &sent {
        Ok(()) => "ok".into(),
        Err(e) => e.to_string(),
    });
    let (after, _) = pinned.wait_state(STATE_BOUND, |s| s != Some('T'))?;
    report.state_after_resume = after;
    report.status = if after.is_none() {
        "process-gone".into()
    } else {
        "resumed".into()
    };
    if after == Some('T') {
        report.note = Some("state still T after SIGCONT".into());
    }
    write_json_atomic(&files.report, &report)?;
    eprintln!(
        "{} SIGCONT sent ({}); state before {:?}, after {:?}",
        report.resume_sent_at.as_deref().unwrap_or(""),
        report.signal_result.as_deref().unwrap_or(""),
        report.state_before_resume,
        report.state_after_resume
    );
    Ok(if after == Some('T') { 1 } else { 0 })
}

/// Now, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    fmt_time(chrono::Utc::now())
}

fn fmt_time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LabError> {
    let text = std::fs::read_to_string(path).map_err(LabError::io(path))?;
    serde_json::from_str(&text).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file in the same directory,
/// fsync, rename), so a reader never sees half a file.
fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), LabError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(LabError::io(dir))?;
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    bytes.push(b'\n');
    let mut tmp = tempfile::Builder::new()
        .prefix(".fault-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(LabError::io(dir))?;
    tmp.write_all(&bytes).map_err(LabError::io(tmp.path()))?;
    tmp.as_file().sync_all().map_err(LabError::io(tmp.path()))?;
    tmp.persist(path).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let p = PinnedProcess::open(s.pid(), st.starttime).unwrap();
        p.signal(Signal::STOP).unwrap();
        let (state, ok) = p.wait_state(STATE_BOUND, |s| s == Some('T')).unwrap();
        assert!(ok, "state after SIGSTOP: {state:?}");
        assert_eq!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
        p.signal(Signal::CONT).unwrap();
        let (state, ok) = p.wait_state(STATE_BOUND, |s| s != Some('T')).unwrap();
        assert!(ok, "state after SIGCONT: {state:?}");
        assert_ne!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
    }

    #[test]
    fn wrong_start_time_is_refused() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let err = PinnedProcess::open(s.pid(), st.starttime + 1).unwrap_err();
        assert!(matches!(err, LabError::FaultRefused { .. }), "{err}");
        assert!(err.to_string().contains("another process"), "{err}");
    }

    #[test]
    fn signal_to_a_reaped_process_fails_instead_of_reaching_another() {
        let mut s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let p = PinnedProcess::open(s.pid(), st.starttime).unwrap();
        s.0.kill().unwrap();
        s.0.wait().unwrap();
        let err = p.signal(Signal::STOP).unwrap_err();
        assert!(
            err.to_string().contains("No such process") || err.to_string().contains("ESRCH"),
            "{err}"
        );
        assert_eq!(p.state().unwrap(), None);
    }

    #[test]
    fn watchdog_args_are_checked() {
        assert_eq!(watchdog_main(&["1".into()]), 2);
        assert_eq!(
            watchdog_main(&["x".into(), "1".into(), "1".into(), "/tmp/l.json".into()]),
            2
        );
    }

    #[test]
    fn watchdog_refuses_a_mismatched_start_time_and_signals_nothing() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = FreezeFiles::new(dir.path(), "05-freeze");
        let code = watchdog_main(&[
            WATCHDOG_SUBCOMMAND.into(),
            s.pid().to_string(),
            (st.starttime + 7).to_string(),
            "1".into(),
            files.ledger.display().to_string(),
        ]);
        assert_eq!(code, 3);
        let r: WatchdogReport = read_json(&files.report).unwrap();
        assert_eq!(r.status, "refused");
        assert!(r.resume_sent_at.is_none());
    }

    #[test]
    fn watchdog_in_process_resumes_a_stopped_process_at_its_deadline() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let p = PinnedProcess::open(s.pid(), st.starttime).unwrap();
        p.signal(Signal::STOP).unwrap();
        assert!(p.wait_state(STATE_BOUND, |s| s == Some('T')).unwrap().1);
        let dir = tempfile::tempdir().unwrap();
        let files = FreezeFiles::new(dir.path(), "05-freeze");
        let t0 = Instant::now();
        let code = run_watchdog(&files, s.pid(), st.starttime, Duration::from_secs(1)).unwrap();
        let took = t0.elapsed();
        assert_eq!(code, 0);
        assert!(
            took >= Duration::from_secs(1),
            "resumed before its deadline: {took:?}"
        );
        let r: WatchdogReport = read_json(&files.report).unwrap();
        assert_eq!(r.status, "resumed");
        assert_eq!(r.state_before_resume, Some('T'));
        assert_ne!(r.state_after_resume, Some('T'));
        assert_ne!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
    }

    #[test]
    fn heal_resumes_an_unfinished_freeze_found_in_the_ledger() {
        let s = Sleeper::start();
        let st = read_stat(s.pid()).unwrap().unwrap();
        let p = PinnedProcess::open(s.pid(), st.starttime).unwrap();
        p.signal(Signal::STOP).unwrap();
        assert!(p.wait_state(STATE_BOUND, |s| s == Some('T')).unwrap().1);
        let dir = tempfile::tempdir().unwrap();
        let files = FreezeFiles::new(dir.path(), "05-freeze");
        let ledger = FreezeLedger {
            action: "freeze-one-controller-process".into(),
            act: 5,
            status: "frozen".into(),
            container_id: "c".into(),
            pod_uid: "u".into(),
            pid: s.pid(),
            pid_starttime: st.starttime,
            resume_after_sec: 20,
            created_at: now_rfc3339(),
            watchdog_pid: None,
            watchdog_report: files.report.clone(),
            watchdog_log: files.log.clone(),
            watchdog_ready_at: None,
            watchdog_deadline_at: None,
            stop_sent_at: None,
            frozen_at: None,
            resumed_at: None,
            resumed_by: None,
            state_after_resume: None,
            process_gone_after_resume: false,
            note: None,
        };
        ledger.write(&files.ledger).unwrap();
        let healed = heal_unfinished(dir.path()).unwrap();
        assert_eq!(healed.len(), 1);
        assert_eq!(healed[0].resumed_by, Some(ResumedBy::LaterRun));
        assert_ne!(read_stat(s.pid()).unwrap().unwrap().state, 'T');
        assert_eq!(FreezeLedger::read(&files.ledger).unwrap().status, "resumed");
        // A second look finds nothing left to heal.
        assert!(heal_unfinished(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn files_derive_from_the_ledger_name() {
        let f = FreezeFiles::new(Path::new("/w/faults"), "06-freeze");
        assert_eq!(f.ledger, PathBuf::from("/w/faults/06-freeze.json"));
        assert_eq!(f.report, PathBuf::from("/w/faults/06-freeze.watchdog.json"));
        assert_eq!(f.log, PathBuf::from("/w/faults/06-freeze.watchdog.log"));
    }
}
