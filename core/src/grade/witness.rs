//! Rules that hold an act's facts against a second observation of the same thing: the act's own
//! raw records (`raw`, what the API server or the container runtime answered, kept verbatim next
//! to the facts derived from it), the objects other acts recorded (one UID names one object), and
//! the shape every observation of a pod has. Each rule is one function named after what it holds.
//!
//! A fact the act derived from a raw record with [`crate::derive`] is held by recomputing it
//! ([`fact_is_derived_from_raw`]: one comparison for every kind, a finding per field that
//! differs, naming the fact's path and the raw field's); the rules here keep only what no
//! derivation holds (the mark's value and node, the CRI container's `attempt` as the pod's
//! restart count, the stored policy's spec, UIDs across acts, a pod observation's own shape).
//!
//! A raw record is `{"at", "what", "data"}` (`ActRecorder::raw`, `lab/src/labs/common.rs`); `what` names the read
//! (`lab-mark`, `webhook-configuration`, `policy-stored`, `deployment`, `pods`, `lease`,
//! `cri-container`, `new-pod`, …). A fact whose raw record is missing is an
//! [`Code::ObservationMissing`] (evidence is raw first: the fact must come with the answer it was
//! derived from).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

#[cfg(doc)]
use super::Code;
use super::{Code::*, G, ev_name, is_uid};
use crate::derive::{self, DeriveError, Source};
use crate::evidence::{Evidence, RequestRecord};
use crate::facts::{self, PodObservation, WebhookFacts};

/// The `data` of the first raw record of `ev` whose `what` is `what`.
pub(crate) fn raw_record<'e>(ev: &'e Evidence, what: &str) -> Option<&'e Value> {
    ev.raw
        .iter()
        .find(|r| r["what"] == what)
        .and_then(|r| r.get("data"))
}

/// [`raw_record`], flagging [`Code::ObservationMissing`] on `subject` when it is absent.
pub(crate) fn required_raw<'e>(
    g: &mut G,
    ev: &'e Evidence,
    what: &str,
    subject: &str,
) -> Option<&'e Value> {
    let r = raw_record(ev, what);
    g.check(r.is_some(), ObservationMissing, subject, || {
        let file = ev_name(ev.act);
        format!("{file} has no raw record {what:?}: the fact must come with the answer it was derived from")
    });
    r
}

/// Where the raw record `what` of `ev` is, for a finding: `evidence/NN.json raw[<what>].data`.
pub(crate) fn raw_at(ev: &Evidence, what: &str) -> String {
    format!("{} raw[{what}].data", ev_name(ev.act))
}

fn text<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(|x| x.as_str())
}

// ---------------------------------------------------------------------------------------------
// Act 1.

/// Act 1's lab mark and node are the mark ConfigMap read with them (raw `lab-mark`): `lab_mark`
/// is the text [`derive::lab_mark`] derives from the read ([`fact_is_derived_from_raw`]), the
/// mark read holds the tool's value ([`crate::rules::common::MARK_VALUE`]), and the node the
/// mark was written for (`data.node`, `data.nodeUID`) is the node act 1 recorded. Flags
/// [`Code::RawMismatch`] / [`Code::ObservationMissing`].
pub(crate) fn lab_mark_is_the_marks_configmap(g: &mut G, ev: &Evidence, f: &facts::Act1Facts) {
    let s = "evidence/01.json facts.lab_mark";
    let Some(raw) = required_raw(g, ev, "lab-mark", s) else {
        return;
    };
    let (recorded, at) = (json!({"lab_mark": f.lab_mark}), raw_at(ev, "lab-mark"));
    let derived = derive::lab_mark(raw).map(|m| json!({"lab_mark": m}));
    let sources = derive::LAB_MARK_SOURCES;
    let fact = "evidence/01.json facts";
    fact_is_derived_from_raw(g, fact, &recorded, &at, derived, sources);
    let Some(ok) = raw.get("Ok") else {
        return;
    };
    let value = text(ok, &format!("/data/{}", crate::rules::common::MARK_KEY));
    let holds = value == Some(crate::rules::common::MARK_VALUE);
    g.check(holds, RawMismatch, s, || {
        format!("the mark read holds {value:?}, not the tool's value")
    });
    let (name, uid) = (&f.node.name, &f.node.uid);
    let node = (text(ok, "/data/node"), text(ok, "/data/nodeUID"));
    let ok = node.0.is_none_or(|n| n == name) && node.1.is_none_or(|u| u == uid);
    g.check(ok, RawMismatch, "evidence/01.json facts.node", || {
        format!("the lab mark was written for node {node:?}; act 1 recorded {name:?} {uid:?}")
    });
}

