//! The API server's and Kyverno's own rules, held over every record of every act of every lab.
//!
//! Each rule reads whatever records an act has (request records and Lease reads in `facts` at any
//! depth, the raw answers in `raw[]`), so no lab opts in or out, and each finding names both
//! witnesses: the record it is on (`subject`, file and JSON path) and the record it contradicts
//! (in `detail`, file and JSON path). Sources: k8s.io/apiserver
//! `pkg/admission/plugin/webhook/validating/dispatcher.go` (a call failure under Ignore is
//! logged "failing open" and not returned; under Fail it is a 500 `InternalError` and a
//! `calling_webhook_error` rejection), client-go `tools/leaderelection` (a new holder stamps
//! `acquireTime` and increments `leaseTransitions`; a renewal keeps both).
//!
//! | rule | holds | against | code |
//! |---|---|---|---|
//! | [`every_request_is_its_answer`] | every request record of the act (`G::request_is_its_answer`) | its own raw answer and GET; its raw `request:*` record | outcome-contradicts-answer, raw-mismatch, stored-without-uid, … |
//! | [`violating_pod_never_stored_under_fail`] | a pod without the policy's label, in the target namespace, stored or dry-run admitted | the newest registration read (raw, this act or an earlier one) before it was sent: the policy's webhook registered with failurePolicy Fail | admitted-under-fail |
//! | [`call_failure_never_reaches_the_client_under_ignore`] | a request answered with a webhook call failure; a `calling_webhook_error` rejection in the metrics deltas | the named webhook's registration, wherever the lab recorded it: failurePolicy Ignore fails open | call-failure-under-ignore |
//! | [`lease_tenure_is_one_story`] | every read of a Lease (facts and raw, this act against itself and the earlier acts) | each other: `leaseTransitions` never falls; one transition count, one holder and `acquireTime`; a read after a tenure's `acquireTime` shows it or a later one, a read between two of one tenure its holder; the read's own time; the act's freeze | lease-tenure-contradicted |
//! | [`replica_counters_account_for_the_calls`] | the replicas' admission request counters (`replica_requests`: each replica's before/after) | the act's requests that called the webhook: with no counter reset, at least every answered call (a deny, a pod admitted in the target namespace in under 1 s) and at most every call (plus the timed-out and failed-open ones a frozen replica may count after its resume); after a reset, at most every call | value-mismatch |
//! | [`acts_follow_each_other`] | the act's span | the earlier acts' spans | times-inconsistent |

use std::collections::BTreeMap;

use serde_json::Value;

#[cfg(doc)]
use super::Code;
use super::{Code::*, G, bounds, ev_name, walk};
use crate::evidence::{Evidence, Outcome, RequestRecord};
use crate::facts::parse_rfc3339;

type Time = chrono::DateTime<chrono::Utc>;

/// The evidence documents of the acts in `acts` that could be read, in act order.
fn read_evidence(
    input: &super::GradeInput,
    acts: impl std::ops::RangeBounds<u8>,
) -> impl Iterator<Item = (&u8, &super::EvidenceDoc)> {
    let docs = input.evidence.range(acts);
    docs.filter_map(|(act, doc)| Some((act, doc.as_ref().ok()?)))
}

/// Runs every rule of this module on act `g.act` (its evidence `ev`).
pub(crate) fn grade(g: &mut G, ev: &Evidence) {
    let reads = registration_reads(g);
    every_request_is_its_answer(g, ev);
    violating_pod_never_stored_under_fail(g, ev, &reads);
    call_failure_never_reaches_the_client_under_ignore(g, ev, &reads);
    lease_tenure_is_one_story(g, ev, &lease_reads(g));
    one_resource_version_one_object(g);
    replica_counters_account_for_the_calls(g, ev);
    // Every restart count read so far, read once for the two restart rules.
    let restarts = lab_restart_reads(g);
    replica_counter_falls_only_with_a_restart(g, &restarts);
    restart_count_never_falls_for_one_pod(g, &restarts);
    acts_follow_each_other(g, ev);
}

/// (JSON path under `facts`, record) of every request record of the act's facts.
fn requests(ev: &Evidence) -> Vec<(String, RequestRecord)> {
    let mut found = Vec::new();
    super::request_values(&ev.facts, "facts", &mut found);
    let parse = |(p, v): (String, &Value)| Some((p, serde_json::from_value(v.clone()).ok()?));
    found.into_iter().filter_map(parse).collect()
}

/// Every request record of the act, wherever it sits in `facts` (lab C's requests after the
/// resume included), whatever the act's own rules expect of it ([`G::request`]), is its own
/// answer (the one record rule, [`G::request_is_its_answer`], held here once per record) and its
/// raw record: the recorder keeps each request it sent verbatim in `raw` (`request:<label>`,
/// [`crate::evidence::RequestRecord`]) when it sends it, and a facts copy that differs from the
/// raw record of the same name (an outcome, status, message or time changed after the fact) is
/// flagged [`Code::RawMismatch`], naming both. A facts record without a raw one is not flagged so
/// (generated fixtures and older evidence keep only the facts).
pub(crate) fn every_request_is_its_answer(g: &mut G, ev: &Evidence) {
    let mut raw: BTreeMap<&str, (&str, &Value)> = BTreeMap::new();
    for r in &ev.raw {
        let (what, data) = (r["what"].as_str().unwrap_or_default(), &r["data"]);
        let name = data["name"].as_str();
        if let Some(name) = name.filter(|_| what.starts_with("request:")) {
            raw.entry(name).or_insert((what, data));
        }
    }
    let mut quoted = Vec::new();
    super::request_values(&ev.facts, "facts", &mut quoted);
    for (path, v) in quoted {
        let sub = format!("{} {path}", ev_name(g.act));
        if let Ok(r) = serde_json::from_value::<RequestRecord>(v.clone()) {
            g.request_is_its_answer(&sub, &r);
        }
        if let Some((name, (what, data))) = v["name"].as_str().and_then(|n| raw.get_key_value(n)) {
            g.check(*data == v, RawMismatch, &sub, || {
                format!("request {name} differs from its raw record {what:?}")
            });
        }
    }
}

