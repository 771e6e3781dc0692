//! The work directory: where the student's input files live and where acts write `evidence/NN.json`.
//!
//! Layout (default root `/root/kca-webhook`, overridden by `--workdir` or `KCA_WEBHOOK_DIR`):
//!
//! ```text
//! <root>/scope.json, policy.json, …      student inputs: read only, never written by the tool
//! <root>/evidence/01.json … 08.json      one per act; final once written (completed or interrupted)
//! <root>/evidence/NN.partial.json        progress of a running act (see below)
//! ```
//!
//! **Invariants.**
//! - Evidence is written atomically: a temporary file in the same directory, `fsync`, then a
//!   no-clobber rename (link-based, so an existing `NN.json` is never replaced), then `fsync` of the
//!   directory.
//! - A final `evidence/NN.json` is never rewritten: [`Workdir::check_can_run`] refuses with
//!   [`LabError::EvidenceExists`], whether the act completed or was interrupted. An interrupted
//!   act's results are uncertain: the student downloads its raw data and reproduces in a fresh lab.
//! - An act may save its progress at any time with [`Workdir::save_progress`] (status forced to
//!   `interrupted`). If the runner dies before [`Workdir::write_evidence`], the next
//!   [`Workdir::check_can_run`] turns that partial file into the final `NN.json` marked
//!   `interrupted`, so partial raw data is never lost and the act is not silently re-run.
//! - This module has no function that writes a student input file.

use std::path::{Path, PathBuf};

use crate::digest;
use crate::error::LabError;
use crate::evidence::{ActStatus, Evidence, Lab};
use crate::files::{DirRefused, Owner, TrustedDir};
use crate::inputs::InputFile;

/// A directory the walk refused, as the lab's error.
pub fn refused(e: DirRefused) -> LabError {
    match e {
        DirRefused::Missing(path) => LabError::Io {
            path,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        },
        DirRefused::Untrusted { path, why } => LabError::UntrustedDir { path, why },
        DirRefused::Io { path, source } => LabError::Io { path, source },
    }
}

/// Default work directory on a lab VM.
pub const DEFAULT_WORKDIR: &str = "/root/kca-webhook";
/// Environment variable that overrides the default work directory (`--workdir` wins over it).
pub const WORKDIR_ENV: &str = "KCA_WEBHOOK_DIR";

/// A student input file read from the work directory, with its canonical digest.
#[derive(Debug, Clone)]
pub struct LoadedInput {
    /// Which input.
    pub file: InputFile,
    /// Where it was read.
    pub path: PathBuf,
    /// The parsed JSON (not yet validated: pass it to [`crate::inputs::validate`]).
    pub value: serde_json::Value,
    /// Canonical digest of `value` ([`crate::digest::digest_value`]).
    pub digest: String,
}

/// An evidence file read from the work directory.
#[derive(Debug, Clone)]
pub struct LoadedEvidence {
    /// Where it was read.
    pub path: PathBuf,
    /// The file's JSON as parsed (what the canonical digest is computed from).
    pub value: serde_json::Value,
    /// Canonical digest of `value`: what `evidence_sha256` fields in inputs must equal.
    pub digest: String,
    /// The typed evidence.
    pub evidence: Evidence,
}

/// The work directory of one lab: its path (for messages) and, once [`Workdir::open`]ed, the
/// directory's fd, through which every later read and write goes ([`Workdir::base`]).
#[derive(Debug, Clone)]
pub struct Workdir {
    root: PathBuf,
    opened: Option<std::sync::Arc<TrustedDir>>,
}

impl PartialEq for Workdir {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}
impl Eq for Workdir {}

