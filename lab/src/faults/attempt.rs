//! What both faults share: the **attempt** (one try at one fault, with an id), the locks that keep
//! attempts apart, the identity of a process (PID + start time), the best-effort log and record
//! writes of the detached healers, and the hardening a healer gives itself.
//!
//! Vocabulary (one word per concept, in both faults):
//! - **attempt**: one fault started by one act run; [`AttemptId`] `<kind>-<act:02>-<UTC>-<runner pid>`,
//!   e.g. `freeze-05-20261130T174500.123Z-4242`. Its files live in `<workdir>/faults/<attempt id>/`.
//! - **runner**: the `act N` process that asks for the fault.
//! - **healer**: the detached process that owns the fault's undoing (the freeze healer sends
//!   SIGSTOP *and* SIGCONT; the scale healer, the "healer", restores the replicas).
//! - **heal**: undoing an unfinished attempt's fault from a later command (`heal`, `inspect`,
//!   every `act`), recorded in the attempt's `heal.json`.
//! - **start ticks**: a process's start time, clock ticks since boot (`/proc/PID/stat` field 22);
//!   with the PID it names one process ([`ProcessRef`]).
//!
//! Locks ([`Lock`], `flock(2)` exclusive, non-blocking; refused with who holds it):
//! - the **work-dir lock** `<workdir>/.lock`, held by `act`, `inspect` and `heal` for their whole
//!   run, so two acts in one work dir never overlap (a second `act 5` is refused, it does not heal
//!   the first one's live freeze);
//! - the **target lock** `<lock dir>/kca-webhook-lab.<target key>.lock` (lock dir `/run/kca-webhook-lab`, or
//!   `$KCA_LAB_LOCK_DIR`, either opened as [`open_lock_dir`] says), held by the healer from before the fault until it has undone it, so no
//!   second attempt on the same container or Deployment can start while an earlier healer lives.
//!
//! A lock file holds its holder as JSON ([`Holder`]: pid, start ticks, attempt id, what, since)
//! and is removed by its holder on release (the holder re-checks after locking that the path still
//! names the file it locked, so removal never lets two holders in).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::error::LabError;
use crate::faults::process::ProcessRef;
use crate::faults::records::now_rfc3339;
use crate::files::{Owner, TrustedDir};
use crate::workdir::Workdir;

/// Environment variable overriding the target locks' directory (default [`DEFAULT_LOCK_DIR`]).
pub const LOCK_DIR_ENV: &str = "KCA_LAB_LOCK_DIR";
/// Where target locks live by default: a directory only root can write (created `0700`; not the
/// world-writable `/run/lock`, where any user could plant a file under a lock's name).
pub const DEFAULT_LOCK_DIR: &str = "/run/kca-webhook-lab";
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

/// The files of one attempt, `<workdir>/faults/<attempt id>/`, the same names for both faults:
/// `plan.json` (runner, before the healer starts), `ledger.json` (runner), `healer.json` (the
/// healer's report, written only by the healer), `healer.log` (the healer's log) and `heal.json`
/// (a later command's heal). No two processes write the same file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFiles {
    /// `<faults>/<attempt id>/`.
    pub dir: PathBuf,
}

