//! The taught facts of the drift table: one row per fact, each a pure function of one lab run's
//! evidence (the `evidence/NN.json` documents, verbatim) that returns what the run observed.
//!
//! Each fact says whether the course text states it ([`Fact::stated`]: the lab spec,
//! docs/labs.md, names it as what the lab shows; a change there is what the matrix exits non-zero
//! for) or only measures it (names, texts, counts, times: recorded so a maintainer sees them move),
//! and how a cell's value is compared with the pinned cell's ([`Compare`]).

use std::collections::BTreeMap;

use serde_json::Value;

/// One lab run's evidence: act number → the evidence document as saved (`schema_version`, `lab`,
/// `act`, `status`, `facts`, `raw`, …).
pub type Evidence = BTreeMap<u8, Value>;

/// How a cell's observed value is compared with the pinned cell's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compare {
    /// Same when the values are equal strings.
    Exact,
    /// A duration in milliseconds: same when within half the pinned value or 2 s of it, whichever
    /// is larger (a timing that moves by less is run-to-run noise on a shared machine, not drift).
    Millis,
}

/// What one run showed for one fact.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Observed {
    /// The comparable value (for [`Compare::Millis`], a number of milliseconds); `None`: the
    /// evidence does not show it (act missing, or not recorded on that backend).
    pub value: Option<String>,
    /// The measured particulars behind it, for the reader (elapsed times, counts, names).
    pub detail: String,
    /// The row's number, for a fact that moves from run to run (`4` of `18` requests timed out,
    /// a time in ms): the table shows its spread over each cell's runs ([`super::table::spread`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figure: Option<Figure>,
}

/// A number one run observed: `n`, or `n` out of `of` (requests that timed out of those sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Figure {
    /// The count or the milliseconds.
    pub n: i64,
    /// Out of how many (`None`: a plain number).
    pub of: Option<i64>,
}

impl Observed {
    /// A value the run showed, with its particulars.
    pub(crate) fn seen(value: impl Into<String>, detail: impl Into<String>) -> Observed {
        Observed {
            value: Some(value.into()),
            detail: detail.into(),
            figure: None,
        }
    }
    /// Not shown by the run, and why.
    pub(crate) fn not_seen(why: impl Into<String>) -> Observed {
        Observed {
            value: None,
            detail: why.into(),
            figure: None,
        }
    }
}

/// One row of the drift table.
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    /// Stable id, e.g. `b.fail-freeze.target`.
    pub id: &'static str,
    /// `a`, `b` or `c`.
    pub lab: &'static str,
    /// What the row holds, in a few words.
    pub title: &'static str,
    /// Whether the course text states it (docs/labs.md names it as what the lab shows).
    pub stated: bool,
    /// How values are compared.
    pub compare: Compare,
    /// Reads it from the run's evidence.
    pub observe: fn(&Evidence) -> Observed,
}

/// `facts` of act `act`, if its evidence is there.
fn facts(ev: &Evidence, act: u8) -> Option<&Value> {
    ev.get(&act).map(|e| &e["facts"])
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// `outcome` and whether the separate GET by name found it: `webhook-timeout (GET: not found)`.
fn request_word(r: &Value) -> String {
    let found = match r.pointer("/get/exists").and_then(Value::as_bool) {
        Some(true) => "found",
        Some(false) => "not found",
        None => "not made",
    };
    format!("{} (GET: {found})", s(r, "/outcome"))
}

/// The distinct words of several requests, joined (`a` when all agree, `a | b` otherwise).
fn agree(words: &[String]) -> String {
    let mut w: Vec<&String> = words.iter().collect();
    w.sort();
    w.dedup();
    w.into_iter().cloned().collect::<Vec<_>>().join(" | ")
}

fn elapsed(r: &Value) -> Option<i64> {
    r.get("elapsed_ms").and_then(Value::as_i64)
}

fn requests<'a>(f: &'a Value, keys: &[&str]) -> Vec<&'a Value> {
    keys.iter()
        .filter_map(|k| f.get(*k))
        .filter(|v| v.is_object())
        .collect()
}

fn missing(act: u8) -> Observed {
    Observed::not_seen(format!("no evidence of act {act}"))
}

