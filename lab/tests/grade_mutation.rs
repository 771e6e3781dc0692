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
//! Operators: a number scaled ×10 and shifted (+1; +5000 for a `*_ms` duration, beyond every
//! tolerance of [`lab::grade::bounds`]); a string swapped for a sibling value (another value of
//! the same key anywhere in the run's facts; the string with `-x` appended when it has none) or
//! emptied; a timestamp moved 40 s; a boolean flipped; a `null` filled with a sibling value; a
//! list item dropped. Sampling is deterministic: of the mutants with the same normalized path
//! (array indices written `[]`) and operator, the first and the last are graded, so every path
//! is mutated at least once.

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
                    push("number-scaled", Some(Value::from(i * 10)));
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

/// The deterministic sample: of the mutants with the same path and operator, the first and the
/// last.
fn sample(all: Vec<Mutant>) -> Vec<Mutant> {
    let mut groups: BTreeMap<(String, &'static str), Vec<Mutant>> = BTreeMap::new();
    for m in all {
        groups.entry((m.path.clone(), m.op)).or_default().push(m);
    }
    let mut out = Vec::new();
    for (_, mut g) in groups {
        let last = g.pop();
        if let Some(first) = g.into_iter().next() {
            out.push(first);
        }
        out.extend(last);
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

#[derive(Default)]
struct Tally {
    total: usize,
    killed: usize,
    allowed: usize,
}

#[test]
fn every_observation_is_held_by_its_acts_grader() {
    let mut survivors: Vec<String> = Vec::new();
    let mut per_lab: BTreeMap<String, Tally> = BTreeMap::new();
    let mut needed: BTreeSet<&'static str> = BTreeSet::new();
    for mut subject in subjects() {
        let pool = siblings(&subject.input);
        for &act in &subject.acts {
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
                    needed.insert(u.path);
                } else {
                    survivors.push(format!(
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
            println!(
                "{:<28} lab {} act {act}: {:>4}/{:<4} killed ({:5.1} %), {} unheld by the allowlist",
                subject.name,
                subject.lab,
                tally.killed,
                tally.total,
                100.0 * tally.killed as f64 / tally.total.max(1) as f64,
                tally.allowed
            );
            let t = per_lab
                .entry(format!("lab {} act {act}", subject.lab))
                .or_default();
            t.total += tally.total;
            t.killed += tally.killed;
            t.allowed += tally.allowed;
            let t = per_lab.entry(format!("lab {}", subject.lab)).or_default();
            t.total += tally.total;
            t.killed += tally.killed;
            t.allowed += tally.allowed;
        }
    }
    for (k, t) in &per_lab {
        println!(
            "kill rate {k}: {}/{} = {:.1} % ({} unheld by the allowlist: {:.1} % of the rest)",
            t.killed,
            t.total,
            100.0 * t.killed as f64 / t.total.max(1) as f64,
            t.allowed,
            100.0 * t.allowed as f64 / (t.total - t.killed).max(1) as f64
        );
    }
    println!("allowlist: {} entries", unheld::UNHELD.len());
    let stale: Vec<&str> = unheld::UNHELD
        .iter()
        .map(|u| u.path)
        .filter(|p| !needed.contains(p))
        .collect();
    assert!(
        survivors.is_empty(),
        "{} mutants passed their act's grader outside the allowlist:\n{}",
        survivors.len(),
        survivors.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allowlist entries no surviving mutant needs (remove them): {stale:?}"
    );
}
