//! What both faults share: the **attempt** (one try at one fault, with an id), the locks that keep
//! attempts apart, the identity of a process (PID + start time), the best-effort log and record
//! writes of the detached healers, and the hardening a healer gives itself.
//!
//! Vocabulary (one word per concept, in both faults):
//! - **attempt**: one fault started by one act run; [`AttemptId`] `<kind>-<act:02>-<UTC>-<runner pid>`,
//!   e.g. `freeze-05-20261130T174500.123Z-4242`. Its files live in `<workdir>/faults/<attempt id>/`.
//! - **runner**: the `act N` process that asks for the fault.
//! - **healer**: the detached process that owns the fault's undoing (the freeze healer sends
//!   SIGSTOP *and* SIGCONT; the scale healer, the "recovery watcher", restores the replicas).
//! - **heal**: undoing an unfinished attempt's fault from a later command (`heal`, `inspect`,
//!   every `act`), recorded in the attempt's `heal.json`.
//! - **start ticks**: a process's start time, clock ticks since boot (`/proc/PID/stat` field 22);
//!   with the PID it names one process ([`ProcessRef`]).
//!
//! Locks ([`Lock`], `flock(2)` exclusive, non-blocking; refused with who holds it):
//! - the **work-dir lock** `<workdir>/.lock`, held by `act`, `inspect` and `heal` for their whole
//!   run, so two acts in one work dir never overlap (a second `act 5` is refused, it does not heal
//!   the first one's live freeze);
//! - the **target lock** `<lock dir>/kca-webhook-lab.<target key>.lock` (lock dir `/run/lock`, or
//!   `$KCA_LAB_LOCK_DIR`), held by the healer from before the fault until it has undone it, so no
//!   second attempt on the same container or Deployment can start while an earlier healer lives.
//!
//! A lock file holds its holder as JSON ([`Holder`]: pid, start ticks, attempt id, what, since)
//! and is removed by its holder on release (the holder re-checks after locking that the path still
//! names the file it locked, so removal never lets two holders in).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// Environment variable overriding the target locks' directory (default [`DEFAULT_LOCK_DIR`]).
pub const LOCK_DIR_ENV: &str = "KCA_LAB_LOCK_DIR";
/// Where target locks live by default (FHS: `/run/lock` for lock files; a tmpfs).
pub const DEFAULT_LOCK_DIR: &str = "/run/lock";
/// The work-dir lock's file name.
pub const WORKDIR_LOCK: &str = ".lock";

/// The two faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Lab B: SIGSTOP of one process, SIGCONT at a deadline.
    Freeze,
    /// Lab A: the admission controller Deployment scaled to 0, restored at a deadline.
    Scale,
}

impl FaultKind {
    /// `freeze` or `scale` (the attempt id's prefix).
    pub fn word(self) -> &'static str {
        match self {
            FaultKind::Freeze => "freeze",
            FaultKind::Scale => "scale",
        }
    }
}

/// One attempt's id: `<kind>-<act:02>-<%Y%m%dT%H%M%S%.3fZ>-<runner pid>`. Unique per runner
/// process and millisecond; used as the attempt's directory name and passed to its healer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AttemptId(pub String);

impl AttemptId {
    /// A new id for `kind` in act `act`, now, for this process.
    pub fn new(kind: FaultKind, act: u8) -> AttemptId {
        AttemptId(format!(
            "{}-{act:02}-{}-{}",
            kind.word(),
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            std::process::id()
        ))
    }

    /// The kind named by the id's prefix (`None` for a directory that is not an attempt's).
    pub fn kind(&self) -> Option<FaultKind> {
        if self.0.starts_with("freeze-") {
            Some(FaultKind::Freeze)
        } else if self.0.starts_with("scale-") {
            Some(FaultKind::Scale)
        } else {
            None
        }
    }
}

impl std::fmt::Display for AttemptId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `<workdir>/faults`: every attempt's directory is below it.
pub fn faults_root(workdir: &Path) -> PathBuf {
    workdir.join("faults")
}