/// Lab B act 5: the target namespace's requests during the Fail freeze.
fn b_fail_freeze_target(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 5) else {
        return missing(5);
    };
    let rs = requests(f, &["target_good", "target_bad"]);
    if rs.is_empty() {
        return Observed::not_seen("act 5 recorded no target requests");
    }
    let words: Vec<String> = rs.iter().map(|r| request_word(r)).collect();
    Observed::seen(
        agree(&words),
        format!("{} requests: {}", rs.len(), words.join(", ")),
    )
}

/// Lab B act 5: the control namespace's request during the Fail freeze.
fn b_fail_freeze_control(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 5) else {
        return missing(5);
    };
    match f.get("control").filter(|v| v.is_object()) {
        Some(c) => Observed::seen(request_word(c), format!("{} ms", elapsed(c).unwrap_or(-1))),
        None => Observed::not_seen("act 5 recorded no control request"),
    }
}

/// Lab B act 6: the target's requests during the Ignore freeze, and whether each was answered
/// only after the webhook's timeout.
fn b_ignore_freeze_target(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    let timeout_ms = f
        .get("timeout_seconds")
        .and_then(Value::as_i64)
        .map(|t| t * 1000);
    let rs = requests(f, &["target_good", "target_bad"]);
    if rs.is_empty() {
        return Observed::not_seen("act 6 recorded no target requests");
    }
    let words: Vec<String> = rs
        .iter()
        .map(|r| {
            let after = match (elapsed(r), timeout_ms) {
                (Some(e), Some(t)) if e >= t => " after the timeout",
                (Some(_), Some(_)) => " before the timeout",
                _ => "",
            };
            format!("{}{after}", request_word(r))
        })
        .collect();
    let times: Vec<String> = rs
        .iter()
        .map(|r| format!("{} ms", elapsed(r).unwrap_or(-1)))
        .collect();
    Observed::seen(
        agree(&words),
        format!(
            "elapsed {} (timeoutSeconds {})",
            times.join(", "),
            timeout_ms.map_or("?".into(), |t| (t / 1000).to_string())
        ),
    )
}

/// Lab B acts 3 and 6: a violating request to a healthy webhook, under Fail (act 3) and under
/// Ignore (act 6).
fn b_healthy_deny(ev: &Evidence) -> Observed {
    let fail = facts(ev, 3).and_then(|f| f.get("bad"));
    let ignore = facts(ev, 6).and_then(|f| f.get("healthy_bad"));
    match (fail, ignore) {
        (Some(a), Some(b)) => Observed::seen(
            format!("Fail: {} · Ignore: {}", s(a, "/outcome"), s(b, "/outcome")),
            format!("HTTP {} and {}", a["http_status"], b["http_status"]),
        ),
        _ => Observed::not_seen("act 3's bad or act 6's healthy_bad request missing"),
    }
}

/// Lab B acts 5, 6, 7: after each freeze (and in act 7) a new violating request is denied, and
/// act 3's pod is still the same UID, Running.
fn b_recovery(ev: &Evidence) -> Observed {
    let Some(uid) = facts(ev, 3)
        .and_then(|f| f.pointer("/existing/uid"))
        .and_then(Value::as_str)
    else {
        return Observed::not_seen("act 3 recorded no existing pod");
    };
    let mut parts = Vec::new();
    let mut details = Vec::new();
    for (act, deny_key) in [
        (5u8, "first_explicit_deny"),
        (6, "first_explicit_deny"),
        (7, "healthy_bad"),
    ] {
        let Some(f) = facts(ev, act) else {
            return missing(act);
        };
        let deny = s(f, &format!("/{deny_key}/outcome")).to_string();
        let same = s(f, "/existing/uid") == uid;
        let phase = s(f, "/existing/phase");
        parts.push(format!(
            "{deny}, {} {phase}",
            if same { "same pod" } else { "another pod" }
        ));
        if let Some(ms) = f.get("first_deny_after_resume_ms").and_then(Value::as_i64) {
            details.push(format!("act {act}: first deny {ms} ms after resume"));
        }
    }
    Observed::seen(agree(&parts), details.join("; "))
}

