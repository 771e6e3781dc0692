//! The API server's audit log, held beside each request an act sends: the audit events of the
//! act's own requests, verbatim (raw JSON lines) plus a parsed view.
//!
//! **Where the log comes from.** Only the embedded backend configures one: xtask starts
//! kube-apiserver with `--audit-policy-file`, `--audit-log-path=<state>/audit/audit.log`
//! (`0600`), `--audit-log-format=json`, `--audit-log-mode=blocking` and a bounded size
//! (`xtask::cluster::daemons::apiserver`). The lab learns the path one way: [`AuditSource`] in
//! `lab::labs::Env` (`--audit-log PATH`, env [`ENV_VAR`]); xtask's `LabRun` and the test
//! fixture set it for the embedded backend, never for the kubeconfig and k3s backends. Without it
//! the record says `not-configured`; a log that cannot be read says `read-error` with the error.
//!
//! **Matching.** An event belongs to a request when its `objectRef` names the request's pod
//! (`resource` `pods`, namespace, name: names are fresh per request), its `verb` is `create`
//! and its `requestReceivedTimestamp` lies in `[sent_at - 2 s, answered_at + 2 s]`
//! ([`CLOCK_SLACK_MS`]; the API server and the tool share the host clock on the embedded node).
//! The stage to hold is `ResponseComplete` (or `Panic`); after the act's last answer the log is
//! polled, bounded by [`WAIT_BOUND`], until every request has one (the audit filter writes the
//! final stage after the handler returns, so it may land just after the client read the answer).
//!
//! **What the events say** (k8s.io/apiserver v0.35
//! `pkg/admission/plugin/webhook/validating/dispatcher.go`):
//! `responseStatus.code` is the HTTP status the client got; a validating webhook that failed
//! open under failurePolicy Ignore leaves the annotation
//! `failed-open.validating.webhook.admission.k8s.io/round_<r>_index_<i>` = the webhook's name
//! ([`FAILED_OPEN_PREFIX`]); a webhook's own `auditAnnotations` appear as `<webhook name>/<key>`.
//! The graders hold these against the outcomes ([`crate::grade::audit`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::evidence::RequestRecord;
use crate::facts::now_rfc3339;
use crate::wait::{Check, Wait, WaitError};

/// The key under an act's `facts` that holds its [`AdmissionAudit`].
pub use crate::evidence::AUDIT_KEY as FACTS_KEY;
/// The environment variable naming the audit log (same as `--audit-log`).
pub const ENV_VAR: &str = "KCA_AUDIT_LOG";
/// Annotation key prefix of a validating webhook that failed open (kube-apiserver
/// `pkg/admission/plugin/webhook/validating/dispatcher.go`, `ValidatingAuditAnnotationFailedOpenKeyPrefix`).
pub const FAILED_OPEN_PREFIX: &str = "failed-open.validating.webhook.admission.k8s.io/";
/// How long to wait after an act's last answer for every request's final audit event.
pub const WAIT_BOUND: Duration = Duration::from_secs(10);
/// Slack on each side of a request's `[sent_at, answered_at]` when matching an event's
/// `requestReceivedTimestamp`, milliseconds.
pub const CLOCK_SLACK_MS: i64 = 2000;
/// The final stages (the one to hold).
pub const FINAL_STAGES: &[&str] = &["ResponseComplete", "Panic"];

/// Audit annotation with the API server's own timing of the validating webhook calls of a
/// request (a Go `time.Duration` string, e.g. `3.000599063s`, `11.402ms`): written by the
/// latency tracker (kubernetes PR #115802) only when the request itself took longer than
/// [`LATENCY_ANNOTATION_THRESHOLD_MS`]; absent on older API servers.
pub const VALIDATING_WEBHOOK_LATENCY: &str = "apiserver.latency.k8s.io/validating-webhook";
/// The API server writes `apiserver.latency.k8s.io/*` annotations only for a request whose
/// `stageTimestamp − requestReceivedTimestamp` exceeds this, milliseconds (k8s.io/apiserver
/// `pkg/endpoints/filters/audit.go`, `writeLatencyToAnnotation`: 500 ms, the threshold of the
/// handlers' traces).
pub const LATENCY_ANNOTATION_THRESHOLD_MS: f64 = 500.0;