// ---------------------------------------------------------------------------------------------
// Act 2 (and every act that records a registration next to its raw configuration).

/// The registration a set of facts records (at `fact`) is the one [`derive::registration`]
/// derives from the raw ValidatingWebhookConfiguration `what` read with it (the webhook of the
/// recorded name, [`fact_is_derived_from_raw_record`]). Flags [`Code::RawMismatch`] /
/// [`Code::ObservationMissing`].
pub(crate) fn registration_is_derived_from(
    g: &mut G,
    ev: &Evidence,
    what: &str,
    fact: &str,
    hook: &WebhookFacts,
) {
    let derive = |raw: &Value| derive::registration(raw, &hook.name, hook.observed_at.clone());
    let sources = derive::REGISTRATION_SOURCES;
    fact_is_derived_from_raw_record(g, ev, what, fact, hook, derive, sources);
}

/// The stored policy an act records (at `fact`: act 2's, act 6's after the switch) is the one
/// its raw read returned (raw `policy-stored`): [`derive::stored_policy`]'s name, UID and spec
/// (the defaulted fields included, which the input does not hold),
/// [`fact_is_derived_from_raw_record`]. Flags [`Code::RawMismatch`] /
/// [`Code::ObservationMissing`].
pub(crate) fn stored_policy_is_the_raw_read(g: &mut G, ev: &Evidence, fact: &str, policy: &Value) {
    let (derive, sources) = (derive::stored_policy, derive::STORED_POLICY_SOURCES);
    fact_is_derived_from_raw_record(g, ev, "policy-stored", fact, policy, derive, sources);
}

// ---------------------------------------------------------------------------------------------
// Pods.

/// Pod phases the API defines (`core/v1` `PodPhase`).
const POD_PHASES: &[&str] = &["Pending", "Running", "Succeeded", "Failed", "Unknown"];

/// A pod observation agrees with itself: a pod that exists has a name, a namespace, a UID and
/// one of the API's phases; one that does not has neither UID nor phase. Flags
/// [`Code::RawMismatch`] on `subject`.
pub(crate) fn pod_observation_agrees_with_itself(g: &mut G, subject: &str, p: &PodObservation) {
    let ok = if p.exists {
        !p.name.is_empty()
            && !p.namespace.is_empty()
            && p.uid.as_deref().is_some_and(is_uid)
            && p.phase.as_deref().is_some_and(|x| POD_PHASES.contains(&x))
    } else {
        !p.name.is_empty() && p.uid.is_none() && p.phase.is_none()
    };
    g.check(ok, RawMismatch, subject, || {
        let (exists, name, ns, uid, phase) = (p.exists, &p.name, &p.namespace, &p.uid, &p.phase);
        format!("exists={exists}, name={name:?}, namespace={ns:?}, uid={uid:?}, phase={phase:?}")
    });
}

/// A pod observation recorded next to a raw record of the same shape (a GET by name the act
/// kept verbatim as a [`PodObservation`]) is that record, but for the time it was written.
/// Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`].
pub(crate) fn pod_observation_is_its_raw_record(
    g: &mut G,
    ev: &Evidence,
    what: &str,
    subject: &str,
    p: &PodObservation,
) {
    let Some(raw) = required_raw(g, ev, what, subject) else {
        return;
    };
    let as_read = serde_json::from_value::<PodObservation>(raw.clone()).ok();
    let same = as_read.is_some_and(|mut r| {
        r.at.clone_from(&p.at);
        r == *p
    });
    g.check(same, RawMismatch, subject, || {
        format!("recorded {p:?}, the raw record {what:?} says {raw}")
    });
}

// ---------------------------------------------------------------------------------------------
// Lab A act 4.