/// One read of the webhook registrations: when (the raw record's `at`), where (file and JSON
/// path) and each webhook it shows (name → failurePolicy). `lists` is true when the read is a
/// whole configuration or list, so that a webhook it lacks was not registered then.
#[derive(Debug, Clone)]
pub(crate) struct RegistrationRead {
    act: u8,
    at: Option<Time>,
    witness: String,
    hooks: BTreeMap<String, String>,
    lists: bool,
}

/// Whether `name` is the lab policy's webhook (Kyverno names it after the policy).
fn is_policy_webhook(name: &str) -> bool {
    name.ends_with(&format!("-{}", crate::inputs::PolicyName::VALUE))
}

/// Every registration read the lab recorded in `raw[]` (acts up to and including `g.act`, and
/// the facts' registration copies for the webhook names), in act and record order.
fn registration_reads(g: &G) -> Vec<RegistrationRead> {
    let mut out = Vec::new();
    for (act, doc) in read_evidence(g.input, ..=g.act) {
        let (act, name, facts) = (*act, ev_name(*act), &doc.value["facts"]);
        // A read that shows a webhook or lists the configurations.
        let mut read = |at, witness, hooks: BTreeMap<String, String>, lists| {
            if !hooks.is_empty() || lists {
                out.push(RegistrationRead {
                    act,
                    at,
                    witness,
                    hooks,
                    lists,
                });
            }
        };
        let raw = doc.value["raw"].as_array().into_iter().flatten();
        for (i, r) in raw.enumerate() {
            let (mut hooks, mut lists) = (BTreeMap::new(), false);
            webhook_entries(&r["data"], &mut hooks, &mut lists);
            read(time_of(r, "at"), format!("{name} raw[{i}]"), hooks, lists);
        }
        if let Some((at, witness, hooks, lists)) = facts_registration_read(facts) {
            read(Some(at), format!("{name} facts.{witness}"), hooks, lists);
        }
        let mut hooks = BTreeMap::new();
        facts_webhooks(facts, "facts", &name, &mut hooks);
        for (hook, (policy, witness)) in hooks {
            read(None, witness, BTreeMap::from([(hook, policy)]), false);
        }
    }
    out
}

/// The registration read an act's facts record with its time (`registrations_checked_at` /
/// `registration_checked_at`): the verbatim entries it kept (`webhook_configurations`,
/// `registration_snapshot`) and, when the act says whether the policy's webhook was there
/// (`policy_webhook_present`, `registration_present_during_freeze`), that answer: `false` is a
/// read that shows it absent. Returns (its time, the key it is witnessed by, its webhooks and
/// whether it lists the configurations, as [`webhook_entries`]).
fn facts_registration_read(facts: &Value) -> Option<(Time, &str, BTreeMap<String, String>, bool)> {
    let keys = ["registrations_checked_at", "registration_checked_at"];
    let at = |k| Some((k, time_of(facts, k)?));
    let (at_key, at) = keys.into_iter().find_map(at)?;
    let (mut hooks, mut lists) = (BTreeMap::new(), false);
    for k in ["webhook_configurations", "registration_snapshot"] {
        webhook_entries(&facts[k], &mut hooks, &mut lists);
    }
    let claims = [
        "policy_webhook_present",
        "registration_present_during_freeze",
    ];
    let claim = |k| Some((k, facts.get(k)?.as_bool()?));
    let present = claims.into_iter().find_map(claim);
    if let Some((_, false)) = present {
        hooks.retain(|h, _| !is_policy_webhook(h));
        lists = true;
    }
    Some((at, present.map_or(at_key, |(k, _)| k), hooks, lists))
}

/// Collects the webhook entries (`name` + `failurePolicy` + `clientConfig`) under `v`; `lists`
/// is set when `v` holds a ValidatingWebhookConfiguration or a list of them.
fn webhook_entries(v: &Value, hooks: &mut BTreeMap<String, String>, lists: &mut bool) {
    walk(v, &mut String::new(), None, (), &mut |_, _, x, ()| {
        let text = |k: &str| x.get(k).and_then(Value::as_str);
        *lists |= text("kind").is_some_and(|k| k.starts_with("ValidatingWebhookConfiguration"));
        let entry = text("name").zip(text("failurePolicy"));
        let entry = entry.filter(|_| x.get("clientConfig").is_some());
        let entry = entry.map(|(n, p)| hooks.insert(n.to_owned(), p.to_owned()));
        entry.is_none().then_some(())
    });
}

/// The facts' webhook copies (`name` + `failure_policy`): name → (failurePolicy, witness).
fn facts_webhooks(v: &Value, path: &str, file: &str, out: &mut BTreeMap<String, (String, String)>) {
    walk(v, &mut path.to_owned(), None, (), &mut |p, _, x, ()| {
        let text = |k: &str| x.get(k).and_then(Value::as_str);
        let Some((n, policy)) = text("name").zip(text("failure_policy")) else {
            return Some(());
        };
        let read = (policy.to_owned(), format!("{file} {p}"));
        out.entry(n.to_owned()).or_insert(read);
        None
    });
}

