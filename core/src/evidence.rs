//! The evidence model shared by acts (which write it) and graders (which read it).
//!
//! Shape of `evidence/NN.json` (see `docs/labs.md`, "Environment contract"):
//! `{schema_version, lab, act, status, started_at, finished_at, inputs: {file: digest},
//! facts: {...}, raw: [...], versions?}` (`versions`: [`RunningVersions`], added later, optional).
//! Timestamps are RFC 3339 UTC with milliseconds; durations are integers in milliseconds and
//! their field names end in `_ms`.
//!
//! **Raw first:** every API answer is kept verbatim in [`RequestRecord::raw_response`]
//! (or in `raw`) and classified afterwards; `stored` is never inferred from a 201 alone:
//! the follow-up GET ([`GetResult`]) must find the object and record its UID.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The state of one act's evidence file; defined beside [`crate::error::LabError`], which names it.
pub use crate::error::ActStatus;

/// Version of the evidence file format; bump it when a field changes meaning.
///
/// Added keys that older evidence lacks do not bump it: `facts.admission_metrics`
/// ([`METRICS_KEY`]) and `facts.admission_audit` ([`AUDIT_KEY`]) of acts 3, 5, 6, 7; evidence
/// without them still grades, with a `metrics-not-observed` / `audit-not-observed` note.
pub const SCHEMA_VERSION: u32 = 1;

/// The key under an act's `facts` that holds the API server's audit events of the act's requests
/// (`audit::AdmissionAudit`, which re-exports it as `audit::FACTS_KEY`).
pub const AUDIT_KEY: &str = "admission_audit";

/// The key under an act's `facts` that holds the API server's admission metrics around the act
/// (`metrics::AdmissionMetrics`, which re-exports it as `metrics::FACTS_KEY`).
pub const METRICS_KEY: &str = "admission_metrics";

/// Which lab an evidence file or input belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Lab {
    /// Lab A: graceful scale-down, the webhook registration disappears.
    A,
    /// Lab B: freeze the controller process, failurePolicy Fail vs Ignore.
    B,
    /// Lab C: three admission-controller replicas; freeze the leader, then a follower.
    C,
}

impl Lab {
    /// The lab's one-letter wire name, `a`, `b` or `c`: the same in evidence (`lab`), directory names
    /// (`fixtures/<lab>`, `lab-artifacts/<run>/<lab>`), `--lab` and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Lab::A => "a",
            Lab::B => "b",
            Lab::C => "c",
        }
    }
}

impl std::fmt::Display for Lab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `evidence/NN.json` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// [`SCHEMA_VERSION`] at the time of writing.
    pub schema_version: u32,
    /// The lab this act belongs to.
    pub lab: Lab,
    /// Act number, 1 to 8.
    pub act: u8,
    /// `completed` or `interrupted`.
    pub status: ActStatus,
    /// When the act started, RFC 3339 UTC (ms).
    pub started_at: String,
    /// When the act finished or was interrupted, RFC 3339 UTC (ms).
    pub finished_at: String,
    /// Student input file name → its canonical digest (lowercase hex SHA-256 of the RFC 8785 form).
    pub inputs: BTreeMap<String, String>,
    /// What the act observed, in the act's own typed shape (see `facts` types in the act modules).
    pub facts: serde_json::Value,
    /// Raw API answers and other verbatim material, in the order received.
    pub raw: Vec<serde_json::Value>,
    /// Why the act was interrupted (absent when completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interruption: Option<String>,
    /// The versions the act ran on, read just before it started (absent in evidence written
    /// before this field existed; such evidence still reads and grades the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<RunningVersions>,
}

/// What an act ran on, read from the live cluster just before the act started: one `GET
/// /version` and one GET of the Kyverno admission controller's Deployment. Outside `facts`: no
/// grader reads it; `cargo xtask matrix` compares it across a run's acts and cells (`docs/matrix.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunningVersions {
    /// The API server's `/version` answer verbatim (`gitVersion`, `goVersion`, …); `null` when
    /// it could not be read (see `errors`).
    pub apiserver_version: serde_json::Value,
    /// The image of container `kyverno` of Deployment `kyverno/kyverno-admission-controller`
    /// as stored (`null`: no such Deployment or container).
    pub kyverno_image: Option<String>,
    /// That Deployment's `helm.sh/chart` label, e.g. `kyverno-3.9.1` (`null`: absent).
    pub kyverno_chart: Option<String>,
    /// When the Deployment's answer arrived, RFC 3339 UTC (ms).
    pub read_at: String,
    /// Why a read failed, verbatim (absent when both answered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl RunningVersions {
    /// The API server's `gitVersion` (e.g. `v1.35.8`), when `/version` answered with one.
    pub fn git_version(&self) -> Option<&str> {
        self.apiserver_version.get("gitVersion")?.as_str()
    }
}