/// Lab A act 4's Deployment, pods and Lease are the objects it read (raw `deployment`, `pods`,
/// `lease`), each the fact [`crate::derive`] derives from it ([`fact_is_derived_from_raw`]), the
/// pods in the list's order. Flags [`Code::RawMismatch`] / [`Code::ObservationMissing`].
pub(crate) fn investigation_is_the_raw_reads(g: &mut G, ev: &Evidence, f: &facts::a::Act4Facts) {
    let s = "evidence/04.json facts";
    let (fact, sources) = (format!("{s}.deployment"), derive::DEPLOYMENT_SOURCES);
    let d = derive::deployment;
    fact_is_derived_from_raw_record(g, ev, "deployment", &fact, &f.deployment, d, sources);
    let sub = format!("{s}.pods");
    if let Some(pods) = required_raw(g, ev, "pods", &sub) {
        let raw: Vec<&Value> = pods.as_array().into_iter().flatten().collect();
        let (n, raw_n) = (f.pods.len(), raw.len());
        g.check(raw_n == n, RawMismatch, sub, || {
            format!("{n} pods recorded, the raw list has {raw_n}")
        });
        for (i, (p, r)) in f.pods.iter().zip(raw).enumerate() {
            let at = format!("{}[{i}]", raw_at(ev, "pods"));
            let fact = format!("{s}.pods[{i}]");
            let derived = derive::pod(r, p.at.clone());
            fact_is_derived_from_raw(g, &fact, p, &at, derived, derive::POD_SOURCES);
        }
    }
    lease_is_derived_from(g, ev, "lease", &format!("{s}.lease"), &f.lease);
}

/// A recorded fact is the one [`crate::derive`] derives from the raw record it was made from
/// (`raw`, at the JSON path `raw_at`, e.g. `evidence/04.json raw[deployment].data`): each field
/// of `recorded` (at `fact`, e.g. `evidence/04.json facts.deployment`) equals the derived
/// field, but for the fields no raw object holds (`""` in `sources`: the time of the read,
/// whether the read found the object), which are taken as recorded. A field dotted in `sources`
/// (`identity.pid`) is the leaf at that path of both; an empty field, the fact itself (a fact
/// that is one value). Flags [`Code::RawMismatch`] on `fact.<field>` (`fact`, for the fact
/// itself) for each field that differs, naming the raw field it comes from
/// (`evidence/04.json raw[deployment].data.status.readyReplicas`) and both values, and on
/// `fact` when the raw record derives no fact ([`crate::derive::DeriveError`]).
pub(crate) fn fact_is_derived_from_raw(
    g: &mut G,
    fact: &str,
    recorded: &impl serde::Serialize,
    raw_at: &str,
    derived: Result<impl serde::Serialize, DeriveError>,
    sources: &[Source],
) {
    g.checks += 1;
    fields_are_derived(g, fact, recorded, raw_at, derived, sources);
}

/// [`fact_is_derived_from_raw`]'s comparison, counted as part of the caller's check.
pub(crate) fn fields_are_derived(
    g: &mut G,
    fact: &str,
    recorded: &impl serde::Serialize,
    raw_at: &str,
    derived: Result<impl serde::Serialize, DeriveError>,
    sources: &[Source],
) {
    let derived = match derived {
        Ok(d) => d,
        Err(e) => {
            let why = format!("{raw_at}: {e}, so it derives no fact");
            return g.flag(RawMismatch, fact, why);
        }
    };
    let recorded = serde_json::to_value(recorded).unwrap_or_default();
    let derived = serde_json::to_value(derived).unwrap_or_default();
    // The leaf at `field` (dotted; "" for the fact itself).
    let at = |v: &Value, field: &str| {
        let pointer = format!("/{field}").replace('.', "/");
        v.pointer(pointer.trim_end_matches('/'))
            .cloned()
            .unwrap_or(Value::Null)
    };
    for (field, source) in sources.iter().filter(|(_, s)| !s.is_empty()) {
        let (r, d) = (&at(&recorded, field), &at(&derived, field));
        if r != d {
            let why = format!("recorded {r}; {raw_at}.{source} derives {d}");
            let subject = format!("{fact}.{field}");
            g.flag(RawMismatch, subject.trim_end_matches('.'), why);
        }
    }
}

/// A recorded list of facts (at `fact`) is the list [`crate::derive`] derives from the raw
/// record it was made from (at `raw_at`), one for one and in order
/// ([`rows_are_derived_from_raw`], each place `derived` gives, e.g. `[0].endpoints[2]`, below
/// `raw_at`); one check for the list. Flags [`Code::RawMismatch`] on `fact` when the record
/// derives no list.
pub(crate) fn list_is_derived_from_raw<T: serde::Serialize>(
    g: &mut G,
    fact: &str,
    recorded: &[impl serde::Serialize],
    raw_at: &str,
    derived: Result<Vec<(String, T)>, DeriveError>,
    sources: &[Source],
) {
    let derived = match derived {
        Ok(d) => d.into_iter().map(|(place, d)| (place, Ok(d))).collect(),
        Err(e) => return fact_is_derived_from_raw(g, fact, &(), raw_at, Err::<(), _>(e), sources),
    };
    let rows = recorded.iter().enumerate();
    let rows = rows.map(|(i, r)| (format!("{fact}[{i}]"), r)).collect();
    rows_are_derived_from_raw(g, fact, rows, raw_at, derived, sources);
}

