//! Cross-checks of an act's request outcomes against the API server's own account of its
//! admission webhook calls (`facts.admission_metrics`, see [`crate::metrics`]).
//!
//! Acts checked: those the registry flags `metrics` (`crate::acts`: acts 3, 5, 6 and 7 of every
//! lab, the acts that send requests). `H` is the policy's
//! webhook for the act: `facts.webhook.name`, else `facts.webhook_name`, else act 2's
//! `facts.webhook.name`. The act's requests are every [`RequestRecord`] in its `facts` and `raw`,
//! once per name ([`super::policy::act_requests`]). Rules (kube-apiserver
//! `pkg/admission/metrics/metrics.go` and the validating dispatcher
//! `pkg/admission/plugin/webhook/validating/dispatcher.go`, k8s.io/apiserver v0.35.0):
//!
//! 1. the recorded `deltas` are the ones the recorded raw lines give (re-parsed here), and no
//!    counter went down (a reset means the API server restarted inside the window);
//! 2. `rejection_count{name=H, error_type="calling_webhook_error"}` moved by the number of
//!    requests whose answer says calling `H` failed (timeout, no endpoints, refused: under
//!    failurePolicy Fail each failed call is one rejection; under Ignore none is rejected);
//! 3. `fail_open_count{name=H}` moved by the number of target-namespace requests `stored` while `H`
//!    is an Ignore webhook (the lab sends no healthy labelled pod under Ignore, so every such pod
//!    was admitted without the webhook's verdict), and by 0 under Fail;
//! 4. for each status `c` of [`crate::classify::EXPLICIT_DENY_STATUSES`],
//!    `rejection_count{name=H, error_type="no_error", rejection_code=c}` moved by the number of
//!    `explicit-deny` requests answered with `c`, and no other `no_error` rejection of `H` moved;
//! 5. `request_total{name=H}` moved by the number of target-namespace requests (the control
//!    namespace is outside the namespaceSelector) — except lab A act 6, whose early probes may
//!    precede the registration, and lab A act 5:
//! 6. lab A act 5 with the registration absent: no series of `H` moved at all (no call: the
//!    request was admitted without a webhook, not failed open);
//! 7. `call-duration`: `admission_duration_seconds{name=H}` — its count moved as
//!    `request_total`, its sum holds the API server's time of the calls against the records'
//!    (`timeoutSeconds` per timed-out call at least; at most the requests' `elapsed_ms`, where
//!    rule 5 applies; bounds in [`super::bounds`]); the histogram not served for `H`: a
//!    [`Code::TimingNotObserved`] note.
//!
//! Evidence without `admission_metrics` (recorded before these checks existed) and evidence whose
//! `/metrics` read failed (`unavailable`, with the reason) get a [`Code::MetricsNotObserved`]
//! note: reported, never a silent pass, but not a failure, because the act's own outcomes are still
//! graded by the act's grader and a backend may legitimately refuse `/metrics` (RBAC).

use std::collections::BTreeMap;

#[cfg(doc)]
use super::Code;
use super::policy::{act_requests, policy_is_ignore, policy_timeout_seconds, policy_webhook};
use super::{Code::*, G, ev_name};
use crate::classify::parse_call_failure;
use crate::evidence::{Evidence, Lab, Outcome, RequestRecord};
use crate::metrics::{
    self, AdmissionMetrics, FACTS_KEY, FAIL_OPEN_COUNT, REJECTION_COUNT, REQUEST_TOTAL, sum_delta,
};

/// The target namespace (inside the policy's namespaceSelector).
const TARGET: &str = crate::rules::common::TARGET_NAMESPACE;

