//! `cargo xtask bench [--runs N] [--lab <lab>|all]`: runs the labs N times (each on a fresh
//! embedded cluster, exactly as `cargo xtask lab run` does) and writes
//! `target/bench/<run-id>.json` and `target/bench/<run-id>.md` (also printed): every phase, its
//! median and max over the runs, and its ratio to its floor.
//!
//! # Where the figures come from
//!
//! - **Phases** are the [`Step`](crate::status::Step)s the run prints (the same timing source as
//!   the progress lines and `step-times.json`), recorded with [`status::start_recording`]: the
//!   build check (`building kca-webhook-lab`), each cluster-up step, each act, artifact
//!   collection, the report pages, teardown. A step inside another is shown indented under it.
//!   **Gaps** are the time between two top-level steps of a lab run (and before the first and
//!   after the last), i.e. what no step accounts for.
//! - **Fault windows** come from each run's evidence: lab B and lab C acts 5 and 6 `facts.freeze`
//!   (`frozen_at` → `resumed_at`; floor: the planned `resume_after_sec`); lab A act 5
//!   `facts.scaled_at` → act 6 `facts.replicas_restored.at` (scaled to 0; no floor: the lab
//!   decides it), and act 6's recovery `facts.lease_after_restore_ms` (restore → Kyverno's new
//!   Lease holder; Kyverno's own, so it is its own floor). Also kept as **fault facts** (figures
//!   without a floor, to see how much room the graded bounds leave): lab B's slowest target
//!   request minus `timeoutSeconds` (`grade::bounds` allows < 1 s) and the first explicit deny
//!   after resume; lab C's SIGSTOP → another Lease holder (act 5) and the scale back (act 7).
//!   Lab C's settle after each replica's freeze is a window (floor: the settle's minimum). Lab C's act 3 wait for three Ready replicas is a window whose
//!   floor is Kyverno's own time to bring them up (`replicas_ready_after_scale_ms`).
//! - **Floors** (the chains of issue 34's floors, `docs/bench.md` "Floors"): lab B and lab C act 5/6 →
//!   the planned freeze, and for lab C's replicas also the settle's minimum after the resume
//!   ([`lab::rules::c::SETTLE_NOT_BEFORE`], 14 s); lab A act 6 → its recorded
//!   `lease_after_restore_ms`; cluster up → the upstream programs' own starts: kube-apiserver's
//!   `/readyz` wait, `helm install`, and Kyverno's own start, the admission controller pod's
//!   `creationTimestamp` → its `Ready` condition's `lastTransitionTime` (1 s resolution; a span
//!   added by `cluster::up`); an act's floor is the sum of its windows' floors; the lab's total →
//!   the sum of those. Teardown, the acts' requests and our polls have no floor. `ratio` =
//!   median / median floor.
//!
//! The machine load (`/proc/loadavg`) is kept before and after every lab run. No figure here is
//! asserted anywhere: timings are recorded, not tested.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use lab::evidence::Lab;
use serde::{Deserialize, Serialize};

use crate::cluster::kyverno::KYVERNO_START_SPAN;
use crate::flags::BenchCmd;
use crate::lab_run::{RunOptions, artifacts_dir, lab_name, run_id, run_lab};
use crate::status::{self, Span};

/// A gap between two top-level steps gets its own row from this length (ms); all gaps are
/// summed in one row.
pub const GAP_SHOWN_MS: u64 = 100;

/// `/proc/loadavg`'s three averages (1, 5, 15 min).
pub type Load = [f64; 3];

/// A fault window read from the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// e.g. `fault window: act 5 freeze (frozen → resumed)`.
    pub name: String,
    /// Its measured length, milliseconds.
    pub ms: u64,
    /// Its floor, milliseconds (None: no floor).
    pub floor_ms: Option<u64>,
    /// The act whose duration has the same floor (None: none).
    pub act_floor_for: Option<u8>,
    /// The evidence fields it was read from.
    pub source: String,
}

/// One lab run of a bench.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabSample {
    /// `a` or `b`.
    pub lab: String,
    /// Run index (0-based).
    pub run: usize,
    /// The cluster name (`lab<a|b>`), replaced by `{cluster}` in phase names.
    pub cluster: String,
    /// Every act completed and graded pass.
    pub passed: bool,
    /// The run's error, if it failed.
    pub error: Option<String>,
    /// UTC start and end of the lab run.
    pub started_at: DateTime<Utc>,
    /// UTC end.
    pub finished_at: DateTime<Utc>,
    /// `/proc/loadavg` before and after.
    pub load_before: Load,
    /// `/proc/loadavg` after.
    pub load_after: Load,
    /// The recorded steps.
    pub spans: Vec<Span>,
    /// Fault windows from the evidence.
    pub windows: Vec<Window>,
    /// Where the run's artifacts are.
    pub artifacts: PathBuf,
}

/// One measured phase of one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Normalised name (indented by depth).
    pub name: String,
    /// Milliseconds.
    pub ms: u64,
    /// Floor, milliseconds.
    pub floor_ms: Option<u64>,
}

/// A phase over all runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `a`, `b`, `c`, or `all` (the labs of one run together).
    pub lab: String,
    /// Phase name.
    pub phase: String,
    /// Every run's figure, milliseconds.
    pub ms: Vec<u64>,
    /// Median, milliseconds.
    pub median_ms: u64,
    /// Max, milliseconds.
    pub max_ms: u64,
    /// Median floor, milliseconds.
    pub floor_ms: Option<u64>,
    /// median / floor.
    pub ratio: Option<f64>,
}

/// The whole bench record (`target/bench/<run-id>.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchRecord {
    /// The bench's run id (UTC).
    pub run_id: String,
    /// Runs asked for.
    pub runs: usize,
    /// `nproc`.
    pub cpus: usize,
    /// Every lab run.
    pub samples: Vec<LabSample>,
    /// The table.
    pub rows: Vec<Row>,
}

