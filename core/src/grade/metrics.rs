//! Cross-checks of an act's request outcomes against the API server's own account of its
//! admission webhook calls (`facts.admission_metrics`, see [`crate::metrics`]).
//!
//! Acts checked: 3, 5, 6 and 7 of both labs (the acts that send requests). `H` is the policy's
//! webhook for the act: `facts.webhook.name`, else `facts.webhook_name`, else act 2's
//! `facts.webhook.name`. The act's requests are every [`RequestRecord`] in its `facts` and every
//! `request:*` entry of its `raw`, once per name. Rules (kube-apiserver
//! `pkg/admission/metrics/metrics.go` and the validating dispatcher, v1.35;
//! `../shared/research/kubernetes.md` §1 (a), (b), (e)):
//!
//! 1. the recorded `deltas` are the ones the recorded raw lines give (re-parsed here), and no
//!    counter went down (a reset means the API server restarted inside the window);
//! 2. `rejection_count{name=H, error_type="calling_webhook_error"}` moved by the number of
//!    requests whose answer says calling `H` failed (timeout, no endpoints, refused: under
//!    failurePolicy Fail each failed call is one rejection; under Ignore none is rejected);
//! 3. `fail_open_count{name=H}` moved by the number of target-namespace requests `stored` while `H`
//!    is an Ignore webhook (the lab sends no healthy labelled pod under Ignore, so every such pod
//!    was admitted without the webhook's verdict), and by 0 under Fail;
//! 4. `rejection_count{name=H, error_type="no_error", rejection_code="400"}` moved by the number of
//!    `explicit-deny` requests;
//! 5. `request_total{name=H}` moved by the number of target-namespace requests (the control
//!    namespace is outside the namespaceSelector) — except lab A act 6, whose early probes may
//!    precede the registration, and lab A act 5:
//! 6. lab A act 5 with the registration absent: no series of `H` moved at all (no call: the
//!    request was admitted without a webhook, not failed open).
//!
//! Evidence without `admission_metrics` (recorded before these checks existed) and evidence whose
//! `/metrics` read failed (`unavailable`, with the reason) get a [`Code::MetricsNotObserved`]
//! note: reported, never a silent pass, but not a failure, because the act's own outcomes are still
//! graded by the act's grader and a backend may legitimately refuse `/metrics` (RBAC).

use std::collections::BTreeMap;

use super::{Code, Finding, G, ev_name};
use crate::evidence::{Evidence, Lab, Outcome, RequestRecord};
use crate::metrics::{
    self, AdmissionMetrics, FACTS_KEY, FAIL_OPEN_COUNT, REJECTION_COUNT, REQUEST_TOTAL, sum_delta,
};

/// The target namespace (inside the policy's namespaceSelector).
const TARGET: &str = crate::rules::common::TARGET_NAMESPACE;