/// Runs the rules on `ev` (the evidence of `g.act`).
pub(crate) fn grade(g: &mut G<'_>, ev: &Evidence) {
    // The acts whose evidence must carry admission metrics: the registry's `metrics` flag.
    if !g.metrics_applies {
        return;
    }
    let subject = format!("{} facts.{FACTS_KEY}", ev_name(g.act));
    let Some(m) = observed_metrics(g, ev, &subject) else {
        return;
    };
    // Both reads: [`observed_metrics`] returns only a record that has them.
    let (Some(before), Some(after)) = (&m.before, &m.after) else {
        return;
    };
    let requests = act_requests(ev);
    let deltas = record_is_its_reads(g, &subject, &m, [before, after], &requests, ev);
    let Some(hook) = policy_webhook(g, ev) else {
        g.check(false, FactsInvalid, subject, || {
            "no webhook name for the policy in this act's facts or act 2's".into()
        });
        return;
    };
    let c = Counted {
        subject: &subject,
        deltas: &deltas,
        hook: &hook,
        requests: &requests,
    };
    no_call_while_unregistered(g, &c, ev);
    counters_moved_by_their_requests(g, &c, ev);
    // Rule 7: the API server's own time of the calls is a second witness of the records'.
    call_durations_agree(g, &c, &after.lines, ev);
}

/// The act's admission metrics record with both reads, or `None` after a note (no record: the
/// evidence predates metrics; a read failed: its reason) or a [`Code::FactsInvalid`].
fn observed_metrics(g: &mut G<'_>, ev: &Evidence, subject: &str) -> Option<AdmissionMetrics> {
    let Some(raw) = ev.facts.get(FACTS_KEY) else {
        let why = "the evidence has no admission_metrics (recorded before the tool read /metrics)";
        g.note(MetricsNotObserved, subject.to_owned(), why.into());
        return None;
    };
    let m: AdmissionMetrics = match serde_json::from_value(raw.clone()) {
        Ok(m) => m,
        Err(e) => {
            g.check(false, FactsInvalid, subject, || e.to_string());
            return None;
        }
    };
    if let (Some(_), Some(_), None) = (&m.before, &m.after, &m.unavailable) {
        return Some(m);
    }
    let why = m.unavailable.as_ref().map(|u| u.reason.clone());
    let why = why.unwrap_or_else(|| "a read is missing and no reason was recorded".into());
    g.note(MetricsNotObserved, subject.to_owned(), why);
    None
}

/// A metric and the labels of its series (beside `name`).
type Series<'l> = (&'l str, &'l [(&'l str, &'l str)]);

/// What the counting rules (2, 3, 5, 6) read: the deltas, the policy's webhook `H` and the
/// act's requests.
struct Counted<'c> {
    subject: &'c str,
    deltas: &'c [metrics::SeriesDelta],
    hook: &'c str,
    requests: &'c BTreeMap<String, RequestRecord>,
}

impl Counted<'_> {
    /// The requests `f` selects, as `name (outcome)`.
    fn names(&self, f: &dyn Fn(&RequestRecord) -> bool) -> Vec<String> {
        let name = |r: &RequestRecord| format!("{} ({})", r.name, r.outcome.as_str());
        self.requests.values().filter(|r| f(r)).map(name).collect()
    }

    /// `metric` of `H` (its series with `labels`) moved by as many as the act's requests that
    /// `counts` selects (flags [`Code::MetricsContradicted`] as `rule`).
    fn count(
        &self,
        g: &mut G<'_>,
        rule: &str,
        metric: Series,
        counts: &dyn Fn(&RequestRecord) -> bool,
    ) {
        let ((metric, labels), hook) = (metric, self.hook);
        let found = sum_delta(self.deltas, metric, hook, labels);
        let shown: String = labels.iter().map(|(k, v)| format!(",{k}={v}")).collect();
        let reqs = self.names(counts);
        let (n, sub) = (reqs.len(), format!("{} {rule}", self.subject));
        g.check(found == n as f64, MetricsContradicted, sub, || {
            let reqs = reqs.join(", ");
            format!(
                "metrics: {metric}{{name={hook}{shown}}} moved by {found}; requests: {n} [{reqs}]"
            )
        });
    }
}