impl AttemptFiles {
    /// The files of `attempt` under `faults_root`.
    pub fn new(faults_root: &Path, attempt: &AttemptId) -> AttemptFiles {
        AttemptFiles {
            dir: faults_root.join(&attempt.0),
        }
    }
    /// Makes a new attempt's directory under `faults_root` (made absolute: the healer runs with
    /// `/` as its working directory), `0700` like any directory it has to create on the way:
    /// `faults_root` is opened by the trusted walk ([`TrustedDir::open`]) and the attempt's
    /// directory made relative to its fd (`mkdirat`).
    ///
    /// Errors: [`LabError::Io`] naming the directory (it exists already, or cannot be made).
    pub fn create(faults_root: &Path, attempt: &AttemptId) -> Result<AttemptFiles, LabError> {
        let root = std::path::absolute(faults_root).map_err(LabError::io(faults_root))?;
        let dir =
            TrustedDir::open(&root, Some(0o700), Owner::Euid).map_err(crate::workdir::refused)?;
        let files = AttemptFiles::new(&root, attempt);
        rustix::fs::mkdirat(
            dir.fd(),
            attempt.0.as_str(),
            rustix::fs::Mode::from_raw_mode(0o700),
        )
        .map_err(|e| LabError::io(&files.dir)(e.into()))?;
        Ok(files)
    }
    /// `plan.json`.
    pub fn plan(&self) -> PathBuf {
        self.dir.join("plan.json")
    }
    /// `ledger.json`.
    pub fn ledger(&self) -> PathBuf {
        self.dir.join("ledger.json")
    }
    /// `healer.json`, the healer's report. Scale attempts made before the one vocabulary named
    /// it `watcher.json`; [`AttemptFiles::report_to_read`] finds either.
    pub fn report(&self) -> PathBuf {
        self.dir.join("healer.json")
    }
    /// The healer's report to read: `healer.json`, else the `watcher.json` of a scale attempt made
    /// before the one vocabulary (so a later heal still proves and stands down its healer).
    pub fn report_to_read(&self) -> PathBuf {
        let legacy = self.dir.join("watcher.json");
        if std::fs::symlink_metadata(self.report()).is_err()
            && std::fs::symlink_metadata(&legacy).is_ok()
        {
            legacy
        } else {
            self.report()
        }
    }
    /// `healer.log`.
    pub fn log(&self) -> PathBuf {
        self.dir.join("healer.log")
    }
    /// `heal.json`.
    pub fn heal(&self) -> PathBuf {
        self.dir.join("heal.json")
    }
    /// The attempt id the directory stands for (its name).
    pub fn attempt_name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
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
            self.process.pid, self.process.start_time_ticks, self.what, self.since
        )?;
        if let Some(a) = &self.attempt {
            write!(f, ", attempt {a}")?;
        }
        Ok(())
    }
}

/// An exclusive `flock(2)` lock on a file of a [`TrustedDir`], released (and the file removed,
/// relative to that directory's fd) on drop.
#[derive(Debug)]
pub struct Lock {
    dir: Arc<TrustedDir>,
    name: String,
    path: PathBuf,
    file: Option<Flock<File>>,
}

/// A lock that another process holds: its holder as its lock file says (`None` when the file
/// could not be read as a [`Holder`]) and that in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The holder, when the lock file names one.
    pub holder: Option<Holder>,
    /// The holder in words (or why it could not be read).
    pub text: String,
}

fn not_ours(path: &Path, why: String) -> LabError {
    LabError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, why),
    }
}

impl Lock {
    /// Takes the lock file `name` of `dir` for `holder` without waiting (`what` names the lock in
    /// errors).
    ///
    /// Errors: [`LabError::Busy`] naming the holder read from the file (or saying it could not be
    /// read); [`LabError::Io`] as [`Lock::try_acquire_in`].
    pub fn acquire_in(
        dir: &Arc<TrustedDir>,
        name: &str,
        holder: &Holder,
        what: &str,
    ) -> Result<Lock, LabError> {
        Lock::try_acquire_in(dir, name, holder)?.map_err(|held| LabError::Busy {
            what: format!("{what} ({})", dir.path().join(name).display()),
            holder: held.text,
        })
    }

