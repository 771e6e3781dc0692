//! Outcome classification of one API answer plus its follow-up GET (pure; no I/O).
//!
//! The message shapes come from the API server's own code (`../shared/research/kubernetes.md` §1,
//! §3, k8s.io/apiserver v0.35.0) and Kyverno's deny text (`../shared/research/kyverno.md` §4):
//!
//! | answer | shape |
//! |---|---|
//! | deny | 400 (code 0 raised to 400, empty reason) or 403 `Forbidden` (newer `ToStatusErr`, message prefixed `pods "x" is forbidden: `); message `admission webhook "<webhook>" denied the request: Policy <name> failed: <message>` |
//! | call failure, failurePolicy Fail | 500 `InternalError`, `Internal error occurred: failed calling webhook "<webhook>": failed to call webhook: Post "<url>": <cause>` |
//! | timeout cause | `context deadline exceeded` (the per-webhook context); also `Client.Timeout exceeded` (the 30 s client timeout) and `i/o timeout` (deadline passed while dialling, which upstream's e2e "honor timeout" test also counts as a timeout) |
//! | refused cause | `dial tcp <ip>:<port>: connect: connection refused` |
//! | DNS cause | `dial tcp: lookup <host> on <resolver>:53: no such host` |
//! | no endpoints cause | `no endpoints available for service "<name>"` (endpoint routing) |
//! | already exists | 409 `AlreadyExists`, `pods "<name>" already exists` |
//! | dry-run success | 201 with a fresh uid that exists nowhere; the follow-up GET returns 404 |

use crate::evidence::{GetResult, Outcome};

const DENIED: &str = "denied the request";
const CALLING: &str = "failed calling webhook";