/// The newest timed registration read strictly before `t` that shows the policy's webhook or
/// lists the configurations (so shows it absent): (failurePolicy or `None` when absent, witness).
fn policy_registration_before(reads: &[RegistrationRead], t: Time) -> Option<(Option<&str>, &str)> {
    let shown = |r: &&RegistrationRead| r.lists || r.hooks.keys().any(|h| is_policy_webhook(h));
    let before = reads.iter().filter(|r| r.at.is_some_and(|at| at < t));
    let r = before.filter(shown).max_by_key(|r| (r.at, r.act))?;
    let hook = r.hooks.iter().find(|(h, _)| is_policy_webhook(h));
    Some((hook.map(|(_, p)| p.as_str()), r.witness.as_str()))
}

/// Under failurePolicy Fail a pod the policy denies is never stored while the policy's webhook
/// is registered: a healthy webhook denies it, a failed call rejects it (dispatcher.go). The
/// registration in force is the newest raw read of the registrations sent before the request
/// (this act's or an earlier act's); a list without the policy's webhook (lab A's act 5, which
/// stores the pod because the webhook is gone and says so) is no Fail registration. Flags
/// [`Code::AdmittedUnderFail`] on the request, naming the registration read.
pub(crate) fn violating_pod_never_stored_under_fail(
    g: &mut G,
    ev: &Evidence,
    reads: &[RegistrationRead],
) {
    for (path, r) in requests(ev) {
        if super::has_env_label(&r) || r.namespace != crate::rules::common::TARGET_NAMESPACE {
            continue;
        }
        let Some(sent) = parse_rfc3339(&r.sent_at) else {
            continue;
        };
        let Some((Some("Fail"), witness)) = policy_registration_before(reads, sent) else {
            continue;
        };
        let (witness, label) = (witness.to_owned(), crate::rules::common::GOOD_LABEL.0);
        let ok = !matches!(r.outcome, Outcome::Stored | Outcome::DryRunAdmitted);
        g.check(ok, AdmittedUnderFail, format!("{} {path}", ev_name(g.act)), || {
            let (name, sent, ns, outcome) = (&r.name, &r.sent_at, &r.namespace, r.outcome.as_str());
            format!("{name} (sent {sent}) is a pod without the {label:?} label in {ns}, recorded {outcome}; the newest registration read before it, {witness}, registers the policy's webhook with failurePolicy Fail")
        });
    }
}

/// Under failurePolicy Ignore a failed call of the webhook never reaches the client: the API
/// server fails open (the pod is stored, `fail_open_count` +1, a `failed-open` audit annotation)
/// and counts no `calling_webhook_error` rejection (dispatcher.go). A request answered with a
/// call failure of a webhook the lab recorded registered with Ignore, or a rejection of that
/// kind in the act's metrics deltas, contradicts the registration. Flags
/// [`Code::CallFailureUnderIgnore`], naming the record and the registration.
pub(crate) fn call_failure_never_reaches_the_client_under_ignore(
    g: &mut G,
    ev: &Evidence,
    reads: &[RegistrationRead],
) {
    // (the record's path, the webhook whose call failed, what the record shows, what Ignore means)
    let mut failed = Vec::new();
    for (path, r) in requests(ev) {
        let msg = r.message.as_deref().unwrap_or("");
        if let Some(call) = crate::classify::parse_call_failure(msg) {
            let (name, status, hook) = (&r.name, r.http_status, &call.webhook);
            let shows =
                format!("{name} was answered HTTP {status} with a failed call of webhook {hook:?}");
            failed.push((path, call.webhook, shows, "the API server fails open"));
        }
    }
    let key = crate::metrics::FACTS_KEY;
    let deltas = ev.facts.pointer(&format!("/{key}/deltas"));
    let deltas = deltas.and_then(Value::as_array).into_iter().flatten();
    for (i, d) in deltas.enumerate() {
        let calling = d["metric"] == "apiserver_admission_webhook_rejection_count"
            && d["labels"]["error_type"] == "calling_webhook_error"
            && d["delta"].as_f64().is_some_and(|x| x > 0.0);
        if let Some(hook) = d["labels"]["name"].as_str().filter(|_| calling) {
            let (path, delta) = (format!("facts.{key}.deltas[{i}]"), &d["delta"]);
            let shows =
                format!("calling_webhook_error rejections of webhook {hook:?} went up by {delta}");
            let ignore = "a failed call is no rejection";
            failed.push((path, hook.to_owned(), shows, ignore));
        }
    }
    for (path, hook, shows, ignore) in failed {
        let ignored = |r: &&RegistrationRead| r.hooks.get(&hook).is_some_and(|p| p == "Ignore");
        let witness = reads.iter().find(ignored).map(|r| r.witness.as_str());
        let sub = format!("{} {path}", ev_name(g.act));
        g.check(witness.is_none(), CallFailureUnderIgnore, sub, || {
            let witness = witness.unwrap_or_default();
            format!(
                "{shows}; {witness} registers it with failurePolicy Ignore, under which {ignore}"
            )
        });
    }
}

/// One read of a Lease: when, where, and what it showed.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRead {
    act: u8,
    at: Time,
    witness: String,
    lease: String,
    holder: Option<String>,
    acquire: Option<Time>,
    renew: Option<Time>,
    transitions: Option<u64>,
}

/// `leaseTransitions` as a read shows it: the value, or 0 when a held Lease leaves it out (the
/// field is optional in `LeaseSpec`; client-go's leader election always writes it, so an absent
/// count on a held Lease can only be the count of a first tenure, 0).
fn transitions_of(count: Option<u64>, holder: Option<&str>) -> Option<u64> {
    count.or_else(|| holder.filter(|h| !h.is_empty()).map(|_| 0))
}