    /// Like [`Lock::acquire_in`], but a lock held by another process is `Ok(Err(Held))`: the
    /// caller decides from its holder (the heal asks the target lock whose attempt holds it).
    /// The file is opened relative to `dir`'s fd (`O_CREAT | O_NOFOLLOW`, mode `0600`) and must
    /// be a regular file of the effective user with one link (a hard link to another file is
    /// refused).
    ///
    /// Errors: [`LabError::Io`] when the lock file cannot be opened or made (e.g. no space), or
    /// is not a single-link regular file of the effective user.
    pub fn try_acquire_in(
        dir: &Arc<TrustedDir>,
        name: &str,
        holder: &Holder,
    ) -> Result<Result<Lock, Held>, LabError> {
        use rustix::fs::{AtFlags, Mode, OFlags};
        let path = dir.path().join(name);
        let euid = rustix::process::geteuid().as_raw();
        // Bounded: the file can be removed between open and flock by a releasing holder; retry.
        for _ in 0..20 {
            let fd = rustix::fs::openat(
                dir.fd(),
                name,
                OFlags::RDWR
                    | OFlags::CREATE
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| LabError::io(&path)(e.into()))?;
            let file = File::from(fd);
            let meta = file.metadata().map_err(LabError::io(&path))?;
            if !meta.is_file() || meta.uid() != euid {
                return Err(not_ours(
                    &path,
                    format!(
                        "the lock file is {} owned by uid {}, not a regular file of this process's effective uid {euid}: another user made it",
                        crate::files::kind_of(&meta),
                        meta.uid()
                    ),
                ));
            }
            if meta.nlink() != 1 {
                return Err(not_ours(
                    &path,
                    format!(
                        "the lock file has {} links, not one: it is also another file",
                        meta.nlink()
                    ),
                ));
            }
            let mut locked = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(l) => l,
                Err((file, nix::errno::Errno::EWOULDBLOCK)) => {
                    let mut text = String::new();
                    let _ = (&file)
                        .take(crate::files::RECORD_BOUND)
                        .read_to_string(&mut text);
                    let holder = serde_json::from_str::<Holder>(&text).ok();
                    let text = holder.as_ref().map(|h| h.to_string()).unwrap_or_else(|| {
                        format!("a process that has not written its name yet ({text:?})")
                    });
                    return Ok(Err(Held { holder, text }));
                }
                Err((_, e)) => return Err(LabError::io(&path)(std::io::Error::from(e))),
            };
            // The name must still be the file we locked (a releasing holder removes it).
            let same = match (
                locked.metadata(),
                rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW),
            ) {
                (Ok(a), Ok(b)) => a.dev() == b.st_dev && a.ino() == b.st_ino,
                _ => false,
            };
            if !same {
                continue;
            }
            let text = serde_json::to_string(holder).unwrap_or_default();
            let _ = locked.set_len(0);
            let _ = locked.rewind();
            let _ = locked.write_all(text.as_bytes());
            return Ok(Ok(Lock {
                dir: dir.clone(),
                name: name.to_owned(),
                path,
                file: Some(locked),
            }));
        }
        Ok(Err(Held {
            holder: None,
            text: "the lock file kept being replaced (20 tries)".into(),
        }))
    }

    /// The lock file (as messages name it).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Remove while still holding it (relative to the directory's fd), then unlock by closing.
        let _ = self.dir.remove(&self.name);
        drop(self.file.take());
    }
}

/// Takes the work-dir lock `<workdir>/.lock` for `what` (`act 5`, `inspect`, `heal`) in the work
/// directory opened once ([`Workdir::open`]: ancestors, the directory and its `faults/`,
/// `evidence/`, `diagnostics/` trusted; created `0755` when missing), relative to its fd.
///
/// Errors: [`LabError::UntrustedDir`] (nothing created or written), [`LabError::Busy`],
/// [`LabError::Io`].
pub fn lock_workdir(workdir: &Workdir, what: &str) -> Result<Lock, LabError> {
    let opened = workdir.open(true)?;
    let dir = opened
        .opened()
        .ok_or_else(|| LabError::io(workdir.root())(std::io::ErrorKind::NotFound.into()))?;
    Lock::acquire_in(
        dir,
        WORKDIR_LOCK,
        &Holder::me(what, None),
        &format!("the work directory {}", workdir.root().display()),
    )
}

/// Takes the work-dir lock like [`lock_workdir`], but only when the work directory exists: `None`
/// when it does not (nothing in it to protect, nothing to heal), so a command that only reads
/// (`inspect`, `heal`) never creates the directory. A command that fails creates nothing.
pub fn lock_workdir_if_exists(workdir: &Workdir, what: &str) -> Result<Option<Lock>, LabError> {
    if workdir.open(false)?.opened().is_none() {
        return Ok(None);
    }
    lock_workdir(workdir, what).map(Some)
}

/// The directory of target locks' path: `$KCA_LAB_LOCK_DIR`, else [`DEFAULT_LOCK_DIR`].
pub fn lock_dir() -> PathBuf {
    std::env::var_os(LOCK_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_LOCK_DIR))
}

/// The target locks' directory, opened by the work dir's walk ([`TrustedDir::open`]: no link,
/// ancestors root's or ours, the directory the effective user's and writable by no one else),
/// created `0700` when missing. `$KCA_LAB_LOCK_DIR` passes the same check or is refused.
///
/// Errors: [`LabError::UntrustedDir`] naming the directory and why, [`LabError::Io`].
pub fn open_lock_dir() -> Result<Arc<TrustedDir>, LabError> {
    TrustedDir::open(&lock_dir(), Some(0o700), Owner::Euid)
        .map(Arc::new)
        .map_err(crate::workdir::refused)
}