/// Recorded facts (`recorded`: each fact's path and value, in order; the list at `fact`) are
/// the facts [`crate::derive`] derives from raw answers (`derived`: each answer's place below
/// `raw_at`, e.g. `[3]`, and what it derives), one for one and in order: as many, and each
/// recorded fact the derived one (as [`fact_is_derived_from_raw`] compares them); one check for
/// them all. Flags [`Code::RawMismatch`] on `fact` for a count that differs (and compares no
/// further), on each fact's path (`.<field>`) for a field that differs or an answer that
/// derives no fact.
pub(crate) fn rows_are_derived_from_raw<R: serde::Serialize, T: serde::Serialize>(
    g: &mut G,
    fact: &str,
    recorded: Vec<(String, R)>,
    raw_at: &str,
    derived: Vec<(String, Result<T, DeriveError>)>,
    sources: &[Source],
) {
    g.checks += 1;
    let (n, raw_n) = (recorded.len(), derived.len());
    if n != raw_n {
        // Not one for one: comparing them in order would flag every fact after the first gap.
        let why = format!("{n} recorded; {raw_at} derives {raw_n}");
        return g.flag(RawMismatch, fact, why);
    }
    for ((fact, r), (place, d)) in recorded.into_iter().zip(derived) {
        fields_are_derived(g, &fact, &r, &format!("{raw_at}{place}"), d, sources);
    }
}

/// [`fact_is_derived_from_raw`] for the fact `recorded` (at `fact`) made from the act's raw
/// record `what` (its first, [`raw_record`]); a missing record is
/// [`Code::ObservationMissing`] on `fact`.
pub(crate) fn fact_is_derived_from_raw_record<T: serde::Serialize>(
    g: &mut G,
    ev: &Evidence,
    what: &str,
    fact: &str,
    recorded: &impl serde::Serialize,
    derive: impl FnOnce(&Value) -> Result<T, DeriveError>,
    sources: &[Source],
) {
    if let Some(raw) = required_raw(g, ev, what, fact) {
        fact_is_derived_from_raw(g, fact, recorded, &raw_at(ev, what), derive(raw), sources);
    }
}

/// [`fact_is_derived_from_raw_record`] for a Lease's facts (raw `what`, [`derive::lease`]).
pub(crate) fn lease_is_derived_from(
    g: &mut G,
    ev: &Evidence,
    what: &str,
    fact: &str,
    l: &facts::a::LeaseFacts,
) {
    let derive = |raw: &Value| derive::lease(raw, l.at.clone());
    fact_is_derived_from_raw_record(g, ev, what, fact, l, derive, derive::LEASE_SOURCES);
}

// ---------------------------------------------------------------------------------------------
// Lab B act 4.

/// Process states `/proc/<pid>/stat` field 3 can show (proc(5)).
const PROCESS_STATES: &[&str] = &["R", "S", "D", "Z", "T", "t", "X", "x", "K", "W", "P", "I"];

/// A recorded process state is one `/proc/<pid>/stat` can show (proc(5): `R`, `S`, `D`, `T`,
/// …), or `gone` (the process had exited). Flags [`Code::ValueMismatch`] on `subject`.
pub(crate) fn process_state_is_a_proc_state(g: &mut G, subject: &str, state: &str) {
    let ok = PROCESS_STATES.contains(&state) || state == "gone";
    g.check(ok, ValueMismatch, subject, || {
        format!("{state:?} is no process state of proc(5)")
    });
}