/// Outcome of one request, classified from the raw API answer plus the follow-up GET.
///
/// The strings are the ones in `docs/labs.md` ("Request outcomes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// 201 and a later GET by name found the object with a UID.
    Stored,
    /// An admission webhook denied the request, and the message carries the policy's marker.
    ExplicitDeny,
    /// Calling the webhook failed with `context deadline exceeded`.
    WebhookTimeout,
    /// Calling the webhook failed with `connection refused`, or an egress proxy (k3s's tunnel
    /// server) could not dial the webhook's endpoint (`proxy error from … while dialing …, code
    /// 502|503`, see `classify`).
    ConnectionRefused,
    /// Calling the webhook failed on a DNS lookup (`no such host`).
    DnsError,
    /// Calling the webhook failed because the service had no endpoints.
    NoEndpoints,
    /// 409 AlreadyExists: never a policy decision.
    AlreadyExists,
    /// A server-side dry-run request was admitted (201) and the follow-up GET found nothing:
    /// validated by admission, not stored.
    DryRunAdmitted,
    /// Anything else; the raw answer is kept verbatim.
    OtherError,
}

impl Outcome {
    /// The outcome's wire name, e.g. `webhook-timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Stored => "stored",
            Outcome::ExplicitDeny => "explicit-deny",
            Outcome::WebhookTimeout => "webhook-timeout",
            Outcome::ConnectionRefused => "connection-refused",
            Outcome::DnsError => "dns-error",
            Outcome::NoEndpoints => "no-endpoints",
            Outcome::AlreadyExists => "already-exists",
            Outcome::DryRunAdmitted => "dry-run-admitted",
            Outcome::OtherError => "other-error",
        }
    }
}

/// Result of the separate GET by name made after every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetResult {
    /// Whether the GET found the object (404 → false).
    pub exists: bool,
    /// The object's `metadata.uid`, when it exists.
    pub uid: Option<String>,
    /// The pod's `status.phase` at the time of the GET, when it exists.
    pub phase: Option<String>,
    /// When the GET was answered, RFC 3339 UTC (ms).
    pub at: String,
}

/// One request sent to the API server, with its verbatim answer and classification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    /// Object name; always fresh and unique within the lab.
    pub name: String,
    /// Namespace of the object.
    pub namespace: String,
    /// Labels sent on the object.
    pub labels: BTreeMap<String, String>,
    /// Whether this was a server-side dry-run (`dryRun=All`).
    pub dry_run: bool,
    /// When the request was sent, RFC 3339 UTC (ms).
    pub sent_at: String,
    /// When the answer arrived, RFC 3339 UTC (ms).
    pub answered_at: String,
    /// `answered_at - sent_at`, milliseconds.
    pub elapsed_ms: u64,
    /// HTTP status code of the answer (201 on success).
    pub http_status: u16,
    /// `Status.reason` of an error answer (e.g. `InternalError`, `BadRequest`, `AlreadyExists`).
    pub reason: Option<String>,
    /// `Status.message` of an error answer, verbatim.
    pub message: Option<String>,
    /// The classified outcome.
    pub outcome: Outcome,
    /// The follow-up GET by name (for a dry-run request too, where it must find nothing).
    pub get: GetResult,
    /// The raw response body (the created object, or the `Status` object), verbatim.
    pub raw_response: serde_json::Value,
}

/// Every [`RequestRecord`] under `roots` (at any depth; the metrics and audit records skipped),
/// once per name, sorted by name.
pub fn request_records(roots: &[&serde_json::Value]) -> BTreeMap<String, RequestRecord> {
    fn collect(v: &serde_json::Value, out: &mut BTreeMap<String, RequestRecord>) {
        match v {
            serde_json::Value::Object(o) => {
                if o.contains_key("outcome")
                    && o.contains_key("raw_response")
                    && let Ok(r) = serde_json::from_value::<RequestRecord>(v.clone())
                {
                    out.entry(r.name.clone()).or_insert(r);
                    return;
                }
                for (k, x) in o {
                    if k != AUDIT_KEY && k != METRICS_KEY {
                        collect(x, out);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for r in roots {
        collect(r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minimal() -> serde_json::Value {
        serde_json::json!({
            "schema_version": 1, "lab": "b", "act": 1, "status": "completed",
            "started_at": "2026-12-01T18:00:00.000Z", "finished_at": "2026-12-01T18:00:01.000Z",
            "inputs": {}, "facts": {}, "raw": []
        })
    }

    #[test]
    fn evidence_without_versions_reads_as_before() {
        let ev: Evidence = serde_json::from_value(minimal()).unwrap();
        assert_eq!(ev.versions, None);
        assert_eq!(serde_json::to_value(&ev).unwrap(), minimal());
    }

    #[test]
    fn running_versions_round_trip_and_refuse_unknown_keys() {
        let mut doc = minimal();
        doc["versions"] = serde_json::json!({
            "apiserver_version": {"gitVersion": "v1.34.4", "major": "1", "minor": "34"},
            "kyverno_image": "reg.kyverno.io/kyverno/kyverno:v1.18.2",
            "kyverno_chart": "kyverno-3.8.2",
            "read_at": "2026-12-01T18:00:00.000Z"
        });
        let ev: Evidence = serde_json::from_value(doc.clone()).unwrap();
        let v = ev.versions.as_ref().unwrap();
        assert_eq!(v.git_version(), Some("v1.34.4"));
        assert_eq!(v.kyverno_chart.as_deref(), Some("kyverno-3.8.2"));
        assert_eq!(serde_json::to_value(&ev).unwrap(), doc);
        doc["versions"]["kyverno_version"] = serde_json::json!("v1.18.2");
        let err = serde_json::from_value::<Evidence>(doc).unwrap_err();
        assert!(err.to_string().contains("kyverno_version"), "{err}");
    }
}
