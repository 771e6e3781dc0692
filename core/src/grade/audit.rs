//! Cross-checks of an act's request outcomes against the API server's audit log
//! (`facts.admission_audit`, see [`crate::audit`]): the API server's own record of each request,
//! held beside the tool's classification.
//!
//! Acts checked: those the registry flags `audit` (`crate::acts`: acts 3, 5, 6 and 7 of every
//! lab). `H` is the policy's webhook for the act (as in [`super::metrics`]). The act's requests are every request record in its `facts` and `raw`.
//! Rules (kube-apiserver v1.35 audit and the validating webhook dispatcher, k8s.io/apiserver
//! v0.35.0 `pkg/admission/plugin/webhook/validating/dispatcher.go` and `pkg/audit`; Kubernetes
//! docs "Auditing"); each is one claim, named in the finding's subject:
//!
//! 1. `raw`: the parsed `events` agree with what the recorded verbatim `lines` give (every field a
//!    recorded view holds has the re-parsed value; rules 2-7 read the re-parsed view), every line is
//!    an event of its request (pod name, namespace, verb `create`, received inside the request's
//!    window), and the entry's namespace, `sent_at` and `answered_at` are the record's; the
//!    record's `window` opens as the act begins and frames the act's requests — [`Code::RawMismatch`];
//! 2. `final-event`: every request of the act has a `ResponseComplete` (or `Panic`) event —
//!    [`Code::ObservationMissing`], naming what the act waited for;
//! 3. `response-code`: the final event's `responseStatus.code` is the HTTP status the tool got;
//!    `response-message`: for a failure, its `responseStatus.message` is the message the tool got
//!    (a deny names the webhook and the verdict; the real log carries no other webhook or policy
//!    annotation on a deny, only `authorization.k8s.io/*` and `pod-security.kubernetes.io/*`);
//! 4. `timeout-under-fail`: a request classified `webhook-timeout` (or another failed call to
//!    `H`) while `H` is a Fail webhook has a 5xx code (500 `InternalError` in v1.35), no
//!    failed-open annotation, and its follow-up GET found no object;
//! 5. `failed-open`: the requests whose final event carries
//!    `failed-open.validating.webhook.admission.k8s.io/round_<r>_index_<i>` are exactly the
//!    target-namespace requests `stored` while `H` is an Ignore webhook, and the annotation names
//!    `H` (lab B act 6's frozen requests);
//! 6. `explicit-deny`: an `explicit-deny` request's final event has the deny's code (one of
//!    [`crate::classify::EXPLICIT_DENY_STATUSES`]) and no
//!    failed-open annotation (the webhook answered; it did not fail);
//! 7. `admitted-without-webhook` (lab A act 5, registration absent): the stored violating request
//!    has no failed-open annotation — it was admitted because no webhook matched, not because a
//!    call failed (the metrics rule `no-call-while-unregistered` shows no call to `H` at all).
//!
//! 8. `webhook-latency`: the API server's own timing of the call (the event's span and
//!    `apiserver.latency.k8s.io/validating-webhook`) agrees with the record's `elapsed_ms`: inside
//!    the request, `timeoutSeconds` for a timed-out call, less for a denied one (bounds in
//!    [`super::bounds`]); absent on a long request that called the webhook: a note.
//!
//! Rules 3-8 report [`Code::AuditContradicted`], naming both records (the evidence's request
//! path and the audit event's `auditID` and JSON path). Evidence without `admission_audit`
//! (recorded before audit existed), `not-configured` (a backend without an audit log) and
//! `read-error` get a [`Code::AuditNotObserved`] note: reported, never a silent pass, not failing.

use std::collections::BTreeSet;

#[cfg(doc)]
use super::Code;
use super::{Code::*, G, ev_name};
use crate::audit::{self, AdmissionAudit, AuditStatus, FACTS_KEY};
use crate::classify::parse_call_failure;
use crate::evidence::{Evidence, Lab, Outcome, RequestRecord};

const TARGET: &str = crate::rules::common::TARGET_NAMESPACE;

