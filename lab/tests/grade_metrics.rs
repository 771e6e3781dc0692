//! The metrics cross-checks (`lab::grade::metrics`) on fixture evidence: the `pass/` work
//! directories of both labs with `facts.admission_metrics` added to acts 3, 5, 6 and 7 (the API
//! server's counters as it would serve them for the fixtures' requests), then broken one rule at a
//! time; and the recorded real run, which predates metrics and gets notes, not failures.
//!
//! Adding `admission_metrics` changes an evidence file's digest, so acts that hold digests of
//! other acts (4 and 8) are not graded here; for the acts graded, the assertions look at the
//! metrics findings (subject `… facts.admission_metrics …`) and the notes.

mod common;

use std::collections::BTreeMap;

use lab::evidence::Lab;
use lab::grade::{self, Code, Findings, GradeInput};
use lab::metrics::{self, AdmissionMetrics, MetricsRead};
use lab::text::Lang;
use lab::workdir::Workdir;
use serde_json::{Value, json};

const FAIL: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
const IGNORE: &str = "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label";
/// Another Kyverno webhook, also called for pods: its movement must not count for the policy's.
const OTHER: &str = "validate.kyverno.svc-fail";

/// One counter sample: (metric, labels, value).
type S = (&'static str, Vec<(&'static str, String)>, f64);

fn rej(hook: &str, error_type: &str, code: &str, v: f64) -> S {
    (
        metrics::REJECTION_COUNT,
        vec![
            ("error_type", error_type.into()),
            ("name", hook.into()),
            ("operation", "CREATE".into()),
            ("rejection_code", code.into()),
            ("type", "validating".into()),
        ],
        v,
    )
}
fn fail_open(hook: &str, v: f64) -> S {
    (
        metrics::FAIL_OPEN_COUNT,
        vec![("name", hook.into()), ("type", "validating".into())],
        v,
    )
}
fn calls(hook: &str, code: &str, rejected: bool, v: f64) -> S {
    (
        metrics::REQUEST_TOTAL,
        vec![
            ("code", code.into()),
            ("name", hook.into()),
            ("operation", "CREATE".into()),
            ("rejected", rejected.to_string()),
            ("type", "validating".into()),
        ],
        v,
    )
}

/// The admission duration histogram's `_count` and `_sum` of `hook` (seconds).
fn duration(hook: &str, count: f64, sum: f64) -> [S; 2] {
    let labels = || {
        vec![
            ("name", hook.to_owned()),
            ("operation", "CREATE".into()),
            ("type", "validating".into()),
        ]
    };
    [
        (
            "apiserver_admission_webhook_admission_duration_seconds_count",
            labels(),
            count,
        ),
        (
            "apiserver_admission_webhook_admission_duration_seconds_sum",
            labels(),
            sum,
        ),
    ]
}

/// What the histogram of the policy's webhook adds for an act's requests in the `pass/`
/// fixture: one observation per call (every target-namespace request, but lab A act 6's dry-runs
/// admitted before the registration and lab A act 5's, which called nothing), each taking the
/// request's `elapsed_ms` less 2 ms (the recorded run: a 3004 ms request, a 3000.6 ms call).
fn durations(lab: Lab, act: u8, facts: &Value) -> Vec<S> {
    let hook = if lab == Lab::B && act >= 6 {
        IGNORE
    } else {
        FAIL
    };
    let calls: Vec<lab::evidence::RequestRecord> = lab::evidence::request_records(&[facts])
        .into_values()
        .filter(|r| r.namespace == "kca-webhook-target")
        .filter(|_| !(lab == Lab::A && act == 5))
        .filter(|r| {
            !(lab == Lab::A && act == 6 && r.outcome == lab::evidence::Outcome::DryRunAdmitted)
        })
        .collect();
    let sum: f64 = calls
        .iter()
        .map(|r| (r.elapsed_ms.max(3) - 2) as f64 / 1000.0)
        .sum();
    let mut out = duration(FAIL, 4.0, 0.02).to_vec();
    if hook == FAIL {
        out = duration(FAIL, 4.0 + calls.len() as f64, 0.02 + sum).to_vec();
    } else {
        out.extend(duration(IGNORE, calls.len() as f64, sum));
    }
    out
}