/// Milliseconds of a Go `time.Duration` string as `Duration.String()` writes it (`0s`,
/// `850ns`, `167.389µs`, `11.402ms`, `3.000599063s`, `1m2.5s`, `1h0m0s`); `None` for any other
/// text. Pure.
pub fn go_duration_ms(s: &str) -> Option<f64> {
    let mut rest = s.strip_prefix('-').unwrap_or(s);
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let (unit, len) = [
            ("ns", 1e-6),
            ("us", 1e-3),
            ("\u{b5}s", 1e-3),
            ("\u{3bc}s", 1e-3),
            ("ms", 1.0),
            ("s", 1e3),
            ("m", 6e4),
            ("h", 3.6e6),
        ]
        .iter()
        .find(|(u, _)| rest.starts_with(u))
        .map(|(u, f)| (*f, u.len()))?;
        total += n * unit;
        rest = &rest[len..];
    }
    Some(if s.starts_with('-') { -total } else { total })
}

/// Where the acts read the API server's audit log from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AuditSource {
    /// No audit log is known (the kubeconfig and k3s backends; a student's VM).
    #[default]
    NotConfigured,
    /// The API server's audit log (JSON lines), e.g. `<state>/audit/audit.log` of the embedded node.
    Log(PathBuf),
}

impl AuditSource {
    /// From `--audit-log` / [`ENV_VAR`]: a path, or nothing.
    pub fn from_option(path: Option<PathBuf>) -> AuditSource {
        match path {
            Some(p) if !p.as_os_str().is_empty() => AuditSource::Log(p),
            _ => AuditSource::NotConfigured,
        }
    }
}

/// Whether the act's audit events could be observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditStatus {
    /// The log was read; each request has its events (or says why not).
    Observed,
    /// No audit log was configured for this backend.
    NotConfigured,
    /// The log could not be read (the error is in `reason`).
    ReadError,
}

/// The parsed view of one audit event line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventView {
    /// Index of the verbatim line in [`RequestAudit::lines`].
    pub line: usize,
    /// `auditID`.
    pub audit_id: String,
    /// `stage` (`ResponseComplete`, `Panic`, …).
    pub stage: String,
    /// `verb` (`create`).
    pub verb: String,
    /// `requestURI` (a dry-run carries `dryRun=All`).
    pub request_uri: String,
    /// `responseStatus.code`: the HTTP status the client got.
    pub code: Option<u16>,
    /// `responseStatus.message` (present on failures: the deny's or the call failure's text,
    /// as the client got it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `requestReceivedTimestamp` (RFC 3339, µs, UTC).
    pub received: Option<String>,
    /// `stageTimestamp`.
    pub stage_timestamp: Option<String>,
    /// `annotations` (authorization, pod security, `failed-open…`, a webhook's own).
    pub annotations: BTreeMap<String, String>,
}

impl EventView {
    /// Whether this is a final stage ([`FINAL_STAGES`]).
    pub fn is_final(&self) -> bool {
        FINAL_STAGES.contains(&self.stage.as_str())
    }

    /// The API server's own timing of the request's validating webhook calls, milliseconds
    /// ([`VALIDATING_WEBHOOK_LATENCY`]): `None` when absent, `Some(None)` when unparsable.
    pub fn validating_webhook_ms(&self) -> Option<Option<f64>> {
        self.annotations
            .get(VALIDATING_WEBHOOK_LATENCY)
            .map(|v| go_duration_ms(v))
    }

    /// `stageTimestamp − requestReceivedTimestamp`, milliseconds (how long the API server held
    /// the request), when both parse.
    pub fn span_ms(&self) -> Option<f64> {
        let t = |s: &Option<String>| {
            s.as_deref()
                .and_then(|x| chrono::DateTime::parse_from_rfc3339(x).ok())
        };
        let (a, b) = (t(&self.received)?, t(&self.stage_timestamp)?);
        Some((b - a).num_microseconds()? as f64 / 1000.0)
    }