/// The median of `v` (mean of the middle two for an even count, rounded down); None if empty.
pub fn median(v: &[u64]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2
    })
}

/// `median / floor`, None without a floor or with a zero floor.
pub fn ratio(median_ms: u64, floor_ms: Option<u64>) -> Option<f64> {
    floor_ms
        .filter(|f| *f > 0)
        .map(|f| median_ms as f64 / f as f64)
}

/// A step message as a phase name: the cluster name becomes `{cluster}`, a trailing ` (…)`,
/// the bound in `waiting ≤ 180s for …` and file paths (`/a/b…`, not `/readyz`) are dropped.
pub fn normalise(msg: &str, cluster: &str) -> String {
    let mut s = msg.replace(&format!("kca-{cluster}"), "kca-{cluster}");
    s = s
        .split_whitespace()
        .filter(|w| !(w.starts_with('/') && w[1..].contains('/')))
        .collect::<Vec<_>>()
        .join(" ");
    s = s.replace(&format!(" {cluster}"), " {cluster}");
    if s.ends_with(')')
        && let Some(i) = s.find(" (")
    {
        s.truncate(i);
    }
    if let Some(rest) = s.strip_prefix("waiting ≤ ")
        && let Some(i) = rest.find("s for ")
    {
        s = format!("waiting for {}", &rest[i + 6..]);
    }
    s
}

/// 0 for a top-level span, 1 for a span inside another (same or wider on both ends; ties broken
/// by order). Only two levels: `up` runs steps on several threads at once, so a span inside two
/// others need not be a child of either.
fn depth(spans: &[Span], i: usize) -> usize {
    let s = &spans[i];
    let inside = spans.iter().enumerate().any(|(j, o)| {
        j != i
            && o.start <= s.start
            && s.end <= o.end
            && (o.start < s.start || s.end < o.end || j < i)
    });
    usize::from(inside)
}

/// An act's floor: the sum of the floors of its windows (`act_floor_for`); None without any.
fn act_floor(windows: &[Window], act: u8) -> Option<u64> {
    let floors: Vec<u64> = windows
        .iter()
        .filter(|w| w.act_floor_for == Some(act))
        .filter_map(|w| w.floor_ms)
        .collect();
    (!floors.is_empty()).then(|| floors.iter().sum())
}

/// The cluster up's floor: Kyverno's own start plus the upstream programs' own starts inside the
/// cluster up, kube-apiserver's `/readyz` wait and `helm install` (Helm and the API server), each
/// its own floor like Kyverno's (issue 34 counts "API server, Helm and teardown" in each lab's
/// floor; teardown is ours and is not counted). None without Kyverno's start.
fn cluster_up_floor(spans: &[Span], kyverno_start: Option<u64>) -> Option<u64> {
    let upstream_starts: u64 = spans
        .iter()
        .filter(|s| is_upstream_start(&s.msg))
        .map(Span::ms)
        .sum();
    kyverno_start.map(|k| k + upstream_starts)
}

/// Whether a step is an upstream program's own start that the cluster up waits for:
/// kube-apiserver's `/readyz` (`cluster::up`) or `helm install` (`cluster::kyverno`).
fn is_upstream_start(msg: &str) -> bool {
    (msg.starts_with("waiting ") && msg.ends_with("kube-apiserver /readyz"))
        || msg.starts_with("helm install ")
}

/// The phases of one lab run: every span (indented by depth; a span that ended in an error is
/// marked `✗`), the gaps between top-level spans, the fault windows, the floors, and the total.
pub fn phases(sample: &LabSample) -> Vec<Phase> {
    let mut spans = sample.spans.clone();
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let kyverno_start = spans
        .iter()
        .find(|s| s.msg == KYVERNO_START_SPAN)
        .map(Span::ms);
    let act_floor = |act: u8| act_floor(&sample.windows, act);
    let cluster_floor = cluster_up_floor(&spans, kyverno_start);
    let lab = &sample.lab;
    let mut out = Vec::new();
    let mut top: Vec<&Span> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        if s.msg == KYVERNO_START_SPAN {
            continue;
        }
        let d = depth(&spans, i);
        if d == 0 {
            top.push(s);
        }
        let name = normalise(&s.msg, &sample.cluster);
        let floor_ms = if name.starts_with("bringing up a fresh cluster") {
            cluster_floor
        } else if is_upstream_start(&s.msg) {
            Some(s.ms())
        } else {
            name.strip_prefix(&format!("lab {lab} act "))
                .and_then(|a| a.parse::<u8>().ok())
                .and_then(act_floor)
        };
        out.push(Phase {
            name: format!("{}{name}{}", "· ".repeat(d), if s.ok { "" } else { " ✗" }),
            ms: s.ms(),
            floor_ms,
        });
    }
    // The time no top-level step accounts for: each gap of at least [`GAP_SHOWN_MS`] by name,
    // and their sum.
    let mut gaps = Vec::new();
    let mut prev: (&str, DateTime<Utc>) = ("start", sample.started_at);
    for s in &top {
        let g = (s.start - prev.1).num_milliseconds().max(0) as u64;
        gaps.push(Phase {
            name: format!(
                "gap: {} → {}",
                short(prev.0, &sample.cluster),
                short(&s.msg, &sample.cluster)
            ),
            ms: g,
            floor_ms: None,
        });
        if s.end > prev.1 {
            prev = (&s.msg, s.end);
        }
    }
    gaps.push(Phase {
        name: format!("gap: {} → end", short(prev.0, &sample.cluster)),
        ms: (sample.finished_at - prev.1).num_milliseconds().max(0) as u64,
        floor_ms: None,
    });
    let sum = gaps.iter().map(|g| g.ms).sum();
    out.extend(gaps.into_iter().filter(|g| g.ms >= GAP_SHOWN_MS));
    out.push(Phase {
        name: "gaps between top-level steps (sum)".into(),
        ms: sum,
        floor_ms: None,
    });
    if let Some(k) = kyverno_start {
        out.push(Phase {
            name: "Kyverno's own start (admission controller pod created → Ready)".into(),
            ms: k,
            floor_ms: None,
        });
    }
    for w in &sample.windows {
        out.push(Phase {
            name: w.name.clone(),
            ms: w.ms,
            floor_ms: w.floor_ms,
        });
    }
    let floors: Vec<u64> = sample
        .windows
        .iter()
        .filter(|w| w.act_floor_for.is_some())
        .filter_map(|w| w.floor_ms)
        .chain(cluster_floor)
        .collect();
    out.push(Phase {
        name: "total (lab run wall time)".into(),
        ms: (sample.finished_at - sample.started_at)
            .num_milliseconds()
            .max(0) as u64,
        floor_ms: (!floors.is_empty()).then(|| floors.iter().sum()),
    });
    out
}

