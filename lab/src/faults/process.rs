//! Process primitives of both faults: a process named by PID and start ticks ([`ProcessRef`]),
//! pinned by a pidfd ([`PinnedProcess`]: every signal goes through it, never by bare PID), and
//! the proofs the heal needs before it signals anything (`docs/faults.md`, "Ownership"):
//!
//! - a **target** is the pinned process whose `/proc/PID/cgroup` names the plan's CRI container id
//!   exactly, as one path's last component ([`require_container`]; never a substring);
//! - a **healer** is the lab binary (`/proc/PID/exe`) running this attempt's helper subcommand for
//!   this attempt's directory (`/proc/PID/cmdline`) ([`prove_healer`]);
//! - a healer is stood down with SIGTERM and SIGCONT (a stopped healer reads the SIGTERM once
//!   continued) and SIGKILL after [`HEALER_EXIT_BOUND`] ([`stand_down`]), so its target lock is
//!   released.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::faults::records::now_rfc3339;
use crate::files::{PROC_BOUND, read_regular};
use crate::wait::{Check, Wait, WaitError};

/// Bound on waiting for a signalled healer to exit before it is killed (and again after the kill).
pub const HEALER_EXIT_BOUND: Duration = Duration::from_secs(3);

/// One process named by PID and start ticks (so a later process with the same PID is not it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    /// PID (in this tool's PID namespace).
    pub pid: i32,
    /// Start time, clock ticks since boot (`/proc/PID/stat` field 22).
    #[serde(rename = "start_ticks")]
    pub start_time_ticks: u64,
}

impl ProcessRef {
    /// This process.
    pub fn myself() -> ProcessRef {
        let pid = std::process::id() as i32;
        ProcessRef {
            pid,
            start_time_ticks: read_stat(pid)
                .ok()
                .flatten()
                .map(|s| s.start_time_ticks)
                .unwrap_or(0),
        }
    }

    /// The process `pid` as it is now (`None`: no such process).
    pub fn of(pid: i32) -> Option<ProcessRef> {
        read_stat(pid).ok().flatten().map(|s| ProcessRef {
            pid,
            start_time_ticks: s.start_time_ticks,
        })
    }

    /// Whether this very process still exists and is not a zombie.
    pub fn is_alive(&self) -> bool {
        matches!(
            state_if_same(self.pid, self.start_time_ticks),
            Ok(Some(s)) if s != 'Z' && s != 'X'
        )
    }