/// Runs the rules on `ev` (the evidence of `g.act`).
pub(crate) fn grade(g: &mut G<'_>, ev: &Evidence) {
    // The acts whose evidence carries audit events: the registry's `audit` flag.
    if !g.audit_applies {
        return;
    }
    let file = ev_name(g.act);
    let subject = format!("{file} facts.{FACTS_KEY}");
    let raw_entry = super::witness::raw_record(ev, FACTS_KEY);
    let Some(value) = ev.facts.get(FACTS_KEY).or(raw_entry) else {
        g.note(AuditNotObserved, subject,
            "audit not observed: the evidence has no admission_audit (recorded before the tool read the audit log)".into(),
        );
        return;
    };
    let a: AdmissionAudit = match serde_json::from_value(value.clone()) {
        Ok(a) => a,
        Err(e) => {
            g.check(false, FactsInvalid, subject, || e.to_string());
            return;
        }
    };
    if a.status != AuditStatus::Observed {
        let what = match a.status {
            AuditStatus::NotConfigured => "not-configured",
            _ => "read-error",
        };
        let why = a.reason.as_deref().unwrap_or("no reason recorded");
        let why = format!("audit not observed ({what}): {why}");
        g.note(AuditNotObserved, subject, why);
        return;
    }
    let hook = super::policy::policy_webhook(g, ev);
    let timeout_seconds = super::policy::policy_timeout_seconds(g, ev);
    let requests = super::policy::act_requests(ev);
    for (name, r) in &requests {
        let Some((i, ra)) = a.requests.iter().enumerate().find(|(_, x)| &x.name == name) else {
            let sub = format!("{subject} final-event");
            g.check(false, ObservationMissing, sub, || {
                let outcome = r.outcome.as_str();
                format!("request {name} ({outcome}) has no entry in the audit record")
            });
            continue;
        };
        let q = Req {
            file: &file,
            hook: hook.as_deref(),
            timeout_seconds,
            ev,
            at: &format!("{subject}.requests[{i}]"),
            name,
            r,
        };
        let view = events_are_the_lines(g, &q, ra);
        final_event_agrees_with_the_record(g, &q, &view);
    }
    // The window read is the act's: it opens as the act begins (the act's recorder is made
    // `with_audit`, `lab/src/labs`: its start is the evidence's `started_at`,
    // `bounds::AUDIT_WINDOW_OPEN_MS`), before the first request was sent, and closes after the
    // last answer, inside the act.
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    let opened_at_start = |b: chrono::DateTime<chrono::Utc>| {
        crate::facts::parse_rfc3339(&ev.started_at).is_some_and(|s| {
            b >= s - skew && (b - s).num_milliseconds() <= super::bounds::AUDIT_WINDOW_OPEN_MS
        })
    };
    let window = (a.window.0.as_str(), a.window.1.as_str());
    let (framed, sent) =
        super::metrics::frames_the_requests(ev, &requests, window, opened_at_start);
    g.check(framed, RawMismatch, format!("{subject}.window"), || {
        format!("window {:?}; {sent}", a.window)
    });
    // Entries for requests the act did not record are not evidence of anything: flag them.
    let known: BTreeSet<&String> = requests.keys().collect();
    let unknown = a.requests.iter().filter(|x| !known.contains(&x.name));
    let extra: Vec<&str> = unknown.map(|x| x.name.as_str()).collect();
    let sub = format!("{subject} raw");
    g.check(extra.is_empty(), RawMismatch, sub, || {
        format!("audit entries for requests the act did not record: {extra:?}")
    });
}

/// What rules 1-8 read of one request: the evidence file's name, the policy's webhook `H` and
/// its `timeoutSeconds`, the evidence, the request's audit entry (`at`, the JSON path
/// `evidence/NN.json facts.admission_audit.requests[i]`), its name and its record.
struct Req<'c> {
    file: &'c str,
    hook: Option<&'c str>,
    timeout_seconds: Option<u32>,
    ev: &'c Evidence,
    at: &'c str,
    name: &'c str,
    r: &'c RequestRecord,
}

/// Rule 1, raw first: the request's entry is its verbatim lines (the parsed events are what
/// the lines give, every line is an event of this request) and is keyed to the record (its
/// namespace, `sent_at`, `answered_at`); flags [`Code::RawMismatch`]. Returns the entry with
/// the events re-parsed from the lines, which rules 2-8 read.
fn events_are_the_lines(
    g: &mut G<'_>,
    q: &Req<'_>,
    ra: &audit::RequestAudit,
) -> audit::RequestAudit {
    let (at, name, r) = (q.at, q.name, q.r);
    // Rule 1: raw first.
    let lines = ra.lines.iter().enumerate();
    let parse = |(k, l): (usize, &String)| audit::parse_line(k, l).ok();
    let reparsed: Vec<_> = lines.clone().filter_map(parse).collect();
    let foreign = lines.filter(|(_, l)| !audit::matches(r, l));
    let foreign: Vec<usize> = foreign.map(|(k, _)| k).collect();
    let mut pairs = ra.events.iter().zip(&reparsed);
    let same = pairs.all(|(x, y)| view_agrees(x, y));
    let agrees = ra.events.len() == reparsed.len() && same;
    // The entry is keyed to the request it is matched to: its namespace and window are the
    // record's own.
    let entry = (&ra.namespace, &ra.sent_at, &ra.answered_at);
    let record = (&r.namespace, &r.sent_at, &r.answered_at);
    let ok = agrees && foreign.is_empty() && entry == record;
    g.check(ok, RawMismatch, format!("{at} raw"), || {
        let (events, lines) = (ra.events.len(), reparsed.len());
        format!("recorded {events} events, the recorded lines give {lines}; lines not of request {name}: {foreign:?}; entry namespace/sent_at/answered_at {entry:?} vs the record's {record:?}")
    });
    // Rules 2-7 read the events re-parsed from the verbatim lines (raw first).
    audit::RequestAudit {
        events: reparsed,
        ..ra.clone()
    }
}

