//! Outcome classification of one API answer plus its follow-up GET (pure; no I/O).
//!
//! The message shapes come from the API server's own code (k8s.io/apiserver v0.35.0:
//! `pkg/admission/plugin/webhook/validating/dispatcher.go`, `.../webhook/errors/statuserror.go`,
//! `pkg/util/webhook/error.go` and `client.go`; k8s.io/apimachinery `pkg/api/errors/errors.go`)
//! and Kyverno's deny text (kyverno v1.19.1 `pkg/webhooks/resource/vpol/handler.go`):
//!
//! | answer | shape |
//! |---|---|
//! | deny | 400 (code 0 raised to 400, empty reason) or 403 `Forbidden` (newer `ToStatusErr`, message prefixed `pods "x" is forbidden: `); message `admission webhook "<webhook>" denied the request: Policy <name> failed: <message>` |
//! | call failure, failurePolicy Fail | 500 `InternalError`, `Internal error occurred: failed calling webhook "<webhook>": failed to call webhook: Post "<url>": <cause>` |
//! | timeout cause | `context deadline exceeded` (the per-webhook context); also `Client.Timeout exceeded` (the 30 s client timeout) and `i/o timeout` (deadline passed while dialling, which upstream's e2e "honor timeout" test also counts as a timeout) |
//! | refused cause | `dial tcp <ip>:<port>: connect: connection refused` |
//! | DNS cause | `dial tcp: lookup <host> on <resolver>:53: no such host` |
//! | no endpoints cause | `no endpoints available for service "<name>"` (endpoint routing) |
//! | refused behind k3s's egress proxy | k3s (v1.35: `--egress-selector-mode` agent/pod/cluster) dials webhooks through its tunnel server with HTTP CONNECT; when the tunnel server cannot dial the endpoint it answers 502 (newer `serveConnect`) or 503 (older), and the API server only reports the status line: `proxy error from <proxy> while dialing <ip>:<port>, code 503: 503 Service Unavailable` (k8s.io/apiserver `pkg/server/egressselector/egress_selector.go` `tunnelHTTPConnect`); the dial error itself is hidden, so the connection to the webhook was not made → `connection-refused` |
//! | k3s proxy itself broken | `reading HTTP response from CONNECT to <addr> via proxy <proxy> failed: <err>` (same file) → `other-error` (the proxy, not the webhook, failed) |
//! | already exists | 409 `AlreadyExists`, `pods "<name>" already exists` |
//! | dry-run success | 201 with a fresh uid that exists nowhere; the follow-up GET returns 404 |

use crate::evidence::{GetResult, Outcome};

const DENIED: &str = "denied the request";
const CALLING: &str = "failed calling webhook";

/// The HTTP statuses an explicit deny is answered with: the one table the classifier
/// ([`classify`]), the audit rule (`grade::audit`, the final event's `responseStatus.code`) and
/// the metrics rule (`grade::metrics`, `rejection_count{error_type="no_error",
/// rejection_code=<status>}`) read, so an outcome has one meaning across them.
///
/// - 400: the long-standing form: the webhook's `status.code` 0 raised to 400, empty reason
///   (k8s.io/apiserver `pkg/admission/plugin/webhook/errors/statuserror.go` `ToStatusErr`);
/// - 403: the newer form, `Forbidden` with the resource prefix `pods "x" is forbidden: `.
///
/// The API server counts the rejection under the code it answers with (the dispatcher's
/// `ObserveWebhookRejection(…, int(err.Status().Code))`), so the metric's `rejection_code` label
/// is the record's `http_status`.
pub const EXPLICIT_DENY_STATUSES: &[u16] = &[400, 403];

/// Whether `http_status` is one an explicit deny is answered with ([`EXPLICIT_DENY_STATUSES`]).
pub fn is_explicit_deny_status(http_status: u16) -> bool {
    EXPLICIT_DENY_STATUSES.contains(&http_status)
}