/// Lab B act 5: how long the frozen requests waited, against `timeoutSeconds`: `≈ timeoutSeconds`
/// when each answer came in `[T, T + 1 s)`.
fn b_timeout_elapsed(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 5) else {
        return missing(5);
    };
    let Some(t) = f.get("timeout_seconds").and_then(Value::as_i64) else {
        return Observed::not_seen("act 5 recorded no timeout_seconds");
    };
    let times: Vec<i64> = requests(f, &["target_good", "target_bad"])
        .iter()
        .filter_map(|r| elapsed(r))
        .collect();
    if times.is_empty() {
        return Observed::not_seen("act 5 recorded no elapsed times");
    }
    let within = times.iter().all(|e| *e >= t * 1000 && *e < t * 1000 + 1000);
    Observed::seen(
        if within {
            "≈ timeoutSeconds"
        } else {
            "differs from timeoutSeconds"
        },
        format!(
            "{} ms vs timeoutSeconds {t}",
            times
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// Lab B act 2: the registered webhook's name.
fn b_webhook_name(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 2) else {
        return missing(2);
    };
    match f.pointer("/webhook/name").and_then(Value::as_str) {
        Some(n) => Observed::seen(n, format!("in {}", s(f, "/webhook/configuration"))),
        None => Observed::not_seen("act 2 recorded no webhook"),
    }
}

/// Lab B act 2: the registered webhook's service path.
fn b_webhook_path(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 2) else {
        return missing(2);
    };
    match f.pointer("/webhook/service") {
        Some(svc) if svc.is_object() => Observed::seen(
            s(svc, "/path"),
            format!(
                "service {}/{}:{}",
                s(svc, "/namespace"),
                s(svc, "/name"),
                svc["port"]
            ),
        ),
        _ => Observed::not_seen("act 2 recorded no webhook service"),
    }
}

/// Lab B act 3: the deny's message with the webhook's name replaced by `<webhook>` (so a renamed
/// webhook shows in its own row only).
fn b_deny_message(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 3) else {
        return missing(3);
    };
    let msg = s(f, "/bad/message");
    if msg.is_empty() {
        return Observed::not_seen("act 3's bad request has no message");
    }
    let name = facts(ev, 2)
        .and_then(|f| f.pointer("/webhook/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let text = if name.is_empty() {
        msg.to_string()
    } else {
        msg.replace(name, "<webhook>")
    };
    let marker = if msg.contains("KCA_ENVIRONMENT_REQUIRED") {
        "carries the marker KCA_ENVIRONMENT_REQUIRED"
    } else {
        "no marker KCA_ENVIRONMENT_REQUIRED"
    };
    Observed::seen(text, marker)
}

/// The delta of `metric` for the lab's webhook in act `act`'s admission metrics.
fn metric_delta(f: &Value, metric: &str, webhook: &str) -> Option<f64> {
    let deltas = f.pointer("/admission_metrics/deltas")?.as_array()?;
    Some(
        deltas
            .iter()
            .filter(|d| s(d, "/metric") == metric && s(d, "/labels/name") == webhook)
            .filter_map(|d| d.get("delta").and_then(Value::as_f64))
            .sum(),
    )
}

/// Lab B act 6: the API server's `apiserver_admission_webhook_fail_open_count` for the webhook
/// over the Ignore freeze.
fn b_fail_open_count(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    let webhook = s(f, "/webhook/name");
    match metric_delta(f, "apiserver_admission_webhook_fail_open_count", webhook) {
        Some(d) => Observed::seen(format!("{d}"), format!("delta over act 6 for {webhook}")),
        None => Observed::not_seen("act 6 recorded no admission metrics"),
    }
}

/// Lab B act 6: the `failed-open.validating.webhook.admission.k8s.io/*` audit annotation on the
/// frozen target requests (key, value with the webhook's name replaced, how many carried it).
fn b_failed_open_annotation(ev: &Evidence) -> Observed {
    frozen_annotations(ev, |webhook, key, value| {
        key.strip_prefix("failed-open.validating.webhook.admission.k8s.io/")
            .map(|rest| {
                let v = value.as_str().unwrap_or("").replace(webhook, "<webhook>");
                format!("{rest} = {v}")
            })
    })
}

