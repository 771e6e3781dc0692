//! The API server's own account of admission webhook calls: its `/metrics` series, read before an
//! act's first request and after its last, kept as raw text lines plus parsed deltas.
//!
//! Series kept (kube-apiserver `staging/src/k8s.io/apiserver/pkg/admission/metrics/metrics.go`,
//! namespace `apiserver`, subsystem `admission`; fail-open counting in the validating `dispatcher.go`):
//! - `apiserver_admission_webhook_rejection_count{name,type,operation,error_type,rejection_code}`:
//!   `error_type="calling_webhook_error"` (code 503 for a transport error such as a timeout) when a
//!   call fails under failurePolicy Fail; `error_type="no_error"`, `rejection_code` the deny's HTTP
//!   status (400 or 403, [`crate::classify::EXPLICIT_DENY_STATUSES`]) for an explicit deny;
//! - `apiserver_admission_webhook_fail_open_count{name,type}`: a failed call admitted under Ignore;
//! - `apiserver_admission_webhook_request_total{name,type,operation,code,rejected}`: every call;
//! - `apiserver_admission_webhook_admission_duration_seconds` (histogram; only its `_sum` and
//!   `_count` lines are kept, the `_bucket` lines are dropped to keep evidence small).
//!
//! The series are cumulative since the API server started and cover every webhook (Kyverno's other
//! webhooks too), so an act records deltas for every webhook name seen, never absolute values.
//! `/metrics` is read with the act's own credential through the kube client; where it cannot be
//! read (RBAC 403, a proxy, no answer) the record says why ([`AdmissionMetrics::unavailable`]) and
//! the graders report the cross-checks as not observed.
//!
//! Parsing uses the `prometheus-parse` crate; [`deltas`] is pure and is re-run by the graders on
//! the recorded lines. The reads themselves (`read`, `Window`, `current`) are in the `lab` crate's
//! `metrics` module, which re-exports this one.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The key under an act's `facts` that holds its [`AdmissionMetrics`].
pub use crate::evidence::METRICS_KEY as FACTS_KEY;
/// The path read.
pub const METRICS_PATH: &str = "/metrics";

/// Rejections by an admission webhook (counter).
pub const REJECTION_COUNT: &str = "apiserver_admission_webhook_rejection_count";
/// Failed webhook calls admitted under failurePolicy Ignore (counter).
pub const FAIL_OPEN_COUNT: &str = "apiserver_admission_webhook_fail_open_count";
/// Every admission webhook call (counter).
pub const REQUEST_TOTAL: &str = "apiserver_admission_webhook_request_total";
/// Admission webhook latency histogram, seconds (its `_count` and `_sum` are kept).
pub const DURATION: &str = "apiserver_admission_webhook_admission_duration_seconds";
/// The metric families kept.
pub const FAMILIES: &[&str] = &[REJECTION_COUNT, FAIL_OPEN_COUNT, REQUEST_TOTAL, DURATION];

/// Kyverno's own counter of the admission requests one replica served (lab C reads it from each
/// replica through the API server's pod proxy, to see which replica answered).
pub const KYVERNO_REQUESTS: &str = "kyverno_admission_requests_total";

/// The sum of [`KYVERNO_REQUESTS`] over every series with `resource_kind="Pod"` in a Prometheus
/// text exposition, a count. No such series is 0: Kyverno's counter gets a series with its first
/// increment, so a replica that has not served a pod request since it started has none (seen on
/// the two new replicas of lab C's act 3, 2026-12-01). `None` when the sum is not a whole
/// non-negative number.
pub fn kyverno_pod_requests(text: &str) -> Option<u64> {
    let mut sum = Some(0.0);
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(KYVERNO_REQUESTS) else {
            continue;
        };
        if !rest.starts_with('{') || !rest.contains("resource_kind=\"Pod\"") {
            continue;
        }
        let value = rest
            .rsplit_once('}')
            .and_then(|(_, v)| v.split_whitespace().next())
            .and_then(|v| v.parse::<f64>().ok());
        if let Some(v) = value {
            sum = sum.map(|s| s + v);
        }
    }
    sum.filter(|s: &f64| s.is_finite() && *s >= 0.0 && s.fract() == 0.0)
        .map(|s| s as u64)
}

/// One read of `/metrics`: the admission webhook lines, verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsRead {
    /// When the answer had been read, RFC 3339 UTC (ms).
    pub at: String,
    /// The `# HELP`/`# TYPE` lines and samples of [`FAMILIES`] (histogram `_bucket` lines
    /// excluded), verbatim and in the order served.
    pub lines: Vec<String>,
}