/// Rules 2-8 on one request's final event: it exists (rule 2, [`Code::ObservationMissing`]),
/// and its code, message, failed-open annotation and timing agree with the record (rules 3-8,
/// [`Code::AuditContradicted`]).
fn final_event_agrees_with_the_record(g: &mut G<'_>, q: &Req<'_>, view: &audit::RequestAudit) {
    let (at, name, r) = (q.at, q.name, q.r);
    // Rule 2: a final event.
    let Some(e) = view.final_event() else {
        let sub = format!("{at} final-event");
        g.check(false, ObservationMissing, sub, || {
            let missing = view.missing.clone();
            missing.unwrap_or_else(|| format!("no ResponseComplete/Panic event for {name}"))
        });
        return;
    };
    g.checks += 1;
    let (id, line, stage, open) = (&e.audit_id, e.line, &e.stage, e.failed_open());
    let code = e.code.map_or("none".into(), |c| c.to_string());
    let event = format!(
        "audit event {id} ({at}.lines[{line}], stage {stage}, code {code}, annotations {open:?})"
    );
    let (file, outcome, status, exists) = (q.file, r.outcome.as_str(), r.http_status, r.get.exists);
    let request = format!("{file} request {name} ({outcome}, HTTP {status}, GET exists {exists})");
    let both = format!("{request} vs {event}");
    // Rules 3-7 (module docs), one row each: (rule, whether it applies, whether it holds).
    let (is, code) = (|o: Outcome| r.outcome == o, e.code.unwrap_or_default());
    let (same_code, shut) = (e.code == Some(status), open.is_empty());
    let ignore = super::policy::policy_is_ignore(g, q.ev);
    let failed = is(Outcome::WebhookTimeout) || call_of_the_hook_failed(q);
    let expect_open = ignore && r.namespace == TARGET && is(Outcome::Stored);
    let names_hook = !shut && open.iter().all(|(_, w)| Some(*w) == q.hook);
    let unregistered = q.ev.facts["policy_webhook_present"].as_bool() == Some(false);
    let a5 = g.lab == Lab::A && g.act == 5 && r.namespace == TARGET && unregistered;
    let deny = crate::classify::is_explicit_deny_status(status);
    let (timeout_ok, deny_ok) = (code >= 500 && shut && !exists, same_code && deny && shut);
    let open_ok = if expect_open { names_hook } else { shut };
    let a5_ok = is(Outcome::Stored) && shut && code == 201;
    let rules = [
        ("response-code", true, same_code),
        ("response-message", status >= 300, e.message == r.message),
        ("timeout-under-fail", !ignore && failed, timeout_ok),
        ("failed-open", true, open_ok),
        ("explicit-deny", is(Outcome::ExplicitDeny), deny_ok),
        ("admitted-without-webhook", a5, a5_ok),
    ];
    for (rule, _, ok) in rules.into_iter().filter(|(_, applies, _)| *applies) {
        let sub = format!("{at} {rule}");
        g.check(ok, AuditContradicted, sub, || both.clone());
    }
    event_is_the_requests_own(g, q, e, &both);
    webhook_call_timing_agrees(g, q, e, both);
}