/// What makes a deny the lab policy's own verdict: Kyverno's per-policy failure text
/// `Policy <policy> failed: <message>` (kyverno v1.19.1 `pkg/webhooks/resource/vpol/handler.go`).
/// Kyverno's evaluation-error form `Policy <policy> error: …` (kyverno#8916) is not a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyVerdict<'a> {
    /// The policy's `metadata.name`, e.g. `kca-webhook-label`.
    pub policy: &'a str,
    /// The validation's `message`, e.g. `KCA_ENVIRONMENT_REQUIRED`.
    pub message: &'a str,
}

impl PolicyVerdict<'_> {
    /// The text Kyverno puts after `denied the request: ` for this policy's failed validation,
    /// e.g. `Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED`.
    pub fn text(&self) -> String {
        format!("Policy {} failed: {}", self.policy, self.message)
    }

    /// Kyverno's evaluation-error prefix for this policy, `Policy <policy> error:`.
    pub fn error_prefix(&self) -> String {
        format!("Policy {} error:", self.policy)
    }
}

/// The lab's policy (`policy.json`: ValidatingPolicy `kca-webhook-label`, validation message
/// `KCA_ENVIRONMENT_REQUIRED`; labs.md, act 2).
pub const LAB_POLICY: PolicyVerdict<'static> = PolicyVerdict {
    policy: "kca-webhook-label",
    message: "KCA_ENVIRONMENT_REQUIRED",
};

/// A deny by an admission webhook, parsed from the verbatim message
/// `[<resource> "<name>" is forbidden: ]admission webhook "<webhook>" denied the request: <verdict>`
/// (k8s.io/apiserver `pkg/admission/plugin/webhook/errors/statuserror.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deny {
    /// The webhook's `name` as the API server quotes it.
    pub webhook: String,
    /// Everything after `denied the request` (without the `: ` separator).
    pub verdict: String,
}

/// Parses a deny message; `None` when `message` is not an admission webhook's deny.
pub fn parse_deny(message: &str) -> Option<Deny> {
    let start = message.find("admission webhook \"")? + "admission webhook \"".len();
    let rest = &message[start..];
    let close = rest.find('"')?;
    let webhook = &rest[..close];
    let after = &rest[close + 1..];
    let after = after.strip_prefix(' ')?.strip_prefix(DENIED)?;
    let verdict = after.strip_prefix(": ").unwrap_or(after);
    Some(Deny {
        webhook: webhook.to_owned(),
        verdict: verdict.to_owned(),
    })
}

/// A failed call from the API server to a webhook, parsed from the verbatim message Go's
/// admission plugin writes: `failed calling webhook "<webhook>": failed to call webhook:
/// Post "<url>?timeout=<T>s": <cause>` (k8s.io/apiserver `pkg/admission/plugin/webhook/errors`,
/// `ErrCallingWebhook`; the URL is Go's `*url.Error` with the `timeout` query the webhook client
/// adds from `timeoutSeconds`, `pkg/util/webhook/webhook.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// The webhook's `name`.
    pub webhook: String,
    /// The URL the API server posted to, verbatim (with its query), when the message names one.
    pub url: Option<String>,
    /// The URL's path (e.g. `/vpol/kca-webhook-label`), when a URL is named.
    pub path: Option<String>,
    /// The `timeout=` query of the URL, in seconds (`3s` → 3), when present and whole seconds.
    pub timeout_seconds: Option<u32>,
    /// The `timeout=` query verbatim (e.g. `3s`, `10s`, `1m0s`).
    pub timeout_query: Option<String>,
    /// The text after the URL (Go's cause), or after `failed calling webhook "<name>": `.
    pub cause: String,
}