/// Every Lease read of the acts up to `g.act`: facts objects with `holder` and
/// `lease_transitions` (named by `name`, else the lab's Lease `kyverno`) read at their own `at`
/// (outside the audit and metrics records), and raw `Lease` objects read at the nearest `at`
/// around them.
fn lease_reads(g: &G) -> Vec<LeaseRead> {
    let mut out = Vec::new();
    for (act, doc) in read_evidence(g.input, ..=g.act) {
        let file = ev_name(*act);
        for_each_read(&doc.value, true, &mut |path, k, v, at, _| {
            let raw = !path.starts_with("facts");
            let (spec, lease, at) = if raw {
                let lease = v["metadata"]["name"].as_str().unwrap_or("");
                (&v["spec"], lease, at.filter(|_| v["kind"] == "Lease"))
            } else if k.is_some_and(super::is_witness_record) {
                return false;
            } else {
                let read = v.get("holder").is_some() && v.get("lease_transitions").is_some();
                let lease = v["name"].as_str();
                let lease = lease.unwrap_or(crate::rules::common::KYVERNO_NAMESPACE);
                (v, lease, time_of(v, "at").filter(|_| read))
            };
            let Some(at) = at else {
                return true;
            };
            // The raw `spec`'s field, else the facts copy's.
            let field = |raw_key, facts_key| &spec[if raw { raw_key } else { facts_key }];
            let holder = field("holderIdentity", "holder").as_str();
            let time = |r, f| field(r, f).as_str().and_then(parse_rfc3339);
            let count = field("leaseTransitions", "lease_transitions").as_u64();
            out.push(LeaseRead {
                act: *act,
                at,
                witness: format!("{file} {path}"),
                lease: lease.to_owned(),
                holder: holder.map(str::to_owned),
                acquire: time("acquireTime", "acquire_time"),
                renew: time("renewTime", "renew_time"),
                transitions: transitions_of(count, holder),
            });
            false
        });
    }
    out
}

fn time_of(v: &Value, key: &str) -> Option<Time> {
    v.get(key).and_then(Value::as_str).and_then(parse_rfc3339)
}

/// Visits every value under each raw record's `data` of the evidence document `doc` (path
/// `raw[<i>].data…`), and first under its `facts` when `facts` is set, with its key (`None` for an
/// array's item), the nearest `at` on its way down (its own, else its parents', else the raw
/// record's) and its kind (its own, else the list's it is an item of, less `List`); `visit`
/// returns whether to go below the value.
fn for_each_read<'v>(
    doc: &'v Value,
    facts: bool,
    visit: &mut impl FnMut(&str, Option<&str>, &'v Value, Option<Time>, Option<&str>) -> bool,
) {
    let facts = facts.then(|| ("facts".to_owned(), &doc["facts"], (None, None)));
    let raw = doc["raw"].as_array().into_iter().flatten().enumerate();
    let raw = raw.map(|(i, r)| {
        (
            format!("raw[{i}].data"),
            &r["data"],
            (time_of(r, "at"), None),
        )
    });
    for (mut path, data, c) in facts.into_iter().chain(raw) {
        walk(data, &mut path, None, c, &mut |p, k, v, (at, items)| {
            let (at, own) = (time_of(v, "at").or(at), v["kind"].as_str());
            let kind = own.or(items.filter(|_| matches!(k, None | Some("items"))));
            let items = if v.is_array() {
                kind
            } else {
                own.and_then(|k| k.strip_suffix("List"))
            };
            visit(p, k, v, at, kind).then_some((at, items))
        });
    }
}

/// What two reads of one Lease contradict, `a` read no later than `b` (by more than the
/// granularity [`bounds::LEASE_STORE_MS`]), or `None`.
fn tenure_contradiction(a: &LeaseRead, b: &LeaseRead) -> Option<String> {
    let slack = chrono::Duration::milliseconds(bounds::LEASE_STORE_MS);
    let (ta, tb) = (a.transitions?, b.transitions?);
    if a.at + slack < b.at && tb < ta {
        return Some(format!(
            "leaseTransitions fell from {ta} to {tb}; it never decreases"
        ));
    }
    let held = |r: &LeaseRead| r.holder.as_deref().is_some_and(|h| !h.is_empty());
    if ta == tb && held(a) && held(b) {
        let (x, y) = (&a.holder, &b.holder);
        if x != y {
            return Some(format!(
                "one tenure (leaseTransitions {ta}) with two holders, {x:?} and {y:?}"
            ));
        }
        if let (Some(x), Some(y)) = (a.acquire, b.acquire)
            && x != y
        {
            return Some(format!(
                "one tenure (leaseTransitions {ta}) acquired at two times, {x:?} and {y:?}"
            ));
        }
        // A renewal only moves renewTime forward within one tenure.
        if let (Some(x), Some(y)) = (a.renew, b.renew)
            && a.at + slack < b.at
            && y < x
        {
            return Some(format!(
                "one tenure (leaseTransitions {ta}) renewed at {x:?}, then read later renewed at {y:?}; a renewal only moves renewTime forward"
            ));
        }
    }
    // A tenure shown by one read was stamped at its acquireTime: every read after that shows it
    // or a later one.
    for (early, late, t_early, t_late) in [(a, b, ta, tb), (b, a, tb, ta)] {
        if let Some(acq) = late.acquire
            && acq + slack < early.at
            && t_early < t_late
        {
            let who = |r: &LeaseRead| r.holder.clone().unwrap_or_else(|| "none".into());
            let (at, acq) = (early.at.to_rfc3339(), acq.to_rfc3339());
            let (holder, other) = (who(early), who(late));
            return Some(format!(
                "read at {at} shows leaseTransitions {t_early} (holder {holder}), though the tenure of {other} (leaseTransitions {t_late}) was acquired at {acq} and leaseTransitions never falls"
            ));
        }
    }
    None
}

