//! The mutation test (issue 24): "every observation is held" as a property, not a list.
//!
//! For each recorded real run (`fixtures/recorded/*`) and each generated passing fixture
//! (`fixtures/{a,b}/pass`), every leaf of every act's `facts` gets the mutation operators below,
//! one mutant at a time; the act's own grader (never act 8 of the same run, whose digest check
//! would flag any change: the cascade) must flag each mutant unless its path matches an entry of
//! the one allowlist, [`lab::grade::unheld::UNHELD`], which says for each why the field cannot
//! contradict anything. The test prints the kill rate per lab and act and fails on any survivor
//! outside the allowlist, and on an allowlist entry no survivor needs (a stale promise).
//!
//! Operators: a number scaled ×10 (a `*_ms` duration by at least 5000) and shifted (+1; +5000 for a `*_ms` duration, beyond every
//! tolerance of [`lab::grade::bounds`]); a string swapped for a sibling value (another value of
//! the same key anywhere in the run's facts; the string with `-x` appended when it has none) or
//! emptied; a timestamp moved 40 s; a boolean flipped; a `null` filled with a sibling value; a
//! list item dropped. Sampling is deterministic: of the mutants with the same normalized path
//! (array indices written `[]`) and operator the first is graded, so every path is mutated at
//! least once; of the leaves under one allowlist entry only the first is mutated.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::recorded::Recording;
use lab::evidence::Lab;
use lab::grade::{self, EvidenceDoc, GradeInput, unheld};
use lab::messages::Lang;
use lab::workdir::Workdir;
use serde_json::Value;

/// One run the mutants are made from.
struct Subject {
    name: String,
    lab: Lab,
    acts: Vec<u8>,
    input: GradeInput,
}

fn subjects() -> Vec<Subject> {
    let mut out: Vec<Subject> = Recording::all()
        .into_iter()
        .map(|r| Subject {
            name: r.name(),
            lab: r.lab,
            acts: r.acts.clone(),
            input: r.grade_input(),
        })
        .collect();
    for lab in [Lab::A, Lab::B] {
        let dir = common::fixtures_dir().join(lab.as_str()).join("pass");
        out.push(Subject {
            name: format!("fixtures/{lab}/pass"),
            lab,
            acts: lab::acts::numbers(lab).collect(),
            input: GradeInput::load(&Workdir::new(&dir), lab),
        });
    }
    out
}

/// One change of one leaf (or one list item) of an act's evidence.
#[derive(Debug, Clone)]
struct Mutant {
    /// JSON pointer of the changed value inside the evidence document.
    pointer: String,
    /// The path with array indices written `[]` (what the allowlist matches).
    path: String,
    /// The operator's name.
    op: &'static str,
    /// The new value; `None` drops the list item the pointer names.
    value: Option<Value>,
}

fn key_of(pointer: &str) -> &str {
    pointer
        .rsplit('/')
        .find(|s| s.parse::<usize>().is_err())
        .unwrap_or("")
}

fn is_timestamp(s: &str) -> bool {
    s.len() >= 20 && s.as_bytes()[4] == b'-' && lab::facts::parse_rfc3339(s).is_some()
}