fn short(msg: &str, cluster: &str) -> String {
    normalise(msg, cluster)
}

/// The table rows of `samples`: phases grouped by (lab, name) in order of first appearance, and
/// an `all` total per run index when more than one lab ran in it (first lab's start to last
/// lab's end).
pub fn rows(samples: &[LabSample]) -> Vec<Row> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut figures: BTreeMap<(String, String), (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for s in samples {
        for p in phases(s) {
            let key = (s.lab.clone(), p.name.clone());
            if !figures.contains_key(&key) {
                order.push(key.clone());
            }
            let e = figures.entry(key).or_default();
            e.0.push(p.ms);
            e.1.extend(p.floor_ms);
        }
    }
    // Several labs in one run: from the first lab's start to the last lab's end.
    let mut by_run: BTreeMap<usize, Vec<&LabSample>> = BTreeMap::new();
    for s in samples {
        by_run.entry(s.run).or_default().push(s);
    }
    let mut all = Vec::new();
    let mut names = String::new();
    for v in by_run.values() {
        let mut labs: Vec<&str> = v.iter().map(|s| s.lab.as_str()).collect();
        labs.dedup();
        if labs.len() > 1 {
            let start = v.iter().map(|s| s.started_at).min();
            let end = v.iter().map(|s| s.finished_at).max();
            if let (Some(a), Some(b)) = (start, end) {
                all.push((b - a).num_milliseconds().max(0) as u64);
                names = labs.join(" then ");
            }
        }
    }
    let mut out: Vec<Row> = order
        .into_iter()
        .map(|key| {
            let (ms, floors) = figures.remove(&key).unwrap_or_default();
            let median_ms = median(&ms).unwrap_or(0);
            let floor_ms = median(&floors);
            Row {
                lab: key.0,
                phase: key.1,
                max_ms: ms.iter().copied().max().unwrap_or(0),
                ratio: ratio(median_ms, floor_ms),
                median_ms,
                floor_ms,
                ms,
            }
        })
        .collect();
    if !all.is_empty() {
        let median_ms = median(&all).unwrap_or(0);
        out.push(Row {
            lab: "all".into(),
            phase: format!("every lab of a run, {names} (wall time)"),
            max_ms: all.iter().copied().max().unwrap_or(0),
            median_ms,
            floor_ms: None,
            ratio: None,
            ms: all,
        });
    }
    out
}

fn secs(ms: u64) -> String {
    format!("{:.1}", ms as f64 / 1000.0)
}

/// The Markdown table of `rows` under a header naming the run id, N, the machine and its load.
pub fn markdown(rec: &BenchRecord) -> String {
    let mut s = String::new();
    let passed = rec.samples.iter().filter(|x| x.passed).count();
    let loads: Vec<f64> = rec
        .samples
        .iter()
        .flat_map(|x| [x.load_before[0], x.load_after[0]])
        .collect();
    let (lo, hi) = loads
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    s.push_str(&format!(
        "Bench `{}`: N = {} run(s), {} lab run(s), {} passed every act and grade; {} CPUs; 1-min load average {:.2}–{:.2} (before/after each lab run).\n\n",
        rec.run_id,
        rec.runs,
        rec.samples.len(),
        passed,
        rec.cpus,
        if loads.is_empty() { 0.0 } else { lo },
        if loads.is_empty() { 0.0 } else { hi },
    ));
    s.push_str("| lab | phase | n | median s | max s | floor s | ratio |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|\n");
    for r in &rec.rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.lab,
            r.phase.replace('|', "\\|"),
            r.ms.len(),
            secs(r.median_ms),
            secs(r.max_ms),
            r.floor_ms.map(secs).unwrap_or_default(),
            r.ratio.map(|x| format!("{x:.2}")).unwrap_or_default(),
        ));
    }
    s
}