/// Every Lease read of this act tells one story with every other read of the Lease, this act's
/// and the earlier acts' (each pair of this act's reads once):
/// - [`tenure_contradiction`]: a tenure (holder, acquireTime) is the same in every read that shows
///   it; `leaseTransitions` never falls; a takeover shows in every read made after it, the samples
///   inside a freeze as much as the read after it and the later acts;
/// - a read shows only what was written before it: its `acquireTime` and `renewTime` (stamped by
///   the holder, on the lab's one node: one clock) lie no later than its `at`
///   ([`bounds::CLOCK_SKEW_MS`] of slack);
/// - a tenure read before and after a read holds at that read too: the holder keeps the Lease
///   until another takes it (a new `acquireTime`, `leaseTransitions` + 1) or releases it
///   (client-go then stamps a new tenure, even for the same holder), so a read made between two
///   reads of one tenure ([`bounds::LEASE_STORE_MS`] apart from each) shows its holder;
/// - a frozen process writes nothing: no read shows the frozen pod (`target_pod`; lab B's one
///   replica, act 4's `pod_name`) renewing inside its freeze (`freeze.frozen_at` .. `resumed_at`),
///   a `renewTime` later than [`bounds::LEASE_STORE_MS`] after the SIGSTOP and before the SIGCONT.
///
/// Each holds apart (one check each); flags [`Code::LeaseTenureContradicted`] on this act's read,
/// naming the other reads or the freeze.
pub(crate) fn lease_tenure_is_one_story(g: &mut G, ev: &Evidence, reads: &[LeaseRead]) {
    let slack = chrono::Duration::milliseconds(bounds::LEASE_STORE_MS);
    let skew = chrono::Duration::milliseconds(bounds::CLOCK_SKEW_MS as i64);
    let (spans, freeze, this) = (tenure_spans(reads), frozen_pod(g, ev), g.act);
    for b in reads.iter().filter(|r| r.act == this) {
        let check = |g: &mut G, why: Option<String>| {
            let sub = b.witness.clone();
            g.check(why.is_none(), LeaseTenureContradicted, sub, || {
                why.clone().unwrap_or_default()
            })
        };
        let other = |a: &&LeaseRead| {
            a.lease == b.lease && a.witness != b.witness && (a.act != this || a.witness < b.witness)
        };
        for a in reads.iter().filter(other) {
            let why = tenure_contradiction(a, b).or_else(|| tenure_contradiction(b, a));
            check(g, why.map(|why| format!("against {}: {why}", a.witness)));
        }
        let stamps = [("acquireTime", b.acquire), ("renewTime", b.renew)];
        let late = stamps.into_iter().find_map(|(field, t)| {
            let (t, at) = (t.filter(|t| *t > b.at + skew)?, b.at.to_rfc3339());
            Some(format!("{field} {} is later than the read itself ({at}): a read shows only what was written before it", t.to_rfc3339()))
        });
        check(g, late);
        let inside = spans.iter().find(|((lease, holder, _, _), [first, last])| {
            *lease == b.lease
                && b.holder.as_deref() != Some(*holder)
                && first.at + slack < b.at
                && b.at + slack < last.at
        });
        check(g, inside.map(|((_, holder, _, t), [first, last])| {
            let shown = b.holder.as_deref().unwrap_or("none");
            format!("read at {} shows holder {shown:?}, though {} and {} show the tenure of {holder} (leaseTransitions {t}) before and after it", b.at.to_rfc3339(), first.witness, last.witness)
        }));
        let held = freeze
            .as_ref()
            .filter(|f| b.holder.as_deref() == Some(f.0.as_str()));
        if let Some((pod, frozen, resumed)) = held {
            let t = b.renew.filter(|t| *t > *frozen + slack && t < resumed);
            check(g, t.map(|t| format!("the frozen pod {pod} renewed the Lease at {}, inside its freeze ({} facts.freeze: {} .. {}); a stopped process writes nothing", t.to_rfc3339(), ev_name(this), frozen.to_rfc3339(), resumed.to_rfc3339())));
        }
    }
}

/// Each tenure's first and last read: (Lease, holder, acquireTime, `leaseTransitions`) → reads.
type TenureSpans<'r> = BTreeMap<(&'r str, &'r str, Option<Time>, u64), [&'r LeaseRead; 2]>;

fn tenure_spans(reads: &[LeaseRead]) -> TenureSpans<'_> {
    let mut spans = TenureSpans::new();
    for r in reads {
        let (Some(h), Some(t)) = (r.holder.as_deref().filter(|h| !h.is_empty()), r.transitions)
        else {
            continue;
        };
        let span = spans.entry((&r.lease, h, r.acquire, t)).or_insert([r, r]);
        if r.at < span[0].at {
            span[0] = r;
        }
        if r.at > span[1].at {
            span[1] = r;
        }
    }
    spans
}

/// The pod the act froze and its freeze: (`target_pod`, else act 4's `pod_name`; `frozen_at`,
/// `resumed_at`), or `None` when the act froze nothing.
fn frozen_pod(g: &G, ev: &Evidence) -> Option<(String, Time, Time)> {
    let freeze = &ev.facts["freeze"];
    let at = |k| time_of(freeze, k);
    let (frozen, resumed) = (at("frozen_at")?, at("resumed_at")?);
    let act4 = read_evidence(g.input, 4..=4).next();
    let act4 = act4.and_then(|(_, d)| d.value["facts"]["pod_name"].as_str());
    let pod = ev.facts["target_pod"].as_str().or(act4)?;
    Some((pod.to_owned(), frozen, resumed))
}

