//! Cross-checks of an act's request outcomes against the API server's audit log
//! (`facts.admission_audit`, see [`crate::audit`]): the API server's own record of each request,
//! held beside the tool's classification.
//!
//! Acts checked: 3, 5, 6 and 7 of both labs. `H` is the policy's webhook for the act (as in
//! [`super::metrics`]). The act's requests are every request record in its `facts` and `raw`.
//! Rules (kube-apiserver v1.35 audit and the validating webhook dispatcher;
//! `../shared/research/kubernetes.md` §1 (a)-(c)); each is one claim, named in the finding's
//! subject:
//!
//! 1. `raw`: the parsed `events` agree with what the recorded verbatim `lines` give (every field a
//!    recorded view holds has the re-parsed value; rules 2-7 read the re-parsed view), every line is
//!    an event of its request (pod name, namespace, verb `create`, received inside the request's
//!    window) — [`Code::RawMismatch`];
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
//! 6. `explicit-deny`: an `explicit-deny` request's final event has the deny's code and no
//!    failed-open annotation (the webhook answered; it did not fail);
//! 7. `admitted-without-webhook` (lab A act 5, registration absent): the stored violating request
//!    has no failed-open annotation — it was admitted because no webhook matched, not because a
//!    call failed (the metrics rule `no-call-while-unregistered` shows no call to `H` at all).
//!
//! Rules 3-7 report [`Code::AuditContradicted`], naming both records (the evidence's request
//! path and the audit event's `auditID` and JSON path). Evidence without `admission_audit`
//! (recorded before audit existed), `not-configured` (a backend without an audit log) and
//! `read-error` get a [`Code::AuditNotObserved`] note: reported, never a silent pass, not failing.

use std::collections::BTreeSet;

use super::{Code, Finding, G, ev_name};
use crate::audit::{self, AdmissionAudit, AuditStatus, FACTS_KEY};
use crate::evidence::{Evidence, Lab, Outcome};

const TARGET: &str = crate::rules::common::TARGET_NAMESPACE;