    /// The `failed-open.validating…` annotations: (key, webhook name).
    pub fn failed_open(&self) -> Vec<(&str, &str)> {
        self.annotations
            .iter()
            .filter(|(k, _)| k.starts_with(FAILED_OPEN_PREFIX))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

/// The audit events of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestAudit {
    /// The request's object name (as in its [`RequestRecord`]).
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The request's `sent_at`.
    pub sent_at: String,
    /// The request's `answered_at`.
    pub answered_at: String,
    /// The matching audit lines, verbatim, in log order.
    pub lines: Vec<String>,
    /// The parsed view of [`Self::lines`] ([`parse_line`]).
    pub events: Vec<EventView>,
    /// Why no final event is there (what was waited for, how long, the last stage seen);
    /// `None` when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl RequestAudit {
    /// The last final-stage event ([`FINAL_STAGES`]), the one the graders hold.
    pub fn final_event(&self) -> Option<&EventView> {
        self.events.iter().rev().find(|e| e.is_final())
    }
}

/// The audit record of one act.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionAudit {
    /// What was read.
    pub source: String,
    /// Observed, not configured, or a read error.
    pub status: AuditStatus,
    /// Why not observed (absent when observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The log's path, when one was configured.
    pub log: Option<String>,
    /// Byte offset of the log where the act's window began.
    pub offset: Option<u64>,
    /// When the window began and ended, RFC 3339 UTC (ms).
    pub window: (String, String),
    /// How long the final events were waited for after the last answer, ms.
    pub waited_ms: u64,
    /// One entry per request of the act, by name.
    pub requests: Vec<RequestAudit>,
}

impl AdmissionAudit {
    /// Puts this record under [`FACTS_KEY`] of `facts` when `facts` is a JSON object.
    pub fn attach(&self, facts: &mut serde_json::Value) {
        if let (Some(obj), Ok(v)) = (facts.as_object_mut(), serde_json::to_value(self)) {
            obj.insert(FACTS_KEY.to_owned(), v);
        }
    }

    /// The entry of request `name`.
    pub fn request(&self, name: &str) -> Option<&RequestAudit> {
        self.requests.iter().find(|r| r.name == name)
    }
}

/// Copies [`FACTS_KEY`] from `from` into `to` when both are objects.
pub fn carry(from: &serde_json::Value, to: &mut serde_json::Value) {
    if let (Some(m), Some(obj)) = (from.get(FACTS_KEY), to.as_object_mut()) {
        obj.insert(FACTS_KEY.to_owned(), m.clone());
    }
}