/// Why `/metrics` could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    /// When it was tried, RFC 3339 UTC (ms).
    pub at: String,
    /// The HTTP status when one came (e.g. 403 from RBAC).
    pub http_status: Option<u16>,
    /// The reason: the answer's first 500 characters, or the transport error.
    pub reason: String,
}

/// The change of one series between two reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesDelta {
    /// Sample name, e.g. `apiserver_admission_webhook_rejection_count` or
    /// `apiserver_admission_webhook_admission_duration_seconds_sum`.
    pub metric: String,
    /// The sample's labels (`name` is the webhook's name).
    pub labels: BTreeMap<String, String>,
    /// Value at the first read (0 when the series did not exist yet).
    pub before: f64,
    /// Value at the second read.
    pub after: f64,
    /// `after - before` (counts; seconds for `_sum`). Negative means a counter reset (the API
    /// server restarted in between).
    pub delta: f64,
}

/// The API server's admission webhook series around one group of requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionMetrics {
    /// What was read: `GET /metrics` through the kube client with the act's credential.
    pub source: String,
    /// The read before the group's first request.
    pub before: Option<MetricsRead>,
    /// The read after its last request.
    pub after: Option<MetricsRead>,
    /// Every series whose value changed, sorted by metric then labels ([`deltas`] of the two
    /// reads' lines).
    pub deltas: Vec<SeriesDelta>,
    /// Every webhook name (`name` label) present in either read, sorted.
    pub webhooks_seen: Vec<String>,
    /// Why there are no deltas (a read failed); `None` when both reads worked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<Unavailable>,
}

/// The kept lines of a `/metrics` text: `# HELP`/`# TYPE` of [`FAMILIES`] and their samples except
/// histogram buckets, verbatim.
pub fn admission_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| {
            let name = if let Some(rest) = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "))
            {
                rest.split_whitespace().next().unwrap_or("")
            } else if line.starts_with('#') {
                return false;
            } else {
                line.split(['{', ' ']).next().unwrap_or("")
            };
            !name.ends_with("_bucket")
                && FAMILIES.iter().any(|f| {
                    name == *f || name == format!("{f}_sum") || name == format!("{f}_count")
                })
        })
        .map(str::to_owned)
        .collect()
}

/// A parsed read: (sample name, labels) → value.
pub type Values = BTreeMap<(String, BTreeMap<String, String>), f64>;

/// Parses kept lines (Prometheus text format, `prometheus-parse`) into values. Histogram and
/// summary samples are skipped (their buckets are not kept); `_sum`/`_count` are plain samples.
pub fn parse(lines: &[String]) -> Values {
    let scrape = match prometheus_parse::Scrape::parse(lines.iter().map(|l| Ok(l.clone()))) {
        Ok(s) => s,
        // The iterator never yields an error, so parse cannot fail on I/O.
        Err(_) => return Values::new(),
    };
    let mut out = Values::new();
    for s in scrape.samples {
        let v = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => continue,
        };
        let labels: BTreeMap<String, String> = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert((s.metric, labels), v);
    }
    out
}

/// The series that changed between `before` and `after` (a series absent before counts from 0),
/// sorted by metric then labels. Pure.
pub fn deltas(before: &[String], after: &[String]) -> Vec<SeriesDelta> {
    let (b, a) = (parse(before), parse(after));
    let keys: BTreeSet<_> = b.keys().chain(a.keys()).cloned().collect();
    keys.into_iter()
        .filter_map(|k| {
            let before = b.get(&k).copied().unwrap_or(0.0);
            let after = a.get(&k).copied().unwrap_or(0.0);
            let delta = after - before;
            (delta != 0.0).then_some(SeriesDelta {
                metric: k.0,
                labels: k.1,
                before,
                after,
                delta,
            })
        })
        .collect()
}

/// Every `name` label in `lines`, sorted.
pub fn webhook_names(lines: &[String]) -> BTreeSet<String> {
    parse(lines)
        .keys()
        .filter_map(|(_, l)| l.get("name").cloned())
        .collect()
}