/// Lab B act 4's process identity is the CRI container it read (raw `cri-container`): the
/// container's ID, PID and pod UID, its name, its pod's name and namespace, and the restart count
/// (read from the pod's status) the container's `attempt`, each the field [`derive::cri_container`]
/// derives ([`fact_is_derived_from_raw`]). Flags [`Code::RawMismatch`] /
/// [`Code::ObservationMissing`] (on `facts.identity`).
pub(crate) fn identity_is_the_cri_container(g: &mut G, ev: &Evidence, f: &facts::b::Act4Facts) {
    let s = "evidence/04.json facts";
    if let Some(c) = required_raw(g, ev, "cri-container", &format!("{s}.identity")) {
        let (at, sources) = (raw_at(ev, "cri-container"), derive::CRI_CONTAINER_SOURCES);
        fact_is_derived_from_raw(g, s, f, &at, derive::cri_container(c), sources);
    }
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// A request's name is a pod name the API server accepts: a DNS-1123 subdomain (lowercase
/// alphanumerics, `-` and `.`, starting and ending alphanumeric, at most 253 characters;
/// Kubernetes "Object Names and IDs"). A create with any other name is refused before
/// admission, so no webhook could have answered it. Flags [`Code::RawMismatch`] on
/// `subject.name`.
pub(crate) fn request_name_is_a_pod_name(g: &mut G, subject: &str, r: &RequestRecord) {
    let n = r.name.as_bytes();
    let ok = !n.is_empty()
        && n.len() <= 253
        && n.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'.')
        && n[0].is_ascii_alphanumeric()
        && n[n.len() - 1].is_ascii_alphanumeric();
    g.check(ok, RawMismatch, format!("{subject}.name"), || {
        format!("{:?} is no pod name (DNS-1123 subdomain)", r.name)
    });
}

/// A request's labels are one of the two pods the tool sends (`docs/labs.md`): a good pod, with
/// exactly the policy's label ([`crate::rules::common::GOOD_LABEL`]), or a violating pod, with no
/// label. Flags [`Code::ValueMismatch`] on `subject.labels`.
pub(crate) fn request_labels_are_the_tools_two_pods(g: &mut G, subject: &str, r: &RequestRecord) {
    let (k, v) = crate::rules::common::GOOD_LABEL;
    let good = r.labels.len() == 1 && r.labels.get(k).map(String::as_str) == Some(v);
    let labels = &r.labels;
    let (ok, sub) = (good || labels.is_empty(), format!("{subject}.labels"));
    g.check(ok, ValueMismatch, sub, || {
        format!("labels {labels:?}: the tool sends {{{k:?}: {v:?}}} or no label")
    });
}

// ---------------------------------------------------------------------------------------------
// Across acts.

/// Every (UID, name) pair recorded under `v` (at `path`): objects with `uid` and `name`,
/// `metadata` blocks, request records (their GET's and answer's UIDs carry the record's name), a
/// webhook registration's configuration, act 1's namespaces, lab B's frozen pod. The audit and
/// metrics records are skipped (their own rules hold them).
fn named_uids(v: &Value, path: &str, out: &mut Vec<(String, String, String)>) {
    super::walk(v, &mut path.to_owned(), None, (), &mut |path, k, v, ()| {
        if k.is_some_and(super::is_witness_record) {
            return None;
        }
        let Some(m) = v.as_object() else {
            return Some(());
        };
        let mut push = |uid: Option<&str>, name: Option<&str>, at: &str| {
            if let (Some(u), Some(n)) = (uid, name)
                && !u.is_empty()
                && !n.is_empty()
            {
                out.push((u.to_owned(), n.to_owned(), format!("{path}{at}")));
            }
        };
        let name = m.get("name").and_then(|x| x.as_str());
        push(m.get("uid").and_then(|x| x.as_str()), name, ".uid");
        let text = |k: &str| m.get(k).and_then(|x| x.as_str());
        let field = |outer: &str, inner: &str| m.get(outer)?.get(inner)?.as_str();
        push(field("get", "uid"), name, ".get.uid");
        push(
            text("configuration_uid"),
            text("configuration"),
            ".configuration_uid",
        );
        push(
            field("identity", "pod_uid"),
            text("pod_name"),
            ".identity.pod_uid",
        );
        if let Some(Value::Object(ns)) = m.get("namespaces") {
            for (n, u) in ns {
                push(u.as_str(), Some(n), &format!(".namespaces.{n}"));
            }
        }
        Some(())
    });
}