/// Every string value by key name, across the run's facts (the pool of sibling values).
fn siblings(input: &GradeInput) -> BTreeMap<String, BTreeSet<String>> {
    fn walk(v: &Value, key: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| walk(x, k, out)),
            Value::Array(a) => a.iter().for_each(|x| walk(x, key, out)),
            Value::String(s) => {
                out.entry(key.to_owned()).or_default().insert(s.clone());
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for doc in input.evidence.values().flatten() {
        walk(&doc.value["facts"], "", &mut out);
    }
    out
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// Every mutant of `v` (the value at `pointer`/`path`).
fn mutants(
    v: &Value,
    pointer: &str,
    path: &str,
    pool: &BTreeMap<String, BTreeSet<String>>,
    out: &mut Vec<Mutant>,
) {
    let mut push = |op: &'static str, value: Option<Value>| {
        if value.as_ref() != Some(v) {
            out.push(Mutant {
                pointer: pointer.to_owned(),
                path: path.to_owned(),
                op,
                value,
            })
        }
    };
    let key = key_of(pointer);
    let sibling = |cur: Option<&str>| -> Option<String> {
        pool.get(key)
            .and_then(|s| s.iter().find(|x| Some(x.as_str()) != cur).cloned())
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                mutants(
                    x,
                    &format!("{pointer}/{}", escape(k)),
                    &format!("{path}.{k}"),
                    pool,
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                out.push(Mutant {
                    pointer: format!("{pointer}/{i}"),
                    path: format!("{path}[]"),
                    op: "list-item-dropped",
                    value: None,
                });
                mutants(
                    x,
                    &format!("{pointer}/{i}"),
                    &format!("{path}[]"),
                    pool,
                    out,
                );
            }
        }
        Value::Bool(b) => push("boolean-flipped", Some(Value::Bool(!b))),
        Value::Number(n) => {
            let shift = if key.ends_with("_ms") { 5000 } else { 1 };
            if let Some(i) = n.as_u64() {
                if i != 0 {
                    // A duration scaled beyond every tolerance (a 2 ms answer ×10 is still
                    // within the clock granularity of its timestamps).
                    let scaled = if key.ends_with("_ms") {
                        (i * 10).max(i + shift)
                    } else {
                        i * 10
                    };
                    push("number-scaled", Some(Value::from(scaled)));
                }
                push("number-shifted", Some(Value::from(i + shift)));
            } else if let Some(f) = n.as_f64() {
                if f != 0.0 {
                    push("number-scaled", Some(Value::from(f * 10.0)));
                }
                push("number-shifted", Some(Value::from(f + shift as f64)));
            }
        }
        Value::String(s) => {
            if is_timestamp(s) {
                let t = lab::facts::parse_rfc3339(s).unwrap() + chrono::Duration::seconds(40);
                push(
                    "timestamp-moved-40s",
                    Some(Value::from(lab::facts::format_rfc3339(t))),
                );
            }
            let other = sibling(Some(s)).unwrap_or_else(|| format!("{s}-x"));
            push("string-swapped", Some(Value::from(other)));
            if !s.is_empty() {
                push("string-emptied", Some(Value::from("")));
            }
        }
        Value::Null => {
            if let Some(x) = sibling(None) {
                push("null-filled", Some(Value::from(x)));
            }
        }
    }
}

/// The deterministic sample: of the mutants with the same path and operator, the first; of the
/// mutants under one allowlist entry, only the first (the rest are unheld by promise: one
/// shows the entry is needed).
fn sample(all: Vec<Mutant>) -> Vec<Mutant> {
    let mut seen: BTreeSet<(String, &'static str)> = BTreeSet::new();
    let mut entries: BTreeSet<&'static str> = BTreeSet::new();
    let mut out = Vec::new();
    for m in all {
        if let Some(u) = unheld::unheld(&m.path) {
            if entries.insert(u.path) {
                out.push(m);
            }
        } else if seen.insert((m.path.clone(), m.op)) {
            out.push(m);
        }
    }
    out
}

fn apply(doc: &Value, m: &Mutant) -> Value {
    let mut doc = doc.clone();
    match &m.value {
        Some(v) => *doc.pointer_mut(&m.pointer).unwrap() = v.clone(),
        None => {
            let (parent, idx) = m.pointer.rsplit_once('/').unwrap();
            let i: usize = idx.parse().unwrap();
            doc.pointer_mut(parent)
                .unwrap()
                .as_array_mut()
                .unwrap()
                .remove(i);
        }
    }
    doc
}

#[derive(Default, Clone)]
struct Tally {
    total: usize,
    killed: usize,
    allowed: usize,
    open: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.total += o.total;
        self.killed += o.killed;
        self.allowed += o.allowed;
        self.open += o.open;
    }
}