/// Classifies one API answer plus its follow-up GET into an [`Outcome`].
///
/// - `http_status`, `reason`, `message`: the answer verbatim (`reason`/`message` from the `Status` body
///   of an error answer, `None` on success).
/// - `get`: the separate GET by name made after the request.
/// - `dry_run`: whether the request was a server-side dry-run.
/// - `markers`: strings that identify the lab's policy in a deny message (e.g. `KCA_ENVIRONMENT_REQUIRED`,
///   `kca-webhook-label`); a deny without any of them is not an `explicit-deny` of this policy.
///
/// Rules, in order:
/// 1. 2xx: not dry-run → `stored` only if the GET found the object with a non-empty UID;
///    dry-run → `dry-run-admitted` only if the GET found nothing. Anything else contradicts
///    itself and is `other-error` (the raw answer says more).
/// 2. 409 or reason `AlreadyExists` → `already-exists` (never a policy decision).
/// 3. 4xx with `admission webhook "…" denied the request` → `explicit-deny` if the text after
///    `denied the request` carries one of `markers`, else `other-error` (another webhook's deny).
/// 4. A message with `failed calling webhook` → by its cause: timeout, refused, DNS, no endpoints;
///    any other cause (TLS, `service "x" not found`, …) → `other-error`.
/// 5. Everything else (e.g. 504 `Timeout` of the request itself, `does not support dry run`) →
///    `other-error`.
pub fn classify(
    http_status: u16,
    reason: Option<&str>,
    message: Option<&str>,
    get: &GetResult,
    dry_run: bool,
    markers: &[&str],
) -> Outcome {
    if (200..300).contains(&http_status) {
        let stored = get.exists && get.uid.as_deref().is_some_and(|u| !u.is_empty());
        return match (dry_run, stored, get.exists) {
            (false, true, _) => Outcome::Stored,
            (true, _, false) => Outcome::DryRunAdmitted,
            _ => Outcome::OtherError,
        };
    }
    if http_status == 409 || reason == Some("AlreadyExists") {
        return Outcome::AlreadyExists;
    }
    let msg = message.unwrap_or("");
    if (400..500).contains(&http_status)
        && msg.contains("admission webhook \"")
        && let Some(pos) = msg.find(DENIED)
    {
        let verdict = &msg[pos + DENIED.len()..];
        let marked = markers.iter().any(|m| !m.is_empty() && verdict.contains(m));
        return if marked {
            Outcome::ExplicitDeny
        } else {
            Outcome::OtherError
        };
    }
    if msg.contains(CALLING) {
        if msg.contains("context deadline exceeded")
            || msg.contains("Client.Timeout exceeded")
            || msg.contains("i/o timeout")
        {
            return Outcome::WebhookTimeout;
        }
        if msg.contains("connection refused") {
            return Outcome::ConnectionRefused;
        }
        if msg.contains("no such host") {
            return Outcome::DnsError;
        }
        if msg.contains("no endpoints available for service") {
            return Outcome::NoEndpoints;
        }
    }
    Outcome::OtherError
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MARKERS: &[&str] = &["KCA_ENVIRONMENT_REQUIRED", "kca-webhook-label"];
    const HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";

    fn get(exists: bool, uid: Option<&str>) -> GetResult {
        GetResult {
            exists,
            uid: uid.map(str::to_owned),
            phase: exists.then(|| "Pending".to_owned()),
            at: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    fn call_failure(cause: &str) -> String {
        format!(
            "Internal error occurred: failed calling webhook \"{HOOK}\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s\": {cause}"
        )
    }

    #[rstest]
    // Deny, long-standing ToStatusErr: code 0 raised to 400, empty reason (kubernetes.md §1a, kyverno.md §4).
    #[case::deny_400(400, Some(""), format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    #[case::deny_400_no_reason(400, None, format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    // Deny, newer ToStatusErr: 403 Forbidden with the resource prefix (kyverno.md §4).
    #[case::deny_403(403, Some("Forbidden"), format!("pods \"bad-7f3a\" is forbidden: admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    // Aggregated webhook name, marker only in the text.
    #[case::deny_aggregated(400, None, "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED".to_owned(), Outcome::ExplicitDeny)]
    // A deny by some other webhook, without the policy's marker, is not this policy's deny.
    #[case::deny_without_marker(400, None, "admission webhook \"other.example.com\" denied the request: image not allowed".to_owned(), Outcome::OtherError)]
    // The marker only in the webhook name part does not count.
    #[case::marker_only_in_name(400, None, format!("admission webhook \"{HOOK}\" denied the request without explanation"), Outcome::OtherError)]
    // Timeout with failurePolicy Fail (kubernetes.md §1b).
    #[case::timeout(
        500,
        Some("InternalError"),
        call_failure("context deadline exceeded"),
        Outcome::WebhookTimeout
    )]
    #[case::client_timeout(
        500,
        Some("InternalError"),
        call_failure(
            "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
        ),
        Outcome::WebhookTimeout
    )]
    #[case::dial_timeout(
        500,
        Some("InternalError"),
        call_failure("dial tcp 10.43.12.7:443: i/o timeout"),
        Outcome::WebhookTimeout
    )]
    // Connection refused (kubernetes.md §1c).
    #[case::refused(
        500,
        Some("InternalError"),
        call_failure("dial tcp 10.43.12.7:443: connect: connection refused"),
        Outcome::ConnectionRefused
    )]
    // DNS (kubernetes.md §1d).
    #[case::dns(500, Some("InternalError"), "Internal error occurred: failed calling webhook \"x.example\": failed to call webhook: Post \"https://hook.example.invalid:443/x?timeout=3s\": dial tcp: lookup hook.example.invalid on 10.0.0.10:53: no such host".to_owned(), Outcome::DnsError)]
    // No endpoints (kubernetes.md §1d, endpoint routing).
    #[case::no_endpoints(
        500,
        Some("InternalError"),
        call_failure("no endpoints available for service \"kyverno-svc\""),
        Outcome::NoEndpoints
    )]
    // Other call failures stay other-error, verbatim.
    #[case::service_missing(
        500,
        Some("InternalError"),
        call_failure("service \"kyverno-svc\" not found"),
        Outcome::OtherError
    )]
    #[case::tls(
        500,
        Some("InternalError"),
        call_failure(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ),
        Outcome::OtherError
    )]
    // 409 AlreadyExists is never a policy decision.
    #[case::already_exists(409, Some("AlreadyExists"), "pods \"good-1\" already exists".to_owned(), Outcome::AlreadyExists)]
    // Request deadline, not the webhook's (kubernetes.md §1b, separate case).
    #[case::request_timeout(504, Some("Timeout"), "Timeout: request did not complete within requested timeout".to_owned(), Outcome::OtherError)]
    // Dry-run against a webhook with sideEffects Unknown/Some (kubernetes.md §3).
    #[case::dry_run_unsupported(400, Some("BadRequest"), format!("admission webhook \"{HOOK}\" does not support dry run"), Outcome::OtherError)]
    // A 500 that mentions the marker but is not a deny.
    #[case::internal_other(500, Some("InternalError"), "Internal error occurred: KCA_ENVIRONMENT_REQUIRED".to_owned(), Outcome::OtherError)]
    fn error_answers(
        #[case] status: u16,
        #[case] reason: Option<&str>,
        #[case] message: String,
        #[case] expected: Outcome,
    ) {
        let g = get(false, None);
        assert_eq!(
            classify(status, reason, Some(&message), &g, false, MARKERS),
            expected,
            "{message}"
        );
        // The same answer to a dry-run request classifies the same way.
        assert_eq!(
            classify(status, reason, Some(&message), &g, true, MARKERS),
            expected,
            "{message}"
        );
    }

    #[test]
    fn deny_needs_markers() {
        let m = format!(
            "admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
        );
        assert_eq!(
            classify(400, None, Some(&m), &get(false, None), false, &[]),
            Outcome::OtherError
        );
        assert_eq!(
            classify(400, None, Some(&m), &get(false, None), false, &[""]),
            Outcome::OtherError
        );
        assert_eq!(
            classify(
                400,
                None,
                Some(&m),
                &get(false, None),
                false,
                &["KCA_ENVIRONMENT_REQUIRED"]
            ),
            Outcome::ExplicitDeny
        );
    }

    #[rstest]
    #[case::stored(false, true, Some("0b6f…-uid"), Outcome::Stored)]
    #[case::created_but_get_missing(false, false, None, Outcome::OtherError)]
    #[case::created_no_uid(false, true, None, Outcome::OtherError)]
    #[case::created_empty_uid(false, true, Some(""), Outcome::OtherError)]
    #[case::dry_run_admitted(true, false, None, Outcome::DryRunAdmitted)]
    #[case::dry_run_but_exists(true, true, Some("u-1"), Outcome::OtherError)]
    fn success_answers(
        #[case] dry_run: bool,
        #[case] exists: bool,
        #[case] uid: Option<&str>,
        #[case] expected: Outcome,
    ) {
        assert_eq!(
            classify(201, None, None, &get(exists, uid), dry_run, MARKERS),
            expected
        );
    }
}