/// One process named by PID and start ticks (so a later process with the same PID is not it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    /// PID (in this tool's PID namespace).
    pub pid: i32,
    /// Start time, clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
}

impl ProcessRef {
    /// This process.
    pub fn myself() -> ProcessRef {
        let pid = std::process::id() as i32;
        ProcessRef {
            pid,
            start_ticks: crate::faults::freeze::read_stat(pid)
                .ok()
                .flatten()
                .map(|s| s.starttime)
                .unwrap_or(0),
        }
    }

    /// The process `pid` as it is now (`None`: no such process).
    pub fn of(pid: i32) -> Option<ProcessRef> {
        crate::faults::freeze::read_stat(pid)
            .ok()
            .flatten()
            .map(|s| ProcessRef {
                pid,
                start_ticks: s.starttime,
            })
    }

    /// Whether this very process still exists and is not a zombie.
    pub fn is_alive(&self) -> bool {
        matches!(
            crate::faults::freeze::state_if_same(self.pid, self.start_ticks),
            Ok(Some(s)) if s != 'Z' && s != 'X'
        )
    }

    /// Sends `signal` to this process through a pidfd opened and re-checked against the start
    /// ticks (never by bare PID). `Ok(false)` when it is gone.
    pub fn signal(&self, signal: rustix::process::Signal) -> Result<bool, LabError> {
        match crate::faults::freeze::PinnedProcess::open(self.pid, self.start_ticks) {
            Ok(p) => p.signal(signal).map(|()| true),
            Err(LabError::FaultRefused { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Who holds a lock, as written in the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The holding process.
    pub process: ProcessRef,
    /// The attempt it works for, if any.
    pub attempt: Option<AttemptId>,
    /// What it is doing, e.g. `act 5`, `heal`, `freeze healer`.
    pub what: String,
    /// Since when, RFC 3339 UTC (ms).
    pub since: String,
}

impl Holder {
    /// This process doing `what` for `attempt`.
    pub fn me(what: impl Into<String>, attempt: Option<&AttemptId>) -> Holder {
        Holder {
            process: ProcessRef::myself(),
            attempt: attempt.cloned(),
            what: what.into(),
            since: now_rfc3339(),
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "pid {} (start ticks {}) running {} since {}",
            self.process.pid, self.process.start_ticks, self.what, self.since
        )?;
        if let Some(a) = &self.attempt {
            write!(f, ", attempt {a}")?;
        }
        Ok(())
    }
}

/// An exclusive `flock(2)` lock on a file, released (and the file removed) on drop.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    file: Option<Flock<File>>,
}

impl Lock {
    /// Takes the lock at `path` for `holder` without waiting (`what` names the lock in errors).
    ///
    /// Errors: [`LabError::Busy`] naming the holder read from the file (or saying it could not be
    /// read); [`LabError::Io`] when the file cannot be opened (the symlink at `path` is refused:
    /// `O_NOFOLLOW`).
    pub fn acquire(path: &Path, holder: &Holder, what: &str) -> Result<Lock, LabError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(LabError::io(dir))?;
        }
        // Bounded: the file can be removed between open and flock by a releasing holder; retry.
        for _ in 0..20 {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .map_err(LabError::io(path))?;
            let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(l) => l,
                Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let holder = serde_json::from_str::<Holder>(&text)
                        .map(|h| h.to_string())
                        .unwrap_or_else(|_| {
                            format!("a process that has not written its name yet ({text:?})")
                        });
                    return Err(LabError::Busy {
                        what: format!("{what} ({})", path.display()),
                        holder,
                    });
                }
                Err((_, e)) => {
                    return Err(LabError::Io {
                        path: path.to_path_buf(),
                        source: std::io::Error::from(e),
                    });
                }
            };
            // The path must still name the file we locked (a releasing holder removes it).
            let same = match (locked.metadata(), std::fs::symlink_metadata(path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if !same {
                continue;
            }
            let text = serde_json::to_string(holder).unwrap_or_default();
            let _ = locked.set_len(0);
            let _ = locked.rewind();
            let _ = locked.write_all(text.as_bytes());
            return Ok(Lock {
                path: path.to_path_buf(),
                file: Some(locked),
            });
        }
        Err(LabError::Busy {
            what: format!("{what} ({})", path.display()),
            holder: "the lock file kept being replaced (20 tries)".into(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove while still holding it, then unlock by closing.
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// Takes the work-dir lock `<workdir>/.lock` for `what` (`act 5`, `inspect`, `heal`).
pub fn lock_workdir(workdir: &Path, what: &str) -> Result<Lock, LabError> {
    Lock::acquire(
        &workdir.join(WORKDIR_LOCK),
        &Holder::me(what, None),
        &format!("the work directory {}", workdir.display()),
    )
}

/// Takes the work-dir lock like [`lock_workdir`], but only when the work directory exists: `None`
/// when it does not (nothing in it to protect, nothing to heal), so a command that only reads
/// (`inspect`, `heal`) never creates the directory. A command that fails creates nothing.
pub fn lock_workdir_if_exists(workdir: &Path, what: &str) -> Result<Option<Lock>, LabError> {
    match std::fs::symlink_metadata(workdir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => lock_workdir(workdir, what).map(Some),
    }
}

/// The directory of target locks: `$KCA_LAB_LOCK_DIR`, else `/run/lock`.
pub fn lock_dir() -> PathBuf {
    std::env::var_os(LOCK_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LOCK_DIR))
}

/// The target lock's path for `key` (`container-<CRI id>` for the freeze, `deployment-<uid>` for
/// the scale-down). Characters outside `[A-Za-z0-9._-]` become `_`.
pub fn target_lock_path(key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    lock_dir().join(format!("kca-webhook-lab.{safe}.lock"))
}

/// Takes the target lock of `key` for a healer of `attempt`.
pub fn lock_target(key: &str, attempt: &AttemptId, what: &str) -> Result<Lock, LabError> {
    Lock::acquire(
        &target_lock_path(key),
        &Holder::me(what, Some(attempt)),
        &format!("the fault target {key}"),
    )
}

/// Now, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Writes `value` as pretty JSON to `path` atomically (temporary file in the same directory,
/// fsync, rename, directory fsync), so a reader never sees half a file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), LabError> {
    let dir = path.parent().unwrap_or(Path::new("."));
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
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Reads one JSON file of an attempt or a fault directory (a plan, ledger, record).
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LabError> {
    let bytes = std::fs::read(path).map_err(LabError::io(path))?;
    serde_json::from_slice(&bytes).map_err(|e| LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("parsing: {e}")),
    })
}

/// A healer's log: lines appended to a file opened without following symlinks. Every write is
/// best-effort (a full disk or a closed file never stops a heal; nothing is printed on stdio).
#[derive(Debug)]
pub struct HealerLog(Option<File>);

impl HealerLog {
    /// Opens (creates) `path` for appending; on failure the log is silent.
    pub fn open(path: &Path) -> HealerLog {
        HealerLog(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .ok(),
        )
    }

    /// Appends `<now> <who>[<pid>]: msg`, ignoring any error.
    pub fn line(&mut self, who: &str, msg: impl AsRef<str>) {
        if let Some(f) = self.0.as_mut() {
            let _ = writeln!(
                f,
                "{} {who}[{}]: {}",
                now_rfc3339(),
                std::process::id(),
                msg.as_ref()
            );
        }
    }
}

/// What a healer did to protect itself at start (recorded in its report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Hardening {
    /// `/proc/self/oom_score_adj` after lowering it as far as allowed.
    pub oom_score_adj: Option<i32>,
    /// Session id after `setsid` (equal to the healer's pid: it leads its own session and group).
    pub session: Option<i32>,
    /// The healer's cgroup lines (`/proc/self/cgroup`); it stays in the runner's cgroup (leaving
    /// it would mean creating a cgroup on the host, which the lab does not do).
    pub cgroup: Option<String>,
}

/// Lowers this process's `oom_score_adj` as far as the kernel allows (-1000 needs
/// CAP_SYS_RESOURCE; without it the value cannot go below the current one) and reports the
/// session and cgroup.
pub fn harden() -> Hardening {
    for v in [-1000, -999, -500, 0] {
        if std::fs::write("/proc/self/oom_score_adj", v.to_string()).is_ok() {
            break;
        }
    }
    Hardening {
        oom_score_adj: std::fs::read_to_string("/proc/self/oom_score_adj")
            .ok()
            .and_then(|t| t.trim().parse().ok()),
        session: nix::unistd::getsid(None).ok().map(|p| p.as_raw()),
        cgroup: std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .map(|t| t.trim().replace('\n', "; ")),
    }
}

/// Requires `/proc/PID/cgroup` to name the CRI container `container_id` (the containerd/runc
/// cgroup path ends with the container id, e.g. `…/cri-containerd-<id>.scope` or `…/<id>`): the
/// PID that CRI reported then means the same process in this tool's PID namespace.
///
/// Errors: [`LabError::FaultRefused`] quoting the cgroup file when the id is not in it.
pub fn require_cgroup_names(pid: i32, container_id: &str) -> Result<(), LabError> {
    let path = format!("/proc/{pid}/cgroup");
    let text = std::fs::read_to_string(&path).map_err(LabError::io(&path))?;
    if !container_id.is_empty() && text.contains(container_id) {
        Ok(())
    } else {
        Err(LabError::FaultRefused {
            reason: format!(
                "{path} does not name container {container_id} (it says {:?}): the pid from CRI is not that container's process in this PID namespace",
                text.trim()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_ids_name_kind_act_and_runner() {
        let id = AttemptId::new(FaultKind::Freeze, 5);
        assert!(id.0.starts_with("freeze-05-"), "{id}");
        assert!(id.0.ends_with(&format!("-{}", std::process::id())), "{id}");
        assert_eq!(id.kind(), Some(FaultKind::Freeze));
        assert_eq!(
            AttemptId::new(FaultKind::Scale, 5).kind(),
            Some(FaultKind::Scale)
        );
        assert_eq!(AttemptId("05-freeze.json".into()).kind(), None);
    }

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_workdir(dir.path(), "act 5").unwrap();
        let err = lock_workdir(dir.path(), "act 5").unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LabError::Busy { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())) && text.contains("act 5"),
            "{text}"
        );
        drop(first);
        assert!(!dir.path().join(WORKDIR_LOCK).exists());
        let again = lock_workdir(dir.path(), "heal").unwrap();
        drop(again);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(WORKDIR_LOCK)).unwrap();
        let err = lock_workdir(dir.path(), "act 5").unwrap_err();
        assert!(matches!(err, LabError::Io { .. }), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn target_lock_paths_are_sanitised() {
        let p = target_lock_path("deployment-a/b c");
        assert!(
            p.to_string_lossy()
                .ends_with("kca-webhook-lab.deployment-a_b_c.lock"),
            "{}",
            p.display()
        );
    }

    #[test]
    fn cgroup_check_needs_the_container_id() {
        let me = std::process::id() as i32;
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(require_cgroup_names(me, "no-such-container-0123456789").is_err());
        assert!(require_cgroup_names(me, "").is_err());
        // A non-root path component of our own cgroup is found.
        if let Some(part) = text
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .find(|p| p.len() > 3)
        {
            require_cgroup_names(me, part).unwrap();
        }
    }

    #[test]
    fn process_ref_tells_a_live_process_from_a_gone_one() {
        let me = ProcessRef::myself();
        assert!(me.is_alive());
        let other = ProcessRef {
            pid: me.pid,
            start_ticks: me.start_ticks + 1,
        };
        assert!(!other.is_alive());
    }
}