fn ts(v: &serde_json::Value, ptr: &str) -> Option<DateTime<Utc>> {
    v.pointer(ptr)
        .and_then(|x| x.as_str())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn read_evidence(dir: &Path, act: u8) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(format!("{act:02}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}

/// The fault windows of a lab run from its evidence directory (see the module docs), read act by
/// act from the registry's steps (`lab::acts`): a freeze's window, then the one target request's
/// facts (one request of each kind, lab B) or the leader's (lab C); a scale to 0 and the restore
/// after it (lab A); a scale up and the restore after it (lab C's acts 3 and 7). Windows whose
/// evidence is missing are left out.
pub fn fault_windows(lab: Lab, evidence: &Path) -> Vec<Window> {
    use lab::acts::{self, Fault, Step, Target};
    let mut out = Vec::new();
    // The last scale before the act at hand: what its `Restore` step puts back.
    let mut scaled_to: Option<u32> = None;
    for act in acts::numbers(lab) {
        for step in acts::steps(lab, act) {
            match *step {
                Step::Fault(Fault::Freeze { target, .. }) => {
                    let Some(e) = read_evidence(evidence, act) else {
                        continue;
                    };
                    out.extend(freeze_window(&e, act));
                    if acts::traffic(lab, act).is_some_and(|(waves, _)| waves == 0) {
                        out.extend(target_request_facts(&e, act));
                    }
                    if target == Target::Leader {
                        out.extend(leader_facts(&e, act));
                    }
                    if target != Target::One {
                        out.extend(settle_window(&e, act));
                    }
                }
                Step::Fault(Fault::Scale { to: 0, .. }) => {
                    scaled_to = Some(0);
                    out.extend(scale_down_window(evidence, act));
                }
                Step::Fault(Fault::Scale { to, .. }) => {
                    scaled_to = Some(to);
                    out.extend(scale_up_window(evidence, act, to));
                }
                Step::Restore if scaled_to == Some(0) => out.extend(recovery_window(evidence, act)),
                Step::Restore => out.extend(scale_back_fact(evidence, act)),
                _ => {}
            }
        }
    }
    out
}

/// A freeze's window (`facts.freeze`: frozen → resumed; floor: the planned `resume_after_sec`).
fn freeze_window(e: &serde_json::Value, act: u8) -> Option<Window> {
    let (a, b) = (
        ts(e, "/facts/freeze/frozen_at")?,
        ts(e, "/facts/freeze/resumed_at")?,
    );
    Some(Window {
        name: format!("fault window: act {act} freeze (frozen → resumed)"),
        ms: (b - a).num_milliseconds().max(0) as u64,
        floor_ms: e
            .pointer("/facts/freeze/resume_after_sec")
            .and_then(|v| v.as_u64())
            .map(|s| s * 1000),
        act_floor_for: Some(act),
        source: format!(
            "evidence/{act:02}.json facts.freeze.frozen_at, resumed_at, resume_after_sec"
        ),
    })
}

/// A freeze's facts of its one request of each kind (lab B): the slowest target request minus
/// `timeoutSeconds`, and the first explicit deny after resume.
fn target_request_facts(e: &serde_json::Value, act: u8) -> Vec<Window> {
    let mut out = Vec::new();
    let t = e.pointer("/facts/timeout_seconds").and_then(|v| v.as_u64());
    let elapsed = ["target_good", "target_bad"]
        .iter()
        .filter_map(|k| {
            e.pointer(&format!("/facts/{k}/elapsed_ms"))
                .and_then(|v| v.as_u64())
        })
        .max();
    if let (Some(t), Some(el)) = (t, elapsed) {
        out.push(fact(
            format!(
                "fault fact: act {act} slowest target request − timeoutSeconds (graded bound < 1 s)"
            ),
            el.saturating_sub(t * 1000),
            format!(
                "evidence/{act:02}.json facts.target_good/target_bad.elapsed_ms, timeout_seconds"
            ),
        ));
    }
    if let Some(d) = e
        .pointer("/facts/first_deny_after_resume_ms")
        .and_then(|v| v.as_u64())
    {
        out.push(fact(
            format!("fault fact: act {act} first explicit deny after resume"),
            d,
            format!("evidence/{act:02}.json facts.first_deny_after_resume_ms"),
        ));
    }
    out
}

/// A scale to 0 at `act` (lab A): scaled (`act`'s `facts.scaled_at`) → restored (the next act's
/// `facts.replicas_restored.at`); no floor: the lab decides it.
fn scale_down_window(evidence: &Path, act: u8) -> Option<Window> {
    let next = act + 1;
    let a = ts(&read_evidence(evidence, act)?, "/facts/scaled_at")?;
    let b = ts(
        &read_evidence(evidence, next)?,
        "/facts/replicas_restored/at",
    )?;
    Some(Window {
        name: format!("fault window: acts {act}–{next} scaled to 0 (scaled → restored)"),
        ms: (b - a).num_milliseconds().max(0) as u64,
        floor_ms: None,
        act_floor_for: None,
        source: format!(
            "evidence/{act:02}.json facts.scaled_at → evidence/{next:02}.json facts.replicas_restored.at"
        ),
    })
}

/// The restore after a scale to 0 (lab A): restored → Kyverno's new Lease holder, its own floor.
fn recovery_window(evidence: &Path, act: u8) -> Option<Window> {
    let l = read_evidence(evidence, act)?
        .pointer("/facts/lease_after_restore_ms")
        .and_then(|v| v.as_u64())?;
    Some(Window {
        name: format!("fault window: act {act} recovery (restored → new Lease holder)"),
        ms: l,
        floor_ms: Some(l),
        act_floor_for: Some(act),
        source: format!("evidence/{act:02}.json facts.lease_after_restore_ms"),
    })
}

/// A scale up to `to` replicas (lab C's act 3): the wait for them Ready with their endpoints;
/// floor: Kyverno's own time to bring them up ([`replicas_ready_after_scale_ms`]).
fn scale_up_window(evidence: &Path, act: u8, to: u32) -> Option<Window> {
    let e = read_evidence(evidence, act)?;
    let ms = e
        .pointer("/facts/wait/waited_ms")
        .and_then(|v| v.as_u64())?;
    Some(Window {
        name: format!(
            "fault window: act {act} scale to {to} → {} Ready replicas and endpoints",
            number_word(to)
        ),
        ms,
        floor_ms: replicas_ready_after_scale_ms(&e),
        act_floor_for: Some(act),
        source: format!(
            "evidence/{act:02}.json facts.wait.waited_ms; floor: facts.scale.scaled_at → the \
             last new pod's Ready condition in raw[pods]"
        ),
    })
}

/// `n` in words up to ten, as the window names write a replica count.
fn number_word(n: u32) -> String {
    const WORDS: [&str; 11] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    WORDS
        .get(n as usize)
        .map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

/// The restore after a scale up (lab C's act 7): scale back → explicit deny. When the Lease's
/// tenure after the wait (`facts.lease`: holder, `acquire_time`) is not the one the act before
/// ended with (`facts.lease_after`), the scale back removed the leader and Kyverno's own takeover
/// is the floor: the Lease's duration (`lease_duration_seconds`; a new leader only after the old
/// Lease expires, `docs/bench.md` "Floors", "≥ 12–16 s"); otherwise a fault fact
/// without a floor.
fn scale_back_fact(evidence: &Path, act: u8) -> Option<Window> {
    let e = read_evidence(evidence, act)?;
    let ms = e.pointer("/facts/waited_ms").and_then(|v| v.as_u64())?;
    let tenure = |v: &serde_json::Value| (v["holder"].clone(), v["acquire_time"].clone());
    let before = act
        .checked_sub(1)
        .and_then(|a| read_evidence(evidence, a))
        .and_then(|p| p.pointer("/facts/lease_after").map(tenure));
    let after = e.pointer("/facts/lease");
    let takeover = match (before, after) {
        (Some(b), Some(a)) if b != tenure(a) => a["lease_duration_seconds"].as_u64(),
        _ => None,
    };
    let name = format!("act {act} scale back → explicit deny");
    let source = format!("evidence/{act:02}.json facts.waited_ms");
    Some(match takeover {
        Some(sec) => Window {
            name: format!("fault window: {name} (the Lease taken over)"),
            ms,
            floor_ms: Some(sec * 1000),
            act_floor_for: Some(act),
            source: format!(
                "{source}; floor: facts.lease.lease_duration_seconds (a new tenure since \
                 evidence/{:02}.json facts.lease_after)",
                act - 1
            ),
        },
        None => fact(format!("fault fact: {name}"), ms, source),
    })
}

/// Kyverno's own time to bring up the replicas act 3 asked for: from `facts.scale.scaled_at` to the
/// latest `Ready` condition (`lastTransitionTime`, 1 s resolution) of the pods in `raw[pods]`
/// created at or after the scale, in milliseconds. None without those fields or such pods.
///
/// It is Kyverno's, not ours: each new pod's `kyverno-pre` init container runs a leader election
/// (Lease `kyvernopre`, 12 s duration, 2 s retry, never released: it exits inside the callback;
/// `cmd/kyverno-init/main.go`, `pkg/leaderelection`), and client-go counts a Lease held by another
/// as valid for its whole duration from when it first saw it (`isLeaseValid`), so the new pods'
/// inits run one after another, ≈ 14 s each; then the readiness probe (5 s delay, 10 s period).
/// `docs/lab-c.md`, "What act 3 waits for".
fn replicas_ready_after_scale_ms(e: &serde_json::Value) -> Option<u64> {
    let scaled = ts(e, "/facts/scale/scaled_at")?;
    let scaled_second = scaled.timestamp();
    let pods = e["raw"].as_array()?.iter().find(|r| r["what"] == "pods")?["data"].as_array()?;
    let ready = pods
        .iter()
        .filter(|p| {
            ts(p, "/metadata/creationTimestamp").is_some_and(|c| c.timestamp() >= scaled_second)
        })
        .map(|p| {
            p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Ready" && c["status"] == "True")
                .and_then(|c| ts(c, "/lastTransitionTime"))
        })
        .collect::<Option<Vec<_>>>()?;
    let last = ready.into_iter().max()?;
    Some((last - scaled).num_milliseconds().max(0) as u64)
}

/// A fault fact: a window of `ms` read from `source`, without a floor.
fn fact(name: String, ms: u64, source: String) -> Window {
    Window {
        name,
        ms,
        floor_ms: None,
        act_floor_for: None,
        source,
    }
}

/// The leader's freeze's facts (lab C's act 5): SIGSTOP → another Lease holder (the lab's own
/// `rules::c::takeover`), and the frozen leader's settle after the first deny (its restart).
fn leader_facts(e: &serde_json::Value, act: u8) -> Vec<Window> {
    let mut out = Vec::new();
    let run: Option<lab::facts::c::ReplicaFreezeRun> =
        serde_json::from_value(e["facts"].clone()).ok();
    let frozen = ts(e, "/facts/freeze/frozen_at");
    if let (Some(run), Some(f)) = (&run, frozen)
        && let Some(at) =
            lab::rules::c::takeover(run).and_then(|(_, at)| DateTime::parse_from_rfc3339(at).ok())
    {
        out.push(fact(
            format!("fault fact: act {act} SIGSTOP → another Lease holder read"),
            (at.with_timezone(&Utc) - f).num_milliseconds().max(0) as u64,
            format!("evidence/{act:02}.json facts.freeze.frozen_at → first facts.lease_samples[].at naming another holder"),
        ));
    }
    out
}

/// The settle after a replica's freeze (lab C's acts 5 and 6): first explicit deny after the
/// resume → every replica Ready and the Lease on one of them, no earlier than
/// [`lab::rules::c::SETTLE_NOT_BEFORE`] after the resume (`lab::steps::settle`); that minimum is
/// its floor and part of the act's (`docs/bench.md` "Floors" counts it in lab C's).
fn settle_window(e: &serde_json::Value, act: u8) -> Option<Window> {
    let ms = e
        .pointer("/facts/target_after/waited_ms")
        .and_then(|v| v.as_u64())?;
    Some(Window {
        name: format!("fault window: act {act} first deny after resume → replicas settled"),
        ms,
        floor_ms: Some(lab::rules::c::SETTLE_NOT_BEFORE.as_millis() as u64),
        act_floor_for: Some(act),
        source: format!(
            "evidence/{act:02}.json facts.target_after.waited_ms; floor: the Lease's duration \
             plus its retry after the resume (rules::c::SETTLE_NOT_BEFORE)"
        ),
    })
}

/// `--render`: the table of an existing record, recomputed from its samples (the fault windows
/// from the runs' evidence when it is still under their `artifacts` directory).
fn render(path: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rec: BenchRecord = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a bench record (expected the JSON `cargo xtask bench` writes)",
            path.display()
        )
    })?;
    // The windows again from each run's evidence where it is still on disk, so a record shows the
    // windows and floors of the code that renders it; elsewhere the recorded ones stay.
    for sample in &mut rec.samples {
        let evidence = sample.artifacts.join("evidence");
        if let (Ok(lab), true) = (
            serde_json::from_value::<Lab>(serde_json::Value::from(sample.lab.as_str())),
            evidence.is_dir(),
        ) {
            sample.windows = fault_windows(lab, &evidence);
        }
    }
    rec.rows = rows(&rec.samples);
    std::fs::write(path, serde_json::to_string_pretty(&rec)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let md = markdown(&rec);
    let mdp = path.with_extension("md");
    std::fs::write(&mdp, &md).with_context(|| format!("writing {}", mdp.display()))?;
    println!("{md}");
    Ok(())
}

fn loadavg() -> Load {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|t| {
            let v: Vec<f64> = t
                .split_whitespace()
                .take(3)
                .filter_map(|x| x.parse().ok())
                .collect();
            [
                v.first().copied().unwrap_or(0.0),
                v.get(1).copied().unwrap_or(0.0),
                v.get(2).copied().unwrap_or(0.0),
            ]
        })
        .unwrap_or([0.0; 3])
}

impl BenchCmd {
    /// Runs the bench and writes its record and table.
    pub fn run(self) -> Result<()> {
        if let Some(path) = &self.render {
            return render(path);
        }
        anyhow::ensure!(self.runs >= 1, "--runs must be at least 1");
        let labs = self.lab.labs();
        let id = run_id();
        let dir = crate::cluster::config::repo_root()
            .join("target")
            .join("bench");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut samples = Vec::new();
        for run in 0..self.runs {
            for &lab in &labs {
                eprintln!(
                    "bench {id}: run {}/{} lab {}",
                    run + 1,
                    self.runs,
                    lab_name(lab)
                );
                let opts = RunOptions {
                    run_id: format!("bench-{id}-{run}"),
                    ..RunOptions::new(lab)
                };
                let load_before = loadavg();
                status::start_recording();
                let started_at = Utc::now();
                let result = run_lab(&opts);
                let finished_at = Utc::now();
                let spans = status::take_recording();
                let artifacts = artifacts_dir(&opts.run_id, lab);
                let (passed, error) = match &result {
                    Ok(r) => (r.passed(), None),
                    Err(e) => (false, Some(format!("{e:#}"))),
                };
                samples.push(LabSample {
                    lab: lab_name(lab).into(),
                    run,
                    cluster: format!("lab{}", lab_name(lab)),
                    passed,
                    error,
                    started_at,
                    finished_at,
                    load_before,
                    load_after: loadavg(),
                    spans,
                    windows: fault_windows(lab, &artifacts.join("evidence")),
                    artifacts,
                });
            }
        }
        let mut rec = BenchRecord {
            run_id: id.clone(),
            runs: self.runs,
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            rows: Vec::new(),
            samples,
        };
        rec.rows = rows(&rec.samples);
        let json = dir.join(format!("{id}.json"));
        std::fs::write(&json, serde_json::to_string_pretty(&rec)?)
            .with_context(|| format!("writing {}", json.display()))?;
        let md = markdown(&rec);
        let mdp = dir.join(format!("{id}.md"));
        std::fs::write(&mdp, &md).with_context(|| format!("writing {}", mdp.display()))?;
        println!("{md}");
        eprintln!("bench record: {} and {}", json.display(), mdp.display());
        let failed = rec.samples.iter().filter(|s| !s.passed).count();
        anyhow::ensure!(
            failed == 0,
            "{failed} of {} lab runs did not pass (their figures are in the record)",
            rec.samples.len()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: f64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + (s * 1000.0) as i64).unwrap()
    }

    fn span(msg: &str, a: f64, b: f64) -> Span {
        Span {
            msg: msg.into(),
            start: t(a),
            end: t(b),
            ok: true,
        }
    }

    fn sample(
        lab: &str,
        run: usize,
        spans: Vec<Span>,
        windows: Vec<Window>,
        end: f64,
    ) -> LabSample {
        LabSample {
            lab: lab.into(),
            run,
            cluster: format!("lab{lab}"),
            passed: true,
            error: None,
            started_at: t(0.0),
            finished_at: t(end),
            load_before: [1.0, 1.0, 1.0],
            load_after: [2.0, 1.0, 1.0],
            spans,
            windows,
            artifacts: PathBuf::new(),
        }
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[7]), Some(7));
        assert_eq!(median(&[30, 10, 20]), Some(20));
        assert_eq!(median(&[40, 10, 30, 20]), Some(25));
        assert_eq!(median(&[1, 2]), Some(1));
    }

    #[test]
    fn ratio_needs_a_positive_floor() {
        assert_eq!(ratio(30_000, Some(20_000)), Some(1.5));
        assert_eq!(ratio(30_000, Some(0)), None);
        assert_eq!(ratio(30_000, None), None);
    }

    #[test]
    fn names_are_normalised() {
        assert_eq!(
            normalise(
                "creating network namespace kca-laba (10.44.0.0/30, node IP 10.44.0.2)",
                "laba"
            ),
            "creating network namespace kca-{cluster}"
        );
        assert_eq!(
            normalise("waiting ≤ 180s for kube-apiserver /readyz", "laba"),
            "waiting for kube-apiserver /readyz"
        );
        assert_eq!(
            normalise("helm install kyverno /root/.cache/x/chart", "laba"),
            "helm install kyverno"
        );
        assert_eq!(
            normalise("bringing up a fresh cluster laba", "laba"),
            "bringing up a fresh cluster {cluster}"
        );
        assert_eq!(
            normalise("waiting ≤ 180s for node kca-laba Ready", "laba"),
            "waiting for node kca-{cluster} Ready"
        );
    }

    /// Nesting, gaps, floors from windows and Kyverno's start, and the totals.
    #[test]
    fn phases_gaps_and_floors() {
        let spans = vec![
            span("building kca-webhook-lab", 0.0, 1.0),
            span("bringing up a fresh cluster labb", 1.5, 21.5),
            span("starting kine", 2.0, 2.1),
            // Another thread's step running meanwhile: what starts inside it is still one level in.
            span("importing 6 images", 2.0, 12.0),
            span("starting kube-apiserver", 2.5, 2.6),
            span("waiting ≤ 180s for kube-apiserver /readyz", 2.6, 6.6),
            span("helm install kyverno /c/chart", 6.6, 9.6),
            span(KYVERNO_START_SPAN, 10.0, 18.0),
            span("lab b act 5", 22.0, 47.0),
            Span {
                ok: false,
                ..span("lab b act 6", 47.0, 60.0)
            },
        ];
        let window = |name: &str, ms, floor| Window {
            name: name.into(),
            ms,
            floor_ms: Some(floor),
            act_floor_for: Some(5),
            source: String::new(),
        };
        // An act's floor is the sum of its windows' floors.
        let windows = vec![
            window(
                "fault window: act 5 freeze (frozen → resumed)",
                20_100,
                20_000,
            ),
            window("fault window: act 5 settle", 3_000, 2_000),
        ];
        let p = phases(&sample("b", 0, spans, windows, 61.0));
        let get = |n: &str| {
            p.iter()
                .find(|x| x.name == n)
                .unwrap_or_else(|| panic!("no phase {n} in {p:#?}"))
                .clone()
        };
        assert_eq!(get("building kca-webhook-lab").ms, 1000);
        let up = get("bringing up a fresh cluster {cluster}");
        // Kyverno's own start (8 s) + the /readyz wait (4 s) + helm install (3 s).
        assert_eq!((up.ms, up.floor_ms), (20_000, Some(15_000)));
        let readyz = get("· waiting for kube-apiserver /readyz");
        assert_eq!((readyz.ms, readyz.floor_ms), (4_000, Some(4_000)));
        assert_eq!(get("· starting kine").ms, 100);
        assert_eq!(get("· importing 6 images").ms, 10_000);
        assert_eq!(get("· starting kube-apiserver").ms, 100);
        assert_eq!(get("lab b act 5").floor_ms, Some(22_000));
        assert_eq!(get("lab b act 6 ✗").ms, 13_000);
        // Gaps under 100 ms only count in the sum.
        assert!(
            !p.iter()
                .any(|x| x.name == "gap: start → building kca-webhook-lab")
        );
        assert!(!p.iter().any(|x| x.name == "gap: lab b act 5 → lab b act 6"));
        assert_eq!(get("gaps between top-level steps (sum)").ms, 2000);
        assert_eq!(
            get("gap: building kca-webhook-lab → bringing up a fresh cluster {cluster}").ms,
            500
        );
        assert_eq!(
            get("gap: bringing up a fresh cluster {cluster} → lab b act 5").ms,
            500
        );
        assert_eq!(get("gap: lab b act 6 → end").ms, 1000);
        assert_eq!(
            get("Kyverno's own start (admission controller pod created → Ready)").ms,
            8_000
        );
        let total = get("total (lab run wall time)");
        assert_eq!((total.ms, total.floor_ms), (61_000, Some(37_000)));
        // The inner span is not a top-level one: no gap names it.
        assert!(
            !p.iter()
                .any(|x| x.name.contains("gap") && x.name.contains("kine"))
        );
    }

    #[test]
    fn rows_take_median_max_ratio_and_all() {
        let mk = |lab: &str, run: usize, act_s: f64, floor: u64, end: f64| {
            let w = Window {
                name: "w".into(),
                ms: floor,
                floor_ms: Some(floor),
                act_floor_for: Some(6),
                source: String::new(),
            };
            let mut s = sample(
                lab,
                run,
                vec![span(&format!("lab {lab} act 6"), 0.0, act_s)],
                vec![w],
                end,
            );
            if lab == "b" {
                s.started_at = t(100.0);
                s.finished_at = t(100.0 + end);
            }
            s
        };
        let samples = vec![
            mk("a", 0, 30.0, 20_000, 40.0),
            mk("b", 0, 12.0, 10_000, 20.0),
            mk("a", 1, 40.0, 20_000, 50.0),
            mk("a", 2, 35.0, 30_000, 45.0),
        ];
        let r = rows(&samples);
        let act = r
            .iter()
            .find(|x| x.lab == "a" && x.phase == "lab a act 6")
            .unwrap();
        assert_eq!(act.ms, vec![30_000, 40_000, 35_000]);
        assert_eq!((act.median_ms, act.max_ms), (35_000, 40_000));
        assert_eq!(act.floor_ms, Some(20_000));
        assert_eq!(act.ratio, Some(1.75));
        // Only run 0 had two labs: from a's start (0 s) to b's end (120 s).
        let all = r.iter().find(|x| x.lab == "all").unwrap();
        assert_eq!(all.ms, vec![120_000]);
        assert_eq!(all.phase, "every lab of a run, a then b (wall time)");
        let md = markdown(&BenchRecord {
            run_id: "x".into(),
            runs: 3,
            cpus: 2,
            samples,
            rows: r,
        });
        assert!(
            md.contains("| a | lab a act 6 | 3 | 35.0 | 40.0 | 20.0 | 1.75 |"),
            "{md}"
        );
        assert!(md.contains("1-min load average 1.00–2.00"), "{md}");
    }

    /// The windows, floors and facts are read from the evidence fields the module docs name.
    #[test]
    fn windows_from_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let five = serde_json::json!({"facts": {
            "freeze": {"frozen_at": "2026-11-30T20:00:30.561Z", "resumed_at": "2026-11-30T20:00:50.564Z", "resume_after_sec": 20},
            "timeout_seconds": 3,
            "target_good": {"elapsed_ms": 3006},
            "target_bad": {"elapsed_ms": 3049},
            "first_deny_after_resume_ms": 27
        }});
        std::fs::write(dir.path().join("05.json"), five.to_string()).unwrap();
        let w = fault_windows(Lab::B, dir.path());
        assert_eq!(w.len(), 3, "{w:#?}");
        assert_eq!(
            (w[0].ms, w[0].floor_ms, w[0].act_floor_for),
            (20_003, Some(20_000), Some(5))
        );
        assert_eq!((w[1].ms, w[1].floor_ms), (49, None));
        assert_eq!(w[2].ms, 27);

        let a = tempfile::tempdir().unwrap();
        std::fs::write(
            a.path().join("05.json"),
            r#"{"facts": {"scaled_at": "2026-11-30T19:59:21.500Z"}}"#,
        )
        .unwrap();
        std::fs::write(
            a.path().join("06.json"),
            r#"{"facts": {"replicas_restored": {"at": "2026-11-30T19:59:23.568Z"}, "lease_after_restore_ms": 32385}}"#,
        )
        .unwrap();
        let w = fault_windows(Lab::A, a.path());
        assert_eq!(w.len(), 2, "{w:#?}");
        assert_eq!((w[0].ms, w[0].floor_ms), (2068, None));
        assert_eq!(
            (w[1].ms, w[1].floor_ms, w[1].act_floor_for),
            (32_385, Some(32_385), Some(6))
        );
    }

    /// Lab C's windows from the recorded run c-20261201T234822Z (docs/lab-c.md's series 2, run 4).
    #[test]
    fn a_scale_back_that_moved_the_lease_has_kyvernos_takeover_as_its_floor() {
        let dir = tempfile::tempdir().unwrap();
        let lease = |holder: &str, acquired: &str| {
            serde_json::json!({"holder": holder, "acquire_time": acquired,
                "lease_duration_seconds": 12})
        };
        let write = |act: u8, facts: serde_json::Value| {
            let path = dir.path().join(format!("{act:02}.json"));
            std::fs::write(path, serde_json::json!({ "facts": facts }).to_string()).unwrap();
        };
        write(
            6,
            serde_json::json!({"lease_after": lease("p-1", "2026-12-01T00:00:00Z")}),
        );
        // Act 7 waited `ms` and ended with the Lease's tenure (`holder`, `acquired`).
        let act7 = |ms: u64, holder: &str, acquired: &str| {
            write(
                7,
                serde_json::json!({"waited_ms": ms, "lease": lease(holder, acquired)}),
            );
            scale_back_fact(dir.path(), 7).unwrap()
        };
        let w = act7(15_000, "p-2", "2026-12-01T00:01:00Z");
        assert_eq!(
            (w.name.as_str(), w.ms, w.floor_ms, w.act_floor_for),
            (
                "fault window: act 7 scale back → explicit deny (the Lease taken over)",
                15_000,
                Some(12_000),
                Some(7)
            )
        );
        // The same tenure after the wait: no floor.
        let w = act7(1_500, "p-1", "2026-12-01T00:00:00Z");
        assert_eq!((w.floor_ms, w.act_floor_for), (None, None));
    }

    #[test]
    fn lab_c_windows_from_the_recorded_run() {
        let ev = crate::cluster::config::repo_root()
            .join("lab/tests/fixtures/recorded/c-20261201T234822Z/evidence");
        let w = fault_windows(Lab::C, &ev);
        let get = |prefix: &str| {
            w.iter()
                .find(|x| x.name.starts_with(prefix))
                .unwrap_or_else(|| panic!("{prefix}: {w:#?}"))
        };
        let f3 = get("fault window: act 3 scale");
        // scaled_at 23:48:52.397, the last new pod Ready at 23:49:28 (docs/lab-c.md).
        assert_eq!(
            (f3.ms, f3.floor_ms, f3.act_floor_for),
            (36_678, Some(35_603), Some(3))
        );
        let f5 = get("fault window: act 5 freeze");
        assert_eq!(
            (f5.ms, f5.floor_ms, f5.act_floor_for),
            (20_018, Some(20_000), Some(5))
        );
        let f6 = get("fault window: act 6 freeze");
        assert_eq!((f6.floor_ms, f6.act_floor_for), (Some(10_000), Some(6)));
        // docs/lab-c.md: the Lease moved 16020 ms after the SIGSTOP in this run.
        assert_eq!(get("fault fact: act 5 SIGSTOP").ms, 16_020);
        let s5 = get("fault window: act 5 first deny after resume");
        assert_eq!(
            (s5.ms, s5.floor_ms, s5.act_floor_for),
            (25_669, Some(14_000), Some(5))
        );
        let s6 = get("fault window: act 6 first deny after resume");
        assert_eq!((s6.floor_ms, s6.act_floor_for), (Some(14_000), Some(6)));
        assert_eq!(get("fault fact: act 7").ms, 2_005);
        assert_eq!(w.len(), 7, "{w:#?}");
    }
}