/// Parses a call-failure message; `None` when `message` does not say `failed calling webhook`.
pub fn parse_call_failure(message: &str) -> Option<CallFailure> {
    let start = message.find(CALLING)? + CALLING.len();
    let rest = message[start..].trim_start().strip_prefix('"')?;
    let close = rest.find('"')?;
    let webhook = rest[..close].to_owned();
    let after = rest[close + 1..].trim_start_matches(':').trim_start();
    // `failed to call webhook: Post "<url>": <cause>` (Go's url.Error: Op "URL": Err).
    let (url, cause) = match after.find("Post \"") {
        Some(p) => {
            let u = &after[p + "Post \"".len()..];
            match u.find('"') {
                Some(e) => (
                    Some(u[..e].to_owned()),
                    u[e + 1..].trim_start_matches(':').trim_start().to_owned(),
                ),
                None => (None, after.to_owned()),
            }
        }
        None => (None, after.to_owned()),
    };
    let parsed = url.as_deref().and_then(|u| url::Url::parse(u).ok());
    let path = parsed.as_ref().map(|u| u.path().to_owned());
    let timeout_query = parsed.as_ref().and_then(|u| {
        u.query_pairs()
            .find(|(k, _)| k == "timeout")
            .map(|(_, v)| v.into_owned())
    });
    let timeout_seconds = timeout_query.as_deref().and_then(go_duration_seconds);
    Some(CallFailure {
        webhook,
        url,
        path,
        timeout_seconds,
        timeout_query,
        cause,
    })
}

/// Whole seconds of a Go `time.Duration` string as the webhook client writes it in the
/// `timeout` query (`3s`, `10s`, `1m0s`, `30s`); `None` for other shapes or fractions.
fn go_duration_seconds(s: &str) -> Option<u32> {
    let (min, sec) = match s.split_once('m') {
        Some((m, rest)) => (m.parse::<u32>().ok()?, rest),
        None => (0, s),
    };
    let sec = sec.strip_suffix('s')?;
    let sec = if sec.is_empty() {
        0
    } else {
        sec.parse::<u32>().ok()?
    };
    Some(min * 60 + sec)
}

/// The `(reason, message)` a record keeps from an answer's verbatim body, by one rule for the
/// probe that records and the grader that re-reads the record: a `Status` body (`kind: Status`,
/// metav1.Status) gives its `reason` (an empty one is none: a webhook deny has an empty reason,
/// k8s.io/apiserver `pkg/admission/plugin/webhook/errors/statuserror.go`) and its `message`;
/// another body of a refusal
/// (a proxy's text) is the message itself; a success has neither.
pub fn answer_fields(
    http_status: u16,
    body: &serde_json::Value,
) -> (Option<String>, Option<String>) {
    if body.get("kind").and_then(|k| k.as_str()) == Some("Status") {
        (
            body.get("reason")
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            body.get("message")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
        )
    } else if !(200..300).contains(&http_status) {
        (None, body.as_str().map(str::to_owned))
    } else {
        (None, None)
    }
}

/// Classifies one API answer plus its follow-up GET into an [`Outcome`].
///
/// - `http_status`, `reason`, `message`: the answer verbatim (`reason`/`message` from the `Status` body
///   of an error answer, `None` on success).
/// - `get`: the separate GET by name made after the request.
/// - `dry_run`: whether the request was a server-side dry-run.
/// - `policy`: what makes a deny this policy's verdict ([`LAB_POLICY`] for the labs).
///
/// Rules, in order:
/// 1. 2xx: not dry-run → `stored` only if the GET found the object with a non-empty UID;
///    dry-run → `dry-run-admitted` only if the GET found nothing. Anything else contradicts
///    itself and is `other-error` (the raw answer says more).
/// 2. 409 or reason `AlreadyExists` → `already-exists` (never a policy decision).
/// 3. a status of [`EXPLICIT_DENY_STATUSES`] with `admission webhook "…" denied the request: <verdict>` → `explicit-deny` only if
///    the verdict carries the policy's verdict text `Policy <policy> failed: <message>`; an
///    evaluation error (`Policy <policy> error: …`), another policy's or another webhook's deny
///    is `other-error`. Which webhook denied is checked by the grader against the registration.
/// 4. A message with `failed calling webhook` → by its cause: timeout, refused, DNS, no endpoints
///    (including the shapes k3s's egress proxy gives, see the table above); any other cause
///    (TLS, `service "x" not found`, …) → `other-error`.
/// 5. Everything else (e.g. 504 `Timeout` of the request itself, `does not support dry run`) →
///    `other-error`.
pub fn classify(
    http_status: u16,
    reason: Option<&str>,
    message: Option<&str>,
    get: &GetResult,
    dry_run: bool,
    policy: &PolicyVerdict,
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
    if is_explicit_deny_status(http_status)
        && let Some(deny) = parse_deny(msg)
    {
        let verdict = !policy.policy.is_empty()
            && !policy.message.is_empty()
            && deny.verdict.contains(&policy.text());
        return if verdict {
            Outcome::ExplicitDeny
        } else {
            Outcome::OtherError
        };
    }
    if let Some(call) = parse_call_failure(msg) {
        return call_failure_outcome(&call.cause);
    }
    Outcome::OtherError
}