/// Rule 6 (lab A act 5): no series of `H` moved while the registration was absent.
fn no_call_while_unregistered(g: &mut G<'_>, c: &Counted<'_>, ev: &Evidence) {
    let unregistered = ev.facts["policy_webhook_present"].as_bool() == Some(false);
    if !(g.lab == Lab::A && g.act == 5 && unregistered) {
        return;
    }
    let hook = c.hook;
    let of_hook =
        |d: &&metrics::SeriesDelta| d.labels.get("name").map(String::as_str) == Some(hook);
    let moved = |d: &metrics::SeriesDelta| format!("{}{:?} {:+}", d.metric, d.labels, d.delta);
    let moved: Vec<String> = c.deltas.iter().filter(of_hook).map(moved).collect();
    let admitted = c.names(&|r| r.namespace == TARGET);
    let sub = format!("{} no-call-while-unregistered", c.subject);
    g.check(moved.is_empty(), MetricsContradicted, sub, || {
        let (admitted, moved) = (admitted.join(", "), moved.join("; "));
        format!("facts.policy_webhook_present is false and requests [{admitted}] were sent, but the API server counted calls to {hook}: {moved}")
    });
}

/// Rules 2-5 (module docs), each a counter of `H` (a metric, with the labels of its series) that
/// moved by as many as the act's requests it counts ([`Counted::count`]): `calling-webhook-error`
/// (a timeout, and equally no endpoints or a refused connection, e.g. lab A act 6's probes while
/// Kyverno's new pod is not yet Ready), `fail-open` (Ignore as the registration's recorded
/// failurePolicy, [`policy_is_ignore`]), `explicit-deny` (per status `c` of the one table of what a
/// deny is and of the denies' own statuses, so no other `no_error` rejection of `H` moved),
/// `one-call-per-target-request` ([`calls_are_the_target_requests`]).
fn counters_moved_by_their_requests(g: &mut G<'_>, c: &Counted<'_>, ev: &Evidence) {
    let (hook, ignore) = (c.hook, policy_is_ignore(g, ev));
    let failed = |r: &RequestRecord| r.message.as_deref().and_then(parse_call_failure);
    let deny = |r: &RequestRecord| r.outcome == Outcome::ExplicitDeny;
    let target = |r: &RequestRecord| r.namespace == TARGET;
    let (rejected, calling) = (REJECTION_COUNT, [("error_type", "calling_webhook_error")]);
    let called = |r: &RequestRecord| failed(r).is_some_and(|f| f.webhook == hook);
    c.count(g, "calling-webhook-error", (rejected, &calling), &called);
    let open = |r: &RequestRecord| ignore && target(r) && r.outcome == Outcome::Stored;
    c.count(g, "fail-open", (FAIL_OPEN_COUNT, &[]), &open);
    let no_error = ("error_type", "no_error");
    c.count(g, "explicit-deny", (rejected, &[no_error]), &deny);
    let mut codes: Vec<u16> = crate::classify::EXPLICIT_DENY_STATUSES.to_vec();
    let denied = c.requests.values().filter(|r| deny(r));
    codes.extend(denied.map(|r| r.http_status));
    codes.sort_unstable();
    codes.dedup();
    for code in codes {
        let labels = [no_error, ("rejection_code", &code.to_string())];
        let answered = |r: &RequestRecord| deny(r) && r.http_status == code;
        c.count(g, "explicit-deny", (rejected, &labels), &answered);
    }
    if calls_are_the_target_requests(g) {
        let rule = "one-call-per-target-request";
        c.count(g, rule, (REQUEST_TOTAL, &[]), &target);
    }
}

