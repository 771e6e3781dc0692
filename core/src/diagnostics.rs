//! The diagnostics record's pure part: the [`Summary`] a collection writes (`summary.json`), the
//! last state of a wait that ran out ([`WaitState`]), and where the student tool keeps them. The
//! collection itself (cluster reads, log tails) is the `lab` crate's `diagnostics` module, which
//! re-exports this one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// The last state a bounded wait saw when it ran out ([`LabError::WaitTimedOut`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitState {
    /// What was waited for.
    pub what: String,
    /// How long, milliseconds.
    pub waited_ms: u64,
    /// The last state observed.
    pub last_state: String,
}

/// The wait state carried by `err`, when it is a [`LabError::WaitTimedOut`].
pub fn wait_state(err: &LabError) -> Option<WaitState> {
    match err {
        LabError::WaitTimedOut {
            what,
            waited_ms,
            last_state,
        } => Some(WaitState {
            what: what.clone(),
            waited_ms: *waited_ms,
            last_state: last_state.clone(),
        }),
        _ => None,
    }
}

/// The innermost [`WaitState`] in an error chain (`anyhow`'s `chain()` or `source()` links).
pub fn wait_state_in<'a>(
    chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> Option<WaitState> {
    chain
        .into_iter()
        .filter_map(|e| e.downcast_ref::<LabError>().and_then(wait_state))
        .last()
}

/// What the `lab` crate's `diagnostics::collect` wrote (`summary.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The step that failed.
    pub failed_step: String,
    /// The error, verbatim.
    pub error: String,
    /// The last state of the wait that ran out.
    pub wait: Option<WaitState>,
    /// The three most telling lines (`lab::diagnostics::telling_lines`).
    pub telling: Vec<String>,
    /// When the collection began, RFC 3339 UTC (ms).
    pub collected_at: String,
    /// Files written, relative to the directory.
    pub files: Vec<String>,
    /// One line per collection step that failed (`step: error`).
    pub collector_failures: Vec<String>,
}

/// The summary file's name in a diagnostics directory.
pub const SUMMARY_FILE: &str = "summary.json";

/// Reads `<dir>/summary.json`, a regular file of at most [`crate::files::JSON_BOUND`] bytes, with
/// no symlink followed at `dir` or the file ([`crate::files::read_regular_in`]); `None`: absent,
/// refused or unreadable (the report then links no diagnostics).
pub fn read_summary(dir: &Path) -> Option<Summary> {
    let bytes = crate::files::read_regular_in(dir, SUMMARY_FILE, crate::files::JSON_BOUND).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The newest `<workdir>/diagnostics/act-NN/` that holds a summary (highest act number).
pub fn latest_in_workdir(workdir: &Path) -> Option<(PathBuf, Summary)> {
    let root = workdir.join("diagnostics");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .rev()
        .find_map(|d| read_summary(&d).map(|s| (d, s)))
}

/// The student tool's diagnostics directory of act `act`: `<workdir>/diagnostics/act-NN/`.
pub fn act_dir(workdir: &Path, act: u8) -> PathBuf {
    workdir.join("diagnostics").join(format!("act-{act:02}"))
}

/// The text form of a summary (`summary.txt`): the three lines, the error, the wait, the files and
/// the collection steps that failed. English (maintainers' file; the student tool prints its own
/// words from [`crate::messages`]).
pub fn summary_text(s: &Summary) -> String {
    let mut t = format!(
        "diagnostics of a failure in {} (collected {})\n\n",
        s.failed_step, s.collected_at
    );
    for l in &s.telling {
        t.push_str(&format!("  {l}\n"));
    }
    t.push_str(&format!("\nerror: {}\n", s.error));
    if let Some(w) = &s.wait {
        t.push_str(&format!(
            "last wait: {} ({} ms); last state: {}\n",
            w.what, w.waited_ms, w.last_state
        ));
    }
    t.push_str("\nfiles:\n");
    for f in &s.files {
        t.push_str(&format!("  {f}\n"));
    }
    if !s.collector_failures.is_empty() {
        t.push_str("\ncollection steps that failed:\n");
        for f in &s.collector_failures {
            t.push_str(&format!("  {f}\n"));
        }
    }
    t
}