/// One `resourceVersion` is one stored state of an object: the API server gives every write a
/// new one, so two reads of an object (its kind and UID) at the same `resourceVersion` show the
/// same object, whatever else the versions mean (Kubernetes API conventions: opaque, compared
/// only for equality). Held over the raw records of this act against this act's and the earlier
/// acts' (every object with its kind, else its list's less `List`, its UID and version; its
/// content without `apiVersion`, `kind` and `metadata.managedFields`, canonical JSON). Flags
/// [`Code::RawMismatch`] on this act's read, naming the other.
pub(crate) fn one_resource_version_one_object(g: &mut G) {
    let mut objects = Vec::new();
    for (act, doc) in read_evidence(g.input, ..=g.act) {
        let file = ev_name(*act);
        for_each_read(&doc.value, false, &mut |path, _, v, _, kind| {
            let text = |p: &str| v.pointer(p).and_then(Value::as_str);
            let (uid, rv) = (text("/metadata/uid"), text("/metadata/resourceVersion"));
            if let (Some(uid), Some(rv), Some(k)) = (uid, rv, kind) {
                let mut content = v.clone();
                if let Some(c) = content.as_object_mut() {
                    c.remove("apiVersion");
                    c.remove("kind");
                }
                if let Some(m) = content.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("managedFields");
                }
                let key = (k.to_owned(), uid.to_owned(), rv.to_owned());
                objects.push((key, content.to_string(), *act, format!("{file} {path}")));
            }
            true
        });
    }
    let mut first: BTreeMap<&(String, String, String), (&str, &str)> = BTreeMap::new();
    for (key, content, act, witness) in &objects {
        match first.get(key).copied() {
            Some((seen, other)) if *act == g.act => {
                g.check(seen == content.as_str(), RawMismatch, witness.clone(), || {
                    let (kind, uid, rv) = key;
                    format!("{kind} {uid} at resourceVersion {rv} differs from {other}, read at the same resourceVersion: one resourceVersion is one stored state of an object")
                });
            }
            Some(_) => {}
            None => {
                first.insert(key, (content, witness));
            }
        }
    }
}

/// The act started no sooner than the acts before it finished (each act is run after the
/// other). Flags [`Code::TimesInconsistent`] on `started_at`, naming the earlier act.
pub(crate) fn acts_follow_each_other(g: &mut G, ev: &Evidence) {
    let Some(start) = parse_rfc3339(&ev.started_at) else {
        return;
    };
    let skew = chrono::Duration::milliseconds(bounds::CLOCK_SKEW_MS as i64);
    for (act, doc) in read_evidence(g.input, ..g.act) {
        let ok = time_of(&doc.value, "finished_at").is_none_or(|f| f <= start + skew);
        let sub = format!("{} started_at", ev_name(g.act));
        g.check(ok, TimesInconsistent, sub, || {
            let (started, finished) = (&ev.started_at, &doc.value["finished_at"]);
            let earlier = ev_name(*act);
            format!("{started:?} is before {earlier} finished_at {finished:?}")
        });
    }
}

/// The replicas' admission request counters (`kyverno_admission_requests_total`, one row per
/// replica read before and after the act's requests, `facts.replica_requests`) account for the
/// act's calls of the webhook: with the lab's namespaceSelector only the target namespace's pods
/// call it. Every answered call (an explicit deny; a pod stored there in under one second, the
/// least `timeoutSeconds`) was counted by the replica that answered it; a call that timed out or
/// failed open may be counted by the frozen replica after its resume, or not. So, with no
/// counter reset, answered ≤ Σ(after − before) ≤ all calls; a counter that fell (its container
/// restarted, [`crate::grade::c`]'s restart rules) loses what it counted before, so only
/// Σ ≤ all calls holds (the restarted replica's `after` counted since its restart).
///
/// The lower bound holds only for the calls answered between the reads: a request sent after the
/// last `replica-metrics-before:<pod>` raw read and answered before the first
/// `replica-metrics-after:<pod>` one (lab C's act 6 sends its healthy deny before the counters
/// are read; it is in the act's records, not in the counters' difference). Evidence without those
/// raw reads holds only the upper bound. Flags [`Code::ValueMismatch`] on `replica_requests`,
/// naming the requests.
pub(crate) fn replica_counters_account_for_the_calls(g: &mut G, ev: &Evidence) {
    let Some(rows) = ev.facts.get("replica_requests").and_then(Value::as_array) else {
        return;
    };
    // The pod the act froze (`facts.target_pod`), whose counter alone may reset with a restart.
    let frozen_pod = ev.facts["target_pod"].as_str();
    let (mut moved, mut reset, mut kept, mut other_reset) = (0u64, false, 0u64, false);
    for r in rows {
        let (Some(b), Some(a)) = (r["before"].as_u64(), r["after"].as_u64()) else {
            return; // the shape is the act's own rules' (facts-invalid)
        };
        let other = r["pod"].as_str() != frozen_pod;
        (reset, other_reset) = (reset || a < b, other_reset || (other && a < b));
        moved += if a < b { a } else { a - b };
        kept += if other && a >= b { a - b } else { 0 };
    }
    let window = counters_window(ev);
    let (mut answered, mut calls) = (0u64, 0u64);
    for r in target_calls(ev) {
        if answered_call(&r) {
            answered += u64::from(window.is_some_and(|(from, to)| within(&r, from, to)));
            calls += 1;
        } else if matches!(r.outcome, Outcome::Stored | Outcome::WebhookTimeout) {
            calls += 1;
        }
    }
    // A frozen process answers nothing: the calls answered inside the freeze
    // (`facts.freeze.frozen_at`..`resumed_at`) and the counters' window were answered, and
    // counted, by the other replicas, whether or not the frozen one's counter reset with a
    // restart; unless one of the others reset too.
    let freeze = (
        time_of(&ev.facts["freeze"], "frozen_at"),
        time_of(&ev.facts["freeze"], "resumed_at"),
    );
    let during = match (frozen_pod, freeze, window) {
        (Some(_), (Some(frozen), Some(resumed)), Some((from, to))) if !other_reset => {
            let inside = |r: &RequestRecord| within(r, from.max(frozen), to.min(resumed));
            let calls = target_calls(ev).into_iter();
            let answered = calls.filter(|r| answered_call(r) && inside(r));
            Some((answered.count() as u64, kept))
        }
        _ => None,
    };
    let ok = moved <= calls
        && (reset || answered <= moved)
        && during.is_none_or(|(answered, kept)| answered <= kept);
    let sub = format!("{} facts.replica_requests", ev_name(g.act));
    g.check(ok, ValueMismatch, sub, || {
        let (reset, ns) = (if reset { " (a counter was reset)" } else { "" }, crate::rules::common::TARGET_NAMESPACE);
        let frozen = during.map_or(String::new(), |(n, kept)| format!("; {n} calls were answered while the frozen replica was frozen, and the other replicas' counters moved by {kept}"));
        format!("the replicas' counters moved by {moved}{reset}; the act's request records in {ns} show {answered} calls of the webhook answered between the counters' reads and {calls} calls in all{frozen}")
    });
}

