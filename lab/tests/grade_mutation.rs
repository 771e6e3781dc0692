//! The mutation test (issue 24): "every observation is held" as a property, not a list.
//!
//! For each recorded real run (`fixtures/recorded/*`) and each generated passing fixture
//! (`fixtures/{a,b}/pass`), every leaf of every act's `facts` gets the mutation operators below,
//! one mutant at a time; the act's own grader (never act 8 of the same run, whose digest check
//! would flag any change: the cascade) must flag each mutant unless its path matches an entry of
//! the one allowlist, [`lab::grade::unheld::UNHELD`], which says for each why the field cannot
//! contradict anything. The test prints the kill rate per lab and act and per lab and operator,
//! and fails on any survivor
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
use lab::text::Lang;
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
    for lab in lab::acts::LABS {
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
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.total += o.total;
        self.killed += o.killed;
        self.allowed += o.allowed;
    }
}

/// What one run's mutants gave.
#[derive(Default)]
struct Outcome {
    rows: Vec<(u8, Tally, String)>,
    /// The same mutants by operator.
    ops: BTreeMap<&'static str, Tally>,
    survivors: Vec<String>,
    unheld_needed: BTreeSet<&'static str>,
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
            let op = out.ops.entry(m.op).or_default();
            op.total += 1;
            if !f.passed() {
                tally.killed += 1;
                op.killed += 1;
            } else if let Some(u) = unheld::unheld(&m.path) {
                tally.allowed += 1;
                op.allowed += 1;
                out.unheld_needed.insert(u.path);
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
    for (lab, o) in labs.iter().zip(&outcomes) {
        for (act, t, name) in &o.rows {
            println!(
                "{name:<28} lab {lab} act {act}: {:>4}/{:<4} killed ({:5.1} %), {} unheld",
                t.killed,
                t.total,
                pct(t.killed, t.total),
                t.allowed
            );
            per.entry(format!("lab {lab} act {act}"))
                .or_default()
                .add(t);
            per.entry(format!("lab {lab}")).or_default().add(t);
        }
        for (op, t) in &o.ops {
            per.entry(format!("lab {lab} operator {op}"))
                .or_default()
                .add(t);
        }
        survivors.extend(o.survivors.iter().cloned());
        unheld_needed.extend(o.unheld_needed.iter().copied());
    }
    for (k, t) in &per {
        println!(
            "kill rate {k}: {}/{} = {:.1} %; the rest, {}, unheld by the allowlist",
            t.killed,
            t.total,
            pct(t.killed, t.total),
            t.allowed
        );
    }
    println!("allowlist: {} entries", unheld::UNHELD.len());
    let stale: Vec<&str> = unheld::UNHELD
        .iter()
        .map(|u| u.path)
        .filter(|p| !unheld_needed.contains(p))
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