/// `/metrics` text as the API server serves it (HELP/TYPE lines, label order as served).
fn text(samples: &[S]) -> String {
    // One family per histogram (`_sum`/`_count` under `admission_duration_seconds`), its HELP
    // and TYPE once before its samples, as client_golang serves it.
    let mut by_family: BTreeMap<&str, Vec<&S>> = BTreeMap::new();
    for s in samples {
        let family = ["_sum", "_count"]
            .iter()
            .find_map(|x| s.0.strip_suffix(x))
            .filter(|f| metrics::FAMILIES.contains(f))
            .unwrap_or(s.0);
        by_family.entry(family).or_default().push(s);
    }
    let mut out = String::new();
    for (f, ss) in by_family {
        let kind = if ss.iter().any(|s| s.0 != f) {
            "histogram"
        } else {
            "counter"
        };
        out.push_str(&format!("# HELP {f} [ALPHA] fixture\n# TYPE {f} {kind}\n"));
        for s in ss {
            let labels: Vec<String> = s.1.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            out.push_str(&format!("{}{{{}}} {}\n", s.0, labels.join(","), s.2));
        }
    }
    out.push_str(
        "# TYPE apiserver_request_total counter\napiserver_request_total{code=\"201\"} 9\n",
    );
    out
}

fn window(before: &[S], after: &[S]) -> Value {
    let read = |s: &[S]| MetricsRead {
        at: "2026-11-29T10:00:00.000Z".into(),
        lines: metrics::admission_lines(&text(s)),
    };
    serde_json::to_value(AdmissionMetrics::from_reads(
        Ok(read(before)),
        Ok(read(after)),
    ))
    .unwrap()
}

/// Counters before any act: earlier traffic on the lab's and Kyverno's webhooks.
fn base() -> Vec<S> {
    vec![
        calls(FAIL, "200", false, 4.0),
        calls(OTHER, "200", false, 7.0),
        rej(FAIL, "no_error", "400", 1.0),
    ]
}

/// What the API server counts for the `pass/` fixtures' requests, per act: the samples before
/// and after.
fn consistent(lab: Lab, act: u8) -> (Vec<S>, Vec<S>) {
    let b = base();
    let plus = |extra: Vec<S>| {
        let mut v = base();
        v.extend(extra);
        v
    };
    let after = match (lab, act) {
        // good stored, bad denied
        (_, 3) => plus(vec![
            calls(FAIL, "200", false, 5.0),
            calls(FAIL, "400", true, 1.0),
            rej(FAIL, "no_error", "400", 2.0),
            calls(OTHER, "200", false, 9.0),
        ]),
        // three timeouts under Fail (frozen good/bad, one after resume), one deny
        (Lab::B, 5) => plus(vec![
            calls(FAIL, "503", true, 3.0),
            rej(FAIL, "calling_webhook_error", "503", 3.0),
            calls(FAIL, "400", true, 1.0),
            rej(FAIL, "no_error", "400", 2.0),
            calls(OTHER, "200", false, 10.0),
        ]),
        // under Ignore: healthy deny, two frozen requests fail open, one deny after resume
        (Lab::B, 6) => plus(vec![
            calls(IGNORE, "400", true, 2.0),
            rej(IGNORE, "no_error", "400", 2.0),
            calls(IGNORE, "503", false, 2.0),
            fail_open(IGNORE, 2.0),
        ]),
        (Lab::B, 7) => plus(vec![
            calls(IGNORE, "400", true, 1.0),
            rej(IGNORE, "no_error", "400", 1.0),
        ]),
        // registration absent: the policy's webhook is not called; Kyverno's others may be
        (Lab::A, 5) => plus(vec![calls(OTHER, "200", false, 9.0)]),
        // one dry-run probe before the registration (no call), one denied
        (Lab::A, 6) => plus(vec![
            calls(FAIL, "400", true, 1.0),
            rej(FAIL, "no_error", "400", 2.0),
        ]),
        // dry-run good admitted, bad denied
        (Lab::A, 7) => plus(vec![
            calls(FAIL, "200", false, 5.0),
            calls(FAIL, "400", true, 1.0),
            rej(FAIL, "no_error", "400", 2.0),
        ]),
        _ => unreachable!(),
    };
    (b, after)
}

fn tree(lab: Lab) -> BTreeMap<String, Value> {
    let mut files = common::read_tree(&common::fixtures_dir().join(lab.as_str()).join("pass"));
    for act in metric_acts(lab) {
        let (before, after) = consistent(lab, act);
        // The histogram beside the counters, in the same exposition: before the act, the base's
        // 4 calls of 5 ms each; after it, the act's calls added.
        let after_samples: Vec<S> = {
            let f = facts(&mut files, act).clone();
            durations(lab, act, &f)
        };
        let mut m = window(
            &[before, duration(FAIL, 4.0, 0.02).to_vec()].concat(),
            &[after, after_samples].concat(),
        );
        // Read when the act began and when it ended, as the act reads them.
        let ev = &files[&format!("evidence/{act:02}.json")];
        m["before"]["at"] = ev["started_at"].clone();
        m["after"]["at"] = ev["finished_at"].clone();
        facts(&mut files, act)[metrics::FACTS_KEY] = m;
    }
    files
}