/// Whether `cause` is an egress proxy's refusal of the CONNECT to the webhook's endpoint
/// (k8s.io/apiserver `egress_selector.go` `tunnelHTTPConnect`: `proxy error from <proxy> while
/// dialing <addr>, code <n>: <status>`) with 502 or 503, what k3s's tunnel server answers when
/// it cannot dial the endpoint (k3s `pkg/daemons/control/tunnel.go` `serveConnect`).
fn proxy_refused_dial(cause: &str) -> bool {
    cause.starts_with("proxy error from ")
        && cause.contains(" while dialing ")
        && (cause.contains(", code 503: ") || cause.contains(", code 502: "))
}

/// The outcome of a failed webhook call by its cause (Go's error text after the URL).
fn call_failure_outcome(cause: &str) -> Outcome {
    if cause.contains("context deadline exceeded")
        || cause.contains("Client.Timeout exceeded")
        || cause.contains("i/o timeout")
    {
        return Outcome::WebhookTimeout;
    }
    if cause.contains("connection refused") || proxy_refused_dial(cause) {
        return Outcome::ConnectionRefused;
    }
    if cause.contains("no such host") {
        return Outcome::DnsError;
    }
    if cause.contains("no endpoints available for service") {
        return Outcome::NoEndpoints;
    }
    Outcome::OtherError
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const MARKERS: &PolicyVerdict = &LAB_POLICY;
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
    // Deny, long-standing ToStatusErr: code 0 raised to 400, empty reason (apiserver `webhook/errors/statuserror.go`; kyverno `vpol/handler.go`).
    #[case::deny_400(400, Some(""), format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    #[case::deny_400_no_reason(400, None, format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    // Deny, newer ToStatusErr: 403 Forbidden with the resource prefix (apiserver `ToStatusErr`).
    #[case::deny_403(403, Some("Forbidden"), format!("pods \"bad-7f3a\" is forbidden: admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::ExplicitDeny)]
    // Aggregated webhook name, marker only in the text.
    #[case::deny_aggregated(400, None, "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED".to_owned(), Outcome::ExplicitDeny)]
    // A deny answered with a status outside EXPLICIT_DENY_STATUSES (a webhook's own code) is
    // not what the audit and metrics rules count as an explicit deny: one table decides.
    #[case::deny_422(422, None, format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::OtherError)]
    // A deny by some other webhook, without the policy's marker, is not this policy's deny.
    #[case::deny_without_marker(400, None, "admission webhook \"other.example.com\" denied the request: image not allowed".to_owned(), Outcome::OtherError)]
    // The marker only in the webhook name part does not count.
    #[case::marker_only_in_name(400, None, format!("admission webhook \"{HOOK}\" denied the request without explanation"), Outcome::OtherError)]
    // Kyverno's evaluation-error form (kyverno `vpol/handler.go`, kyverno#8916): not the policy's verdict,
    // even from the policy's own webhook and naming the policy.
    #[case::evaluation_error(400, None, format!("admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label error: failed to evaluate validation expression: no such key: labels"), Outcome::OtherError)]
    #[case::evaluation_error_403(403, Some("Forbidden"), format!("pods \"bad-1\" is forbidden: admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label error: error: no such key: labels"), Outcome::OtherError)]
    // Another policy's verdict with the same message text is not this policy's.
    #[case::other_policy(400, None, format!("admission webhook \"{HOOK}\" denied the request: Policy other-policy failed: KCA_ENVIRONMENT_REQUIRED"), Outcome::OtherError)]
    // The message alone, without Kyverno's per-policy form, is not the verdict.
    #[case::message_only(400, None, format!("admission webhook \"{HOOK}\" denied the request: KCA_ENVIRONMENT_REQUIRED"), Outcome::OtherError)]
    // Aggregated webhook: several policies joined by `; ` (multierr, kyverno `vpol/handler.go`).
    #[case::joined(400, None, "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy a failed: x; Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED".to_owned(), Outcome::ExplicitDeny)]
    // Timeout with failurePolicy Fail (apiserver `validating/dispatcher.go`, `util/webhook/error.go`).
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
    // Connection refused (apiserver `util/webhook/error.go`).
    #[case::refused(
        500,
        Some("InternalError"),
        call_failure("dial tcp 10.43.12.7:443: connect: connection refused"),
        Outcome::ConnectionRefused
    )]
    // DNS (apiserver `util/webhook/client.go`).
    #[case::dns(500, Some("InternalError"), "Internal error occurred: failed calling webhook \"x.example\": failed to call webhook: Post \"https://hook.example.invalid:443/x?timeout=3s\": dial tcp: lookup hook.example.invalid on 10.0.0.10:53: no such host".to_owned(), Outcome::DnsError)]
    // No endpoints (apiserver `util/proxy/proxy.go`, endpoint routing).
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
    // k3s: the API server reaches webhooks through k3s's egress proxy (HTTP CONNECT); a dial the
    // proxy could not make comes back as the CONNECT's status line, the dial error hidden.
    // Reported on k3s v1.26.6 (cert-manager/cert-manager#6522) and k3s with metallb
    // (bitnami/charts#15094), verbatim apart from the webhook:
    #[case::k3s_proxy_503(
        500,
        Some("InternalError"),
        call_failure(
            "proxy error from 127.0.0.1:6443 while dialing 10.42.3.16:9443, code 503: 503 Service Unavailable"
        ),
        Outcome::ConnectionRefused
    )]
    // Newer k3s tunnel servers answer 502 (k3s pkg/daemons/control/tunnel.go serveConnect:
    // util.SendError(err, resp, req, http.StatusBadGateway)); the API server's text is the
    // same format (k8s.io/apiserver pkg/server/egressselector/egress_selector.go).
    #[case::k3s_proxy_502(
        500,
        Some("InternalError"),
        call_failure(
            "proxy error from 127.0.0.1:6443 while dialing 10.42.0.9:9443, code 502: 502 Bad Gateway"
        ),
        Outcome::ConnectionRefused
    )]
    // The same from another proxy address (AKS konnectivity, mariadb-operator#1147).
    #[case::proxy_503_localhost(
        500,
        Some("InternalError"),
        call_failure(
            "proxy error from localhost:9443 while dialing 10.149.1.144:9443, code 503: 503 Service Unavailable"
        ),
        Outcome::ConnectionRefused
    )]
    // The proxy itself failed (egress_selector.go): not the webhook's endpoint.
    #[case::proxy_read_failed(
        500,
        Some("InternalError"),
        call_failure(
            "reading HTTP response from CONNECT to 10.42.0.9:9443 via proxy 127.0.0.1:6443 failed: EOF"
        ),
        Outcome::OtherError
    )]
    // A proxy answering another code (e.g. 403 from an authorizer) is not a refused dial.
    #[case::proxy_403(
        500,
        Some("InternalError"),
        call_failure(
            "proxy error from 127.0.0.1:6443 while dialing 10.42.0.9:9443, code 403: 403 Forbidden"
        ),
        Outcome::OtherError
    )]
    // Through the proxy, a frozen endpoint still accepts the TCP connection, so the call runs
    // into the webhook's own deadline (the lab B freeze on k3s).
    #[case::k3s_proxy_timeout(
        500,
        Some("InternalError"),
        call_failure("context deadline exceeded"),
        Outcome::WebhookTimeout
    )]
    // k3s with egress-selector-mode disabled and an ExternalName service (k3s-io/k3s#7971).
    #[case::k3s_external_name(
        500,
        Some("InternalError"),
        call_failure("unsupported service type \"ExternalName\""),
        Outcome::OtherError
    )]
    // k3s egress tunnel dropping the connection (k3s-io/k3s#5835, rancher/rancher#39063).
    #[case::k3s_eof(500, Some("InternalError"), call_failure("EOF"), Outcome::OtherError)]
    // 409 AlreadyExists is never a policy decision.
    #[case::already_exists(409, Some("AlreadyExists"), "pods \"good-1\" already exists".to_owned(), Outcome::AlreadyExists)]
    // Request deadline, not the webhook's (apiserver `endpoints/filters/request_deadline.go`, separate case).
    #[case::request_timeout(504, Some("Timeout"), "Timeout: request did not complete within requested timeout".to_owned(), Outcome::OtherError)]
    // Dry-run against a webhook with sideEffects Unknown/Some (apiserver `validating/dispatcher.go` and `webhook/errors/errors.go`, `NewDryRunUnsupportedErr`).
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
    fn deny_needs_the_policys_verdict() {
        let m = format!(
            "admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
        );
        let c = |p: &PolicyVerdict| classify(400, None, Some(&m), &get(false, None), false, p);
        assert_eq!(
            c(&PolicyVerdict {
                policy: "",
                message: ""
            }),
            Outcome::OtherError
        );
        assert_eq!(
            c(&PolicyVerdict {
                policy: "kca-webhook-label",
                message: ""
            }),
            Outcome::OtherError
        );
        assert_eq!(
            c(&PolicyVerdict {
                policy: "other-policy",
                message: "KCA_ENVIRONMENT_REQUIRED"
            }),
            Outcome::OtherError
        );
        assert_eq!(c(&LAB_POLICY), Outcome::ExplicitDeny);
    }

    #[test]
    fn a_call_failure_names_webhook_url_and_timeout() {
        let c = parse_call_failure(&call_failure("context deadline exceeded")).unwrap();
        assert_eq!(c.webhook, HOOK);
        assert_eq!(
            c.url.as_deref(),
            Some("https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s")
        );
        assert_eq!(c.path.as_deref(), Some("/vpol/kca-webhook-label"));
        assert_eq!(c.timeout_seconds, Some(3));
        assert_eq!(c.timeout_query.as_deref(), Some("3s"));
        assert_eq!(c.cause, "context deadline exceeded");
        // Another webhook, another timeout (kyverno#2869, #3232): parsed as they are.
        let other = parse_call_failure("Internal error occurred: failed calling webhook \"mutate.kyverno.svc-fail\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/mutate/fail?timeout=10s\": context deadline exceeded").unwrap();
        assert_eq!(other.webhook, "mutate.kyverno.svc-fail");
        assert_eq!(other.path.as_deref(), Some("/mutate/fail"));
        assert_eq!(other.timeout_seconds, Some(10));
        assert_eq!(go_duration_seconds("1m0s"), Some(60));
        assert_eq!(go_duration_seconds("1m30s"), Some(90));
        assert_eq!(go_duration_seconds("1.5s"), None);
        // Without a URL (e.g. the no-endpoints form), the webhook is still named.
        let ne = parse_call_failure(
            "failed calling webhook \"x.example\": no endpoints available for service \"svc\"",
        )
        .unwrap();
        assert_eq!(ne.webhook, "x.example");
        assert_eq!(ne.url, None);
        assert_eq!(ne.timeout_seconds, None);
        assert!(parse_call_failure("Internal error occurred: something else").is_none());
    }

    #[test]
    fn a_deny_names_its_webhook_and_verdict() {
        let d = parse_deny(&format!("pods \"bad-7f3a\" is forbidden: admission webhook \"{HOOK}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED")).unwrap();
        assert_eq!(d.webhook, HOOK);
        assert_eq!(
            d.verdict,
            "Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
        );
        assert!(
            parse_deny(&format!(
                "admission webhook \"{HOOK}\" does not support dry run"
            ))
            .is_none()
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