/// One UID names one object: every UID this act's facts record next to a name (a pod, a
/// request's GET and answer, the policy, a webhook configuration, a namespace, the Deployment)
/// is recorded with that same name wherever the lab's evidence records it (Kubernetes UIDs are
/// unique across the cluster's objects and never reused; a server-side dry-run's too). Flags
/// [`Code::UidMismatch`] on the path in this act.
pub(crate) fn one_uid_one_object(g: &mut G) {
    let (mut all, mut mine) = (Vec::new(), 0..0);
    for (act, doc) in &g.input.evidence {
        let Ok(doc) = doc else { continue };
        let (facts, start) = (doc.value.get("facts").unwrap_or(&Value::Null), all.len());
        named_uids(facts, &format!("{} facts", ev_name(*act)), &mut all);
        if *act == g.act {
            mine = start..all.len();
        }
    }
    let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (u, n, _) in &all {
        names.entry(u).or_default().insert(n);
    }
    g.checks += 1;
    for (u, n, at) in &all[mine] {
        let others: Vec<&&str> = names[u.as_str()].iter().filter(|x| **x != n).collect();
        if !others.is_empty() {
            let why =
                format!("uid {u} names {n:?} here and {others:?} elsewhere in the lab's evidence");
            g.flag(UidMismatch, at.clone(), why);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each rule of this module (and the rules issue 24 added beside the acts' graders) flags a
    //! recorded real run with one observation changed, on the subject only that rule uses; the
    //! unchanged run passes (`grade_recorded.rs`). One test holds them all: a table of such changes.

    use serde_json::{Value, json};

    use super::super::{Code, Code::*, EvidenceDoc, Findings, GradeInput, grade};
    use crate::evidence::Lab::{self, A, B};

    /// The recorded run of lab A or lab B, as the grader reads it.
    fn recorded(lab: Lab) -> GradeInput {
        let run = [("a-20261130T194643Z", A), ("b-20261130T210502Z", B)];
        super::super::recorded_run(lab, run.iter().find(|r| r.1 == lab).unwrap().0)
    }

    /// One change to an act's evidence document.
    enum Edit {
        /// The leaf at the pointer set to the value.
        Set(&'static str, Value),
        /// The first element of the array at the pointer removed.
        RemoveFirst(&'static str),
        /// The leaf at the pointer set to the one of act `.1` at pointer `.2`.
        From(&'static str, u8, &'static str),
        /// The raw records of that `what` left out.
        DropRaw(&'static str),
    }
    use Edit::*;

    /// Act `act`'s evidence document in `gi`.
    fn doc_of(gi: &GradeInput, act: u8) -> &Value {
        gi.evidence[&act].as_ref().unwrap().value()
    }

    /// The array at `pointer` in `doc`.
    fn array_of<'d>(doc: &'d mut Value, pointer: &str) -> &'d mut Vec<Value> {
        doc.pointer_mut(pointer).unwrap().as_array_mut().unwrap()
    }

    /// Act `act` of `lab`'s recorded run passes unchanged and, with `edit` applied, is flagged
    /// `code` on `evidence/0{act}.json facts.{subject}`, with a detail that contains `detail`
    /// (e.g. the raw field a fact is derived from: both witnesses named).
    #[track_caller]
    fn flags(lab: Lab, act: u8, edit: Edit, code: Code, subject: &str, detail: &str) {
        let mut gi = recorded(lab);
        let subject = format!("evidence/{act:02}.json facts.{subject}");
        assert!(
            grade(lab, act, &gi).passed(),
            "lab {lab} act {act} passes unchanged"
        );
        let mut doc = doc_of(&gi, act).clone();
        match edit {
            Set(p, v) => *doc.pointer_mut(p).expect(p) = v,
            RemoveFirst(p) => _ = array_of(&mut doc, p).remove(0),
            From(p, other, from) => {
                *doc.pointer_mut(p).expect(p) = doc_of(&gi, other).pointer(from).unwrap().clone()
            }
            DropRaw(what) => array_of(&mut doc, "/raw").retain(|r| r["what"] != what),
        }
        gi.evidence.insert(act, Ok(EvidenceDoc::new(doc)));
        let f: Findings = grade(lab, act, &gi);
        assert!(
            f.findings
                .iter()
                .any(|x| x.code == code && x.subject == subject && x.detail.contains(detail)),
            "expected {code:?} on {subject:?} saying {detail:?}: {f:#?}"
        );
    }

    /// Rows `lab act edit => code "subject" ["detail"];`, each one call of [`flags`].
    macro_rules! flags {
        ($($lab:ident $act:literal $edit:expr => $code:ident $subject:literal $($detail:literal)?;)*) => {
            $(flags($lab, $act, $edit, $code, $subject, concat!("" $(, $detail)?));)*
        };
    }

    /// Every rule's rows: the rule (the comment above its rows), then what it flags.
    #[test]
    fn each_rule_flags_its_one_changed_observation() {
        flags! {
            // The lab mark is the mark's ConfigMap.
            A 1 Set("/facts/lab_mark", json!("ConfigMap lab-system/x mark=kca-webhook-lab/v1"))
                => RawMismatch "lab_mark";
            B 1 Set("/facts/node/name", json!("another-node")) => RawMismatch "node";
            // The controller Deployment is Kyverno's admission controller.
            A 1 Set("/facts/controller_deployment/namespace", json!("kca-webhook-target"))
                => ValueMismatch "controller_deployment";
            // The registration and the policy are the raw reads.
            B 2 Set("/facts/webhook/service/port", json!(8443)) => RawMismatch "webhook.service";
            B 2 Set("/facts/webhook/match_policy", json!("Exact"))
                => RawMismatch "webhook.match_policy";
            // Lab B acts 6 and 7 keep the configuration they read the Ignore registration from.
            B 6 Set("/facts/webhook/side_effects", json!("None"))
                => RawMismatch "webhook.side_effects";
            B 7 Set("/facts/webhook/match_policy", json!("Exact"))
                => RawMismatch "webhook.match_policy";
            A 2 Set("/facts/policy/spec/evaluation/background/enabled", json!(true))
                => RawMismatch "policy.spec";
            // The investigation is the raw reads.
            A 4 Set("/facts/lease/lease_transitions", json!(1))
                => RawMismatch "lease.lease_transitions";
            A 4 Set("/facts/deployment/ready_replicas", json!(2))
                => RawMismatch "deployment.ready_replicas";
            A 4 Set("/facts/pods/0/restart_count", json!(1)) => RawMismatch "pods[0].restart_count";
            // The identity is the CRI container's and the states are /proc states.
            B 4 Set("/facts/identity/pid", json!(18290)) => RawMismatch "identity.pid";
            B 4 Set("/facts/restart_count", json!(7)) => RawMismatch "restart_count";
            B 4 Set("/facts/process_state", json!("S-x")) => ValueMismatch "process_state";
            B 5 Set("/facts/freeze/state_after", json!("")) => ValueMismatch "freeze.state_after";
            // One UID, one object.
            A 6 From("/facts/new_pod/uid", 5, "/facts/target_bad/get/uid")
                => UidMismatch "new_pod.uid";
            // A pod observation agrees with itself.
            A 6 Set("/facts/new_pod/phase", json!("")) => RawMismatch "new_pod";
            A 6 Set("/facts/admitted_during_scale_down/phase", json!("Pending"))
                => RawMismatch "admitted_during_scale_down";
            A 6 Set("/facts/admitted_during_scale_down/exists", json!(false))
                => RawMismatch "admitted_during_scale_down";
            // A request's names, labels and causes are the API's.
            B 5 Set("/facts/target_good/name", json!("")) => RawMismatch "target_good.name";
            B 5 Set("/facts/target_good/labels/environment", json!("lab-x"))
                => ValueMismatch "target_good.labels";
            B 5 Set("/facts/target_bad/raw_response/details/causes", json!([]))
                => RawMismatch "target_bad.raw_response";
            // Act 3's observations in sequence, and the policy's read time inside the act.
            A 3 From("/facts/bad/sent_at", 3, "/facts/good/sent_at")
                => TimesInconsistent "bad.sent_at";
            A 5 Set("/facts/policy/at", json!("2026-11-30T19:48:18.653Z"))
                => TimesInconsistent "policy.at";
            // Lab A act 5's scale-down, watcher and policy are the healer's answers and the read,
            // flagged naming both witnesses (the fact's path, the raw field in the detail); a raw
            // record left out is an observation missing on the fact derived from it.
            A 5 Set("/facts/scaled_at", json!("2026-11-30T19:48:20.069Z")) => RawMismatch "scaled_at"
                "evidence/05.json raw[scale-down].data.answered_at derives \"2026-11-30T19:48:20.068Z\"";
            A 5 DropRaw("scale-down") => ObservationMissing "scaled_at";
            A 5 Set("/facts/watcher/armed_at", json!("2026-11-30T19:48:20.000Z"))
                => RawMismatch "watcher.armed_at"
                "evidence/05.json raw[watcher-ready].data.armed_at derives \"2026-11-30T19:48:20.058Z\"";
            A 5 Set("/facts/watcher/pid", json!(4218)) => RawMismatch "watcher.pid";
            A 5 Set("/facts/watcher/deadline_at", json!("2026-11-30T19:49:15.059Z"))
                => RawMismatch "watcher.deadline_at";
            A 5 Set("/facts/policy/exists", json!(false)) => RawMismatch "policy.exists";
            A 5 Set("/facts/policy/uid", json!("a764867b-5e45-4296-8322-19733e9f7b2d"))
                => RawMismatch "policy.uid"
                "evidence/05.json raw[policy].data.metadata.uid derives \"a764867b-5e45-4296-8322-19733e9f7b2c\"";
            // Lab A act 6's recovery records hold.
            A 6 Set("/facts/previous_lease_holder", json!("kyverno-admission-controller-x"))
                => RawMismatch "previous_lease_holder";
            A 6 Set("/facts/admitted_during_scale_down/name", json!("kca-a3-bad-194818-800338"))
                => PodReplaced "admitted_during_scale_down";
            A 6 Set("/facts/new_pod/namespace", json!("kca-webhook-control"))
                => ValueMismatch "new_pod";
            A 6 Set(
                "/facts/first_explicit_deny/last_seen",
                json!("2026-11-30T19:48:37.560Z pod kyverno-admission-controller-86cbbb5545-5vgcq phase Pending"),
            ) => ValueMismatch "first_explicit_deny.last_seen";
            A 6 Set("/facts/replicas_restored/waited_ms", json!(5015))
                => TimesInconsistent "replicas_restored.waited_ms";
            A 6 RemoveFirst("/facts/deny_probes") => RawMismatch "deny_probes";
            A 6 From("/facts/webhook/configuration_uid", 2, "/facts/webhook/configuration_uid")
                => UidMismatch "webhook.configuration_uid";
            // The metrics' lines are an exposition, and the audit window opens with the act.
            B 3 RemoveFirst("/facts/admission_metrics/before/lines")
                => RawMismatch "admission_metrics.before.lines";
            // The act began 2 s before its audit window opened: not the act's window.
            B 3 Set("/started_at", json!("2026-11-30T21:14:11.400Z"))
                => RawMismatch "admission_audit.window";
            // Act 8 compares every report field.
            B 8 RemoveFirst("/facts/checks") => ReportContradicted "checks";
        }
    }

    /// What may differ by version is read from the live registration, never from a name's form:
    /// Ignore from the recorded failurePolicy, the switched webhook's name from the registration
    /// serving the same policy path; a changed path stays a finding.
    #[test]
    fn version_dependent_details_come_from_the_live_registration() {
        use super::super::{G, SameRegistration, policy::policy_is_ignore, registration_equals};
        let gi = recorded(B);
        let ev = |act: u8| -> crate::evidence::Evidence {
            serde_json::from_value(doc_of(&gi, act).clone()).unwrap()
        };
        let g = G::new(B, 6, &gi);
        assert!(!policy_is_ignore(&g, &ev(5)));
        let mut e6 = ev(6);
        e6.facts["webhook"]["name"] = json!("vpol.validate.kyverno.svc-renamed-in-another-version");
        assert!(policy_is_ignore(&g, &e6));
        let earlier: crate::facts::WebhookFacts =
            serde_json::from_value(ev(2).facts["webhook"].clone()).unwrap();
        let mut found = earlier.clone();
        found.failure_policy = "Ignore".into();
        found.name = "vpol.validate.kyverno.svc-renamed-in-another-version".into();
        // The subjects `found` is flagged on, held against `earlier` as switched to Ignore.
        let flagged = |found: &crate::facts::WebhookFacts| {
            let mut g = G::new(B, 6, &gi);
            let same = SameRegistration::SwitchedToIgnore;
            registration_equals(&mut g, "s", found, &earlier, same);
            Vec::from_iter(g.findings.into_iter().map(|f| f.subject))
        };
        assert!(flagged(&found).is_empty(), "{:?}", flagged(&found));
        found.service.as_mut().unwrap().path = Some("/vpol/another-policy".into());
        let subjects = flagged(&found);
        assert!(
            subjects.contains(&"s.name".to_owned()) && subjects.contains(&"s.service".to_owned()),
            "{subjects:?}"
        );
    }
}