/// The acts whose evidence carries admission metrics (the registry's `metrics` flag).
fn metric_acts(lab: Lab) -> Vec<u8> {
    lab::acts::of(lab)
        .iter()
        .filter(|s| s.metrics)
        .map(|s| s.number)
        .collect()
}

fn facts(files: &mut BTreeMap<String, Value>, act: u8) -> &mut Value {
    &mut files.get_mut(&format!("evidence/{act:02}.json")).unwrap()["facts"]
}

fn grade_tree(lab: Lab, act: u8, files: &BTreeMap<String, Value>) -> Findings {
    let tmp = tempfile::tempdir().unwrap();
    common::write_tree(tmp.path(), files);
    grade::grade(lab, act, &GradeInput::load(&Workdir::new(tmp.path()), lab))
}

/// The findings about metrics (subject names `admission_metrics`).
fn metric_findings(f: &Findings) -> Vec<String> {
    f.findings
        .iter()
        .filter(|x| x.subject.contains(metrics::FACTS_KEY))
        .map(|x| x.message(Lang::En))
        .collect()
}

#[test]
fn consistent_metrics_pass_every_rule_in_both_labs() {
    for lab in [Lab::A, Lab::B] {
        let files = tree(lab);
        for act in metric_acts(lab) {
            let with = grade_tree(lab, act, &files);
            assert!(
                metric_findings(&with).is_empty() && with.notes.is_empty(),
                "{lab:?} act {act}: {}",
                lab::messages::findings(Lang::En, &with)
            );
            // The rules ran: more checks than without metrics (where a note stands instead).
            let mut without = files.clone();
            facts(&mut without, act)
                .as_object_mut()
                .unwrap()
                .remove(metrics::FACTS_KEY);
            let bare = grade_tree(lab, act, &without);
            assert!(
                with.checks > bare.checks + 2,
                "{lab:?} act {act}: {} vs {}",
                with.checks,
                bare.checks
            );
            assert!(
                bare.notes
                    .iter()
                    .any(|n| n.code == Code::MetricsNotObserved),
                "{lab:?} act {act}"
            );
        }
    }
}

/// Replaces act `act`'s metrics with a window from `base()` to `after` and returns the findings.
fn with_after(lab: Lab, act: u8, after: Vec<S>) -> Findings {
    let mut files = tree(lab);
    facts(&mut files, act)[metrics::FACTS_KEY] = window(&base(), &after);
    grade_tree(lab, act, &files)
}

fn assert_flagged(f: &Findings, rule: &str, names: &[&str]) {
    let hit = f
        .findings
        .iter()
        .find(|x| x.code == Code::MetricsContradicted && x.subject.ends_with(rule));
    let Some(hit) = hit else {
        panic!(
            "expected metrics-contradicted for {rule}: {}",
            lab::messages::findings(Lang::En, f)
        )
    };
    // A disagreement names both records: the series and the requests.
    for n in names {
        assert!(hit.detail.contains(n), "{n} not in {}", hit.detail);
    }
}

#[test]
fn fewer_calling_webhook_errors_than_fail_timeouts_is_flagged() {
    // Only 2 of the 3 timed-out requests counted as calling_webhook_error rejections.
    let mut after = base();
    after.extend([
        calls(FAIL, "503", true, 3.0),
        rej(FAIL, "calling_webhook_error", "503", 2.0),
        calls(FAIL, "400", true, 1.0),
        rej(FAIL, "no_error", "400", 2.0),
    ]);
    let f = with_after(Lab::B, 5, after);
    assert_flagged(
        &f,
        "calling-webhook-error",
        &[
            "calling_webhook_error",
            "kca-freeze5-good-a50001 (webhook-timeout)",
            "kca-freeze5-bad-b50002 (webhook-timeout)",
        ],
    );
}