/// Lab B act 6: the `apiserver.latency.k8s.io/*` audit annotations on the two frozen requests
/// (the API server writes them on a request that took over 500 ms; their keys, the values are
/// durations). Kubernetes v1.34.0–v1.34.x wrote none (kubernetes/kubernetes#135684, fixed by
/// PR #135685 in v1.35).
fn b_latency_annotation(ev: &Evidence) -> Observed {
    frozen_annotations(ev, |_, key, _| {
        key.strip_prefix("apiserver.latency.k8s.io/")
            .map(str::to_owned)
    })
}

/// Lab B act 6: what `pick(webhook name, key, value)` keeps of the audit annotations of the two
/// frozen requests (`target_good`, `target_bad`), one word per request whose annotations it
/// picked any from (sorted, joined with `, `); `absent` when none, not seen without an audit log.
fn frozen_annotations(
    ev: &Evidence,
    pick: impl Fn(&str, &str, &Value) -> Option<String>,
) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    if s(f, "/admission_audit/status") != "observed" {
        return Observed::not_seen(format!(
            "audit log: {}",
            f.pointer("/admission_audit/status")
                .and_then(Value::as_str)
                .unwrap_or("not recorded")
        ));
    }
    let webhook = s(f, "/webhook/name");
    let frozen: Vec<&str> = ["target_good", "target_bad"]
        .iter()
        .map(|k| s(f, &format!("/{k}/name")))
        .collect();
    let mut found = Vec::new();
    let empty = Vec::new();
    for r in f
        .pointer("/admission_audit/requests")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
    {
        if !frozen.contains(&s(r, "/name")) {
            continue;
        }
        let mut words = Vec::new();
        for e in r.get("events").and_then(Value::as_array).unwrap_or(&empty) {
            if let Some(a) = e.get("annotations").and_then(Value::as_object) {
                words.extend(a.iter().filter_map(|(k, v)| pick(webhook, k, v)));
            }
        }
        if !words.is_empty() {
            words.sort();
            words.dedup();
            found.push(words.join(", "));
        }
    }
    Observed::seen(
        if found.is_empty() {
            "absent".to_string()
        } else {
            agree(&found)
        },
        format!(
            "{} of {} frozen requests carry it",
            found.len(),
            frozen.len()
        ),
    )
}

/// Lab A act 5: whether the policy's webhook registration is still there at 0 replicas.
fn a_scale_down_registration(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 5) else {
        return missing(5);
    };
    match f.get("policy_webhook_present").and_then(Value::as_bool) {
        Some(false) => Observed::seen(
            "registration-absent",
            "policy's webhook in no ValidatingWebhookConfiguration",
        ),
        Some(true) => Observed::seen(
            "registration-kept",
            "policy's webhook still registered at 0 replicas",
        ),
        None => Observed::not_seen("act 5 recorded no registration check"),
    }
}