/// Rule 1, raw first: the record is what its two reads give. Each read's lines are an
/// exposition ([`lines_are_an_exposition`]) and the admission lines of themselves
/// ([`metrics::admission_lines`]: nothing else kept, nothing altered into another family);
/// `webhooks_seen` are the `name` labels of both reads; the recorded `deltas` are the ones the
/// lines give (re-parsed here) and no counter went down (a reset means the API server restarted
/// inside the window, [`Code::MetricsContradicted`]); the first read was answered before the
/// act's first request was sent and the second after its last answer, both inside the act (the
/// deltas cover exactly the act's requests). Flags [`Code::RawMismatch`]. Returns the re-parsed
/// deltas.
fn record_is_its_reads(
    g: &mut G<'_>,
    subject: &str,
    m: &AdmissionMetrics,
    [before, after]: [&metrics::MetricsRead; 2],
    requests: &BTreeMap<String, RequestRecord>,
    ev: &Evidence,
) -> Vec<metrics::SeriesDelta> {
    for (which, read) in [("before", before), ("after", after)] {
        let sub = format!("{subject}.{which}.lines");
        lines_are_an_exposition(g, &sub, &read.lines);
        let kept = metrics::admission_lines(&read.lines.join("\n"));
        g.check(kept == read.lines, RawMismatch, sub, || {
            let (recorded, served) = (read.lines.len(), kept.len());
            format!("{recorded} lines recorded, {served} of them admission lines as served")
        });
    }
    let named = |x: &metrics::MetricsRead| metrics::webhook_names(&x.lines);
    let (b, seen) = (named(before), &m.webhooks_seen);
    let names: Vec<String> = b.union(&named(after)).cloned().collect();
    let sub = format!("{subject}.webhooks_seen");
    g.check(names == *seen, RawMismatch, sub, || {
        format!("recorded {seen:?}, the reads name {names:?}")
    });
    let deltas = metrics::deltas(&before.lines, &after.lines);
    let sub = format!("{subject}.deltas");
    g.check(deltas == m.deltas, RawMismatch, &sub, || {
        let (recorded, given) = (m.deltas.len(), deltas.len());
        format!("recorded {recorded} changed series, the recorded lines give {given}")
    });
    let down = deltas.iter().filter(|d| d.delta < 0.0);
    let reset = |d: &metrics::SeriesDelta| {
        format!("{}{:?} {} -> {}", d.metric, d.labels, d.before, d.after)
    };
    let reset: Vec<String> = down.map(reset).collect();
    g.check(reset.is_empty(), MetricsContradicted, sub, || {
        let reset = reset.join("; ");
        format!("counters went down (API server restarted?): {reset}")
    });
    let (framed, sent) = frames_the_requests(ev, requests, (&before.at, &after.at), |_| true);
    let sub = format!("{subject}.before.at/after.at");
    g.check(framed, RawMismatch, sub, || {
        let (b, a) = (&before.at, &after.at);
        format!("read before at {b:?}, after at {a:?}; {sent}")
    });
    deltas
}

/// Whether reads at `open` and `close` (RFC 3339) frame the act's `requests`: `open` no later
/// than the first was sent (and `opens` holds of it) and `close` no sooner than the last was
/// answered, or with no requests `open` no later than `close`; both inside the act's span
/// ([`super::bounds::CLOCK_SKEW_MS`] of slack). Returns that and, for a finding, when the
/// requests were sent and answered.
pub(super) fn frames_the_requests(
    ev: &Evidence,
    requests: &BTreeMap<String, RequestRecord>,
    (open, close): (&str, &str),
    opens: impl Fn(chrono::DateTime<chrono::Utc>) -> bool,
) -> (bool, String) {
    let t = |s: &str| crate::facts::parse_rfc3339(s);
    let first_sent = requests.values().filter_map(|r| t(&r.sent_at)).min();
    let last_answered = requests.values().filter_map(|r| t(&r.answered_at)).max();
    let skew = chrono::Duration::milliseconds(super::bounds::CLOCK_SKEW_MS as i64);
    let inside = |x: chrono::DateTime<chrono::Utc>| matches!((t(&ev.started_at), t(&ev.finished_at)), (Some(s), Some(e)) if x >= s - skew && x <= e + skew);
    let framed = match (t(open), t(close), first_sent, last_answered) {
        (Some(b), Some(e), Some(s), Some(l)) => {
            b <= s && e >= l && inside(b) && inside(e) && opens(b)
        }
        (Some(b), Some(e), None, None) => b <= e && inside(b) && inside(e),
        _ => false,
    };
    let sent = format!(
        "the act's requests were sent from {first_sent:?} and answered until {last_answered:?}"
    );
    (framed, sent)
}