/// Runs the rules on `ev` (the evidence of `g.act`).
pub(crate) fn grade(g: &mut G<'_>, ev: &Evidence) {
    // The acts whose evidence must carry admission metrics: the registry's `metrics` flag.
    if !crate::acts::spec(g.lab, g.act).is_some_and(|s| s.metrics) {
        return;
    }
    let subject = format!("{} facts.{FACTS_KEY}", ev_name(g.act));
    let Some(raw) = ev.facts.get(FACTS_KEY) else {
        note(
            g,
            subject,
            "the evidence has no admission_metrics (recorded before the tool read /metrics)".into(),
        );
        return;
    };
    let m: AdmissionMetrics = match serde_json::from_value(raw.clone()) {
        Ok(m) => m,
        Err(e) => {
            g.check(false, Code::FactsInvalid, subject, || e.to_string());
            return;
        }
    };
    let (Some(before), Some(after), None) = (&m.before, &m.after, &m.unavailable) else {
        let why = m
            .unavailable
            .as_ref()
            .map(|u| u.reason.clone())
            .unwrap_or_else(|| "a read is missing and no reason was recorded".into());
        note(g, subject, why);
        return;
    };
    // Rule 1: raw first.
    let deltas = metrics::deltas(&before.lines, &after.lines);
    g.check(
        deltas == m.deltas,
        Code::RawMismatch,
        format!("{subject}.deltas"),
        || {
            format!(
                "recorded {} changed series, the recorded lines give {}",
                m.deltas.len(),
                deltas.len()
            )
        },
    );
    let reset: Vec<String> = deltas
        .iter()
        .filter(|d| d.delta < 0.0)
        .map(|d| format!("{}{:?} {} -> {}", d.metric, d.labels, d.before, d.after))
        .collect();
    g.check(
        reset.is_empty(),
        Code::MetricsContradicted,
        format!("{subject}.deltas"),
        || {
            format!(
                "counters went down (API server restarted?): {}",
                reset.join("; ")
            )
        },
    );

    let Some(hook) = policy_webhook(g, ev) else {
        g.check(false, Code::FactsInvalid, subject, || {
            "no webhook name for the policy in this act's facts or act 2's".into()
        });
        return;
    };
    let requests = requests_of(ev);
    let names = |f: &dyn Fn(&RequestRecord) -> bool| -> Vec<String> {
        requests
            .values()
            .filter(|r| f(r))
            .map(|r| format!("{} ({})", r.name, r.outcome.as_str()))
            .collect()
    };
    let agree = |g: &mut G<'_>, rule: &str, series: String, found: f64, reqs: Vec<String>| {
        let expected = reqs.len() as f64;
        g.check(
            found == expected,
            Code::MetricsContradicted,
            format!("{subject} {rule}"),
            || {
                format!(
                    "metrics: {series} moved by {found}; requests: {} [{}]",
                    reqs.len(),
                    reqs.join(", ")
                )
            },
        );
    };

    // Rule 6 (lab A act 5): no call at all while the registration is absent.
    if g.lab == Lab::A && g.act == 5 {
        let present = ev
            .facts
            .get("policy_webhook_present")
            .and_then(serde_json::Value::as_bool);
        if present == Some(false) {
            let moved: Vec<String> = deltas
                .iter()
                .filter(|d| d.labels.get("name") == Some(&hook))
                .map(|d| format!("{}{:?} {:+}", d.metric, d.labels, d.delta))
                .collect();
            let admitted = names(&|r| r.namespace == TARGET);
            g.check(
                moved.is_empty(),
                Code::MetricsContradicted,
                format!("{subject} no-call-while-unregistered"),
                || {
                    format!(
                        "facts.policy_webhook_present is false and requests [{}] were sent, but the API server counted calls to {hook}: {}",
                        admitted.join(", "),
                        moved.join("; ")
                    )
                },
            );
        }
    }

    // Rule 2: failed calls to H under Fail are calling_webhook_error rejections: every request
    // whose verbatim answer says calling H failed (a timeout, and equally no endpoints or a
    // refused connection, e.g. lab A act 6's probes while Kyverno's new pod is not yet Ready).
    let call_failures = names(&|r| {
        r.message
            .as_deref()
            .and_then(crate::classify::parse_call_failure)
            .is_some_and(|c| c.webhook == hook)
    });
    let found = sum_delta(
        &deltas,
        REJECTION_COUNT,
        &hook,
        &[("error_type", "calling_webhook_error")],
    );
    agree(
        g,
        "calling-webhook-error",
        format!("{REJECTION_COUNT}{{name={hook},error_type=calling_webhook_error}}"),
        found,
        call_failures,
    );

    // Rule 3: stored target requests under Ignore failed open.
    let ignore = hook.contains("-ignore-");
    let failed_open = if ignore {
        names(&|r| r.namespace == TARGET && r.outcome == Outcome::Stored)
    } else {
        Vec::new()
    };
    let found = sum_delta(&deltas, FAIL_OPEN_COUNT, &hook, &[]);
    agree(
        g,
        "fail-open",
        format!("{FAIL_OPEN_COUNT}{{name={hook}}}"),
        found,
        failed_open,
    );

    // Rule 4: explicit denies are no_error 400 rejections.
    let denies = names(&|r| r.outcome == Outcome::ExplicitDeny);
    let found = sum_delta(
        &deltas,
        REJECTION_COUNT,
        &hook,
        &[("error_type", "no_error"), ("rejection_code", "400")],
    );
    agree(
        g,
        "explicit-deny",
        format!("{REJECTION_COUNT}{{name={hook},error_type=no_error,rejection_code=400}}"),
        found,
        denies,
    );

    // Rule 5: one call per target request.
    if g.lab == Lab::B || g.act == 3 || g.act == 7 {
        let target = names(&|r| r.namespace == TARGET);
        let found = sum_delta(&deltas, REQUEST_TOTAL, &hook, &[]);
        agree(
            g,
            "one-call-per-target-request",
            format!("{REQUEST_TOTAL}{{name={hook}}}"),
            found,
            target,
        );
    }
}

fn note(g: &mut G<'_>, subject: String, detail: String) {
    g.checks += 1;
    g.notes.push(Finding {
        code: Code::MetricsNotObserved,
        subject,
        detail,
    });
}

/// The policy's webhook for this act: `facts.webhook.name`, `facts.webhook_name`, else act 2's.
pub(crate) fn policy_webhook(g: &G<'_>, ev: &Evidence) -> Option<String> {
    let own = ev
        .facts
        .pointer("/webhook/name")
        .or_else(|| ev.facts.get("webhook_name"))
        .and_then(serde_json::Value::as_str);
    if let Some(h) = own {
        return Some(h.to_owned());
    }
    g.input
        .evidence
        .get(&2)?
        .as_ref()
        .ok()?
        .value
        .pointer("/facts/webhook/name")?
        .as_str()
        .map(str::to_owned)
}

/// Every request record of the act: in `facts` (at any depth) and in `raw` `request:*` entries,
/// by name ([`crate::evidence::request_records`]).
fn requests_of(ev: &Evidence) -> BTreeMap<String, RequestRecord> {
    let mut roots = vec![&ev.facts];
    for r in &ev.raw {
        let is_request = r
            .get("what")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|w| w.starts_with("request:"));
        if is_request && let Some(d) = r.get("data") {
            roots.push(d);
        }
    }
    crate::evidence::request_records(&roots)
}