    /// Sends `signal` to this process through a pidfd opened and re-checked against the start
    /// ticks (never by bare PID). `Ok(false)` when it is gone.
    pub fn signal(&self, signal: rustix::process::Signal) -> Result<bool, LabError> {
        match PinnedProcess::open(self.pid, self.start_time_ticks) {
            Ok(p) => p.signal(signal).map(|()| true),
            Err(LabError::FaultRefused { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// A process's `/proc/PID/stat` fields the freeze relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcStat {
    /// State letter (`R`, `S`, `D`, `T` stopped, `t`, `Z`, …), field 3.
    pub state: char,
    /// Start time in clock ticks since boot, field 22 (`procfs` `Stat::starttime`).
    #[serde(rename = "starttime")]
    pub start_time_ticks: u64,
}

/// Reads `/proc/PID/stat` (state and start ticks). `None` when there is no such process.
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
            start_time_ticks: s.starttime,
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

/// The state letter of the process `pid` **if** it is still the process started at
/// `start_time_ticks`; `None` when it is gone (exited, or the PID now belongs to another process).
pub fn state_if_same(pid: i32, start_time_ticks: u64) -> Result<Option<char>, LabError> {
    Ok(read_stat(pid)?
        .filter(|s| s.start_time_ticks == start_time_ticks)
        .map(|s| s.state))
}

/// A process pinned by a pidfd whose start ticks were re-checked after opening it.
#[derive(Debug)]
pub struct PinnedProcess {
    pid: i32,
    start_time_ticks: u64,
    fd: OwnedFd,
}

impl PinnedProcess {
    /// `pidfd_open(pid)`, then re-reads `/proc/PID/stat` and requires the start ticks to equal
    /// `expected_start_time_ticks` (the value read when the process was found).
    ///
    /// Errors: [`LabError::FaultRefused`] when the process is gone, or its start ticks differ
    /// (the PID now names another process).
    pub fn open(pid: i32, expected_start_time_ticks: u64) -> Result<PinnedProcess, LabError> {
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
            Some(s) if s.start_time_ticks != expected_start_time_ticks => {
                Err(LabError::FaultRefused {
                    reason: format!(
                        "process {pid} start time is {} clock ticks, expected {expected_start_time_ticks}: the pid names another process",
                        s.start_time_ticks
                    ),
                })
            }
            Some(_) => Ok(PinnedProcess {
                pid,
                start_time_ticks: expected_start_time_ticks,
                fd,
            }),
        }
    }

    /// The pinned PID.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The pinned process's start ticks.
    pub fn start_time_ticks(&self) -> u64 {
        self.start_time_ticks
    }

    /// Sends `signal` through the pidfd. `ESRCH` (the process is gone) is an error naming it.
    pub fn signal(&self, signal: Signal) -> Result<(), LabError> {
        pidfd_send_signal(&self.fd, signal).map_err(|e| LabError::FaultRefused {
            reason: format!("pidfd_send_signal({}, {signal:?}): {e}", self.pid),
        })
    }

    /// The current state letter, or `None` when the pinned process is gone.
    pub fn state(&self) -> Result<Option<char>, LabError> {
        state_if_same(self.pid, self.start_time_ticks)
    }

    /// Waits (bounded by `bound`, polling every 10 ms) until `want(state)` holds; returns the last
    /// state seen (`None`: gone) and whether `want` held.
    pub fn wait_state(
        &self,
        bound: Duration,
        want: impl Fn(Option<char>) -> bool,
    ) -> Result<(Option<char>, bool), LabError> {
        let seen = Wait::new("a process state", bound, Duration::from_millis(10)).blocking(
            || {
                let s = self.state()?;
                Ok(if want(s) {
                    Check::Done(s)
                } else {
                    Check::NotYet(s)
                })
            },
            |_, _| {},
        );
        match seen {
            Ok(s) => Ok((s, true)),
            Err(WaitError::TimedOut(t)) => Ok((t.last, false)),
            Err(WaitError::Failed(e)) => Err(e),
        }
    }

    /// Sends SIGCONT and reads the state until it is no longer `T`, re-sending SIGCONT every
    /// 100 ms, bounded by `bound`. Never fails: a `/proc` read error counts as "unknown" and the
    /// loop goes on. Returns what it saw.
    pub fn resume_until_running(&self, bound: Duration) -> ResumeCheck {
        let start = Instant::now();
        let mut check = ResumeCheck {
            state_before: self.state().ok().flatten(),
            sent_at: now_rfc3339(),
            signal_result: String::new(),
            signals_sent: 0,
            state_after: None,
            gone: false,
            checked_ms: 0,
        };
        let mut last_sent = None::<Instant>;
        loop {
            if last_sent.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
                let r = self.signal(Signal::CONT);
                check.signals_sent += 1;
                if check.signal_result.is_empty() {
                    check.signal_result = match &r {
                        Ok(()) => "ok".into(),
                        Err(e) => e.to_string(),
                    };
                }
                last_sent = Some(Instant::now());
            }
            match self.state() {
                Ok(None) => {
                    check.gone = true;
                    check.state_after = None;
                    break;
                }
                Ok(Some(s)) => {
                    check.state_after = Some(s);
                    if s != 'T' && s != 't' {
                        break;
                    }
                }
                Err(_) => {}
            }
            if start.elapsed() >= bound {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        check.checked_ms = start.elapsed().as_millis() as u64;
        check
    }
}

/// What one resume saw: SIGCONT sent (and re-sent), the state read until no longer `T`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeCheck {
    /// State letter just before the first SIGCONT (`T`: the freeze was still on).
    pub state_before: Option<char>,
    /// When the first SIGCONT was sent, RFC 3339 UTC (ms).
    pub sent_at: String,
    /// The first `pidfd_send_signal` result, `ok` or the error.
    pub signal_result: String,
    /// How many SIGCONTs were sent.
    pub signals_sent: u32,
    /// The last state read (`None` with `gone`).
    pub state_after: Option<char>,
    /// Whether the process was gone.
    pub gone: bool,
    /// How long the state was read, ms.
    pub checked_ms: u64,
}

impl ResumeCheck {
    /// Whether the process is running again (or gone): the freeze is over.
    pub fn ended(&self) -> bool {
        self.gone || !matches!(self.state_after, Some('T') | Some('t'))
    }
}

/// The last component of each cgroup path in `text` (`/proc/PID/cgroup`), with a runtime's
/// `cri-containerd-`/`docker-`/`crio-` prefix and `.scope` suffix also offered without them.
fn cgroup_leaves(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let path = line.splitn(3, ':').nth(2).unwrap_or("");
        let leaf = path.rsplit('/').next().unwrap_or("");
        if leaf.is_empty() {
            continue;
        }
        out.push(leaf.to_owned());
        let bare = leaf.strip_suffix(".scope").unwrap_or(leaf);
        let bare = ["cri-containerd-", "docker-", "crio-"]
            .iter()
            .find_map(|p| bare.strip_prefix(p))
            .unwrap_or(bare);
        if bare != leaf {
            out.push(bare.to_owned());
        }
    }
    out
}

/// Requires `/proc/PID/cgroup` to name the CRI container `container_id` **exactly**: the last
/// component of one of its cgroup paths is the id (containerd/runc: `…/<id>` or
/// `…/cri-containerd-<id>.scope`). A substring never matches (`"/"` names no container). The PID
/// that CRI reported then means the same process in this tool's PID namespace.
///
/// Errors: [`LabError::FaultRefused`] quoting the cgroup file when no path ends with the id.
pub fn require_container(pid: i32, container_id: &str) -> Result<(), LabError> {
    let path = format!("/proc/{pid}/cgroup");
    let bytes = read_regular(Path::new(&path), PROC_BOUND).map_err(LabError::io(&path))?;
    let text = String::from_utf8_lossy(&bytes);
    let valid = !container_id.is_empty()
        && container_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid && cgroup_leaves(&text).iter().any(|l| l == container_id) {
        Ok(())
    } else {
        Err(LabError::FaultRefused {
            reason: format!(
                "{path} does not name container {container_id:?} as a cgroup path's last component (it says {:?}): the pid is not that container's process in this PID namespace",
                text.trim()
            ),
        })
    }
}

/// Proves that the live process `p` is this attempt's healer before anything signals it: it is
/// the lab binary `lab` (`/proc/PID/exe` is the same path — a rebuilt binary shows
/// ` (deleted)` — or the same inode) running `<lab> <subcommand> <flag> <dir>`
/// where `<dir>` is `attempt_dir` (same directory inode; a relative one is taken from the
/// process's cwd). Returns the process pinned by a pidfd (start ticks re-checked).
///
/// Errors: why it is not (gone, another binary, another subcommand or directory), in words.
pub fn prove_healer(
    p: &ProcessRef,
    lab: &Path,
    subcommand: &str,
    flag: &str,
    attempt_dir: &Path,
) -> Result<PinnedProcess, String> {
    let pinned = PinnedProcess::open(p.pid, p.start_time_ticks).map_err(|e| e.to_string())?;
    let exe_link = format!("/proc/{}/exe", p.pid);
    let exe = std::fs::read_link(&exe_link).map_err(|e| format!("{exe_link}: {e}"))?;
    let lab = std::fs::canonicalize(lab).map_err(|e| format!("{}: {e}", lab.display()))?;
    let exe_text = exe.to_string_lossy();
    let same_path =
        exe_text.strip_suffix(" (deleted)").unwrap_or(&exe_text) == lab.to_string_lossy();
    let same_inode = match (std::fs::metadata(&exe_link), std::fs::metadata(&lab)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    if !same_path && !same_inode {
        return Err(format!(
            "pid {} runs {} (not the lab binary {})",
            p.pid,
            exe.display(),
            lab.display()
        ));
    }
    let cmdline_path = format!("/proc/{}/cmdline", p.pid);
    let raw = read_regular(Path::new(&cmdline_path), PROC_BOUND)
        .map_err(|e| format!("{cmdline_path}: {e}"))?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let ok_args = args.len() == 4 && args[1] == subcommand && args[2] == flag;
    let dir_matches = ok_args && {
        let given = PathBuf::from(&args[3]);
        let given = if given.is_absolute() {
            given
        } else {
            PathBuf::from(format!("/proc/{}/cwd", p.pid)).join(given)
        };
        match (std::fs::metadata(&given), std::fs::metadata(attempt_dir)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    };
    if !dir_matches {
        return Err(format!(
            "pid {} runs {args:?}, not `{subcommand} {flag} {}`",
            p.pid,
            attempt_dir.display()
        ));
    }
    // The pidfd was opened before the checks and the start ticks re-checked: still that process.
    match pinned.state() {
        Ok(Some(_)) => Ok(pinned),
        _ => Err(format!("pid {} exited while it was examined", p.pid)),
    }
}

fn wait_exit(p: &PinnedProcess, bound: Duration) -> bool {
    Wait::new("the healer to exit", bound, Duration::from_millis(10))
        .blocking(
            || -> Result<Check<(), ()>, std::convert::Infallible> {
                Ok(match p.state() {
                    Ok(Some(s)) if s != 'Z' && s != 'X' => Check::NotYet(()),
                    _ => Check::Done(()),
                })
            },
            |_, _| {},
        )
        .is_ok()
}

/// Stands a proven healer down: SIGTERM then SIGCONT through its pidfd (a SIGSTOPped healer
/// reads its pending SIGTERM once continued: it resumes its target, records and exits, releasing
/// the target lock), waits [`HEALER_EXIT_BOUND`], and sends SIGKILL if it still lives. Returns
/// what happened: `sigterm-sent, exited`, `sigterm-sent, killed after N ms`, `gone`, or the error.
pub fn stand_down(healer: &PinnedProcess) -> String {
    let t0 = Instant::now();
    if let Err(e) = healer.signal(Signal::TERM) {
        return if matches!(healer.state(), Ok(None)) {
            "gone".into()
        } else {
            format!("sigterm failed: {e}")
        };
    }
    let _ = healer.signal(Signal::CONT);
    if wait_exit(healer, HEALER_EXIT_BOUND) {
        return "sigterm-sent, exited".into();
    }
    let waited = t0.elapsed().as_millis();
    let killed = healer.signal(Signal::KILL);
    if wait_exit(healer, HEALER_EXIT_BOUND) {
        format!("sigterm-sent, killed after {waited} ms")
    } else {
        format!("sigterm-sent, sigkill {killed:?}, still-running after {waited} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_container_is_matched_exactly_never_as_a_substring() {
        let me = std::process::id() as i32;
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(require_container(me, "no-such-container-0123456789").is_err());
        assert!(require_container(me, "").is_err());
        assert!(
            require_container(me, "/").is_err(),
            "every cgroup path contains /"
        );
        let leaf = text
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .filter(|p| p.len() > 3)
            .max_by_key(|p| p.len());
        if let Some(leaf) = leaf {
            // The whole last component is the id; a part of it is not.
            require_container(me, leaf).unwrap();
            assert!(require_container(me, &leaf[1..]).is_err());
            assert!(require_container(me, &leaf[..leaf.len() - 1]).is_err());
        }
        assert_eq!(
            cgroup_leaves("0::/kubepods/pod1/cri-containerd-abc123.scope\n1:cpu:/\n"),
            vec![
                "cri-containerd-abc123.scope".to_owned(),
                "abc123".to_owned()
            ]
        );
    }

    #[test]
    fn process_ref_tells_a_live_process_from_a_gone_one() {
        let me = ProcessRef::myself();
        assert!(me.is_alive());
        let other = ProcessRef {
            pid: me.pid,
            start_time_ticks: me.start_time_ticks + 1,
        };
        assert!(!other.is_alive());
    }

    #[test]
    fn a_process_that_is_not_the_lab_binary_is_not_a_healer() {
        let mut sleep = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let p = ProcessRef::of(sleep.id() as i32).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let lab = std::env::current_exe().unwrap();
        let err = prove_healer(&p, &lab, "healer-freeze", "--attempt-dir", dir.path()).unwrap_err();
        let _ = sleep.kill();
        let _ = sleep.wait();
        assert!(err.contains("not the lab binary"), "{err}");
    }
}