/// Sum of the deltas of `metric` for webhook `webhook` whose labels include every pair of `with`.
pub fn sum_delta(d: &[SeriesDelta], metric: &str, webhook: &str, with: &[(&str, &str)]) -> f64 {
    d.iter()
        .filter(|s| {
            s.metric == metric
                && s.labels.get("name").map(String::as_str) == Some(webhook)
                && with
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.delta)
        .sum()
}

impl AdmissionMetrics {
    /// Builds the record from two reads (either may have failed). Pure.
    pub fn from_reads(
        before: Result<MetricsRead, Unavailable>,
        after: Result<MetricsRead, Unavailable>,
    ) -> AdmissionMetrics {
        let source = format!("GET {METRICS_PATH} (kube client, the act's credential)");
        match (before, after) {
            (Ok(b), Ok(a)) => {
                let mut seen = webhook_names(&b.lines);
                seen.extend(webhook_names(&a.lines));
                AdmissionMetrics {
                    source,
                    deltas: deltas(&b.lines, &a.lines),
                    webhooks_seen: seen.into_iter().collect(),
                    before: Some(b),
                    after: Some(a),
                    unavailable: None,
                }
            }
            (b, a) => {
                let why = match (&b, &a) {
                    (Err(u), _) | (_, Err(u)) => u.clone(),
                    _ => unreachable!("both reads worked"),
                };
                AdmissionMetrics {
                    source,
                    before: b.ok(),
                    after: a.ok(),
                    deltas: Vec::new(),
                    webhooks_seen: Vec::new(),
                    unavailable: Some(why),
                }
            }
        }
    }

    /// Puts this record under [`FACTS_KEY`] of `facts` when `facts` is a JSON object (partial
    /// facts of an interrupted act may be `null`; then nothing is added).
    pub fn attach(&self, facts: &mut serde_json::Value) {
        if let (Some(obj), Ok(v)) = (facts.as_object_mut(), serde_json::to_value(self)) {
            obj.insert(FACTS_KEY.to_owned(), v);
        }
    }
}

/// Copies [`FACTS_KEY`] from `from` (e.g. an act's partial facts) into `to` when both are objects.
pub fn carry(from: &serde_json::Value, to: &mut serde_json::Value) {
    if let (Some(m), Some(obj)) = (from.get(FACTS_KEY), to.as_object_mut()) {
        obj.insert(FACTS_KEY.to_owned(), m.clone());
    }
}

/// One line for an act's summary, in both languages (words in [`crate::messages::act`]): the
/// non-zero counter deltas (`_sum` left out) as `metric{name=…,…} +N`, or why they were not
/// observed.
pub fn summary_line(m: &AdmissionMetrics) -> crate::text::Line {
    use crate::messages::act as words;
    if let Some(u) = &m.unavailable {
        return words::metrics_not_observed(&u.reason);
    }
    let parts: Vec<String> = m
        .deltas
        .iter()
        .filter(|d| !d.metric.ends_with("_sum"))
        .map(|d| {
            let labels: Vec<String> = d.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let short = d.metric.trim_start_matches("apiserver_admission_webhook_");
            format!("{short}{{{}}} {:+}", labels.join(","), d.delta)
        })
        .collect();
    if parts.is_empty() {
        words::METRICS_NO_CHANGE.into()
    } else {
        words::metrics_changed(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn kyverno_pod_requests_sums_the_pod_series_only() {
        let text = "# TYPE kyverno_admission_requests_total counter\n\
kyverno_admission_requests_total{request_operation=\"CREATE\",resource_kind=\"Pod\",resource_namespace=\"a\"} 4\n\
kyverno_admission_requests_total{request_operation=\"CREATE\",resource_kind=\"Pod\",resource_namespace=\"b\"} 7\n\
kyverno_admission_requests_total{request_operation=\"CREATE\",resource_kind=\"ConfigMap\"} 100\n\
kyverno_admission_requests_total_other{resource_kind=\"Pod\"} 9\n";
        assert_eq!(kyverno_pod_requests(text), Some(11));
        assert_eq!(kyverno_pod_requests("# nothing\n"), Some(0));
        let half = "kyverno_admission_requests_total{resource_kind=\"Pod\"} 0.5\n";
        assert_eq!(kyverno_pod_requests(half), None);
    }

    use super::*;

    const FAIL: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";

    fn text(rejections: u32, requests: u32) -> String {
        format!(
            r#"# HELP apiserver_admission_webhook_rejection_count [ALPHA] Admission webhook rejection count
# TYPE apiserver_admission_webhook_rejection_count counter
apiserver_admission_webhook_rejection_count{{error_type="calling_webhook_error",name="{FAIL}",operation="CREATE",rejection_code="503",type="validating"}} {rejections}
# HELP apiserver_admission_webhook_request_total [ALPHA] Admission webhook request total
# TYPE apiserver_admission_webhook_request_total counter
apiserver_admission_webhook_request_total{{code="503",name="{FAIL}",operation="CREATE",rejected="true",type="validating"}} {requests}
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{{name="{FAIL}",operation="CREATE",rejected="true",type="validating",le="0.005"}} 0
apiserver_admission_webhook_admission_duration_seconds_sum{{name="{FAIL}",operation="CREATE",rejected="true",type="validating"}} 6.01
apiserver_admission_webhook_admission_duration_seconds_count{{name="{FAIL}",operation="CREATE",rejected="true",type="validating"}} {requests}
# TYPE apiserver_request_total counter
apiserver_request_total{{code="201",resource="pods",verb="POST"}} 12
"#
        )
    }

    #[test]
    fn keeps_only_admission_webhook_lines_without_buckets() {
        let lines = admission_lines(&text(0, 0));
        assert_eq!(lines.len(), 9, "{lines:#?}");
        assert!(lines.iter().all(|l| !l.contains("_bucket")));
        assert!(lines.iter().all(|l| !l.contains("apiserver_request_total")));
    }

    #[test]
    fn deltas_count_from_zero_and_skip_unchanged_series() {
        let before = admission_lines(&text(1, 3));
        let after = admission_lines(&text(3, 5));
        let d = deltas(&before, &after);
        assert_eq!(
            sum_delta(
                &d,
                REJECTION_COUNT,
                FAIL,
                &[("error_type", "calling_webhook_error")]
            ),
            2.0
        );
        assert_eq!(sum_delta(&d, REQUEST_TOTAL, FAIL, &[]), 2.0);
        assert_eq!(sum_delta(&d, &format!("{DURATION}_count"), FAIL, &[]), 2.0);
        // _sum did not change: not listed.
        assert!(d.iter().all(|s| s.metric != format!("{DURATION}_sum")));
        let from_nothing = deltas(&[], &after);
        assert_eq!(sum_delta(&from_nothing, REJECTION_COUNT, FAIL, &[]), 3.0);
        assert_eq!(
            webhook_names(&after).into_iter().collect::<Vec<_>>(),
            vec![FAIL.to_owned()]
        );
    }

    #[test]
    fn a_failed_read_is_recorded_with_its_reason() {
        let ok = MetricsRead {
            at: "t".into(),
            lines: admission_lines(&text(0, 0)),
        };
        let denied = Unavailable {
            at: "t".into(),
            http_status: Some(403),
            reason: "GET /metrics answered 403: forbidden".into(),
        };
        let m = AdmissionMetrics::from_reads(Ok(ok), Err(denied.clone()));
        assert_eq!(m.unavailable, Some(denied));
        assert!(m.deltas.is_empty() && m.after.is_none() && m.before.is_some());
        let mut facts = serde_json::json!({"x": 1});
        m.attach(&mut facts);
        assert_eq!(facts[FACTS_KEY]["unavailable"]["http_status"], 403);
        let mut null = serde_json::Value::Null;
        m.attach(&mut null);
        assert!(null.is_null());
    }

    #[test]
    fn the_summary_line_follows_the_language_and_keeps_series_verbatim() {
        use crate::text::Lang;
        let read = |n| MetricsRead {
            at: "t".into(),
            lines: admission_lines(&text(n, n)),
        };
        let moved = summary_line(&AdmissionMetrics::from_reads(Ok(read(0)), Ok(read(2))));
        let series = format!(
            "rejection_count{{error_type=calling_webhook_error,name={FAIL},operation=CREATE,rejection_code=503,type=validating}} +2"
        );
        for lang in [Lang::Ja, Lang::En] {
            assert!(moved.get(lang).contains(&series), "{lang:?}: {moved:?}");
        }
        assert!(
            moved.en.starts_with("admission webhook metrics: "),
            "{moved:?}"
        );
        assert!(
            moved.ja.starts_with("admission webhook メトリクス: "),
            "{moved:?}"
        );
        let still = summary_line(&AdmissionMetrics::from_reads(Ok(read(1)), Ok(read(1))));
        assert_ne!(still.ja, still.en);
        let denied = Unavailable {
            at: "t".into(),
            http_status: Some(403),
            reason: "GET /metrics answered 403".into(),
        };
        let gone = summary_line(&AdmissionMetrics::from_reads(Ok(read(0)), Err(denied)));
        assert!(
            gone.ja.contains("観測できません") && gone.ja.contains("403"),
            "{gone:?}"
        );
        assert!(
            gone.en.contains("not observed") && gone.en.contains("403"),
            "{gone:?}"
        );
    }
}