/// The final event is the request the tool sent, as the tool sent it: a dry-run exactly when
/// the record is one (`requestURI` carries `dryRun=All`), received no sooner than the tool sent
/// it and completed no later than the tool had its answer (`requestReceivedTimestamp` ≥
/// `sent_at`, `stageTimestamp` ≤ `answered_at`, [`super::bounds::CLOCK_SKEW_MS`] of slack: the
/// API server and the tool share the node's clock). Flags [`Code::AuditContradicted`].
fn event_is_the_requests_own(g: &mut G<'_>, q: &Req<'_>, e: &audit::EventView, both: &str) {
    let r = q.r;
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    let t = |s: Option<&str>| s.and_then(crate::facts::parse_rfc3339);
    let mut problems = Vec::new();
    let dry_run = e.request_uri.contains("dryRun=All");
    if dry_run != r.dry_run {
        let (uri, rec) = (&e.request_uri, r.dry_run);
        let not = if dry_run { "" } else { "not " };
        problems.push(format!(
            "requestURI {uri:?} is {not}a dry-run; the record's dry_run is {rec}"
        ));
    }
    if let (Some(received), Some(sent)) = (t(e.received.as_deref()), t(Some(&r.sent_at)))
        && received + skew < sent
    {
        let received = e.received.as_deref().unwrap_or_default();
        problems.push(format!(
            "requestReceivedTimestamp {received} is before the tool sent the request ({})",
            r.sent_at
        ));
    }
    if let (Some(done), Some(answered)) = (t(e.stage_timestamp.as_deref()), t(Some(&r.answered_at)))
        && done > answered + skew
    {
        let done = e.stage_timestamp.as_deref().unwrap_or_default();
        problems.push(format!(
            "stageTimestamp {done} is after the tool had its answer ({})",
            r.answered_at
        ));
    }
    let sub = format!("{} request", q.at);
    g.check(problems.is_empty(), AuditContradicted, sub, || {
        format!("{both}: {}", problems.join("; "))
    });
}

/// Whether the record's answer is a failed call of the policy's webhook `H`.
fn call_of_the_hook_failed(q: &Req<'_>) -> bool {
    let failed = q.r.message.as_deref().and_then(parse_call_failure);
    failed.is_some_and(|f| Some(f.webhook.as_str()) == q.hook)
}

/// Rule 8 (`webhook-latency`): the API server's own timing of the request is held against the
/// record's `elapsed_ms` ([`super::bounds`]): the event's span (`stageTimestamp −
/// requestReceivedTimestamp`) and the validating webhook latency annotation
/// ([`audit::VALIDATING_WEBHOOK_LATENCY`]) lie inside the request the tool timed; a timed-out
/// call took `timeoutSeconds` by both ([`super::bounds::timeout_window_ms`]); a denied call took
/// less than `timeoutSeconds` ([`super::bounds::deny_call_max_ms`]). A request that called the
/// webhook and lasted longer than [`audit::LATENCY_ANNOTATION_THRESHOLD_MS`] without the
/// annotation (an API server older than the latency tracker) gets a [`Code::TimingNotObserved`]
/// note: the witness is absent, which is said, never passed silently. A call timed out when the
/// record is a `webhook-timeout`, or failed open under Ignore with its whole timeout inside the
/// freeze ([`super::bounds::timeout_inside_freeze`]); `H` was called when the record shows a deny, a failed call
/// or a pod failed open. `at` is `evidence/NN.json facts.admission_audit.requests[i]`, `both`
/// names both records.
fn webhook_call_timing_agrees(g: &mut G<'_>, q: &Req<'_>, e: &audit::EventView, both: String) {
    let r = q.r;
    use super::bounds::{call_inside_request_ms, deny_call_max_ms, timeout_window_ms};
    let (open, timeout_seconds) = (!e.failed_open().is_empty(), q.timeout_seconds);
    let froze = timeout_seconds.is_some_and(|t| super::bounds::timeout_inside_freeze(q.ev, r, t));
    let timed_out = r.outcome == Outcome::WebhookTimeout || (open && froze);
    let timeout_or_deny = matches!(r.outcome, Outcome::WebhookTimeout | Outcome::ExplicitDeny);
    let called = call_of_the_hook_failed(q) || open || timeout_or_deny;
    let subject = format!("{} webhook-latency", q.at);
    let inside = call_inside_request_ms(r.elapsed_ms);
    let window = timeout_seconds.map(timeout_window_ms);
    let in_window = |ms: f64| window.is_some_and(|(lo, hi)| ms >= lo as f64 && ms < hi as f64);
    let bounds = |(lo, hi)| format!("[{lo}, {hi}) ms (grade::bounds::timeout_window_ms)");
    let bounds = window.map_or("no bounds (timeoutSeconds unknown)".to_owned(), bounds);
    let t = timeout_seconds.map(|t| t.to_string());
    let t = t.unwrap_or_else(|| "unknown".to_owned());
    let (elapsed, skew) = (r.elapsed_ms, super::bounds::CLOCK_SKEW_MS);
    let latency = audit::VALIDATING_WEBHOOK_LATENCY;
    let span = e.span_ms();
    let mut problems = Vec::new();
    match span {
        Some(span) => {
            if span > inside {
                problems.push(format!(
                    "the API server held the request {span:.1} ms, longer than the tool's elapsed_ms {elapsed} + {skew} ms"
                ));
            }
            if timed_out && !in_window(span) {
                problems.push(format!(
                    "the API server held the timed-out request {span:.1} ms; timeoutSeconds {t} gives {bounds}"
                ));
            }
        }
        None => problems.push("the event has no requestReceivedTimestamp/stageTimestamp".into()),
    }
    match e.validating_webhook_ms() {
        Some(Some(ms)) => {
            if ms > inside || span.is_some_and(|sp| ms > sp + skew as f64) {
                problems.push(format!(
                    "{latency} says the webhook call took {ms:.3} ms, longer than the request (elapsed_ms {elapsed}, the event's span {span:?})"
                ));
            }
            if timed_out && !in_window(ms) {
                problems.push(format!(
                    "{latency} says the timed-out call took {ms:.3} ms; a call that ran into timeoutSeconds {t} takes {bounds}"
                ));
            }
            if r.outcome == Outcome::ExplicitDeny
                && let Some(t) = timeout_seconds
                && ms >= deny_call_max_ms(t)
            {
                problems.push(format!(
                    "{latency} says the denied call took {ms:.3} ms; a call of timeoutSeconds {t} that long fails instead of denying"
                ));
            }
        }
        Some(None) => {
            let found = e.annotations.get(latency);
            problems.push(format!("{latency} is not a Go duration: {found:?}"))
        }
        None => {
            if called && span.is_some_and(|sp| sp > audit::LATENCY_ANNOTATION_THRESHOLD_MS) {
                let held = span.unwrap_or_default();
                let why = format!(
                    "the API server's timing of the webhook call was not observed: no {latency} on a request it held {held:.1} ms (an API server without the latency tracker); the event's span was held instead"
                );
                g.note(TimingNotObserved, subject.clone(), why);
            }
        }
    }
    g.check(problems.is_empty(), AuditContradicted, subject, || {
        format!("{both}: {}", problems.join("; "))
    });
}