/// The span in which the replicas' counters saw every answered call: from the last
/// `replica-metrics-before:<pod>` raw read to the first `replica-metrics-after:<pod>` one
/// (their `at`, when the tool received each read). `None` when either kind of read is missing.
fn counters_window(ev: &Evidence) -> Option<(Time, Time)> {
    let reads = |prefix: &str| -> Vec<Time> {
        let of_kind = |r: &&Value| r["what"].as_str().is_some_and(|w| w.starts_with(prefix));
        let of_kind = ev.raw.iter().filter(of_kind);
        of_kind.filter_map(|r| time_of(r, "at")).collect()
    };
    let from = reads("replica-metrics-before:").into_iter().max()?;
    let to = reads("replica-metrics-after:").into_iter().min()?;
    Some((from, to))
}

/// The act's requests that may call the webhook, each once (a request quoted twice, as
/// `first_explicit_deny`, counted at its first record): real creates in the target namespace.
fn target_calls(ev: &Evidence) -> Vec<RequestRecord> {
    let mut names = std::collections::BTreeSet::new();
    let first = requests(ev).into_iter().map(|(_, r)| r);
    let first = first.filter(|r| names.insert(r.name.clone()));
    let target = |r: &RequestRecord| r.namespace == crate::rules::common::TARGET_NAMESPACE;
    first.filter(|r| target(r) && !r.dry_run).collect()
}

/// Whether the call was answered by a replica: an explicit deny, or a pod stored in under 1 s.
fn answered_call(r: &RequestRecord) -> bool {
    r.outcome == Outcome::ExplicitDeny || (r.outcome == Outcome::Stored && r.elapsed_ms < 1000)
}

/// Whether `r` was sent no sooner than `from` and answered no later than `to`.
fn within(r: &RequestRecord, from: Time, to: Time) -> bool {
    parse_rfc3339(&r.sent_at).is_some_and(|t| t >= from)
        && parse_rfc3339(&r.answered_at).is_some_and(|t| t <= to)
}

/// Every read of a replica's admission request counter in the acts up to `g.act`:
/// `(pod, when, value, witness)`, in the order they were read. A read is timed by its raw
/// `replica-metrics-before:<pod>` / `replica-metrics-after:<pod>` record, else by its act's end.
fn counter_reads(g: &G) -> Vec<(String, Time, u64, String)> {
    let mut out = Vec::new();
    for (_, file, v, end) in ended_evidence(g) {
        let raw_at = |what: String| {
            let raw = v["raw"].as_array().into_iter().flatten();
            let mut raw = raw.filter(|r| r["what"] == what.as_str());
            raw.find_map(|r| time_of(r, "at"))
        };
        let rows = v["facts"]["replica_requests"].as_array();
        for (i, r) in rows.into_iter().flatten().enumerate() {
            let Some(pod) = r["pod"].as_str() else {
                continue;
            };
            for when in ["before", "after"] {
                if let Some(value) = r[when].as_u64() {
                    let at = raw_at(format!("replica-metrics-{when}:{pod}")).unwrap_or(end);
                    let witness = format!("{file} facts.replica_requests[{i}].{when}");
                    out.push((pod.to_owned(), at, value, witness));
                }
            }
        }
    }
    out.sort_by_key(|r| r.1);
    out
}

/// Whether the lab's reads show the container of the pod named `pod` restarted after `from` and
/// no later than `to` ([`lab_restart_reads`]): a count read in that span higher than every count
/// read of it up to `from`, or the name read with two pod UIDs (a new pod, a new process).
fn restarted_between(reads: &[RestartRead], pod: &str, from: Time, to: Time) -> bool {
    let of_pod = || reads.iter().filter(|r| r.5.as_deref() == Some(pod));
    let uids: std::collections::BTreeSet<&str> = of_pod().map(|r| r.2.as_str()).collect();
    let before = of_pod().filter(|r| r.1 <= from).map(|r| r.3).max();
    let base = before.or_else(|| of_pod().filter(|r| r.1 <= to).map(|r| r.3).min());
    let rose = of_pod().any(|r| r.1 > from && r.1 <= to && base.is_some_and(|b| r.3 > b));
    uids.len() > 1 || rose
}