impl Workdir {
    /// A work directory rooted at `root` (nothing is created or checked).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workdir {
            root: root.into(),
            opened: None,
        }
    }

    /// This work directory opened once ([`TrustedDir::open`]: walked from `/` without following a
    /// link, every ancestor root's or the effective user's and not writable by others unless
    /// sticky and root's, the directory itself the effective user's and not group/other-writable,
    /// its `faults/`, `evidence/`, `diagnostics/` too when they exist), created `0755` when
    /// missing and `create`. Every later read and write of the returned value goes through that
    /// fd ([`Self::base`]). A missing directory that is not to be created is returned unopened
    /// (nothing in it to trust or read).
    ///
    /// Errors: [`LabError::UntrustedDir`] naming the component refused and why (nothing created
    /// or written), [`LabError::Io`].
    pub fn open(&self, create: bool) -> Result<Workdir, LabError> {
        if self.opened.is_some() {
            return Ok(self.clone());
        }
        let dir = match TrustedDir::open(&self.root, create.then_some(0o755), Owner::Euid) {
            Ok(d) => d,
            Err(DirRefused::Missing(_)) => return Ok(self.clone()),
            Err(e) => return Err(refused(e)),
        };
        for sub in ["faults", "evidence", "diagnostics"] {
            dir.subdir(sub, None).map_err(refused)?;
        }
        Ok(Workdir {
            root: self.root.clone(),
            opened: Some(std::sync::Arc::new(dir)),
        })
    }

    /// The open directory, when [`Self::open`] found it.
    pub fn opened(&self) -> Option<&std::sync::Arc<TrustedDir>> {
        self.opened.as_ref()
    }

    /// The path every read and write below the work directory goes through: the open
    /// directory's `/proc/self/fd/N` once [`Self::open`]ed (resolved from that fd by the kernel,
    /// whatever has been renamed since), else [`Self::root`].
    pub fn base(&self) -> PathBuf {
        match &self.opened {
            Some(d) => d.fd_path(),
            None => self.root.clone(),
        }
    }

    /// `shown` (a path below [`Self::root`], as messages name it) as the path to read or write
    /// it through ([`Self::base`]).
    pub fn io_path(&self, shown: &Path) -> PathBuf {
        match (&self.opened, shown.strip_prefix(&self.root)) {
            (Some(d), Ok(rel)) => d.fd_path().join(rel),
            _ => shown.to_path_buf(),
        }
    }

    /// `io` (a path below [`Self::base`]) as messages name it, below [`Self::root`].
    pub fn shown_path(&self, io: &Path) -> PathBuf {
        match &self.opened {
            Some(d) => match io.strip_prefix(d.fd_path()) {
                Ok(rel) => self.root.join(rel),
                Err(_) => io.to_path_buf(),
            },
            None => io.to_path_buf(),
        }
    }

    /// `e` with the paths it names shown below [`Self::root`] ([`Self::shown_path`]).
    fn shown(&self, e: LabError) -> LabError {
        let s = |p: PathBuf| self.shown_path(&p);
        match e {
            LabError::InputMissing { path } => LabError::InputMissing { path: s(path) },
            LabError::EvidenceMissing { path } => LabError::EvidenceMissing { path: s(path) },
            LabError::EvidenceExists { path, status } => LabError::EvidenceExists {
                path: s(path),
                status,
            },
            LabError::EvidenceInvalid { path, detail } => LabError::EvidenceInvalid {
                path: s(path),
                detail,
            },
            LabError::Io { path, source } => LabError::Io {
                path: s(path),
                source,
            },
            e => e,
        }
    }

    /// The root chosen by precedence: `flag` (`--workdir`), then `KCA_WEBHOOK_DIR`, then
    /// [`DEFAULT_WORKDIR`].
    pub fn resolve(flag: Option<PathBuf>) -> Self {
        let root = flag
            .or_else(|| {
                std::env::var_os(WORKDIR_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from(DEFAULT_WORKDIR));
        Workdir::new(root)
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directories below which the tool writes: the root and its `faults/`, `evidence/` and
    /// `diagnostics/`.
    pub fn own_dirs(&self) -> [PathBuf; 4] {
        [
            self.root.clone(),
            self.root.join("faults"),
            self.evidence_dir(),
            self.root.join("diagnostics"),
        ]
    }

    /// Requires the work directory, its ancestors and each of [`Self::own_dirs`] that exists to
    /// be directories this process can trust ([`Self::open`] without creating). The tool runs as
    /// root: files below a directory another user controls could steer it (`docs/faults.md`,
    /// "Ownership").
    ///
    /// Errors: [`LabError::UntrustedDir`] naming the first directory refused and why.
    pub fn check_trusted(&self) -> Result<(), LabError> {
        self.open(false).map(drop)
    }

    /// Path of a student input file, e.g. `<root>/policy.json`.
    pub fn input_path(&self, file: InputFile) -> PathBuf {
        self.root.join(file.file_name())
    }

    /// `<root>/evidence`.
    pub fn evidence_dir(&self) -> PathBuf {
        self.root.join("evidence")
    }

    /// `<root>/evidence/NN.json` (two digits).
    pub fn evidence_path(&self, act: u8) -> PathBuf {
        self.evidence_dir().join(format!("{act:02}.json"))
    }

    /// `<root>/evidence/NN.partial.json`: a running act's saved progress.
    pub fn partial_path(&self, act: u8) -> PathBuf {
        self.evidence_dir().join(format!("{act:02}.partial.json"))
    }

    /// Reads a student input file with the one reader ([`crate::json`]: I-JSON only, no validation
    /// of its content) and digests it.
    ///
    /// Errors: [`LabError::InputMissing`], [`LabError::Io`], or [`LabError::InputInvalid`] with the
    /// JSON path, expected and found (e.g. a duplicate member name).
    pub fn read_input(&self, file: InputFile) -> Result<LoadedInput, LabError> {
        let path = self.input_path(file);
        let value =
            read_json_input(&self.io_path(&path), file.file_name()).map_err(|e| self.shown(e))?;
        let digest = digest::digest_value(&value);
        Ok(LoadedInput {
            file,
            path,
            value,
            digest,
        })
    }

    /// Status of act `act`'s final evidence, or `None` when `NN.json` does not exist.
    /// A leftover `NN.partial.json` alone is reported as `None` here (see [`Self::check_can_run`]).
    pub fn evidence_status(&self, act: u8) -> Result<Option<ActStatus>, LabError> {
        let path = self.evidence_path(act);
        if !self.io_path(&path).exists() {
            return Ok(None);
        }
        Ok(Some(self.read_evidence(act)?.evidence.status))
    }

    /// Refuses to start act `act` if it already has evidence.
    ///
    /// - `NN.json` exists → [`LabError::EvidenceExists`] with its status.
    /// - Only `NN.partial.json` exists (a runner died mid-act) → it is finalised as `NN.json` with
    ///   status `interrupted` (partial raw data kept), then [`LabError::EvidenceExists`].
    /// - an act `lab` does not have ([`crate::acts`]) → [`LabError::Usage`].
    pub fn check_can_run(&self, lab: Lab, act: u8) -> Result<(), LabError> {
        crate::acts::check(lab, act)?;
        let path = self.evidence_path(act);
        if self.io_path(&path).exists() {
            let status = self
                .read_evidence(act)
                .map(|l| l.evidence.status)
                .unwrap_or(ActStatus::Interrupted);
            return Err(LabError::EvidenceExists { path, status });
        }
        let partial = self.partial_path(act);
        if self.io_path(&partial).exists() {
            let value =
                crate::json::read_evidence(&self.io_path(&partial)).map_err(|e| self.shown(e))?;
            let mut ev: Evidence =
                serde_json::from_value(value).map_err(|e| LabError::EvidenceInvalid {
                    path: partial.clone(),
                    detail: e.to_string(),
                })?;
            if ev.lab != lab || ev.act != act {
                return Err(LabError::EvidenceInvalid {
                    path: partial,
                    detail: format!(
                        "holds lab {:?} act {}, expected lab {lab:?} act {act}",
                        ev.lab, ev.act
                    ),
                });
            }
            ev.status = ActStatus::Interrupted;
            if ev.interruption.is_none() {
                ev.interruption =
                    Some("the act's process ended before the act finished".to_owned());
            }
            self.write_evidence(&ev)?;
            return Err(LabError::EvidenceExists {
                path,
                status: ActStatus::Interrupted,
            });
        }
        Ok(())
    }

    /// Saves a running act's progress to `NN.partial.json` (atomically replaced on each call).
    /// The saved copy's status is always `interrupted`: if the runner dies, that is what it is.
    pub fn save_progress(&self, evidence: &Evidence) -> Result<PathBuf, LabError> {
        crate::acts::check(evidence.lab, evidence.act)?;
        let mut ev = evidence.clone();
        ev.status = ActStatus::Interrupted;
        if ev.interruption.is_none() {
            ev.interruption = Some("the act's process ended before the act finished".to_owned());
        }
        let path = self.partial_path(ev.act);
        self.write_atomic(&path, &to_bytes(&ev)?, false)?;
        Ok(path)
    }

    /// Writes the final `evidence/NN.json` (completed or interrupted) atomically and removes any
    /// `NN.partial.json`. Never replaces an existing `NN.json`: that is
    /// [`LabError::EvidenceExists`]. Creates `evidence/` if needed.
    pub fn write_evidence(&self, evidence: &Evidence) -> Result<PathBuf, LabError> {
        crate::acts::check(evidence.lab, evidence.act)?;
        if evidence.status == ActStatus::Interrupted && evidence.interruption.is_none() {
            return Err(LabError::EvidenceInvalid {
                path: self.evidence_path(evidence.act),
                detail: "interrupted evidence must say why (interruption)".to_owned(),
            });
        }
        let path = self.evidence_path(evidence.act);
        self.write_atomic(&path, &to_bytes(evidence)?, true)?;
        let partial = self.partial_path(evidence.act);
        self.evidence_dir_open(false)?
            .map(|d| d.remove(&format!("{:02}.partial.json", evidence.act)))
            .transpose()
            .map_err(LabError::io(&partial))?;
        Ok(path)
    }

    /// Reads `evidence/NN.json` with the one reader ([`crate::json`]), digests it and parses it.
    ///
    /// Errors: [`LabError::EvidenceMissing`], [`LabError::Io`], [`LabError::EvidenceInvalid`]
    /// (not I-JSON — its JSON path, expected and found in the detail —, not the evidence shape, or
    /// its `act` field is not `act`).
    pub fn read_evidence(&self, act: u8) -> Result<LoadedEvidence, LabError> {
        let path = self.evidence_path(act);
        let value = crate::json::read_evidence(&self.io_path(&path)).map_err(|e| self.shown(e))?;
        let evidence: Evidence =
            serde_json::from_value(value.clone()).map_err(|e| LabError::EvidenceInvalid {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        if evidence.act != act {
            return Err(LabError::EvidenceInvalid {
                path,
                detail: format!("its act field is {}, expected {act}", evidence.act),
            });
        }
        let digest = digest::digest_value(&value);
        Ok(LoadedEvidence {
            path,
            value,
            digest,
            evidence,
        })
    }

    /// `evidence/`, opened relative to the work directory's fd ([`Self::open`]; created `0755`
    /// with it when `create`); `None` when missing and not created.
    fn evidence_dir_open(&self, create: bool) -> Result<Option<TrustedDir>, LabError> {
        let opened = match &self.opened {
            Some(d) => Some(d.clone()),
            None => self.open(create)?.opened,
        };
        match opened {
            Some(d) => d
                .subdir("evidence", create.then_some(0o755))
                .map_err(refused),
            None => Ok(None),
        }
    }

    /// Writes `bytes` as `dest` (in `evidence/`) relative to the open `evidence/`
    /// ([`TrustedDir::write_file`]: an unnamed file of mode `0600`, named whole; never replacing
    /// an existing file when `no_clobber`).
    fn write_atomic(&self, dest: &Path, bytes: &[u8], no_clobber: bool) -> Result<(), LabError> {
        let dir = self.evidence_dir();
        let name = dest
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| LabError::io(dest)(std::io::ErrorKind::InvalidInput.into()))?;
        let opened = self
            .evidence_dir_open(true)?
            .ok_or_else(|| LabError::io(&dir)(std::io::ErrorKind::NotFound.into()))?;
        if no_clobber && opened.exists(name) {
            return Err(LabError::EvidenceExists {
                path: dest.to_path_buf(),
                status: self.read_evidence_status_lossy(dest),
            });
        }
        opened
            .write_file(name, bytes, 0o600, !no_clobber)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists && no_clobber {
                    LabError::EvidenceExists {
                        path: dest.to_path_buf(),
                        status: self.read_evidence_status_lossy(dest),
                    }
                } else {
                    LabError::Io {
                        path: dest.to_path_buf(),
                        source: e,
                    }
                }
            })
    }

    fn read_evidence_status_lossy(&self, path: &Path) -> ActStatus {
        crate::json::read_evidence(&self.io_path(path))
            .ok()
            .and_then(|v| serde_json::from_value::<Evidence>(v).ok())
            .map(|e| e.status)
            .unwrap_or(ActStatus::Interrupted)
    }
}

/// Reads the JSON file at `path` with the one reader ([`crate::json::read_input`]); `name` is the
/// file name used in messages.
///
/// Errors: [`LabError::InputMissing`], [`LabError::Io`], or [`LabError::InputInvalid`] with the
/// JSON path, expected and found.
pub fn read_json_input(path: &Path, name: &str) -> Result<serde_json::Value, LabError> {
    crate::json::read_input(path, name)
}

fn to_bytes(ev: &Evidence) -> Result<Vec<u8>, LabError> {
    let mut bytes = serde_json::to_vec_pretty(ev).map_err(|e| LabError::EvidenceInvalid {
        path: PathBuf::from(format!("evidence/{:02}.json", ev.act)),
        detail: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn ev(act: u8, status: ActStatus) -> Evidence {
        Evidence {
            schema_version: crate::evidence::SCHEMA_VERSION,
            lab: Lab::B,
            act,
            status,
            started_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: "2026-01-01T00:00:01.000Z".into(),
            inputs: BTreeMap::new(),
            facts: serde_json::json!({"x": 1}),
            raw: vec![serde_json::json!({"kind": "Status"})],
            interruption: match status {
                ActStatus::Interrupted => Some("test".into()),
                ActStatus::Completed => None,
            },
            versions: None,
        }
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn paths() {
        let w = Workdir::new("/w");
        assert_eq!(w.evidence_path(3), PathBuf::from("/w/evidence/03.json"));
        assert_eq!(
            w.partial_path(5),
            PathBuf::from("/w/evidence/05.partial.json")
        );
        assert_eq!(
            w.input_path(InputFile::FreezePlan),
            PathBuf::from("/w/freeze-plan.json")
        );
        assert_eq!(Workdir::resolve(Some("/x".into())).root(), Path::new("/x"));
    }

    #[test]
    fn write_then_refuse_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        w.check_can_run(Lab::B, 3).unwrap();
        let p = w.write_evidence(&ev(3, ActStatus::Completed)).unwrap();
        let before = std::fs::read(&p).unwrap();
        let err = w.write_evidence(&ev(3, ActStatus::Completed)).unwrap_err();
        assert!(
            matches!(
                err,
                LabError::EvidenceExists {
                    status: ActStatus::Completed,
                    ..
                }
            ),
            "{err}"
        );
        let err = w.check_can_run(Lab::B, 3).unwrap_err();
        assert!(
            matches!(
                err,
                LabError::EvidenceExists {
                    status: ActStatus::Completed,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), before);
        // No temporary file is left behind.
        assert_eq!(entries(&w.evidence_dir()), vec!["03.json".to_owned()]);
        let loaded = w.read_evidence(3).unwrap();
        assert_eq!(loaded.evidence, ev(3, ActStatus::Completed));
        assert_eq!(loaded.digest, digest::digest_value(&loaded.value));
    }

    #[test]
    fn interrupted_evidence_also_blocks_rerun() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        w.write_evidence(&ev(5, ActStatus::Interrupted)).unwrap();
        let err = w.check_can_run(Lab::B, 5).unwrap_err();
        assert!(
            matches!(
                err,
                LabError::EvidenceExists {
                    status: ActStatus::Interrupted,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn interrupted_needs_reason() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        let mut e = ev(5, ActStatus::Interrupted);
        e.interruption = None;
        assert!(matches!(
            w.write_evidence(&e),
            Err(LabError::EvidenceInvalid { .. })
        ));
        assert!(!w.evidence_path(5).exists());
    }

    #[test]
    fn leftover_progress_becomes_interrupted_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        let mut progress = ev(5, ActStatus::Completed);
        progress.raw.push(serde_json::json!({"partial": true}));
        w.save_progress(&progress).unwrap();
        w.save_progress(&progress).unwrap(); // replaced, not refused
        assert!(!w.evidence_path(5).exists());
        let err = w.check_can_run(Lab::B, 5).unwrap_err();
        assert!(
            matches!(
                err,
                LabError::EvidenceExists {
                    status: ActStatus::Interrupted,
                    ..
                }
            ),
            "{err}"
        );
        let saved = w.read_evidence(5).unwrap().evidence;
        assert_eq!(saved.status, ActStatus::Interrupted);
        assert_eq!(saved.raw, progress.raw);
        assert!(saved.interruption.is_some());
        assert_eq!(entries(&w.evidence_dir()), vec!["05.json".to_owned()]);
    }

    #[test]
    fn completing_removes_progress() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        w.save_progress(&ev(6, ActStatus::Completed)).unwrap();
        w.write_evidence(&ev(6, ActStatus::Completed)).unwrap();
        assert_eq!(entries(&w.evidence_dir()), vec!["06.json".to_owned()]);
    }

    #[test]
    fn act_out_of_range_is_usage_error() {
        let w = Workdir::new("/nonexistent");
        assert!(matches!(
            w.check_can_run(Lab::A, crate::acts::count(Lab::A) + 1),
            Err(LabError::Usage(_))
        ));
        assert!(matches!(
            w.check_can_run(Lab::A, 0),
            Err(LabError::Usage(_))
        ));
    }

    #[test]
    fn missing_and_bad_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::new(dir.path());
        assert!(matches!(
            w.read_input(InputFile::Scope),
            Err(LabError::InputMissing { .. })
        ));
        std::fs::write(w.input_path(InputFile::Scope), "{\"target\": }").unwrap();
        let err = w.read_input(InputFile::Scope).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("scope.json: $.target: expected a JSON document"),
            "{err}"
        );
        assert!(matches!(
            w.read_evidence(1),
            Err(LabError::EvidenceMissing { .. })
        ));
    }
}