/// Whether a recorded parsed view agrees with the one re-parsed from its line: every field it
/// holds has the re-parsed value (a view written by an earlier version of the tool may hold fewer
/// fields, e.g. no `message`; the rules read the re-parsed view anyway).
fn view_agrees(recorded: &audit::EventView, reparsed: &audit::EventView) -> bool {
    let json = serde_json::to_value::<&audit::EventView>;
    match (json(recorded), json(reparsed)) {
        (Ok(serde_json::Value::Object(r)), Ok(serde_json::Value::Object(p))) => {
            r.iter().all(|(k, v)| p.get(k) == Some(v))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::evidence::{Evidence, RequestRecord};
    use crate::grade::bounds::timeout_inside_freeze;

    /// Act 6 of the recorded real lab B run (freeze 21:14:36.278Z → 21:14:46.272Z, timeout 3 s).
    fn act6() -> Evidence {
        serde_json::from_str(include_str!(
            "../../../lab/tests/fixtures/recorded/b-20261130T210502Z/evidence/06.json"
        ))
        .expect("the recorded act 6 evidence parses")
    }

    fn record(ev: &Evidence, pointer: &str) -> RequestRecord {
        let v = ev.facts.pointer(pointer).expect(pointer).clone();
        serde_json::from_value(v).expect("a request record")
    }

    /// A request whose whole timeout lies inside the freeze can only have timed out; one failed
    /// open after the resume or near it may have failed fast.
    #[test]
    fn only_a_request_whose_whole_timeout_lies_inside_the_freeze_timed_out() {
        let ev = act6();
        assert!(timeout_inside_freeze(&ev, &record(&ev, "/target_good"), 3));
        assert!(timeout_inside_freeze(&ev, &record(&ev, "/target_bad"), 3));
        // Sent after the resume (the polls until the first deny): a restarted container refuses
        // at once, and Ignore stores the pod in milliseconds (seen in a cgroup v2 guest).
        let after_resume = record(&ev, "/after_resume/0");
        assert!(!timeout_inside_freeze(&ev, &after_resume, 3));
        // Sent inside the freeze, but its timeout would end after the resume: not decided.
        let mut late = record(&ev, "/target_good");
        late.sent_at = "2026-11-30T21:14:44.000Z".into();
        assert!(!timeout_inside_freeze(&ev, &late, 3));
        // Without the freeze's times nothing is inferred.
        let mut bare = ev.clone();
        bare.facts = serde_json::json!({});
        let good = record(&ev, "/target_good");
        assert!(!timeout_inside_freeze(&bare, &good, 3));
    }
}