/// A replica's admission request counter (a Prometheus counter, kept in the process) falls only
/// when its container restarted: each read of it, in this act and across the acts, is no lower
/// than the read before it unless the reads between the two show that pod's container restarted
/// ([`restarted_between`]). Flags [`Code::ValueMismatch`] on this act's read, naming the earlier
/// one.
pub(crate) fn replica_counter_falls_only_with_a_restart(g: &mut G, restarts: &[RestartRead]) {
    let reads = counter_reads(g);
    let this = ev_name(g.act);
    let mut last: BTreeMap<&str, (Time, u64, &str)> = BTreeMap::new();
    for (pod, at, v, witness) in &reads {
        if let Some((from, before, earlier)) = last.get(pod.as_str()).copied()
            && witness.starts_with(&this)
        {
            let ok = *v >= before || restarted_between(restarts, pod, from, *at);
            g.check(ok, ValueMismatch, witness.clone(), || {
                format!("replica {pod}'s admission request counter fell from {before} ({earlier}) to {v}, though no read between them shows its container restarted; a counter falls only with a restart")
            });
        }
        last.insert(pod, (*at, *v, witness));
    }
}

/// One observation of a pod's restart count: `(act, when, pod UID, count, witness, pod name
/// when the observation names it)`.
type RestartRead = (u8, Time, String, u64, String, Option<String>);

/// The restart count an act recorded of a pod in `v` (at `path` of `file`, read at `at`, else at
/// the act's end `act.1`), if it is one: a pod observation (`uid`, `restart_count`), a process
/// found through CRI (`identity.pod_uid`, `restart_count`), and a raw `Pod` object
/// (`metadata.uid`, the sum of `status.containerStatuses[].restartCount`, as a pod observation
/// counts).
fn restart_read(
    v: &Value,
    at: Option<Time>,
    act: (u8, Time),
    path: &str,
    file: &str,
    out: &mut Vec<RestartRead>,
) {
    let Some(o) = v.as_object() else { return };
    let text = |p: &str| v.pointer(p).and_then(Value::as_str);
    let pod_object = v["kind"] == "Pod";
    let name = if pod_object {
        text("/metadata/name")
    } else {
        ["/name", "/pod_name", "/pod"].into_iter().find_map(text)
    };
    let found = if pod_object {
        let statuses = v["status"]["containerStatuses"].as_array();
        let sum = statuses.map(|c| c.iter().filter_map(|c| c["restartCount"].as_u64()).sum());
        text("/metadata/uid").zip(sum)
    } else {
        let uid = text("/uid").or_else(|| text("/identity/pod_uid"));
        uid.zip(o.get("restart_count").and_then(Value::as_u64))
    };
    let mut push = |uid: &str, count, when: Option<Time>, witness| {
        let (when, name) = (when.unwrap_or(act.1), name.map(str::to_owned));
        out.push((act.0, when, uid.to_owned(), count, witness, name));
    };
    if let Some((uid, count)) = found {
        push(uid, count, at, format!("{file} {path}"));
    }
    // A freeze's counts on either side of it: lab B's (the frozen process's pod,
    // `freeze.identity.pod_uid`), lab C's frozen replica after it (`target_after`; its count
    // before is act 4's process, read there).
    let frozen = "/freeze/identity/pod_uid";
    let sides = [
        (frozen, "restart_count_before", "/freeze/frozen_at"),
        (frozen, "restart_count_after", "/freeze/resumed_at"),
        ("/pod_uid_after", "restart_count_after", "/settled_at"),
    ];
    for (uid, key, when) in sides {
        if let (Some(uid), Some(count)) = (text(uid), o.get(key).and_then(Value::as_u64)) {
            let at = text(when).and_then(parse_rfc3339);
            push(uid, count, at, format!("{file} {path}.{key}"));
        }
    }
}

/// A pod's restart count never falls: every observation of one pod UID ([`restart_read`]: pod
/// observations, processes found through CRI, raw `Pod` objects, in facts and raw alike) shows a
/// count no lower than the observations made before it, in this act and the earlier ones. Flags
/// [`Code::ValueMismatch`] on this act's observation, naming the earlier one.
pub(crate) fn restart_count_never_falls_for_one_pod(g: &mut G, reads: &[RestartRead]) {
    let this = g.act;
    let mut most: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    for (act, _, uid, count, witness, _) in reads {
        if let Some((m, earlier)) = most.get(uid.as_str()).copied()
            && *act == this
        {
            g.check(*count >= m, ValueMismatch, witness.clone(), || {
                format!("pod {uid}'s restart count is {count}, though {earlier} read it as {m} before; a restart count never falls")
            });
        }
        if most.get(uid.as_str()).is_none_or(|(m, _)| count >= m) {
            most.insert(uid, (*count, witness));
        }
    }
}

/// Every restart count read in the acts up to `g.act` ([`restart_read`], facts and raw, outside
/// the audit and metrics records; each timed by its own `at`, else its raw record's, else the
/// act's end), in the order they were read.
fn lab_restart_reads(g: &G) -> Vec<RestartRead> {
    let mut reads = Vec::new();
    for (act, file, v, end) in ended_evidence(g) {
        for_each_read(v, true, &mut |path, k, x, at, _| {
            let ok = !k.is_some_and(super::is_witness_record);
            if ok {
                restart_read(x, at, (act, end), path, &file, &mut reads);
            }
            ok
        });
    }
    reads.sort_by_key(|r| (r.0, r.1));
    reads
}

/// The evidence documents of the acts up to `g.act` that could be read and are timed, in act
/// order: (act, file name, document, its end: `finished_at`, else `started_at`).
fn ended_evidence<'g>(g: &G<'g>) -> impl Iterator<Item = (u8, String, &'g Value, Time)> {
    read_evidence(g.input, ..=g.act).filter_map(|(act, doc)| {
        let v = &doc.value;
        let end = time_of(v, "finished_at").or_else(|| time_of(v, "started_at"))?;
        Some((*act, ev_name(*act), v, end))
    })
}