/// The target lock's file name for `key`. Characters outside `[A-Za-z0-9._-]` become `_`.
pub fn target_lock_name(key: &str) -> String {
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
    format!("kca-webhook-lab.{safe}.lock")
}

/// The target lock's path for `key` (`container-<CRI id>` for the freeze, `deployment-<uid>` for
/// the scale-down), as messages name it ([`target_lock_name`] in [`lock_dir`]).
pub fn target_lock_path(key: &str) -> PathBuf {
    lock_dir().join(target_lock_name(key))
}

/// Takes the target lock of `key` for a healer of `attempt`.
pub fn lock_target(key: &str, attempt: &AttemptId, what: &str) -> Result<Lock, LabError> {
    Lock::acquire_in(
        &open_lock_dir()?,
        &target_lock_name(key),
        &Holder::me(what, Some(attempt)),
        &format!("the fault target {key}"),
    )
}

/// Asks the target lock of `key` for `what` working on `attempt`: `Ok(Err(Held))` when another
/// process holds it (the heal then says whose it is).
pub fn ask_target(
    key: &str,
    attempt: &AttemptId,
    what: &str,
) -> Result<Result<Lock, Held>, LabError> {
    Lock::try_acquire_in(
        &open_lock_dir()?,
        &target_lock_name(key),
        &Holder::me(what, Some(attempt)),
    )
}

/// Whether the target lock of `key` provably has no holder: its directory opens trusted and holds
/// no file of that name (a holder keeps its file until it releases). For a heal whose lock file
/// cannot be made (no space, read-only): the resume goes ahead, since no healer can hold it.
pub fn target_lock_absent(key: &str) -> bool {
    open_lock_dir().is_ok_and(|d| !d.exists(&target_lock_name(key)))
}

/// Environment variable naming the `kca-webhook-lab` binary to re-exec for the healers
/// (set by `xtask` and the tests, whose own executable is not the lab tool).
pub const LAB_BIN_ENV: &str = "KCA_WEBHOOK_LAB_BIN";
/// The lab tool's binary name.
pub const LAB_BIN_NAME: &str = "kca-webhook-lab";
/// The flag naming a healer's attempt directory (`<lab> healer-freeze|healer-scale --attempt-dir
/// DIR`).
pub const ATTEMPT_DIR_FLAG: &str = "--attempt-dir";

static LAB_PROGRAM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Names the `kca-webhook-lab` binary for [`lab_program`] in this process (xtask and the tests,
/// whose own executable is not the lab tool). The first call wins; later calls are ignored.
/// Unlike setting [`LAB_BIN_ENV`], this is safe while other threads run (`std::env::set_var`
/// is not: Rust 2024 marks it `unsafe` for that reason).
pub fn set_lab_program(path: PathBuf) {
    let _ = LAB_PROGRAM.set(path);
}

/// Where the `kca-webhook-lab` binary is, for re-executing it as a healer: the path given to
/// [`set_lab_program`]; else `$KCA_WEBHOOK_LAB_BIN` when set; else the current executable when it is `kca-webhook-lab`;
/// else a `kca-webhook-lab` next to the current executable or one directory up (a test binary in
/// `target/debug/deps/` finds `target/debug/kca-webhook-lab`).
///
/// Errors: [`LabError::NotAvailable`] naming the places looked at.
pub fn lab_program() -> Result<PathBuf, LabError> {
    if let Some(p) = LAB_PROGRAM.get() {
        return if p.is_file() {
            Ok(p.clone())
        } else {
            Err(LabError::NotAvailable {
                what: format!("the lab program {} is not a file", p.display()),
            })
        };
    }
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
            "the {LAB_BIN_NAME} binary for the healer (set {LAB_BIN_ENV}; looked at {})",
            looked.join(", ")
        ),
    })
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
        let w = Workdir::new(dir.path());
        let first = lock_workdir(&w, "act 5").unwrap();
        let err = lock_workdir(&w, "act 5").unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LabError::Busy { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())) && text.contains("act 5"),
            "{text}"
        );
        drop(first);
        assert!(!dir.path().join(WORKDIR_LOCK).exists());
        let again = lock_workdir(&w, "heal").unwrap();
        drop(again);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(WORKDIR_LOCK)).unwrap();
        let err = lock_workdir(&Workdir::new(dir.path()), "act 5").unwrap_err();
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
}
