//! Starting daemons detached inside the node's network namespace, and stopping them by PID after
//! checking (through a pidfd and `/proc/<pid>/stat`'s start time) that the PID is still ours.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use nix::sched::{CloneFlags, setns};
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::daemons::DaemonSpec;
use super::netns::netns_path;

/// The record of a started daemon and the `/proc` read that checks it, defined with
/// `cluster.json` (the lower module) and named here too, where the tests look for them.
pub use super::record::{ProcRecord, proc_stat};

/// Starts `spec` detached: a new session (own process group, no controlling terminal), stdin from
/// /dev/null, stdout and stderr appended to its log, inside network namespace `netns` (setns of
/// CLONE_NEWNET only, never `ip netns exec`, which would also remount /sys and hide the cgroup
/// hierarchy from kubelet: `docs/embedded-node.md`, pitfall 1; ip-netns(8)).
///
/// Prints the command line first. No PR_SET_PDEATHSIG: the daemons outlive `cluster up`, and a
/// fixture stops them explicitly.
pub fn spawn(spec: &DaemonSpec, netns: &str) -> Result<ProcRecord> {
    let mut argv = vec![spec.binary.display().to_string()];
    argv.extend(spec.args.iter().cloned());
    crate::status::line(&format!("   running {}", argv.join(" ")));
    if let Some(dir) = spec.log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.log)
        .with_context(|| format!("opening {}", spec.log.display()))?;
    let log2 = log.try_clone().context("duplicating the log file handle")?;
    let ns_path = netns_path(netns);
    let ns = File::open(&ns_path)
        .with_context(|| format!("opening network namespace {}", ns_path.display()))?;
    let ns_fd = ns.as_raw_fd();
    let umask = spec.umask;
    let mut cmd = Command::new(&spec.binary);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("HOME", "/root")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: only async-signal-safe syscalls (setsid, setns, umask) run between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid().map_err(std::io::Error::from)?;
            setns(BorrowedFd::borrow_raw(ns_fd), CloneFlags::CLONE_NEWNET)
                .map_err(std::io::Error::from)?;
            if let Some(m) = umask {
                nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(m));
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}, see {}", spec.name, spec.log.display()))?;
    drop(ns);
    let pid = child.id() as i32;
    let (_, start_time_ticks) = proc_stat(pid).with_context(|| {
        format!(
            "{} (pid {pid}) exited at once, see {}",
            spec.name,
            spec.log.display()
        )
    })?;
    Ok(ProcRecord {
        name: spec.name.to_string(),
        pid,
        start_time_ticks,
        log: spec.log.display().to_string(),
        argv,
    })
}

/// Reaps `pid` if it is our child and has exited (no-op otherwise).
fn reap(pid: i32) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    let _ = waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
}

/// Outcome of [`stop`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// It was already gone (or the PID now belongs to another process, which was left alone).
    AlreadyGone,
    /// It ended after SIGTERM.
    Terminated,
    /// It needed SIGKILL after `grace`.
    Killed,
}

/// Stops a recorded process: opens a pidfd, checks the start time again (so a reused PID is never
/// signalled), sends SIGTERM through the pidfd, waits up to `grace`, then SIGKILL.
pub fn stop(rec: &ProcRecord, grace: Duration) -> Result<Stopped> {
    reap(rec.pid);
    if !rec.alive() {
        return Ok(Stopped::AlreadyGone);
    }
    let Some(pid) = Pid::from_raw(rec.pid) else {
        bail!("invalid pid {}", rec.pid)
    };
    let fd = match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return Ok(Stopped::AlreadyGone),
        Err(e) => {
            return Err(e).with_context(|| format!("pidfd_open({}) for {}", rec.pid, rec.name));
        }
    };
    // The pidfd now pins this exact process; re-check that it is the one we started.
    if !rec.alive() {
        return Ok(Stopped::AlreadyGone);
    }
    pidfd_send_signal(&fd, Signal::TERM)
        .with_context(|| format!("sending SIGTERM to {} (pid {})", rec.name, rec.pid))?;
    if gone_within(rec, "SIGTERM", grace, Duration::from_millis(100)).is_ok() {
        return Ok(Stopped::Terminated);
    }
    let _ = pidfd_send_signal(&fd, Signal::KILL);
    gone_within(
        rec,
        "SIGKILL",
        Duration::from_secs(10),
        Duration::from_millis(50),
    )?;
    Ok(Stopped::Killed)
}

/// Waits (reaping it if it is our child) until the recorded process has ended after `signal`.
///
/// # Errors
/// [`lab::error::LabError::WaitTimedOut`] naming the process, the signal and its last state.
fn gone_within(rec: &ProcRecord, signal: &str, bound: Duration, tick: Duration) -> Result<()> {
    let w = lab::wait::Wait::new(
        format!("{} (pid {}) to end after {signal}", rec.name, rec.pid),
        bound,
        tick,
    );
    w.blocking(
        || -> Result<lab::wait::Check<(), String>, std::convert::Infallible> {
            reap(rec.pid);
            Ok(match proc_stat(rec.pid) {
                Some((state, st)) if st == rec.start_time_ticks && state != 'Z' => {
                    lab::wait::Check::NotYet(format!("still running, state {state}"))
                }
                _ => lab::wait::Check::Done(()),
            })
        },
        |_, _| {},
    )
    .map_err(|e| match e {
        lab::wait::WaitError::TimedOut(t) => lab::error::LabError::from(t).into(),
        lab::wait::WaitError::Failed(never) => match never {},
    })
}

/// Last `n` lines of a log file (for error messages).
pub fn log_tail(path: &str, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