/// Lab A act 5: the violating target request at 0 replicas, and whether the API server called
/// the policy's webhook for it (its `apiserver_admission_webhook_request_total` delta).
fn a_scale_down_request(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 5) else {
        return missing(5);
    };
    let Some(r) = f.get("target_bad").filter(|v| v.is_object()) else {
        return Observed::not_seen("act 5 recorded no target request");
    };
    let webhook = facts(ev, 2)
        .and_then(|f| f.pointer("/webhook/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let calls = metric_delta(f, "apiserver_admission_webhook_request_total", webhook);
    let word = request_word(r);
    let value = match calls {
        Some(0.0) => format!("{word}, webhook not called"),
        Some(c) => format!("{word}, webhook called {c} times"),
        None => format!("{word}, calls not measured"),
    };
    Observed::seen(value, format!("{} ms", elapsed(r).unwrap_or(-1)))
}

/// Lab A act 6: the order of the recovery milestones (Lease acquired, webhook registered, first
/// explicit deny) by their timestamps, and their times after the replicas were restored.
fn a_recovery_order(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    let steps = [
        ("lease", "lease_acquired"),
        ("registration", "webhook_registered"),
        ("deny", "first_explicit_deny"),
    ];
    let mut seen = Vec::new();
    for (word, key) in steps {
        let st = s(f, &format!("/{key}/status"));
        let at = s(f, &format!("/{key}/at"));
        if st != "confirmed" || at.is_empty() {
            return Observed::seen(
                format!("{word} not-confirmed"),
                format!(
                    "{key}: {st}, last seen {}",
                    s(f, &format!("/{key}/last_seen"))
                ),
            );
        }
        let waited = f
            .pointer(&format!("/{key}/waited_ms"))
            .and_then(Value::as_i64)
            .unwrap_or(-1);
        seen.push((at.to_string(), word, waited));
    }
    let detail = seen
        .iter()
        .map(|(_, w, ms)| format!("{w} {:.1} s", *ms as f64 / 1000.0))
        .collect::<Vec<_>>()
        .join(", ");
    // RFC 3339 UTC with the same precision sorts as text; ties keep the taught order.
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    let order = seen
        .iter()
        .map(|(_, w, _)| *w)
        .collect::<Vec<_>>()
        .join(" → ");
    Observed::seen(order, format!("after replicas restored: {detail}"))
}

/// A time in milliseconds as a row's value, with its figure (for the spread over runs).
fn millis(ms: i64) -> Observed {
    let mut o = Observed::seen(ms.to_string(), format!("{:.1} s", ms as f64 / 1000.0));
    o.figure = Some(Figure { n: ms, of: None });
    o
}

/// Lab A act 6: milliseconds from replicas restored to the first explicit deny.
fn a_recovery_deny_ms(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    if s(f, "/first_explicit_deny/status") != "confirmed" {
        return Observed::not_seen("first explicit deny not confirmed");
    }
    match f
        .pointer("/first_explicit_deny/waited_ms")
        .and_then(Value::as_i64)
    {
        Some(ms) => millis(ms),
        None => Observed::not_seen("no waited_ms"),
    }
}

/// Lab A act 6: the leader takeover time (Lease) the act measured.
fn a_leader_takeover_ms(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 6) else {
        return missing(6);
    };
    match f.get("leader_takeover_ms").and_then(Value::as_i64) {
        Some(ms) => millis(ms),
        None => Observed::not_seen("act 6 recorded no leader_takeover_ms"),
    }
}

/// Lab A act 7: server-side dry-run of a good and a bad pod.
fn a_dry_run(ev: &Evidence) -> Observed {
    let Some(f) = facts(ev, 7) else {
        return missing(7);
    };
    let rs = requests(f, &["good", "bad"]);
    if rs.len() != 2 {
        return Observed::not_seen("act 7 recorded no good/bad dry-run requests");
    }
    Observed::seen(
        format!(
            "good: {} · bad: {}",
            request_word(rs[0]),
            s(rs[1], "/outcome")
        ),
        format!("sideEffects {}", s(f, "/side_effects")),
    )
}

