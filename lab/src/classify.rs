//! Placeholder: outcome classification (owned by the lab-core work). The signature is the contract
//! the probes call; the body and its table-driven tests come with the lab core.

use crate::evidence::{GetResult, Outcome};

/// Classifies one API answer plus its follow-up GET into an [`Outcome`].
///
/// - `http_status`, `reason`, `message`: the answer verbatim (`reason`/`message` from the `Status` body
///   of an error answer, `None` on success).
/// - `get`: the separate GET by name made after the request.
/// - `dry_run`: whether the request was a server-side dry-run.
/// - `markers`: strings that identify the lab's policy in a deny message (e.g. `KCA_ENVIRONMENT_REQUIRED`,
///   `kca-webhook-label`); a deny without any of them is not an `explicit-deny` of this policy.
pub fn classify(
    http_status: u16,
    reason: Option<&str>,
    message: Option<&str>,
    get: &GetResult,
    dry_run: bool,
    markers: &[&str],
) -> Outcome {
    let _ = (http_status, reason, message, get, dry_run, markers);
    Outcome::OtherError
}
