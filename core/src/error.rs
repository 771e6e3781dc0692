//! The lab crate's one error type, [`LabError`]; callers and tests match on its variants.
//!
//! The ground floor of the crate: it imports nothing of it, so every module may return a
//! [`LabError`]. The two small enums its variants carry are defined here for that reason and
//! re-exported where they belong: [`ActStatus`] (`evidence::ActStatus`) and [`Source`]
//! (`inputs::Source`).
//!
//! Display texts are English, lowercase, without a trailing period (maintainers' logs);
//! student-facing Japanese/English renderings live in `messages::errors::error_text`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// State of one act's evidence file (`status` of `evidence/NN.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActStatus {
    /// The act ran to its end; the file is final and never rewritten.
    Completed,
    /// The act stopped part-way (error, signal, bound ran out); `raw` holds what was seen.
    Interrupted,
}

/// Where the value of a bound field comes from (see `inputs::InputFile::bound_fields`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The live node's UID (`inspect`: `vm.node_uid`).
    NodeUid,
    /// The live UID of this namespace (`inspect`: `namespaces`).
    NamespaceUid(&'static str),
    /// The live UID of Deployment `kyverno/kyverno-admission-controller` (`inspect`:
    /// `controller.deployment_uid`).
    DeploymentUid,
    /// `facts.policy.metadata.uid` of `evidence/02.json`.
    PolicyUid,
    /// The canonical digest of `evidence/NN.json` for this act (`digest`; `inspect`:
    /// `evidence_sha256`).
    Digest(u8),
}

/// One problem found in a student input file: which file, where, what was expected, what was found.
///
/// `json_path` uses the `$.a.b[0].c` notation (`$` is the document root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputIssue {
    /// The input file's name, e.g. `policy.json`.
    pub file: String,
    /// JSON path of the offending value, e.g. `$.spec.validations[0].message`.
    pub json_path: String,
    /// What the file must hold there, e.g. `"KCA_ENVIRONMENT_REQUIRED"` or `no field`.
    pub expected: String,
    /// What the file holds there, e.g. `"KCA_ENV"` or `field "foo"` or `nothing`.
    pub found: String,
    /// For a well-formed value that is not the live cluster's or the evidence's (the bound-field
    /// checks of `inputs`): where the right value comes from. `None` for every other
    /// problem (a malformed file, a wrong fixed value). The graders tell a UID or digest mismatch
    /// from an invalid input by it.
    #[serde(skip)]
    pub mismatch: Option<Source>,
    /// `expected` and `found` in Japanese (`messages::said`), when the check that found
    /// the problem words it in both languages; `None` shows the English ones in Japanese output too
    /// (e.g. the reader's RFC texts).
    #[serde(skip)]
    pub ja: Option<(String, String)>,
}

impl std::fmt::Display for InputIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}: expected {}, found {}",
            self.file, self.json_path, self.expected, self.found
        )
    }
}