/// The rows of labs B and A, lab B first (the order); lab C's are in `facts_c.rs`, and
/// the table's rows are both (`table::all_facts`).
pub const FACTS: &[Fact] = &[
    Fact {
        id: "b.fail-freeze.target",
        lab: "b",
        title: "Fail freeze: matching requests (outcome/stored)",
        stated: true,
        compare: Compare::Exact,
        observe: b_fail_freeze_target,
    },
    Fact {
        id: "b.fail-freeze.control",
        lab: "b",
        title: "Fail freeze: control request outside the selector",
        stated: true,
        compare: Compare::Exact,
        observe: b_fail_freeze_control,
    },
    Fact {
        id: "b.ignore-freeze.target",
        lab: "b",
        title: "Ignore freeze: matching requests",
        stated: true,
        compare: Compare::Exact,
        observe: b_ignore_freeze_target,
    },
    Fact {
        id: "b.healthy.deny",
        lab: "b",
        title: "Healthy webhook: violating request (Fail, Ignore)",
        stated: true,
        compare: Compare::Exact,
        observe: b_healthy_deny,
    },
    Fact {
        id: "b.recovery",
        lab: "b",
        title: "After each freeze: deny again, act 3's pod",
        stated: true,
        compare: Compare::Exact,
        observe: b_recovery,
    },
    Fact {
        id: "b.timeout.elapsed",
        lab: "b",
        title: "Frozen requests' elapsed time vs timeoutSeconds",
        stated: true,
        compare: Compare::Exact,
        observe: b_timeout_elapsed,
    },
    Fact {
        id: "b.webhook.name",
        lab: "b",
        title: "Registered webhook's name",
        stated: false,
        compare: Compare::Exact,
        observe: b_webhook_name,
    },
    Fact {
        id: "b.webhook.path",
        lab: "b",
        title: "Registered webhook's service path",
        stated: false,
        compare: Compare::Exact,
        observe: b_webhook_path,
    },
    Fact {
        id: "b.deny.message",
        lab: "b",
        title: "The deny's message (webhook name as <webhook>)",
        stated: false,
        compare: Compare::Exact,
        observe: b_deny_message,
    },
    Fact {
        id: "b.fail-open.count",
        lab: "b",
        title: "apiserver_admission_webhook_fail_open_count over the Ignore freeze",
        stated: false,
        compare: Compare::Exact,
        observe: b_fail_open_count,
    },
    Fact {
        id: "b.fail-open.audit",
        lab: "b",
        title: "failed-open audit annotation on the frozen requests",
        stated: false,
        compare: Compare::Exact,
        observe: b_failed_open_annotation,
    },
    Fact {
        id: "b.latency.audit",
        lab: "b",
        title: "apiserver.latency.k8s.io audit annotations on the frozen requests",
        stated: false,
        compare: Compare::Exact,
        observe: b_latency_annotation,
    },
    Fact {
        id: "a.scale-down.registration",
        lab: "a",
        title: "Scale to 0: the policy's webhook registration",
        stated: true,
        compare: Compare::Exact,
        observe: a_scale_down_registration,
    },
    Fact {
        id: "a.scale-down.request",
        lab: "a",
        title: "Scale to 0: violating request, webhook called?",
        stated: true,
        compare: Compare::Exact,
        observe: a_scale_down_request,
    },
    Fact {
        id: "a.recovery.order",
        lab: "a",
        title: "Recovery order (Lease, registration, first deny)",
        stated: true,
        compare: Compare::Exact,
        observe: a_recovery_order,
    },
    Fact {
        id: "a.recovery.deny-ms",
        lab: "a",
        title: "Replicas restored → first explicit deny (ms)",
        stated: false,
        compare: Compare::Millis,
        observe: a_recovery_deny_ms,
    },
    Fact {
        id: "a.recovery.takeover-ms",
        lab: "a",
        title: "Leader takeover (Lease) measured (ms)",
        stated: false,
        compare: Compare::Millis,
        observe: a_leader_takeover_ms,
    },
    Fact {
        id: "a.dry-run",
        lab: "a",
        title: "Server-side dry-run (good, bad)",
        stated: true,
        compare: Compare::Exact,
        observe: a_dry_run,
    },
];

/// The verdict of one cell's value against the pinned cell's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Drift {
    /// This is the pinned cell (the reference).
    Pinned,
    /// Same as the pinned cell.
    Same,
    /// Different from the pinned cell.
    Changed,
    /// This cell (or the pinned one) did not observe it.
    NotObserved,
}

/// Compares `cell` with `pinned` under `compare`.
pub fn drift(compare: Compare, pinned: &Observed, cell: &Observed) -> Drift {
    let (Some(p), Some(c)) = (&pinned.value, &cell.value) else {
        return Drift::NotObserved;
    };
    let same = match compare {
        Compare::Exact => p == c,
        Compare::Millis => match (p.parse::<i64>(), c.parse::<i64>()) {
            (Ok(p), Ok(c)) => (p - c).abs() <= (p / 2).max(2000),
            _ => p == c,
        },
    };
    if same { Drift::Same } else { Drift::Changed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_tolerate_noise_but_not_a_different_regime() {
        let o = |v: &str| Observed::seen(v, "");
        assert_eq!(
            drift(Compare::Millis, &o("29674"), &o("31000")),
            Drift::Same
        );
        assert_eq!(drift(Compare::Millis, &o("1000"), &o("2900")), Drift::Same);
        assert_eq!(
            drift(Compare::Millis, &o("29674"), &o("60000")),
            Drift::Changed
        );
        assert_eq!(drift(Compare::Exact, &o("a"), &o("a")), Drift::Same);
        assert_eq!(drift(Compare::Exact, &o("a"), &o("b")), Drift::Changed);
        assert_eq!(
            drift(Compare::Exact, &o("a"), &Observed::not_seen("x")),
            Drift::NotObserved
        );
    }
}