#[test]
fn ignore_stores_without_fail_open_counts_are_flagged() {
    // The two frozen target pods were stored, but the API server counted no fail-open.
    let mut after = base();
    after.extend([
        calls(IGNORE, "400", true, 2.0),
        rej(IGNORE, "no_error", "400", 2.0),
        calls(IGNORE, "200", false, 2.0),
    ]);
    let f = with_after(Lab::B, 6, after);
    assert_flagged(
        &f,
        "fail-open",
        &[
            metrics::FAIL_OPEN_COUNT,
            "kca-freeze6-good-a60001 (stored)",
            "kca-freeze6-bad-b60002 (stored)",
        ],
    );
}

#[test]
fn a_deny_without_a_no_error_rejection_is_flagged() {
    // Act 7's deny, but the API server counted the call as allowed.
    let mut after = base();
    after.extend([calls(IGNORE, "200", false, 1.0)]);
    let f = with_after(Lab::B, 7, after);
    assert_flagged(
        &f,
        "explicit-deny",
        &["no_error", "kca-recovery-bad-f70001 (explicit-deny)"],
    );
}

#[test]
fn a_call_to_the_policy_webhook_while_unregistered_is_flagged() {
    // Lab A act 5 says the registration was absent, yet the policy's webhook was called.
    let mut after = base();
    after.extend([calls(FAIL, "200", false, 5.0)]);
    let f = with_after(Lab::A, 5, after);
    assert_flagged(
        &f,
        "no-call-while-unregistered",
        &[FAIL, "kca-scale-bad-a50001 (stored)"],
    );
}

#[test]
fn a_missing_call_for_a_target_request_is_flagged() {
    // Lab A act 7: two dry-run requests in the target namespace, one call counted.
    let mut after = base();
    after.extend([
        calls(FAIL, "400", true, 1.0),
        rej(FAIL, "no_error", "400", 2.0),
    ]);
    let f = with_after(Lab::A, 7, after);
    assert_flagged(
        &f,
        "one-call-per-target-request",
        &[metrics::REQUEST_TOTAL, "kca-dryrun-good-a70001"],
    );
}

#[test]
fn deltas_that_disagree_with_the_raw_lines_are_flagged() {
    let mut files = tree(Lab::B);
    let m = &mut facts(&mut files, 3)[metrics::FACTS_KEY];
    m["deltas"][0]["delta"] = json!(7.0);
    let f = grade_tree(Lab::B, 3, &files);
    assert!(
        f.findings
            .iter()
            .any(|x| x.code == Code::RawMismatch && x.subject.contains(metrics::FACTS_KEY)),
        "{}",
        lab::messages::findings(Lang::En, &f)
    );
}

#[test]
fn a_counter_that_went_down_is_flagged() {
    let after = vec![
        calls(FAIL, "200", false, 1.0),
        calls(OTHER, "200", false, 7.0),
        rej(FAIL, "no_error", "400", 2.0),
        calls(FAIL, "400", true, 1.0),
    ];
    let f = with_after(Lab::B, 3, after);
    assert!(
        f.findings.iter().any(|x| x.code == Code::MetricsContradicted
            && x.detail.contains("counters went down")),
        "{}",
        lab::messages::findings(Lang::En, &f)
    );
}

#[test]
fn unreadable_metrics_are_a_note_with_the_reason_not_a_silent_pass() {
    let mut files = tree(Lab::B);
    facts(&mut files, 5)[metrics::FACTS_KEY] = json!({
        "source": "GET /metrics (kube client, the act's credential)",
        "before": null, "after": null, "deltas": [], "webhooks_seen": [],
        "unavailable": {"at": "2026-11-29T10:00:00.000Z", "http_status": 403,
            "reason": "GET /metrics answered 403: forbidden: User \"student\" cannot get path \"/metrics\""}
    });
    let f = grade_tree(Lab::B, 5, &files);
    assert!(metric_findings(&f).is_empty(), "{f:?}");
    let note = f
        .notes
        .iter()
        .find(|n| n.code == Code::MetricsNotObserved)
        .expect("a note");
    assert!(note.detail.contains("403"), "{}", note.detail);
    assert!(lab::messages::findings(Lang::En, &f).contains("note [metrics-not-observed]"));
}

#[test]
fn the_recorded_run_predates_metrics_and_gets_notes_not_failures() {
    let rec = common::recorded::Recording::open("recorded/b-20261129T153816Z");
    let (_tmp, gi) = rec.copy_with(|_| {});
    for f in rec.grade(&gi) {
        assert!(f.passed(), "{}", lab::messages::findings(Lang::En, &f));
        let noted = f.notes.iter().any(|n| n.code == Code::MetricsNotObserved);
        assert_eq!(
            noted,
            metric_acts(Lab::B).contains(&f.act),
            "act {}: {:?}",
            f.act,
            f.notes
        );
    }
}