/// Survivor families the graders do not hold YET: not a promise like [`unheld::UNHELD`], but
/// the measured gap of issue 24 (open), listed so the test states it instead of hiding it. It
/// may only shrink: an entry no survivor needs fails the test.
const NOT_YET_HELD: &[&str] = &[
    // act 1: the controller Deployment, node name and lab mark have no second observation in act 1.
    "controller_deployment.name",
    "controller_deployment.namespace",
    "controller_deployment.uid",
    "lab_mark",
    "node.name",
    // act 2/6/7: the registration's own fields beyond scope, failurePolicy and timeout (Kyverno's documented service, path, names) are not yet held against Kyverno's registration shape.
    "webhook.configuration",
    "webhook.configuration_uid",
    "webhook.match_policy",
    "webhook.name",
    "webhook.namespace_selector.matchExpressions[]",
    "webhook.namespace_selector.matchExpressions[].key",
    "webhook.namespace_selector.matchExpressions[].operator",
    "webhook.namespace_selector.matchExpressions[].values[]",
    "webhook.rules[].apiGroups[]",
    "webhook.rules[].apiVersions[]",
    "webhook.rules[].resources[]",
    "webhook.service.name",
    "webhook.service.namespace",
    "webhook.service.path",
    "webhook.service.port",
    // act 2: the stored policy's uid is only checked for shape in act 2; a defaulted spec field is not in the input.
    "policy.at",
    "policy.metadata.uid",
    "policy.spec.evaluation.admission.enabled",
    // act 4 (both labs): the process, pod, Deployment and Lease details have no second observation inside act 4.
    "admitted_during_scale_down.restart_count",
    "container_name",
    "deployment.ready_replicas",
    "existing.restart_count",
    "identity.container_id",
    "identity.pid",
    "identity.pid_start_time_ticks",
    "lease.acquire_time",
    "lease.lease_duration_seconds",
    "lease.lease_transitions",
    "lease.name",
    "lease.renew_time",
    "new_pod.restart_count",
    "pod_name",
    "pods[].phase",
    "pods[].restart_count",
    "pods[].uid",
    "process_state",
    "restart_count",
    // lab A act 6: the scale-down pod, the new pod's details, the previous holder and the steps' last_seen text.
    "admitted_during_scale_down.exists",
    "admitted_during_scale_down.name",
    "admitted_during_scale_down.namespace",
    "admitted_during_scale_down.phase",
    "admitted_during_scale_down.uid",
    "deny_probes[]",
    "deny_probes[].raw_response.details.causes[]",
    "deny_probes[].raw_response.metadata.uid",
    "first_explicit_deny.last_seen",
    "lease_acquired.last_seen",
    "new_pod.namespace",
    "new_pod.phase",
    "new_pod.uid",
    "pod_created.last_seen",
    "pod_running.last_seen",
    "previous_lease_holder",
    "replicas_restored.waited_ms",
    "webhook_registered.last_seen",
    // requests: a refusal's details.causes beyond InternalError, a GET's phase, a name with no audit entry.
    "after_resume[].raw_response.details.causes[]",
    "bad.name",
    "bad.sent_at",
    "control.get.phase",
    "good.get.at",
    "good.get.phase",
    "good.raw_response.metadata.uid",
    "healthy_bad.name",
    "target_bad.get.phase",
    "target_bad.name",
    "target_bad.raw_response.details.causes[]",
    "target_good.get.phase",
    "target_good.labels.environment",
    "target_good.name",
    "target_good.raw_response.details.causes[]",
    // act 3/5: the existing pod's namespace, time and restart count in act 3 itself.
    "existing.at",
    // the metrics lines' HELP/TYPE text and the audit window's exact ends.
    "admission_audit.window[]",
    "admission_metrics.after.lines[]",
    "admission_metrics.before.lines[]",
    // act 8: a check dropped from the list.
    "checks[]",
    // lab B act 5/6: the state after resume when it is not T.
    "freeze.state_after",
];

/// What one run's mutants gave.
#[derive(Default)]
struct Outcome {
    rows: Vec<(u8, Tally, String)>,
    survivors: Vec<String>,
    unheld_needed: BTreeSet<&'static str>,
    open_needed: BTreeSet<&'static str>,
}