/// Rule 7 (`call-duration`): the API server's admission duration histogram of `hook`
/// (`admission_duration_seconds_{count,sum}`, observed once per call with `request_total`, by
/// the dispatcher's `ObserveWebhook`) is held against the records: its count moved as
/// `request_total` did; its sum is at least `timeoutSeconds` (less [`super::bounds::CLOCK_SKEW_MS`])
/// per call the records say timed out (a `webhook-timeout`, or a target request stored under
/// Ignore after waiting the timeout); and, where every call of the window is one of the act's
/// target requests (`calls_are_the_target_requests`, as rule 5), at most the sum of their
/// `elapsed_ms` ([`super::bounds::call_inside_request_ms`] each).
fn call_durations_agree(g: &mut G<'_>, c: &Counted<'_>, after: &[String], ev: &Evidence) {
    let (subject, deltas, hook, requests) = (c.subject, c.deltas, c.hook, c.requests);
    let timeout_seconds = policy_timeout_seconds(g, ev);
    let calls_are_the_target_requests = calls_are_the_target_requests(g);
    use super::bounds::{call_inside_request_ms, timeout_window_ms};
    let count_metric = format!("{}_count", metrics::DURATION);
    let of_hook = |(m, l): &(String, BTreeMap<String, String>)| {
        *m == count_metric && l.get("name").map(String::as_str) == Some(hook)
    };
    if !metrics::parse(after).keys().any(of_hook) {
        // The witness is absent (an API server that did not serve the histogram for H): said.
        let why = format!(
            "{count_metric}{{name={hook}}} is not in the read after the act: the API server's own time of the calls was not observed"
        );
        g.note(TimingNotObserved, format!("{subject} call-duration"), why);
        return;
    }
    let count = sum_delta(deltas, &count_metric, hook, &[]);
    let sum_ms = 1000.0 * sum_delta(deltas, &format!("{}_sum", metrics::DURATION), hook, &[]);
    let calls = sum_delta(deltas, REQUEST_TOTAL, hook, &[]);
    let subject = format!("{subject} call-duration");
    let duration = metrics::DURATION;
    g.check(count == calls, MetricsContradicted, subject.clone(), || {
        format!("metrics: {duration}_count{{name={hook}}} moved by {count}, {REQUEST_TOTAL}{{name={hook}}} by {calls}: every call is observed by both")
    });
    let ignore = policy_is_ignore(g, ev);
    let lo = timeout_seconds.map_or(0, |t| timeout_window_ms(t).0);
    let froze = |r: &RequestRecord| {
        timeout_seconds.is_some_and(|t| super::bounds::timeout_inside_freeze(ev, r, t))
    };
    let failed_open = |r: &RequestRecord| {
        ignore && r.namespace == TARGET && r.outcome == Outcome::Stored && froze(r)
    };
    let timed_out: Vec<&RequestRecord> = (requests.values())
        .filter(|r| r.outcome == Outcome::WebhookTimeout || failed_open(r))
        .collect();
    let (n, floor) = (timed_out.len(), timed_out.len() as f64 * lo as f64);
    g.check(sum_ms >= floor, MetricsContradicted, subject.clone(), || {
        let names = timed_out.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ");
        format!("metrics: {duration}_sum{{name={hook}}} moved by {sum_ms:.1} ms; the records say {n} calls ran into timeoutSeconds {timeout_seconds:?} ({names}), at least {floor} ms")
    });
    if calls_are_the_target_requests {
        let target = |r: &&RequestRecord| r.namespace == TARGET;
        let target: Vec<&RequestRecord> = requests.values().filter(target).collect();
        let ceiling: f64 = target
            .iter()
            .map(|r| call_inside_request_ms(r.elapsed_ms))
            .sum();
        let n = target.len();
        g.check(sum_ms <= ceiling, MetricsContradicted, subject, || {
            format!("metrics: {duration}_sum{{name={hook}}} moved by {sum_ms:.1} ms, more than the {n} target requests lasted by the tool's clock ({ceiling} ms with the skew)")
        });
    }
}