/// Everything that can go wrong in the lab tool.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A student input file is malformed or holds a wrong value. `issues` is never empty; the
    /// first issue is repeated in the display text. Nothing was written because of it.
    #[error("{}", fmt_issues(.issues))]
    InputInvalid {
        /// Every problem found (at least one), in document order where possible.
        issues: Vec<InputIssue>,
    },
    /// A student input file the act needs does not exist.
    #[error("{}: input file not found", .path.display())]
    InputMissing {
        /// Where the file was looked for.
        path: PathBuf,
    },
    /// The act's evidence file already exists, so the act refuses to run again.
    /// A `completed` act keeps its evidence and resources; an `interrupted` one must be
    /// downloaded and reproduced in a fresh lab (its results are uncertain).
    #[error("{}: evidence already exists ({}); the act does not run again", .path.display(), status_word(*.status))]
    EvidenceExists {
        /// The existing `evidence/NN.json`.
        path: PathBuf,
        /// Status recorded in it.
        status: ActStatus,
    },
    /// An evidence file needed for grading or as an act's precondition does not exist.
    #[error("{}: evidence not found (run the act first)", .path.display())]
    EvidenceMissing {
        /// The expected `evidence/NN.json`.
        path: PathBuf,
    },
    /// An evidence file exists but cannot be read as evidence.
    #[error("{}: not a valid evidence file: {detail}", .path.display())]
    EvidenceInvalid {
        /// The evidence file.
        path: PathBuf,
        /// What was wrong (JSON error, wrong lab, wrong act number…).
        detail: String,
    },
    /// The API server could not be reached.
    #[error("cluster unreachable (kubeconfig {}): {detail}", .kubeconfig.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "default".to_owned()))]
    ClusterUnreachable {
        /// The kubeconfig used, if given explicitly.
        kubeconfig: Option<PathBuf>,
        /// The client's error.
        detail: String,
    },
    /// A Kubernetes API call failed (other than unreachable); the text is the client's error verbatim.
    #[error("kubernetes api: {0}")]
    Kube(String),
    /// The node's container runtime (CRI) could not be used.
    #[error("cri endpoint {}: {detail}", .endpoint.display())]
    Cri {
        /// The CRI socket path.
        endpoint: PathBuf,
        /// The error.
        detail: String,
    },
    /// The live cluster does not match what the student's input or earlier evidence says
    /// (e.g. a node UID, a namespace UID, the deployment UID).
    #[error("{what}: expected {expected}, found {found} on the cluster")]
    ClusterMismatch {
        /// What was compared, e.g. `node uid`.
        what: String,
        /// The value from the input or evidence.
        expected: String,
        /// The live value.
        found: String,
    },
    /// A fault was not injected because a safety check failed (no lab mark, identity changed…).
    #[error("fault refused: {reason}")]
    FaultRefused {
        /// Why.
        reason: String,
    },
    /// A lock is held by another process (another act in the same work directory, or another
    /// attempt's healer on the same fault target); nothing was done.
    #[error("{what} is in use by {holder}")]
    Busy {
        /// The lock, e.g. `the work directory /root/kca-webhook (/root/kca-webhook/.lock)`.
        what: String,
        /// Who holds it (pid, start ticks, what, since, attempt), as its lock file says.
        holder: String,
    },
    /// A directory the tool would write below (the work directory, its `faults/`, `evidence/`,
    /// `diagnostics/`) is not one this process can trust (`files::untrusted_dir`):
    /// nothing was read from it or written to it.
    #[error("{}: refusing to use this directory: {why}; nothing was written", .path.display())]
    UntrustedDir {
        /// The directory.
        path: PathBuf,
        /// Why it is not trusted (symlink, owner, mode).
        why: String,
    },
    /// The act was interrupted by a signal (SIGINT, SIGTERM, SIGHUP); the fault was healed and the
    /// raw data seen so far was kept as `interrupted` evidence. Exit code 130.
    #[error("interrupted by {signal} during act {act}; {healed}")]
    Interrupted {
        /// The signal's name.
        signal: String,
        /// The act.
        act: u8,
        /// What was done to undo the fault.
        healed: String,
    },
    /// A bounded wait ran out; `last_state` says what was last seen.
    #[error("waited {waited_ms} ms for {what}; last state: {last_state}")]
    WaitTimedOut {
        /// What was waited for.
        what: String,
        /// How long, milliseconds.
        waited_ms: u64,
        /// The last state observed.
        last_state: String,
    },
    /// A feature is not available in this build (e.g. an act that needs a cluster, before it is wired).
    #[error("not available: {what}")]
    NotAvailable {
        /// What is not available.
        what: String,
    },
    /// The command line or a name given on it is wrong (unknown schema or input name, act out of range).
    #[error("usage: {0}")]
    Usage(String),
    /// A file system operation failed.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl LabError {
    /// Builds [`LabError::Io`] from a path and an error (for `map_err`).
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> LabError {
        let path = path.into();
        move |source| LabError::Io { path, source }
    }

    /// Builds [`LabError::InputInvalid`] from one issue.
    pub fn input(
        file: impl Into<String>,
        json_path: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> LabError {
        LabError::InputInvalid {
            issues: vec![InputIssue {
                file: file.into(),
                json_path: json_path.into(),
                expected: expected.into(),
                found: found.into(),
                mismatch: None,
                ja: None,
            }],
        }
    }

    /// Process exit code for this error: 2 for input and usage errors, 130 for an interruption by a
    /// signal (the shell's 128 + SIGINT), 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            LabError::InputInvalid { .. } | LabError::InputMissing { .. } | LabError::Usage(_) => 2,
            LabError::Interrupted { .. } => 130,
            _ => 1,
        }
    }
}

impl From<Vec<InputIssue>> for LabError {
    fn from(issues: Vec<InputIssue>) -> Self {
        LabError::InputInvalid { issues }
    }
}

fn fmt_issues(issues: &[InputIssue]) -> String {
    match issues {
        [] => "invalid input".to_owned(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

fn status_word(status: ActStatus) -> &'static str {
    match status {
        ActStatus::Completed => "completed",
        ActStatus::Interrupted => "interrupted",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_error_names_file_path_expected_found() {
        let e = LabError::input(
            "policy.json",
            "$.spec.failurePolicy",
            "\"Fail\"",
            "\"Ignore\"",
        );
        assert_eq!(
            e.to_string(),
            "policy.json: $.spec.failurePolicy: expected \"Fail\", found \"Ignore\""
        );
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn evidence_exists_says_status() {
        let e = LabError::EvidenceExists {
            path: "/w/evidence/05.json".into(),
            status: ActStatus::Interrupted,
        };
        assert_eq!(
            e.to_string(),
            "/w/evidence/05.json: evidence already exists (interrupted); the act does not run again"
        );
        assert_eq!(e.exit_code(), 1);
    }
}