/// Parses one audit line into its view (`line` is its index). Pure.
///
/// Errors: the line is not a JSON object (the serde error).
pub fn parse_line(line: usize, text: &str) -> Result<EventView, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let s = |p: &str| v.pointer(p).and_then(|x| x.as_str()).map(str::to_owned);
    if !v.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(EventView {
        line,
        audit_id: s("/auditID").unwrap_or_default(),
        stage: s("/stage").unwrap_or_default(),
        verb: s("/verb").unwrap_or_default(),
        request_uri: s("/requestURI").unwrap_or_default(),
        code: v
            .pointer("/responseStatus/code")
            .and_then(serde_json::Value::as_u64)
            .and_then(|c| u16::try_from(c).ok()),
        message: s("/responseStatus/message"),
        received: s("/requestReceivedTimestamp"),
        stage_timestamp: s("/stageTimestamp"),
        annotations: v
            .get("annotations")
            .and_then(|a| a.as_object())
            .map(|o| {
                o.iter()
                    .map(|(k, x)| (k.clone(), x.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

fn ms_of(t: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.timestamp_millis())
}

/// Whether audit line `text` is an event of request `r` ([module docs](self): objectRef pod
/// name + namespace, verb `create`, received inside the request's window ± [`CLOCK_SLACK_MS`]).
/// Pure.
pub fn matches(r: &RequestRecord, text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    let s = |p: &str| v.pointer(p).and_then(|x| x.as_str());
    if s("/objectRef/resource") != Some("pods")
        || s("/objectRef/namespace") != Some(r.namespace.as_str())
        || s("/objectRef/name") != Some(r.name.as_str())
        || s("/verb") != Some("create")
    {
        return false;
    }
    match (
        s("/requestReceivedTimestamp").and_then(ms_of),
        ms_of(&r.sent_at),
        ms_of(&r.answered_at),
    ) {
        (Some(at), Some(from), Some(to)) => {
            at >= from - CLOCK_SLACK_MS && at <= to + CLOCK_SLACK_MS
        }
        _ => false,
    }
}

/// The events of request `r` among `lines` (complete lines of the log). Pure.
pub fn request_audit(r: &RequestRecord, lines: &[String]) -> RequestAudit {
    let lines: Vec<String> = lines.iter().filter(|l| matches(r, l)).cloned().collect();
    let events = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| parse_line(i, l).ok())
        .collect();
    RequestAudit {
        name: r.name.clone(),
        namespace: r.namespace.clone(),
        sent_at: r.sent_at.clone(),
        answered_at: r.answered_at.clone(),
        lines,
        events,
        missing: None,
    }
}

/// An act's audit window: [`Cursor::begin`] before its first request, [`Cursor::finish`] when the
/// act writes its evidence.
#[derive(Debug)]
pub struct Cursor {
    source: AuditSource,
    at: String,
    start: Result<u64, String>,
}

impl Cursor {
    /// Notes where the log ends now (its size), so only later lines are read.
    pub fn begin(source: &AuditSource) -> Cursor {
        let start = match source {
            AuditSource::NotConfigured => Err(String::new()),
            AuditSource::Log(p) => std::fs::metadata(p)
                .map(|m| m.len())
                .map_err(|e| format!("reading the audit log {}: {e}", p.display())),
        };
        Cursor {
            source: source.clone(),
            at: now_rfc3339(),
            start,
        }
    }

    /// Reads the log from the window's start and records the events of every request under
    /// `roots` (the act's facts and raw entries), polling every 200 ms up to [`WAIT_BOUND`] until
    /// each request has a final event (this blocks the calling thread for that long at most; it
    /// runs once, when the act writes its evidence). Never fails: a read error is recorded as
    /// [`AuditStatus::ReadError`].
    pub fn finish(&self, roots: &[&serde_json::Value]) -> AdmissionAudit {
        self.finish_within(roots, WAIT_BOUND)
    }

    /// [`Cursor::finish`] with another bound on the wait for the final events.
    pub fn finish_within(&self, roots: &[&serde_json::Value], bound: Duration) -> AdmissionAudit {
        let requests = crate::evidence::request_records(roots);
        let mut out = AdmissionAudit {
            source: String::new(),
            status: AuditStatus::Observed,
            reason: None,
            log: None,
            offset: None,
            window: (self.at.clone(), String::new()),
            waited_ms: 0,
            requests: Vec::new(),
        };
        let path = match &self.source {
            AuditSource::NotConfigured => {
                out.source = "none".into();
                out.status = AuditStatus::NotConfigured;
                out.reason = Some(format!(
                    "no audit log configured (--audit-log / {ENV_VAR}): only the embedded backend's API server writes one"
                ));
                out.window.1 = now_rfc3339();
                return out;
            }
            AuditSource::Log(p) => p.clone(),
        };
        out.source = format!(
            "kube-apiserver audit log (--audit-log-path) {}",
            path.display()
        );
        out.log = Some(path.display().to_string());
        let offset = match &self.start {
            Ok(o) => *o,
            Err(e) => {
                out.status = AuditStatus::ReadError;
                out.reason = Some(e.clone());
                out.window.1 = now_rfc3339();
                return out;
            }
        };
        out.offset = Some(offset);
        let started = Instant::now();
        // Until every request's final event is in the log, or the bound: either way the events
        // seen are kept (a missing one is said below), only a read error ends it without them.
        let seen = Wait::new(
            "every request's final audit event",
            bound,
            Duration::from_millis(200),
        )
        .blocking(
            || {
                let lines = read_from(&path, offset)?;
                let audits = requests
                    .values()
                    .map(|r| request_audit(r, &lines))
                    .collect::<Vec<_>>();
                Ok(if audits.iter().all(|a| a.final_event().is_some()) {
                    Check::Done(audits)
                } else {
                    Check::NotYet(audits)
                })
            },
            |_, _| {},
        );
        let mut audits = match seen {
            Ok(a) => a,
            Err(WaitError::TimedOut(t)) => t.last,
            Err(WaitError::Failed(e)) => {
                out.status = AuditStatus::ReadError;
                out.reason = Some(e);
                out.window.1 = now_rfc3339();
                return out;
            }
        };
        out.waited_ms = started.elapsed().as_millis() as u64;
        for a in &mut audits {
            if a.final_event().is_none() {
                a.missing = Some(format!(
                    "no ResponseComplete/Panic event for pod {}/{} (verb create, received {} .. {} ± {CLOCK_SLACK_MS} ms) after waiting {} ms; stages seen: [{}]",
                    a.namespace,
                    a.name,
                    a.sent_at,
                    a.answered_at,
                    out.waited_ms,
                    a.events
                        .iter()
                        .map(|e| e.stage.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        out.requests = audits;
        out.window.1 = now_rfc3339();
        out
    }
}

/// The complete lines of `path` from byte `offset` (a shorter file means it was rotated: read
/// from its start).
fn read_from(path: &std::path::Path, offset: u64) -> Result<Vec<String>, String> {
    let err = |e: std::io::Error| format!("reading the audit log {}: {e}", path.display());
    // A regular file only, at most AUDIT_LOG_BOUND bytes after the offset.
    let buf = crate::files::read_regular_from(path, offset, crate::files::AUDIT_LOG_BOUND)
        .map_err(err)?;
    let text = String::from_utf8_lossy(&buf);
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    Ok(complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect())
}

/// Up to this many requests, an act's audit summary lists each ([`request_summary`]); more are
/// counted by outcome ([`outcome_counts`]).
pub const LISTED_REQUESTS: usize = 6;

/// One short line for an act's summary, in both languages (words in
/// [`crate::messages::act`]): [`request_summary`] of each request (at most [`LISTED_REQUESTS`];
/// more are counted by outcome, with `evidence`, the act's evidence file, named as where each
/// request's events are), or why audit was not observed (`not-configured` or `read-error`,
/// verbatim).
pub fn summary_line(a: &AdmissionAudit, evidence: &str) -> crate::text::Line {
    use crate::messages::act as words;
    if a.status != AuditStatus::Observed {
        return words::audit_not_observed(
            match a.status {
                AuditStatus::NotConfigured => "not-configured",
                _ => "read-error",
            },
            a.reason.as_deref().unwrap_or(""),
        );
    }
    if a.requests.len() > LISTED_REQUESTS {
        return words::audit_counted(a.requests.len(), &outcome_counts(a), evidence, FACTS_KEY);
    }
    let parts: Vec<String> = a.requests.iter().map(request_summary).collect();
    words::audit_observed(&parts.join("; "))
}

/// The requests' final events counted by outcome: `code [annotation keys] ×N`, joined by `, `,
/// most frequent first (the [`short_annotation`] keys only; their values, e.g. latencies, differ
/// per request); a request without a final event counts as `no-final-event`.
pub fn outcome_counts(a: &AdmissionAudit) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &a.requests {
        let key = match r.final_event() {
            Some(e) => {
                let keys: Vec<&str> = e
                    .annotations
                    .keys()
                    .filter(|k| short_annotation(k))
                    .map(String::as_str)
                    .collect();
                let code = e.code.map_or("?".into(), |c| c.to_string());
                if keys.is_empty() {
                    code
                } else {
                    format!("{code} [{}]", keys.join(", "))
                }
            }
            None => "no-final-event".to_owned(),
        };
        *counts.entry(key).or_default() += 1;
    }
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    counts
        .iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether annotation `key` goes into the short view ([`request_summary`]): not the
/// `authorization.k8s.io/*` and `pod-security.kubernetes.io/*` ones every event carries, and of
/// the `apiserver.latency.k8s.io/*` ones (written for slow requests) only `validating-webhook`.
pub fn short_annotation(key: &str) -> bool {
    !(key.starts_with("authorization.k8s.io/")
        || key.starts_with("pod-security.kubernetes.io/")
        || (key.starts_with("apiserver.latency.k8s.io/")
            && key != "apiserver.latency.k8s.io/validating-webhook"))
}

/// `name code [key=value, …]` of one request's final event ([`short_annotation`]s only), or
/// `name: no final audit event`.
pub fn request_summary(r: &RequestAudit) -> String {
    match r.final_event() {
        Some(e) => {
            let ann: Vec<String> = e
                .annotations
                .iter()
                .filter(|(k, _)| short_annotation(k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!(
                "{} {} {}",
                r.name,
                e.code.map_or("?".into(), |c| c.to_string()),
                if ann.is_empty() {
                    String::new()
                } else {
                    format!("[{}]", ann.join(", "))
                }
            )
            .trim_end()
            .to_owned()
        }
        None => format!("{}: no final audit event", r.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_read_as_milliseconds() {
        let ms = |s: &str| go_duration_ms(s);
        assert_eq!(ms("3.000599063s"), Some(3000.599063));
        assert_eq!(ms("11.402ms"), Some(11.402));
        assert!((ms("167.389\u{b5}s").unwrap() - 0.167389).abs() < 1e-9);
        assert_eq!(ms("850ns"), Some(0.00085));
        assert_eq!(ms("1m2.5s"), Some(62_500.0));
        assert_eq!(ms("1h0m0s"), Some(3_600_000.0));
        assert_eq!(ms("0s"), Some(0.0));
        for bad in ["", "3", "3 s", "s", "3x", "1.2.3s"] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
    }

    fn record(name: &str) -> RequestRecord {
        serde_json::from_value(serde_json::json!({
            "name": name, "namespace": "kca-webhook-target", "labels": {}, "dry_run": false,
            "sent_at": "2026-11-30T21:00:00.000Z", "answered_at": "2026-11-30T21:00:03.010Z",
            "elapsed_ms": 3010, "http_status": 201, "reason": null, "message": null,
            "outcome": "stored",
            "get": {"exists": true, "uid": "u", "phase": "Pending", "at": "2026-11-30T21:00:03.100Z"},
            "raw_response": {}
        }))
        .unwrap()
    }

    fn line(name: &str, stage: &str, received: &str, ann: serde_json::Value) -> String {
        serde_json::json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
            "auditID": format!("id-{name}"), "stage": stage,
            "requestURI": "/api/v1/namespaces/kca-webhook-target/pods", "verb": "create",
            "objectRef": {"resource": "pods", "namespace": "kca-webhook-target", "name": name, "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 201},
            "requestReceivedTimestamp": received, "stageTimestamp": received,
            "annotations": ann
        })
        .to_string()
    }

    #[test]
    fn matches_by_name_namespace_verb_and_window() {
        let r = record("b6-frozen-good");
        let ok = line(
            "b6-frozen-good",
            "ResponseComplete",
            "2026-11-30T21:00:00.012345Z",
            serde_json::json!({"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "vpol.x"}),
        );
        assert!(matches(&r, &ok));
        assert!(!matches(&r, &ok.replace("b6-frozen-good", "b6-frozen-bad")));
        assert!(!matches(&r, &ok.replace("\"create\"", "\"get\"")));
        // Received 3 s before the request was sent: another request of the same name.
        let early = line(
            "b6-frozen-good",
            "ResponseComplete",
            "2026-11-30T20:59:57.000000Z",
            serde_json::json!({}),
        );
        assert!(!matches(&r, &early));
        let a = request_audit(&r, &[early, ok, "not json".into()]);
        assert_eq!(a.lines.len(), 1);
        let e = a.final_event().unwrap();
        assert_eq!(e.code, Some(201));
        assert_eq!(
            e.failed_open(),
            vec![(
                "failed-open.validating.webhook.admission.k8s.io/round_0_index_0",
                "vpol.x"
            )]
        );
        assert!(request_summary(&a).contains("failed-open"));
    }

    /// An observed audit record of `n` requests, each with one final event carrying `ann`, and
    /// one more request without a final event.
    fn observed(n: usize, ann: serde_json::Value) -> AdmissionAudit {
        let mut requests: Vec<RequestAudit> = (0..n)
            .map(|i| {
                let name = format!("a6-probe-{i}");
                let ann = ann.clone();
                request_audit(
                    &record(&name),
                    &[line(
                        &name,
                        "ResponseComplete",
                        "2026-11-30T21:00:00.5Z",
                        ann,
                    )],
                )
            })
            .collect();
        requests.push(request_audit(&record("a6-probe-last"), &[]));
        AdmissionAudit {
            source: "log".into(),
            status: AuditStatus::Observed,
            reason: None,
            log: None,
            offset: None,
            window: (String::new(), String::new()),
            waited_ms: 0,
            requests,
        }
    }

    #[test]
    fn many_requests_are_counted_by_outcome_few_are_listed() {
        let latency = |ms: u32| {
            serde_json::json!({
                "apiserver.latency.k8s.io/validating-webhook": format!("{ms}ms"),
                "authorization.k8s.io/decision": "allow",
            })
        };
        let mut many = observed(62, latency(3));
        // Latencies differ per request; the count is by annotation key.
        many.requests[0] = observed(1, latency(9)).requests.remove(0);
        let en = summary_line(&many, "evidence/06.json")
            .get(crate::text::Lang::En)
            .to_owned();
        assert_eq!(
            en,
            "audit: 63 requests: 201 [apiserver.latency.k8s.io/validating-webhook] ×62, \
             no-final-event ×1 (each request in evidence/06.json facts.admission_audit)"
        );
        let ja = summary_line(&many, "evidence/06.json")
            .get(crate::text::Lang::Ja)
            .to_owned();
        assert!(
            ja.contains("63 件") && ja.contains("evidence/06.json"),
            "{ja}"
        );
        let few = observed(2, serde_json::json!({}));
        let en = summary_line(&few, "evidence/03.json")
            .get(crate::text::Lang::En)
            .to_owned();
        assert_eq!(
            en,
            "audit: a6-probe-0 201; a6-probe-1 201; a6-probe-last: no final audit event"
        );
    }

    #[test]
    fn not_configured_and_unreadable_logs_say_why() {
        let facts = serde_json::json!({"good": record("x")});
        let a = Cursor::begin(&AuditSource::NotConfigured).finish(&[&facts]);
        assert_eq!(a.status, AuditStatus::NotConfigured);
        let line = summary_line(&a, "evidence/06.json");
        assert!(line.get(crate::text::Lang::En).contains("not-configured"));
        assert!(line.get(crate::text::Lang::Ja).contains("監査ログ"));
        let gone = AuditSource::Log("/nonexistent/kca/audit.log".into());
        let a = Cursor::begin(&gone).finish(&[&facts]);
        assert_eq!(a.status, AuditStatus::ReadError);
        assert!(a.reason.unwrap().contains("/nonexistent/kca/audit.log"));
    }

    #[test]
    fn reads_only_lines_after_the_window_began_and_waits_for_the_final_stage() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.log");
        let r = record("b6-frozen-good");
        let old = line(
            "b6-frozen-good",
            "ResponseComplete",
            "2026-11-30T21:00:00.5Z",
            serde_json::json!({"old": "1"}),
        );
        std::fs::write(&p, format!("{old}\n")).unwrap();
        let cur = Cursor::begin(&AuditSource::Log(p.clone()));
        let new = line(
            "b6-frozen-good",
            "ResponseComplete",
            "2026-11-30T21:00:01Z",
            serde_json::json!({"new": "1"}),
        );
        std::fs::write(&p, format!("{old}\n{new}\n")).unwrap();
        let facts = serde_json::json!({"run": {"good": r}});
        let a = cur.finish(&[&facts]);
        assert_eq!(a.status, AuditStatus::Observed);
        assert_eq!(a.requests.len(), 1);
        assert_eq!(a.requests[0].lines, vec![new]);
        assert!(a.requests[0].missing.is_none());
    }

    #[test]
    fn a_missing_final_event_says_what_was_waited_for_and_the_stages_seen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.log");
        std::fs::write(&p, "").unwrap();
        let cur = Cursor::begin(&AuditSource::Log(p.clone()));
        let started = line(
            "b6-frozen-good",
            "ResponseStarted",
            "2026-11-30T21:00:01Z",
            serde_json::json!({}),
        );
        // The last line is incomplete (no newline yet): not read.
        let partial = line(
            "b6-frozen-good",
            "ResponseComplete",
            "2026-11-30T21:00:01Z",
            serde_json::json!({}),
        );
        std::fs::write(&p, format!("{started}\n{}", &partial[..40])).unwrap();
        let facts = serde_json::json!({"good": record("b6-frozen-good")});
        let a = cur.finish_within(&[&facts], Duration::from_millis(300));
        assert_eq!(a.status, AuditStatus::Observed);
        assert!(a.waited_ms >= 300, "{}", a.waited_ms);
        let why = a.requests[0].missing.as_deref().unwrap();
        assert!(
            why.contains("kca-webhook-target/b6-frozen-good")
                && why.contains("stages seen: [ResponseStarted]"),
            "{why}"
        );
        assert!(request_summary(&a.requests[0]).contains("no final audit event"));
    }
}