/// Whether every call to the policy's webhook in the act's metrics window is one of its
/// target-namespace requests (rules 5 and 7): every act but lab A act 6 (probes may precede the
/// registration) and lab A act 5 (no call).
fn calls_are_the_target_requests(g: &G<'_>) -> bool {
    g.lab == Lab::B || g.act == 3 || g.act == 7
}

/// The family a line of the Prometheus text format belongs to, and its kind: `("HELP", f)`,
/// `("TYPE", f)` or `("sample", f)` (a histogram's `_sum`/`_count`/`_bucket` samples are its
/// family's).
fn line_family(line: &str) -> Option<(&'static str, String)> {
    if let Some(rest) = line.strip_prefix("# HELP ") {
        return Some(("HELP", rest.split_whitespace().next()?.to_owned()));
    }
    if let Some(rest) = line.strip_prefix("# TYPE ") {
        return Some(("TYPE", rest.split_whitespace().next()?.to_owned()));
    }
    let name = line.split(['{', ' ']).next().filter(|n| !n.is_empty())?;
    let of_family = |s: &&str| {
        name.strip_suffix(s)
            .filter(|f| metrics::FAMILIES.contains(f))
    };
    let family = ["_sum", "_count", "_bucket"].iter().find_map(of_family);
    let family = family.unwrap_or(name);
    Some(("sample", family.to_owned()))
}

/// One read's lines are what the API server serves of the admission families: the Prometheus
/// text exposition (prometheus `docs/instrumenting/exposition_formats.md`; client_golang writes
/// a family only when it has samples): every family with samples has exactly one `# HELP` and
/// one `# TYPE` line, both before its first sample, and no `# HELP`/`# TYPE` line stands for a
/// family without samples or outside [`metrics::FAMILIES`]. Flags [`Code::RawMismatch`].
fn lines_are_an_exposition(g: &mut G<'_>, subject: &str, lines: &[String]) {
    let mut problems = Vec::new();
    let mut meta: BTreeMap<(String, &str), usize> = BTreeMap::new();
    let mut sampled: BTreeMap<String, usize> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        match line_family(l) {
            Some(("sample", f)) => {
                sampled.entry(f).or_insert(i);
            }
            Some((kind, f)) => {
                if !metrics::FAMILIES.contains(&f.as_str()) {
                    problems.push(format!("line {i}: # {kind} of {f}, no admission family"));
                }
                if meta.insert((f.clone(), kind), i).is_some() {
                    problems.push(format!("line {i}: a second # {kind} of {f}"));
                }
            }
            None => problems.push(format!("line {i}: {l:?} is no exposition line")),
        }
    }
    for (f, first) in &sampled {
        for kind in ["HELP", "TYPE"] {
            if meta.get(&(f.clone(), kind)).is_none_or(|m| m >= first) {
                problems.push(format!("{f}: no # {kind} before its first sample"));
            }
        }
    }
    for (f, _) in meta.keys() {
        if !sampled.contains_key(f) {
            problems.push(format!("# HELP/# TYPE of {f} without samples"));
        }
    }
    g.check(problems.is_empty(), RawMismatch, subject, || {
        problems.join("; ")
    });
}