/// Runs the rules on `ev` (the evidence of `g.act`).
pub(crate) fn grade(g: &mut G<'_>, ev: &Evidence) {
    // The acts whose evidence carries audit events: the registry's `audit` flag.
    if !crate::acts::spec(g.lab, g.act).is_some_and(|s| s.audit) {
        return;
    }
    let file = ev_name(g.act);
    let subject = format!("{file} facts.{FACTS_KEY}");
    let raw_entry = ev
        .raw
        .iter()
        .find(|r| r.get("what").and_then(|w| w.as_str()) == Some(FACTS_KEY))
        .and_then(|r| r.get("data"));
    let Some(value) = ev.facts.get(FACTS_KEY).or(raw_entry) else {
        note(
            g,
            subject,
            "audit not observed: the evidence has no admission_audit (recorded before the tool read the audit log)".into(),
        );
        return;
    };
    let a: AdmissionAudit = match serde_json::from_value(value.clone()) {
        Ok(a) => a,
        Err(e) => {
            g.check(false, Code::FactsInvalid, subject, || e.to_string());
            return;
        }
    };
    if a.status != AuditStatus::Observed {
        let what = match a.status {
            AuditStatus::NotConfigured => "not-configured",
            _ => "read-error",
        };
        note(
            g,
            subject,
            format!(
                "audit not observed ({what}): {}",
                a.reason.as_deref().unwrap_or("no reason recorded")
            ),
        );
        return;
    }
    let hook = super::metrics::policy_webhook(g, ev);
    let requests =
        crate::evidence::request_records(&[&ev.facts, &serde_json::Value::Array(ev.raw.clone())]);

    for (name, r) in &requests {
        let Some((i, ra)) = a.requests.iter().enumerate().find(|(_, x)| &x.name == name) else {
            g.check(
                false,
                Code::ObservationMissing,
                format!("{subject} final-event"),
                || {
                    format!(
                        "request {name} ({}) has no entry in the audit record",
                        r.outcome.as_str()
                    )
                },
            );
            continue;
        };
        let at = format!("{subject}.requests[{i}]");
        // Rule 1: raw first.
        let reparsed: Vec<_> = ra
            .lines
            .iter()
            .enumerate()
            .filter_map(|(k, l)| audit::parse_line(k, l).ok())
            .collect();
        let foreign: Vec<usize> = ra
            .lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !audit::matches(r, l))
            .map(|(k, _)| k)
            .collect();
        let agrees = ra.events.len() == reparsed.len()
            && ra
                .events
                .iter()
                .zip(&reparsed)
                .all(|(x, y)| view_agrees(x, y));
        g.check(
            agrees && foreign.is_empty(),
            Code::RawMismatch,
            format!("{at} raw"),
            || {
                format!(
                    "recorded {} events, the recorded lines give {}; lines not of request {name}: {foreign:?}",
                    ra.events.len(),
                    reparsed.len()
                )
            },
        );
        // Rules 2-7 read the events re-parsed from the verbatim lines (raw first).
        let view = audit::RequestAudit {
            events: reparsed,
            ..ra.clone()
        };
        // Rule 2: a final event.
        let Some(e) = view.final_event() else {
            g.check(
                false,
                Code::ObservationMissing,
                format!("{at} final-event"),
                || {
                    ra.missing
                        .clone()
                        .unwrap_or_else(|| format!("no ResponseComplete/Panic event for {name}"))
                },
            );
            continue;
        };
        g.checks += 1;
        let event = format!(
            "audit event {} ({at}.lines[{}], stage {}, code {}, annotations {:?})",
            e.audit_id,
            e.line,
            e.stage,
            e.code.map_or("none".into(), |c| c.to_string()),
            e.failed_open()
        );
        let request = format!(
            "{file} request {name} ({}, HTTP {}, GET exists {})",
            r.outcome.as_str(),
            r.http_status,
            r.get.exists
        );
        let disagree = |rule: &str, g: &mut G<'_>, ok: bool| {
            g.check(ok, Code::AuditContradicted, format!("{at} {rule}"), || {
                format!("{request} vs {event}")
            });
        };
        // Rule 3: the same HTTP status, and for a failure the same message (the API server logs
        // the Status it sent: a deny names the webhook and the policy's verdict).
        disagree("response-code", g, e.code == Some(r.http_status));
        if r.http_status >= 300 {
            disagree("response-message", g, e.message == r.message);
        }
        let failed_open = e.failed_open();
        let is_ignore = hook.as_deref().is_some_and(|h| h.contains("-ignore-"));
        // Rule 4: a failed call under Fail is a 5xx, not failed open, not stored.
        let call_failed = r
            .message
            .as_deref()
            .and_then(crate::classify::parse_call_failure)
            .is_some_and(|c| Some(&c.webhook) == hook.as_ref());
        if !is_ignore && (r.outcome == Outcome::WebhookTimeout || call_failed) {
            disagree(
                "timeout-under-fail",
                g,
                e.code.is_some_and(|c| c >= 500) && failed_open.is_empty() && !r.get.exists,
            );
        }
        // Rule 5: failed open exactly where an Ignore webhook let a target pod through.
        let expect_open = is_ignore && r.namespace == TARGET && r.outcome == Outcome::Stored;
        let names_hook =
            !failed_open.is_empty() && failed_open.iter().all(|(_, w)| Some(*w) == hook.as_deref());
        disagree(
            "failed-open",
            g,
            if expect_open {
                names_hook
            } else {
                failed_open.is_empty()
            },
        );
        // Rule 6: an explicit deny is the webhook's answer, not a failure.
        if r.outcome == Outcome::ExplicitDeny {
            disagree(
                "explicit-deny",
                g,
                e.code == Some(r.http_status)
                    && (400..500).contains(&r.http_status)
                    && failed_open.is_empty(),
            );
        }
        // Rule 7: lab A act 5 — admitted because no webhook matched.
        if g.lab == Lab::A
            && g.act == 5
            && r.namespace == TARGET
            && ev
                .facts
                .get("policy_webhook_present")
                .and_then(|v| v.as_bool())
                == Some(false)
        {
            disagree(
                "admitted-without-webhook",
                g,
                r.outcome == Outcome::Stored && failed_open.is_empty() && e.code == Some(201),
            );
        }
    }
    // Entries for requests the act did not record are not evidence of anything: flag them.
    let known: BTreeSet<&String> = requests.keys().collect();
    let extra: Vec<&str> = a
        .requests
        .iter()
        .filter(|x| !known.contains(&x.name))
        .map(|x| x.name.as_str())
        .collect();
    g.check(
        extra.is_empty(),
        Code::RawMismatch,
        format!("{subject} raw"),
        || format!("audit entries for requests the act did not record: {extra:?}"),
    );
}

/// Whether a recorded parsed view agrees with the one re-parsed from its line: every field it
/// holds has the re-parsed value (a view written by an earlier version of the tool may hold fewer
/// fields, e.g. no `message`; the rules read the re-parsed view anyway).
fn view_agrees(recorded: &audit::EventView, reparsed: &audit::EventView) -> bool {
    match (
        serde_json::to_value(recorded),
        serde_json::to_value(reparsed),
    ) {
        (Ok(serde_json::Value::Object(r)), Ok(serde_json::Value::Object(p))) => {
            r.iter().all(|(k, v)| p.get(k) == Some(v))
        }
        _ => false,
    }
}

fn note(g: &mut G<'_>, subject: String, detail: String) {
    g.checks += 1;
    g.notes.push(Finding {
        code: Code::AuditNotObserved,
        subject,
        detail,
    });
}