fn run(mut subject: Subject) -> Outcome {
    let mut out = Outcome::default();
    let pool = siblings(&subject.input);
    for &act in &subject.acts.clone() {
        let before = grade::grade(subject.lab, act, &subject.input);
        assert!(
            before.passed(),
            "{} act {act} must pass unchanged: {}",
            subject.name,
            lab::messages::findings(Lang::En, &before)
        );
        let Some(Ok(original)) = subject.input.evidence.get(&act).cloned() else {
            panic!("{} act {act}: no evidence", subject.name);
        };
        let mut all = Vec::new();
        mutants(&original.value["facts"], "/facts", "facts", &pool, &mut all);
        let mut tally = Tally::default();
        for m in sample(all) {
            let value = apply(&original.value, &m);
            let digest = lab::digest::digest_value(&value);
            subject
                .input
                .evidence
                .insert(act, Ok(EvidenceDoc { value, digest }));
            let f = grade::grade(subject.lab, act, &subject.input);
            tally.total += 1;
            if !f.passed() {
                tally.killed += 1;
            } else if let Some(u) = unheld::unheld(&m.path) {
                tally.allowed += 1;
                out.unheld_needed.insert(u.path);
            } else if let Some(o) = NOT_YET_HELD.iter().find(|o| unheld::matches(o, &m.path)) {
                tally.open += 1;
                out.open_needed.insert(o);
            } else {
                out.survivors.push(format!(
                    "{} act {act} {} {} -> {}",
                    subject.name,
                    m.path,
                    m.op,
                    m.value.as_ref().map_or("(dropped)".into(), |v| {
                        let s = v.to_string();
                        s.chars().take(60).collect::<String>()
                    })
                ));
            }
        }
        subject.input.evidence.insert(act, Ok(original));
        out.rows.push((act, tally, subject.name.clone()));
    }
    out
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

#[test]
fn every_observation_is_held_by_its_acts_grader() {
    let subjects = subjects();
    let labs: Vec<Lab> = subjects.iter().map(|s| s.lab).collect();
    // Two threads (the machine's cores), each a share of the runs.
    let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let (even, odd): (Vec<_>, Vec<_>) = subjects
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        let handles: Vec<_> = [even, odd]
            .into_iter()
            .map(|part| {
                scope.spawn(move || {
                    part.into_iter()
                        .map(|(i, s)| (i, run(s)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, Outcome)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, o)| o).collect()
    });
    let mut per: BTreeMap<String, Tally> = BTreeMap::new();
    let mut survivors = Vec::new();
    let mut unheld_needed = BTreeSet::new();
    let mut open_needed = BTreeSet::new();
    for (lab, o) in labs.iter().zip(&outcomes) {
        for (act, t, name) in &o.rows {
            println!(
                "{name:<28} lab {lab} act {act}: {:>4}/{:<4} killed ({:5.1} %), {} unheld, {} not yet held",
                t.killed,
                t.total,
                pct(t.killed, t.total),
                t.allowed,
                t.open
            );
            per.entry(format!("lab {lab} act {act}"))
                .or_default()
                .add(t);
            per.entry(format!("lab {lab}")).or_default().add(t);
        }
        survivors.extend(o.survivors.iter().cloned());
        unheld_needed.extend(o.unheld_needed.iter().copied());
        open_needed.extend(o.open_needed.iter().copied());
    }
    for (k, t) in &per {
        println!(
            "kill rate {k}: {}/{} = {:.1} %; of the rest {} unheld by the allowlist, {} not yet held",
            t.killed,
            t.total,
            pct(t.killed, t.total),
            t.allowed,
            t.open
        );
    }
    println!(
        "allowlist: {} entries; not yet held: {} entries",
        unheld::UNHELD.len(),
        NOT_YET_HELD.len()
    );
    let stale: Vec<&str> = unheld::UNHELD
        .iter()
        .map(|u| u.path)
        .filter(|p| !unheld_needed.contains(p))
        .chain(
            NOT_YET_HELD
                .iter()
                .copied()
                .filter(|p| !open_needed.contains(p)),
        )
        .collect();
    assert!(
        survivors.is_empty(),
        "{} mutants passed their act's grader outside the allowlist:\n{}",
        survivors.len(),
        survivors.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allowlist or not-yet-held entries no surviving mutant needs (remove them): {stale:?}"
    );
}
